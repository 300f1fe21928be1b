// Fuzzes the option parser: the input is "<command line options>\0<_JAVA_HPROF_OPTIONS>" (no NUL:
// no environment value). Whatever the input, the result must be a usable option set, help, or one
// single-line error message.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "options/options.h"

namespace {

void require(bool condition, const char* what) {
  if (!condition) {
    std::fprintf(stderr, "options_fuzz: invariant violated: %s\n", what);
    std::abort();
  }
}

bool one_line(const std::string& text) { return text.find('\n') == std::string::npos; }

void check_ok(const fasthprof::Options& o) {
  using fasthprof::OutputFormat;
  require(o.depth >= 0 && o.interval_ms > 0 && o.cutoff >= 0, "numbers in range");
  require(o.prof_trace_depth == (o.old_timing ? 2 : o.depth), "prof_trace_depth");
  require(!o.old_timing || o.cpu_timing, "cpu=old implies cpu timing");
  require(o.heap_dump || o.alloc_sites || o.cpu_sampling || o.cpu_timing || o.monitor_tracing,
          "something is profiled");
  require(o.format == OutputFormat::kText || (!o.cpu_timing && !o.monitor_tracing),
          "format=b cross-check");
  require(!o.gzip || o.format == OutputFormat::kBinary, "gz=y needs format=b");
  require(o.sample_bytes == 0 || o.alloc_sites, "sample needs allocation tracking");
  require(o.net_host.empty() == (o.net_port == 0), "net host and port together");
  require(o.net_host.empty() || o.file.empty(), "file or net");
  require(o.output_path().empty() == !o.net_host.empty(), "output path");
  for (const std::string& line : fasthprof::missing_feature_warnings(o)) {
    require(!line.empty() && one_line(line), "warning is one line");
  }
  require(one_line(fasthprof::inert_debug_options_note(o)), "inert note is one line");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string input(reinterpret_cast<const char*>(data), size);
  size_t nul = input.find('\0');
  std::string options = input.substr(0, nul);
  std::string env = nul == std::string::npos ? "" : input.substr(nul + 1);
  const char* env_value = nul == std::string::npos ? nullptr : env.c_str();

  fasthprof::ParseResult result = fasthprof::parse_options(options.c_str(), env_value);
  std::string formatted = fasthprof::format_option_error(result);
  switch (result.kind) {
    case fasthprof::ParseResult::Kind::kOk:
      require(result.error.empty() && formatted.empty(), "no error text when ok");
      check_ok(result.options);
      break;
    case fasthprof::ParseResult::Kind::kHelp:
      require(options == "help", "help only for exactly \"help\"");
      break;
    case fasthprof::ParseResult::Kind::kError:
      require(!result.error.empty() && one_line(result.error), "error is one non-empty line");
      require(formatted.rfind("HPROF ERROR: hprof option error: ", 0) == 0, "error prefix");
      require(formatted.find('\n') == formatted.size() - 1, "formatted error is one line");
      break;
  }
  return 0;
}
