// Top-level HPROF binary records (format=b), one emitter per record. The record table:
//
//   tag   record            body (IDs are 8 bytes)                                         size
//   0x01  UTF8              id, modified-UTF-8 bytes (no NUL)                              8+len
//   0x02  LOAD CLASS        u4 class serial, id class object, u4 trace serial, id name     24
//   0x03  UNLOAD CLASS      u4 class serial                                                4
//   0x04  STACK FRAME       id frame, id method, id signature, id source file,
//                           u4 class serial, i4 line                                       40
//   0x05  STACK TRACE       u4 trace serial, u4 thread serial, u4 n, n x id frame          12+8n
//   0x06  ALLOC SITES       u2 flags, u4 cutoff (IEEE float bits), u4 live bytes,
//                           u4 live instances, u8 alloc bytes, u8 alloc instances, u4 n,
//                           n x (u1 array kind, u4 class serial, u4 trace serial,
//                                u4 live bytes, u4 live instances, u4 alloc bytes,
//                                u4 alloc instances)                                       34+25n
//   0x07  HEAP SUMMARY      u4 live bytes, u4 live instances, u8 alloc bytes, u8 alloc inst 24
//   0x0A  START THREAD      u4 thread serial, id thread object, u4 trace serial,
//                           id name, id group name, id parent group name                   40
//   0x0B  END THREAD        u4 thread serial                                               4
//   0x0C  HEAP DUMP         sub-records (see heap_dump_writer.h)                           any
//   0x0D  CPU SAMPLES       u4 total, u4 n, n x (u4 count, u4 trace serial)                8+8n
//   0x0E  CONTROL SETTINGS  u4 flags, u2 stack depth                                       6
//   0x1C  HEAP DUMP SEGMENT sub-records, written by HeapDumpWriter                         any
//   0x2C  HEAP DUMP END     (empty)                                                        0
//
// 64-bit counters are clamped to 0xFFFFFFFF where the field is a u4 (docs/decisions.md). Every emitter
// declares its body size before writing; debug builds assert that exactly that many bytes follow.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string_view>

#include "base/byte_encoder.h"
#include "base/hprof_format.h"
#include "sink/output_stream.h"

namespace fasthprof {

inline constexpr size_t kFileHeaderSize = sizeof(kBinaryHeaderVersion) + 4 + 8;
inline constexpr uint32_t kLoadClassBodySize = 4 + kIdSize + 4 + kIdSize;
inline constexpr uint32_t kUnloadClassBodySize = 4;
inline constexpr uint32_t kStackFrameBodySize = 4 * kIdSize + 4 + 4;
inline constexpr uint32_t kStackTraceBodyBaseSize = 4 + 4 + 4;
inline constexpr uint32_t kAllocSitesBodyBaseSize = 2 + 4 + 4 + 4 + 8 + 8 + 4;
inline constexpr uint32_t kAllocSiteSize = 1 + 6 * 4;
inline constexpr uint32_t kHeapSummaryBodySize = 4 + 4 + 8 + 8;
inline constexpr uint32_t kStartThreadBodySize = 4 + kIdSize + 4 + 3 * kIdSize;
inline constexpr uint32_t kEndThreadBodySize = 4;
inline constexpr uint32_t kCpuSamplesBodyBaseSize = 4 + 4;
inline constexpr uint32_t kCpuSampleSize = 4 + 4;
inline constexpr uint32_t kControlSettingsBodySize = 4 + 2;

// STACK FRAME (0x04).
struct StackFrameRecord {
  uint64_t frame_id = 0;
  uint64_t method_name_id = 0;
  uint64_t method_signature_id = 0;
  uint64_t source_file_id = 0;  // 0 when the class has no source file attribute
  uint32_t class_serial = 0;
  int32_t line = -1;  // -1 unknown; 0 no line information
};

// START THREAD (0x0A).
struct StartThreadRecord {
  uint32_t thread_serial = 0;
  uint64_t thread_object_id = 0;
  uint32_t trace_serial = 0;
  uint64_t name_id = 0;
  uint64_t group_name_id = 0;
  uint64_t parent_group_name_id = 0;
};

// The fixed part of ALLOC SITES (0x06).
struct AllocSitesHeader {
  uint16_t flags = 0;  // kSitesIncremental | kSitesSortedByAllocation | kSitesForceGc
  // Written as its IEEE-754 single-precision bits, as the format specifies ("u4 cutoff ratio
  // (floating point)"); the original agent wrote the low half of a double by accident
  // (0.0001 -> EB 1C 43 2D), fasthprof writes 38 D1 B7 17 (docs/decisions.md).
  float cutoff = 0;
  uint64_t total_live_bytes = 0;
  uint64_t total_live_instances = 0;
  uint64_t total_alloc_bytes = 0;
  uint64_t total_alloc_instances = 0;
};

// One site row of ALLOC SITES.
struct AllocSiteRow {
  uint8_t array_kind = 0;  // 0 not an array, 2 object array, 4-11 primitive element type
  uint32_t class_serial = 0;
  uint32_t trace_serial = 0;
  uint64_t live_bytes = 0;
  uint64_t live_instances = 0;
  uint64_t alloc_bytes = 0;
  uint64_t alloc_instances = 0;
};

// One row of CPU SAMPLES.
struct CpuSampleRow {
  uint64_t count = 0;
  uint32_t trace_serial = 0;
};

// Writes the header and top-level records of one binary HPROF stream through an internal buffer.
// The buffer goes to the OutputStream when it passes kFlushThreshold, on flush(), before
// write_encoded() and on destruction. A HeapDumpWriter emits its segments through this writer
// (write_encoded), so records and segments reach the stream in the order they were written.
// Emitters never fail: delivery errors are the OutputStream's (sticky, reported once). They
// allocate only when one record outgrows the buffer. One thread at a time.
class RecordWriter {
 public:
  // Returns the microseconds elapsed since the header's time stamp.
  using ElapsedMicros = std::function<uint64_t()>;

  static constexpr size_t kFlushThreshold = 64 * 1024;

  // header_millis is the header's time stamp (milliseconds since the epoch). elapsed_micros gives
  // each record's time field; by default a monotonic clock started by this constructor. The time
  // field is a u4 and is clamped at 0xFFFFFFFF (about 71 minutes) rather than wrapping.
  // Allocates the buffer.
  RecordWriter(OutputStream& out, uint64_t header_millis, ElapsedMicros elapsed_micros = {});
  ~RecordWriter();
  RecordWriter(const RecordWriter&) = delete;
  RecordWriter& operator=(const RecordWriter&) = delete;

  // "JAVA PROFILE 1.0.2" NUL, u4 identifier size 8, u8 header_millis. Once, first.
  void write_file_header();

  void write_utf8(uint64_t id, std::string_view text);  // text longer than a u4 length is cut
  void write_load_class(uint32_t class_serial, uint64_t class_object_id, uint32_t trace_serial,
                        uint64_t name_id);
  void write_unload_class(uint32_t class_serial);
  void write_stack_frame(const StackFrameRecord& frame);
  void write_stack_trace(uint32_t trace_serial, uint32_t thread_serial,
                         std::span<const uint64_t> frame_ids);
  // Rows beyond what a u4 record length can hold are dropped (rows come sorted, largest first).
  void write_alloc_sites(const AllocSitesHeader& header, std::span<const AllocSiteRow> sites);
  void write_heap_summary(uint64_t live_bytes, uint64_t live_instances, uint64_t alloc_bytes,
                          uint64_t alloc_instances);
  void write_start_thread(const StartThreadRecord& thread);
  void write_end_thread(uint32_t thread_serial);
  void write_cpu_samples(uint64_t total_samples, std::span<const CpuSampleRow> rows);
  void write_control_settings(uint32_t flags, uint32_t stack_depth);  // depth clamped to u2
  // A whole HEAP DUMP (0x0C) record around already encoded sub-records. fasthprof writes
  // segments (HeapDumpWriter); this exists for readers' tests and 1.0.1-style output.
  void write_heap_dump(std::span<const uint8_t> sub_records);
  void write_heap_dump_end();

  // Writes already framed records (a HEAP DUMP SEGMENT built by HeapDumpWriter) straight to the
  // stream after flushing the buffer: no copy. Does not allocate.
  void write_encoded(const uint8_t* data, size_t size);

  // The time field a record written now carries.
  uint32_t time_field() const;

  // Hands the buffered bytes to the stream.
  void flush();

  // Bytes written so far, buffered ones included.
  uint64_t position() const { return flushed_bytes_ + buffer_.size(); }

 private:
  EncodeCursor open_record(RecordTag tag, uint32_t body_size, size_t bytes_to_reserve);
  void close_record();
  void flush_if_full();

  OutputStream& out_;
  uint64_t header_millis_;
  ElapsedMicros elapsed_micros_;
  ByteBuffer buffer_;
  uint64_t flushed_bytes_ = 0;
#ifndef NDEBUG
  uint64_t record_end_ = 0;
#endif
};

}  // namespace fasthprof
