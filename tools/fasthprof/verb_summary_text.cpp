// `fasthprof summary` of a text file (format=a, cpu=old): its CPU and MONITOR TIME sections
// ranked, each MONITOR DUMP's thread states and monitors, the cpu=old table's top pairs.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "verbs.h"

namespace fasthprof::cli {

namespace {

const char* section_title(TextSectionKind kind) {
  switch (kind) {
    case TextSectionKind::kCpuSamples: return "CPU SAMPLES";
    case TextSectionKind::kCpuTime: return "CPU TIME (ms)";
    case TextSectionKind::kMonitorTime: return "MONITOR TIME";
  }
  return "";
}

void print_ranked(FILE* out, const TextProfile& text, const TextRankedSection& section, size_t index, uint64_t top) {
  const size_t shown = top == 0 ? section.rows.size() : std::min<size_t>(top, section.rows.size());
  const bool monitor = section.kind == TextSectionKind::kMonitorTime;
  std::fprintf(out, "\n%s %zu at line %" PRIu64 " (total = %" PRIu64 "%s): %zu traces; top %zu\n",
               section_title(section.kind), index, section.line, section.total,
               section.kind == TextSectionKind::kCpuSamples ? "" : " ms", section.rows.size(), shown);
  std::fputs(monitor ? "rank   self  accum   count trace monitor (top frame)\n"
                     : "rank   self  accum   count trace method\n",
             out);
  uint32_t accumulated = 0;
  for (size_t r = 0; r < shown; ++r) {
    const TextRankedRow& row = section.rows[r];
    accumulated += row.self_hundredths;
    std::fprintf(out, "%4zu %3u.%02u%% %3u.%02u%% %7" PRIu64 " %5" PRIu32 " %s", r + 1, row.self_hundredths / 100,
                 row.self_hundredths % 100, accumulated / 100, accumulated % 100, row.count, row.trace_serial,
                 row.name.c_str());
    if (monitor) std::fprintf(out, " (%s)", text.top_frame(row.trace_serial).c_str());
    std::fputc('\n', out);
  }
}

// --by method: a section's rows per method (the name column) added up, ranked by self.
void print_ranked_by_method(FILE* out, const TextRankedSection& section, size_t index, uint64_t top) {
  std::map<std::string, std::pair<uint32_t, uint64_t>> by_name;  // self, count
  for (const TextRankedRow& row : section.rows) {
    auto& [self, count] = by_name[row.name];
    self += row.self_hundredths;
    count += row.count;
  }
  std::vector<std::pair<std::string, std::pair<uint32_t, uint64_t>>> rows(by_name.begin(), by_name.end());
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  const size_t shown = top == 0 ? rows.size() : std::min<size_t>(top, rows.size());
  const bool monitor = section.kind == TextSectionKind::kMonitorTime;
  std::fprintf(out, "\n%s %zu at line %" PRIu64 " (total = %" PRIu64 "): %zu %s; top %zu\n", section_title(section.kind),
               index, section.line, section.total, rows.size(), monitor ? "monitors" : "methods", shown);
  std::fputs(monitor ? "rank   self  accum   count monitor\n" : "rank   self  accum   count method\n", out);
  uint32_t accumulated = 0;
  for (size_t r = 0; r < shown; ++r) {
    const auto& [self, count] = rows[r].second;
    accumulated += self;
    std::fprintf(out, "%4zu %3u.%02u%% %3u.%02u%% %7" PRIu64 " %s\n", r + 1, self / 100, self % 100, accumulated / 100,
                 accumulated % 100, count, rows[r].first.c_str());
  }
}

std::string thread_list(const TextProfile& text, const std::vector<uint32_t>& threads) {
  std::string list;
  for (uint32_t serial : threads) {
    list += (list.empty() ? "" : ", ") + std::to_string(serial) + " \"" + text.thread_name(serial) + "\"";
  }
  return list.empty() ? "none" : list;
}

void print_monitor_dump(FILE* out, const TextProfile& text, const MonitorDump& dump, size_t index) {
  std::map<std::string, uint64_t> states;
  for (const MonitorDumpThread& thread : dump.threads) ++states[thread.status];
  std::string counted;
  for (const auto& [status, count] : states) counted += (counted.empty() ? "" : ", ") + status + " " + std::to_string(count);
  std::fprintf(out, "\nMONITOR DUMP %zu at line %" PRIu64 ": %zu threads (%s), %zu monitors\n", index, dump.line,
               dump.threads.size(), counted.c_str(), dump.monitors.size());
  if (!dump.note.empty()) std::fprintf(out, "  %s\n", dump.note.c_str());
  for (const MonitorDumpThread& thread : dump.threads) {
    if (thread.status.find("MW") == std::string::npos) continue;
    std::fprintf(out, "  blocked: thread %" PRIu32 " \"%s\" at %s\n", thread.thread_serial,
                 text.thread_name(thread.thread_serial).c_str(), text.top_frame(thread.trace_serial).c_str());
  }
  for (const MonitorDumpMonitor& monitor : dump.monitors) {
    if (monitor.owned) {
      std::fprintf(out, "  MONITOR %s: owner %" PRIu32 " \"%s\", entry count %" PRIu64 "\n", monitor.name.c_str(),
                   monitor.owner, text.thread_name(monitor.owner).c_str(), monitor.entry_count);
    } else {
      std::fprintf(out, "  MONITOR %s: unowned\n", monitor.name.c_str());
    }
    std::fprintf(out, "    waiting to enter: %s\n    waiting to be notified: %s\n",
                 thread_list(text, monitor.entering).c_str(), thread_list(text, monitor.notified).c_str());
  }
}

void print_old(FILE* out, const TextProfile& text, uint64_t top) {
  std::vector<const TextOldRow*> rows;
  for (const TextOldRow& row : text.old_rows()) rows.push_back(&row);
  std::stable_sort(rows.begin(), rows.end(), [](const TextOldRow* a, const TextOldRow* b) { return a->count > b->count; });
  const size_t shown = top == 0 ? rows.size() : std::min<size_t>(top, rows.size());
  std::fprintf(out, "\ncpu=old: %zu (callee, caller) pairs; top %zu by calls\n", rows.size(), shown);
  std::fputs("rank      calls    time ms  callee <- caller\n", out);
  for (size_t r = 0; r < shown; ++r) {
    std::fprintf(out, "%4zu %10" PRIu64 " %10" PRIu64 "  %s <- %s\n", r + 1, rows[r]->count, rows[r]->millis,
                 rows[r]->callee.c_str(), rows[r]->caller.c_str());
  }
}

}  // namespace

void print_text_summary(FILE* out, const char* path, const TextProfile& text, uint64_t top, bool by_method) {
  size_t cpu = 0;
  size_t monitor = 0;
  for (const TextRankedSection& section : text.sections()) ++(section.kind == TextSectionKind::kMonitorTime ? monitor : cpu);
  std::fprintf(out, "%s: text profile (format=a%s), %zu threads named\n", path, text.old_rows().empty() ? "" : ", cpu=old",
               text.threads().size());
  std::fprintf(out, "reports: %zu CPU sections, %zu MONITOR TIME, %zu MONITOR DUMP%s\n", cpu, monitor,
               text.monitor_dumps().size(), text.old_rows().empty() ? "" : ", a cpu=old table");
  size_t cpu_index = 0;
  size_t monitor_index = 0;
  for (const TextRankedSection& section : text.sections()) {
    const size_t index = section.kind == TextSectionKind::kMonitorTime ? ++monitor_index : ++cpu_index;
    if (by_method) {
      print_ranked_by_method(out, section, index, top);
    } else {
      print_ranked(out, text, section, index, top);
    }
  }
  for (size_t i = 0; i < text.monitor_dumps().size(); ++i) print_monitor_dump(out, text, text.monitor_dumps()[i], i + 1);
  if (!text.old_rows().empty()) print_old(out, text, top);
}

}  // namespace fasthprof::cli
