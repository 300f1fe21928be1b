// `fasthprof collapsed FILE`: folded stacks, one line per stack, for flame graph tools.
#include <cinttypes>
#include <cstdio>

#include "profile.h"
#include "verbs.h"

namespace fasthprof::cli {

const char kCollapsedUsage[] =
    "usage: fasthprof collapsed [--cpu | --sites [--value METRIC] | --monitor]\n"
    "                           [--threads] [--section N] [-o OUT] FILE\n"
    "Writes the folded-stack format that flame graph tools read (flamegraph.pl,\n"
    "speedscope, inferno, Grafana): one line per stack, frames from the outermost to\n"
    "the innermost joined by ';', a space, and the stack's count:\n"
    "    java.lang.Thread.run;Worker.loop;Worker.hash 1234\n"
    "Frames are class.method (a ';' in a name becomes ':'); a trace of no frames is\n"
    "<empty trace>.\n"
    "Lines are sorted by stack; stacks whose count is 0 are left out.\n"
    "  --cpu      the CPU sections (cpu=samples: samples; cpu=times: ms in a binary\n"
    "             file, us in a text one), every section added up (each holds the\n"
    "             time since the one before); the default when the file has one. A\n"
    "             cpu=old file: caller;callee and the pair's inclusive time in us\n"
    "  --sites    the last ALLOC SITES section (heap=sites; sites are cumulative),\n"
    "             the allocated class as the innermost frame; the default for a file\n"
    "             with no CPU section\n"
    "  --value M  the sites' column (implies --sites): live-bytes (default),\n"
    "             live-objects, alloc-bytes, alloc-objects\n"
    "  --monitor  the MONITOR TIME sections (monitor=y): the stacks that blocked\n"
    "             entering a monitor, its class as the innermost frame, in us blocked\n"
    "  --threads  each stack under its thread (\"thread main;...\") when the traces\n"
    "             name one (thread=y, binary or text)\n"
    "  --section N  the Nth section instead (1 = the first in the file)\n"
    "Reads binary files and text ones (format=a: CPU SAMPLES, CPU TIME, MONITOR TIME;\n"
    "cpu=old). A text file prints a row's time only as its share of the total: its us\n"
    "are that share of the total.\n"
    "  -o OUT     write to OUT instead of standard output\n"
    FASTHPROF_MAX_EXPANDED_HELP
    "Exit status: 0 done, 2 bad usage or bad input (one message on stderr).\n";

int collapsed_main(int argc, char** argv) {
  Args args;
  if (!parse_args("collapsed", argc, argv, {"--cpu", "--sites", "--monitor", "--threads"}, {"--value", "--section", kMaxExpandedOption}, &args)) {
    return kExitBadInput;
  }
  if (args.help) {
    std::fputs(kCollapsedUsage, stdout);
    return kExitOk;
  }
  if (args.has("--value") && (args.has("--cpu") || args.has("--monitor"))) {
    return fail("collapsed", "--value goes with --sites, not --cpu or --monitor");
  }
  uint64_t section = 0;
  if (args.has("--section") && (!parse_count(args.value("--section"), &section) || section == 0)) {
    return fail("collapsed", "--section takes a number from 1");
  }
  if (args.operands.size() != 1) return fail("collapsed", "needs one FILE (see fasthprof collapsed --help)");
  int metric = 0;
  if (args.has("--value")) {
    metric = metric_index(Kind::kSites, args.value("--value"));
    if (metric < 0) {
      return fail("collapsed", "--value %.*s: not live-bytes, live-objects, alloc-bytes or alloc-objects",
                  static_cast<int>(args.value("--value").size()), args.value("--value").data());
    }
  }
  const std::string path(args.operands[0]);
  std::unique_ptr<Loaded> loaded = load("collapsed", path.c_str(), args, true);
  if (loaded == nullptr) return kExitBadInput;
  Kind kind = Kind::kCpu;
  if (!choose_kind("collapsed", path.c_str(), args, *loaded, &kind)) return kExitBadInput;
  Table table;
  const StackRoots roots{args.has("--threads"), false};
  if (!build_table("collapsed", path.c_str(), *loaded, kind, Grouping::kStack, section, &table, roots)) {
    return kExitBadInput;
  }
  if (!table.coverage.empty()) std::fprintf(stderr, "fasthprof collapsed: %s\n", table.coverage.c_str());
  Output output;
  if (!output.open("collapsed", args.output)) return kExitBadInput;
  for (const auto& [stack, values] : table.rows) {
    if (values[metric] != 0) std::fprintf(output.file(), "%s %" PRIu64 "\n", stack.c_str(), values[metric]);
  }
  return output.close("collapsed") ? kExitOk : kExitBadInput;
}

}  // namespace fasthprof::cli
