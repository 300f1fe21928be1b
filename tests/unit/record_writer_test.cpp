// RecordWriter and the byte encoder, checked against bytes written out by hand.
#include "records/record_writer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "base/byte_encoder.h"
#include "base/clock.h"
#include "hand_bytes.h"
#include "memory_stream.h"
#include "sink/output_stream.h"

namespace fasthprof {
namespace {

// A writer whose records all carry the time field 0x000003E8 (1000 microseconds).
struct Fixture {
  MemoryStream stream;
  RecordWriter writer{stream, 0x0000018BCF123456ull, [] { return uint64_t{1000}; }};
  Bytes written() {
    writer.flush();
    return stream.bytes;
  }
};

TEST(ByteEncoder, WritesBigEndianFields) {
  ByteBuffer buffer;
  EncodeCursor cursor = buffer.append(1 + 2 + 4 + 8 + 8 + 3);
  cursor.u1(0xAB);
  cursor.u2(0x1234);
  cursor.u4(0x89ABCDEF);
  cursor.u8(0x0102030405060708ull);
  cursor.id(0xF0E0D0C0B0A09080ull);
  cursor.bytes("xyz", 3);
  cursor.finish();
  EXPECT_EQ(Bytes(buffer.data(), buffer.data() + buffer.size()),
            hex({0xAB, 0x12, 0x34, 0x89, 0xAB, 0xCD, 0xEF, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06,
                 0x07, 0x08, 0xF0, 0xE0, 0xD0, 0xC0, 0xB0, 0xA0, 0x90, 0x80, 'x', 'y', 'z'}));
}

TEST(ByteEncoder, ValueWritesTheTypeSize) {
  ByteBuffer buffer;
  EncodeCursor cursor = buffer.append(1 + 2 + 4 + 8 + 8);
  cursor.value(BasicType::kBoolean, 1);
  cursor.value(BasicType::kChar, 0x0041);
  cursor.value(BasicType::kFloat, 0x3F800000);
  cursor.value(BasicType::kLong, 0x8000000000000001ull);
  cursor.value(BasicType::kObject, 0x42);
  cursor.finish();
  EXPECT_EQ(Bytes(buffer.data(), buffer.data() + buffer.size()),
            hex({0x01, 0x00, 0x41, 0x3F, 0x80, 0x00, 0x00, 0x80, 0, 0, 0, 0, 0, 0, 0x01, 0, 0, 0,
                 0, 0, 0, 0, 0x42}));
}

TEST(ByteEncoder, SwapsHostArrays) {
  const uint16_t shorts[] = {0x0102, 0xA0B0};
  const uint32_t ints[] = {0x01020304};
  const uint64_t longs[] = {0x0102030405060708ull};
  uint8_t out[8];
  copy_host_to_big_endian(out, shorts, 2, 2);
  EXPECT_EQ(Bytes(out, out + 4), hex({0x01, 0x02, 0xA0, 0xB0}));
  copy_host_to_big_endian(out, ints, 1, 4);
  EXPECT_EQ(Bytes(out, out + 4), hex({0x01, 0x02, 0x03, 0x04}));
  copy_host_to_big_endian(out, longs, 1, 8);
  EXPECT_EQ(Bytes(out, out + 8), hex({0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08}));
  const uint8_t raw[] = {9, 8, 7};
  copy_host_to_big_endian(out, raw, 3, 1);
  EXPECT_EQ(Bytes(out, out + 3), hex({9, 8, 7}));
}

TEST(ByteEncoder, ClampsU4) {
  EXPECT_EQ(clamp_u4(0), 0u);
  EXPECT_EQ(clamp_u4(0xFFFFFFFFull), 0xFFFFFFFFu);
  EXPECT_EQ(clamp_u4(0x100000000ull), 0xFFFFFFFFu);
  EXPECT_EQ(clamp_u4(5000000000ull), 0xFFFFFFFFu);
}

TEST(ByteEncoder, BufferGrowsAndKeepsContents) {
  ByteBuffer buffer(16);
  for (int i = 0; i < 10000; ++i) {
    EncodeCursor cursor = buffer.append(4);
    cursor.u4(static_cast<uint32_t>(i));
    cursor.finish();
  }
  ASSERT_EQ(buffer.size(), 40000u);
  EXPECT_EQ(Bytes(buffer.data() + 4 * 9999, buffer.data() + 40000), hex({0, 0, 0x27, 0x0F}));
  buffer.truncate(8);
  buffer.shrink_to(8);
  EXPECT_EQ(buffer.capacity(), 8u);
  EXPECT_EQ(Bytes(buffer.data(), buffer.data() + 8), hex({0, 0, 0, 0, 0, 0, 0, 1}));
}

#ifndef NDEBUG
TEST(ByteEncoderDeathTest, FinishRejectsShortWrite) {
  ByteBuffer buffer;
  EncodeCursor cursor = buffer.append(8);
  cursor.u4(1);
  EXPECT_DEATH(cursor.finish(), "declared");
}

TEST(ByteEncoderDeathTest, RejectsWritePastDeclaredSize) {
  ByteBuffer buffer;
  EncodeCursor cursor = buffer.append(2);
  EXPECT_DEATH(cursor.u4(1), "past its declared size");
}
#endif

TEST(RecordWriter, FileHeader) {
  Fixture f;
  f.writer.write_file_header();
  Bytes expected = {'J', 'A', 'V', 'A', ' ', 'P', 'R', 'O', 'F', 'I', 'L', 'E', ' ', '1', '.',
                    '0', '.', '2', 0x00};
  expected = concat({expected, hex({0, 0, 0, 8, 0x00, 0x00, 0x01, 0x8B, 0xCF, 0x12, 0x34, 0x56})});
  EXPECT_EQ(f.written(), expected);
}

TEST(RecordWriter, Utf8) {
  Fixture f;
  f.writer.write_utf8(0x1122334455667788ull, "main");
  EXPECT_EQ(f.written(), hex({0x01, 0x00, 0x00, 0x03, 0xE8, 0x00, 0x00, 0x00, 0x0C, 0x11, 0x22,
                              0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 'm', 'a', 'i', 'n'}));
}

TEST(RecordWriter, Utf8Empty) {
  Fixture f;
  f.writer.write_utf8(7, "");
  EXPECT_EQ(f.written(), hex({0x01, 0, 0, 0x03, 0xE8, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 7}));
}

TEST(RecordWriter, LoadClassAndUnloadClass) {
  Fixture f;
  f.writer.write_load_class(100009, 0x0000000500000001ull, 300000, 0xA0000002ull);
  f.writer.write_unload_class(100009);
  EXPECT_EQ(f.written(),
            hex({0x02, 0, 0, 0x03, 0xE8, 0, 0, 0, 24,                 // header
                 0x00, 0x01, 0x86, 0xA9,                              // class serial 100009
                 0, 0, 0, 0x05, 0, 0, 0, 0x01,                        // class object
                 0x00, 0x04, 0x93, 0xE0,                              // trace 300000
                 0, 0, 0, 0, 0xA0, 0, 0, 0x02,                        // name
                 0x03, 0, 0, 0x03, 0xE8, 0, 0, 0, 4, 0x00, 0x01, 0x86, 0xA9}));
}

TEST(RecordWriter, StackFrame) {
  Fixture f;
  f.writer.write_stack_frame({.frame_id = 1,
                              .method_name_id = 2,
                              .method_signature_id = 3,
                              .source_file_id = 0,
                              .class_serial = 100000,
                              .line = -1});
  f.writer.write_stack_frame({.frame_id = 4,
                              .method_name_id = 5,
                              .method_signature_id = 6,
                              .source_file_id = 7,
                              .class_serial = 100001,
                              .line = 70000});
  EXPECT_EQ(f.written(),
            hex({0x04, 0, 0, 0x03, 0xE8, 0, 0, 0, 40,  //
                 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 3,
                 0, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x01, 0x86, 0xA0, 0xFF, 0xFF, 0xFF, 0xFF,
                 0x04, 0, 0, 0x03, 0xE8, 0, 0, 0, 40,  //
                 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 6,
                 0, 0, 0, 0, 0, 0, 0, 7, 0x00, 0x01, 0x86, 0xA1, 0x00, 0x01, 0x11, 0x70}));
}

TEST(RecordWriter, StackTrace) {
  Fixture f;
  const uint64_t frames[] = {0x0102030405060708ull, 9};
  f.writer.write_stack_trace(300001, 200001, frames);
  f.writer.write_stack_trace(300000, 0, {});
  EXPECT_EQ(f.written(),
            hex({0x05, 0, 0, 0x03, 0xE8, 0, 0, 0, 28,  //
                 0x00, 0x04, 0x93, 0xE1, 0x00, 0x03, 0x0D, 0x41, 0, 0, 0, 2,
                 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0, 0, 0, 0, 9,
                 0x05, 0, 0, 0x03, 0xE8, 0, 0, 0, 12,  //
                 0x00, 0x04, 0x93, 0xE0, 0, 0, 0, 0, 0, 0, 0, 0}));
}

TEST(RecordWriter, AllocSitesWithFloatCutoffAndClampedCounters) {
  Fixture f;
  AllocSitesHeader header{.flags = kSitesSortedByAllocation,
                          .cutoff = 0.0001f,
                          .total_live_bytes = 5000000000ull,
                          .total_live_instances = 12,
                          .total_alloc_bytes = 5000000000ull,
                          .total_alloc_instances = 0x100000000ull};
  const AllocSiteRow rows[] = {{.array_kind = 0,
                                .class_serial = 100009,
                                .trace_serial = 300001,
                                .live_bytes = 4294967296ull,
                                .live_instances = 3,
                                .alloc_bytes = 48,
                                .alloc_instances = 4},
                               {.array_kind = 5,
                                .class_serial = 100010,
                                .trace_serial = 300002,
                                .live_bytes = 16,
                                .live_instances = 1,
                                .alloc_bytes = 16,
                                .alloc_instances = 1}};
  f.writer.write_alloc_sites(header, rows);
  EXPECT_EQ(f.written(),
            hex({0x06, 0, 0, 0x03, 0xE8, 0, 0, 0, 84,  // 34 + 2 * 25
                 0x00, 0x02,                           // flags
                 0x38, 0xD1, 0xB7, 0x17,               // 0.0001f
                 0xFF, 0xFF, 0xFF, 0xFF,               // live bytes, clamped
                 0, 0, 0, 12,                          // live instances
                 0, 0, 0, 0x01, 0x2A, 0x05, 0xF2, 0x00,  // alloc bytes, u8
                 0, 0, 0, 0x01, 0, 0, 0, 0,              // alloc instances, u8
                 0, 0, 0, 2,                             // sites
                 0x00, 0x00, 0x01, 0x86, 0xA9, 0x00, 0x04, 0x93, 0xE1, 0xFF, 0xFF, 0xFF, 0xFF,
                 0, 0, 0, 3, 0, 0, 0, 48, 0, 0, 0, 4,  //
                 0x05, 0x00, 0x01, 0x86, 0xAA, 0x00, 0x04, 0x93, 0xE2, 0, 0, 0, 16, 0, 0, 0, 1,
                 0, 0, 0, 16, 0, 0, 0, 1}));
}

TEST(RecordWriter, AllocSitesZeroCutoffIsZeroBits) {
  Fixture f;
  f.writer.write_alloc_sites({}, {});
  Bytes expected = hex({0x06, 0, 0, 0x03, 0xE8, 0, 0, 0, 34});
  expected.resize(expected.size() + 34, 0);
  EXPECT_EQ(f.written(), expected);
}

TEST(RecordWriter, AllocSitesManyRowsAreChunkedButContiguous) {
  Fixture f;
  std::vector<AllocSiteRow> rows(5000);
  for (size_t i = 0; i < rows.size(); ++i) {
    rows[i].class_serial = static_cast<uint32_t>(100000 + i);
    rows[i].alloc_instances = i;
  }
  f.writer.write_alloc_sites({}, rows);
  Bytes out = f.written();
  ASSERT_EQ(out.size(), 9u + 34 + 5000 * 25);
  EXPECT_EQ(Bytes(out.begin() + 5, out.begin() + 9), hex({0x00, 0x01, 0xE8, 0x6A}));  // 125034
  EXPECT_EQ(Bytes(out.begin() + 39, out.begin() + 43), hex({0, 0, 0x13, 0x88}));       // 5000
  size_t last = 43 + 4999 * 25;
  EXPECT_EQ(Bytes(out.begin() + last, out.end()),
            hex({0, 0x00, 0x01, 0x9A, 0x27, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                 0x13, 0x87}));
}

TEST(RecordWriter, HeapSummary) {
  Fixture f;
  f.writer.write_heap_summary(0x100000005ull, 7, 0x100000005ull, 9);
  EXPECT_EQ(f.written(), hex({0x07, 0, 0, 0x03, 0xE8, 0, 0, 0, 24, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0,
                              7, 0, 0, 0, 1, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 9}));
}

TEST(RecordWriter, StartAndEndThread) {
  Fixture f;
  f.writer.write_start_thread({.thread_serial = 200001,
                               .thread_object_id = 0x10,
                               .trace_serial = 300000,
                               .name_id = 0x11,
                               .group_name_id = 0x12,
                               .parent_group_name_id = 0});
  f.writer.write_end_thread(200001);
  EXPECT_EQ(f.written(),
            hex({0x0A, 0, 0, 0x03, 0xE8, 0, 0, 0, 40,  //
                 0x00, 0x03, 0x0D, 0x41, 0, 0, 0, 0, 0, 0, 0, 0x10, 0x00, 0x04, 0x93, 0xE0,
                 0, 0, 0, 0, 0, 0, 0, 0x11, 0, 0, 0, 0, 0, 0, 0, 0x12, 0, 0, 0, 0, 0, 0, 0, 0,
                 0x0B, 0, 0, 0x03, 0xE8, 0, 0, 0, 4, 0x00, 0x03, 0x0D, 0x41}));
}

TEST(RecordWriter, CpuSamples) {
  Fixture f;
  const CpuSampleRow rows[] = {{.count = 0x100000000ull, .trace_serial = 300003},
                               {.count = 2, .trace_serial = 300004}};
  f.writer.write_cpu_samples(0x100000002ull, rows);
  EXPECT_EQ(f.written(), hex({0x0D, 0, 0, 0x03, 0xE8, 0, 0, 0, 24, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0,
                              2, 0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x04, 0x93, 0xE3, 0, 0, 0, 2, 0x00,
                              0x04, 0x93, 0xE4}));
}

TEST(RecordWriter, ControlSettings) {
  Fixture f;
  f.writer.write_control_settings(kControlAllocTraces | kControlCpuSampling, 4);
  f.writer.write_control_settings(kControlAllocTraces, 70000);
  EXPECT_EQ(f.written(), hex({0x0E, 0, 0, 0x03, 0xE8, 0, 0, 0, 6, 0, 0, 0, 3, 0, 4,  //
                              0x0E, 0, 0, 0x03, 0xE8, 0, 0, 0, 6, 0, 0, 0, 1, 0xFF, 0xFF}));
}

TEST(RecordWriter, HeapDumpAndEnd) {
  Fixture f;
  const uint8_t sub_records[] = {0xFF, 0, 0, 0, 0, 0, 0, 0, 0x2A};
  f.writer.write_heap_dump(sub_records);
  f.writer.write_heap_dump_end();
  EXPECT_EQ(f.written(), hex({0x0C, 0, 0, 0x03, 0xE8, 0, 0, 0, 9, 0xFF, 0, 0, 0, 0, 0, 0, 0, 0x2A,
                              0x2C, 0, 0, 0x03, 0xE8, 0, 0, 0, 0}));
}

TEST(RecordWriter, TimeFieldIsMicrosecondsSinceHeaderClampedToU4) {
  MemoryStream stream;
  uint64_t now = 0;
  RecordWriter writer(stream, 0, [&now] { return now; });
  now = 0x12345678;
  writer.write_end_thread(1);
  now = 0x100000000ull;
  writer.write_end_thread(2);
  writer.flush();
  EXPECT_EQ(stream.bytes, hex({0x0B, 0x12, 0x34, 0x56, 0x78, 0, 0, 0, 4, 0, 0, 0, 1,  //
                                0x0B, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 4, 0, 0, 0, 2}));
}

TEST(RecordWriter, DefaultClockStartsNearZero) {
  MemoryStream stream;
  RecordWriter writer(stream, wall_ms());
  EXPECT_LT(writer.time_field(), 10u * 1000 * 1000);
}

TEST(RecordWriter, BuffersUntilFlushOrThreshold) {
  MemoryStream stream;
  RecordWriter writer(stream, 0, [] { return uint64_t{0}; });
  writer.write_end_thread(1);
  EXPECT_EQ(stream.writes, 0);
  EXPECT_EQ(writer.position(), 13u);
  for (size_t i = 0; i * 13 < RecordWriter::kFlushThreshold; ++i) writer.write_end_thread(2);
  EXPECT_GE(stream.writes, 1);
  size_t before = stream.bytes.size();
  EXPECT_GE(before, RecordWriter::kFlushThreshold);
  writer.flush();
  EXPECT_EQ(stream.bytes.size(), writer.position());
}

TEST(RecordWriter, WriteEncodedFlushesBufferFirst) {
  MemoryStream stream;
  RecordWriter writer(stream, 0, [] { return uint64_t{0}; });
  writer.write_end_thread(1);
  const uint8_t framed[] = {0x2C, 0, 0, 0, 0, 0, 0, 0, 0};
  writer.write_encoded(framed, sizeof(framed));
  writer.write_end_thread(2);
  writer.flush();
  EXPECT_EQ(stream.bytes, hex({0x0B, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 1,  //
                                0x2C, 0, 0, 0, 0, 0, 0, 0, 0,              //
                                0x0B, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 2}));
  EXPECT_EQ(writer.position(), 35u);
}

TEST(RecordWriter, DestructorFlushes) {
  MemoryStream stream;
  {
    RecordWriter writer(stream, 0, [] { return uint64_t{0}; });
    writer.write_unload_class(3);
  }
  EXPECT_EQ(stream.bytes, hex({0x03, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 3}));
}

}  // namespace
}  // namespace fasthprof
