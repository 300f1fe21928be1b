// The rows a report section hands to its output (profile_output.h): SITES, CPU SAMPLES and CPU
// TIME, cpu=old, MONITOR TIME and MONITOR DUMP. They sit on the records floor, below the tables
// that compute them (sections/), so that the output writes them without knowing those tables.
//
// Threads: plain values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fasthprof {

struct SiteIdentity {
  uint32_t class_serial = 0;
  uint32_t trace_serial = 0;
  uint8_t array_kind = 0;  // ALLOC SITES: 0 not an array, 2 object array, 4..11 primitive type
};

struct SiteCounts {
  uint64_t live_bytes = 0;
  uint64_t live_objects = 0;
  uint64_t alloc_bytes = 0;
  uint64_t alloc_objects = 0;
};

struct SiteRow {
  SiteIdentity site;
  SiteCounts counts;
};

// The counts over every site, and how many sites there are.
struct SiteTotals : SiteCounts {
  size_t sites = 0;
};

struct CpuSampleReportRow {
  uint32_t rank = 0;  // from 1
  uint32_t trace_serial = 0;
  uint64_t count = 0;
  double self_percent = 0;         // 0..100
  double accumulated_percent = 0;  // 0..100, this row and every row above it
};

struct CpuSampleReport {
  uint64_t total = 0;  // samples over all traces, cut-off ones included
  std::vector<CpuSampleReportRow> rows;
};

// A method as cpu=old prints it: class.method + signature.
struct OldProfMethod {
  std::string_view class_name;
  std::string_view method_name;
  std::string_view signature;
};

// A cpu=old row: calls of callee from caller and their time; a method not known is empty.
struct OldProfRow {
  uint64_t calls = 0;
  std::optional<OldProfMethod> callee;
  std::optional<OldProfMethod> caller;
  uint64_t total_ms = 0;
};

struct MonitorTimeRow {
  uint32_t rank = 0;
  double self_percent = 0;
  double accumulated_percent = 0;
  uint64_t count = 0;
  uint64_t time_ns = 0;
  uint32_t trace_serial = 0;
  std::string signature;  // JVM form; the row prints its Java name
};

// MONITOR DUMP: a live thread, and a monitor some thread owns or waits for (serial 0: unowned).
struct MonitorDumpThread {
  uint32_t serial = 0;
  uint32_t trace_serial = 0;
  uint32_t jvmti_state = 0;
};

struct MonitorDumpMonitor {
  std::string signature;
  uint32_t owner = 0;
  uint32_t entry_count = 0;
  std::vector<uint32_t> to_enter, to_be_notified;
};

}  // namespace fasthprof
