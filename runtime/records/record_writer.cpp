#include "records/record_writer.h"

#include <algorithm>
#include <bit>
#include <utility>

#include "base/clock.h"

namespace fasthprof {
namespace {

// Rows of a long record are encoded in chunks so that the buffer stays near kFlushThreshold.
constexpr size_t kRowsPerChunk = 1024;

uint64_t steady_micros() { return monotonic_ns() / 1000u; }

}  // namespace

RecordWriter::RecordWriter(OutputStream& out, uint64_t header_millis, ElapsedMicros elapsed_micros)
    : out_(out), header_millis_(header_millis), elapsed_micros_(std::move(elapsed_micros)) {
  if (!elapsed_micros_) {
    uint64_t start = steady_micros();
    elapsed_micros_ = [start] { return steady_micros() - start; };
  }
  buffer_.reserve(kFlushThreshold + 4096);
}

RecordWriter::~RecordWriter() { flush(); }

uint32_t RecordWriter::time_field() const { return clamp_u4(elapsed_micros_()); }

void RecordWriter::flush() {
  if (buffer_.size() == 0) return;
  out_.write(buffer_.data(), buffer_.size());
  flushed_bytes_ += buffer_.size();
  buffer_.clear();
}

void RecordWriter::flush_if_full() {
  if (buffer_.size() >= kFlushThreshold) flush();
}

void RecordWriter::write_encoded(const uint8_t* data, size_t size) {
  flush();
  out_.write(data, size);
  flushed_bytes_ += size;
}

EncodeCursor RecordWriter::open_record(RecordTag tag, uint32_t body_size, size_t bytes_to_reserve) {
  EncodeCursor cursor = buffer_.append(kRecordHeaderSize + bytes_to_reserve);
  cursor.tag(tag);
  cursor.u4(time_field());
  cursor.u4(body_size);
#ifndef NDEBUG
  record_end_ = position() - bytes_to_reserve + body_size;
#endif
  return cursor;
}

void RecordWriter::close_record() {
#ifndef NDEBUG
  assert(position() == record_end_ && "record body differs from its declared length");
#endif
  flush_if_full();
}

void RecordWriter::write_file_header() {
  EncodeCursor cursor = buffer_.append(kFileHeaderSize);
  cursor.bytes(kBinaryHeaderVersion, sizeof(kBinaryHeaderVersion));  // includes the NUL
  cursor.u4(kIdSize);
  cursor.u8(header_millis_);
  cursor.finish();
}

// UTF8: the string's ID, then its bytes without a terminator.
void RecordWriter::write_utf8(uint64_t id, std::string_view text) {
  size_t length = std::min<size_t>(text.size(), kMaxU4 - kIdSize);
  uint32_t body_size = static_cast<uint32_t>(kIdSize + length);
  EncodeCursor cursor = open_record(RecordTag::kUtf8, body_size, body_size);
  cursor.id(id);
  cursor.bytes(text.data(), length);
  cursor.finish();
  close_record();
}

// LOAD CLASS: serial, class object, trace of the load, Java-form name.
void RecordWriter::write_load_class(uint32_t class_serial, uint64_t class_object_id,
                                    uint32_t trace_serial, uint64_t name_id) {
  EncodeCursor cursor = open_record(RecordTag::kLoadClass, kLoadClassBodySize, kLoadClassBodySize);
  cursor.u4(class_serial);
  cursor.id(class_object_id);
  cursor.u4(trace_serial);
  cursor.id(name_id);
  cursor.finish();
  close_record();
}

// UNLOAD CLASS: serial.
void RecordWriter::write_unload_class(uint32_t class_serial) {
  EncodeCursor cursor =
      open_record(RecordTag::kUnloadClass, kUnloadClassBodySize, kUnloadClassBodySize);
  cursor.u4(class_serial);
  cursor.finish();
  close_record();
}

// STACK FRAME: one (method, location).
void RecordWriter::write_stack_frame(const StackFrameRecord& frame) {
  EncodeCursor cursor =
      open_record(RecordTag::kStackFrame, kStackFrameBodySize, kStackFrameBodySize);
  cursor.id(frame.frame_id);
  cursor.id(frame.method_name_id);
  cursor.id(frame.method_signature_id);
  cursor.id(frame.source_file_id);
  cursor.u4(frame.class_serial);
  cursor.u4(static_cast<uint32_t>(frame.line));
  cursor.finish();
  close_record();
}

// STACK TRACE: serial, thread, frame IDs top first.
void RecordWriter::write_stack_trace(uint32_t trace_serial, uint32_t thread_serial,
                                     std::span<const uint64_t> frame_ids) {
  size_t count = std::min<size_t>(frame_ids.size(), (kMaxU4 - kStackTraceBodyBaseSize) / kIdSize);
  uint32_t body_size = static_cast<uint32_t>(kStackTraceBodyBaseSize + count * kIdSize);
  EncodeCursor cursor = open_record(RecordTag::kStackTrace, body_size, body_size);
  cursor.u4(trace_serial);
  cursor.u4(thread_serial);
  cursor.u4(static_cast<uint32_t>(count));
  cursor.host_elements(frame_ids.data(), count, kIdSize);
  cursor.finish();
  close_record();
}

// ALLOC SITES: totals, then one row per site, written in chunks.
void RecordWriter::write_alloc_sites(const AllocSitesHeader& header,
                                     std::span<const AllocSiteRow> sites) {
  size_t count = std::min<size_t>(sites.size(), (kMaxU4 - kAllocSitesBodyBaseSize) / kAllocSiteSize);
  uint32_t body_size = static_cast<uint32_t>(kAllocSitesBodyBaseSize + count * kAllocSiteSize);
  EncodeCursor cursor = open_record(RecordTag::kAllocSites, body_size, kAllocSitesBodyBaseSize);
  cursor.u2(header.flags);
  cursor.u4(std::bit_cast<uint32_t>(header.cutoff));
  cursor.u4(clamp_u4(header.total_live_bytes));
  cursor.u4(clamp_u4(header.total_live_instances));
  cursor.u8(header.total_alloc_bytes);
  cursor.u8(header.total_alloc_instances);
  cursor.u4(static_cast<uint32_t>(count));
  cursor.finish();
  for (size_t first = 0; first < count; first += kRowsPerChunk) {
    size_t chunk = std::min(kRowsPerChunk, count - first);
    EncodeCursor rows = buffer_.append(chunk * kAllocSiteSize);
    for (const AllocSiteRow& site : sites.subspan(first, chunk)) {
      rows.u1(site.array_kind);
      rows.u4(site.class_serial);
      rows.u4(site.trace_serial);
      rows.u4(clamp_u4(site.live_bytes));
      rows.u4(clamp_u4(site.live_instances));
      rows.u4(clamp_u4(site.alloc_bytes));
      rows.u4(clamp_u4(site.alloc_instances));
    }
    rows.finish();
    flush_if_full();
  }
  close_record();
}

// HEAP SUMMARY: live totals (u4) and allocation totals (u8).
void RecordWriter::write_heap_summary(uint64_t live_bytes, uint64_t live_instances,
                                      uint64_t alloc_bytes, uint64_t alloc_instances) {
  EncodeCursor cursor =
      open_record(RecordTag::kHeapSummary, kHeapSummaryBodySize, kHeapSummaryBodySize);
  cursor.u4(clamp_u4(live_bytes));
  cursor.u4(clamp_u4(live_instances));
  cursor.u8(alloc_bytes);
  cursor.u8(alloc_instances);
  cursor.finish();
  close_record();
}

// START THREAD: serial, thread object, trace, name IDs.
void RecordWriter::write_start_thread(const StartThreadRecord& thread) {
  EncodeCursor cursor =
      open_record(RecordTag::kStartThread, kStartThreadBodySize, kStartThreadBodySize);
  cursor.u4(thread.thread_serial);
  cursor.id(thread.thread_object_id);
  cursor.u4(thread.trace_serial);
  cursor.id(thread.name_id);
  cursor.id(thread.group_name_id);
  cursor.id(thread.parent_group_name_id);
  cursor.finish();
  close_record();
}

// END THREAD: serial.
void RecordWriter::write_end_thread(uint32_t thread_serial) {
  EncodeCursor cursor = open_record(RecordTag::kEndThread, kEndThreadBodySize, kEndThreadBodySize);
  cursor.u4(thread_serial);
  cursor.finish();
  close_record();
}

// CPU SAMPLES: total, then (count, trace) rows, written in chunks.
void RecordWriter::write_cpu_samples(uint64_t total_samples, std::span<const CpuSampleRow> rows) {
  size_t count = std::min<size_t>(rows.size(), (kMaxU4 - kCpuSamplesBodyBaseSize) / kCpuSampleSize);
  uint32_t body_size = static_cast<uint32_t>(kCpuSamplesBodyBaseSize + count * kCpuSampleSize);
  EncodeCursor cursor = open_record(RecordTag::kCpuSamples, body_size, kCpuSamplesBodyBaseSize);
  cursor.u4(clamp_u4(total_samples));
  cursor.u4(static_cast<uint32_t>(count));
  cursor.finish();
  for (size_t first = 0; first < count; first += kRowsPerChunk) {
    size_t chunk = std::min(kRowsPerChunk, count - first);
    EncodeCursor encoded = buffer_.append(chunk * kCpuSampleSize);
    for (const CpuSampleRow& row : rows.subspan(first, chunk)) {
      encoded.u4(clamp_u4(row.count));
      encoded.u4(row.trace_serial);
    }
    encoded.finish();
    flush_if_full();
  }
  close_record();
}

// CONTROL SETTINGS: flags and stack depth.
void RecordWriter::write_control_settings(uint32_t flags, uint32_t stack_depth) {
  EncodeCursor cursor =
      open_record(RecordTag::kControlSettings, kControlSettingsBodySize, kControlSettingsBodySize);
  cursor.u4(flags);
  cursor.u2(static_cast<uint16_t>(std::min<uint32_t>(stack_depth, 0xFFFF)));
  cursor.finish();
  close_record();
}

// HEAP DUMP: one record around encoded sub-records; the body goes out without a copy.
void RecordWriter::write_heap_dump(std::span<const uint8_t> sub_records) {
  assert(sub_records.size() <= kMaxU4);
  uint32_t body_size = static_cast<uint32_t>(sub_records.size());
  EncodeCursor cursor = open_record(RecordTag::kHeapDump, body_size, 0);
  cursor.finish();
  write_encoded(sub_records.data(), sub_records.size());
  close_record();
}

// HEAP DUMP END: empty body, closes one dump's segments.
void RecordWriter::write_heap_dump_end() {
  EncodeCursor cursor = open_record(RecordTag::kHeapDumpEnd, 0, 0);
  cursor.finish();
  close_record();
}

}  // namespace fasthprof
