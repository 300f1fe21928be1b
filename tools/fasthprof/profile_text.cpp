// The tables of profile.h from a text file (TextProfile): CPU SAMPLES, CPU TIME, the cpu=old
// table and MONITOR TIME.
#include <cinttypes>
#include <cstdio>

#include "profile.h"

namespace fasthprof::cli {

namespace {

bool is_cpu(TextSectionKind kind) { return kind != TextSectionKind::kMonitorTime; }

void add_row(Table* table, const std::string& key, const std::array<uint64_t, kMaxMetrics>& values) {
  std::array<uint64_t, kMaxMetrics>& row = table->rows[key];
  for (size_t i = 0; i < kMaxMetrics; ++i) {
    row[i] += values[i];
    table->totals[i] += values[i];
  }
}

// The stack of a trace, rooted at the truncated frame when it is as deep as the depth the user
// gave, then at "thread NAME" when asked and the trace names its thread.
std::string stack_of(const TextProfile& text, uint32_t serial, StackRoots roots, Table* table) {
  std::string stack = text.folded_stack(serial);
  const TextTrace* trace = text.trace(serial);
  if (roots.truncated && roots.text_depth > 0 && trace != nullptr && trace->frames.size() >= roots.text_depth) {
    stack = truncated_frame(roots.text_depth) + ";" + stack;
    table->truncated_depth = roots.text_depth;
  }
  if (roots.threads && trace != nullptr && trace->thread_serial != 0) {
    std::string root = "thread " + text.thread_name(trace->thread_serial);
    for (char& c : root) {
      if (c == ';') c = ':';
    }
    stack = root + ";" + stack;
  }
  return stack;
}

// The cpu=old table: a stack of two frames, caller;callee, per pair; its time in microseconds.
void old_table(const TextProfile& text, Grouping grouping, Table* table) {
  table->what = "cpu=old (callee, caller) pairs, inclusive time";
  for (const TextOldRow& row : text.old_rows()) {
    const std::string key = grouping == Grouping::kTopFrame ? row.callee : row.caller + ";" + row.callee;
    add_row(table, key, {row.millis * 1000, 0, row.count, 0});
  }
}

}  // namespace

std::unordered_set<std::string> native_frames(const Loaded& loaded) {
  if (loaded.text) return loaded.text_profile.native_frames();
  std::unordered_set<std::string> names;
  for (std::string& name : loaded.model.native_frame_names()) names.insert(std::move(name));
  return names;
}

bool has_kind(const Loaded& loaded, Kind kind) {
  if (!loaded.text) return has_kind(loaded.model, kind);
  const TextProfile& text = loaded.text_profile;
  switch (kind) {
    case Kind::kCpu:
      return text.has(TextSectionKind::kCpuSamples) || text.has(TextSectionKind::kCpuTime) || !text.old_rows().empty();
    case Kind::kMonitor: return text.has(TextSectionKind::kMonitorTime);
    case Kind::kHeap:
    case Kind::kSites: return false;
  }
  return false;
}

bool choose_kind(const char* verb, const char* path, const Args& args, const Loaded& loaded, Kind* kind) {
  const bool sites = args.has("--sites") || args.has("--value");
  if (args.has("--cpu") + sites + args.has("--monitor") > 1) return fail(verb, "--cpu, --sites, --monitor: give one"), false;
  if (args.has("--cpu") || sites || args.has("--monitor")) {
    *kind = args.has("--cpu") ? Kind::kCpu : sites ? Kind::kSites : Kind::kMonitor;
    return true;
  }
  for (Kind candidate : {Kind::kCpu, Kind::kSites, Kind::kMonitor}) {
    if (has_kind(loaded, candidate)) {
      *kind = candidate;
      return true;
    }
  }
  return fail(verb, "%s holds no CPU section, no ALLOC SITES and no MONITOR TIME (cpu=samples|times|old, heap=sites, "
              "monitor=y)", path), false;
}

bool build_table(const char* verb, const char* path, const Loaded& loaded, Kind kind, Grouping grouping,
                 uint64_t section, Table* table, StackRoots roots) {
  if (!loaded.text) return build_table(verb, path, loaded.model, kind, grouping, section, table, roots);
  const bool thread_roots = roots.threads;
  const TextProfile& text = loaded.text_profile;
  table->kind = kind;
  table->metrics = kind_metrics(kind);
  if (kind == Kind::kHeap || kind == Kind::kSites) {
    return fail(verb, "%s is a text file (format=a): the verbs read its CPU and MONITOR TIME sections; heap dumps "
                "and SITES need format=b", path), false;
  }
  std::vector<const TextRankedSection*> chosen;
  for (const TextRankedSection& candidate : text.sections()) {
    if (is_cpu(candidate.kind) == (kind == Kind::kCpu)) chosen.push_back(&candidate);
  }
  const char* what = kind == Kind::kCpu ? "CPU sections" : "MONITOR TIME sections";
  if (kind == Kind::kCpu && chosen.empty() && !text.old_rows().empty()) {
    if (section > 1) return fail(verb, "%s holds one cpu=old table, not %" PRIu64, path, section), false;
    table->metrics = {"us", "share", "calls"};
    old_table(text, grouping, table);
    fill_shares(table);
    return true;
  }
  if (chosen.empty()) return fail(verb, "%s holds no %s", path, what), false;
  if (section > chosen.size()) {
    return fail(verb, "%s holds %zu %s, not %" PRIu64, path, chosen.size(), what, section), false;
  }
  if (section != 0) chosen = {chosen[section - 1]};
  const bool timed = chosen.front()->kind != TextSectionKind::kCpuSamples;
  const char* title = chosen.front()->kind == TextSectionKind::kCpuSamples ? "CPU SAMPLES"
                      : chosen.front()->kind == TextSectionKind::kCpuTime  ? "CPU TIME (ms)"
                                                                           : "MONITOR TIME";
  char line[160];
  if (section != 0) {
    std::snprintf(line, sizeof(line), "%s %" PRIu64 " (at line %" PRIu64 ")", title, section, chosen.front()->line);
  } else {
    std::snprintf(line, sizeof(line), "%s, %zu section%s added up", title, chosen.size(), chosen.size() == 1 ? "" : "s");
  }
  table->what = line;
  if (kind == Kind::kCpu && timed) table->metrics = {"us", "share", "calls"};
  table->thread_roots = thread_roots && text.has_threads() && grouping == Grouping::kStack;
  for (const TextRankedSection* ranked : chosen) {
    for (const TextRankedRow& row : ranked->rows) {
      std::string key;
      if (kind == Kind::kMonitor) {
        key = grouping == Grouping::kStack ? stack_of(text, row.trace_serial, roots, table) + ";" + row.name : row.name;
        add_row(table, key, {ranked->row_micros(row), 0, row.count, 0});
        continue;
      }
      key = grouping == Grouping::kTopFrame ? text.top_frame(row.trace_serial)
                                            : stack_of(text, row.trace_serial, roots, table);
      add_row(table, key, {timed ? ranked->row_micros(row) : row.count, 0, timed ? row.count : 0, 0});
    }
  }
  fill_shares(table);
  return true;
}

}  // namespace fasthprof::cli
