// TextWriter lines and the Java-name converter, against hand-written text.
#include "records/report_rows.h"
#include "records/text_writer.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <initializer_list>
#include <string>

#include "base/java_names.h"
#include "sink/output_stream.h"

namespace fasthprof {
namespace {

class StringStream : public OutputStream {
 public:
  void write(const void* data, size_t size) override {
    text_.append(static_cast<const char*>(data), size);
  }
  std::string text_;
};

struct Fixture {
  StringStream stream;
  TextWriter writer{stream, [](time_t t) {
                      return "Date(" + std::to_string(static_cast<long long>(t)) + ")\n";
                    }};
  std::string text() {
    writer.flush();
    std::string out = stream.text_;
    stream.text_.clear();
    return out;
  }
};

// Each signature with the Java name it converts to.
struct Conversion {
  const char* signature;
  const char* name;
};

void expect_converts(std::initializer_list<Conversion> conversions) {
  for (Conversion c : conversions) EXPECT_EQ(java_name(c.signature), c.name) << "signature " << c.signature;
}

TEST(JavaName, ConvertsSignatures) {
  expect_converts({{"[B", "byte[]"}, {"Ljava/lang/String;", "java.lang.String"},
                   {"[[Ljava/lang/Object;", "java.lang.Object[][]"},
                   {"Ljava/util/HashMap$Entry;", "java.util.HashMap$Entry"}, {"[[I", "int[][]"},
                   {"C", "char"}, {"Z", "boolean"}, {"J", "long"}, {"D", "double"}, {"F", "float"},
                   {"S", "short"}, {"V", "void"}, {"(I)V", "()"}});
}

TEST(JavaName, MalformedSignatures) {
  expect_converts({{"", "Unknown_class"}, {"[[", "Unknown_class"}, {"Ljava/lang/String", "Unknown_class"},
                   {"Q", "Unknown_class"}, {"(I", "Unknown_method"}});
}

TEST(JavaName, AppendsToExistingText) {
  std::string out = "class=";
  append_java_name(out, "[Ljava/lang/Thread;");
  EXPECT_EQ(out, "class=java.lang.Thread[]");
}

TEST(CtimeText, FormatsLikeCtime) {
  std::tm t{};
  t.tm_year = 2004 - 1900;
  t.tm_mon = 1;
  t.tm_mday = 6;
  t.tm_wday = 5;
  t.tm_hour = 13;
  t.tm_min = 3;
  t.tm_sec = 42;
  EXPECT_EQ(ctime_text(t), "Fri Feb  6 13:03:42 2004\n");
  t.tm_mday = 16;
  t.tm_mon = 11;
  t.tm_wday = 0;
  EXPECT_EQ(ctime_text(t), "Sun Dec 16 13:03:42 2004\n");
}

TEST(CtimeText, LocalTimeMatchesLibcCtime) {
  setenv("TZ", "UTC", 1);
  tzset();
  time_t t = 1421249607;  // Wed Jan 14 15:33:27 2015 UTC
  EXPECT_EQ(local_ctime_text(t), "Wed Jan 14 15:33:27 2015\n");
  char buffer[64];
  EXPECT_EQ(local_ctime_text(t), std::string(ctime_r(&t, buffer)));
}

TEST(TextWriter, FileHeader) {
  Fixture f;
  f.writer.file_header(5);
  std::string text = f.text();
  EXPECT_EQ(text.rfind("JAVA PROFILE 1.0.1, created Date(5)\n\n", 0), 0u) << text;
  EXPECT_EQ(text.substr(text.size() - 12), "\n\n--------\n\n");
  for (const char* kind : {"THREAD START", "THREAD END", "TRACE", "HEAP DUMP", "ROOT", "CLS",
                           "OBJ", "ARR", "SITES", "CPU SAMPLES", "CPU TIME", "MONITOR TIME",
                           "MONITOR DUMP"}) {
    EXPECT_NE(text.find(kind), std::string::npos) << kind;
  }
}

TEST(TextWriter, ThreadLines) {
  Fixture f;
  f.writer.thread_start(0x50000114, 200002, "HPROF gc_finish watcher", "system");
  f.writer.thread_start(0xABCDEF0123ull, 200003, "", "");
  f.writer.thread_end(200001);
  EXPECT_EQ(f.text(),
            "THREAD START (obj=50000114, id = 200002, name=\"HPROF gc_finish watcher\", "
            "group=\"system\")\n"
            "THREAD START (obj=abcdef0123, id = 200003, name=\"\", group=\"\")\n"
            "THREAD END (id = 200001)\n");
}

TEST(TextWriter, LongLinesAreNotTruncated) {
  Fixture f;
  std::string name(5000, 'n');
  f.writer.thread_start(1, 2, name, "g");
  EXPECT_EQ(f.text(), "THREAD START (obj=1, id = 2, name=\"" + name + "\", group=\"g\")\n");
}

TEST(TextWriter, TraceForms) {
  Fixture f;
  f.writer.trace_header(300000);
  f.writer.trace_empty();
  f.writer.trace_header(301926, 200001);
  f.writer.trace_frame({"java.util.zip.ZipEntry", "<init>", "ZipEntry.java", 101});
  f.writer.trace_frame({"Big", "run", "Big.java", 70000});
  f.writer.trace_frame({"java.lang.Object", "wait", "", -1});
  f.writer.trace_frame({"A", "", "A.java", 0});
  f.writer.trace_frame({"B", "m", "B.java", -2});
  f.writer.trace_frame({"C", "n", "C.java", -3});
  f.writer.trace_header(300001, 0, "start");
  EXPECT_EQ(f.text(),
            "TRACE 300000:\n"
            "\t<empty>\n"
            "TRACE 301926: (thread=200001)\n"
            "\tjava.util.zip.ZipEntry.<init>(ZipEntry.java:101)\n"
            "\tBig.run(Big.java:70000)\n"
            "\tjava.lang.Object.wait(<Unknown Source>:Unknown line)\n"
            "\tA.<Unknown Method>(A.java:0)\n"
            "\tB.m(B.java:Compiled method)\n"
            "\tC.n(C.java:Native method)\n"
            "TRACE 300001: (from start phase of JVM)\n");
}

TEST(TextWriter, HeapDumpLines) {
  Fixture f;
  f.writer.heap_dump_begin(5000000000ull, 6000000000ull, 9);
  f.writer.root_jni_global(0x50000201, 0x1a, 300000);
  f.writer.root_system_class(0x50000132, "java.lang.String");
  f.writer.root_monitor(0x7);
  f.writer.root_thread(0x8, 200001, 300005);
  f.writer.root_thread_block(0x8, 200001);
  f.writer.root_java_frame(0x9, 200001, 3);
  f.writer.root_jni_local(0xa, 200001, -1);
  f.writer.root_native_stack(0xb, 200002);
  f.writer.root_unknown(0xc);
  f.writer.object(0x50000143, 24, 300004, "java.lang.String", 0x500000bc);
  f.writer.object_field("value", 0x50000166);
  f.writer.object_field("threadLocals", 0x50000171);
  f.writer.object_field("exactly8", 0x1);
  f.writer.object_field("hash", 0);
  f.writer.primitive_array(0x50000166, 10, 300005, 5, "char[]");
  f.writer.object_array(0x5000014b, 48, 300011, 8, "java.lang.ThreadLocal$ThreadLocalMap$Entry[]",
                        0x5000014a);
  f.writer.array_element(0, 0);
  f.writer.array_element(7, 0x50000150);
  f.writer.class_begin(0x500000bc, "java.lang.String", 300000);
  f.writer.class_super(0x50000099);
  f.writer.class_loader(0);
  f.writer.class_loader(0x11);
  f.writer.class_signers(0x12);
  f.writer.class_domain(0x13);
  f.writer.class_static("serialPersistentFields", 0x5000031a);
  f.writer.class_static("CASE_INSENSITIVE_ORDER", 0);
  f.writer.class_constant_pool(79, 0x500000fe);
  f.writer.class_constant_pool(80, 0);
  f.writer.heap_dump_end();
  EXPECT_EQ(f.text(),
            "HEAP DUMP BEGIN (5000000000 objects, 6000000000 bytes) Date(9)\n"
            "ROOT 50000201 (kind=<JNI global ref>, id=1a, trace=300000)\n"
            "ROOT 50000132 (kind=<system class>, name=java.lang.String)\n"
            "ROOT 7 (kind=<busy monitor>)\n"
            "ROOT 8 (kind=<thread>, id=200001, trace=300005)\n"
            "ROOT 8 (kind=<thread block>, thread=200001)\n"
            "ROOT 9 (kind=<Java stack>, thread=200001, frame=3)\n"
            "ROOT a (kind=<JNI local ref>, thread=200001, frame=-1)\n"
            "ROOT b (kind=<native stack>, thread=200002)\n"
            "ROOT c (kind=<unknown>)\n"
            "OBJ 50000143 (sz=24, trace=300004, class=java.lang.String@500000bc)\n"
            "\tvalue\t\t50000166\n"
            "\tthreadLocals\t50000171\n"
            "\texactly8\t1\n"
            "ARR 50000166 (sz=10, trace=300005, nelems=5, elem type=char[])\n"
            "ARR 5000014b (sz=48, trace=300011, nelems=8, "
            "elem type=java.lang.ThreadLocal$ThreadLocalMap$Entry[]@5000014a)\n"
            "\t[7]\t\t50000150\n"
            "CLS 500000bc (name=java.lang.String, trace=300000)\n"
            "\tsuper\t\t50000099\n"
            "\tloader\t\t11\n"
            "\tsigners\t\t12\n"
            "\tdomain\t\t13\n"
            "\tstatic serialPersistentFields\t5000031a\n"
            "\tconstant pool entry 79\t500000fe\n"
            "HEAP DUMP END\n");
}

TEST(TextWriter, Sites) {
  Fixture f;
  f.writer.sites_begin("live bytes", 3);
  f.writer.sites_row(1, 44.13, 44.13, 1117360, 13967, 1117360, 13967, 301926,
                     "java.util.zip.ZipEntry");
  f.writer.sites_row(2, 0.004, 100.0, 8000000000ull, 5, 9000000000ull, 123456, 300000, "byte[]");
  f.writer.sites_end();
  EXPECT_EQ(f.text(),
            "SITES BEGIN (ordered by live bytes) Date(3)\n"
            "          percent          live          alloc'ed  stack class\n"
            " rank   self  accum     bytes objs     bytes  objs trace name\n"
            "    1 44.13% 44.13%   1117360 13967   1117360 13967 301926 java.util.zip.ZipEntry\n"
            "    2  0.00% 100.00% 8000000000    5 9000000000 123456 300000 byte[]\n"
            "SITES END\n");
}

TEST(TextWriter, CpuSamplesAndTimes) {
  Fixture f;
  f.writer.cpu_begin(CpuSection::kSamples, 5000000000ull, 2, 4);
  f.writer.cpu_row(1, 60.0, 60.0, 3, 300123, "java.util.Arrays", "copyOf");
  f.writer.cpu_row(2, 40.0, 100.0, 2, 300000, "", "");
  f.writer.cpu_end(CpuSection::kSamples);
  f.writer.cpu_begin(CpuSection::kTimes, 0, 0, 5);
  f.writer.cpu_end(CpuSection::kTimes);
  EXPECT_EQ(f.text(),
            "CPU SAMPLES BEGIN (total = 5000000000) Date(4)\n"
            "rank   self  accum   count trace method\n"
            "   1 60.00% 60.00%       3 300123 java.util.Arrays.copyOf\n"
            "   2 40.00% 100.00%       2 300000 <empty trace>\n"
            "CPU SAMPLES END\n"
            "CPU TIME (ms) BEGIN (total = 0) Date(5)\n"
            "CPU TIME (ms) END\n");
}

TEST(TextWriter, OldProf) {
  Fixture f;
  f.writer.old_prof_header();
  OldProfMethod callee{"java.lang.String", "charAt", "(I)C"};
  OldProfMethod caller{"Main", "main", "([Ljava/lang/String;)V"};
  f.writer.old_prof_row(12, &callee, &caller, 34);
  f.writer.old_prof_row(1, &callee, nullptr, 0);
  f.writer.old_prof_row(1, nullptr, nullptr, 0);
  EXPECT_EQ(f.text(),
            "count callee caller time\n"
            "12 java.lang.String.charAt(I)C Main.main([Ljava/lang/String;)V 34\n"
            "1 java.lang.String.charAt(I)C <unknown caller> 0\n"
            "1 <unknown callee> <unknown caller> 0\n");
}

TEST(TextWriter, MonitorTime) {
  Fixture f;
  f.writer.monitor_time_begin(1250, 6);
  f.writer.monitor_time_row(1, 80.0, 80.0, 7, 300200, "java.lang.Object");
  f.writer.monitor_time_end();
  f.writer.monitor_time_begin(0, 7);
  f.writer.monitor_time_end();
  f.writer.monitor_time_begin(0, 8, /*rows=*/true);
  f.writer.monitor_time_row(1, 0.0, 0.0, 1, 300201, "Lock");
  f.writer.monitor_time_end();
  EXPECT_EQ(f.text(),
            "MONITOR TIME BEGIN (total = 1250 ms) Date(6)\n"
            "rank   self  accum   count trace monitor\n"
            "   1 80.00% 80.00%       7 300200 java.lang.Object (Java)\n"
            "MONITOR TIME END\n"
            "MONITOR TIME BEGIN (total = 0 ms) Date(7)\n"
            "MONITOR TIME END\n"
            "MONITOR TIME BEGIN (total = 0 ms) Date(8)\n"
            "rank   self  accum   count trace monitor\n"
            "   1  0.00%  0.00%       1 300201 Lock (Java)\n"
            "MONITOR TIME END\n");
}

TEST(TextWriter, MonitorDump) {
  Fixture f;
  f.writer.monitor_dump_begin();
  f.writer.monitor_dump_note("no monitors: why");
  f.writer.monitor_dump_thread(200001, 300010, kThreadStateAlive | kThreadStateRunnable);
  f.writer.monitor_dump_thread(200002, 300011,
                               kThreadStateAlive | kThreadStateWaiting | kThreadStateSuspended |
                                   kThreadStateInterrupted | kThreadStateInNative);
  const uint32_t enter[] = {200003, 0, 200004};
  const uint32_t notify[] = {200005};
  f.writer.monitor_dump_monitor("Ljava/lang/Object;", 200001, 2, enter, notify);
  f.writer.monitor_dump_monitor("LLock;", 0, 0, {}, {});
  f.writer.monitor_dump_end();
  EXPECT_EQ(f.text(),
            "MONITOR DUMP BEGIN\n"
            "    (no monitors: why)\n"
            "    THREAD 200001, trace 300010, status: R\n"
            "    THREAD 200002, trace 300011, status: S|intr|native|CW\n"
            "    MONITOR Ljava/lang/Object;\n"
            "\towner: thread 200001, entry count: 2\n"
            "\twaiting to enter: thread 200003, <unknown thread>, thread 200004\n"
            "\twaiting to be notified: thread 200005\n"
            "    MONITOR LLock; unowned\n"
            "\twaiting to enter:\n"
            "\twaiting to be notified:\n"
            "MONITOR DUMP END\n");
}

TEST(TextWriter, ThreadStatusText) {
  EXPECT_EQ(thread_status_text(0), "NS");
  EXPECT_EQ(thread_status_text(kThreadStateTerminated), "ZO");
  EXPECT_EQ(thread_status_text(kThreadStateAlive), "UN");
  EXPECT_EQ(thread_status_text(kThreadStateAlive | kThreadStateSleeping | kThreadStateWaiting),
            "SL");
  EXPECT_EQ(thread_status_text(kThreadStateAlive | kThreadStateBlockedOnMonitorEnter), "MW");
  EXPECT_EQ(thread_status_text(kThreadStateAlive | kThreadStateWaiting), "CW");
  EXPECT_EQ(thread_status_text(kThreadStateSuspended), "S|NS");
}

TEST(TextWriter, MonitorEvents) {
  Fixture f;
  f.writer.monitor_wait("Ljava/lang/Object;", 1000, 200001);
  f.writer.monitor_wait("Ljava/lang/Object;", 0, 0);
  f.writer.monitor_waited("Ljava/lang/Object;", 3000000000ll, 200001);
  f.writer.monitor_waited("LX;", 5, 0);
  f.writer.monitor_sleep(10, 200002);
  f.writer.monitor_sleep(10, 0);
  f.writer.monitor_exit("LX;", 200002);
  f.writer.monitor_exit("LX;", 0);
  EXPECT_EQ(f.text(),
            "WAIT: MONITOR Ljava/lang/Object;, timeout=1000, thread 200001\n"
            "WAIT: MONITOR Ljava/lang/Object;, timeout=0, <unknown thread>\n"
            "WAITED: MONITOR Ljava/lang/Object;, time_waited=3000000000, thread 200001\n"
            "WAITED: MONITOR LX;, time_waited=5, <unknown thread>\n"
            "SLEEP: timeout=10, thread 200002\n"
            "SLEEP: timeout=10, <unknown thread>\n"
            "EXIT: MONITOR LX;, thread 200002\n"
            "EXIT: MONITOR LX;, <unknown thread>\n");
}

TEST(TextWriter, BuffersUntilFlushOrThreshold) {
  StringStream stream;
  {
    TextWriter writer(stream);
    writer.thread_end(1);
    EXPECT_TRUE(stream.text_.empty());
    for (size_t i = 0; i * 20 < TextWriter::kFlushThreshold; ++i) writer.thread_end(2);
    EXPECT_GE(stream.text_.size(), TextWriter::kFlushThreshold);
  }
  EXPECT_EQ(stream.text_.substr(stream.text_.size() - 20), "THREAD END (id = 2)\n");
}

}  // namespace
}  // namespace fasthprof
