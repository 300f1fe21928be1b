#include "options/option_table.h"

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <string>

#include "options/options.h"

namespace fasthprof {
namespace {

// JVMTI SetHeapSamplingInterval takes a jint.
constexpr uint64_t kMaxSampleBytes = 2147483647;

bool parse_switch(std::string_view text, bool* out) {
  if (text == "y") {
    *out = true;
  } else if (text == "n") {
    *out = false;
  } else {
    return false;
  }
  return true;
}

// strtol with the whole value consumed, as the original checked with endptr; out-of-range values
// (which the original wrapped through an int cast) are rejected.
bool parse_long(std::string_view text, int base, long* out) {
  std::string copy(text);
  char* end = nullptr;
  errno = 0;
  long value = std::strtol(copy.c_str(), &end, base);
  if (end == copy.c_str() || *end != '\0' || errno == ERANGE) return false;
  *out = value;
  return true;
}

bool parse_int(std::string_view text, int* out) {
  long value = 0;
  if (!parse_long(text, 10, &value) || value > INT_MAX || value < INT_MIN) return false;
  *out = static_cast<int>(value);
  return true;
}

bool apply_heap(const OptionValue& value, Options* options) {
  if (value.text == "dump") {
    options->heap_dump = true;
  } else if (value.text == "sites") {
    options->alloc_sites = true;
  } else if (value.text == "all") {
    options->heap_dump = options->alloc_sites = true;
  } else {
    return false;
  }
  return true;
}

bool apply_cpu(const OptionValue& value, Options* options) {
  if (value.text == "samples" || value.text == "y") {
    options->cpu_sampling = true;
  } else if (value.text == "times") {
    options->cpu_timing = true;
    options->old_timing = false;
  } else if (value.text == "old") {
    options->cpu_timing = options->old_timing = true;
  } else {
    return false;
  }
  return true;
}

bool apply_format(const OptionValue& value, Options* options) {
  if (value.text == "a") {
    options->format = OutputFormat::kText;
  } else if (value.text == "b") {
    options->format = OutputFormat::kBinary;
  } else {
    return false;
  }
  return true;
}

bool apply_file(const OptionValue& value, Options* options) {
  options->file.assign(value.text);
  return true;
}

// The original passed strtol's result unchecked, so `host:0` and `host:abc` fell through to an
// unnamed file and `host:70000` connected to port 4464; here the port must be 1..65535.
bool apply_net(const OptionValue& value, Options* options) {
  if (value.port.empty() || value.port.size() > 5) return false;
  unsigned port = 0;
  for (char c : value.port) {
    if (c < '0' || c > '9') return false;
    port = port * 10 + static_cast<unsigned>(c - '0');
  }
  if (port == 0 || port > 65535) return false;
  options->net_host.assign(value.text);
  options->net_port = static_cast<uint16_t>(port);
  return true;
}

bool apply_depth(const OptionValue& value, Options* options) {
  int depth = 0;
  if (!parse_int(value.text, &depth) || depth < 0) return false;
  options->depth = options->prof_trace_depth = depth;
  return true;
}

bool apply_interval(const OptionValue& value, Options* options) {
  int interval = 0;
  if (!parse_int(value.text, &interval) || interval <= 0) return false;
  options->interval_ms = interval;
  return true;
}

bool apply_cutoff(const OptionValue& value, Options* options) {
  std::string copy(value.text);
  char* end = nullptr;
  double cutoff = std::strtod(copy.c_str(), &end);
  // NaN is not ">= 0" either; the original let it through.
  if (end == copy.c_str() || *end != '\0' || std::isnan(cutoff) || cutoff < 0) return false;
  options->cutoff = cutoff;
  return true;
}

// The original ignored junk after the number (logflags=abc meant 0); a value that is not a
// number is refused with the row's "must be numeric" text instead.
bool apply_logflags(const OptionValue& value, Options* options) {
  return parse_long(value.text, 0, &options->logflags);
}
bool apply_debugflags(const OptionValue& value, Options* options) {
  return parse_long(value.text, 0, &options->debugflags);
}
bool apply_experiment(const OptionValue& value, Options* options) {
  return parse_long(value.text, 0, &options->experiment);
}

bool apply_sample(const OptionValue& value, Options* options) {
  std::string_view text = value.text;
  if (text.empty()) return false;
  uint64_t multiplier = 1;
  switch (text.back()) {
    case 'k': case 'K': multiplier = uint64_t{1} << 10; break;
    case 'm': case 'M': multiplier = uint64_t{1} << 20; break;
    case 'g': case 'G': multiplier = uint64_t{1} << 30; break;
    default: break;
  }
  if (multiplier != 1) text.remove_suffix(1);
  if (text.empty() || text.size() > 10) return false;
  uint64_t bytes = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    bytes = bytes * 10 + static_cast<uint64_t>(c - '0');
  }
  bytes *= multiplier;
  if (bytes > kMaxSampleBytes) return false;
  options->sample_bytes = bytes;
  return true;
}

bool apply_cpu_stacks(const OptionValue& value, Options* options) {
  if (value.text == "signal") {
    options->cpu_stacks_deferred = false;
  } else if (value.text == "deferred") {
    options->cpu_stacks_deferred = true;
  } else {
    return false;
  }
  return true;
}

bool apply_alloc(const OptionValue& value, Options* options) {
  if (value.text == "auto") {
    options->alloc = AllocCounting::kAuto;
  } else if (value.text == "event") {
    options->alloc = AllocCounting::kEvent;
  } else if (value.text == "inject") {
    options->alloc = AllocCounting::kInject;
  } else {
    return false;
  }
  return true;
}

bool apply_timeout(const OptionValue& value, Options* options) {
  int seconds = 0;
  if (!parse_int(value.text, &seconds) || seconds < 0 || seconds > kMaxNetTimeoutSeconds) return false;
  options->net_timeout_seconds = seconds;
  options->net_timeout_given = true;
  return true;
}

bool apply_sites(const OptionValue& value, Options* options) {
  int sites = 0;
  if (!parse_int(value.text, &sites) || sites < static_cast<int>(kMinMaxSites) ||
      sites > static_cast<int>(kMostMaxSites)) {
    return false;
  }
  options->max_sites = static_cast<uint32_t>(sites);
  options->max_sites_given = true;
  return true;
}

bool apply_commands(const OptionValue& value, Options* options) {
  if (value.text == "all") {
    options->net_commands = Options::NetCommands::kAll;
  } else if (value.text == "noexit") {
    options->net_commands = Options::NetCommands::kNoExit;
  } else if (value.text == "reports") {
    options->net_commands = Options::NetCommands::kReports;
  } else {
    return false;
  }
  options->net_commands_given = true;
  return true;
}

// One apply function per y|n switch, generated from the member it sets.
template <bool Options::*Member>
bool apply_switch(const OptionValue& value, Options* options) {
  return parse_switch(value.text, &(options->*Member));
}

bool apply_verbose(const OptionValue& value, Options* options) {
  if (!parse_switch(value.text, &options->verbose)) return false;
  options->verbose_given = true;
  return true;
}

bool apply_gc_okay(const OptionValue& value, Options* options) {
  bool ignored = false;
  if (!parse_switch(value.text, &ignored)) return false;
  options->gc_okay_given = true;
  return true;
}

// auto|fork|vm|jvmti, or several of them joined by '+', taken in turn one per report.
bool apply_dumper(const OptionValue& value, Options* options) {
  std::vector<HeapDumperChoice> choices;
  std::string_view rest = value.text;
  while (true) {
    size_t plus = rest.find('+');
    std::string_view word = rest.substr(0, plus);
    if (word == "auto") {
      choices.push_back(HeapDumperChoice::kAuto);
    } else if (word == "vm") {
      choices.push_back(HeapDumperChoice::kVm);
    } else if (word == "jvmti") {
      choices.push_back(HeapDumperChoice::kJvmti);
    } else if (word == "fork") {
      choices.push_back(HeapDumperChoice::kFork);
    } else {
      return false;
    }
    if (plus == std::string_view::npos) break;
    rest.remove_prefix(plus + 1);
  }
  if (choices.size() > 16) return false;
  options->dumpers = std::move(choices);
  return true;
}

using B = HelpBlock;
using S = ValueSyntax;

constexpr OptionRow kRows[] = {
    {"heap", "dump|sites|all", "heap profiling", "all", B::kMain, S::kText,
     "syntax error parsing heap=dump|sites|all", "heap option value must be dump|sites|all",
     apply_heap, nullptr, false},
    {"cpu", "samples|times|old", "CPU usage", "off", B::kMain, S::kText,
     "syntax error parsing cpu=y|samples|times|old", "cpu option value must be y|samples|times|old",
     apply_cpu, nullptr, false},
    {"monitor", "y|n", "monitor contention", "n", B::kMain, S::kSwitch,
     "monitor option value must be y|n", "monitor option value must be y|n",
     apply_switch<&Options::monitor_tracing>, nullptr, false},
    {"format", "a|b", "text(txt) or binary output", "a", B::kMain, S::kText,
     "syntax error parsing format=a|b", "format option value must be a|b", apply_format, nullptr,
     false},
    {"file", "<file>", "write data to file", "java.hprof[{.txt}]", B::kMain, S::kText,
     "syntax error parsing file=filename", "syntax error parsing file=filename", apply_file,
     nullptr, true},
    {"net", "<host>:<port>", "send data over a socket", "off", B::kMain, S::kHostPort,
     "net option missing ':'", "invalid port number", apply_net, nullptr, true},
    {"depth", "<size>", "stack trace depth", "4", B::kMain, S::kText,
     "syntax error parsing depth=DECIMAL", "depth option value must be decimal and >= 0",
     apply_depth, nullptr, false},
    {"interval", "<ms>", "sample interval in ms", "10", B::kMain, S::kText,
     "syntax error parsing interval=DECIMAL", "interval option value must be decimal and > 0",
     apply_interval, nullptr, false},
    {"cutoff", "<value>", "output cutoff point", "0.0001", B::kMain, S::kText,
     "syntax error parsing cutoff=DOUBLE", "cutoff option value must be floating point and >= 0",
     apply_cutoff, nullptr, false},
    {"lineno", "y|n", "line number in traces?", "y", B::kMain, S::kSwitch,
     "lineno option value must be y|n", "lineno option value must be y|n",
     apply_switch<&Options::lineno>, nullptr, false},
    {"thread", "y|n", "thread in traces?", "n", B::kMain, S::kSwitch,
     "thread option value must be y|n", "thread option value must be y|n",
     apply_switch<&Options::thread_in_traces>, nullptr, false},
    {"doe", "y|n", "dump on exit?", "y", B::kMain, S::kSwitch, "doe option value must be y|n",
     "doe option value must be y|n", apply_switch<&Options::doe>, nullptr, false},
    {"msa", "y|n", "Solaris micro state accounting", "n", B::kMain, S::kSwitch,
     "msa option value must be y|n", "msa option value must be y|n",
     apply_switch<&Options::msa>, nullptr, false},
    {"force", "y|n", "force output to <file>", "y", B::kMain, S::kSwitch,
     "force option value must be y|n", "force option value must be y|n",
     apply_switch<&Options::force>, nullptr, false},
    {"verbose", "y|n", "print messages about dumps", "y", B::kMain, S::kSwitch,
     "verbose option value must be y|n", "verbose option value must be y|n",
     apply_verbose, nullptr, false},

    {"gc_okay", "y|n", "", "", B::kObsolete, S::kSwitch, "gc_okay option value must be y|n",
     "gc_okay option value must be y|n", apply_gc_okay, nullptr, false},

    {"primfields", "y|n", "include primitive field values", "y", B::kDebug, S::kSwitch,
     "primfields option value must be y|n", "primfields option value must be y|n",
     apply_switch<&Options::primfields>, nullptr, false},
    {"primarrays", "y|n", "include primitive array values", "y", B::kDebug, S::kSwitch,
     "primarrays option value must be y|n", "primarrays option value must be y|n",
     apply_switch<&Options::primarrays>, nullptr, false},
    {"debugflags", "MASK", "Various debug flags", "0", B::kDebug, S::kText,
     "debugflags option value must be numeric", "debugflags option value must be numeric",
     apply_debugflags, nullptr, false},
    {"logflags", "MASK", "Logging to stderr", "0", B::kDebug, S::kText,
     "logflags option value must be numeric", "logflags option value must be numeric",
     apply_logflags, nullptr, false},
    {"coredump", "y|n", "Core dump on fatal", "n", B::kDebug, S::kSwitch,
     "coredump option value must be y|n", "coredump option value must be y|n",
     apply_switch<&Options::coredump>, nullptr, false},
    {"errorexit", "y|n", "Exit on any error", "n", B::kDebug, S::kSwitch,
     "errorexit option value must be y|n", "errorexit option value must be y|n",
     apply_switch<&Options::errorexit>, nullptr, false},
    {"pause", "y|n", "Pause on onload & echo PID", "n", B::kDebug, S::kSwitch,
     "pause option value must be y|n", "pause option value must be y|n",
     apply_switch<&Options::pause>, nullptr, false},
    {"debug", "y|n", "Turn on all debug checking", "n", B::kDebug, S::kSwitch,
     "debug option value must be y|n", "debug option value must be y|n",
     apply_switch<&Options::debug>, nullptr, false},
    {"X", "MASK", "Internal use only", "0", B::kDebug, S::kText, "X option value must be numeric",
     "X option value must be numeric", apply_experiment, nullptr, false},
    {"exitpause", "", "", "", B::kDebug, S::kRemoved,
     "The exitpause option was removed, use -XX:OnError='cmd %%p'", "", nullptr, nullptr, false},
    {"precrash", "", "", "", B::kDebug, S::kRemoved,
     "The precrash option was removed, use -XX:OnError='precrash -p %%p'", "", nullptr, nullptr,
     false},

    {"sample", "<bytes>", "allocation sampling interval", "0", B::kFasthprof, S::kText,
     "syntax error parsing sample=BYTES",
     "sample option value must be decimal bytes with an optional k|m|g suffix and <= 2147483647",
     apply_sample,
     "0 tracks every allocation exactly. Otherwise the JVM\n"
     "samples about one allocation per interval of <bytes>\n"
     "bytes allocated (k|m|g suffixes: sample=512k), and each\n"
     "sampled object counts as weight allocations of its\n"
     "site: weight = 1 / (1 - exp(-object size / interval)),\n"
     "the inverse of its chance to be sampled (about\n"
     "interval / size for small objects, 1 for large ones).",
     false},
    {"live", "y|n", "live counts in heap=sites", "y", B::kFasthprof, S::kSwitch,
     "live option value must be y|n", "live option value must be y|n", apply_switch<&Options::live>,
     "n: heap=sites counts every allocation exactly as with\n"
     "y, but follows no object afterwards (no site in its\n"
     "header or tag, no collection and heap walk at each\n"
     "report): the\n"
     "program runs faster, and the live columns of SITES\n"
     "repeat the allocated ones. Needs heap=sites, not\n"
     "heap=all (a dump names each object's site).",
     false},
    {"alloc", "<how>", "how heap=sites counts", "auto", B::kFasthprof, S::kText,
     "syntax error parsing alloc=auto|event|inject", "alloc option value must be auto|event|inject",
     apply_alloc,
     "auto|event|inject. event: the JVM reports every\n"
     "allocation (a JVMTI event and a stack walk per object).\n"
     "inject: code put before each allocation instruction\n"
     "counts it in Java, with no event and no stack walk\n"
     "(natives and JNI by the VMObjectAlloc event): several\n"
     "times faster. Traces deeper than one frame come from a\n"
     "walk of the thread's frames, cached by the code they\n"
     "run (the agent sets -XX:+PreserveFramePointer for it);\n"
     "when attached or with cpu=times, from a stack kept by\n"
     "calls put into every method. The JIT's intrinsics that\n"
     "allocate (Object.clone, Arrays.copyOf, ...) are turned\n"
     "off, so that what they make is counted (not when the\n"
     "agent is attached). Live counts: the code after each\n"
     "allocation writes the object's site into its header,\n"
     "read by a heap walk at each report (HotSpot 17 or 25,\n"
     "Serial, Parallel or G1, traces by the walk, no\n"
     "thread=y); with heap=all, a dump names each object's\n"
     "site from it too. Needs heap=sites or heap=all.\n"
     "auto: inject with heap=sites|all and no sample=,\n"
     "unless the agent is attached, or with live counts\n"
     "thread=y or cpu=times; event otherwise (and where\n"
     "inject cannot start: said with verbose=y).",
     false},
    {"sites", "<n>", "most allocation sites kept", "262144", B::kFasthprof, S::kText,
     "syntax error parsing sites=N", "sites option value must be a number from 1024 to 1048575",
     apply_sites,
     "heap=sites keeps up to <n> distinct sites (a class and\n"
     "its trace; deep traces make more of them). Allocations\n"
     "at new sites beyond are not counted: one line says so\n"
     "when it first happens and how many at exit. Memory is\n"
     "reserved up front (about 100 bytes a site plus 16 a\n"
     "frame) and used as sites come.",
     false},
    {"gz", "y|n", "gzip the binary output", "n", B::kFasthprof, S::kSwitch,
     "gz option value must be y|n", "gz option value must be y|n", apply_switch<&Options::gzip>,
     nullptr, false},
    {"timeout", "<seconds>", "net= peer stall limit", "10", B::kFasthprof, S::kText,
     "syntax error parsing timeout=SECONDS", "timeout option value must be seconds from 0 to 86400",
     apply_timeout,
     "A net= peer that takes no data for this long is\n"
     "disconnected, with one message, and output ends for\n"
     "the rest of the run (until then the program may wait\n"
     "for it: a heap dump keeps its threads suspended until\n"
     "the dump is sent). A peer that reads slowly but\n"
     "steadily gets everything. 0 waits for ever.",
     false},
    {"commands", "<which>", "net= commands obeyed", "all", B::kFasthprof, S::kText,
     "syntax error parsing commands=all|noexit|reports", "commands option value must be all|noexit|reports",
     apply_commands,
     "all|noexit|reports: which commands the net= peer may\n"
     "send back. noexit ignores EXIT; reports also ignores\n"
     "GC and CONTROL, keeping only those that write output\n"
     "(a heap dump not by fork holds the program as it runs).\n"
     "The channel is plaintext and unauthenticated\n"
     "(docs/net.md).",
     false},
    {"dumper", "<who>", "who writes a binary heap dump", "auto", B::kFasthprof, S::kText,
     "syntax error parsing dumper=auto|fork|vm|jvmti",
     "dumper option value must be auto|fork|vm|jvmti, or several joined by +",
     apply_dumper,
     "auto|fork|vm|jvmti. fork: HotSpot's own dumper in a\n"
     "child forked at a safepoint: the program stops for the\n"
     "fork only (JDK 17, 25; Serial, Parallel, G1; memory\n"
     "for the child's copies), else vm. vm: HotSpot's dumper\n"
     "(the speed of jcmd GC.heap_dump) through the JVM's\n"
     "attach socket; the program stops for the whole dump.\n"
     "jvmti: fasthprof's heap walk. auto (the default): fork,\n"
     "else vm (JDK 17, 22+, attach allowed), else jvmti; the\n"
     "walk whenever the dump needs what only it gives\n"
     "(heap=all traces, primfields=n, primarrays=n, format=a).\n"
     "A list joined by + is taken in turn, one per report\n"
     "(dumper=fork+jvmti). verbose=y says which ran and why.",
     false},
    {"cpustacks", "<how>", "how cpu=samples takes stacks", "signal", B::kFasthprof, S::kText,
     "syntax error parsing cpustacks=signal|deferred", "cpustacks option value must be signal|deferred",
     apply_cpu_stacks,
     "signal|deferred. signal: each counted thread walks\n"
     "its own stack in a SIGPROF handler. deferred: one\n"
     "stack request per counted thread, which waits until\n"
     "the thread runs; also used when signals cannot be\n"
     "(another profiler owns SIGPROF). With verbose=y the\n"
     "sampler's figures are printed on stderr at exit.",
     false},
};

}  // namespace

std::span<const OptionRow> option_table() { return kRows; }

const OptionRow* find_option(std::string_view name) {
  for (const OptionRow& row : kRows) {
    if (name == row.name) return &row;
  }
  return nullptr;
}

}  // namespace fasthprof
