#include "profile.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <tuple>

namespace fasthprof::cli {

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::kHeap: return "heap";
    case Kind::kSites: return "sites";
    case Kind::kCpu: return "cpu";
    case Kind::kMonitor: return "monitor";
  }
  return "";
}

std::vector<std::string_view> kind_metrics(Kind kind) {
  switch (kind) {
    case Kind::kHeap: return {"bytes", "objects", "retained"};
    case Kind::kSites: return {"live-bytes", "live-objects", "alloc-bytes", "alloc-objects"};
    case Kind::kCpu: return {"count", "share", "calls"};
    case Kind::kMonitor: return {"us", "share", "count"};
  }
  return {};
}

int metric_index(Kind kind, std::string_view name) {
  if (kind == Kind::kSites && name == "bytes") return 0;
  if (kind == Kind::kSites && name == "objects") return 1;
  if (kind == Kind::kCpu && (name == "samples" || name == "ms" || name == "us")) return 0;
  const std::vector<std::string_view> metrics = kind_metrics(kind);
  for (size_t i = 0; i < metrics.size(); ++i) {
    if (metrics[i] == name) return static_cast<int>(i);
  }
  return -1;
}

bool has_kind(const HprofModel& model, Kind kind) {
  switch (kind) {
    case Kind::kHeap: return !model.dumps().empty();
    case Kind::kSites: return !model.sites().empty();
    case Kind::kCpu: return !model.cpu().empty();
    case Kind::kMonitor: return false;
  }
  return false;
}

namespace {

void add(Table* table, const std::string& key, const std::array<uint64_t, kMaxMetrics>& values) {
  std::array<uint64_t, kMaxMetrics>& row = table->rows[key];
  for (size_t i = 0; i < kMaxMetrics; ++i) {
    row[i] += values[i];
    table->totals[i] += values[i];
  }
}

// A trace's folded stack with the roots asked for (StackRoots).
std::string stack_key(const HprofModel& model, uint32_t serial, StackRoots roots, Table* table) {
  std::string stack = model.folded_stack(serial, false);
  const TraceInfo* trace = model.trace(serial);
  if (trace == nullptr) return stack;
  if (roots.truncated && model.control_depth() > 0 && trace->frame_count >= model.control_depth()) {
    stack = truncated_frame(model.control_depth()) + ";" + stack;
    table->truncated_depth = model.control_depth();
  }
  if (roots.threads && trace->thread_serial != 0) {
    std::string name(model.thread_name(trace->thread_serial));
    if (name.empty()) name = std::to_string(trace->thread_serial);
    std::replace(name.begin(), name.end(), ';', ':');
    stack = "thread " + name + ";" + stack;
    table->thread_roots = true;
  }
  return stack;
}

bool pick(const char* verb, const char* path, const char* what, size_t count, uint64_t section, size_t* index) {
  if (count == 0) return fail(verb, "%s holds no %s", path, what), false;
  if (section > count) {
    return fail(verb, "%s holds %zu %s, not %" PRIu64, path, count, what, section), false;
  }
  *index = section == 0 ? count - 1 : section - 1;
  return true;
}

}  // namespace

void fill_shares(Table* table) {
  const uint64_t total = table->totals[0];
  if (total == 0) return;
  for (auto& [key, values] : table->rows) {
    values[1] = static_cast<uint64_t>(
        std::llround(static_cast<double>(kShareScale) * static_cast<double>(values[0]) / static_cast<double>(total)));
  }
  table->totals[1] = kShareScale;
}

std::string truncated_frame(uint32_t depth) { return "(truncated at depth " + std::to_string(depth) + ")"; }

bool build_table(const char* verb, const char* path, const HprofModel& model, Kind kind, Grouping grouping,
                 uint64_t section, Table* table, StackRoots roots) {
  table->kind = kind;
  table->metrics = kind_metrics(kind);
  char what[128];
  size_t index = 0;
  switch (kind) {
    case Kind::kHeap: {
      if (!pick(verb, path, "heap dumps", model.dumps().size(), section, &index)) return false;
      const HeapDumpInfo& dump = model.dumps()[index];
      table->metrics.pop_back();  // retained: only when asked for (add_retained, heap_names.h)
      std::snprintf(what, sizeof(what), "heap dump %zu (at byte %" PRIu64 ")", index + 1, dump.offset);
      for (const HistogramRow& row : dump.histogram) add(table, row.name, {row.bytes, row.instances, 0, 0});
      break;
    }
    case Kind::kSites: {
      if (!pick(verb, path, "SITES sections", model.sites().size(), section, &index)) return false;
      const SitesSection& sites = model.sites()[index];
      std::snprintf(what, sizeof(what), "SITES %zu (at byte %" PRIu64 ")", index + 1, sites.offset);
      // Rows of one site added up first: a stack is folded once, however many rows name its trace.
      std::map<std::tuple<uint32_t, uint8_t, uint32_t>, std::array<uint64_t, kMaxMetrics>> by_site;
      for (const SiteRow& row : sites.rows) {
        const uint32_t trace = grouping == Grouping::kStack ? row.trace_serial : 0;
        std::array<uint64_t, kMaxMetrics>& sum = by_site[{trace, row.kind, row.class_serial}];
        sum[0] += row.live_bytes;
        sum[1] += row.live_instances;
        sum[2] += row.alloc_bytes;
        sum[3] += row.alloc_instances;
      }
      uint64_t listed = 0;
      for (const SiteRow& row : sites.rows) listed += row.alloc_bytes;
      // 0.1 % of slack: with sample= the rows and the total are rounded separately.
      if (sites.total_alloc_bytes > 0 && static_cast<double>(listed) < 0.999 * static_cast<double>(sites.total_alloc_bytes)) {
        char line[400];
        std::snprintf(line, sizeof(line),
                      "SITES %zu lists %.1f MB of the %.1f MB allocated (%.2f %%): the agent left out the sites below "
                      "its cutoff (by %s bytes); run it with cutoff=0 to list every site",
                      index + 1, static_cast<double>(listed) / 1e6, static_cast<double>(sites.total_alloc_bytes) / 1e6,
                      100.0 * static_cast<double>(listed) / static_cast<double>(sites.total_alloc_bytes),
                      (sites.flags & 0x2) != 0 ? "allocated" : "live");
        table->coverage = line;
      }
      for (const auto& [site, values] : by_site) {
        const auto& [trace, array_kind, class_serial] = site;
        std::string key = model.site_class_name(SiteRow{array_kind, class_serial});
        if (grouping == Grouping::kStack) key = stack_key(model, trace, roots, table) + ";" + key;
        add(table, key, values);
      }
      break;
    }
    case Kind::kCpu: {
      size_t first = 0;
      size_t last = model.cpu().size();
      if (!pick(verb, path, "CPU sections", model.cpu().size(), section, &index)) return false;
      if (section != 0) {
        first = index;
        last = index + 1;
        std::snprintf(what, sizeof(what), "%s %zu (at byte %" PRIu64 ")",
                      model.cpu_is_times() ? "CPU TIME" : "CPU SAMPLES", index + 1, model.cpu()[index].offset);
      } else {
        std::snprintf(what, sizeof(what), "%s, %zu section%s added up", model.cpu_is_times() ? "CPU TIME" : "CPU SAMPLES",
                      last, last == 1 ? "" : "s");
      }
      // Counts per trace first: a stack is folded once, however many rows name its trace.
      std::map<uint32_t, uint64_t> by_trace;
      for (size_t i = first; i < last; ++i) {
        for (const CpuRow& row : model.cpu()[i].rows) by_trace[row.trace_serial] += row.count;
      }
      for (const auto& [serial, count] : by_trace) {
        std::string key;
        if (grouping == Grouping::kTopFrame) {
          const TraceInfo* trace = model.trace(serial);
          key = trace == nullptr       ? "<trace " + std::to_string(serial) + ">"
                : trace->frame_count == 0 ? std::string("<empty trace>")
                                          : model.frame_name(model.trace_frame(*trace, 0), false);
        } else {
          key = stack_key(model, serial, roots, table);
        }
        add(table, key, {count, 0, 0, 0});
      }
      fill_shares(table);
      break;
    }
    case Kind::kMonitor:
      return fail(verb, "%s: MONITOR TIME is in text files only (monitor=y, format=a)", path), false;
  }
  table->what = what;
  return true;
}

std::string without_hidden_addresses(std::string_view name) {
  auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); };
  std::string out;
  out.reserve(name.size());
  size_t i = 0;
  while (i < name.size()) {
    const char c = name[i];
    if ((c == '.' || c == '+' || c == '/') && i + 3 < name.size() && name[i + 1] == '0' && name[i + 2] == 'x' &&
        hex(name[i + 3])) {
      size_t end = i + 3;
      while (end < name.size() && hex(name[end])) ++end;
      i = end;  // the separator and the address go; what follows (".run", ";", the end) stays
      continue;
    }
    out.push_back(c);
    ++i;
  }
  return out;
}

void merge_hidden_classes(Table* table) {
  std::map<std::string, std::array<uint64_t, kMaxMetrics>> merged;
  for (const auto& [name, values] : table->rows) {
    std::array<uint64_t, kMaxMetrics>& row = merged[without_hidden_addresses(name)];
    for (size_t i = 0; i < kMaxMetrics; ++i) row[i] += values[i];
  }
  table->rows = std::move(merged);
}

bool parse_condition(const char* verb, Kind kind, std::string_view text, Condition* condition) {
  condition->text.assign(text);
  size_t op_at = text.find_first_of("<>");
  auto bad = [&](const char* why) {
    fail(verb, "--fail-if '%.*s': %s (see fasthprof %s --help)", static_cast<int>(text.size()), text.data(), why, verb);
    return false;
  };
  if (op_at == std::string_view::npos) return bad("no comparison (>, >=, <, <=)");
  std::string_view left = text.substr(0, op_at);
  size_t op_size = op_at + 1 < text.size() && text[op_at + 1] == '=' ? 2 : 1;
  condition->op.assign(text.substr(op_at, op_size));
  std::string_view right = text.substr(op_at + op_size);
  size_t colon = left.rfind(':');
  std::string_view metric = colon == std::string_view::npos ? left : left.substr(colon + 1);
  if (colon != std::string_view::npos) condition->name.assign(left.substr(0, colon));
  condition->metric = metric_index(kind, metric);
  if (condition->metric < 0) {
    std::string known;
    for (std::string_view name : kind_metrics(kind)) known += (known.empty() ? "" : ", ") + std::string(name);
    std::string why = "no metric \"" + std::string(metric) + "\" for " + kind_name(kind) + " (" + known + ")";
    return bad(why.c_str());
  }
  if (!right.empty() && right.back() == '%') {
    condition->percent = true;
    right.remove_suffix(1);
  }
  std::string number(right);
  char* end = nullptr;
  condition->number = std::strtod(number.c_str(), &end);
  if (number.empty() || end != number.c_str() + number.size() || !std::isfinite(condition->number)) {
    return bad("the right side is not a number");
  }
  return true;
}

bool condition_met(const Condition& condition, const Table& a, const Table& b, std::string* change) {
  auto value = [&](const Table& table) -> double {
    if (condition.name.empty()) return static_cast<double>(table.totals[condition.metric]);
    auto found = table.rows.find(condition.name);
    return found == table.rows.end() ? 0.0 : static_cast<double>(found->second[condition.metric]);
  };
  const double before = value(a);
  const double after = value(b);
  double delta = after - before;
  char text[64];
  if (condition.percent) {
    delta = before == 0 ? (after == 0 ? 0.0 : std::numeric_limits<double>::infinity()) : 100.0 * delta / before;
    std::snprintf(text, sizeof(text), "%+.2f%%", delta);
  } else if ((a.kind == Kind::kCpu || a.kind == Kind::kMonitor) && condition.metric == 1) {
    delta /= kShareScale / 100.0;  // percentage points
    std::snprintf(text, sizeof(text), "%+.2f points", delta);
  } else {
    std::snprintf(text, sizeof(text), "%+.0f", delta);
  }
  *change = text;
  if (condition.op == ">") return delta > condition.number;
  if (condition.op == ">=") return delta >= condition.number;
  if (condition.op == "<") return delta < condition.number;
  return delta <= condition.number;
}

}  // namespace fasthprof::cli
