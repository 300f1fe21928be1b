// The lines of the text output (format=a), column for column as the original agent printed them
// (docs/compatibility.md §2), with docs/decisions.md's fixes: no line is ever cut at 1023 bytes, line numbers
// above 65535 print as they are, 64-bit counts print in full, MONITOR TIME totals are milliseconds.
//
// Names arrive in their printed form: class names already in Java form (java_names.h), except where
// the original printed the raw signature (the monitor lines). IDs print as lowercase hex without
// "0x"; dates as ctime() prints them, in local time, through an injectable formatter.
//
// Lines that the original printed only for non-zero values (object fields, array elements, class
// links, statics, constant pool entries) are skipped by these functions when the value is 0.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "base/thread_state.h"
#include "sink/output_stream.h"

namespace fasthprof {

// ctime()'s form of a broken-down time: "Wed Jan 14 15:33:27 2015\n" (English names, day padded
// with a space). Allocates.
std::string ctime_text(const std::tm& time);
// ctime_text of t in local time. Allocates; any thread (localtime_r).
std::string local_ctime_text(time_t t);

// The MONITOR DUMP status text of a JVMTI thread state: optional "S|", "intr|", "native|", then
// ZO, NS, SL, MW, CW, R or UN.
std::string thread_status_text(uint32_t jvmti_thread_state);

// One frame of a TRACE. Empty method_name prints <Unknown Method>, empty source_file
// <Unknown Source>; line -1 (or any other negative but -2/-3) prints "Unknown line", -2
// "Compiled method", -3 "Native method".
struct TextFrame {
  std::string_view class_name;
  std::string_view method_name;
  std::string_view source_file;
  int32_t line = -1;
};

struct OldProfMethod;  // records/report_rows.h

enum class CpuSection { kSamples, kTimes };  // "CPU SAMPLES" / "CPU TIME (ms)"

// Writes text records to an OutputStream through an internal buffer, flushed when it passes
// kFlushThreshold, on flush() and on destruction. One thread at a time.
class TextWriter {
 public:
  using DateFormatter = std::function<std::string(time_t)>;

  static constexpr size_t kFlushThreshold = 64 * 1024;

  // format_date turns a time into ctime()'s text, newline included; by default local_ctime_text.
  explicit TextWriter(OutputStream& out, DateFormatter format_date = {});
  ~TextWriter();
  TextWriter(const TextWriter&) = delete;
  TextWriter& operator=(const TextWriter&) = delete;

  void flush();

  // "JAVA PROFILE 1.0.1, created <date>", an empty line, the explanation of the record kinds, and
  // "\n--------\n\n".
  // no_live: heap=sites with live=n, said below the explanation.
  void file_header(time_t created, bool no_live = false);

  // Streamed lines.
  void thread_start(uint64_t thread_object_id, uint32_t thread_serial, std::string_view name,
                    std::string_view group);
  void thread_end(uint32_t thread_serial);
  void monitor_wait(std::string_view monitor_signature, int64_t timeout_ms, uint32_t thread_serial);
  void monitor_waited(std::string_view monitor_signature, int64_t waited_ms,
                      uint32_t thread_serial);
  void monitor_sleep(int64_t timeout_ms, uint32_t thread_serial);
  void monitor_exit(std::string_view monitor_signature, uint32_t thread_serial);

  // TRACE: the header, then trace_empty() or one trace_frame() per frame. thread_serial 0 omits
  // "(thread=N)"; an empty phase omits "(from <phase> phase of JVM)".
  void trace_header(uint32_t trace_serial, uint32_t thread_serial = 0,
                    std::string_view phase = {});
  void trace_empty();
  void trace_frame(const TextFrame& frame);

  // HEAP DUMP.
  void heap_dump_begin(uint64_t objects, uint64_t bytes, time_t when);
  void heap_dump_end();
  void root_jni_global(uint64_t object_id, uint64_t reference_serial, uint32_t trace_serial);
  void root_system_class(uint64_t object_id, std::string_view class_name);
  void root_monitor(uint64_t object_id);
  void root_thread(uint64_t object_id, uint32_t thread_serial, uint32_t trace_serial);
  void root_thread_block(uint64_t object_id, uint32_t thread_serial);
  void root_java_frame(uint64_t object_id, uint32_t thread_serial, int32_t frame);
  void root_jni_local(uint64_t object_id, uint32_t thread_serial, int32_t frame);
  void root_native_stack(uint64_t object_id, uint32_t thread_serial);
  void root_unknown(uint64_t object_id);
  void object(uint64_t object_id, uint64_t size, uint32_t trace_serial, std::string_view class_name,
              uint64_t class_id);
  void object_field(std::string_view field_name, uint64_t value_id);  // skipped when 0
  void object_array(uint64_t array_id, uint64_t size, uint32_t trace_serial, uint64_t length,
                    std::string_view array_class_name, uint64_t array_class_id);
  void array_element(uint64_t index, uint64_t value_id);  // skipped when 0
  void primitive_array(uint64_t array_id, uint64_t size, uint32_t trace_serial, uint64_t length,
                       std::string_view array_type_name);
  void class_begin(uint64_t class_id, std::string_view class_name, uint32_t trace_serial);
  void class_super(uint64_t super_id);                    // skipped when 0
  void class_loader(uint64_t loader_id);                  // skipped when 0
  void class_signers(uint64_t signers_id);                // skipped when 0
  void class_domain(uint64_t protection_domain_id);       // skipped when 0
  void class_static(std::string_view field_name, uint64_t value_id);      // skipped when 0
  void class_constant_pool(uint32_t index, uint64_t value_id);            // skipped when 0

  // SITES. ordered_by is "live bytes" or "allocated bytes". Percentages are 0..100.
  void sites_begin(std::string_view ordered_by, time_t when);
  void sites_row(uint32_t rank, double self_percent, double accumulated_percent,
                 uint64_t live_bytes, uint64_t live_objects, uint64_t alloc_bytes,
                 uint64_t alloc_objects, uint32_t trace_serial, std::string_view class_name);
  void sites_end();

  // CPU SAMPLES / CPU TIME (ms). The column header follows the BEGIN line when row_count > 0.
  // An empty class_name prints "<empty trace>".
  void cpu_begin(CpuSection section, uint64_t total, size_t row_count, time_t when);
  void cpu_row(uint32_t rank, double self_percent, double accumulated_percent, uint64_t count,
               uint32_t trace_serial, std::string_view class_name, std::string_view method_name);
  void cpu_end(CpuSection section);

  // cpu=old: "count callee caller time", then rows; a null method prints <unknown callee|caller>.
  void old_prof_header();
  void old_prof_row(uint64_t calls, const OldProfMethod* callee, const OldProfMethod* caller,
                    uint64_t total_ms);

  // MONITOR TIME. The column header follows the BEGIN line when total_ms > 0 or rows follow
  // (contention that adds up to less than half a millisecond still has its rows).
  void monitor_time_begin(uint64_t total_ms, time_t when, bool rows = false);
  void monitor_time_row(uint32_t rank, double self_percent, double accumulated_percent,
                        uint64_t count, uint32_t trace_serial, std::string_view class_name);
  void monitor_time_end();

  // MONITOR DUMP. owner_serial 0 prints "MONITOR <sig> unowned"; waiter serial 0 prints
  // <unknown thread>.
  void monitor_dump_begin();
  // An indented line in parentheses right after MONITOR DUMP BEGIN saying what the dump cannot
  // show and why (a JVM that grants no owned-monitor information to an agent attached late).
  void monitor_dump_note(std::string_view note);
  void monitor_dump_thread(uint32_t thread_serial, uint32_t trace_serial, uint32_t jvmti_state);
  void monitor_dump_monitor(std::string_view monitor_signature, uint32_t owner_serial,
                            uint32_t entry_count, std::span<const uint32_t> waiting_to_enter,
                            std::span<const uint32_t> waiting_to_be_notified);
  void monitor_dump_end();

  // Appends text as it is (for example lines staged elsewhere).
  void raw(std::string_view text);

 private:
  void line(const char* format, ...) __attribute__((format(printf, 2, 3)));
  void thread_list(std::string_view label, std::span<const uint32_t> serials);
  void flush_if_full();

  OutputStream& out_;
  DateFormatter format_date_;
  std::string buffer_;
};

}  // namespace fasthprof
