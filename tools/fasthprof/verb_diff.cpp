// `fasthprof diff A B`: two files' heap dumps, SITES or CPU sections, row by row, with --fail-if
// for CI gates.
#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <map>
#include <tuple>

#include "heap_names.h"
#include "json_writer.h"
#include "profile.h"
#include "verbs.h"

namespace fasthprof::cli {

const char kDiffUsage[] =
    "usage: fasthprof diff [--heap | --sites | --cpu | --monitor] [--value METRIC]\n"
    "                      [--stacks] [--top N] [--fail-if EXPR]... [-o OUT] A B\n"
    "Compares one kind of report of two files (A the baseline, B the new run): rows\n"
    "with their value in A and B and the change, sorted by the absolute change,\n"
    "largest first, and the total.\n"
    "  --heap     the last heap dump of each: the class histograms (bytes, objects:\n"
    "             the shallow sizes of fasthprof summary --help; retained, with\n"
    "             --value retained or a --fail-if on it: each class's retained bytes\n"
    "             as fasthprof dominators counts them, from each dump's dominator\n"
    "             tree, its total what the roots retain)\n"
    "  --sites    the last ALLOC SITES section of each, per class (live-bytes,\n"
    "             live-objects, alloc-bytes, alloc-objects)\n"
    "  --cpu      the CPU sections of each added up, per method at the top of the\n"
    "             stack (share: percent of the file's total, the default, since two\n"
    "             runs of one program take different numbers of samples; count:\n"
    "             samples for cpu=samples, ms for cpu=times; text files: us, from the\n"
    "             share, and calls for CPU TIME and cpu=old)\n"
    "  --monitor  the MONITOR TIME sections (monitor=y, text files), per monitor\n"
    "             class (us blocked, share, count of contended enters)\n"
    "             (default: the first kind both files hold, in this order)\n"
    "  --value M  the metric rows are sorted by (default: the first one listed above)\n"
    "  --stacks   a row per whole stack (sites and monitor: stack;class)\n"
    "  Hidden classes (lambdas) are named without their address, which changes from\n"
    "  run to run.\n"
    "  --top N    rows shown (default 25; 0: all)\n"
    "  --fail-if EXPR  exit 1 when EXPR holds (any of several); each one met is named\n"
    "     on stderr:\n"
    "       [NAME:]METRIC OP [+|-]NUMBER[%]      OP: >  >=  <  <=\n"
    "     the change B - A of METRIC, of the row NAME (a class, or a method or stack\n"
    "     for cpu) or without NAME of the total, compared with NUMBER; with %, the\n"
    "     change relative to A (a row absent from A that B has grew by +inf%).\n"
    "     Aliases: sites bytes = live-bytes, objects = live-objects; cpu samples = ms\n"
    "     = us = count; a share's change is in percentage points.\n"
    "     Examples:\n"
    "       --fail-if 'bytes>+5%'                  total live bytes grew more than 5%\n"
    "       --fail-if 'alloc-bytes>1000000'        over 1 MB more allocated (--sites)\n"
    "       --fail-if 'java.lang.String:objects>0' more String instances (--heap)\n"
    "       --fail-if 'com.acme.Cache:retained>+20%'  what Cache instances keep\n"
    "                                              alive grew over 20 % (--heap)\n"
    "       --fail-if 'app.Codec.encode:share>2'   encode's share of the CPU up by\n"
    "                                              over 2 points\n"
    "  --json     the table as one JSON object: a and b (file, what), kind, metric,\n"
    "             rows_total, rows (name, a and b: each metric's value; shares in\n"
    "             percent), total, fail_if (expression, met, change)\n"
    "  -o OUT     write the table to OUT instead of standard output\n"
    FASTHPROF_MAX_EXPANDED_HELP
    "Exit status: 0 done (no --fail-if met), 1 a --fail-if met, 2 bad usage or bad\n"
    "input.\n";

namespace {

std::string signed_count(int64_t value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%+" PRId64, value);
  return text;
}

std::string percent_change(uint64_t before, uint64_t after) {
  if (before == 0) return after == 0 ? "0.00%" : "new";
  char text[32];
  std::snprintf(text, sizeof(text), "%+.2f%%", 100.0 * (static_cast<double>(after) - static_cast<double>(before)) /
                                                   static_cast<double>(before));
  return text;
}

double share_percent(uint64_t millionths) { return static_cast<double>(millionths) / (kShareScale / 100.0); }

// The change of a share in percentage points ("+1.25pt").
std::string share_points(uint64_t before, uint64_t after) {
  char text[32];
  std::snprintf(text, sizeof(text), "%+.2fpt", share_percent(after) - share_percent(before));
  return text;
}

struct Row {
  const std::string* name;
  std::array<uint64_t, kMaxMetrics> before{};
  std::array<uint64_t, kMaxMetrics> after{};
};

struct Verdict {
  const Condition* condition;
  bool met;
  std::string change;
};

// The table: a header, the rows shown and the total.
void write_table(FILE* out, const std::string& path_a, const std::string& path_b, const Table& a, const Table& b,
                 int metric, const std::vector<Row>& rows, size_t shown) {
  const bool shares = a.kind == Kind::kCpu || a.kind == Kind::kMonitor;
  // The second column pair: objects for a bytes metric (and the other way); count for share; a
  // heap table's retained bytes beside its shallow ones when they were computed (and the other way).
  int other = shares ? (metric == 1 ? 0 : 1) : metric % 2 == 0 ? metric + 1 : metric - 1;
  if (a.kind == Kind::kHeap && metric == 2) other = 0;
  if (a.kind == Kind::kHeap && metric == 0 && a.metrics.size() > 2) other = 2;
  const bool share_column = shares;  // metric 1 of cpu and monitor: millionths, shown as percent
  const std::string_view metric_name = a.metrics[metric];
  std::fprintf(out, "A: %s, %s\nB: %s, %s\n%s by %.*s: %zu rows; top %zu by the absolute change\n", path_a.c_str(),
               a.what.c_str(), path_b.c_str(), b.what.c_str(), kind_name(a.kind),
               static_cast<int>(metric_name.size()), metric_name.data(), rows.size(),
               shown);
  auto header = [&](std::string_view name) {
    std::fprintf(out, "%14s %14s %14s %9s", ("A " + std::string(name)).c_str(), ("B " + std::string(name)).c_str(),
                 "change", "change%");
  };
  header(metric_name);
  if (other >= 0) {
    std::fputs("  ", out);
    header(a.metrics[other]);
  }
  std::fputs("  name\n", out);
  auto line = [&](const std::array<uint64_t, kMaxMetrics>& before, const std::array<uint64_t, kMaxMetrics>& after,
                  const std::string& name) {
    for (int m : {metric, other}) {
      if (m < 0) continue;
      if (m == other) std::fputs("  ", out);
      if (share_column && m == 1) {
        std::fprintf(out, "%13.2f%% %13.2f%% %14s %9s", share_percent(before[m]), share_percent(after[m]),
                     share_points(before[m], after[m]).c_str(), percent_change(before[m], after[m]).c_str());
        continue;
      }
      std::fprintf(out, "%14" PRIu64 " %14" PRIu64 " %14s %9s", before[m], after[m],
                   signed_count(static_cast<int64_t>(after[m]) - static_cast<int64_t>(before[m])).c_str(),
                   percent_change(before[m], after[m]).c_str());
    }
    std::fprintf(out, "  %s\n", name.c_str());
  };
  for (size_t i = 0; i < shown; ++i) line(rows[i].before, rows[i].after, *rows[i].name);
  line(a.totals, b.totals, "(total)");
}

// --json: the table as one object (rows as shown; shares in percent).
void write_json(FILE* out, const std::string& path_a, const std::string& path_b, const Table& a, const Table& b,
                int metric, const std::vector<Row>& rows, size_t shown, const std::vector<Verdict>& verdicts) {
  const bool shares = a.kind == Kind::kCpu || a.kind == Kind::kMonitor;
  JsonWriter json(out);
  auto values = [&](const std::array<uint64_t, kMaxMetrics>& row) {
    json.begin_object();
    for (size_t m = 0; m < a.metrics.size(); ++m) {
      json.key(a.metrics[m]);
      if (shares && m == 1) {
        json.real(share_percent(row[m]));
      } else {
        json.number(row[m]);
      }
    }
    json.end_object();
  };
  json.begin_object();
  for (const auto& [side, path, table] : {std::tuple{"a", &path_a, &a}, std::tuple{"b", &path_b, &b}}) {
    json.key(side);
    json.begin_object();
    json.field("file", *path);
    json.field("what", table->what);
    json.end_object();
  }
  json.field("kind", kind_name(a.kind));
  json.field("metric", a.metrics[metric]);
  json.field("rows_total", static_cast<uint64_t>(rows.size()));
  json.key("rows");
  json.begin_array();
  for (size_t i = 0; i < shown; ++i) {
    json.begin_object();
    json.field("name", *rows[i].name);
    json.key("a");
    values(rows[i].before);
    json.key("b");
    values(rows[i].after);
    json.end_object();
  }
  json.end_array();
  json.key("total");
  json.begin_object();
  json.key("a");
  values(a.totals);
  json.key("b");
  values(b.totals);
  json.end_object();
  json.key("fail_if");
  json.begin_array();
  for (const Verdict& verdict : verdicts) {
    json.begin_object();
    json.field("expression", verdict.condition->text);
    json.field("met", verdict.met);
    json.field("change", verdict.change);
    json.end_object();
  }
  json.end_array();
  json.end_object();
  json.finish();
}

}  // namespace

int diff_main(int argc, char** argv) {
  Args args;
  if (!parse_args("diff", argc, argv, {"--heap", "--sites", "--cpu", "--monitor", "--stacks", "--json"},
                  {"--value", "--top", "--fail-if", kMaxExpandedOption}, &args)) {
    return kExitBadInput;
  }
  if (args.help) {
    std::fputs(kDiffUsage, stdout);
    return kExitOk;
  }
  if (args.has("--heap") + args.has("--sites") + args.has("--cpu") + args.has("--monitor") > 1) {
    return fail("diff", "--heap, --sites, --cpu, --monitor: give one");
  }
  uint64_t top = 25;
  if (args.has("--top") && !parse_count(args.value("--top"), &top)) return fail("diff", "--top takes a count");
  if (args.operands.size() != 2) return fail("diff", "needs two files, A and B (see fasthprof diff --help)");
  const std::string path_a(args.operands[0]);
  const std::string path_b(args.operands[1]);
  std::unique_ptr<Loaded> a = load("diff", path_a.c_str(), args, true);
  if (a == nullptr) return kExitBadInput;
  std::unique_ptr<Loaded> b = load("diff", path_b.c_str(), args, true);
  if (b == nullptr) return kExitBadInput;

  Kind kind = Kind::kHeap;
  if (args.has("--sites")) {
    kind = Kind::kSites;
  } else if (args.has("--cpu")) {
    kind = Kind::kCpu;
  } else if (args.has("--monitor")) {
    kind = Kind::kMonitor;
  } else if (!args.has("--heap")) {
    bool found = false;
    for (Kind candidate : {Kind::kHeap, Kind::kSites, Kind::kCpu, Kind::kMonitor}) {
      if (has_kind(*a, candidate) && has_kind(*b, candidate)) {
        kind = candidate;
        found = true;
        break;
      }
    }
    if (!found) {
      return fail("diff", "%s and %s hold no kind of report in common (heap dump, ALLOC SITES, CPU, MONITOR TIME)", path_a.c_str(),
                  path_b.c_str());
    }
  }
  // cpu, monitor: shares by default (two runs of one program take different numbers of samples).
  const bool shares = kind == Kind::kCpu || kind == Kind::kMonitor;
  int metric = shares ? 1 : 0;
  if (args.has("--value")) {
    metric = metric_index(kind, args.value("--value"));
    if (metric < 0) {
      return fail("diff", "--value %.*s: no such metric for %s", static_cast<int>(args.value("--value").size()),
                  args.value("--value").data(), kind_name(kind));
    }
  }
  std::vector<Condition> conditions;
  for (std::string_view text : args.values("--fail-if")) {
    Condition condition;
    if (!parse_condition("diff", kind, text, &condition)) return kExitBadInput;
    conditions.push_back(std::move(condition));
  }
  const Grouping grouping = args.has("--stacks") ? Grouping::kStack
                            : shares             ? Grouping::kTopFrame
                                                 : Grouping::kClass;
  Table table_a;
  Table table_b;
  if (!build_table("diff", path_a.c_str(), *a, kind, grouping, 0, &table_a) ||
      !build_table("diff", path_b.c_str(), *b, kind, grouping, 0, &table_b)) {
    return kExitBadInput;
  }
  // Retained sizes cost each dump's dominator tree: computed only when asked for.
  bool retained = kind == Kind::kHeap && metric == 2;
  for (const Condition& condition : conditions) retained = retained || (kind == Kind::kHeap && condition.metric == 2);
  if (retained && (!add_retained("diff", path_a.c_str(), a->model, &table_a) ||
                   !add_retained("diff", path_b.c_str(), b->model, &table_b))) {
    return kExitBadInput;
  }
  // The same hidden class (a lambda) has another address in each run: rows match without it.
  merge_hidden_classes(&table_a);
  merge_hidden_classes(&table_b);
  for (const Table* table : {&table_a, &table_b}) {
    if (!table->coverage.empty()) {
      std::fprintf(stderr, "fasthprof diff: %s: %s\n", table == &table_a ? path_a.c_str() : path_b.c_str(),
                   table->coverage.c_str());
    }
  }

  std::map<std::string_view, Row> merged;
  for (const auto& [name, values] : table_a.rows) merged[name] = Row{&name, values, {}};
  for (const auto& [name, values] : table_b.rows) {
    Row& row = merged[name];
    row.name = &name;
    row.after = values;
  }
  std::vector<Row> rows;
  rows.reserve(merged.size());
  for (const auto& entry : merged) rows.push_back(entry.second);
  auto change = [&](const Row& row, int m) {
    return static_cast<int64_t>(row.after[m]) - static_cast<int64_t>(row.before[m]);
  };
  std::sort(rows.begin(), rows.end(), [&](const Row& x, const Row& y) {
    const int64_t cx = std::llabs(change(x, metric));
    const int64_t cy = std::llabs(change(y, metric));
    if (cx != cy) return cx > cy;
    return *x.name < *y.name;
  });

  std::vector<Verdict> verdicts;
  for (const Condition& condition : conditions) {
    Verdict verdict{&condition, false, {}};
    verdict.met = condition_met(condition, table_a, table_b, &verdict.change);
    verdicts.push_back(std::move(verdict));
  }
  Output output;
  if (!output.open("diff", args.output)) return kExitBadInput;
  FILE* out = output.file();
  const size_t shown = top == 0 ? rows.size() : std::min<size_t>(top, rows.size());
  if (args.has("--json")) {
    write_json(out, path_a, path_b, table_a, table_b, metric, rows, shown, verdicts);
  } else {
    write_table(out, path_a, path_b, table_a, table_b, metric, rows, shown);
  }
  int status = kExitOk;
  for (const Verdict& verdict : verdicts) {
    if (verdict.met) {
      std::fprintf(stderr, "fasthprof diff: --fail-if '%s' met: %s\n", verdict.condition->text.c_str(),
                   verdict.change.c_str());
      status = kExitVerdict;
    }
  }
  if (!output.close("diff")) return kExitBadInput;
  return status;
}

}  // namespace fasthprof::cli
