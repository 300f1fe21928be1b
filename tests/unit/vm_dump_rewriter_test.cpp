// VmDumpRewriter against JDK-like dumps built here byte by byte (in the shape HotSpot's dumper
// writes: header, UTF8s, LOAD CLASSes naming the dummy trace written after them, frames, traces,
// segments, HEAP DUMP END): every patched field, every split of a small stream, dumps in a row
// sharing one numbering, and malformed input. Files made of fasthprof's header plus rewritten dumps
// must pass the verifier in strict mode.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "hprof_verifier.h"
#include "ids.h"
#include "memory_stream.h"
#include "profile_writer.h"
#include "vm_dump_pipe.h"
#include "vm_dump_rewriter.h"

namespace fasthprof {
namespace {

constexpr uint8_t kObj = static_cast<uint8_t>(BasicType::kObject);
constexpr uint8_t kInt = static_cast<uint8_t>(BasicType::kInt);
constexpr uint8_t kByte = static_cast<uint8_t>(BasicType::kByte);

// JDK-like addresses (top byte 0) and numbers, as HotSpot writes them.
enum : uint64_t {
  kSymObject = 0x7f0000001000, kSymString, kSymValue, kSymCount, kSymMain, kSymSig, kSymSource, kSymStringArray,
  kSymHash, kSymBytes,
  kClassObject = 0x600000100, kClassString = 0x600000200, kClassStringArray = 0x600000300, kClassBytes = 0x600000400,
  kThreadObject = 0x600001000, kString1 = 0x600002000, kString2 = 0x600002100, kArray = 0x600003000,
  kBytes1 = 0x600004000, kBytes2 = 0x600004100,
};
constexpr uint32_t kDummyTrace = 1;  // HotSpot's STACK_TRACE_ID
constexpr uint32_t kMainTrace = 2;
constexpr uint32_t kMainThread = 1;

struct Bytes {
  Bytes& u1(uint64_t v) { data.push_back(static_cast<uint8_t>(v)); return *this; }
  Bytes& u2(uint64_t v) { return u1(v >> 8).u1(v); }
  Bytes& u4(uint64_t v) { return u2(v >> 16).u2(v); }
  Bytes& u8(uint64_t v) { return u4(v >> 32).u4(v); }
  Bytes& str(const std::string& s) { data.insert(data.end(), s.begin(), s.end()); return *this; }
  Bytes& append(const Bytes& other) { data.insert(data.end(), other.data.begin(), other.data.end()); return *this; }
  size_t size() const { return data.size(); }
  std::vector<uint8_t> data;
};

// Sub-records; each returns its offset in the segment body.
struct Segment : Bytes {
  struct Field { uint64_t name; uint8_t type; uint64_t value; };
  size_t class_dump(uint64_t id, uint64_t super, const std::vector<Field>& fields, const std::vector<Field>& statics = {},
                    uint32_t trace = kDummyTrace) {
    size_t at = size();
    u1(0x20).u8(id).u4(trace).u8(super).u8(0).u8(0).u8(0).u8(0).u8(0).u4(0);
    u2(1).u2(7).u1(kInt).u4(42);  // one constant pool entry
    u2(statics.size());
    for (const Field& f : statics) {
      u8(f.name).u1(f.type);
      if (f.type == kObj) u8(f.value); else u4(f.value);
    }
    u2(fields.size());
    for (const Field& f : fields) u8(f.name).u1(f.type);
    return at;
  }
  size_t instance(uint64_t id, uint64_t class_id, const Bytes& values) {
    size_t at = size();
    u1(0x21).u8(id).u4(kDummyTrace).u8(class_id).u4(values.size()).append(values);
    return at;
  }
  size_t object_array(uint64_t id, uint64_t class_id, const std::vector<uint64_t>& elements) {
    size_t at = size();
    u1(0x22).u8(id).u4(kDummyTrace).u4(elements.size()).u8(class_id);
    for (uint64_t e : elements) u8(e);
    return at;
  }
  size_t byte_array(uint64_t id, const std::string& bytes) {
    size_t at = size();
    u1(0x23).u8(id).u4(kDummyTrace).u4(bytes.size()).u1(kByte).str(bytes);
    return at;
  }
  size_t thread_object(uint64_t id, uint32_t thread, uint32_t trace) {
    size_t at = size();
    u1(0x08).u8(id).u4(thread).u4(trace);
    return at;
  }
  size_t frame_root(uint8_t tag, uint64_t id, uint32_t thread, uint32_t depth) {
    size_t at = size();
    u1(tag).u8(id).u4(thread).u4(depth);
    return at;
  }
  size_t thread_root(uint8_t tag, uint64_t id, uint32_t thread) {
    size_t at = size();
    u1(tag).u8(id).u4(thread);
    return at;
  }
  size_t root(uint8_t tag, uint64_t id) {
    size_t at = size();
    u1(tag).u8(id);
    return at;
  }
};

// A JDK heap dump stream; record helpers return the record's offset.
struct JdkDump : Bytes {
  explicit JdkDump(uint32_t id_size = 8) { str(kBinaryHeaderVersion).u1(0).u4(id_size).u8(1700000000000ULL); }
  size_t record(RecordTag tag, const Bytes& body) {
    size_t at = size();
    u1(static_cast<uint8_t>(tag)).u4(0).u4(body.size()).append(body);
    return at;
  }
  size_t utf8(uint64_t id, const std::string& text) { return record(RecordTag::kUtf8, Bytes().u8(id).str(text)); }
  size_t load_class(uint32_t serial, uint64_t id, uint64_t name, uint32_t trace = kDummyTrace) {
    return record(RecordTag::kLoadClass, Bytes().u4(serial).u8(id).u4(trace).u8(name));
  }
  size_t frame(uint64_t id, uint64_t name, uint64_t sig, uint64_t source, uint32_t class_serial, int32_t line) {
    return record(RecordTag::kStackFrame,
                  Bytes().u8(id).u8(name).u8(sig).u8(source).u4(class_serial).u4(static_cast<uint32_t>(line)));
  }
  size_t trace(uint32_t serial, uint32_t thread, const std::vector<uint64_t>& frames) {
    Bytes body;
    body.u4(serial).u4(thread).u4(frames.size());
    for (uint64_t f : frames) body.u8(f);
    return record(RecordTag::kStackTrace, body);
  }
  size_t segment(const Segment& body) { return record(RecordTag::kHeapDumpSegment, body); }
  size_t end() { return record(RecordTag::kHeapDumpEnd, Bytes()); }
};

constexpr size_t kJdkHeader = sizeof(kBinaryHeaderVersion) + 4 + 8;

// Where each record and sub-record of the sample dump sits in the JDK's stream.
struct Layout {
  size_t load_object, load_string, load_array, load_bytes, load_array_again, frame_main, frame_run, dummy, main_trace;
  size_t segment1, segment2, end;
  size_t string_class, object_class, thread_root, java_frame, jni_local, native_stack, thread_block, sticky,
      string1, array, bytes1;  // offsets inside their segment's body
  size_t bytes2, string2, array_class, bytes_class, object_class_end;
};

// A small dump with every record and sub-record kind HotSpot writes (and the roots it could).
// names: the text of each symbol (a later dump may change one).
JdkDump sample_dump(Layout* layout, uint32_t first_class_serial = 1,
                    const std::map<uint64_t, std::string>& renamed = {}) {
  std::map<uint64_t, std::string> names = {
      {kSymObject, "java/lang/Object"}, {kSymString, "java/lang/String"}, {kSymValue, "value"},
      {kSymCount, "count"}, {kSymMain, "main"}, {kSymSig, "([Ljava/lang/String;)V"}, {kSymSource, "Main.java"},
      {kSymStringArray, "[Ljava/lang/String;"}, {kSymHash, "hash"}, {kSymBytes, "[B"}};
  for (const auto& [id, text] : renamed) names[id] = text;
  JdkDump d;
  for (const auto& [id, text] : names) d.utf8(id, text);
  const uint32_t s = first_class_serial;
  layout->load_object = d.load_class(s, kClassObject, kSymObject);
  layout->load_string = d.load_class(s + 1, kClassString, kSymString);
  layout->load_array = d.load_class(s + 2, kClassStringArray, kSymStringArray);
  layout->load_bytes = d.load_class(s + 3, kClassBytes, kSymBytes);
  layout->load_array_again = d.load_class(s + 4, kClassStringArray, kSymStringArray);  // as JDK 17 does
  layout->dummy = d.trace(kDummyTrace, 0, {});
  layout->frame_main = d.frame(1, kSymMain, kSymSig, kSymSource, s + 1, 12);
  layout->frame_run = d.frame(2, kSymMain, kSymSig, 0, s + 4, -3);  // names the repeated load's serial
  layout->main_trace = d.trace(kMainTrace, kMainThread, {1, 2});

  Segment one;
  layout->string_class = one.class_dump(kClassString, kClassObject, {{kSymValue, kObj, 0}, {kSymCount, kInt, 0}},
                                        {{kSymHash, kInt, 7}});
  layout->object_class = one.class_dump(kClassObject, 0, {});
  layout->array_class = one.class_dump(kClassStringArray, kClassObject, {});
  layout->bytes_class = one.class_dump(kClassBytes, kClassObject, {});
  layout->thread_root = one.thread_object(kThreadObject, kMainThread, kMainTrace);
  layout->java_frame = one.frame_root(0x03, kString1, kMainThread, 0);
  layout->jni_local = one.frame_root(0x02, kString2, kMainThread, 1);
  layout->native_stack = one.thread_root(0x04, kArray, kMainThread);
  layout->thread_block = one.thread_root(0x06, kBytes1, kMainThread);
  layout->sticky = one.root(0x05, kClassString);
  one.root(0x07, kString1);
  one.frame_root(0x01, kString2, 0x12345678, 0x9abcdef0);  // JNI GLOBAL: object, reference ID
  one.root(0xFF, kArray);
  layout->string1 = one.instance(kString1, kClassString, Bytes().u8(kBytes1).u4(5));
  layout->array = one.object_array(kArray, kClassStringArray, {kString1, kString2, 0});
  layout->bytes1 = one.byte_array(kBytes1, "hello");
  Segment two;
  layout->bytes2 = two.byte_array(kBytes2, "world!");
  layout->string2 = two.instance(kString2, kClassString, Bytes().u8(kBytes2).u4(6));
  two.instance(kThreadObject, kClassObject, Bytes());
  layout->segment1 = d.segment(one);
  layout->segment2 = d.segment(two);
  layout->end = d.end();
  return d;
}

// Feeds bytes in the given chunk sizes (cycled), alternating the two entry points.
bool rewrite(VmDumpRewriter& rewriter, const std::vector<uint8_t>& bytes, const std::vector<size_t>& chunks = {}) {
  std::vector<uint8_t> copy = bytes;
  size_t at = 0;
  for (size_t turn = 0; at < copy.size(); ++turn) {
    size_t n = chunks.empty() ? copy.size() : std::min(chunks[turn % chunks.size()], copy.size() - at);
    bool ok = turn % 2 ? rewriter.feed(copy.data() + at, n) : rewriter.feed_in_place(copy.data() + at, n);
    if (!ok) return false;
    at += n;
  }
  return rewriter.finish();
}

struct Record {
  uint8_t tag;
  size_t body;  // offset of the body in the output
  uint32_t length;
};

std::vector<Record> records_of(const std::vector<uint8_t>& out, size_t from = 0) {
  std::vector<Record> records;
  for (size_t at = from; at < out.size();) {
    Record r{out[at], at + 9, u4_at(out, at + 5)};
    records.push_back(r);
    at = r.body + r.length;
  }
  return records;
}

// Offsets of kept records are found by matching: the n-th output record of a tag.
size_t nth_record(const std::vector<uint8_t>& out, uint8_t tag, size_t n) {
  for (const Record& r : records_of(out)) {
    if (r.tag == tag && n-- == 0) return r.body;
  }
  ADD_FAILURE() << "no record " << int(tag) << " #" << n;
  return 0;
}

// Seeds for tests/fuzz/corpus/vm_dump_rewriter, written only on request:
// FASTHPROF_WRITE_VM_DUMP_CORPUS=<folder> build/tests/test_vm_dump_rewriter
void write_seed(const std::string& name, const std::vector<uint8_t>& bytes) {
  if (const char* folder = std::getenv("FASTHPROF_WRITE_VM_DUMP_CORPUS")) {
    std::ofstream(std::string(folder) + "/jdk-" + name + ".hprof", std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
}

std::vector<uint8_t> fasthprof_header() {
  MemoryStream stream;
  ProfileWriter writer(parse("format=b"), stream, nullptr);
  writer.write_header(0, 1700000000000ULL);
  writer.flush();
  return stream.bytes;
}

VerifyResult verify(const std::vector<uint8_t>& file) {
  VerifyOptions options;
  options.strict = true;
  options.count_classes = true;
  return verify_hprof(file.data(), file.size(), options);
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

// ---- side files (JDK 22+): feed_file and VmDumpPipeReader ----

// The sample dump with a third, large segment (byte arrays, and a patched root in their midst), as
// one stream; *segments is where its first HEAP DUMP SEGMENT starts and *end its HEAP DUMP END.
JdkDump large_dump(size_t* segments, size_t* end, size_t arrays = 30000) {
  Layout l{};
  JdkDump d = sample_dump(&l);
  d.data.resize(l.end);
  Segment big;
  for (size_t i = 0; i < arrays; ++i) {
    big.byte_array(0x700000000 + i * 0x40, std::string(16 + i % 7, static_cast<char>('a' + i % 26)));
    if (i == arrays / 2) big.frame_root(0x03, kString1, kMainThread, 0);  // thread serial: patched
  }
  d.segment(big);
  *segments = l.segment1;
  *end = d.end();
  return d;
}

std::vector<uint8_t> rewritten_in_memory(const JdkDump& dump) {
  VmDumpNumbering numbering;
  MemoryStream out;
  VmDumpRewriter rewriter(numbering, out);
  EXPECT_TRUE(rewrite(rewriter, dump.data)) << rewriter.error();
  return out.bytes;
}

// A MemoryStream that counts the file ranges it is given (and reads them, as the default does).
class RangeCountingStream final : public OutputStream {
 public:
  void write(const void* data, size_t size) override { stream.write(data, size); }
  bool write_file_range(int fd, uint64_t offset, uint64_t size) override {
    ++ranges;
    range_bytes += size;
    largest = std::max(largest, size);
    return stream.write_file_range(fd, offset, size);
  }
  MemoryStream stream;
  int ranges = 0;
  uint64_t range_bytes = 0;
  uint64_t largest = 0;
};

struct TempFolder {
  TempFolder() {
    const char* base = std::getenv("TMPDIR");
    path = std::string(base != nullptr ? base : "/tmp") + "/fasthprof_vmdump_" + std::to_string(::getpid());
    ::mkdir(path.c_str(), 0700);
  }
  ~TempFolder() { std::system(("rm -rf '" + path + "'").c_str()); }
  std::string write(const std::string& name, const uint8_t* data, size_t size) const {
    std::string file = path + "/" + name;
    std::ofstream(file, std::ios::binary).write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    return file;
  }
  std::string path;
};

// Rewrites the dump with everything from `segments` to `end` read from a file.
RangeCountingStream rewrite_through_file(const JdkDump& dump, size_t segments, size_t end, VmDumpStats* stats) {
  TempFolder folder;
  std::string side = folder.write("side.p0", dump.data.data() + segments, end - segments);
  int fd = ::open(side.c_str(), O_RDONLY | O_CLOEXEC);
  EXPECT_GE(fd, 0);
  VmDumpNumbering numbering;
  RangeCountingStream out;
  VmDumpRewriter rewriter(numbering, out);
  std::vector<uint8_t> copy = dump.data;
  EXPECT_TRUE(rewriter.feed_in_place(copy.data(), segments)) << rewriter.error();
  EXPECT_TRUE(rewriter.feed_file(fd, end - segments)) << rewriter.error();
  EXPECT_TRUE(rewriter.feed(dump.data.data() + end, dump.size() - end)) << rewriter.error();
  EXPECT_TRUE(rewriter.finish()) << rewriter.error();
  ::close(fd);
  *stats = rewriter.stats();
  return out;
}

// A side file of 20 MB: its one unchanged run goes out in ranges of at most 8 MiB, so that the sink
// copies while the rewriter reads on.
TEST(VmDumpRewriterFile, LongRunsAreHandedOverInPieces) {
  size_t segments = 0, end = 0;
  JdkDump dump = large_dump(&segments, &end, 600000);
  VmDumpStats stats;
  RangeCountingStream out = rewrite_through_file(dump, segments, end, &stats);
  EXPECT_EQ(out.stream.bytes, rewritten_in_memory(dump));
  EXPECT_GE(out.ranges, 3);
  EXPECT_LE(out.largest, (uint64_t{8} << 20) + (uint64_t{1} << 20));
  EXPECT_GT(out.range_bytes, (end - segments) * 9 / 10);
  EXPECT_EQ(stats.file_ranges, static_cast<uint64_t>(out.ranges));
}

TEST(VmDumpRewriterFile, SideFileGivesTheSameBytesWithItsUnchangedRunsAsFileRanges) {
  size_t segments = 0, end = 0;
  JdkDump dump = large_dump(&segments, &end);
  const std::vector<uint8_t> whole = rewritten_in_memory(dump);
  VmDumpStats stats;
  RangeCountingStream out = rewrite_through_file(dump, segments, end, &stats);
  EXPECT_EQ(out.stream.bytes, whole);
  // The big segment's arrays are copied as ranges (two: the patched root splits them); the small
  // segments' patched roots and the runs shorter than 128 KiB come from memory.
  EXPECT_EQ(out.ranges, 2);
  EXPECT_GT(out.range_bytes, 900000u);
  EXPECT_EQ(stats.file_ranges, 2u);
  EXPECT_EQ(stats.file_bytes, end - segments);
  EXPECT_EQ(stats.bytes_in, dump.size());
  std::vector<uint8_t> file = fasthprof_header();
  file.insert(file.end(), whole.begin(), whole.end());
  VerifyResult result = verify(file);
  ASSERT_TRUE(result.ok) << result.error << " at " << result.error_offset;
  EXPECT_EQ(result.dumps[0].instances, 3u);
}

// Drives a VmDumpPipeReader as FifoDrain does: the stream in chunks of `chunk` bytes, bytes it asks
// to skip taken from the stream unseen.
struct PipeRun {
  std::vector<uint8_t> out;
  uint32_t side_files = 0;
  uint64_t skipped = 0;
  std::string note;
};
PipeRun run_pipe(const JdkDump& dump, const std::string& pipe_path, size_t chunk, bool side_files = true) {
  PipeRun run;
  VmDumpNumbering numbering;
  MemoryStream out;
  VmDumpRewriter rewriter(numbering, out);
  uint64_t skip = 0;
  {
    VmDumpPipeReader reader(rewriter, pipe_path, side_files, [&skip](uint64_t n) { skip += n; });
    std::vector<uint8_t> copy = dump.data;
    size_t at = 0;
    while (at < copy.size()) {
      if (skip > 0) {
        uint64_t n = std::min<uint64_t>(skip, copy.size() - at);
        at += n;
        skip -= n;
        run.skipped += n;
        continue;
      }
      size_t n = std::min(chunk, copy.size() - at);
      EXPECT_TRUE(reader.take(copy.data() + at, n)) << rewriter.error();
      at += n;
    }
    EXPECT_EQ(skip, 0u);
    run.side_files = reader.side_files();
    run.note = reader.note();
  }
  EXPECT_TRUE(rewriter.finish()) << rewriter.error();
  run.out = out.bytes;
  return run;
}

TEST(VmDumpPipeReader, ReadsTheSideFileInPlaceOfItsCopyInThePipe) {
  size_t segments = 0, end = 0;
  JdkDump dump = large_dump(&segments, &end);
  const std::vector<uint8_t> whole = rewritten_in_memory(dump);
  TempFolder folder;
  const std::string pipe = folder.path + "/dump.fifo";
  folder.write("dump.fifo.p0", dump.data.data() + segments, end - segments);
  // Chunks that cut the first segment's header, that hold the whole side file, and pipe-sized ones.
  for (size_t chunk : {segments + 3, size_t{4096}, size_t{1} << 20, dump.size()}) {
    PipeRun run = run_pipe(dump, pipe, chunk);
    EXPECT_EQ(run.out, whole) << chunk;
    EXPECT_EQ(run.side_files, 1u) << chunk << ": " << run.note;
    EXPECT_GE(run.skipped, chunk >= end ? size_t{0} : end - segments - chunk) << chunk;
  }
  // Two side files, as parallel dumpers write: the second begins at the second segment.
  Layout l{};
  sample_dump(&l);
  folder.write("two.fifo.p0", dump.data.data() + segments, l.segment2 - l.segment1);
  folder.write("two.fifo.p1", dump.data.data() + segments + (l.segment2 - l.segment1), end - segments - (l.segment2 - l.segment1));
  PipeRun two = run_pipe(dump, folder.path + "/two.fifo", 4096);
  EXPECT_EQ(two.out, whole);
  EXPECT_EQ(two.side_files, 2u) << two.note;
}

TEST(VmDumpPipeReader, UsesThePipeWhenTheSideFileIsGoneOrDiffers) {
  size_t segments = 0, end = 0;
  JdkDump dump = large_dump(&segments, &end);
  const std::vector<uint8_t> whole = rewritten_in_memory(dump);
  TempFolder folder;
  PipeRun gone = run_pipe(dump, folder.path + "/gone.fifo", 65536);
  EXPECT_EQ(gone.out, whole);
  EXPECT_EQ(gone.side_files, 0u);
  EXPECT_EQ(gone.skipped, 0u);
  EXPECT_NE(gone.note.find("no side file " + folder.path + "/gone.fifo.p0"), std::string::npos) << gone.note;
  std::vector<uint8_t> other(dump.data.begin() + segments, dump.data.begin() + end);
  other[20] ^= 1;  // within the first bytes the reader compares
  folder.write("other.fifo.p0", other.data(), other.size());
  PipeRun differs = run_pipe(dump, folder.path + "/other.fifo", 65536);
  EXPECT_EQ(differs.out, whole);
  EXPECT_EQ(differs.side_files, 0u);
  EXPECT_NE(differs.note.find("is not what the JVM sends"), std::string::npos) << differs.note;
  // JDK 17 has no side file and is never looked for one.
  PipeRun jdk17 = run_pipe(dump, folder.path + "/other.fifo", 65536, false);
  EXPECT_EQ(jdk17.out, whole);
  EXPECT_TRUE(jdk17.note.empty());
}

// A side file the JVM did not make is never read (another user could have planted it where the
// pipe's folder is not private): a link to the right bytes, a file with a second name, a pipe, a
// file of another user. The pipe's bytes are used instead, and nothing waits.
TEST(VmDumpPipeReader, RefusesASideFileTheJvmDidNotMake) {
  size_t segments = 0, end = 0;
  JdkDump dump = large_dump(&segments, &end);
  const std::vector<uint8_t> whole = rewritten_in_memory(dump);
  TempFolder folder;
  const std::string real = folder.write("real", dump.data.data() + segments, end - segments);
  ASSERT_EQ(0, ::symlink(real.c_str(), (folder.path + "/link.fifo.p0").c_str()));
  folder.write("linked.fifo.p0", dump.data.data() + segments, end - segments);
  ASSERT_EQ(0, ::link((folder.path + "/linked.fifo.p0").c_str(), (folder.path + "/second-name").c_str()));
  ASSERT_EQ(0, ::mkfifo((folder.path + "/pipe.fifo.p0").c_str(), 0600));
  std::vector<std::pair<std::string, std::string>> cases = {
      {"link", "Too many levels of symbolic links"},  // O_NOFOLLOW's ELOOP
      {"linked", "2 links to it"},
      {"pipe", "not a regular file"}};
  if (::geteuid() == 0) {
    std::string theirs = folder.write("theirs.fifo.p0", dump.data.data() + segments, end - segments);
    ASSERT_EQ(0, ::chown(theirs.c_str(), 65534, 65534));
    cases.emplace_back("theirs", "owned by user 65534");
  }
  for (const auto& [name, why] : cases) {
    PipeRun run = run_pipe(dump, folder.path + "/" + name + ".fifo", 65536);
    EXPECT_EQ(run.out, whole) << name;
    EXPECT_EQ(run.side_files, 0u) << name;
    EXPECT_EQ(run.skipped, 0u) << name;
    EXPECT_NE(run.note.find(why), std::string::npos) << name << ": " << run.note;
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
