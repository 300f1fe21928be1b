// HEAP DUMP SEGMENT (0x1C) records and their sub-records. The sub-record table:
//
//   tag   sub-record           fields (IDs are 8 bytes)                                   size
//   0xFF  ROOT UNKNOWN         id object                                                  9
//   0x01  ROOT JNI GLOBAL      id object, id JNI global reference                         17
//   0x02  ROOT JNI LOCAL       id object, u4 thread serial, u4 frame (-1: none)           17
//   0x03  ROOT JAVA FRAME      id object, u4 thread serial, u4 frame (-1: none)           17
//   0x04  ROOT NATIVE STACK    id object, u4 thread serial                                13
//   0x05  ROOT STICKY CLASS    id object                                                  9
//   0x06  ROOT THREAD BLOCK    id object, u4 thread serial                                13
//   0x07  ROOT MONITOR USED    id object                                                  9
//   0x08  ROOT THREAD OBJECT   id thread object, u4 thread serial, u4 trace serial        17
//   0x20  CLASS DUMP           id class, u4 trace, id super, id loader, id signers,
//                              id protection domain, id 0, id 0, u4 instance size,
//                              u2 n, n x (u2 index, u1 type, value)      constant pool
//                              u2 n, n x (id name, u1 type, value)       static fields
//                              u2 n, n x (id name, u1 type)              own instance fields  56+...
//   0x21  INSTANCE DUMP        id object, u4 trace, id class, u4 n, n bytes of values     25+n
//   0x22  OBJECT ARRAY DUMP    id array, u4 trace, u4 n, id array class, n x id           25+8n
//   0x23  PRIMITIVE ARRAY DUMP id array, u4 trace, u4 n, u1 element type, packed elements 18+n*size
//
// Segments: sub-records collect in memory behind a 9-byte placeholder; when the next sub-record
// would push the body past segment_size, the segment's header (tag, time, exact length) is filled
// in and the whole segment goes to the RecordWriter's stream in one write (sockets cannot seek).
// So a segment is never empty, a sub-record never spans two segments, and a sub-record larger than
// segment_size gets a segment of its own. Arrays larger than a segment stream straight from their
// elements into such an exactly sized segment, without staging a copy. An array whose record would
// not fit a u4 length is truncated, with a warning. finish() writes the last segment and one
// HEAP DUMP END. A dump with no sub-record at all is just a HEAP DUMP END.
//
// Object arrays can also be written element by element (begin_object_array(), the walk's order):
// the header carries the length given up front, so the segment length is exact before the first
// element is known. A record that fits a segment is filled in place in the pending segment; a
// larger one opens its own segment at once and its elements pass through a 256 KiB chunk. Either
// way the writer holds at most about one segment, whatever the array's length.
//
// Segments go out through RecordWriter::write_encoded(), which flushes the RecordWriter's own
// buffer first: records written before a sub-record always precede its segment in the stream.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <string_view>

#include "base/byte_encoder.h"
#include "base/hprof_format.h"
#include "records/record_writer.h"

namespace fasthprof {

inline constexpr size_t kRootUnknownSize = 1 + kIdSize;
inline constexpr size_t kRootJniGlobalSize = 1 + 2 * kIdSize;
inline constexpr size_t kRootJniLocalSize = 1 + kIdSize + 4 + 4;
inline constexpr size_t kRootJavaFrameSize = 1 + kIdSize + 4 + 4;
inline constexpr size_t kRootNativeStackSize = 1 + kIdSize + 4;
inline constexpr size_t kRootStickyClassSize = 1 + kIdSize;
inline constexpr size_t kRootThreadBlockSize = 1 + kIdSize + 4;
inline constexpr size_t kRootMonitorUsedSize = 1 + kIdSize;
inline constexpr size_t kRootThreadObjectSize = 1 + kIdSize + 4 + 4;
inline constexpr size_t kClassDumpBaseSize = 1 + kIdSize + 4 + 6 * kIdSize + 4 + 2 + 2 + 2;
inline constexpr size_t kInstanceDumpHeaderSize = 1 + kIdSize + 4 + kIdSize + 4;
inline constexpr size_t kObjectArrayHeaderSize = 1 + kIdSize + 4 + 4 + kIdSize;
inline constexpr size_t kPrimitiveArrayHeaderSize = 1 + kIdSize + 4 + 4 + 1;

// A constant-pool entry of a CLASS DUMP; value holds an ID or a primitive's bits.
struct ConstantPoolEntry {
  uint16_t index = 0;
  BasicType type = BasicType::kObject;
  uint64_t value = 0;
};

// A static field of a CLASS DUMP with its value (an ID, or a primitive's bits: float and double
// as their IEEE bits, boolean as 0 or 1).
struct StaticFieldValue {
  uint64_t name_id = 0;
  BasicType type = BasicType::kObject;
  uint64_t value = 0;
};

// An instance field declared by the class itself (not by its supers).
struct InstanceFieldDecl {
  uint64_t name_id = 0;
  BasicType type = BasicType::kObject;
};

struct ClassDumpRecord {
  uint64_t class_id = 0;
  uint32_t trace_serial = 0;
  uint64_t super_id = 0;
  uint64_t loader_id = 0;
  uint64_t signers_id = 0;
  uint64_t protection_domain_id = 0;
  uint32_t instance_size = 0;  // bytes of INSTANCE DUMP values, inherited fields included
  std::span<const ConstantPoolEntry> constant_pool;
  std::span<const StaticFieldValue> static_fields;
  std::span<const InstanceFieldDecl> instance_fields;
};

struct HeapDumpWriterOptions {
  // Receives one line of warning text (no newline). Empty: print "fasthprof: <text>" on stderr.
  using WarningCallback = std::function<void(std::string_view)>;

  static constexpr size_t kDefaultSegmentSize = 1 << 20;

  size_t segment_size = kDefaultSegmentSize;  // body bytes that close a segment
  uint64_t max_sub_record_size = kMaxU4;      // tests lower it to reach array truncation
  WarningCallback warn;
};

// Builds the segments of one heap dump after another. One thread at a time; the writer is reusable:
// after finish() the next sub-record starts a new dump.
class HeapDumpWriter {
 public:
  // Allocates the segment buffer. records must outlive this writer.
  explicit HeapDumpWriter(RecordWriter& records, HeapDumpWriterOptions options = {});
  ~HeapDumpWriter();
  HeapDumpWriter(const HeapDumpWriter&) = delete;
  HeapDumpWriter& operator=(const HeapDumpWriter&) = delete;

  void root_unknown(uint64_t object_id);
  void root_jni_global(uint64_t object_id, uint64_t jni_global_ref_id);
  void root_jni_local(uint64_t object_id, uint32_t thread_serial, int32_t frame);
  void root_java_frame(uint64_t object_id, uint32_t thread_serial, int32_t frame);
  void root_native_stack(uint64_t object_id, uint32_t thread_serial);
  void root_sticky_class(uint64_t object_id);
  void root_thread_block(uint64_t object_id, uint32_t thread_serial);
  void root_monitor_used(uint64_t object_id);
  void root_thread_object(uint64_t thread_object_id, uint32_t thread_serial, uint32_t trace_serial);

  // Counts above 65535 are cut to 65535 (the class file format cannot produce more).
  void class_dump(const ClassDumpRecord& record);

  // INSTANCE DUMP with values already encoded big-endian (own class first, then supers).
  void instance_dump(uint64_t object_id, uint32_t trace_serial, uint64_t class_id,
                     std::span<const uint8_t> field_values);

  // INSTANCE DUMP written in place: returns a cursor over exactly byte_count bytes inside the
  // segment, for the caller to write the values with u1/u2/u4/u8/id, then end_instance(cursor).
  // The cursor is valid until the next call on this writer. byte_count must leave the record within
  // max_sub_record_size.
  EncodeCursor begin_instance(uint64_t object_id, uint32_t trace_serial, uint64_t class_id,
                              uint32_t byte_count);
  // Debug builds: asserts that the values filled exactly the declared byte_count.
  void end_instance(const EncodeCursor& values) { values.finish(); }

  // OBJECT ARRAY DUMP; elements are IDs (0 for null).
  void object_array_dump(uint64_t array_id, uint32_t trace_serial, uint64_t array_class_id,
                         std::span<const uint64_t> elements);

  // OBJECT ARRAY DUMP streamed: writes the header for length elements now (fewer, with a warning,
  // when the record would pass max_sub_record_size), then takes the non-null elements in
  // ascending index order through object_array_element(); end_object_array() writes null for
  // every element not given. Another sub-record or finish() ends the open array first. Allocates
  // nothing after the writer's first large array; buffers at most one segment.
  void begin_object_array(uint64_t array_id, uint32_t trace_serial, uint64_t array_class_id,
                          uint64_t length);
  // Element index of the open array; the elements between the previous one and index are null.
  // Returns false and writes nothing when no array is open, index is not above the previous
  // element's (HotSpot's walk never does that), or index is at or past the written length (an
  // array truncated to max_sub_record_size). Does not allocate.
  bool object_array_element(uint64_t index, uint64_t element_id) {
    if (!array_.open || index < array_.next || index >= array_.count) return false;
    if (array_.own_segment) {
      stream_element(index, element_id);
    } else {
      // In place in the pending segment, whose element area begin_object_array() zeroed.
      uint64_t big_endian = to_big_endian64(element_id);
      std::memcpy(array_.elements + index * kIdSize, &big_endian, kIdSize);
    }
    array_.next = index + 1;
    return true;
  }
  // Fills the open array's remaining elements with null and completes its record; no-op if none.
  void end_object_array();

  // PRIMITIVE ARRAY DUMP from count elements in host byte order (swapped while copied).
  void primitive_array_dump(uint64_t array_id, uint32_t trace_serial, BasicType element_type,
                            const void* host_elements, uint64_t count);
  // PRIMITIVE ARRAY DUMP from count elements already in big-endian order.
  void primitive_array_dump_big_endian(uint64_t array_id, uint32_t trace_serial,
                                       BasicType element_type, const void* big_endian_elements,
                                       uint64_t count);

  // Writes the pending segment, if any, and one HEAP DUMP END. Then the writer is ready for the
  // next dump.
  void finish();

  uint64_t sub_record_count() const { return sub_records_; }    // in this dump
  uint64_t segment_count() const { return segments_; }          // in this dump, pending excluded
  size_t pending_bytes() const { return segment_.size() - kRecordHeaderSize; }

 private:
  void root_of_object(HeapTag tag, uint64_t object_id);
  void root_of_thread(HeapTag tag, uint64_t object_id, uint32_t thread_serial);
  void root_of_frame(HeapTag tag, uint64_t object_id, uint32_t thread_serial, int32_t frame);
  EncodeCursor begin_sub_record(size_t size);
  void emit_segment();
  void begin_own_segment(const uint8_t* sub_record_header, size_t header_size, uint64_t body_size);
  void stream_element(uint64_t index, uint64_t element_id);
  void stream_null_elements(uint64_t count);
  void stream_bytes(const void* bytes, size_t size);
  uint64_t array_count_that_fits(uint64_t array_id, uint64_t count, size_t header_size,
                                 size_t element_size);
  void primitive_array(uint64_t array_id, uint32_t trace_serial, BasicType element_type,
                       const void* elements, uint64_t count, bool swap);
  void stream_array(const uint8_t* sub_record_header, size_t header_size, const void* elements,
                    uint64_t count, size_t element_size, bool swap);

  RecordWriter& records_;
  HeapDumpWriterOptions options_;
  ByteBuffer segment_;  // a 9-byte placeholder for the segment header, then sub-records
  ByteBuffer scratch_;  // element chunks of streamed arrays

  // The object array begun by begin_object_array() and not yet ended.
  struct OpenArray {
    bool open = false;
    bool own_segment = false;     // larger than a segment: its elements go out through scratch_
    uint64_t count = 0;           // elements its header declares
    uint64_t next = 0;            // elements written so far
    uint8_t* elements = nullptr;  // in the pending segment: where element 0 goes
  };
  OpenArray array_;
  uint64_t sub_records_ = 0;
  uint64_t segments_ = 0;
};

}  // namespace fasthprof
