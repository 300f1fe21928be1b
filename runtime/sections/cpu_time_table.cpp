#include "sections/cpu_time_table.h"

#include <algorithm>

#include "records/profile_writer.h"

namespace fasthprof {

void CpuTimeTable::add(uint64_t key, const CpuTimeCounts& counts) {
  if (counts.calls == 0) return;
  CpuTimeCounts& row = counts_[key];
  row.calls += counts.calls;
  row.self_ns += counts.self_ns;
  row.total_ns += counts.total_ns;
  calls_ += counts.calls;
}

CpuTimeReport CpuTimeTable::take_report(double cutoff) {
  CpuTimeReport report;
  uint64_t total_ns = 0;
  for (const auto& [key, counts] : counts_) {
    total_ns += counts.self_ns;
    report.total_ms += ns_to_ms(counts.self_ns);
    report.rows.push_back({key, counts, 0, 0});
  }
  std::sort(report.rows.begin(), report.rows.end(), [](const CpuTimeReportRow& a, const CpuTimeReportRow& b) {
    return a.counts.self_ns != b.counts.self_ns ? a.counts.self_ns > b.counts.self_ns : a.key < b.key;
  });
  // Shares come from nanoseconds, so that calls shorter than a millisecond still rank and print.
  double accumulated = 0;
  size_t kept = 0;
  for (CpuTimeReportRow& row : report.rows) {
    double share = total_ns == 0 ? 0.0 : static_cast<double>(row.counts.self_ns) / static_cast<double>(total_ns);
    if (row.counts.calls == 0 || (total_ns > 0 && share < cutoff)) break;
    row.self_percent = 100.0 * share;
    accumulated += row.self_percent;
    row.accumulated_percent = accumulated;
    ++kept;
  }
  report.rows.resize(kept);
  counts_.clear();
  calls_ = 0;
  return report;
}

CpuTimeReport CpuTimeTable::take_old_report() {
  CpuTimeReport report;
  for (const auto& [key, counts] : counts_) {
    report.total_ms += ns_to_ms(counts.self_ns);
    report.rows.push_back({key, counts, 0, 0});
  }
  std::sort(report.rows.begin(), report.rows.end(), [](const CpuTimeReportRow& a, const CpuTimeReportRow& b) {
    return a.counts.calls != b.counts.calls ? a.counts.calls > b.counts.calls : a.key < b.key;
  });
  counts_.clear();
  calls_ = 0;
  return report;
}

void write_cpu_time_section(ProfileWriter& writer, const CpuTimeReport& report, bool samples_title,
                            std::time_t when) {
  CpuSampleReport rows;
  rows.total = report.total_ms;
  rows.rows.reserve(report.rows.size());
  uint32_t rank = 0;
  for (const CpuTimeReportRow& row : report.rows) {
    auto serial = static_cast<uint32_t>(row.key);
    writer.write_trace(serial);
    rows.rows.push_back({++rank, serial, row.counts.calls, row.self_percent, row.accumulated_percent});
  }
  writer.output().cpu_times(rows, samples_title ? CpuSection::kSamples : CpuSection::kTimes, when);
}

void write_old_prof_section(ProfileWriter& writer, const CpuTimeReport& report,
                            const std::function<bool(uint32_t, OldMethodName*)>& describe) {
  // The names first, in a vector that no longer grows: the rows point into it.
  std::vector<OldMethodName> names(report.rows.size() * 2);
  std::vector<OldProfRow> rows(report.rows.size());
  auto method = [](const OldMethodName& name) {
    return OldProfMethod{name.class_name, name.method_name, name.signature};
  };
  for (size_t i = 0; i < report.rows.size(); ++i) {
    const CpuTimeReportRow& row = report.rows[i];
    rows[i].calls = row.counts.calls;
    rows[i].total_ms = ns_to_ms(row.counts.total_ns);
    if (describe(static_cast<uint32_t>(row.key >> 32), &names[2 * i])) rows[i].callee = method(names[2 * i]);
    if (describe(static_cast<uint32_t>(row.key), &names[2 * i + 1])) rows[i].caller = method(names[2 * i + 1]);
  }
  writer.output().old_prof(rows);
}

}  // namespace fasthprof
