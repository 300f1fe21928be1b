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
  for (const CpuTimeReportRow& row : report.rows) writer.write_trace(static_cast<uint32_t>(row.key));
  CpuSection section = samples_title ? CpuSection::kSamples : CpuSection::kTimes;
  TextWriter& text = writer.text();
  text.cpu_begin(section, report.total_ms, report.rows.size(), when);
  uint32_t rank = 0;
  for (const CpuTimeReportRow& row : report.rows) {
    std::string_view class_name;
    std::string_view method_name;
    std::optional<TraceView> trace = writer.traces().find(static_cast<uint32_t>(row.key));
    if (trace && !trace->frames.empty()) {
      std::optional<FrameView> top = writer.frames().find(trace->frames.front());
      if (top) {
        class_name = top->class_name;
        method_name = top->method_info->name;
      }
    }
    text.cpu_row(++rank, row.self_percent, row.accumulated_percent, row.counts.calls,
                 static_cast<uint32_t>(row.key), class_name, method_name);
  }
  text.cpu_end(section);
}

void write_old_prof_section(ProfileWriter& writer, const CpuTimeReport& report,
                            const std::function<bool(uint32_t, OldMethodName*)>& describe) {
  TextWriter& text = writer.text();
  text.old_prof_header();
  for (const CpuTimeReportRow& row : report.rows) {
    OldMethodName callee_name, caller_name;
    bool callee_known = describe(static_cast<uint32_t>(row.key >> 32), &callee_name);
    bool caller_known = describe(static_cast<uint32_t>(row.key), &caller_name);
    OldProfMethod callee{callee_name.class_name, callee_name.method_name, callee_name.signature};
    OldProfMethod caller{caller_name.class_name, caller_name.method_name, caller_name.signature};
    text.old_prof_row(row.counts.calls, callee_known ? &callee : nullptr, caller_known ? &caller : nullptr,
                      ns_to_ms(row.counts.total_ns));
  }
}

}  // namespace fasthprof
