// VmDumpRewriter against JDK-like dumps built here byte by byte (jdk_dump_builder.h): every patched
// field, every split of a small stream, dumps in a row sharing one numbering, and malformed input.
// Files made of fasthprof's header plus rewritten dumps must pass the verifier in strict mode. The
// side files of JDK 22+ are vm_dump_pipe_test.cpp's.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "jdk_dump_builder.h"

namespace fasthprof {
namespace {

using namespace jdk_dump;

// FASTHPROF_WRITE_VM_DUMP_CORPUS=<folder> build/tests/test_vm_dump_rewriter
void write_seed(const std::string& name, const std::vector<uint8_t>& bytes) {
  if (const char* folder = std::getenv("FASTHPROF_WRITE_VM_DUMP_CORPUS")) {
    std::ofstream(std::string(folder) + "/jdk-" + name + ".hprof", std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
}

TEST(VmDumpRewriter, PatchesEveryFieldThatCouldCollide) {
  Layout l{};
  JdkDump dump = sample_dump(&l);
  VmDumpNumbering numbering;
  MemoryStream out;
  VmDumpRewriter rewriter(numbering, out);
  ASSERT_TRUE(rewrite(rewriter, dump.data)) << rewriter.error();
  const std::vector<uint8_t>& o = out.bytes;

  // The header is gone: the output starts with the first UTF8, which keeps its ID.
  ASSERT_EQ(o[0], static_cast<uint8_t>(RecordTag::kUtf8));
  EXPECT_EQ(u8_at(o, 9), kSymObject);
  // LOAD CLASS: serials from kFirstVmDumpSerial; the dummy trace, named before it is defined, becomes
  // fasthprof's empty trace there.
  const uint32_t first = kFirstVmDumpSerial;
  size_t load = nth_record(o, 0x02, 0);
  EXPECT_EQ(u4_at(o, load), first);
  EXPECT_EQ(u8_at(o, load + 4), kClassObject);
  EXPECT_EQ(u4_at(o, load + 12), kFirstTraceSerial);
  EXPECT_EQ(u8_at(o, load + 16), kSymObject);
  EXPECT_EQ(u4_at(o, nth_record(o, 0x02, 1)), first + 1);
  EXPECT_EQ(u4_at(o, nth_record(o, 0x02, 3)), first + 3);
  // The second LOAD CLASS of the array class is dropped; the dummy trace is kept, with its serial.
  size_t loads = 0, traces = 0;
  for (const Record& r : records_of(o)) {
    loads += r.tag == 0x02;
    traces += r.tag == 0x05;
  }
  EXPECT_EQ(loads, 4u);
  EXPECT_EQ(traces, 2u);
  size_t dummy = nth_record(o, 0x05, 0);
  EXPECT_EQ(u4_at(o, dummy), kDummyTrace);
  EXPECT_EQ(u4_at(o, dummy + 4), 0u);
  EXPECT_EQ(u4_at(o, dummy + 8), 0u);
  // STACK FRAME: IDs in the VM-dump frame space, class serials renumbered (the repeated load's
  // serial stands for the first load of the same class), names untouched.
  size_t frame = nth_record(o, 0x04, 0);
  EXPECT_EQ(u8_at(o, frame), make_id(IdSpace::kVmDumpFrame, 1));
  EXPECT_EQ(u8_at(o, frame + 8), kSymMain);
  EXPECT_EQ(u8_at(o, frame + 24), kSymSource);
  EXPECT_EQ(u4_at(o, frame + 32), first + 1);
  EXPECT_EQ(u4_at(o, frame + 36), 12u);
  size_t frame2 = nth_record(o, 0x04, 1);
  EXPECT_EQ(u8_at(o, frame2), make_id(IdSpace::kVmDumpFrame, 2));
  EXPECT_EQ(u4_at(o, frame2 + 32), first + 2);
  // STACK TRACE: serial, thread serial and frames renumbered.
  size_t trace = nth_record(o, 0x05, 1);
  EXPECT_EQ(u4_at(o, trace), first);
  EXPECT_EQ(u4_at(o, trace + 4), first);
  EXPECT_EQ(u4_at(o, trace + 8), 2u);
  EXPECT_EQ(u8_at(o, trace + 12), make_id(IdSpace::kVmDumpFrame, 1));
  EXPECT_EQ(u8_at(o, trace + 20), make_id(IdSpace::kVmDumpFrame, 2));

  // Segments keep their lengths; sub-records are patched in place.
  size_t segment1 = nth_record(o, 0x1C, 0);
  size_t segment2 = nth_record(o, 0x1C, 1);
  EXPECT_EQ(u4_at(o, segment1 - 4), u4_at(dump.data, l.segment1 + 5));
  EXPECT_EQ(u4_at(o, segment2 - 4), u4_at(dump.data, l.segment2 + 5));
  auto sub = [&](size_t in_segment_offset) { return segment1 + in_segment_offset; };
  EXPECT_EQ(u4_at(o, sub(l.string_class) + 9), kDummyTrace);            // CLASS DUMP trace, as it was
  EXPECT_EQ(u4_at(o, sub(l.thread_root) + 9), first);                   // ROOT THREAD OBJECT thread
  EXPECT_EQ(u4_at(o, sub(l.thread_root) + 13), first);                  // ... and its trace
  EXPECT_EQ(u4_at(o, sub(l.java_frame) + 9), first);                    // ROOT JAVA FRAME thread
  EXPECT_EQ(u4_at(o, sub(l.java_frame) + 13), 0u);                      // ... frame number as it was
  EXPECT_EQ(u4_at(o, sub(l.jni_local) + 9), first);                     // ROOT JNI LOCAL
  EXPECT_EQ(u4_at(o, sub(l.jni_local) + 13), 1u);
  EXPECT_EQ(u4_at(o, sub(l.native_stack) + 9), first);                  // ROOT NATIVE STACK
  EXPECT_EQ(u4_at(o, sub(l.thread_block) + 9), first);                  // ROOT THREAD BLOCK
  EXPECT_EQ(u8_at(o, sub(l.sticky) + 1), kClassString);
  EXPECT_EQ(u4_at(o, sub(l.string1) + 9), kDummyTrace);                 // INSTANCE DUMP
  EXPECT_EQ(u8_at(o, sub(l.string1) + 13), kClassString);
  EXPECT_EQ(u8_at(o, sub(l.string1) + 25), kBytes1);                    // field values untouched
  EXPECT_EQ(u4_at(o, sub(l.array) + 9), kDummyTrace);                   // OBJECT ARRAY DUMP
  EXPECT_EQ(u8_at(o, sub(l.array) + 25), kString1);
  EXPECT_EQ(u4_at(o, sub(l.bytes1) + 9), kDummyTrace);                  // PRIMITIVE ARRAY DUMP
  EXPECT_EQ(u4_at(o, segment2 + l.string2 + 9), kDummyTrace);
  // The JNI GLOBAL root's reference ID and the CLASS DUMP's field names are left alone.
  EXPECT_EQ(o.back(), 0u);
  EXPECT_EQ(o[o.size() - 9], static_cast<uint8_t>(RecordTag::kHeapDumpEnd));

  const VmDumpStats& stats = rewriter.stats();
  EXPECT_EQ(stats.bytes_in, dump.size());
  EXPECT_EQ(stats.bytes_out, o.size());
  EXPECT_EQ(stats.bytes_in - stats.bytes_out, kJdkHeader + 9 + 24);  // header, repeated load
  EXPECT_EQ(stats.segments, 2u);
  EXPECT_EQ(stats.sub_records, 19u);
  EXPECT_EQ(stats.records_dropped, 1u);
  EXPECT_EQ(stats.utf8_dropped, 0u);

  // Behind fasthprof's header, the file passes the strict verifier.
  std::vector<uint8_t> file = fasthprof_header();
  file.insert(file.end(), o.begin(), o.end());
  VerifyResult result = verify(file);
  ASSERT_TRUE(result.ok) << result.error << " at " << result.error_offset;
  ASSERT_EQ(result.dumps.size(), 1u);
  EXPECT_EQ(result.dumps[0].instances, 3u);
  EXPECT_EQ(result.dumps[0].classes, 4u);
}

TEST(VmDumpRewriter, GivesTheSameOutputForEverySplit) {
  Layout l{};
  JdkDump dump = sample_dump(&l);
  write_seed("sample", dump.data);
  std::vector<uint8_t> whole;
  {
    VmDumpNumbering numbering;
    MemoryStream out;
    VmDumpRewriter rewriter(numbering, out);
    ASSERT_TRUE(rewrite(rewriter, dump.data)) << rewriter.error();
    whole = out.bytes;
  }
  // Two chunks split at every offset, then three chunks split at every pair of offsets 37 apart.
  for (size_t split = 1; split < dump.size(); ++split) {
    for (size_t second : {size_t{0}, size_t{37}}) {
      if (second != 0 && split + second >= dump.size()) continue;
      VmDumpNumbering numbering;
      MemoryStream out;
      VmDumpRewriter rewriter(numbering, out);
      std::vector<size_t> chunks = {split};
      if (second != 0) chunks.push_back(second);
      chunks.push_back(dump.size());
      ASSERT_TRUE(rewrite(rewriter, dump.data, chunks)) << "split at " << split << ": " << rewriter.error();
      ASSERT_EQ(out.bytes, whole) << "split at " << split << " + " << second;
    }
  }
  for (size_t size : {1, 2, 3, 5, 8, 13, 25}) {
    VmDumpNumbering numbering;
    MemoryStream out;
    VmDumpRewriter rewriter(numbering, out);
    ASSERT_TRUE(rewrite(rewriter, dump.data, {size})) << rewriter.error();
    ASSERT_EQ(out.bytes, whole) << "chunks of " << size;
  }
}

TEST(VmDumpRewriter, LongClassDumpSplitAnywhereIsMeasuredOnce) {
  // A CLASS DUMP with thousands of statics crosses several gathering steps.
  JdkDump d;
  d.utf8(kSymObject, "Big");
  std::vector<Segment::Field> statics;
  for (uint64_t i = 0; i < 3000; ++i) {
    d.utf8(kSymObject + 0x100 + i, "s" + std::to_string(i));
    statics.push_back({kSymObject + 0x100 + i, kInt, i});
  }
  d.load_class(1, kClassObject, kSymObject);
  d.trace(kDummyTrace, 0, {});
  Segment s;
  s.class_dump(kClassObject, 0, {}, statics);
  d.segment(s);
  d.end();
  std::vector<uint8_t> whole;
  for (size_t chunk : {size_t{0}, size_t{1000}, size_t{4095}, size_t{7}}) {
    VmDumpNumbering numbering;
    MemoryStream out;
    VmDumpRewriter rewriter(numbering, out);
    ASSERT_TRUE(rewrite(rewriter, d.data, chunk ? std::vector<size_t>{chunk} : std::vector<size_t>{})) << rewriter.error();
    if (whole.empty()) whole = out.bytes; else EXPECT_EQ(out.bytes, whole) << chunk;
  }
}

TEST(VmDumpRewriter, DumpsInARowNeverDefineAnythingTwice) {
  VmDumpNumbering numbering;
  MemoryStream out;
  out.bytes = fasthprof_header();
  const size_t header = out.bytes.size();
  Layout l1{}, l2{}, l3{};
  // The JDK's class serials keep counting from dump to dump; the second dump's pass 100000, where
  // fasthprof's own class serials begin.
  JdkDump first = sample_dump(&l1, 1);
  JdkDump second = sample_dump(&l2, 100000, {{kSymCount, "size"}});  // an address reused for another text
  JdkDump third = sample_dump(&l3, 100010, {{kSymCount, "size"}});
  write_seed("renamed", second.data);
  VmDumpStats stats[3];
  int i = 0;
  for (JdkDump* dump : {&first, &second, &third}) {
    VmDumpRewriter rewriter(numbering, out);
    ASSERT_TRUE(rewrite(rewriter, dump->data, {4096})) << rewriter.error();
    stats[i++] = rewriter.stats();
  }
  EXPECT_EQ(stats[0].utf8_dropped, 0u);
  EXPECT_EQ(stats[1].utf8_dropped, 9u);  // every symbol but the changed one
  EXPECT_EQ(stats[1].utf8_renamed, 1u);
  EXPECT_EQ(stats[2].utf8_dropped, 10u);  // the renamed text is in the file already, under its new ID
  EXPECT_EQ(stats[2].utf8_renamed, 0u);

  // One UTF8 per ID, the renamed text under an ID of kVmDumpName; class, trace and thread serials
  // and frame IDs all distinct; the renamed symbol's references patched in dumps 2 and 3.
  const uint64_t renamed = make_id(IdSpace::kVmDumpName, 1);
  std::map<uint64_t, std::string> utf8;
  std::map<uint32_t, int> class_serials, trace_serials;
  std::map<uint64_t, int> frames;
  int dumps = 0, renamed_field_names = 0;
  for (const Record& r : records_of(out.bytes, kFileHeaderSize)) {
    if (r.tag == 0x01) {
      uint64_t id = u8_at(out.bytes, r.body);
      EXPECT_TRUE(utf8.emplace(id, std::string(out.bytes.begin() + r.body + 8, out.bytes.begin() + r.body + r.length)).second)
          << std::hex << id;
    } else if (r.tag == 0x02) {
      EXPECT_EQ(++class_serials[u4_at(out.bytes, r.body)], 1);
      EXPECT_GE(u4_at(out.bytes, r.body), kFirstVmDumpSerial);
    } else if (r.tag == 0x04) {
      EXPECT_EQ(++frames[u8_at(out.bytes, r.body)], 1);
    } else if (r.tag == 0x05) {
      EXPECT_EQ(++trace_serials[u4_at(out.bytes, r.body)], 1);
    } else if (r.tag == 0x2C) {
      ++dumps;
    } else if (r.tag == 0x1C && dumps > 0) {
      // The String CLASS DUMP opens the first segment: its second field name is `count`/`size`.
      size_t at = r.body + 1 + 8 + 4 + 6 * 8 + 4 + 2 + 7 + 2 + 13 + 2 + 9;
      if (out.bytes[r.body] == 0x20 && u8_at(out.bytes, at) == renamed) ++renamed_field_names;
    }
  }
  EXPECT_EQ(utf8.size(), 11u);  // the ten symbols and the renamed text
  EXPECT_EQ(utf8[renamed], "size");
  EXPECT_EQ(utf8[kSymCount], "count");
  EXPECT_EQ(class_serials.size(), 12u);  // four per dump
  EXPECT_EQ(frames.size(), 6u);
  EXPECT_EQ(trace_serials.size(), 5u);  // fasthprof's empty trace, the JDK's dummy (once), one per dump
  EXPECT_EQ(dumps, 3);
  EXPECT_EQ(renamed_field_names, 2);

  VerifyResult result = verify(out.bytes);
  ASSERT_TRUE(result.ok) << result.error << " at " << result.error_offset;
  ASSERT_EQ(result.dumps.size(), 3u);
  (void)header;
}

TEST(VmDumpRewriter, VmDumpSerialsNeverMeetFasthprofsOwn) {
  // A fasthprof file that loaded classes and threads of its own, then a VM dump whose JDK class
  // serials are the very numbers fasthprof uses.
  MemoryStream out;
  ProfileWriter writer(parse("format=b"), out, nullptr);
  writer.write_header(0, 1700000000000ULL);
  ClassRef own = writer.class_loaded("Ljava/lang/String;", 0);
  writer.flush();
  ASSERT_EQ(own.serial, kFirstClassSerial);
  VmDumpNumbering numbering;
  Layout l{};
  JdkDump dump = sample_dump(&l, kFirstClassSerial);
  VmDumpRewriter rewriter(numbering, out);
  ASSERT_TRUE(rewrite(rewriter, dump.data)) << rewriter.error();
  VerifyResult result = verify(out.bytes);
  ASSERT_TRUE(result.ok) << result.error << " at " << result.error_offset;
}

TEST(VmDumpRewriter, AbandonedDumpLeavesItsNamesToTheNext) {
  VmDumpNumbering numbering;
  Layout l{};
  JdkDump dump = sample_dump(&l);
  {
    MemoryStream lost;
    VmDumpRewriter rewriter(numbering, lost);
    ASSERT_TRUE(rewrite(rewriter, dump.data));
    rewriter.abandon();
  }
  EXPECT_EQ(numbering.names_written(), 0u);
  MemoryStream out;
  VmDumpRewriter rewriter(numbering, out);
  ASSERT_TRUE(rewrite(rewriter, dump.data));
  EXPECT_EQ(rewriter.stats().utf8_dropped, 0u);
  EXPECT_EQ(numbering.names_written(), 10u);
  // The dummy trace the lost dump defined is defined again.
  EXPECT_EQ(rewriter.stats().records_dropped, 1u);
  EXPECT_EQ(u4_at(out.bytes, nth_record(out.bytes, 0x05, 0)), kDummyTrace);
}

TEST(VmDumpRewriter, TraceDefinedAfterItsFirstUseGetsAFreshSerialFromThen) {
  JdkDump d;
  d.utf8(kSymMain, "main");
  d.utf8(kSymSig, "()V");
  d.utf8(kSymObject, "java/lang/Object");
  d.load_class(1, kClassObject, kSymObject, 5);  // names trace 5 before it exists
  d.frame(1, kSymMain, kSymSig, 0, 1, 3);
  d.trace(5, 1, {1});
  Segment s;
  s.class_dump(kClassObject, 0, {}, {}, 5);
  d.segment(s);
  d.end();
  VmDumpNumbering numbering;
  MemoryStream out;
  VmDumpRewriter rewriter(numbering, out);
  ASSERT_TRUE(rewrite(rewriter, d.data)) << rewriter.error();
  EXPECT_EQ(u4_at(out.bytes, nth_record(out.bytes, 0x02, 0) + 12), kFirstTraceSerial);
  EXPECT_EQ(u4_at(out.bytes, nth_record(out.bytes, 0x05, 0)), kFirstVmDumpSerial);
  EXPECT_EQ(u4_at(out.bytes, nth_record(out.bytes, 0x1C, 0) + 9), kFirstVmDumpSerial);
}

TEST(VmDumpRewriter, DropsRecordsTheJdkDoesNotWrite) {
  Layout l{};
  JdkDump d = sample_dump(&l);
  d.data.resize(l.end);  // before HEAP DUMP END
  d.record(RecordTag::kControlSettings, Bytes().u4(0).u2(4));
  d.record(RecordTag::kStartThread, Bytes().u4(200001).u8(kThreadObject).u4(1).u8(0).u8(0).u8(0));
  d.record(RecordTag::kHeapSummary, Bytes().u4(1).u4(2).u8(3).u8(4));
  d.end();
  VmDumpNumbering numbering;
  MemoryStream out;
  VmDumpRewriter rewriter(numbering, out);
  ASSERT_TRUE(rewrite(rewriter, d.data)) << rewriter.error();
  EXPECT_EQ(rewriter.stats().records_dropped, 3u);
  size_t summaries = 0, starts = 0;
  for (const Record& r : records_of(out.bytes)) {
    summaries += r.tag == 0x07;
    starts += r.tag == 0x0A || r.tag == 0x0E;
  }
  EXPECT_EQ(summaries, 1u);
  EXPECT_EQ(starts, 0u);
}

// HotSpot names every class of the boot loader in a ROOT STICKY CLASS, one still being loaded at
// the safepoint too, for which it writes no CLASS DUMP (seen on JDK 25 in a dump taken as a thread
// loads jdk.internal.event.ThreadSleepEvent): the root is made to name a dumped class, whole or split.
TEST(VmDumpRewriter, StickyRootOfAClassWithoutClassDumpNamesADumpedClass) {
  constexpr uint64_t kLoadingClass = 0x600000900;
  for (size_t chunk : {size_t{0}, size_t{1}, size_t{7}}) {
    Layout l{};
    JdkDump d = sample_dump(&l);
    d.data.resize(l.end);  // before HEAP DUMP END
    Segment three;
    three.root(0x05, kLoadingClass);
    three.root(0x05, kClassBytes);
    d.segment(three);
    d.end();
    VmDumpNumbering numbering;
    MemoryStream out;
    VmDumpRewriter rewriter(numbering, out);
    ASSERT_TRUE(rewrite(rewriter, d.data, chunk ? std::vector<size_t>{chunk} : std::vector<size_t>{}))
        << rewriter.error();
    EXPECT_EQ(rewriter.stats().roots_renamed, 1u) << "chunk " << chunk;
    const std::vector<uint8_t>& o = out.bytes;
    size_t last = nth_record(o, 0x1C, 2);
    EXPECT_EQ(o[last], 0x05);
    EXPECT_EQ(u8_at(o, last + 1), kClassString) << "the first class dumped, chunk " << chunk;
    EXPECT_EQ(u8_at(o, last + 10), kClassBytes) << "a dumped class's root is kept, chunk " << chunk;
  }
}

// ---- malformed input ----

std::string rewrite_error(const std::vector<uint8_t>& bytes, size_t chunk = 0) {
  VmDumpNumbering numbering;
  MemoryStream out;
  VmDumpRewriter rewriter(numbering, out);
  EXPECT_FALSE(rewrite(rewriter, bytes, chunk ? std::vector<size_t>{chunk} : std::vector<size_t>{}));
  EXPECT_FALSE(rewriter.feed(bytes.data(), 1)) << "a failed rewriter takes nothing more";
  return rewriter.error();
}

TEST(VmDumpRewriterErrors, RejectsATruncatedStream) {
  Layout l{};
  JdkDump d = sample_dump(&l);
  std::vector<uint8_t> cut(d.data.begin(), d.data.begin() + l.load_string + 5);
  EXPECT_EQ(rewrite_error(cut), "byte " + std::to_string(l.load_string) +
                                    " of the JDK's heap dump: the stream ends inside a record (5 bytes of it)");
  cut.assign(d.data.begin(), d.data.begin() + l.segment1 + 100);
  EXPECT_NE(rewrite_error(cut, 33).find("the stream ends inside a sub-record"), std::string::npos);
  cut.assign(d.data.begin(), d.data.begin() + l.segment2 - 3);  // between sub-records, in the segment
  EXPECT_NE(rewrite_error(cut).find("the stream ends inside a HEAP DUMP SEGMENT (3 bytes missing)"), std::string::npos);
  cut.assign(d.data.begin(), d.data.begin() + l.end);
  EXPECT_NE(rewrite_error(cut).find("without HEAP DUMP END"), std::string::npos);
  cut.assign(d.data.begin(), d.data.begin() + 10);
  EXPECT_NE(rewrite_error(cut).find("ends inside a record"), std::string::npos);
}

TEST(VmDumpRewriterErrors, RejectsAnIdSizeOtherThanEight) {
  JdkDump d(4);
  EXPECT_EQ(rewrite_error(d.data), "byte 0 of the JDK's heap dump: identifier size 4 (only 8 is supported)");
  JdkDump bad;
  bad.data[3] = 'X';
  EXPECT_NE(rewrite_error(bad.data).find("not a \"JAVA PROFILE 1.0.2\" file header"), std::string::npos);
}

TEST(VmDumpRewriterErrors, RejectsASubRecordOverrunningItsSegment) {
  Layout l{};
  JdkDump d = sample_dump(&l);
  // Shorten the first segment by 3 bytes: its last sub-record (the byte array) overruns it.
  size_t length_at = l.segment1 + 5;
  uint32_t length = u4_at(d.data, length_at) - 3;
  d.data[length_at + 2] = static_cast<uint8_t>(length >> 8);
  d.data[length_at + 3] = static_cast<uint8_t>(length);
  for (size_t chunk : {size_t{0}, size_t{1}, size_t{64}}) {
    std::string error = rewrite_error(d.data, chunk);
    EXPECT_EQ(error, "byte " + std::to_string(l.segment1 + 9 + l.bytes1) +
                         " of the JDK's heap dump: sub-record 0x23 of 23 bytes overruns its HEAP DUMP SEGMENT (20 bytes left)")
        << chunk;
  }
  // A fixed part cut by the segment's end.
  JdkDump e;
  Segment s;
  s.root(0x05, kClassObject);
  e.segment(s);
  e.data[kJdkHeader + 8] = 5;  // length 5 instead of 9
  EXPECT_NE(rewrite_error(e.data, 2).find("overruns its HEAP DUMP SEGMENT (5 bytes left)"), std::string::npos);
}

TEST(VmDumpRewriterErrors, RejectsUnknownTagsAndBadTypes) {
  JdkDump d;
  d.record(static_cast<RecordTag>(0x42), Bytes().u4(1));
  EXPECT_EQ(rewrite_error(d.data), "byte 31 of the JDK's heap dump: unknown record tag 0x42");
  JdkDump e;
  Segment s;
  s.u1(0x99).u8(1);
  e.segment(s);
  EXPECT_EQ(rewrite_error(e.data), "byte 40 of the JDK's heap dump: unknown heap dump sub-record tag 0x99");
  JdkDump f;
  Segment t;
  t.u1(0x23).u8(1).u4(1).u4(1).u1(3).u1(0);  // element type 3 does not exist
  f.segment(t);
  EXPECT_NE(rewrite_error(f.data).find("PRIMITIVE ARRAY DUMP with element type 3"), std::string::npos);
  JdkDump g;
  g.record(RecordTag::kHeapDump, Bytes().u1(0x05).u8(1));
  EXPECT_NE(rewrite_error(g.data).find("HEAP DUMP record"), std::string::npos);
  JdkDump h;
  h.utf8(0x0100000000000001, "fasthprof's");
  EXPECT_NE(rewrite_error(h.data).find("is not a JDK symbol address"), std::string::npos);
}

TEST(VmDumpRewriterErrors, RejectsDataAfterTheEnd) {
  Layout l{};
  JdkDump d = sample_dump(&l);
  d.utf8(kSymObject, "late");
  EXPECT_EQ(rewrite_error(d.data), "byte " + std::to_string(l.end + 9) + " of the JDK's heap dump: data after HEAP DUMP END");
}

TEST(VmDumpRewriterErrors, RejectsSerialsDefinedTwice) {
  JdkDump d;
  d.utf8(kSymObject, "A");
  d.load_class(3, kClassObject, kSymObject);
  d.load_class(3, kClassString, kSymObject);
  EXPECT_NE(rewrite_error(d.data).find("LOAD CLASS of class serial 3 twice in one dump"), std::string::npos);
  JdkDump e;
  e.trace(2, 1, {});
  e.trace(2, 1, {});
  EXPECT_NE(rewrite_error(e.data).find("STACK TRACE serial 2 twice in one dump"), std::string::npos);
}

}  // namespace
}  // namespace fasthprof
