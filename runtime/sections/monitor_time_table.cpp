#include "sections/monitor_time_table.h"

#include <algorithm>


namespace fasthprof {

void MonitorTimeTable::add(uint32_t trace_serial, std::string_view signature, uint64_t waited_ns) {
  std::string key = std::to_string(trace_serial);
  key.push_back('\0');
  key.append(signature);
  Entry& entry = entries_[key];
  entry.time_ns += waited_ns;
  ++entry.count;
  total_ns_ += waited_ns;
  ++events_;
}

MonitorTimeReport MonitorTimeTable::take_report(double cutoff) {
  MonitorTimeReport report;
  report.total_ns = total_ns_;
  report.events = events_;
  for (auto& [key, entry] : entries_) {
    if (entry.count == 0) continue;
    MonitorTimeRow row;
    size_t split = key.find('\0');
    row.trace_serial = static_cast<uint32_t>(std::stoul(key.substr(0, split)));
    row.signature = key.substr(split + 1);
    row.count = entry.count;
    row.time_ns = entry.time_ns;
    report.rows.push_back(std::move(row));
    entry = Entry{};
  }
  std::sort(report.rows.begin(), report.rows.end(), [](const MonitorTimeRow& a, const MonitorTimeRow& b) {
    if (a.time_ns != b.time_ns) return a.time_ns > b.time_ns;
    if (a.count != b.count) return a.count > b.count;
    if (a.trace_serial != b.trace_serial) return a.trace_serial < b.trace_serial;
    return a.signature < b.signature;
  });
  uint64_t accumulated = 0;
  size_t kept = 0;
  for (MonitorTimeRow& row : report.rows) {
    // A total of zero (contention shorter than the clock's step) keeps every row at 0 %.
    double share = report.total_ns == 0 ? 0.0 : static_cast<double>(row.time_ns) / static_cast<double>(report.total_ns);
    if (report.total_ns != 0 && share < cutoff) break;
    accumulated += row.time_ns;
    row.rank = static_cast<uint32_t>(++kept);
    row.self_percent = share * 100.0;
    row.accumulated_percent =
        report.total_ns == 0 ? 0.0 : static_cast<double>(accumulated) / static_cast<double>(report.total_ns) * 100.0;
  }
  report.rows.resize(kept);
  total_ns_ = 0;
  events_ = 0;
  return report;
}

void write_monitor_time_section(ProfileWriter& writer, const MonitorTimeReport& report, std::time_t when) {
  if (report.events == 0) return;
  for (const MonitorTimeRow& row : report.rows) writer.write_trace(row.trace_serial);
  writer.output().monitor_time(report.rows, (report.total_ns + 500000) / 1000000, when);
}

}  // namespace fasthprof
