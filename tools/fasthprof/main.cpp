// fasthprof: the command that reads, converts and compares what the agent writes (and the JDK's own
// .hprof dumps). `fasthprof help` lists the verbs; `fasthprof <verb> --help` describes one.
#include <cstdio>
#include <cstring>

#include "verbs.h"

namespace fasthprof::cli {

const std::vector<Verb>& verbs() {
  static const std::vector<Verb> table = {
      {"verify", "check HPROF binary files as the JDK's readers read them", kVerifyUsage, verify_main},
      {"summary", "what a file holds: heap histograms, SITES, CPU, monitors ranked", kSummaryUsage,
       summary_main},
      {"dominators", "retained sizes: top objects and classes, the dominator tree", kDominatorsUsage,
       dominators_main},
      {"path", "the shortest path of references from a GC root to an object", kPathUsage, path_main},
      {"leaks", "leak suspects: what keeps a share of the heap, where, and by what path", kLeaksUsage,
       leaks_main},
      {"report", "a heap dump as one HTML page: overview, suspects, retained, histogram", kReportUsage,
       report_main},
      {"collapsed", "folded stacks (frame;frame count) of CPU, SITES or MONITOR TIME", kCollapsedUsage,
       collapsed_main},
      {"diff", "two files' heap dumps, SITES, CPU or monitors row by row; --fail-if", kDiffUsage, diff_main},
      {"text", "a binary file in the text layout of format=a", kTextUsage, text_main},
      {"flame", "a self-contained HTML flame graph: hover, zoom, search", kFlameUsage, flame_main},
#ifdef FASTHPROF_PPROF
      {"pprof", "CPU, allocation sites or monitors as a gzipped pprof profile", kPprofUsage, pprof_main},
#endif
      {"listen", "collect net= agents' output, one file per connection; commands", kListenUsage,
       listen_main},
      {"attach", "load the agent into a running JVM (checked options; --duration)", kAttachUsage,
       attach_main},
  };
  return table;
}

namespace {

void print_help(FILE* out) {
  std::fputs(
      "usage: fasthprof <verb> [options] FILE...\n"
      "       fasthprof help | fasthprof <verb> --help | fasthprof --version\n"
      "Reads the HPROF binary files the fasthprof agent writes (format=b, gz=y) and the\n"
      "JDK's own heap dumps (jcmd GC.heap_dump, -gz too; gzip is decompressed first);\n"
      "summary, collapsed, flame, pprof and diff also read its text files (format=a:\n"
      "cpu=times, cpu=old, monitor=y).\n"
      "Results go to standard output, or to -o FILE.\n\nverbs:\n",
      out);
  for (const Verb& verb : verbs()) std::fprintf(out, "  %-9s %s\n", verb.name, verb.summary);
  std::fputs(
      "\nexit status: 0 done; 1 the verb's verdict (a file that fails verify, a diff\n"
      "--fail-if met); 2 bad usage or bad input (unreadable, not HPROF, truncated,\n"
      "malformed), with one message on stderr.\n",
      out);
}

// --version (or `version`) as the verb, or --version among a verb's options (before a "--").
bool asks_version(int argc, char** argv) {
  if (std::strcmp(argv[1], "version") == 0) return true;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) return false;
    if (std::strcmp(argv[i], "--version") == 0 || std::strcmp(argv[i], "-V") == 0) return true;
  }
  return false;
}

}  // namespace
}  // namespace fasthprof::cli

int main(int argc, char** argv) {
  using namespace fasthprof::cli;
  if (argc < 2) {
    print_help(stderr);
    return kExitBadInput;
  }
  const char* name = argv[1];
  if (asks_version(argc, argv)) {
    std::printf("fasthprof %s\n", FASTHPROF_VERSION);
    return kExitOk;
  }
  if (std::strcmp(name, "help") == 0 || std::strcmp(name, "--help") == 0 || std::strcmp(name, "-h") == 0) {
    if (argc > 2) {
      for (const Verb& verb : verbs()) {
        if (std::strcmp(verb.name, argv[2]) == 0) {
          std::fputs(verb.usage, stdout);
          return kExitOk;
        }
      }
      std::fprintf(stderr, "fasthprof: no verb %s (fasthprof help lists them)\n", argv[2]);
      return kExitBadInput;
    }
    print_help(stdout);
    return kExitOk;
  }
  for (const Verb& verb : verbs()) {
    if (std::strcmp(verb.name, name) == 0) return verb.run(argc - 1, argv + 1);
  }
  std::fprintf(stderr, "fasthprof: no verb %s (fasthprof help lists them)\n", name);
  return kExitBadInput;
}
