// Hand-built HPROF files for the verifier's tests: the IDs and serials they use, a big-endian
// builder (Bytes, Segment, File) independent of the runtime's writers, the good file with every
// record kind, and EXPECT_FAILS_AT (a verify that fails at a byte with a message).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "base/hprof_format.h"
#include "hprof_verifier.h"


namespace fasthprof::verifier_test {

constexpr uint8_t kObj = static_cast<uint8_t>(BasicType::kObject);
constexpr uint8_t kBool = static_cast<uint8_t>(BasicType::kBoolean);
constexpr uint8_t kChar = static_cast<uint8_t>(BasicType::kChar);
constexpr uint8_t kInt = static_cast<uint8_t>(BasicType::kInt);
constexpr uint8_t kLong = static_cast<uint8_t>(BasicType::kLong);

// Object, class, frame and name IDs used throughout.
enum : uint64_t {
  kNameObject = 1, kNamePoint, kNamePoint3, kNamePointArray, kNameX, kNameNext, kNameZ, kNameMain, kNameSig,
  kNameSource, kNameThread, kNameGroup, kNameRun, kNameLabel, kNameFlag,
  kObjectClass = 0x1000, kPointClass, kPoint3Class, kPointArrayClass,
  kPointA = 0x2001, kPoint3B, kThreadObject, kPointC,
  kArray = 0x3001, kInts, kChars,
  kFrameMain = 0x7001, kFrameRun,
};
constexpr uint32_t kEmptyTrace = 300000;
constexpr uint32_t kMainTrace = 300001;  // two frames
constexpr uint32_t kMainThread = 200001;

// Big-endian byte builder; IDs take id_size bytes.
struct Bytes {
  explicit Bytes(uint32_t id_bytes) : id_size(id_bytes) {}
  Bytes& u1(uint64_t v) { data.push_back(static_cast<uint8_t>(v)); return *this; }
  Bytes& u2(uint64_t v) { return u1(v >> 8).u1(v); }
  Bytes& u4(uint64_t v) { return u2(v >> 16).u2(v); }
  Bytes& u8(uint64_t v) { return u4(v >> 32).u4(v); }
  Bytes& id(uint64_t v) { return id_size == 4 ? u4(v) : u8(v); }
  Bytes& str(const std::string& s) { data.insert(data.end(), s.begin(), s.end()); return *this; }
  Bytes& append(const Bytes& other) { data.insert(data.end(), other.data.begin(), other.data.end()); return *this; }
  size_t size() const { return data.size(); }
  uint32_t id_size;
  std::vector<uint8_t> data;
};

// Heap-dump sub-records; each returns its offset inside the segment body.
struct Segment : Bytes {
  explicit Segment(uint32_t id_bytes) : Bytes(id_bytes) {}
  struct Field { uint64_t name; uint8_t type; uint64_t value; };

  size_t value(uint8_t type, uint64_t v) {
    size_t at = size();
    switch (type) {
      case kObj: id(v); break;
      case kBool: case static_cast<uint8_t>(BasicType::kByte): u1(v); break;
      case kChar: case static_cast<uint8_t>(BasicType::kShort): u2(v); break;
      case kLong: case static_cast<uint8_t>(BasicType::kDouble): u8(v); break;
      default: u4(v); break;
    }
    return at;
  }
  size_t class_dump(uint64_t class_id, uint64_t super, const std::vector<Field>& fields,
                    const std::vector<Field>& statics = {}, const std::vector<Field>& constants = {}) {
    size_t at = size();
    u1(0x20).id(class_id).u4(kEmptyTrace).id(super).id(0).id(0).id(0).id(0).id(0).u4(0);
    u2(constants.size());
    for (const Field& c : constants) { u2(c.name); u1(c.type); value(c.type, c.value); }
    u2(statics.size());
    for (const Field& s : statics) { id(s.name); u1(s.type); value(s.type, s.value); }
    u2(fields.size());
    for (const Field& f : fields) id(f.name).u1(f.type);
    return at;
  }
  size_t instance(uint64_t object, uint64_t class_id, const Bytes& values, uint32_t trace = kEmptyTrace) {
    size_t at = size();
    u1(0x21).id(object).u4(trace).id(class_id).u4(values.size()).append(values);
    return at;
  }
  size_t object_array(uint64_t object, uint64_t class_id, const std::vector<uint64_t>& elements) {
    size_t at = size();
    u1(0x22).id(object).u4(kEmptyTrace).u4(elements.size()).id(class_id);
    for (uint64_t e : elements) id(e);
    return at;
  }
  size_t primitive_array(uint64_t object, uint8_t type, const std::vector<uint64_t>& elements) {
    size_t at = size();
    u1(0x23).id(object).u4(kEmptyTrace).u4(elements.size()).u1(type);
    for (uint64_t e : elements) value(type, e);
    return at;
  }
  size_t root(uint8_t tag, uint64_t object) { size_t at = size(); u1(tag).id(object); return at; }
  size_t thread_object(uint64_t object, uint32_t thread, uint32_t trace) {
    size_t at = size(); u1(0x08).id(object).u4(thread).u4(trace); return at;
  }
  size_t frame_root(uint8_t tag, uint64_t object, uint32_t thread, int32_t frame) {
    size_t at = size(); u1(tag).id(object).u4(thread).u4(static_cast<uint32_t>(frame)); return at;
  }
};

class File {
 public:
  explicit File(uint32_t id_size = 8, const std::string& version = kBinaryHeaderVersion)
      : id_size_(id_size), bytes_(id_size) {
    bytes_.str(version).u1(0).u4(id_size).u8(1700000000123ULL);
  }
  Bytes body() const { return Bytes(id_size_); }
  Segment segment_body() const { return Segment(id_size_); }

  size_t record(RecordTag tag, const Bytes& body) {
    size_t at = bytes_.size();
    bytes_.u1(static_cast<uint8_t>(tag)).u4(1000).u4(body.size()).append(body);
    return at;
  }
  size_t utf8(uint64_t name, const std::string& text) { return record(RecordTag::kUtf8, body().id(name).str(text)); }
  size_t load_class(uint32_t serial, uint64_t class_id, uint32_t trace, uint64_t name) {
    return record(RecordTag::kLoadClass, body().u4(serial).id(class_id).u4(trace).id(name));
  }
  size_t frame(uint64_t frame_id, uint64_t method, uint64_t signature, uint64_t source, int32_t line) {
    return record(RecordTag::kStackFrame,
                  body().id(frame_id).id(method).id(signature).id(source).u4(100001).u4(static_cast<uint32_t>(line)));
  }
  size_t trace(uint32_t serial, uint32_t thread, const std::vector<uint64_t>& frames) {
    Bytes b = body();
    b.u4(serial).u4(thread).u4(frames.size());
    for (uint64_t f : frames) b.id(f);
    return record(RecordTag::kStackTrace, b);
  }
  size_t start_thread(uint32_t serial, uint64_t object, uint32_t trace, uint64_t name) {
    return record(RecordTag::kStartThread,
                  body().u4(serial).id(object).u4(trace).id(name).id(kNameGroup).id(0));
  }
  size_t segment(const Segment& body) { return record(RecordTag::kHeapDumpSegment, body); }
  size_t end() { return record(RecordTag::kHeapDumpEnd, body()); }
  size_t sites(const std::vector<std::vector<uint32_t>>& sites, int extra_count = 0) {
    Bytes b = body();
    b.u2(0).u4(0).u4(30).u4(3).u8(300).u8(30).u4(sites.size() + extra_count);
    for (const auto& s : sites) b.u1(s[0]).u4(s[1]).u4(s[2]).u4(10).u4(1).u4(100).u4(10);
    return record(RecordTag::kAllocSites, b);
  }
  size_t cpu_samples(const std::vector<uint32_t>& traces) {
    Bytes b = body();
    b.u4(traces.size() * 5).u4(traces.size());
    for (uint32_t t : traces) b.u4(5).u4(t);
    return record(RecordTag::kCpuSamples, b);
  }
  size_t raw(const std::vector<uint8_t>& bytes) {
    size_t at = bytes_.size();
    bytes_.data.insert(bytes_.data.end(), bytes.begin(), bytes.end());
    return at;
  }

  // Names, frames, traces, LOAD CLASS of Object, Point, Point3 and Point[], START THREAD of main.
  void prologue() {
    record(RecordTag::kControlSettings, body().u4(3).u2(4));
    const char* names[] = {"java.lang.Object", "Point", "Point3", "Point[]", "x", "next", "z", "main",
                           "([Ljava/lang/String;)V", "Main.java", "main", "main-group", "run", "label", "flag"};
    for (uint64_t i = 0; i < std::size(names); ++i) utf8(kNameObject + i, names[i]);
    frame(kFrameMain, kNameMain, kNameSig, kNameSource, 10);
    frame(kFrameRun, kNameRun, kNameSig, 0, -1);
    trace(kEmptyTrace, 0, {});
    trace(kMainTrace, kMainThread, {kFrameMain, kFrameRun});
    load_class(100000, kObjectClass, kEmptyTrace, kNameObject);
    load_class(100001, kPointClass, kEmptyTrace, kNamePoint);
    load_class(100002, kPoint3Class, kMainTrace, kNamePoint3);
    load_class(100003, kPointArrayClass, kEmptyTrace, kNamePointArray);
    start_thread(kMainThread, kThreadObject, kMainTrace, kNameThread);
  }

  // CLASS DUMPs of Object and Point (x: int, next: object; static label, flag; one constant).
  void base_classes(Segment& s) {
    s.class_dump(kObjectClass, 0, {});
    s.class_dump(kPointClass, kObjectClass, {{kNameX, kInt, 0}, {kNameNext, kObj, 0}},
                 {{kNameLabel, kObj, kPointA}, {kNameFlag, kBool, 1}}, {{7, kObj, kObjectClass}});
  }
  Bytes point_values(uint32_t x, uint64_t next) { return body().u4(x).id(next); }
  // A segment body with the base classes and one Point, kPointA (x 1, next null), whose INSTANCE
  // DUMP starts at *point_at in the body when point_at is given.
  Segment point_segment_body(size_t* point_at = nullptr) {
    Segment s = segment_body();
    base_classes(s);
    size_t at = s.instance(kPointA, kPointClass, point_values(1, 0));
    if (point_at != nullptr) *point_at = at;
    return s;
  }
  // A whole dump: the segment of point_segment_body() and HEAP DUMP END.
  void point_dump() {
    segment(point_segment_body());
    end();
  }

  uint64_t size() const { return bytes_.size(); }
  uint64_t at(size_t segment_record, size_t in_body) const { return segment_record + kRecordHeaderSize + in_body; }
  const std::vector<uint8_t>& data() const { return bytes_.data; }
  std::vector<uint8_t>& mutable_data() { return bytes_.data; }

  VerifyResult verify(bool classes = false, bool strict = true) const {
    VerifyOptions options;
    options.count_classes = classes;
    options.strict = strict;
    return verify_hprof(bytes_.data.data(), bytes_.data.size(), options);
  }

 private:
  uint32_t id_size_;
  Bytes bytes_;
};

// The good file: every record kind and a two-segment dump whose roots and classes (segment 1)
// refer to objects in segment 2.
inline File good_file(uint32_t id_size) {
  File f(id_size);
  f.prologue();
  Segment roots_and_classes = f.segment_body();
  roots_and_classes.thread_object(kThreadObject, kMainThread, kMainTrace);
  roots_and_classes.frame_root(0x03, kPointA, kMainThread, 1);
  roots_and_classes.frame_root(0x02, kPoint3B, kMainThread, -1);
  roots_and_classes.root(0x01, kArray);
  roots_and_classes.id(0x9999);  // the JNI global's reference ID: not an object
  roots_and_classes.root(0x05, kObjectClass);
  roots_and_classes.root(0xFF, kInts);
  roots_and_classes.root(0x07, kPointA);
  roots_and_classes.root(0x06, kThreadObject);
  roots_and_classes.u4(kMainThread);
  roots_and_classes.root(0x04, kPoint3B);
  roots_and_classes.u4(kMainThread);
  f.base_classes(roots_and_classes);
  roots_and_classes.class_dump(kPoint3Class, kPointClass, {{kNameZ, kLong, 0}});
  roots_and_classes.class_dump(kPointArrayClass, kObjectClass, {});
  f.segment(roots_and_classes);

  Segment objects = f.segment_body();
  objects.instance(kPointA, kPointClass, f.point_values(1, kPoint3B), kMainTrace);
  objects.instance(kPoint3B, kPoint3Class, f.body().u8(42).append(f.point_values(2, kPointA)));
  objects.instance(kThreadObject, kObjectClass, f.body());
  objects.instance(kPointC, kPointClass, f.point_values(3, 0));
  objects.object_array(kArray, kPointArrayClass, {kPointA, 0, kPoint3B});
  objects.primitive_array(kInts, kInt, {1, 2, 3});
  objects.primitive_array(kChars, kChar, {'h', 'i'});
  f.segment(objects);
  f.end();

  f.sites({{0, 100001, kMainTrace}, {2, 100003, kEmptyTrace}});
  f.cpu_samples({kMainTrace, kEmptyTrace});
  f.record(RecordTag::kHeapSummary, f.body().u4(1).u4(2).u8(3).u8(4));
  f.record(RecordTag::kEndThread, f.body().u4(kMainThread));
  f.record(RecordTag::kUnloadClass, f.body().u4(100002));
  return f;
}

// Seeds for tests/fuzz/corpus/verifier, written only on request:
// FASTHPROF_WRITE_VERIFIER_CORPUS=<folder> build-x/tests/test_verifier
inline void write_seed(const std::string& name, const File& f) {
  if (const char* folder = std::getenv("FASTHPROF_WRITE_VERIFIER_CORPUS")) {
    std::ofstream(std::string(folder) + "/" + name + ".hprof", std::ios::binary)
        .write(reinterpret_cast<const char*>(f.data().data()), static_cast<std::streamsize>(f.size()));
  }
}

inline uint64_t count(const VerifyResult& r, RecordTag tag) { return r.record_counts[static_cast<uint8_t>(tag)]; }

#define EXPECT_FAILS_AT(result, offset, text)                                    \
  do {                                                                           \
    VerifyResult r_ = (result);                                                  \
    ASSERT_FALSE(r_.ok) << "expected: " << (text);                              \
    EXPECT_EQ(r_.error_offset, static_cast<uint64_t>(offset)) << r_.error;      \
    EXPECT_NE(r_.error.find(text), std::string::npos) << r_.error;              \
  } while (0)

}  // namespace fasthprof::verifier_test
