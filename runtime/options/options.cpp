#include "options/options.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstdio>
#include <string_view>

#include "options/option_table.h"

namespace fasthprof {
namespace {

// The original's token buffers (hprof_init.c): a token must fit with its terminating NUL.
constexpr size_t kNameBuffer = 16;
constexpr size_t kTextBuffer = 4096 + 1;  // FILENAME_MAX + 1
constexpr size_t kSwitchBuffer = 80;
constexpr size_t kPortBuffer = 16;

constexpr const char* kGeneralSyntaxError = "general syntax error parsing options";
constexpr const char* kFileOrNetTwice = "file or net options should only appear once";
constexpr const char* kNetMissingPort = "net option missing port";

// The original's get_tok: the token runs to `separator` or the end. An empty token, or one that
// does not fit `buffer_size` with its NUL, yields false; an empty token still consumes its separator,
// an oversized one consumes nothing (either way parsing stops with an error).
bool next_token(std::string_view* rest, char separator, size_t buffer_size,
                std::string_view* token) {
  if (rest->empty()) return false;
  size_t at = rest->find(separator);
  size_t length = at == std::string_view::npos ? rest->size() : at;
  if (length + 1 > buffer_size) return false;
  *token = rest->substr(0, length);
  rest->remove_prefix(at == std::string_view::npos ? length : length + 1);
  return length > 0;
}

// net=host:port, with the host running to the first ':' as in the original, plus two forms the
// original could never parse (its host would be empty or cut at the address's first ':'), so no old
// command line changes: net=[v6-address]:port, and net=v6-address:port, an IPv6 literal without
// brackets, where the last ':' before the next ',' starts the port (the port is required, so that
// is the one reading, even where the whole would also be an address: fe80::1:9000). An IPv6
// address with no port after it (net=::1) gets *error "missing port".
bool next_host(std::string_view* rest, std::string_view* host, std::string* error) {
  if (rest->empty()) return false;
  if (rest->front() != '[') {
    std::string_view value = rest->substr(0, rest->find(','));
    size_t last = value.rfind(':');
    if (last != std::string_view::npos && value.find(':') != last && last <= kTextBuffer) {
      std::string candidate(value.substr(0, last));
      in6_addr address;
      if (inet_pton(AF_INET6, candidate.c_str(), &address) == 1) {
        *host = value.substr(0, last);
        rest->remove_prefix(last + 1);
        return true;
      }
      // "::1": an IPv6 address whole, no port after it.
      if (inet_pton(AF_INET6, std::string(value).c_str(), &address) == 1) {
        *error = kNetMissingPort;
        return false;
      }
    }
    return next_token(rest, ':', kTextBuffer, host);
  }
  size_t close = rest->find(']');
  if (close == std::string_view::npos || close == 1 || close + 1 >= rest->size() ||
      (*rest)[close + 1] != ':' || close > kTextBuffer) {
    return false;
  }
  *host = rest->substr(1, close - 1);
  rest->remove_prefix(close + 2);
  return true;
}

// Control characters would split the one-line error message; write them as \xNN.
std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) {
      char escaped[5];
      std::snprintf(escaped, sizeof(escaped), "\\x%02x", byte);
      out += escaped;
    } else {
      out += c;
    }
  }
  return out;
}

// Takes an rvalue reference so that callers may build `what` from views into options.all_options.
ParseResult error_result(Options&& options, std::string what) {
  ParseResult result;
  result.kind = ParseResult::Kind::kError;
  result.options = std::move(options);
  result.error = std::move(what);
  return result;
}

// Returns "" when the value was read and applied, else the error text.
std::string read_value(const OptionRow& row, std::string_view* rest, Options* options) {
  OptionValue value;
  switch (row.syntax) {
    case ValueSyntax::kRemoved:
      return row.syntax_error;
    case ValueSyntax::kText:
    case ValueSyntax::kSwitch: {
      size_t buffer = row.syntax == ValueSyntax::kText ? kTextBuffer : kSwitchBuffer;
      if (!next_token(rest, ',', buffer, &value.text)) return row.syntax_error;
      break;
    }
    case ValueSyntax::kHostPort: {
      std::string error;
      if (!next_host(rest, &value.text, &error)) return error.empty() ? row.syntax_error : error;
      if (!next_token(rest, ',', kPortBuffer, &value.port)) return kNetMissingPort;
      break;
    }
  }
  if (!row.apply(value, options)) return row.value_error;
  return "";
}

// docs/compatibility.md §1.4, then the checks of fasthprof's own options.
std::string check_combination(Options* options) {
  if (options->format == OutputFormat::kBinary) {
    if (options->cpu_timing) return "cpu=times|old is not supported with format=b";
    if (options->monitor_tracing) return "monitor=y is not supported with format=b";
  }
  if (options->depth > kMaxDepth) {
    return "depth option value must be <= " + std::to_string(kMaxDepth);
  }
  if (options->old_timing) options->prof_trace_depth = 2;
  if (!options->cpu_timing && !options->cpu_sampling && !options->monitor_tracing &&
      !options->alloc_sites && !options->heap_dump) {
    options->heap_dump = options->alloc_sites = true;
  }
  if (options->gzip && options->format != OutputFormat::kBinary) {
    return "gz=y is not supported with format=a";
  }
  if (options->sample_bytes != 0 && !options->alloc_sites) {
    return "sample=<bytes> needs heap=sites or heap=all";
  }
  if (options->max_sites_given && !options->alloc_sites) {
    return "sites=<n> needs heap=sites or heap=all";
  }
  if (!options->live && (!options->alloc_sites || options->heap_dump)) {
    return "live=n needs heap=sites without heap=dump (a heap dump names each object's allocation site)";
  }
  if (options->alloc == AllocCounting::kInject && !options->alloc_sites) {
    return "alloc=inject needs heap=sites or heap=all";
  }
  if (options->net_timeout_given && options->net_host.empty()) {
    return "timeout=<seconds> needs net=<host>:<port>";
  }
  if (options->net_commands_given && options->net_host.empty()) {
    return "commands=<which> needs net=<host>:<port>";
  }
  return "";
}

}  // namespace

std::string Options::output_path() const {
  if (!file.empty()) return file;
  if (!net_host.empty()) return "";
  if (gzip) return kDefaultGzipFile;
  return format == OutputFormat::kBinary ? kDefaultBinaryFile : kDefaultTextFile;
}

ParseResult parse_options(const char* command_line, const char* env_value) {
  std::string_view given = command_line != nullptr ? command_line : "";
  std::string_view extra = env_value != nullptr ? env_value : "";
  ParseResult result;
  if (given == "help") {
    result.kind = ParseResult::Kind::kHelp;
    return result;
  }

  Options options;
  options.all_options.assign(given);
  if (!extra.empty()) {
    if (!given.empty()) options.all_options += ',';
    options.all_options += extra;
  }

  bool file_or_net_seen = false;
  std::string_view rest = options.all_options;
  while (!rest.empty()) {
    std::string_view name;
    if (!next_token(&rest, '=', kNameBuffer, &name)) {
      return error_result(std::move(options), kGeneralSyntaxError);
    }
    const OptionRow* row = find_option(name);
    if (row == nullptr) {
      return error_result(std::move(options), "Unknown option: " + printable(name));
    }
    if (row->file_or_net) {
      if (file_or_net_seen) return error_result(std::move(options), kFileOrNetTwice);
      file_or_net_seen = true;
    }
    // `rest` points into options.all_options, which read_value never modifies.
    std::string error = read_value(*row, &rest, &options);
    if (!error.empty()) return error_result(std::move(options), std::move(error));
  }

  std::string error = check_combination(&options);
  if (!error.empty()) return error_result(std::move(options), std::move(error));
  result.options = std::move(options);
  return result;
}

std::string format_option_error(const ParseResult& result) {
  if (result.kind != ParseResult::Kind::kError) return "";
  return "HPROF ERROR: hprof option error: " + printable(result.error) + " (" +
         printable(result.options.all_options) + ")\n";
}

namespace {

constexpr size_t kSyntaxColumn = 23;
constexpr size_t kDescriptionColumn = 31;
constexpr const char* kNoteIndent = "                        ";

void pad_to(std::string* out, size_t line_start, size_t width) {
  size_t used = out->size() - line_start;
  out->append(used < width ? width - used : 1, ' ');
}

void append_rows(std::string* out, HelpBlock block) {
  for (const OptionRow& row : option_table()) {
    if (row.block != block) continue;
    size_t start = out->size();
    *out += row.name;
    *out += '=';
    *out += row.help_syntax;
    if (block != HelpBlock::kObsolete) {
      pad_to(out, start, kSyntaxColumn);
      size_t description_start = out->size();
      *out += row.description;
      pad_to(out, description_start, kDescriptionColumn);
      *out += row.default_text;
    }
    *out += '\n';
    if (row.help_note != nullptr) {
      std::string_view note = row.help_note;
      while (!note.empty()) {
        size_t end = note.find('\n');
        std::string_view line = note.substr(0, end);
        *out += kNoteIndent;
        *out += line;
        *out += '\n';
        note.remove_prefix(end == std::string_view::npos ? note.size() : end + 1);
      }
    }
  }
}

}  // namespace

std::string usage_text() {
  std::string out =
      "\n"
      "     fasthprof: Heap and CPU Profiling Agent (drop-in replacement for JDK HPROF)\n"
      "\n"
      "hprof usage: java -agentlib:hprof=[help]|[<option>=<value>, ...]\n"
      "\n"
      "Option Name and Value  Description                    Default\n"
      "---------------------  -----------                    -------\n";
  append_rows(&out, HelpBlock::kMain);
  out +=
      "\n"
      "Obsolete Options\n"
      "----------------\n";
  append_rows(&out, HelpBlock::kObsolete);
  out +=
      "\n"
      "fasthprof Options      Description                    Default\n"
      "-----------------      -----------                    -------\n";
  append_rows(&out, HelpBlock::kFasthprof);
  out +=
      "\n"
      "Examples\n"
      "--------\n"
      "  - Get sample cpu information every 20 millisec, with a stack depth of 3:\n"
      "      java -agentlib:hprof=cpu=samples,interval=20,depth=3 classname\n"
      "  - Get heap usage information based on the allocation sites:\n"
      "      java -agentlib:hprof=heap=sites classname\n"
      "  - Sample about one allocation per 512 KiB instead of tracking each one:\n"
      "      java -agentlib:hprof=heap=sites,sample=512k classname\n"
      "  - Count every allocation exactly, without live counts (cheaper still: no\n"
      "    collection and heap walk at reports):\n"
      "      java -agentlib:hprof=heap=sites,live=n classname\n"
      "\n"
      "Notes\n"
      "-----\n"
      "  - The option format=b cannot be used with monitor=y.\n"
      "  - The option format=b cannot be used with cpu=old|times.\n"
      "  - The option gz=y needs format=b; sample=<bytes> needs heap=sites|all.\n"
      "  - The option live=n needs heap=sites, without heap=dump (or heap=all);\n"
      "    sites=<n> needs heap=sites|all; alloc=inject needs heap=sites|all.\n"
      "  - gz=y writes gzip in the layout of jcmd GC.heap_dump -gz (1 MiB members);\n"
      "    the default file is then java.hprof.gz. gzip -d gives the plain file.\n"
      "  - The option depth=<size> is at most 65535, the most a binary file records.\n"
      "  - cpu=times|old keeps its traces in the Java heap, in at most 1/16 of the\n"
      "    maximum heap (4 to 128 MiB); traces beyond are counted as <empty trace>,\n"
      "    and an OutOfMemoryError stops the counting (one message each).\n"
      "  - The options timeout=<seconds> and commands=<which> need net=<host>:<port>.\n"
      "  - net= takes an IPv6 address as [::1]:9000, or as ::1:9000 (the last ':'\n"
      "    starts the port).\n"
      "  - Use of the -Xrunhprof interface can still be used, e.g.\n"
      "       java -Xrunhprof:[help]|[<option>=<value>, ...]\n"
      "    will behave exactly the same as:\n"
      "       java -agentlib:hprof=[help]|[<option>=<value>, ...]\n"
      "  - Options in the environment variable _JAVA_HPROF_OPTIONS are appended\n"
      "    to the command line options.\n"
      "\n"
      "Warnings\n"
      "--------\n"
      "  - Output files are created with mode 0600: heap dumps can hold passwords,\n"
      "    keys and personal data.\n"
      "  - The -Xrunhprof interface may be removed from the JDK in a future release.\n";
  return out;
}

namespace {

// What fasthprof does not serve yet. Each feature's issue flips its flag; once every flag is true
// the agent prints no such line.
constexpr bool kHeapDumpImplemented = true;
constexpr bool kAllocSitesImplemented = true;
constexpr bool kCpuSamplesImplemented = true;
constexpr bool kCpuTimesImplemented = true;  // cpu=times and cpu=old
constexpr bool kMonitorImplemented = true;
constexpr bool kSamplingImplemented = true;
constexpr bool kGzipImplemented = true;
constexpr bool kVerifyImplemented = true;  // logflags=0x4
constexpr bool kPrimitiveFilterImplemented = true;  // primfields=n, primarrays=n

constexpr long kLogCheckBinary = 0x4;

struct PendingFeature {
  const char* option;
  bool implemented;
  bool (*requested)(const Options&);
  const char* missing;
};

constexpr PendingFeature kPendingFeatures[] = {
    {"heap=dump", kHeapDumpImplemented, [](const Options& o) { return o.heap_dump; },
     "no HEAP DUMP will be written"},
    {"heap=sites", kAllocSitesImplemented, [](const Options& o) { return o.alloc_sites; },
     "no SITES records will be written"},
    {"cpu=samples", kCpuSamplesImplemented, [](const Options& o) { return o.cpu_sampling; },
     "no CPU SAMPLES records will be written"},
    {"cpu=times", kCpuTimesImplemented,
     [](const Options& o) { return o.cpu_timing && !o.old_timing; },
     "no CPU TIME records will be written"},
    {"cpu=old", kCpuTimesImplemented, [](const Options& o) { return o.old_timing; },
     "no CPU TIME records will be written"},
    {"monitor=y", kMonitorImplemented, [](const Options& o) { return o.monitor_tracing; },
     "no MONITOR DUMP or MONITOR TIME records will be written"},
    {"sample=<bytes>", kSamplingImplemented, [](const Options& o) { return o.sample_bytes != 0; },
     "allocation sampling is not available"},
    {"gz=y", kGzipImplemented, [](const Options& o) { return o.gzip; },
     "output is not compressed"},
    {"logflags=0x4", kVerifyImplemented,
     [](const Options& o) { return (o.logflags & kLogCheckBinary) != 0; },
     "binary file is not verified at exit"},
    {"primfields=n", kPrimitiveFilterImplemented, [](const Options& o) { return !o.primfields; },
     "primitive field values are still written"},
    {"primarrays=n", kPrimitiveFilterImplemented, [](const Options& o) { return !o.primarrays; },
     "primitive array contents are still written"},
};

std::string hex(long value) {
  char text[32];
  std::snprintf(text, sizeof(text), "0x%lx", static_cast<unsigned long>(value));
  return text;
}

}  // namespace

std::vector<std::string> missing_feature_warnings(const Options& options) {
  std::vector<std::string> lines;
  for (const PendingFeature& feature : kPendingFeatures) {
    if (feature.implemented || !feature.requested(options)) continue;
    lines.push_back(std::string("fasthprof: ") + feature.option + " is not implemented yet: " +
                    feature.missing);
  }
  return lines;
}

bool counts_by_injection(const Options& options, bool attached) {
  switch (options.alloc) {
    case AllocCounting::kInject:
      return true;
    case AllocCounting::kEvent:
      return false;
    case AllocCounting::kAuto:
      break;
  }
  // Live counts by injection mark each object with its site in its header, which names no thread
  // and needs traces by the frame walk, not cpu=times' shadow stack (agent/sites/object_marks.h);
  // where the VM's headers have no room the agent falls back to the event at start.
  if (options.live && (options.thread_in_traces || options.cpu_timing)) return false;
  // heap=all too: a dump names each object's site from its header (agent/heap/marked_object_tags.h).
  return options.alloc_sites && options.sample_bytes == 0 && !attached;
}

std::string inert_debug_options_note(const Options& options) {
  std::string names;
  auto add = [&names](const std::string& name) {
    names += names.empty() ? "" : ", ";
    names += name;
  };
  if (options.msa) add("msa=y (Solaris only)");
  if (options.gc_okay_given) add("gc_okay (obsolete)");
  if ((options.logflags & ~kLogCheckBinary) != 0) {
    add("logflags=" + hex(options.logflags & ~kLogCheckBinary) + " (only 0x4 is used)");
  }
  if (options.debugflags != 0) add("debugflags=" + hex(options.debugflags));
  if (options.coredump) add("coredump=y");
  if (options.errorexit) add("errorexit=y");
  if (options.debug) add("debug=y");
  if (options.experiment != 0) add("X=" + hex(options.experiment));
  if (names.empty()) return "";
  return "fasthprof: accepted but without effect: " + names;
}

}  // namespace fasthprof
