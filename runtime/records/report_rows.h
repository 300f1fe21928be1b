// The rows a report section hands to its output (profile_output.h): a SITES row and its totals, a
// CPU SAMPLES row and its report. They sit on the records floor, below the tables that compute
// them (sections/site_table.h, sections/cpu_sample_table.h), so that the output writes them
// without knowing those tables.
//
// Threads: plain values.
#pragma once

#include <cstddef>
#include <cstdint>
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

struct SiteTotals {
  uint64_t live_bytes = 0;
  uint64_t live_objects = 0;
  uint64_t alloc_bytes = 0;
  uint64_t alloc_objects = 0;
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

}  // namespace fasthprof
