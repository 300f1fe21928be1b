// HeapDumpWriter: every sub-record against hand-written bytes, and the segment rules.
#include "heap_dump/heap_dump_writer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "hand_bytes.h"
#include "memory_stream.h"
#include "records/record_writer.h"
#include "sink/output_stream.h"

namespace fasthprof {
namespace {

// Segment header with time field 0x00000007 and the given body length.
Bytes segment(uint32_t length) {
  return hex({0x1C, 0, 0, 0, 7, static_cast<int>(length >> 24), static_cast<int>((length >> 16) & 0xFF),
              static_cast<int>((length >> 8) & 0xFF), static_cast<int>(length & 0xFF)});
}
const Bytes kDumpEnd = {0x2C, 0, 0, 0, 7, 0, 0, 0, 0};

struct Fixture {
  explicit Fixture(size_t segment_size = HeapDumpWriterOptions::kDefaultSegmentSize,
                   uint64_t max_sub_record_size = kMaxU4)
      : dump(records, {.segment_size = segment_size,
                       .max_sub_record_size = max_sub_record_size,
                       .warn = [this](std::string_view text) { warnings.emplace_back(text); }}) {}
  Bytes finish() {
    dump.finish();
    records.flush();
    return stream.bytes;
  }
  MemoryStream stream;
  RecordWriter records{stream, 0, [] { return uint64_t{7}; }};
  std::vector<std::string> warnings;
  HeapDumpWriter dump;
};

// One record of the output: tag and body.
struct Record {
  uint8_t tag;
  Bytes body;
};

std::vector<Record> split_records(const Bytes& bytes) {
  std::vector<Record> records;
  size_t at = 0;
  while (at + 9 <= bytes.size()) {
    uint32_t length = (uint32_t{bytes[at + 5]} << 24) | (uint32_t{bytes[at + 6]} << 16) |
                      (uint32_t{bytes[at + 7]} << 8) | bytes[at + 8];
    records.push_back({bytes[at], Bytes(bytes.begin() + at + 9, bytes.begin() + at + 9 + length)});
    at += 9 + length;
  }
  EXPECT_EQ(at, bytes.size());
  return records;
}

TEST(HeapDumpWriter, Roots) {
  Fixture f;
  f.dump.root_unknown(0x0102030405060708ull);
  f.dump.root_jni_global(0x11, 0x22);
  f.dump.root_jni_local(0x12, 200001, 3);
  f.dump.root_java_frame(0x13, 200002, -1);
  f.dump.root_native_stack(0x14, 200003);
  f.dump.root_sticky_class(0x15);
  f.dump.root_thread_block(0x16, 200004);
  f.dump.root_monitor_used(0x17);
  f.dump.root_thread_object(0x18, 200005, 300006);
  EXPECT_EQ(f.dump.sub_record_count(), 9u);
  Bytes body = hex({
      0xFF, 1, 2, 3, 4, 5, 6, 7, 8,                                             //
      0x01, 0, 0, 0, 0, 0, 0, 0, 0x11, 0, 0, 0, 0, 0, 0, 0, 0x22,               //
      0x02, 0, 0, 0, 0, 0, 0, 0, 0x12, 0x00, 0x03, 0x0D, 0x41, 0, 0, 0, 3,      //
      0x03, 0, 0, 0, 0, 0, 0, 0, 0x13, 0x00, 0x03, 0x0D, 0x42, 0xFF, 0xFF, 0xFF, 0xFF,
      0x04, 0, 0, 0, 0, 0, 0, 0, 0x14, 0x00, 0x03, 0x0D, 0x43,                  //
      0x05, 0, 0, 0, 0, 0, 0, 0, 0x15,                                          //
      0x06, 0, 0, 0, 0, 0, 0, 0, 0x16, 0x00, 0x03, 0x0D, 0x44,                  //
      0x07, 0, 0, 0, 0, 0, 0, 0, 0x17,                                          //
      0x08, 0, 0, 0, 0, 0, 0, 0, 0x18, 0x00, 0x03, 0x0D, 0x45, 0x00, 0x04, 0x93, 0xE6});
  ASSERT_EQ(body.size(), 9u + 17 + 17 + 17 + 13 + 9 + 13 + 9 + 17);
  EXPECT_EQ(f.finish(), concat({segment(121), body, kDumpEnd}));
}

TEST(HeapDumpWriter, ClassDump) {
  Fixture f;
  const ConstantPoolEntry constants[] = {{.index = 444, .type = BasicType::kObject, .value = 0x31}};
  const StaticFieldValue statics[] = {
      {.name_id = 0x41, .type = BasicType::kObject, .value = 0x51},
      {.name_id = 0x42, .type = BasicType::kBoolean, .value = 1},
      {.name_id = 0x43, .type = BasicType::kChar, .value = 0x263A},
      {.name_id = 0x44, .type = BasicType::kFloat, .value = 0x3FC00000},  // 1.5f
      {.name_id = 0x45, .type = BasicType::kDouble, .value = 0x3FF8000000000000ull},
      {.name_id = 0x46, .type = BasicType::kInt, .value = 0xFFFFFFFE},
  };
  const InstanceFieldDecl fields[] = {{.name_id = 0x61, .type = BasicType::kLong},
                                      {.name_id = 0x62, .type = BasicType::kObject}};
  f.dump.class_dump({.class_id = 0x20,
                     .trace_serial = 300000,
                     .super_id = 0x21,
                     .loader_id = 0x22,
                     .signers_id = 0x23,
                     .protection_domain_id = 0x24,
                     .instance_size = 16,
                     .constant_pool = constants,
                     .static_fields = statics,
                     .instance_fields = fields});
  Bytes body = hex({
      0x20, 0, 0, 0, 0, 0, 0, 0, 0x20, 0x00, 0x04, 0x93, 0xE0,  // class, trace
      0, 0, 0, 0, 0, 0, 0, 0x21, 0, 0, 0, 0, 0, 0, 0, 0x22,     // super, loader
      0, 0, 0, 0, 0, 0, 0, 0x23, 0, 0, 0, 0, 0, 0, 0, 0x24,     // signers, domain
      0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,           // reserved
      0, 0, 0, 16,                                              // instance size
      0, 1, 0x01, 0xBC, 0x02, 0, 0, 0, 0, 0, 0, 0, 0x31,        // constant pool
      0, 6,                                                     // statics
      0, 0, 0, 0, 0, 0, 0, 0x41, 0x02, 0, 0, 0, 0, 0, 0, 0, 0x51,
      0, 0, 0, 0, 0, 0, 0, 0x42, 0x04, 0x01,
      0, 0, 0, 0, 0, 0, 0, 0x43, 0x05, 0x26, 0x3A,
      0, 0, 0, 0, 0, 0, 0, 0x44, 0x06, 0x3F, 0xC0, 0x00, 0x00,
      0, 0, 0, 0, 0, 0, 0, 0x45, 0x07, 0x3F, 0xF8, 0, 0, 0, 0, 0, 0,
      0, 0, 0, 0, 0, 0, 0, 0x46, 0x0A, 0xFF, 0xFF, 0xFF, 0xFE,
      0, 2,                                                     // instance fields
      0, 0, 0, 0, 0, 0, 0, 0x61, 0x0B, 0, 0, 0, 0, 0, 0, 0, 0x62, 0x02});
  EXPECT_EQ(f.finish(), concat({segment(static_cast<uint32_t>(body.size())), body, kDumpEnd}));
}

TEST(HeapDumpWriter, ClassDumpWithoutMembers) {
  Fixture f;
  f.dump.class_dump({.class_id = 1, .trace_serial = 2});
  Bytes body = hex({0x20, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2});
  body.resize(body.size() + 6 * 8 + 4 + 2 + 2 + 2, 0);
  ASSERT_EQ(body.size(), kClassDumpBaseSize);
  EXPECT_EQ(f.finish(), concat({segment(static_cast<uint32_t>(kClassDumpBaseSize)), body, kDumpEnd}));
}

TEST(HeapDumpWriter, InstanceDumpFromBytesAndInPlace) {
  Fixture f;
  const uint8_t values[] = {0xCA, 0xFE, 0xBA, 0xBE};
  f.dump.instance_dump(0x70, 300001, 0x20, values);
  EncodeCursor fields = f.dump.begin_instance(0x71, 300002, 0x21, 8 + 4 + 2 + 1);
  fields.id(0x99);
  fields.u4(0xFFFFFFFF);
  fields.u2(0x0102);
  fields.u1(1);
  f.dump.end_instance(fields);
  f.dump.instance_dump(0x72, 300003, 0x22, {});
  Bytes body = hex({
      0x21, 0, 0, 0, 0, 0, 0, 0, 0x70, 0x00, 0x04, 0x93, 0xE1, 0, 0, 0, 0, 0, 0, 0, 0x20,
      0, 0, 0, 4, 0xCA, 0xFE, 0xBA, 0xBE,  //
      0x21, 0, 0, 0, 0, 0, 0, 0, 0x71, 0x00, 0x04, 0x93, 0xE2, 0, 0, 0, 0, 0, 0, 0, 0x21,
      0, 0, 0, 15, 0, 0, 0, 0, 0, 0, 0, 0x99, 0xFF, 0xFF, 0xFF, 0xFF, 0x01, 0x02, 0x01,  //
      0x21, 0, 0, 0, 0, 0, 0, 0, 0x72, 0x00, 0x04, 0x93, 0xE3, 0, 0, 0, 0, 0, 0, 0, 0x22,
      0, 0, 0, 0});
  EXPECT_EQ(f.finish(), concat({segment(static_cast<uint32_t>(body.size())), body, kDumpEnd}));
}

TEST(HeapDumpWriter, ObjectArrayKeepsNulls) {
  Fixture f;
  const uint64_t elements[] = {0, 0x0A0B0C0D0E0F1011ull, 0};
  f.dump.object_array_dump(0x80, 300000, 0x81, elements);
  f.dump.object_array_dump(0x82, 300000, 0x81, {});
  Bytes body = hex({
      0x22, 0, 0, 0, 0, 0, 0, 0, 0x80, 0x00, 0x04, 0x93, 0xE0, 0, 0, 0, 3,
      0, 0, 0, 0, 0, 0, 0, 0x81,  //
      0, 0, 0, 0, 0, 0, 0, 0, 0x0A, 0x0B, 0x0C, 0x0D, 0x0E, 0x0F, 0x10, 0x11,
      0, 0, 0, 0, 0, 0, 0, 0,  //
      0x22, 0, 0, 0, 0, 0, 0, 0, 0x82, 0x00, 0x04, 0x93, 0xE0, 0, 0, 0, 0,
      0, 0, 0, 0, 0, 0, 0, 0x81});
  EXPECT_EQ(f.finish(), concat({segment(static_cast<uint32_t>(body.size())), body, kDumpEnd}));
}

TEST(HeapDumpWriter, PrimitiveArraysFromHostOrder) {
  Fixture f;
  const uint16_t chars[] = {'h', 0x263A};
  const int32_t ints[] = {1, -2};
  const int64_t longs[] = {0x0102030405060708};
  const double doubles[] = {1.5};
  const uint8_t booleans[] = {1, 0, 1};
  f.dump.primitive_array_dump(0x90, 1, BasicType::kChar, chars, 2);
  f.dump.primitive_array_dump(0x91, 1, BasicType::kInt, ints, 2);
  f.dump.primitive_array_dump(0x92, 1, BasicType::kLong, longs, 1);
  f.dump.primitive_array_dump(0x93, 1, BasicType::kDouble, doubles, 1);
  f.dump.primitive_array_dump(0x94, 1, BasicType::kBoolean, booleans, 3);
  f.dump.primitive_array_dump(0x95, 1, BasicType::kByte, nullptr, 0);
  Bytes body = hex({
      0x23, 0, 0, 0, 0, 0, 0, 0, 0x90, 0, 0, 0, 1, 0, 0, 0, 2, 0x05, 0x00, 0x68, 0x26, 0x3A,
      0x23, 0, 0, 0, 0, 0, 0, 0, 0x91, 0, 0, 0, 1, 0, 0, 0, 2, 0x0A, 0, 0, 0, 1, 0xFF, 0xFF,
      0xFF, 0xFE,  //
      0x23, 0, 0, 0, 0, 0, 0, 0, 0x92, 0, 0, 0, 1, 0, 0, 0, 1, 0x0B, 1, 2, 3, 4, 5, 6, 7, 8,
      0x23, 0, 0, 0, 0, 0, 0, 0, 0x93, 0, 0, 0, 1, 0, 0, 0, 1, 0x07, 0x3F, 0xF8, 0, 0, 0, 0, 0,
      0,  //
      0x23, 0, 0, 0, 0, 0, 0, 0, 0x94, 0, 0, 0, 1, 0, 0, 0, 3, 0x04, 1, 0, 1,  //
      0x23, 0, 0, 0, 0, 0, 0, 0, 0x95, 0, 0, 0, 1, 0, 0, 0, 0, 0x08});
  EXPECT_EQ(f.finish(), concat({segment(static_cast<uint32_t>(body.size())), body, kDumpEnd}));
}

TEST(HeapDumpWriter, PrimitiveArrayAlreadyBigEndian) {
  Fixture f;
  const uint8_t shorts[] = {0x12, 0x34, 0x56, 0x78};
  f.dump.primitive_array_dump_big_endian(0xA0, 2, BasicType::kShort, shorts, 2);
  Bytes body = hex({0x23, 0, 0, 0, 0, 0, 0, 0, 0xA0, 0, 0, 0, 2, 0, 0, 0, 2, 0x09, 0x12, 0x34,
                    0x56, 0x78});
  EXPECT_EQ(f.finish(), concat({segment(22), body, kDumpEnd}));
}

TEST(HeapDumpWriter, EmptyDumpIsOnlyHeapDumpEnd) {
  Fixture f;
  EXPECT_EQ(f.finish(), kDumpEnd);
}

TEST(HeapDumpWriter, SegmentFilledExactlyIsNotFollowedByAnEmptyOne) {
  Fixture f(18);
  f.dump.root_unknown(1);
  f.dump.root_unknown(2);
  EXPECT_EQ(f.dump.segment_count(), 0u);  // full, but sent only when needed
  Bytes one = hex({0xFF, 0, 0, 0, 0, 0, 0, 0, 1, 0xFF, 0, 0, 0, 0, 0, 0, 0, 2});
  EXPECT_EQ(f.finish(), concat({segment(18), one, kDumpEnd}));
}

TEST(HeapDumpWriter, RecordThatWouldOverflowStartsTheNextSegment) {
  Fixture f(20);
  f.dump.root_unknown(1);
  f.dump.root_unknown(2);
  f.dump.root_unknown(3);
  EXPECT_EQ(f.dump.segment_count(), 1u);
  EXPECT_EQ(f.finish(),
            concat({segment(18), hex({0xFF, 0, 0, 0, 0, 0, 0, 0, 1, 0xFF, 0, 0, 0, 0, 0, 0, 0, 2}),
                    segment(9), hex({0xFF, 0, 0, 0, 0, 0, 0, 0, 3}), kDumpEnd}));
}

TEST(HeapDumpWriter, OversizeRecordGetsItsOwnExactSegment) {
  Fixture f(16);
  f.dump.root_sticky_class(1);
  f.dump.class_dump({.class_id = 2});  // 62 bytes, bigger than a segment
  f.dump.root_sticky_class(3);
  auto records = split_records(f.finish());
  ASSERT_EQ(records.size(), 4u);
  EXPECT_EQ(records[0].body, hex({0x05, 0, 0, 0, 0, 0, 0, 0, 1}));
  EXPECT_EQ(records[1].tag, 0x1C);
  EXPECT_EQ(records[1].body.size(), kClassDumpBaseSize);
  EXPECT_EQ(records[1].body[0], 0x20);
  EXPECT_EQ(records[2].body, hex({0x05, 0, 0, 0, 0, 0, 0, 0, 3}));
  EXPECT_EQ(records[3].tag, 0x2C);
}

TEST(HeapDumpWriter, OversizeArraysStreamIntoTheirOwnSegment) {
  Fixture f(32);
  f.dump.root_unknown(9);
  const int32_t ints[] = {1, 2, 3, 4, 5};  // 18 + 20 = 38 bytes
  f.dump.primitive_array_dump(0xB0, 3, BasicType::kInt, ints, 5);
  const uint64_t ids[] = {0x10, 0x20};  // 25 + 16 = 41 bytes
  f.dump.object_array_dump(0xB1, 3, 0xB2, ids);
  EXPECT_EQ(f.dump.sub_record_count(), 3u);
  EXPECT_EQ(f.finish(),
            concat({segment(9), hex({0xFF, 0, 0, 0, 0, 0, 0, 0, 9}), segment(38),
                    hex({0x23, 0, 0, 0, 0, 0, 0, 0, 0xB0, 0, 0, 0, 3, 0, 0, 0, 5, 0x0A, 0, 0, 0, 1,
                         0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, 5}),
                    segment(41),
                    hex({0x22, 0, 0, 0, 0, 0, 0, 0, 0xB1, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0,
                         0, 0xB2, 0, 0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0, 0, 0, 0, 0, 0x20}),
                    kDumpEnd}));
}

TEST(HeapDumpWriter, LargeStreamedArrayMatchesBufferedEncoding) {
  std::vector<uint16_t> chars(300000);
  for (size_t i = 0; i < chars.size(); ++i) chars[i] = static_cast<uint16_t>(i * 7);
  Fixture small(1024);
  small.dump.primitive_array_dump(1, 2, BasicType::kChar, chars.data(), chars.size());
  Fixture large(1 << 20);
  large.dump.primitive_array_dump(1, 2, BasicType::kChar, chars.data(), chars.size());
  EXPECT_EQ(small.finish(), large.finish());
  Bytes out = large.stream.bytes;
  ASSERT_EQ(out.size(), 9u + 18 + 600000 + 9);
  EXPECT_EQ(out[9 + 18 + 2], 0x00);  // chars[1] = 7
  EXPECT_EQ(out[9 + 18 + 3], 0x07);
}

TEST(HeapDumpWriter, ManySmallRecordsNeverSplit) {
  Fixture f(100);
  for (uint64_t i = 0; i < 1000; ++i) {
    if (i % 3 == 0) {
      f.dump.root_unknown(i);  // 9 bytes
    } else {
      f.dump.root_thread_object(i, 1, 2);  // 17 bytes
    }
  }
  auto records = split_records(f.finish());
  ASSERT_GE(records.size(), 2u);
  EXPECT_EQ(records.back().tag, 0x2C);
  uint64_t next = 0;
  for (size_t r = 0; r + 1 < records.size(); ++r) {
    const Bytes& body = records[r].body;
    EXPECT_EQ(records[r].tag, 0x1C);
    EXPECT_GT(body.size(), 0u);
    EXPECT_LE(body.size(), 100u);
    size_t at = 0;
    while (at < body.size()) {
      uint64_t id = 0;
      for (int k = 1; k <= 8; ++k) id = (id << 8) | body[at + k];
      EXPECT_EQ(id, next++);
      at += body[at] == 0xFF ? 9 : 17;
    }
    EXPECT_EQ(at, body.size());
    // Each segment was closed because the next record did not fit.
    if (r + 2 < records.size()) {
      size_t next_size = records[r + 1].body[0] == 0xFF ? 9 : 17;
      EXPECT_GT(body.size() + next_size, 100u);
    }
  }
  EXPECT_EQ(next, 1000u);
}

TEST(HeapDumpWriter, ReusableForTheNextDump) {
  Fixture f;
  f.dump.root_unknown(1);
  f.dump.finish();
  EXPECT_EQ(f.dump.sub_record_count(), 0u);
  f.dump.root_unknown(2);
  EXPECT_EQ(f.finish(), concat({segment(9), hex({0xFF, 0, 0, 0, 0, 0, 0, 0, 1}), kDumpEnd,
                                segment(9), hex({0xFF, 0, 0, 0, 0, 0, 0, 0, 2}), kDumpEnd}));
}

TEST(HeapDumpWriter, RecordsWrittenBeforeASegmentPrecedeIt) {
  Fixture f(9);
  f.records.write_end_thread(1);
  f.dump.root_unknown(1);
  f.records.write_end_thread(2);  // buffered while the segment is still pending
  f.dump.root_unknown(2);         // sends the first segment: the END THREAD 2 goes before it
  Bytes end1 = hex({0x0B, 0, 0, 0, 7, 0, 0, 0, 4, 0, 0, 0, 1});
  Bytes end2 = hex({0x0B, 0, 0, 0, 7, 0, 0, 0, 4, 0, 0, 0, 2});
  EXPECT_EQ(f.finish(), concat({end1, end2, segment(9), hex({0xFF, 0, 0, 0, 0, 0, 0, 0, 1}),
                                segment(9), hex({0xFF, 0, 0, 0, 0, 0, 0, 0, 2}), kDumpEnd}));
}

TEST(HeapDumpWriter, TruncatesArraysTooLargeForOneRecord) {
  Fixture f(1 << 20, 18 + 4 * 10);  // room for 10 ints, or 4 IDs
  const int32_t ints[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  f.dump.primitive_array_dump(0xC0, 1, BasicType::kInt, ints, 12);
  const uint64_t ids[5] = {1, 2, 3, 4, 5};
  f.dump.object_array_dump(0xC1, 1, 0xC2, ids);
  ASSERT_EQ(f.warnings.size(), 2u);
  EXPECT_NE(f.warnings[0].find("c0 has 12 elements"), std::string::npos) << f.warnings[0];
  EXPECT_NE(f.warnings[0].find("first 10"), std::string::npos) << f.warnings[0];
  EXPECT_NE(f.warnings[1].find("first 4"), std::string::npos) << f.warnings[1];
  auto records = split_records(f.finish());
  ASSERT_EQ(records.size(), 2u);
  const Bytes& body = records[0].body;
  ASSERT_EQ(body.size(), 58u + 25 + 32);
  EXPECT_EQ(Bytes(body.begin() + 13, body.begin() + 17), hex({0, 0, 0, 10}));
  EXPECT_EQ(Bytes(body.begin() + 54, body.begin() + 58), hex({0, 0, 0, 9}));
  EXPECT_EQ(Bytes(body.begin() + 58 + 13, body.begin() + 58 + 17), hex({0, 0, 0, 4}));
}

TEST(HeapDumpWriter, TruncatesStreamedArrays) {
  Fixture f(16, 18 + 8 * 3);
  const int64_t longs[5] = {1, 2, 3, 4, 5};
  f.dump.primitive_array_dump(0xD0, 1, BasicType::kLong, longs, 5);
  EXPECT_EQ(f.warnings.size(), 1u);
  EXPECT_EQ(f.finish(), concat({segment(42),
                                hex({0x23, 0, 0, 0, 0, 0, 0, 0, 0xD0, 0, 0, 0, 1, 0, 0, 0, 3, 0x0B,
                                     0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0,
                                     0, 0, 3}),
                                kDumpEnd}));
}

// Writes a sparse array element by element: ids[i] != 0 are the non-null elements.
void stream_array(HeapDumpWriter& dump, uint64_t array_id, const std::vector<uint64_t>& ids,
                  uint64_t length) {
  dump.begin_object_array(array_id, 300000, 0x81, length);
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] != 0) {
      EXPECT_TRUE(dump.object_array_element(i, ids[i])) << i;
    }
  }
  dump.end_object_array();
}

TEST(HeapDumpWriter, StreamedObjectArrayFillsGapsAndTrailingNulls) {
  Fixture f;
  f.dump.begin_object_array(0x80, 300000, 0x81, 6);
  EXPECT_TRUE(f.dump.object_array_element(1, 0x1111));
  EXPECT_TRUE(f.dump.object_array_element(3, 0x3333));
  f.dump.end_object_array();
  f.dump.begin_object_array(0x82, 300000, 0x81, 0);  // empty
  f.dump.begin_object_array(0x83, 300000, 0x81, 2);  // all null, ended by the next sub-record
  f.dump.root_unknown(9);
  EXPECT_EQ(f.dump.sub_record_count(), 4u);
  Bytes body = concat({hex({0x22, 0, 0, 0, 0, 0, 0, 0, 0x80, 0x00, 0x04, 0x93, 0xE0, 0, 0, 0, 6,
                            0, 0, 0, 0, 0, 0, 0, 0x81}),
                       Bytes(8, 0), hex({0, 0, 0, 0, 0, 0, 0x11, 0x11}), Bytes(8, 0),
                       hex({0, 0, 0, 0, 0, 0, 0x33, 0x33}), Bytes(16, 0),
                       hex({0x22, 0, 0, 0, 0, 0, 0, 0, 0x82, 0x00, 0x04, 0x93, 0xE0, 0, 0, 0, 0,
                            0, 0, 0, 0, 0, 0, 0, 0x81}),
                       hex({0x22, 0, 0, 0, 0, 0, 0, 0, 0x83, 0x00, 0x04, 0x93, 0xE0, 0, 0, 0, 2,
                            0, 0, 0, 0, 0, 0, 0, 0x81}),
                       Bytes(16, 0), hex({0xFF, 0, 0, 0, 0, 0, 0, 0, 9})});
  EXPECT_EQ(f.finish(), concat({segment(static_cast<uint32_t>(body.size())), body, kDumpEnd}));
}

// The streamed encoding equals the whole-array encoding at every segment size: arrays smaller
// than a segment, just larger, and many times larger (several 256 KiB chunks, long null runs).
TEST(HeapDumpWriter, StreamedObjectArraysMatchWholeArraysAtEverySegmentSize) {
  std::vector<std::vector<uint64_t>> arrays;
  arrays.push_back({0, 5, 0, 7});
  arrays.push_back(std::vector<uint64_t>(40, 0));
  std::vector<uint64_t> sparse(200000, 0);  // 1.6 MB: several chunks
  for (size_t i = 3; i < sparse.size(); i += 7919) sparse[i] = 0x2000000000000000ull + i;
  sparse[sparse.size() - 2] = 0x42;
  arrays.push_back(sparse);
  std::vector<uint64_t> dense(70000);
  for (size_t i = 0; i < dense.size(); ++i) dense[i] = 0x2000000000000000ull + i * 13;
  arrays.push_back(dense);
  for (size_t segment_size : {size_t{64}, size_t{1000}, size_t{70000 * 8}, size_t{1} << 20,
                              size_t{4} << 20}) {
    Fixture whole(segment_size);
    Fixture streamed(segment_size);
    for (size_t a = 0; a < arrays.size(); ++a) {
      whole.dump.root_unknown(a);
      whole.dump.object_array_dump(0x90 + a, 300000, 0x81, arrays[a]);
      streamed.dump.root_unknown(a);
      stream_array(streamed.dump, 0x90 + a, arrays[a], arrays[a].size());
    }
    EXPECT_EQ(whole.dump.sub_record_count(), streamed.dump.sub_record_count());
    Bytes expected = whole.finish();
    Bytes got = streamed.finish();
    ASSERT_EQ(expected.size(), got.size()) << segment_size;
    EXPECT_TRUE(expected == got) << "segment size " << segment_size;
    // Every segment's length is exact, and no segment but an array's own passes the size.
    for (const Record& record : split_records(got)) {
      if (record.tag == 0x1C && record.body.size() > segment_size) {
        EXPECT_EQ(record.body[0], 0x22);
      }
    }
  }
}

TEST(HeapDumpWriter, StreamedArrayLargerThanASegmentBuffersOnlyAChunk) {
  Fixture f(1 << 20);
  const uint64_t length = 1'000'000;  // 8 MB of elements, most of them null
  f.dump.begin_object_array(0xA0, 1, 0x81, length);
  size_t most = f.stream.bytes.size();
  for (uint64_t i = 0; i < length; i += 1000) {
    ASSERT_TRUE(f.dump.object_array_element(i, i + 1));
    most = std::max(most, f.stream.bytes.size());
  }
  // The elements went out while they came: the stream grew long before the array ended.
  EXPECT_GT(most, 7'000'000u);
  f.dump.end_object_array();
  auto records = split_records(f.finish());
  ASSERT_EQ(records.size(), 2u);
  const Bytes& body = records[0].body;
  ASSERT_EQ(body.size(), kObjectArrayHeaderSize + length * 8);
  EXPECT_EQ(Bytes(body.begin() + 13, body.begin() + 17), hex({0, 0x0F, 0x42, 0x40}));
  auto element = [&body](uint64_t i) {
    uint64_t id = 0;
    for (int k = 0; k < 8; ++k) id = (id << 8) | body[kObjectArrayHeaderSize + i * 8 + k];
    return id;
  };
  EXPECT_EQ(element(0), 1u);
  EXPECT_EQ(element(1), 0u);
  EXPECT_EQ(element(999000), 999001u);
  EXPECT_EQ(element(length - 1), 0u);
}

// The walk reports elements in ascending order; anything else is dropped, never written twice or
// outside the record.
TEST(HeapDumpWriter, StreamedArrayDropsElementsOutOfOrderOrPastItsLength) {
  for (size_t segment_size : {size_t{16}, size_t{1} << 20}) {
    Fixture f(segment_size);
    EXPECT_FALSE(f.dump.object_array_element(0, 1)) << "no array open";
    f.dump.begin_object_array(0xE0, 1, 0x81, 4);
    EXPECT_TRUE(f.dump.object_array_element(2, 0x22));
    EXPECT_FALSE(f.dump.object_array_element(2, 0x23));
    EXPECT_FALSE(f.dump.object_array_element(1, 0x11));
    EXPECT_FALSE(f.dump.object_array_element(4, 0x44));
    EXPECT_TRUE(f.dump.object_array_element(3, 0x33));
    f.dump.end_object_array();
    EXPECT_FALSE(f.dump.object_array_element(3, 0x33)) << "the array is closed";
    auto records = split_records(f.finish());
    ASSERT_EQ(records.size(), 2u);
    Bytes elements = concat({Bytes(16, 0), hex({0, 0, 0, 0, 0, 0, 0, 0x22}),
                             hex({0, 0, 0, 0, 0, 0, 0, 0x33})});
    EXPECT_EQ(Bytes(records[0].body.begin() + kObjectArrayHeaderSize, records[0].body.end()), elements);
  }
}

TEST(HeapDumpWriter, TruncatesStreamedObjectArrays) {
  for (size_t segment_size : {size_t{16}, size_t{1} << 20}) {
    Fixture f(segment_size, kObjectArrayHeaderSize + 8 * 3);
    f.dump.begin_object_array(0xF0, 1, 0x81, 5);
    ASSERT_EQ(f.warnings.size(), 1u);
    EXPECT_NE(f.warnings[0].find("f0 has 5 elements"), std::string::npos) << f.warnings[0];
    EXPECT_NE(f.warnings[0].find("first 3"), std::string::npos) << f.warnings[0];
    EXPECT_TRUE(f.dump.object_array_element(0, 0x10));
    EXPECT_FALSE(f.dump.object_array_element(4, 0x50));
    auto records = split_records(f.finish());
    ASSERT_EQ(records.size(), 2u);
    EXPECT_EQ(records[0].body,
              concat({hex({0x22, 0, 0, 0, 0, 0, 0, 0, 0xF0, 0, 0, 0, 1, 0, 0, 0, 3, 0, 0, 0, 0, 0,
                           0, 0, 0x81, 0, 0, 0, 0, 0, 0, 0, 0x10}),
                      Bytes(16, 0)}));
  }
}

#ifndef NDEBUG
TEST(HeapDumpWriterDeathTest, InstanceValuesMustFillTheDeclaredSize) {
  EXPECT_DEATH(
      {
        Fixture f;
        EncodeCursor values = f.dump.begin_instance(1, 2, 3, 8);
        values.u4(0);
        f.dump.end_instance(values);
      },
      "declared");
}
#endif

}  // namespace
}  // namespace fasthprof
