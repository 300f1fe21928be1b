// The reader layer of hprof/ on its own, without the verifier's checks: it walks files made by the
// project's writers (RecordWriter, HeapDumpWriter) record by record and sub-record by sub-record,
// decodes the fields, and says where and why a truncated or garbled input stops.
#include "hprof_reader.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "base/hprof_format.h"
#include "heap_dump/heap_dump_writer.h"
#include "memory_stream.h"
#include "records/record_writer.h"

namespace fasthprof {
namespace {

constexpr uint64_t kMillis = 1700000000123ULL;

uint8_t tag_of(RecordTag tag) { return static_cast<uint8_t>(tag); }
uint8_t tag_of(HeapTag tag) { return static_cast<uint8_t>(tag); }

// A file with one record of several kinds and a heap dump of every sub-record kind in segments of
// at most segment_size bytes. Record times count up from 0.
struct WrittenFile {
  explicit WrittenFile(size_t segment_size = 64) {
    records.write_file_header();
    records.write_control_settings(kControlCpuSampling, 4);
    records.write_utf8(1, "abc");
    records.write_utf8(2, "Point");
    records.write_load_class(100001, 0x1000, 300000, 2);
    records.write_stack_frame({0x7001, 1, 1, 0, 100001, 12});
    const uint64_t frames[] = {0x7001};
    records.write_stack_trace(300001, 200001, frames);

    HeapDumpWriter dump(records, {.segment_size = segment_size});
    dump.root_unknown(0x11);
    dump.root_jni_global(0x12, 0x9999);
    dump.root_jni_local(0x13, 200001, 0);
    dump.root_java_frame(0x14, 200001, -1);
    dump.root_native_stack(0x15, 200001);
    dump.root_sticky_class(0x1000);
    dump.root_thread_block(0x16, 200001);
    dump.root_monitor_used(0x17);
    dump.root_thread_object(0x18, 200001, 300001);
    const ConstantPoolEntry constants[] = {{3, BasicType::kInt, 7}};
    const StaticFieldValue statics[] = {{1, BasicType::kLong, 0x0102030405060708ULL}, {2, BasicType::kObject, 0x20}};
    const InstanceFieldDecl fields[] = {{1, BasicType::kInt}, {2, BasicType::kObject}};
    dump.class_dump({.class_id = 0x1000, .trace_serial = 300000, .super_id = 0x999, .loader_id = 0x998,
                     .instance_size = 12, .constant_pool = constants, .static_fields = statics,
                     .instance_fields = fields});
    const uint8_t values[] = {0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0x20};
    dump.instance_dump(0x20, 300001, 0x1000, values);
    const uint64_t elements[] = {0x20, 0};
    dump.object_array_dump(0x30, 300000, 0x1001, elements);
    const uint16_t chars[] = {'h', 'i', '!'};
    dump.primitive_array_dump(0x40, 300000, BasicType::kChar, chars, 3);
    dump.finish();

    const CpuSampleRow samples[] = {{3, 300001}};
    records.write_cpu_samples(3, samples);
    records.flush();
  }

  const std::vector<uint8_t>& bytes() const { return stream.bytes; }

  MemoryStream stream;
  uint64_t clock = 0;
  RecordWriter records{stream, kMillis, [this] { return clock++; }};
};

// Every record of the input, framed; EXPECTs that the walk ends without an error.
std::vector<RecordView> all_records(HprofReader& reader) {
  std::vector<RecordView> records;
  RecordView record;
  while (reader.next_record(&record)) records.push_back(record);
  EXPECT_EQ(reader.error().message, "");
  return records;
}

TEST(HprofReader, ReadsTheHeaderTheWriterWrote) {
  WrittenFile file;
  HprofReader reader(file.bytes().data(), file.bytes().size());
  ASSERT_TRUE(reader.read_header()) << reader.error().message;
  EXPECT_EQ(reader.header().version, "JAVA PROFILE 1.0.2");
  EXPECT_EQ(reader.header().id_size, 8u);
  EXPECT_EQ(reader.header().timestamp_millis, kMillis);
  EXPECT_EQ(reader.position(), kHprofHeaderSize);
  EXPECT_EQ(reader.bytes().id_size(), 8u);
}

TEST(HprofReader, IteratesTheRecordsInFileOrder) {
  WrittenFile file(64);
  HprofReader reader(file.bytes().data(), file.bytes().size());
  ASSERT_TRUE(reader.read_header());
  std::vector<RecordView> records = all_records(reader);

  std::vector<uint8_t> tags;
  for (const RecordView& r : records) tags.push_back(r.tag);
  ASSERT_GE(records.size(), 9u);
  const std::vector<uint8_t> head = {tag_of(RecordTag::kControlSettings), tag_of(RecordTag::kUtf8),
                                     tag_of(RecordTag::kUtf8), tag_of(RecordTag::kLoadClass),
                                     tag_of(RecordTag::kStackFrame), tag_of(RecordTag::kStackTrace)};
  EXPECT_EQ(std::vector<uint8_t>(tags.begin(), tags.begin() + 6), head);
  EXPECT_EQ(tags[tags.size() - 2], tag_of(RecordTag::kHeapDumpEnd));
  EXPECT_EQ(tags.back(), tag_of(RecordTag::kCpuSamples));
  size_t segments = 0;
  for (size_t i = 6; i + 2 < tags.size(); ++i) {
    EXPECT_EQ(tags[i], tag_of(RecordTag::kHeapDumpSegment)) << i;
    ++segments;
  }
  EXPECT_GT(segments, 1u) << "64-byte segments split the dump";

  // Records follow one another without gaps, up to the end of the input.
  uint64_t expected_offset = kHprofHeaderSize;
  for (const RecordView& r : records) {
    EXPECT_EQ(r.offset, expected_offset);
    EXPECT_EQ(r.body, r.offset + kRecordHeaderSize);
    expected_offset = r.end();
  }
  EXPECT_EQ(expected_offset, file.bytes().size());
  EXPECT_EQ(reader.position(), file.bytes().size());
  RecordView past_the_end;
  EXPECT_FALSE(reader.next_record(&past_the_end)) << "the end stays the end";
  EXPECT_EQ(reader.error().message, "");

  // Fields, read through bytes() at the framed offsets.
  const HprofBytes& in = reader.bytes();
  EXPECT_EQ(records[0].time_micros, 0u);
  EXPECT_EQ(records[1].time_micros, 1u);
  EXPECT_EQ(records[0].length, kControlSettingsBodySize);
  EXPECT_EQ(in.u4(records[0].body), kControlCpuSampling);
  EXPECT_EQ(in.u2(records[0].body + 4), 4u);
  EXPECT_EQ(records[1].length, 8u + 3u);
  EXPECT_EQ(in.id(records[1].body), 1u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(in.data() + records[1].body + 8), 3), "abc");
  EXPECT_EQ(records[3].length, kLoadClassBodySize);
  EXPECT_EQ(in.u4(records[3].body), 100001u);
  EXPECT_EQ(in.id(records[3].body + 4), 0x1000u);
  EXPECT_EQ(records[5].length, kStackTraceBodyBaseSize + 8);
  EXPECT_EQ(in.id(records[5].body + 12), 0x7001u);
  EXPECT_EQ(in.u4(records.back().body + 12), 300001u);
}

// The head of an object dump as decode_object_dump() gives it: the object, its class, its count
// (bytes of values for an INSTANCE DUMP, elements for an array) and element type (0: an instance).
void expect_object_head(const ObjectDumpView& view, uint64_t object_id, uint64_t class_id, uint32_t count,
                        uint8_t element_type) {
  EXPECT_EQ(view.object_id, object_id);
  EXPECT_EQ(view.class_id, class_id) << "object 0x" << std::hex << object_id;
  EXPECT_EQ(view.count, count) << "object 0x" << std::hex << object_id;
  EXPECT_EQ(view.element_type, element_type) << "object 0x" << std::hex << object_id;
}

TEST(SubRecordReader, DecodesEverySubRecordKindAcrossSegments) {
  WrittenFile file(64);
  HprofReader reader(file.bytes().data(), file.bytes().size());
  ASSERT_TRUE(reader.read_header());
  const HprofBytes& in = reader.bytes();
  std::vector<SubRecordView> subs;
  for (const RecordView& record : all_records(reader)) {
    if (record.tag != tag_of(RecordTag::kHeapDumpSegment)) continue;
    SubRecordReader reader_of_segment(in, record);
    SubRecordView sub;
    uint64_t expected_offset = record.body;
    while (reader_of_segment.next(&sub)) {
      EXPECT_EQ(sub.offset, expected_offset);
      expected_offset = sub.end();
      subs.push_back(sub);
    }
    EXPECT_EQ(reader_of_segment.error().message, "");
    EXPECT_EQ(expected_offset, record.end()) << "sub-records fill their segment";
  }
  const std::vector<uint8_t> expected_tags = {
      tag_of(HeapTag::kRootUnknown),      tag_of(HeapTag::kRootJniGlobal),   tag_of(HeapTag::kRootJniLocal),
      tag_of(HeapTag::kRootJavaFrame),    tag_of(HeapTag::kRootNativeStack), tag_of(HeapTag::kRootStickyClass),
      tag_of(HeapTag::kRootThreadBlock),  tag_of(HeapTag::kRootMonitorUsed), tag_of(HeapTag::kRootThreadObject),
      tag_of(HeapTag::kClassDump),        tag_of(HeapTag::kInstanceDump),    tag_of(HeapTag::kObjectArrayDump),
      tag_of(HeapTag::kPrimitiveArrayDump)};
  std::vector<uint8_t> tags;
  for (const SubRecordView& sub : subs) tags.push_back(sub.tag);
  ASSERT_EQ(tags, expected_tags);

  EXPECT_EQ(subs[0].size, kRootUnknownSize);
  EXPECT_EQ(decode_root(in, subs[0]).object_id, 0x11u);
  RootView global = decode_root(in, subs[1]);
  EXPECT_EQ(global.object_id, 0x12u);
  EXPECT_EQ(global.jni_global_ref_id, 0x9999u);
  RootView local = decode_root(in, subs[2]);
  EXPECT_EQ(local.thread_serial, 200001u);
  EXPECT_EQ(local.frame, 0);
  EXPECT_EQ(decode_root(in, subs[3]).frame, -1);
  EXPECT_EQ(decode_root(in, subs[4]).thread_serial, 200001u);
  EXPECT_EQ(decode_root(in, subs[6]).thread_serial, 200001u);
  RootView thread = decode_root(in, subs[8]);
  EXPECT_EQ(thread.object_id, 0x18u);
  EXPECT_EQ(thread.trace_serial, 300001u);
  for (size_t i = 0; i < 9; ++i) EXPECT_TRUE(is_root_tag(subs[i].tag)) << i;
  for (size_t i = 9; i < subs.size(); ++i) EXPECT_FALSE(is_root_tag(subs[i].tag)) << i;

  ClassDumpView klass = decode_class_dump(in, subs[9]);
  EXPECT_EQ(klass.class_id, 0x1000u);
  EXPECT_EQ(klass.trace_serial, 300000u);
  EXPECT_EQ(klass.super_id, 0x999u);
  EXPECT_EQ(klass.loader_id, 0x998u);
  EXPECT_EQ(klass.instance_size, 12u);
  ASSERT_EQ(klass.constant_count, 1u);
  EXPECT_EQ(in.u2(klass.constants_at), 3u);
  EXPECT_EQ(in.value(in.u1(klass.constants_at + 2), klass.constants_at + 3), 7u);
  ASSERT_EQ(klass.static_count, 2u);
  EXPECT_EQ(in.id(klass.statics_at), 1u);
  EXPECT_EQ(in.u1(klass.statics_at + 8), static_cast<uint8_t>(BasicType::kLong));
  EXPECT_EQ(in.value(in.u1(klass.statics_at + 8), klass.statics_at + 9), 0x0102030405060708ULL);
  EXPECT_EQ(in.value(in.u1(klass.statics_at + 25), klass.statics_at + 26), 0x20u) << "the object static";
  ASSERT_EQ(klass.field_count, 2u);
  EXPECT_EQ(in.u1(klass.fields_at + 8), static_cast<uint8_t>(BasicType::kInt));
  EXPECT_EQ(in.u1(klass.fields_at + 17), static_cast<uint8_t>(BasicType::kObject));
  EXPECT_EQ(klass.fields_at + 2 * 9, subs[9].end());

  ObjectDumpView instance = decode_object_dump(in, subs[10]);
  expect_object_head(instance, 0x20, 0x1000, 12, 0);
  EXPECT_EQ(instance.trace_serial, 300001u);
  EXPECT_EQ(in.u4(instance.values_at), 5u);
  EXPECT_EQ(in.id(instance.values_at + 4), 0x20u);

  ObjectDumpView array = decode_object_dump(in, subs[11]);
  expect_object_head(array, 0x30, 0x1001, 2, static_cast<uint8_t>(BasicType::kObject));
  EXPECT_EQ(in.id(array.values_at), 0x20u);
  EXPECT_EQ(in.id(array.values_at + 8), 0u);

  ObjectDumpView chars = decode_object_dump(in, subs[12]);
  expect_object_head(chars, 0x40, 0, 3, static_cast<uint8_t>(BasicType::kChar));
  EXPECT_EQ(in.u2(chars.values_at + 4), '!');
  EXPECT_EQ(chars.values_at + 6, subs[12].end());
}

// Every prefix of a file: the walk either ends cleanly exactly at a record boundary, or stops with
// an error that names a byte inside the input and says it is truncated.
TEST(HprofReader, EveryTruncationEndsAtABoundaryOrSaysWhatIsCut) {
  WrittenFile file(64);
  const std::vector<uint8_t>& bytes = file.bytes();
  std::set<uint64_t> boundaries = {kHprofHeaderSize};
  {
    HprofReader reader(bytes.data(), bytes.size());
    ASSERT_TRUE(reader.read_header());
    for (const RecordView& r : all_records(reader)) boundaries.insert(r.end());
  }
  for (size_t size = 0; size < bytes.size(); ++size) {
    HprofReader reader(bytes.data(), size);
    if (!reader.read_header()) {
      EXPECT_LT(size, kHprofHeaderSize);
      EXPECT_LE(reader.error().offset, size);
      EXPECT_TRUE(reader.error().message.find("truncated header") != std::string::npos ||
                  reader.error().message.find("empty file") != std::string::npos)
          << size << ": " << reader.error().message;
      continue;
    }
    RecordView record;
    while (reader.next_record(&record)) EXPECT_LE(record.end(), size);
    if (boundaries.count(size)) {
      EXPECT_EQ(reader.error().message, "") << size;
    } else {
      EXPECT_LT(reader.error().offset, size);
      EXPECT_TRUE(reader.error().message.find("truncated record header") != std::string::npos ||
                  reader.error().message.find("runs past the end of the file") != std::string::npos)
          << size << ": " << reader.error().message;
    }
  }
}

// Where WrittenFile's first UTF8 record starts: after the header and CONTROL SETTINGS.
constexpr uint64_t kUtf8At = kHprofHeaderSize + kRecordHeaderSize + kControlSettingsBodySize;

// Reading the first `size` bytes of a WrittenFile (perhaps altered): the header and CONTROL
// SETTINGS read, the next record fails at kUtf8At with `message`, and a failed reader stays failed.
void expect_second_record_fails(const uint8_t* data, size_t size, const std::string& message) {
  HprofReader reader(data, size);
  ASSERT_TRUE(reader.read_header());
  RecordView record;
  ASSERT_TRUE(reader.next_record(&record));
  EXPECT_FALSE(reader.next_record(&record));
  EXPECT_EQ(reader.error().offset, kUtf8At);
  EXPECT_EQ(reader.error().message, message);
  EXPECT_FALSE(reader.next_record(&record)) << "an error stays an error";
}

TEST(HprofReader, TruncationMessagesSayWhatIsMissing) {
  WrittenFile file;
  const std::vector<uint8_t>& bytes = file.bytes();
  expect_second_record_fails(bytes.data(), kUtf8At + 4, "truncated record header: 4 bytes left, a record header has 9");
  expect_second_record_fails(bytes.data(), kUtf8At + kRecordHeaderSize + 10,
                             "UTF8 record of length 11 runs past the end of the file (10 bytes left)");

  HprofReader short_header(bytes.data(), 25);
  EXPECT_FALSE(short_header.read_header());
  EXPECT_EQ(short_header.error().offset, 25u);
  EXPECT_EQ(short_header.error().message, "truncated header: 25 bytes, need 31");
  RecordView record;
  EXPECT_FALSE(short_header.next_record(&record)) << "no records without a header";
}

TEST(HprofReader, RejectsWhatIsNotAHeader) {
  HprofReader empty(nullptr, 0);
  EXPECT_FALSE(empty.read_header());
  EXPECT_EQ(empty.error().message, "empty file: no HPROF header");

  const std::string text = "JAVA PROFILE 1.0.3";
  HprofReader other(reinterpret_cast<const uint8_t*>(text.data()), text.size());
  EXPECT_FALSE(other.read_header());
  EXPECT_NE(other.error().message.find("not an HPROF binary file"), std::string::npos);

  WrittenFile file;
  std::vector<uint8_t> bytes = file.bytes();
  bytes[19 + 3] = 6;  // identifier size 6
  HprofReader odd_ids(bytes.data(), bytes.size());
  EXPECT_FALSE(odd_ids.read_header());
  EXPECT_EQ(odd_ids.error().offset, 19u);
  EXPECT_EQ(odd_ids.error().message, "identifier size 6 is not 4 or 8");
}

TEST(HprofReader, StopsAtAnUnknownRecordTag) {
  WrittenFile file;
  std::vector<uint8_t> bytes = file.bytes();
  bytes[kUtf8At] = 0x42;
  expect_second_record_fails(bytes.data(), bytes.size(), "unknown record tag 0x42");
}

// The writers write only 8-byte IDs; a file of 4-byte IDs is built by hand.
TEST(HprofReader, ReadsFourByteIds) {
  std::vector<uint8_t> bytes(kBinaryHeaderVersion, kBinaryHeaderVersion + sizeof(kBinaryHeaderVersion));
  for (uint8_t b : {0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 9}) bytes.push_back(b);
  // HEAP DUMP SEGMENT: ROOT JNI GLOBAL (4-byte object and reference IDs), INSTANCE DUMP of 2 bytes.
  const std::vector<uint8_t> body = {0x01, 0, 0, 0, 0x12, 0, 0, 0, 0x34,
                                     0x21, 0, 0, 0, 0x56, 0, 0, 0, 1, 0, 0, 0, 0x78, 0, 0, 0, 2, 0xAB, 0xCD};
  for (uint8_t b : {0x1C, 0, 0, 0, 0, 0, 0, 0, static_cast<int>(body.size())}) bytes.push_back(b);
  bytes.insert(bytes.end(), body.begin(), body.end());

  HprofReader reader(bytes.data(), bytes.size());
  ASSERT_TRUE(reader.read_header());
  EXPECT_EQ(reader.header().id_size, 4u);
  EXPECT_EQ(reader.header().timestamp_millis, 9u);
  std::vector<RecordView> records = all_records(reader);
  ASSERT_EQ(records.size(), 1u);
  SubRecordReader subs(reader.bytes(), records[0]);
  SubRecordView sub;
  ASSERT_TRUE(subs.next(&sub));
  EXPECT_EQ(sub.size, 1u + 2 * 4);
  RootView root = decode_root(reader.bytes(), sub);
  EXPECT_EQ(root.object_id, 0x12u);
  EXPECT_EQ(root.jni_global_ref_id, 0x34u);
  ASSERT_TRUE(subs.next(&sub));
  EXPECT_EQ(sub.size, 1u + 4 + 4 + 4 + 4 + 2);
  ObjectDumpView instance = decode_object_dump(reader.bytes(), sub);
  EXPECT_EQ(instance.object_id, 0x56u);
  EXPECT_EQ(instance.class_id, 0x78u);
  EXPECT_EQ(instance.count, 2u);
  EXPECT_EQ(reader.bytes().u2(instance.values_at), 0xABCDu);
  EXPECT_FALSE(subs.next(&sub));
  EXPECT_EQ(subs.error().message, "");
}

// A sub-record that would end past its segment, an unknown sub-record tag and an invalid element
// type: the segment cannot be walked further, and the error says where it stopped.
TEST(SubRecordReader, StopsWhereASegmentCannotBeFramed) {
  WrittenFile file(1 << 20);  // one segment
  HprofReader reader(file.bytes().data(), file.bytes().size());
  ASSERT_TRUE(reader.read_header());
  RecordView segment;
  for (const RecordView& r : all_records(reader)) {
    if (r.tag == tag_of(RecordTag::kHeapDumpSegment)) segment = r;
  }
  ASSERT_NE(segment.length, 0u);

  auto walk = [&](const RecordView& record, const std::vector<uint8_t>& bytes) {
    HprofBytes in(bytes.data(), bytes.size(), 8);
    SubRecordReader subs(in, record);
    SubRecordView sub;
    uint64_t count = 0;
    while (subs.next(&sub)) ++count;
    EXPECT_FALSE(subs.next(&sub));
    return std::make_pair(count, subs.error());
  };

  // The segment's last sub-record (the char array) cut by a shorter segment length.
  RecordView cut = segment;
  cut.length -= 1;
  auto [count, error] = walk(cut, file.bytes());
  EXPECT_EQ(count, 12u);
  EXPECT_EQ(error.offset, segment.end() - (kPrimitiveArrayHeaderSize + 6));
  EXPECT_EQ(error.message, "PRIMITIVE ARRAY DUMP sub-record needs 24 bytes but only 23 are left in its segment "
                           "(sub-records must not span segments)");

  std::vector<uint8_t> bytes = file.bytes();
  bytes[segment.body] = 0x99;
  std::tie(count, error) = walk(segment, bytes);
  EXPECT_EQ(count, 0u);
  EXPECT_EQ(error.offset, segment.body);
  EXPECT_EQ(error.message, "unknown heap dump sub-record tag 0x99");

  bytes = file.bytes();
  const uint64_t chars_at = segment.end() - (kPrimitiveArrayHeaderSize + 6);
  bytes[chars_at + 1 + 8 + 4 + 4] = static_cast<uint8_t>(BasicType::kObject);
  std::tie(count, error) = walk(segment, bytes);
  EXPECT_EQ(count, 12u);
  EXPECT_EQ(error.offset, chars_at);
  EXPECT_EQ(error.message, "PRIMITIVE ARRAY DUMP with element type 2");
}

}  // namespace
}  // namespace fasthprof
