// The rows `collapsed` and `diff` work on: one report kind of a file (a heap dump's histogram, a
// SITES section, the CPU sections) as named rows of counters, and the `--fail-if` expressions that
// diff evaluates on two such tables.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "cli.h"

namespace fasthprof::cli {

// kMonitor: MONITOR TIME (monitor=y, text files only).
enum class Kind { kHeap, kSites, kCpu, kMonitor };

// How rows are named.
enum class Grouping {
  kClass,     // heap and sites: the class name
  kStack,     // sites: "stack;class" (the folded stack, the allocated class as its leaf); cpu: the stack
  kTopFrame,  // cpu: the method at the top of the stack; monitor: the monitor's class
};

inline constexpr size_t kMaxMetrics = 4;
// A cpu table's share column is in millionths of its total count.
inline constexpr uint64_t kShareScale = 1000000;

struct Table {
  Kind kind = Kind::kHeap;
  std::string what;  // "heap dump 2 (at byte 123)"
  // Metric names, in the order of each row's values: heap bytes, objects; sites live-bytes,
  // live-objects, alloc-bytes, alloc-objects; cpu count, share (millionths of the total count),
  // and for text files' CPU TIME and cpu=old: us (the count: microseconds), share, calls;
  // monitor us (time blocked), share, count (contended enters).
  std::vector<std::string_view> metrics;
  std::map<std::string, std::array<uint64_t, kMaxMetrics>> rows;
  std::array<uint64_t, kMaxMetrics> totals{};
  // Sites: when the section's rows hold less than all the bytes its header says were allocated
  // (the agent cut the list at its cutoff), one line that says how much is missing and how to get
  // it; empty otherwise. The verbs print it on stderr (flame also in the page).
  std::string coverage;
  // Stacks (Grouping::kStack) rooted at their thread's name, as "thread main;...": the file's
  // traces name threads (thread=y) and the verb asked for it (StackRoots).
  bool thread_roots = false;
  // The file's depth when stacks as deep were rooted at truncated_frame(), else 0.
  uint32_t truncated_depth = 0;
};

const char* kind_name(Kind kind);
// The metrics of a kind, as Table::metrics lists them.
std::vector<std::string_view> kind_metrics(Kind kind);
// Index of a metric (or an alias: "bytes" and "objects" for sites' live ones; "samples" and "ms"
// for cpu's count) in kind_metrics(kind), or -1. A cpu --fail-if on share compares the change in
// percentage points of the total.
int metric_index(Kind kind, std::string_view name);

// Fills metric 1 of every row and of the totals with its share of metric 0, in millionths of
// the total (the total's share: all of it, when there is any).
void fill_shares(Table* table);

// Whether a file holds a kind of report.
bool has_kind(const HprofModel& model, Kind kind);
bool has_kind(const Loaded& loaded, Kind kind);

// Fills *table from the model. section: 1-based index of the heap dump / SITES section / CPU
// section; 0 for the default: the last dump, the last SITES section (sites are cumulative), every
// CPU section added up (each one holds the time since the one before). False after a message.
// How kStack rows are rooted: at their thread ("thread NAME;...") when the trace names one
// (thread=y), and below a frame that says so when the trace is as deep as the file's depth and so
// possibly cut ("(truncated at depth N);...", binary files: the text layout records no depth).
struct StackRoots {
  bool threads = false;
  bool truncated = false;
  // A text file's depth= (its layout records none; the user says it): with truncated, its stacks
  // as deep are rooted at truncated_frame() too. 0 leaves a text file's stacks unmarked.
  uint32_t text_depth = 0;
};

// The frame that roots a possibly cut stack.
std::string truncated_frame(uint32_t depth);

bool build_table(const char* verb, const char* path, const HprofModel& model, Kind kind, Grouping grouping,
                 uint64_t section, Table* table, StackRoots roots = {});
// The same from a loaded file, binary or text (profile_text.cpp). Text files hold CPU (CPU
// SAMPLES, CPU TIME, or else the cpu=old table as caller;callee stacks) and MONITOR TIME; their
// times are microseconds computed from each row's share of the total.
bool build_table(const char* verb, const char* path, const Loaded& loaded, Kind kind, Grouping grouping,
                 uint64_t section, Table* table, StackRoots roots = {});

// A name with the addresses of hidden classes left out: "p.Foo$$Lambda$2.0x00007f1730000a08" (the
// agent's spelling), "...+0x..." (HotSpot's dumper) and "...Lambda/0x..." (Class.getName) all become
// "p.Foo$$Lambda$2" ("p.Foo$$Lambda"), in class names and in the frames of stacks. Such addresses
// change from run to run; nothing else in a Java name can be '.', '+' or '/' followed by "0x".
std::string without_hidden_addresses(std::string_view name);

// The table's rows renamed by without_hidden_addresses(), rows that fall together added up; what
// diff compares, so that the same lambda of two runs is one row.
void merge_hidden_classes(Table* table);

// The names of the file's frames that are native methods.
std::unordered_set<std::string> native_frames(const Loaded& loaded);

// The kind collapsed, flame and pprof draw: --cpu, --sites (or --value), --monitor, else the first
// the file holds of CPU, SITES, MONITOR TIME. False after a message (two given, none held).
bool choose_kind(const char* verb, const char* path, const Args& args, const Loaded& loaded, Kind* kind);

// One --fail-if expression: [NAME:]METRIC OP [+|-]NUMBER[%], OP one of > >= < <=. The change
// B - A of METRIC (of the row NAME, or of the totals) compared with NUMBER, or with %, the change
// relative to A (a row absent from A grew by +inf%).
struct Condition {
  std::string text;
  std::string name;  // empty: the totals
  int metric = 0;
  std::string op;
  double number = 0;
  bool percent = false;
};

// Parses text for a table of the kind; false after a message.
bool parse_condition(const char* verb, Kind kind, std::string_view text, Condition* condition);
// Whether the condition holds between a and b; *change gets the change it compared ("+12.5%").
bool condition_met(const Condition& condition, const Table& a, const Table& b, std::string* change);

}  // namespace fasthprof::cli
