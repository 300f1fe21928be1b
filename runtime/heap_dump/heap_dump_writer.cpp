#include "heap_dump/heap_dump_writer.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>

#include "base/stderr_line.h"

namespace fasthprof {
namespace {

// Streamed arrays are converted to big-endian through a scratch buffer of this size.
constexpr size_t kStreamChunkBytes = 256 * 1024;
// Room for a segment header plus the largest array sub-record header.
constexpr size_t kMaxArrayPreambleSize = kRecordHeaderSize + kObjectArrayHeaderSize;

void print_warning(std::string_view text) {
  write_stderr("fasthprof: " + std::string(text) + "\n");
}

size_t class_dump_size(const ClassDumpRecord& record, size_t constant_count, size_t static_count,
                       size_t field_count) {
  size_t size = kClassDumpBaseSize;
  for (const ConstantPoolEntry& entry : record.constant_pool.first(constant_count)) {
    size += 2 + 1 + basic_type_size(entry.type);
  }
  for (const StaticFieldValue& field : record.static_fields.first(static_count)) {
    size += kIdSize + 1 + basic_type_size(field.type);
  }
  return size + field_count * (kIdSize + 1);
}

}  // namespace

HeapDumpWriter::HeapDumpWriter(RecordWriter& records, HeapDumpWriterOptions options)
    : records_(records), options_(std::move(options)) {
  assert(options_.segment_size > 0 && options_.segment_size <= kMaxU4);
  assert(options_.max_sub_record_size <= kMaxU4);
  if (!options_.warn) options_.warn = print_warning;
  segment_.reserve(kRecordHeaderSize + options_.segment_size);
  segment_.append(kRecordHeaderSize);  // filled in by emit_segment()
}

// Sub-records of a dump abandoned without finish() (a failed dump) are dropped.
HeapDumpWriter::~HeapDumpWriter() = default;

// Opens a sub-record of size bytes, closing the pending segment first if it would overflow.
EncodeCursor HeapDumpWriter::begin_sub_record(size_t size) {
  if (array_.open) end_object_array();
  if (pending_bytes() != 0 && pending_bytes() + size > options_.segment_size) emit_segment();
  ++sub_records_;
  return segment_.append(size);
}

// Fills in the segment header (the length is now known) and hands the segment to the stream.
void HeapDumpWriter::emit_segment() {
  size_t body_size = pending_bytes();
  assert(body_size != 0 && body_size <= kMaxU4);
  EncodeCursor header(segment_.data(), kRecordHeaderSize);
  header.tag(RecordTag::kHeapDumpSegment);
  header.u4(records_.time_field());
  header.u4(static_cast<uint32_t>(body_size));
  header.finish();
  records_.write_encoded(segment_.data(), segment_.size());
  ++segments_;
  segment_.truncate(kRecordHeaderSize);
  // A giant class or instance record grew the buffer; give that memory back.
  if (segment_.capacity() > 2 * (kRecordHeaderSize + options_.segment_size)) {
    segment_.shrink_to(kRecordHeaderSize + options_.segment_size);
  }
}

void HeapDumpWriter::finish() {
  end_object_array();
  if (pending_bytes() != 0) emit_segment();
  records_.write_heap_dump_end();
  sub_records_ = 0;
  segments_ = 0;
}

static_assert(kRootStickyClassSize == kRootUnknownSize && kRootMonitorUsedSize == kRootUnknownSize);
static_assert(kRootThreadBlockSize == kRootNativeStackSize);
static_assert(kRootJniLocalSize == kRootJavaFrameSize);

// The roots that hold only an object (UNKNOWN, STICKY CLASS, MONITOR USED).
void HeapDumpWriter::root_of_object(HeapTag tag, uint64_t object_id) {
  EncodeCursor cursor = begin_sub_record(kRootUnknownSize);
  cursor.tag(tag);
  cursor.id(object_id);
  cursor.finish();
}

// The roots of an object and a thread (NATIVE STACK, THREAD BLOCK).
void HeapDumpWriter::root_of_thread(HeapTag tag, uint64_t object_id, uint32_t thread_serial) {
  EncodeCursor cursor = begin_sub_record(kRootNativeStackSize);
  cursor.tag(tag);
  cursor.id(object_id);
  cursor.u4(thread_serial);
  cursor.finish();
}

// The roots of an object in a frame of a thread's stack trace (JNI LOCAL, JAVA FRAME).
void HeapDumpWriter::root_of_frame(HeapTag tag, uint64_t object_id, uint32_t thread_serial, int32_t frame) {
  EncodeCursor cursor = begin_sub_record(kRootJavaFrameSize);
  cursor.tag(tag);
  cursor.id(object_id);
  cursor.u4(thread_serial);
  cursor.u4(static_cast<uint32_t>(frame));
  cursor.finish();
}

// ROOT UNKNOWN: an object held for a reason the VM does not name.
void HeapDumpWriter::root_unknown(uint64_t object_id) {
  root_of_object(HeapTag::kRootUnknown, object_id);
}

// ROOT JNI GLOBAL: the object and the JNI global reference's own ID.
void HeapDumpWriter::root_jni_global(uint64_t object_id, uint64_t jni_global_ref_id) {
  EncodeCursor cursor = begin_sub_record(kRootJniGlobalSize);
  cursor.tag(HeapTag::kRootJniGlobal);
  cursor.id(object_id);
  cursor.id(jni_global_ref_id);
  cursor.finish();
}

// ROOT JNI LOCAL: a JNI local reference in a native frame of a thread.
void HeapDumpWriter::root_jni_local(uint64_t object_id, uint32_t thread_serial, int32_t frame) {
  root_of_frame(HeapTag::kRootJniLocal, object_id, thread_serial, frame);
}

// ROOT JAVA FRAME: a local variable of a Java frame.
void HeapDumpWriter::root_java_frame(uint64_t object_id, uint32_t thread_serial, int32_t frame) {
  root_of_frame(HeapTag::kRootJavaFrame, object_id, thread_serial, frame);
}

// ROOT NATIVE STACK: an object referenced from a thread's native stack.
void HeapDumpWriter::root_native_stack(uint64_t object_id, uint32_t thread_serial) {
  root_of_thread(HeapTag::kRootNativeStack, object_id, thread_serial);
}

// ROOT STICKY CLASS: a class the bootstrap loader keeps alive.
void HeapDumpWriter::root_sticky_class(uint64_t object_id) {
  root_of_object(HeapTag::kRootStickyClass, object_id);
}

// ROOT THREAD BLOCK: an object a thread block refers to.
void HeapDumpWriter::root_thread_block(uint64_t object_id, uint32_t thread_serial) {
  root_of_thread(HeapTag::kRootThreadBlock, object_id, thread_serial);
}

// ROOT MONITOR USED: an object whose monitor is held.
void HeapDumpWriter::root_monitor_used(uint64_t object_id) {
  root_of_object(HeapTag::kRootMonitorUsed, object_id);
}

// ROOT THREAD OBJECT: a live thread, naming the trace of its stack.
void HeapDumpWriter::root_thread_object(uint64_t thread_object_id, uint32_t thread_serial,
                                        uint32_t trace_serial) {
  EncodeCursor cursor = begin_sub_record(kRootThreadObjectSize);
  cursor.tag(HeapTag::kRootThreadObject);
  cursor.id(thread_object_id);
  cursor.u4(thread_serial);
  cursor.u4(trace_serial);
  cursor.finish();
}

// CLASS DUMP: the class's links, constant pool objects, statics and own instance fields.
void HeapDumpWriter::class_dump(const ClassDumpRecord& record) {
  size_t constant_count = std::min<size_t>(record.constant_pool.size(), 0xFFFF);
  size_t static_count = std::min<size_t>(record.static_fields.size(), 0xFFFF);
  size_t field_count = std::min<size_t>(record.instance_fields.size(), 0xFFFF);
  EncodeCursor cursor =
      begin_sub_record(class_dump_size(record, constant_count, static_count, field_count));
  cursor.tag(HeapTag::kClassDump);
  cursor.id(record.class_id);
  cursor.u4(record.trace_serial);
  cursor.id(record.super_id);
  cursor.id(record.loader_id);
  cursor.id(record.signers_id);
  cursor.id(record.protection_domain_id);
  cursor.id(0);  // reserved
  cursor.id(0);  // reserved
  cursor.u4(record.instance_size);
  cursor.u2(static_cast<uint16_t>(constant_count));
  for (const ConstantPoolEntry& entry : record.constant_pool.first(constant_count)) {
    cursor.u2(entry.index);
    cursor.type(entry.type);
    cursor.value(entry.type, entry.value);
  }
  cursor.u2(static_cast<uint16_t>(static_count));
  for (const StaticFieldValue& field : record.static_fields.first(static_count)) {
    cursor.id(field.name_id);
    cursor.type(field.type);
    cursor.value(field.type, field.value);
  }
  cursor.u2(static_cast<uint16_t>(field_count));
  for (const InstanceFieldDecl& field : record.instance_fields.first(field_count)) {
    cursor.id(field.name_id);
    cursor.type(field.type);
  }
  cursor.finish();
}

// INSTANCE DUMP: header, then the caller's values in place.
EncodeCursor HeapDumpWriter::begin_instance(uint64_t object_id, uint32_t trace_serial,
                                            uint64_t class_id, uint32_t byte_count) {
  assert(kInstanceDumpHeaderSize + uint64_t{byte_count} <= options_.max_sub_record_size);
  EncodeCursor header = begin_sub_record(kInstanceDumpHeaderSize + byte_count);
  header.tag(HeapTag::kInstanceDump);
  header.id(object_id);
  header.u4(trace_serial);
  header.id(class_id);
  header.u4(byte_count);
  return EncodeCursor(header.skip(byte_count), byte_count);
}

void HeapDumpWriter::instance_dump(uint64_t object_id, uint32_t trace_serial, uint64_t class_id,
                                   std::span<const uint8_t> field_values) {
  EncodeCursor values =
      begin_instance(object_id, trace_serial, class_id, static_cast<uint32_t>(field_values.size()));
  values.bytes(field_values.data(), field_values.size());
  end_instance(values);
}

// Element count an array record can carry within max_sub_record_size; warns when it cuts.
uint64_t HeapDumpWriter::array_count_that_fits(uint64_t array_id, uint64_t count,
                                               size_t header_size, size_t element_size) {
  uint64_t limit = (options_.max_sub_record_size - header_size) / element_size;
  if (count <= limit) return count;
  char text[200];
  std::snprintf(text, sizeof(text),
                "array %" PRIx64 " has %" PRIu64 " elements, more than one heap dump record can "
                "hold; writing only its first %" PRIu64,
                array_id, count, limit);
  options_.warn(text);
  return limit;
}

// OBJECT ARRAY DUMP: every element, nulls included.
void HeapDumpWriter::object_array_dump(uint64_t array_id, uint32_t trace_serial,
                                       uint64_t array_class_id, std::span<const uint64_t> elements) {
  uint64_t count =
      array_count_that_fits(array_id, elements.size(), kObjectArrayHeaderSize, kIdSize);
  size_t size = kObjectArrayHeaderSize + count * kIdSize;
  if (size > options_.segment_size) {
    uint8_t header[kObjectArrayHeaderSize];
    EncodeCursor cursor(header, sizeof(header));
    cursor.tag(HeapTag::kObjectArrayDump);
    cursor.id(array_id);
    cursor.u4(trace_serial);
    cursor.u4(static_cast<uint32_t>(count));
    cursor.id(array_class_id);
    cursor.finish();
    stream_array(header, sizeof(header), elements.data(), count, kIdSize, true);
    return;
  }
  EncodeCursor cursor = begin_sub_record(size);
  cursor.tag(HeapTag::kObjectArrayDump);
  cursor.id(array_id);
  cursor.u4(trace_serial);
  cursor.u4(static_cast<uint32_t>(count));
  cursor.id(array_class_id);
  cursor.host_elements(elements.data(), count, kIdSize);
  cursor.finish();
}

// OBJECT ARRAY DUMP element by element: the header now, the elements as the walk reports them.
void HeapDumpWriter::begin_object_array(uint64_t array_id, uint32_t trace_serial,
                                        uint64_t array_class_id, uint64_t length) {
  end_object_array();
  uint64_t count = array_count_that_fits(array_id, length, kObjectArrayHeaderSize, kIdSize);
  uint64_t size = kObjectArrayHeaderSize + count * kIdSize;
  bool own_segment = size > options_.segment_size;
  uint8_t header_bytes[kObjectArrayHeaderSize];
  EncodeCursor header = own_segment ? EncodeCursor(header_bytes, sizeof(header_bytes))
                                    : begin_sub_record(static_cast<size_t>(size));
  header.tag(HeapTag::kObjectArrayDump);
  header.id(array_id);
  header.u4(trace_serial);
  header.u4(static_cast<uint32_t>(count));
  header.id(array_class_id);
  uint8_t* elements = nullptr;
  if (own_segment) {
    header.finish();
    begin_own_segment(header_bytes, sizeof(header_bytes), size);
    scratch_.clear();
    scratch_.reserve(kStreamChunkBytes);
  } else {
    elements = header.skip(static_cast<size_t>(count * kIdSize));
    std::memset(elements, 0, static_cast<size_t>(count * kIdSize));  // the nulls
    header.finish();
  }
  array_ = {.open = true, .own_segment = own_segment, .count = count, .elements = elements};
}

// An element of an array with its own segment: the nulls before it, then its ID.
void HeapDumpWriter::stream_element(uint64_t index, uint64_t element_id) {
  stream_null_elements(index - array_.next);
  uint64_t big_endian = to_big_endian64(element_id);
  stream_bytes(&big_endian, kIdSize);
}

void HeapDumpWriter::end_object_array() {
  if (!array_.open) return;
  array_.open = false;
  if (!array_.own_segment) return;  // its nulls are in place already
  stream_null_elements(array_.count - array_.next);
  if (scratch_.size() != 0) records_.write_encoded(scratch_.data(), scratch_.size());
  scratch_.clear();
  ++segments_;
  ++sub_records_;
}

// Appends count null IDs to the open array's own segment, a chunk at a time.
void HeapDumpWriter::stream_null_elements(uint64_t count) {
  uint64_t bytes = count * kIdSize;
  while (bytes != 0) {
    size_t room = kStreamChunkBytes - scratch_.size();
    size_t step = static_cast<size_t>(std::min<uint64_t>(bytes, room));
    std::memset(scratch_.append(step).position(), 0, step);
    bytes -= step;
    if (scratch_.size() == kStreamChunkBytes) {
      records_.write_encoded(scratch_.data(), scratch_.size());
      scratch_.clear();
    }
  }
}

// Appends encoded bytes (less than a chunk) to the open array's own segment.
void HeapDumpWriter::stream_bytes(const void* bytes, size_t size) {
  if (scratch_.size() + size > kStreamChunkBytes) {
    records_.write_encoded(scratch_.data(), scratch_.size());
    scratch_.clear();
  }
  scratch_.append(size).bytes(bytes, size);
}

void HeapDumpWriter::primitive_array_dump(uint64_t array_id, uint32_t trace_serial,
                                          BasicType element_type, const void* host_elements,
                                          uint64_t count) {
  primitive_array(array_id, trace_serial, element_type, host_elements, count, true);
}

void HeapDumpWriter::primitive_array_dump_big_endian(uint64_t array_id, uint32_t trace_serial,
                                                     BasicType element_type,
                                                     const void* big_endian_elements,
                                                     uint64_t count) {
  primitive_array(array_id, trace_serial, element_type, big_endian_elements, count, false);
}

// PRIMITIVE ARRAY DUMP: element type and packed big-endian elements.
void HeapDumpWriter::primitive_array(uint64_t array_id, uint32_t trace_serial,
                                     BasicType element_type, const void* elements, uint64_t count,
                                     bool swap) {
  size_t element_size = basic_type_size(element_type);
  assert(element_type != BasicType::kObject && element_size != 0);
  count = array_count_that_fits(array_id, count, kPrimitiveArrayHeaderSize, element_size);
  uint64_t size = kPrimitiveArrayHeaderSize + count * element_size;
  uint8_t header_bytes[kPrimitiveArrayHeaderSize];
  EncodeCursor header = size > options_.segment_size
                            ? EncodeCursor(header_bytes, sizeof(header_bytes))
                            : begin_sub_record(size);
  header.tag(HeapTag::kPrimitiveArrayDump);
  header.id(array_id);
  header.u4(trace_serial);
  header.u4(static_cast<uint32_t>(count));
  header.type(element_type);
  if (size > options_.segment_size) {
    header.finish();
    stream_array(header_bytes, sizeof(header_bytes), elements, count, element_size, swap);
    return;
  }
  if (swap) {
    header.host_elements(elements, count, element_size);
  } else {
    header.bytes(elements, count * element_size);
  }
  header.finish();
}

// An array larger than a segment: the pending segment goes first, then a segment of exactly this
// array, whose elements go to the stream in chunks instead of being staged whole.
void HeapDumpWriter::stream_array(const uint8_t* sub_record_header, size_t header_size,
                                  const void* elements, uint64_t count, size_t element_size,
                                  bool swap) {
  begin_own_segment(sub_record_header, header_size, header_size + count * element_size);
  const auto* from = static_cast<const uint8_t*>(elements);
  if (!swap || element_size == 1) {
    records_.write_encoded(from, count * element_size);
  } else {
    size_t chunk_elements = kStreamChunkBytes / element_size;
    scratch_.reserve(kStreamChunkBytes);
    for (uint64_t first = 0; first < count; first += chunk_elements) {
      size_t chunk = static_cast<size_t>(std::min<uint64_t>(chunk_elements, count - first));
      copy_host_to_big_endian(scratch_.data(), from + first * element_size, chunk, element_size);
      records_.write_encoded(scratch_.data(), chunk * element_size);
    }
  }
  ++segments_;
  ++sub_records_;
}

// Sends the pending segment, then the header of a segment holding exactly one sub-record of
// body_size bytes and that sub-record's header; the caller sends the rest of its body.
void HeapDumpWriter::begin_own_segment(const uint8_t* sub_record_header, size_t header_size,
                                       uint64_t body_size) {
  if (array_.open) end_object_array();
  if (pending_bytes() != 0) emit_segment();
  assert(body_size <= kMaxU4 && header_size <= kObjectArrayHeaderSize);
  uint8_t preamble[kMaxArrayPreambleSize];
  EncodeCursor cursor(preamble, kRecordHeaderSize + header_size);
  cursor.tag(RecordTag::kHeapDumpSegment);
  cursor.u4(records_.time_field());
  cursor.u4(static_cast<uint32_t>(body_size));
  cursor.bytes(sub_record_header, header_size);
  cursor.finish();
  records_.write_encoded(preamble, kRecordHeaderSize + header_size);
}

}  // namespace fasthprof
