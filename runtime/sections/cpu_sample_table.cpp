#include "sections/cpu_sample_table.h"

#include <algorithm>

#include "base/hprof_format.h"
#include "records/profile_writer.h"

namespace fasthprof {

void CpuSampleTable::add(uint32_t trace_serial, uint64_t hits) {
  if (trace_serial < kFirstTraceSerial || hits == 0) return;
  size_t index = trace_serial - kFirstTraceSerial;
  if (index >= counts_.size()) {
    size_t size = std::max<size_t>(index + 1, counts_.size() * 2);
    counts_.resize(std::max<size_t>(size, 256), 0);
  }
  counts_[index] += hits;
  total_ += hits;
}

uint64_t CpuSampleTable::count_of(uint32_t trace_serial) const {
  if (trace_serial < kFirstTraceSerial) return 0;
  size_t index = trace_serial - kFirstTraceSerial;
  return index < counts_.size() ? counts_[index] : 0;
}

CpuSampleReport CpuSampleTable::take_report(double cutoff) {
  CpuSampleReport report;
  report.total = total_;
  for (size_t i = 0; i < counts_.size(); ++i) {
    if (counts_[i] == 0) continue;
    CpuSampleReportRow row;
    row.trace_serial = static_cast<uint32_t>(kFirstTraceSerial + i);
    row.count = counts_[i];
    report.rows.push_back(row);
  }
  // Equal counts keep serial order, so that a report does not depend on the sort's whims.
  std::sort(report.rows.begin(), report.rows.end(),
            [](const CpuSampleReportRow& a, const CpuSampleReportRow& b) {
              return a.count != b.count ? a.count > b.count : a.trace_serial < b.trace_serial;
            });
  uint64_t accumulated = 0;
  size_t kept = 0;
  for (CpuSampleReportRow& row : report.rows) {
    double share = static_cast<double>(row.count) / static_cast<double>(report.total);
    if (share < cutoff) break;
    accumulated += row.count;
    row.rank = static_cast<uint32_t>(++kept);
    row.self_percent = share * 100.0;
    row.accumulated_percent = static_cast<double>(accumulated) / static_cast<double>(report.total) * 100.0;
  }
  report.rows.resize(kept);
  std::fill(counts_.begin(), counts_.end(), 0);
  total_ = 0;
  return report;
}

void write_cpu_samples_section(ProfileWriter& writer, const CpuSampleReport& report, std::time_t when) {
  for (const CpuSampleReportRow& row : report.rows) writer.write_trace(row.trace_serial);
  writer.output().cpu_samples(report, when);
}

}  // namespace fasthprof
