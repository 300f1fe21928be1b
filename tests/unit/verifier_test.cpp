// The verifier against hand-built files: one good file with every record kind, then one broken file
// per rule, each failing at the expected byte with the expected message. The bytes come from the
// small builder below, not from the runtime's writers, so that the two stay independent.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "hprof_format.h"
#include "hprof_verifier.h"

namespace fasthprof {
namespace {

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
File good_file(uint32_t id_size) {
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
void write_seed(const std::string& name, const File& f) {
  if (const char* folder = std::getenv("FASTHPROF_WRITE_VERIFIER_CORPUS")) {
    std::ofstream(std::string(folder) + "/" + name + ".hprof", std::ios::binary)
        .write(reinterpret_cast<const char*>(f.data().data()), static_cast<std::streamsize>(f.size()));
  }
}

uint64_t count(const VerifyResult& r, RecordTag tag) { return r.record_counts[static_cast<uint8_t>(tag)]; }

class GoodFile : public ::testing::TestWithParam<uint32_t> {};

TEST_P(GoodFile, PassesWithTheRightCounts) {
  File f = good_file(GetParam());
  VerifyResult r = f.verify(true);
  ASSERT_TRUE(r.ok) << r.error << " at byte " << r.error_offset;
  EXPECT_EQ(r.version, "JAVA PROFILE 1.0.2");
  EXPECT_EQ(r.id_size, GetParam());
  EXPECT_EQ(r.timestamp_millis, 1700000000123ULL);
  EXPECT_EQ(count(r, RecordTag::kUtf8), 15u);
  EXPECT_EQ(count(r, RecordTag::kLoadClass), 4u);
  EXPECT_EQ(count(r, RecordTag::kStackFrame), 2u);
  EXPECT_EQ(count(r, RecordTag::kStackTrace), 2u);
  EXPECT_EQ(count(r, RecordTag::kStartThread), 1u);
  EXPECT_EQ(count(r, RecordTag::kHeapDumpSegment), 2u);
  EXPECT_EQ(count(r, RecordTag::kHeapDumpEnd), 1u);
  EXPECT_EQ(count(r, RecordTag::kAllocSites), 1u);
  EXPECT_EQ(count(r, RecordTag::kCpuSamples), 1u);
  EXPECT_EQ(count(r, RecordTag::kHeapSummary), 1u);
  EXPECT_EQ(count(r, RecordTag::kEndThread), 1u);
  EXPECT_EQ(count(r, RecordTag::kUnloadClass), 1u);
  EXPECT_EQ(count(r, RecordTag::kControlSettings), 1u);
  ASSERT_EQ(r.dumps.size(), 1u);
  const DumpSummary& d = r.dumps[0];
  EXPECT_EQ(d.segments, 2u);
  EXPECT_EQ(d.classes, 4u);
  EXPECT_EQ(d.instances, 4u);
  EXPECT_EQ(d.object_arrays, 1u);
  EXPECT_EQ(d.primitive_arrays, 2u);
  EXPECT_EQ(d.roots, 9u);
  EXPECT_EQ(d.sub_record_counts[static_cast<uint8_t>(HeapTag::kClassDump)], 4u);
  EXPECT_EQ(d.sub_record_counts[static_cast<uint8_t>(HeapTag::kRootJavaFrame)], 1u);
  EXPECT_EQ(r.sub_record_counts[static_cast<uint8_t>(HeapTag::kInstanceDump)], 4u);
  std::vector<std::pair<std::string, uint64_t>> expected = {
      {"Point", 2}, {"Point3", 1}, {"Point[]", 1}, {"char[]", 1}, {"int[]", 1}, {"java.lang.Object", 1}};
  EXPECT_EQ(d.class_counts, expected);

  std::string summary = format_verify_summary(r, true);
  EXPECT_NE(summary.find("HEAP DUMP SEGMENT"), std::string::npos) << summary;
  EXPECT_NE(summary.find("2 segments, 4 classes, 4 instances, 1 object arrays, 2 primitive arrays, 9 roots"),
            std::string::npos) << summary;
  EXPECT_NE(summary.find("           2  Point\n"), std::string::npos) << summary;

  write_seed("good-id" + std::to_string(GetParam()), f);
}

TEST_P(GoodFile, EveryTruncationFailsSafelyOrEndsOnARecordBoundary) {
  File f = good_file(GetParam());
  for (size_t size = 0; size < f.size(); ++size) {
    VerifyResult r = verify_hprof(f.data().data(), size, VerifyOptions{});
    if (!r.ok) {
      EXPECT_LE(r.error_offset, size);
      EXPECT_FALSE(r.error.empty());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(IdSizes, GoodFile, ::testing::Values(4u, 8u));

#define EXPECT_FAILS_AT(result, offset, text)                                    \
  do {                                                                           \
    VerifyResult r_ = (result);                                                  \
    ASSERT_FALSE(r_.ok) << "expected: " << (text);                              \
    EXPECT_EQ(r_.error_offset, static_cast<uint64_t>(offset)) << r_.error;      \
    EXPECT_NE(r_.error.find(text), std::string::npos) << r_.error;              \
  } while (0)

TEST(VerifierHeader, RejectsBadMagic) {
  File f(8, "JAVA PROFILE 1.0.3");
  EXPECT_FAILS_AT(f.verify(), 0, "not an HPROF binary file");
}

TEST(VerifierHeader, RejectsEmptyAndTruncatedHeaders) {
  EXPECT_FAILS_AT(verify_hprof(nullptr, 0, VerifyOptions{}), 0, "empty file");
  File f;
  EXPECT_FAILS_AT(verify_hprof(f.data().data(), 25, VerifyOptions{}), 25, "truncated header");
}

TEST(VerifierHeader, RejectsIdSizeOtherThanFourOrEight) {
  File f(6);
  EXPECT_FAILS_AT(f.verify(), 19, "identifier size 6 is not 4 or 8");
}

TEST(VerifierHeader, AcceptsOldVersionWithHeapDumpRecord) {
  File f(4, kTextHeaderVersion);
  f.prologue();
  Segment s = f.segment_body();
  f.base_classes(s);
  s.instance(kPointA, kPointClass, f.point_values(1, 0));
  f.record(RecordTag::kHeapDump, s);
  VerifyResult r = f.verify();
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.dumps.size(), 1u);
  write_seed("version-101-heap-dump", f);
}

TEST(VerifierRecords, RejectsRecordLongerThanTheFile) {
  File f;
  size_t at = f.utf8(1, "abc");
  f.mutable_data().resize(f.size() - 1);
  EXPECT_FAILS_AT(f.verify(), at, "runs past the end of the file");
}

TEST(VerifierRecords, RejectsTruncatedRecordHeader) {
  File f;
  f.utf8(1, "abc");
  size_t at = f.raw({0x01, 0, 0, 0});
  EXPECT_FAILS_AT(f.verify(), at, "truncated record header");
}

TEST(VerifierRecords, RejectsUnknownTag) {
  File f;
  size_t at = f.raw({0x42, 0, 0, 0, 0, 0, 0, 0, 0});
  EXPECT_FAILS_AT(f.verify(), at, "unknown record tag 0x42");
}

TEST(VerifierRecords, RejectsWrongFixedLength) {
  File f;
  f.utf8(1, "A");
  f.trace(kEmptyTrace, 0, {});
  size_t at = f.record(RecordTag::kLoadClass, f.body().u4(100000).id(kObjectClass).u4(kEmptyTrace).id(1).u1(0));
  EXPECT_FAILS_AT(f.verify(), at, "LOAD CLASS record has length 25, expected 24");
}

TEST(VerifierRecords, RejectsDuplicateUtf8Id) {
  File f;
  size_t first = f.utf8(5, "a");
  size_t at = f.utf8(5, "b");
  EXPECT_FAILS_AT(f.verify(), at, "UTF8 ID 0x5 is already defined at byte " + std::to_string(first));
}

TEST(VerifierRecords, RejectsTraceNamingUnknownFrame) {
  File f;
  f.utf8(1, "m");
  f.frame(0x7001, 1, 1, 0, 3);
  size_t at = f.trace(kEmptyTrace, 0, {0x7001, 0x7009});
  EXPECT_FAILS_AT(f.verify(), at + kRecordHeaderSize + 12 + 8, "names frame 0x7009");
}

TEST(VerifierRecords, RejectsFrameNamingUnknownUtf8) {
  File f;
  f.utf8(1, "m");
  size_t at = f.frame(0x7001, 1, 2, 0, 3);
  EXPECT_FAILS_AT(f.verify(), at, "STACK FRAME method signature 0x2 is not a UTF8 written earlier");
}

TEST(VerifierRecords, RejectsUnknownTraceSerialInLoadClass) {
  File f;
  f.utf8(1, "A");
  size_t at = f.load_class(100000, kObjectClass, 300005, 1);
  EXPECT_FAILS_AT(f.verify(), at, "LOAD CLASS names stack trace serial 300005");
}

// The JDK's dumper writes every LOAD CLASS before the STACK TRACE they name: a reader takes it, the
// strict checks of fasthprof's own files do not.
TEST(VerifierRecords, LoadClassMayNameTraceDefinedLaterUnlessStrict) {
  File f;
  f.utf8(1, "A");
  size_t at = f.load_class(100000, kObjectClass, 1, 1);
  f.trace(1, 0, {});
  VerifyResult lenient = f.verify(false, false);
  EXPECT_TRUE(lenient.ok) << lenient.error;
  EXPECT_FAILS_AT(f.verify(false, true), at, "LOAD CLASS names stack trace serial 1, which no earlier STACK TRACE");
}

TEST(VerifierRecords, RejectsTraceNamedEarlyAndNeverDefined) {
  File f;
  f.utf8(1, "A");
  size_t first = f.load_class(100000, kObjectClass, 7, 1);
  f.load_class(100001, kObjectClass + 8, 9, 1);
  f.trace(9, 0, {});
  EXPECT_FAILS_AT(f.verify(false, false), first, "LOAD CLASS names stack trace serial 7, which no STACK TRACE in the file defines");
}

TEST(VerifierRecords, RejectsLoadClassNamingUtf8WrittenLater) {
  File f;
  f.trace(kEmptyTrace, 0, {});
  size_t at = f.load_class(100000, kObjectClass, kEmptyTrace, 1);
  f.utf8(1, "A");
  EXPECT_FAILS_AT(f.verify(), at, "LOAD CLASS class name 0x1 is not a UTF8 written earlier");
}

// What a writer leaves when it repeats LOAD CLASS after cutting back failed reports.
TEST(VerifierRecords, RejectsAClassLoadedTwice) {
  File f;
  f.trace(kEmptyTrace, 0, {});
  f.utf8(1, "A");
  size_t first = f.load_class(100000, kObjectClass, kEmptyTrace, 1);
  size_t at = f.load_class(100000, kObjectClass, kEmptyTrace, 1);
  EXPECT_FAILS_AT(f.verify(), at,
                  "LOAD CLASS of class serial 100000, which the LOAD CLASS at byte " + std::to_string(first) +
                      " loaded already");
}

TEST(VerifierRecords, RejectsAClassObjectLoadedUnderTwoSerials) {
  File f;
  f.trace(kEmptyTrace, 0, {});
  f.utf8(1, "A");
  f.load_class(100000, kObjectClass, kEmptyTrace, 1);
  size_t at = f.load_class(100001, kObjectClass, kEmptyTrace, 1);
  EXPECT_FAILS_AT(f.verify(), at, "which the LOAD CLASS of class serial 100000");
  VerifyResult lenient = f.verify(false, false);  // JDK 17's dumper does this for every array class
  EXPECT_TRUE(lenient.ok) << lenient.error;
}

TEST(VerifierRecords, AcceptsAClassObjectIdLoadedAgainAfterItsUnload) {
  File f;
  f.trace(kEmptyTrace, 0, {});
  f.utf8(1, "A");
  f.load_class(100000, kObjectClass, kEmptyTrace, 1);
  f.record(RecordTag::kUnloadClass, f.body().u4(100000));
  f.load_class(100001, kObjectClass, kEmptyTrace, 1);
  VerifyResult result = f.verify();
  EXPECT_TRUE(result.ok) << result.error;
}

TEST(VerifierRecords, RejectsUnknownClassInAllocSites) {
  File f;
  f.prologue();
  size_t at = f.sites({{0, 100001, kMainTrace}, {0, 100077, kMainTrace}});
  EXPECT_FAILS_AT(f.verify(), at + kRecordHeaderSize + 34 + 25, "names class serial 100077");
}

TEST(VerifierRecords, RejectsAllocSitesCountBeyondItsLength) {
  File f;
  f.prologue();
  size_t at = f.sites({{0, 100001, kMainTrace}}, 1);
  EXPECT_FAILS_AT(f.verify(), at, "ALLOC SITES record has length 59, expected 84");
}

TEST(VerifierRecords, RejectsUnknownTraceInCpuSamples) {
  File f;
  f.prologue();
  size_t at = f.cpu_samples({kMainTrace, 300009});
  EXPECT_FAILS_AT(f.verify(), at + kRecordHeaderSize + 16, "CPU SAMPLES entry names stack trace serial 300009");
}

TEST(VerifierRecords, RejectsStartThreadWithUnknownName) {
  File f;
  f.trace(kEmptyTrace, 0, {});
  size_t at = f.start_thread(kMainThread, kThreadObject, kEmptyTrace, 0x77);
  EXPECT_FAILS_AT(f.verify(), at, "START THREAD thread name 0x77");
}

TEST(VerifierRecords, RejectsEndOfThreadNeverStarted) {
  File f;
  size_t at = f.record(RecordTag::kEndThread, f.body().u4(200009));
  EXPECT_FAILS_AT(f.verify(), at, "END THREAD names thread serial 200009");
}

TEST(VerifierSegments, RejectsSubRecordSpanningSegments) {
  File f;
  f.prologue();
  Segment s = f.segment_body();
  f.base_classes(s);
  size_t in = s.instance(kPointA, kPointClass, f.point_values(1, 0));
  s.data.resize(s.size() - 4);
  size_t seg = f.segment(s);
  Segment rest = f.segment_body();
  rest.u4(0);
  f.segment(rest);
  f.end();
  EXPECT_FAILS_AT(f.verify(), f.at(seg, in), "must not span segments");
}

TEST(VerifierSegments, RejectsUnknownSubTag) {
  File f;
  Segment s = f.segment_body();
  s.u1(0x99).u8(0);
  size_t seg = f.segment(s);
  f.end();
  EXPECT_FAILS_AT(f.verify(), f.at(seg, 0), "unknown heap dump sub-record tag 0x99");
}

TEST(VerifierSegments, RejectsEmptySegment) {
  File f;
  size_t seg = f.segment(f.segment_body());
  f.end();
  EXPECT_FAILS_AT(f.verify(), seg, "empty HEAP DUMP SEGMENT");
}

TEST(VerifierSegments, RejectsMissingEnd) {
  File f;
  f.prologue();
  Segment s = f.segment_body();
  f.base_classes(s);
  size_t seg = f.segment(s);
  EXPECT_FAILS_AT(f.verify(), f.size(), "began at byte " + std::to_string(seg) + " (no HEAP DUMP END)");
}

TEST(VerifierSegments, RejectsEndWithoutSegments) {
  File f;
  f.prologue();
  Segment s = f.segment_body();
  f.base_classes(s);
  s.instance(kPointA, kPointClass, f.point_values(1, 0));
  f.segment(s);
  f.end();
  size_t at = f.end();
  EXPECT_FAILS_AT(f.verify(), at, "HEAP DUMP END without a HEAP DUMP SEGMENT");
}

TEST(VerifierSegments, RejectsSegmentsInAVersion101File) {
  File f(8, kTextHeaderVersion);
  Segment s = f.segment_body();
  s.root(0xFF, 0);
  size_t seg = f.segment(s);
  EXPECT_FAILS_AT(f.verify(), seg, "HEAP DUMP SEGMENT in a JAVA PROFILE 1.0.1 file");
}

TEST(VerifierSegments, SegmentsAfterAnEndStartANewDump) {
  File f;
  f.prologue();
  Segment first = f.segment_body();
  f.base_classes(first);
  first.instance(kPointA, kPointClass, f.point_values(1, 0));
  f.segment(first);
  f.end();
  Segment second = f.segment_body();
  f.base_classes(second);
  second.instance(kPointA, kPointClass, f.point_values(1, 0));
  f.segment(second);
  f.end();
  VerifyResult r = f.verify();
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.dumps.size(), 2u);
  write_seed("two-dumps", f);

  // A second dump cannot refer to an object of the first one (the static label names kPointA).
  File g;
  g.prologue();
  Segment one = g.segment_body();
  g.base_classes(one);
  one.instance(kPointA, kPointClass, g.point_values(1, 0));
  g.segment(one);
  g.end();
  Segment two = g.segment_body();
  two.class_dump(kObjectClass, 0, {});
  size_t bad = two.class_dump(kPointClass, kObjectClass, {}, {{kNameLabel, kObj, kPointA}});
  size_t seg2 = g.segment(two);
  g.end();
  size_t value_at = bad + 1 + 7 * 8 + 8 + 2 + 2 + 8 + 1;
  EXPECT_FAILS_AT(g.verify(), g.at(seg2, value_at), "CLASS DUMP static field value 0x2001 is not an object");
}

// A one-segment dump with Object, Point and one Point, then what fill appends; extra is the offset
// fill returns, inside the segment body.
struct DumpCase {
  File file;
  size_t segment = 0;
  size_t extra = 0;
};

template <typename Fill>
DumpCase dump_case(Fill fill) {
  DumpCase c;
  c.file.prologue();
  Segment s = c.file.segment_body();
  c.file.base_classes(s);
  s.instance(kPointA, kPointClass, c.file.point_values(1, 0));
  c.extra = fill(c.file, s);
  c.segment = c.file.segment(s);
  c.file.end();
  return c;
}

TEST(VerifierDump, RejectsDanglingObjectReferenceInAField) {
  DumpCase c = dump_case([](File& f, Segment& s) {
    return s.instance(kPointC, kPointClass, f.point_values(1, 0x2999));
  });
  uint64_t value_at = c.file.at(c.segment, c.extra) + 1 + 8 + 4 + 8 + 4 + 4;
  EXPECT_FAILS_AT(c.file.verify(), value_at, "INSTANCE DUMP field value 0x2999 is not an object");
}

TEST(VerifierDump, RejectsDanglingRoot) {
  DumpCase c = dump_case([](File&, Segment& s) { return s.root(0x05, 0x1777); });
  EXPECT_FAILS_AT(c.file.verify(), c.file.at(c.segment, c.extra) + 1, "ROOT STICKY CLASS 0x1777");
}

TEST(VerifierDump, DoesNotResolveTheJniGlobalReferenceId) {
  DumpCase c = dump_case([](File&, Segment& s) {
    size_t at = s.root(0x01, kPointA);
    s.id(0x123456);
    return at;
  });
  VerifyResult r = c.file.verify();
  EXPECT_TRUE(r.ok) << r.error;
}

TEST(VerifierDump, RejectsDanglingObjectArrayElement) {
  DumpCase c = dump_case([](File&, Segment& s) {
    s.class_dump(kPointArrayClass, kObjectClass, {});
    return s.object_array(kArray, kPointArrayClass, {kPointA, 0x2888});
  });
  uint64_t element_at = c.file.at(c.segment, c.extra) + 1 + 8 + 4 + 4 + 8 + 8;
  EXPECT_FAILS_AT(c.file.verify(), element_at, "OBJECT ARRAY DUMP element 0x2888");
  // The JDK's dumper leaves out objects that arrays of the VM still reference: counted, not an error.
  VerifyResult lenient = c.file.verify(false, false);
  ASSERT_TRUE(lenient.ok) << lenient.error;
  EXPECT_EQ(1u, lenient.dumps.at(0).unresolved_references);
}

TEST(VerifierDump, RejectsInstanceBeforeItsClassWhenStrict) {
  DumpCase c = dump_case([](File& f, Segment& s) {
    size_t at = s.instance(kPoint3B, kPoint3Class, f.body().u8(1).append(f.point_values(1, 0)));
    s.class_dump(kPoint3Class, kPointClass, {{kNameZ, kLong, 0}});
    return at;
  });
  EXPECT_FAILS_AT(c.file.verify(false, true), c.file.at(c.segment, c.extra),
                  "INSTANCE DUMP's class 0x1002 is dumped later");
  VerifyResult lenient = c.file.verify(false, false);
  EXPECT_TRUE(lenient.ok) << lenient.error;
}

TEST(VerifierDump, RejectsInstanceOfClassNotInTheDump) {
  DumpCase c = dump_case([](File& f, Segment& s) { return s.instance(kPointC, kPoint3Class, f.body()); });
  EXPECT_FAILS_AT(c.file.verify(), c.file.at(c.segment, c.extra), "0x1002 has no CLASS DUMP in this dump");
}

TEST(VerifierDump, RejectsObjectArrayWhoseClassIsAnInstance) {
  DumpCase c = dump_case([](File&, Segment& s) { return s.object_array(kArray, kPointA, {}); });
  EXPECT_FAILS_AT(c.file.verify(), c.file.at(c.segment, c.extra), "class 0x2001 is not a CLASS DUMP");
}

TEST(VerifierDump, RejectsSubclassBeforeSuperclassWhenStrict) {
  File f;
  f.prologue();
  Segment s = f.segment_body();
  s.class_dump(kObjectClass, 0, {});
  size_t sub = s.class_dump(kPoint3Class, kPointClass, {{kNameZ, kLong, 0}});
  s.class_dump(kPointClass, kObjectClass, {{kNameX, kInt, 0}});
  s.instance(kPoint3B, kPoint3Class, f.body().u8(1).u4(1));
  size_t seg = f.segment(s);
  f.end();
  EXPECT_FAILS_AT(f.verify(false, true), f.at(seg, sub), "super class 0x1001 is dumped later");
  VerifyResult lenient = f.verify(false, false);  // the instance's layout comes from the whole chain
  EXPECT_TRUE(lenient.ok) << lenient.error;
}

TEST(VerifierDump, RejectsSuperClassCycle) {
  File f;
  f.prologue();
  Segment s = f.segment_body();
  s.class_dump(kPoint3Class, kPointClass, {});
  s.class_dump(kPointClass, kPoint3Class, {});
  f.segment(s);
  f.end();
  VerifyResult result = f.verify(false, false);
  EXPECT_FALSE(result.ok);
  EXPECT_NE(std::string::npos, result.error.find("is its own super class")) << result.error;
}

TEST(VerifierDump, RejectsWrongInstanceByteCount) {
  DumpCase c = dump_case([](File& f, Segment& s) {
    s.class_dump(kPoint3Class, kPointClass, {{kNameZ, kLong, 0}});
    return s.instance(kPoint3B, kPoint3Class, f.body().u4(1).append(f.point_values(1, 0)));
  });
  EXPECT_FAILS_AT(c.file.verify(), c.file.at(c.segment, c.extra), "has 16 bytes of field values, its class chain declares 20");
  write_seed("wrong-instance-size", c.file);
}

TEST(VerifierDump, RejectsDuplicateObjectId) {
  DumpCase c = dump_case([](File& f, Segment& s) { return s.instance(kPointA, kPointClass, f.point_values(1, 0)); });
  EXPECT_FAILS_AT(c.file.verify(), c.file.at(c.segment, c.extra), "object ID 0x2001 is already defined in this dump");
}

TEST(VerifierDump, RejectsClassDumpWithoutLoadClass) {
  DumpCase c = dump_case([](File&, Segment& s) { return s.class_dump(0x1050, kObjectClass, {}); });
  EXPECT_FAILS_AT(c.file.verify(), c.file.at(c.segment, c.extra), "CLASS DUMP 0x1050 has no LOAD CLASS before it");
}

TEST(VerifierDump, RejectsInvalidFieldType) {
  DumpCase c = dump_case([](File&, Segment& s) {
    return s.class_dump(kPoint3Class, kPointClass, {{kNameZ, 3, 0}});
  });
  uint64_t type_at = c.file.at(c.segment, c.extra) + 1 + 7 * 8 + 8 + 2 + 2 + 2 + 8;
  EXPECT_FAILS_AT(c.file.verify(), type_at, "instance field has invalid basic type 3");
}

TEST(VerifierDump, RejectsPrimitiveArrayOfObjects) {
  DumpCase c = dump_case([](File&, Segment& s) { return s.primitive_array(kInts, kObj, {}); });
  EXPECT_FAILS_AT(c.file.verify(), c.file.at(c.segment, c.extra), "PRIMITIVE ARRAY DUMP with element type 2");
}

TEST(VerifierDump, RejectsIllegalBooleanField) {
  DumpCase c = dump_case([](File&, Segment& s) {
    return s.class_dump(kPoint3Class, kPointClass, {}, {{kNameFlag, kBool, 2}});
  });
  uint64_t value_at = c.file.at(c.segment, c.extra) + 1 + 7 * 8 + 8 + 2 + 2 + 8 + 1;
  EXPECT_FAILS_AT(c.file.verify(), value_at, "CLASS DUMP static field has boolean value 2");
}

TEST(VerifierDump, RejectsUnknownTraceSerialOnAnInstance) {
  DumpCase c = dump_case([](File& f, Segment& s) {
    return s.instance(kPointC, kPointClass, f.point_values(1, 0), 300099);
  });
  EXPECT_FAILS_AT(c.file.verify(), c.file.at(c.segment, c.extra), "INSTANCE DUMP names stack trace serial 300099");
}

TEST(VerifierRoots, RejectsJavaFrameRootBeforeItsThreadRoot) {
  DumpCase c = dump_case([](File&, Segment& s) {
    size_t at = s.frame_root(0x03, kPointA, kMainThread, 0);
    s.thread_object(0, kMainThread, kMainTrace);
    return at;
  });
  EXPECT_FAILS_AT(c.file.verify(), c.file.at(c.segment, c.extra),
                  "ROOT JAVA FRAME names thread serial 200001, which has no ROOT THREAD OBJECT");
}

TEST(VerifierRoots, RejectsThreadBlockWithoutThreadRoot) {
  DumpCase c = dump_case([](File&, Segment& s) {
    size_t at = s.root(0x06, kPointA);
    s.u4(kMainThread);
    return at;
  });
  EXPECT_FAILS_AT(c.file.verify(), c.file.at(c.segment, c.extra), "ROOT THREAD BLOCK names thread serial 200001");
}

TEST(VerifierRoots, RejectsFrameNumberOutOfRange) {
  DumpCase c = dump_case([](File&, Segment& s) {
    s.thread_object(0, kMainThread, kMainTrace);
    s.frame_root(0x03, kPointA, kMainThread, 1);
    return s.frame_root(0x02, kPointA, kMainThread, 2);
  });
  EXPECT_FAILS_AT(c.file.verify(), c.file.at(c.segment, c.extra),
                  "ROOT JNI LOCAL frame number 2 is outside the 2 frames");
}

TEST(VerifierRoots, RejectsThreadRootWithUnknownTrace) {
  DumpCase c = dump_case([](File&, Segment& s) { return s.thread_object(kPointA, kMainThread, 300042); });
  EXPECT_FAILS_AT(c.file.verify(), c.file.at(c.segment, c.extra), "ROOT THREAD OBJECT names stack trace serial 300042");
}

TEST(VerifierRoots, ThreadRootsDoNotCarryOverToTheNextDump) {
  File f;
  f.prologue();
  Segment one = f.segment_body();
  one.thread_object(0, kMainThread, kMainTrace);
  f.segment(one);
  f.end();
  Segment two = f.segment_body();
  size_t at = two.frame_root(0x03, 0, kMainThread, 0);
  size_t seg = f.segment(two);
  f.end();
  EXPECT_FAILS_AT(f.verify(), f.at(seg, at), "no ROOT THREAD OBJECT earlier in this dump");
}

// ---- VM dumps: JDK dumps that fasthprof inserted (JDK addresses, serials from kFirstVmDumpSerial) ----

constexpr uint64_t kVmObject = 0x600000100, kVmPoint = 0x600000200, kVmA = 0x600001000, kVmB = 0x600001100;

// One VM dump: LOAD CLASS of Object and Point under JDK addresses with VM-dump serials from
// first_serial, then Point before Object (the JDK's order) and one Point naming an object the dump
// leaves out.
void vm_dump(File& f, uint32_t first_serial, uint64_t object = kVmObject, uint64_t point = kVmPoint) {
  f.load_class(first_serial, object, kEmptyTrace, kNameObject);
  f.load_class(first_serial + 1, point, kEmptyTrace, kNamePoint);
  Segment s = f.segment_body();
  s.class_dump(point, object, {{kNameX, kInt, 0}, {kNameNext, kObj, 0}});
  s.class_dump(object, 0, {});
  s.instance(kVmA, point, f.point_values(1, kVmB));
  f.segment(s);
  f.end();
}

TEST(VerifierVmDumps, ScopesClassIdsToTheirDump) {
  File f;
  f.prologue();
  vm_dump(f, kFirstVmDumpSerial);
  vm_dump(f, kFirstVmDumpSerial + 2);                              // the same mirrors again
  vm_dump(f, kFirstVmDumpSerial + 4, kVmPoint, kVmObject + 0x40);  // moved: Point where Object was
  VerifyResult r = f.verify(true);
  ASSERT_TRUE(r.ok) << r.error << " at " << r.error_offset;
  ASSERT_EQ(r.dumps.size(), 3u);
  for (const DumpSummary& dump : r.dumps) {
    EXPECT_EQ(dump.unresolved_references, 1u);  // the left-out object, counted
    ASSERT_EQ(dump.class_counts.size(), 1u);
    EXPECT_EQ(dump.class_counts[0].first, "Point");  // names resolve within the dump
  }
  write_seed("vm-dumps", f);
}

TEST(VerifierVmDumps, RejectsAVmClassLoadedTwiceInOneDump) {
  File f;
  f.prologue();
  f.load_class(kFirstVmDumpSerial, kVmObject, kEmptyTrace, kNameObject);
  size_t at = f.load_class(kFirstVmDumpSerial + 1, kVmObject, kEmptyTrace, kNameObject);
  EXPECT_FAILS_AT(f.verify(), at, "LOAD CLASS of class object ID 0x600000100, which the LOAD CLASS of class serial 1073741824");
}

TEST(VerifierVmDumps, KeepsSerialsAndFasthprofIdsGlobal) {
  // A VM-dump serial is never defined again, not even after its dump.
  File f;
  f.prologue();
  vm_dump(f, kFirstVmDumpSerial);
  size_t at = f.load_class(kFirstVmDumpSerial, kVmObject, kEmptyTrace, kNameObject);
  EXPECT_FAILS_AT(f.verify(), at, "LOAD CLASS of class serial 1073741824, which the LOAD CLASS at byte");
  // An ID of fasthprof's (top byte not 0) is one class for the whole file, whatever its serial.
  File g;
  g.prologue();
  constexpr uint64_t kAgentClass = 0x0301000000000009;
  g.load_class(kFirstVmDumpSerial, kAgentClass, kEmptyTrace, kNameObject);
  Segment s = g.segment_body();
  s.class_dump(kAgentClass, 0, {});
  g.segment(s);
  g.end();
  size_t again = g.load_class(kFirstVmDumpSerial + 1, kAgentClass, kEmptyTrace, kNameObject);
  EXPECT_FAILS_AT(g.verify(), again, "LOAD CLASS of class object ID 0x301000000000009");
  // With fasthprof's serials, a JDK-looking ID is not a VM dump's: loaded once for the file.
  File h;
  h.prologue();
  h.load_class(100010, kVmObject, kEmptyTrace, kNameObject);
  Segment t = h.segment_body();
  t.class_dump(kVmObject, 0, {});
  h.segment(t);
  h.end();
  size_t reload = h.load_class(100011, kVmObject, kEmptyTrace, kNameObject);
  EXPECT_FAILS_AT(h.verify(), reload, "LOAD CLASS of class object ID 0x600000100");
}

TEST(VerifierVmDumps, HoldsOtherDumpsToTheStrictRules) {
  // The same dump as vm_dump() with fasthprof's serials: class order and the missing object fail.
  File f;
  f.prologue();
  f.load_class(100010, kVmObject, kEmptyTrace, kNameObject);
  f.load_class(100011, kVmPoint, kEmptyTrace, kNamePoint);
  Segment s = f.segment_body();
  size_t sub = s.class_dump(kVmPoint, kVmObject, {{kNameX, kInt, 0}, {kNameNext, kObj, 0}});
  s.class_dump(kVmObject, 0, {});
  size_t seg = f.segment(s);
  f.end();
  EXPECT_FAILS_AT(f.verify(), f.at(seg, sub), "super class 0x600000100 is dumped later");
  // A VM dump still needs its classes loaded, its names written and its traces defined.
  File g;
  g.prologue();
  g.load_class(kFirstVmDumpSerial, kVmObject, kEmptyTrace, kNameObject);
  Segment t = g.segment_body();
  t.class_dump(kVmObject, 0, {});
  size_t unloaded = t.class_dump(kVmPoint, kVmObject, {});
  size_t seg2 = g.segment(t);
  g.end();
  EXPECT_FAILS_AT(g.verify(), g.at(seg2, unloaded), "CLASS DUMP 0x600000200 has no LOAD CLASS before it");
  File h;
  h.prologue();
  size_t trace = h.load_class(kFirstVmDumpSerial, kVmObject, 0x40000005, kNameObject);
  EXPECT_FAILS_AT(h.verify(), trace, "LOAD CLASS names stack trace serial 1073741829, which no earlier STACK TRACE");
}

}  // namespace
}  // namespace fasthprof
