// JDK-like heap dumps built byte by byte for the tests of runtime/vm_dump/vm_dump_rewriter and
// runtime/vm_dump/vm_dump_pipe (vm_dump_rewriter_test.cpp, vm_dump_pipe_test.cpp), in the shape HotSpot's
// dumper writes: header, UTF8s, LOAD CLASSes naming the dummy trace written after them, frames,
// traces, segments, HEAP DUMP END; and the readers of what the rewriter made of them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/ids.h"
#include "hprof_verifier.h"
#include "memory_stream.h"
#include "records/profile_writer.h"
#include "vm_dump/vm_dump_rewriter.h"

namespace fasthprof::jdk_dump {

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
inline JdkDump sample_dump(Layout* layout, uint32_t first_class_serial = 1,
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
inline bool rewrite(VmDumpRewriter& rewriter, const std::vector<uint8_t>& bytes, const std::vector<size_t>& chunks = {}) {
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

inline std::vector<Record> records_of(const std::vector<uint8_t>& out, size_t from = 0) {
  std::vector<Record> records;
  for (size_t at = from; at < out.size();) {
    Record r{out[at], at + 9, u4_at(out, at + 5)};
    records.push_back(r);
    at = r.body + r.length;
  }
  return records;
}

// Offsets of kept records are found by matching: the n-th output record of a tag.
inline size_t nth_record(const std::vector<uint8_t>& out, uint8_t tag, size_t n) {
  for (const Record& r : records_of(out)) {
    if (r.tag == tag && n-- == 0) return r.body;
  }
  ADD_FAILURE() << "no record " << int(tag) << " #" << n;
  return 0;
}

// Seeds for tests/fuzz/corpus/vm_dump_rewriter, written only on request:

inline std::vector<uint8_t> fasthprof_header() {
  MemoryStream stream;
  ProfileWriter writer(parse("format=b"), stream, nullptr);
  writer.write_header(0, 1700000000000ULL);
  writer.flush();
  return stream.bytes;
}

inline VerifyResult verify(const std::vector<uint8_t>& file) {
  VerifyOptions options;
  options.strict = true;
  options.count_classes = true;
  return verify_hprof(file.data(), file.size(), options);
}

}  // namespace fasthprof::jdk_dump
