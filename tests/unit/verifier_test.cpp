// The verifier against hand-built files: one good file with every record kind, then one broken file
// per rule, each failing at the expected byte with the expected message. The bytes come from the
// small builder below, not from the runtime's writers, so that the two stay independent.
#include "hprof_file_builder.h"

namespace fasthprof {
namespace {

using namespace verifier_test;

class GoodFile : public ::testing::TestWithParam<uint32_t> {};

TEST_P(GoodFile, PassesWithTheRightCounts) {
  File f = good_file(GetParam());
  VerifyResult r = f.verify(true);
  ASSERT_TRUE(r.ok) << r.error << " at byte " << r.error_offset;
  EXPECT_EQ(r.version, "JAVA PROFILE 1.0.2");
  EXPECT_EQ(r.id_size, GetParam());
  EXPECT_EQ(r.timestamp_millis, 1700000000123ULL);
  const std::pair<RecordTag, uint64_t> record_counts[] = {
      {RecordTag::kUtf8, 15},           {RecordTag::kLoadClass, 4},   {RecordTag::kStackFrame, 2},
      {RecordTag::kStackTrace, 2},      {RecordTag::kStartThread, 1}, {RecordTag::kHeapDumpSegment, 2},
      {RecordTag::kHeapDumpEnd, 1},     {RecordTag::kAllocSites, 1},  {RecordTag::kCpuSamples, 1},
      {RecordTag::kHeapSummary, 1},     {RecordTag::kEndThread, 1},   {RecordTag::kUnloadClass, 1},
      {RecordTag::kControlSettings, 1}};
  for (auto [tag, expected] : record_counts) {
    EXPECT_EQ(count(r, tag), expected) << "records of tag 0x" << std::hex << static_cast<int>(tag);
  }
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
  f.record(RecordTag::kHeapDump, f.point_segment_body());
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
  size_t in = 0;
  Segment s = f.point_segment_body(&in);
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
  f.point_dump();
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
  f.point_dump();
  f.point_dump();
  VerifyResult r = f.verify();
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.dumps.size(), 2u);
  write_seed("two-dumps", f);

  // A second dump cannot refer to an object of the first one (the static label names kPointA).
  File g;
  g.prologue();
  g.point_dump();
  Segment two = g.segment_body();
  two.class_dump(kObjectClass, 0, {});
  size_t bad = two.class_dump(kPointClass, kObjectClass, {}, {{kNameLabel, kObj, kPointA}});
  size_t seg2 = g.segment(two);
  g.end();
  size_t value_at = bad + 1 + 7 * 8 + 8 + 2 + 2 + 8 + 1;
  EXPECT_FAILS_AT(g.verify(), g.at(seg2, value_at), "CLASS DUMP static field value 0x2001 is not an object");
}

}  // namespace
}  // namespace fasthprof
