// Agent options: the HPROF option string (docs/compatibility.md §1), fasthprof's additions, the help
// text and the start-up notes about features that are accepted but not served yet.
// The parser itself is driven by option_table.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fasthprof {

enum class OutputFormat { kText, kBinary };

// Who writes a heap dump: the best that can (auto: fork, else vm, else jvmti), HotSpot's own dumper
// in a child forked at a safepoint (fork, docs/heap-dumps.md), HotSpot's dumper through the attach
// socket whenever it can be used at all (vm), or the agent's JVMTI walk (jvmti).
enum class HeapDumperChoice { kAuto, kVm, kJvmti, kFork };

// How heap=sites counts allocations (alloc=): see Options::alloc and counts_by_injection.
enum class AllocCounting { kAuto, kEvent, kInject };

inline constexpr const char* kDefaultBinaryFile = "java.hprof";
inline constexpr const char* kDefaultTextFile = "java.hprof.txt";
inline constexpr const char* kDefaultGzipFile = "java.hprof.gz";
inline constexpr int kDefaultNetTimeoutSeconds = 10;
inline constexpr int kMaxNetTimeoutSeconds = 86400;

// The largest depth= accepted: CONTROL SETTINGS records the depth in a u2, so a deeper trace could
// not be described by the file it lands in. It also bounds every buffer the depth sizes (1 MiB of
// frames per allocating thread, 64 MiB of signal-handler slots for cpu=samples).
inline constexpr int kMaxDepth = 65535;

// sites=<n>: the default and the bounds. The most is what an object's tag can name (live counts
// find each object's site from its tag: runtime/sections/allocation_event.h).
inline constexpr uint32_t kDefaultMaxSites = uint32_t{1} << 18;
inline constexpr uint32_t kMinMaxSites = 1024;
inline constexpr uint32_t kMostMaxSites = (uint32_t{1} << 20) - 1;

struct Options {
  bool heap_dump = false, alloc_sites = false;  // heap=dump|sites|all (accumulate)
  bool cpu_sampling = false, cpu_timing = false, old_timing = false;  // cpu=samples|y|times|old
  bool monitor_tracing = false;
  OutputFormat format = OutputFormat::kText;
  std::string file;  // as given by file= (empty if not given)
  std::string net_host;  // net= given when !net_host.empty()
  uint16_t net_port = 0;
  int depth = 4;             // max_trace_depth
  int prof_trace_depth = 4;  // 2 for cpu=old
  int interval_ms = 10;
  double cutoff = 0.0001;
  bool lineno = true, thread_in_traces = false, doe = true, msa = false, force = true, verbose = true;
  bool verbose_given = false;  // verbose=y written out, not just the default
  bool primfields = true, primarrays = true;
  long logflags = 0, debugflags = 0, experiment = 0;  // experiment is X=
  bool coredump = false, errorexit = false, pause = false, debug = false;
  bool gc_okay_given = false;
  // fasthprof's own options
  uint64_t sample_bytes = 0;  // sample=<bytes> (k/m/g suffixes); 0 = exact tracking
  bool gzip = false;          // gz=y|n
  // live=y|n: heap=sites follows each object after its allocation (its site in its header, or a tag
  // on the event path; a collection and a heap walk at each report) to count the live ones; n counts
  // allocations alone.
  bool live = true;
  // alloc=auto|event|inject: heap=sites counts allocations by the JVMTI event per object (event), or
  // by code injected before each allocation instruction, and after it for live counts (inject).
  // auto (the default): inject where it counts every allocation exactly (counts_by_injection), the
  // event elsewhere.
  AllocCounting alloc = AllocCounting::kAuto;
  // sites=<n>: how many distinct allocation sites heap=sites keeps (its table is reserved up front;
  // allocations at sites beyond are counted as dropped, said when it first happens).
  uint32_t max_sites = kDefaultMaxSites;
  bool max_sites_given = false;
  // timeout=<seconds>: how long a net= peer may take no data before the connection is given up;
  // 0 waits for ever.
  int net_timeout_seconds = kDefaultNetTimeoutSeconds;
  bool net_timeout_given = false;
  // commands=all|noexit|reports: which net= commands the agent obeys. noexit ignores EXIT; reports
  // ignores EXIT, GC and CONTROL too (every command that changes the program or the profile's
  // state), keeping the ones that only write output.
  enum class NetCommands { kAll, kNoExit, kReports };
  NetCommands net_commands = NetCommands::kAll;
  bool net_commands_given = false;
  // cpustacks=signal|deferred: how cpu=samples takes the stacks of the threads it counted (see
  // agent/cpu/cpu_sampler.h). Deferred is the fallback the agent also picks by itself when signals
  // cannot be used; the option exists to compare the two and to turn the signals off.
  bool cpu_stacks_deferred = false;
  // dumper=auto|vm|jvmti, or several joined by '+' (dumper=vm+jvmti): which heap dumper writes a
  // binary heap dump (agent/heap/vm_heap_dump.h). A list is taken in turn, one entry per report.
  std::vector<HeapDumperChoice> dumpers{HeapDumperChoice::kAuto};
  // The combined string (command line + "," + _JAVA_HPROF_OPTIONS), echoed in errors.
  std::string all_options;

  // The file to write: file= as given, else java.hprof (format=b) / java.hprof.txt (format=a);
  // empty with net=. Allocates the returned string.
  std::string output_path() const;

  // The agent's own diagnostics (allocator, pipeline statistics, fallbacks) go to stderr only when
  // the user wrote verbose=y: the default verbose=y prints the original's dump messages alone, and a
  // user's logs see every line the agent prints.
  bool diagnostics() const { return verbose && verbose_given; }
};

struct ParseResult {
  enum class Kind { kOk, kHelp, kError } kind = Kind::kOk;
  Options options;    // valid when kOk; all_options is set for kError too
  std::string error;  // the <what> part, e.g. "Unknown option: foo", when kError; one line
};

// Parses the agent's option string as the original did (tokenizer quirks, error texts, the
// cross-checks after the loop, the default heap=all). `options` may be null (treated as "");
// `env_value` is _JAVA_HPROF_OPTIONS or null. `help` is recognised only when `options` is exactly
// "help". Stops at the first error. Allocates; never fails otherwise. Any thread.
ParseResult parse_options(const char* options, const char* env_value);

// "HPROF ERROR: hprof option error: <what> (<all options>)\n", one line (control characters in
// the echoed options are written as \xNN). Allocates. Any thread.
std::string format_option_error(const ParseResult& result);

// The full `help` text (docs/compatibility.md §1.7 layout), generated from the option table.
// Allocates. Any thread.
std::string usage_text();

// One line per requested feature that is not implemented yet, each
// "fasthprof: <option> is not implemented yet: <what is missing>"; empty when everything requested
// is served. Allocates. Any thread.
std::vector<std::string> missing_feature_warnings(const Options& options);

// One line naming the accepted options that have no effect today (printed only under verbose=y),
// or "" when none was given. Allocates. Any thread.
std::string inert_debug_options_note(const Options& options);

// Whether heap=sites (or heap=all) counts by injected code: alloc=inject, or alloc=auto where the injected code
// counts every allocation exactly and nothing asked for needs the event: live=n, no sample=, not
// loaded into a running VM (there the JIT's allocating intrinsics, compiled already, cannot be held
// back, docs/allocation-sites.md). Any thread.
bool counts_by_injection(const Options& options, bool attached);

}  // namespace fasthprof
