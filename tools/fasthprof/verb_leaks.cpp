// `fasthprof leaks FILE`: leak suspects in a heap dump, as Eclipse MAT names them: an object that
// alone keeps a large share of the heap alive, or a class whose many instances together do; for
// each, where its memory accumulates and the path that keeps it alive.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "heap_names.h"
#include "heap_suspects.h"
#include "json_writer.h"
#include "retained_sizes.h"
#include "verbs.h"

namespace fasthprof::cli {

const char kLeaksUsage[] =
    "usage: fasthprof leaks [--dump N] [--share PERCENT] [--top N] [--weak]\n"
    "                       [--compressed] [--json] [-o OUT] FILE\n"
    "Leak suspects, in Eclipse MAT's sense, from the dominator tree of\n"
    "`fasthprof dominators` (same roots, references and sizes):\n"
    "  - an object: one object right below the GC roots in the dominator tree\n"
    "    that retains at least --share of the heap by itself;\n"
    "  - a class: instances of one class, each right below the roots and each\n"
    "    under --share, that retain at least --share together (class objects\n"
    "    are suspects as objects, through their statics).\n"
    "For each suspect: its retained bytes and share; the accumulation point,\n"
    "found by going down the dominator tree while one child holds at least 80 %\n"
    "of the suspect's bytes (where the memory spreads into many objects; the head\n"
    "of a chain of one type), with what that point holds, by class; and the\n"
    "shortest path from a GC root to it, each step named as `fasthprof path`\n"
    "names them (a run of one reference written once: Link.next x57).\n"
    "\n"
    FASTHPROF_DUMP_HELP
    "  --share PERCENT  the share of the retained heap that makes a suspect\n"
    "            (default 10; 0.1 to 100)\n"
    "  --top N   suspects listed at most (default 5)\n"
    "  --weak    follow Reference.referent like any other field\n"
    "  --compressed  shallow sizes of a JVM with compressed references (see\n"
    "            fasthprof dominators --help)\n"
    "  --json    the same as one JSON object: file, dump, dumps, retained_total,\n"
    "            share, suspects (each with kind, what, instances, retained,\n"
    "            share, accumulation: object, retained, holds; path: via, object)\n"
    "  -o OUT    write to OUT instead of standard output\n"
    FASTHPROF_MAX_EXPANDED_HELP
    "Exit status: 0 done (with or without suspects), 2 bad usage or bad input\n"
    "(one message on stderr).\n";

namespace {

void print_text(FILE* out, const HeapGraph& graph, const Dominators& dominators, const RetainedSizes& sizes,
                const std::vector<Suspect>& suspects, double share) {
  std::fprintf(out, "retained by the roots: %" PRIu64 " bytes; a suspect retains %g %% or more\n", sizes.total(),
               share);
  if (suspects.empty()) std::fprintf(out, "\nno suspect: no object and no class retains %g %% of the heap\n", share);
  int rank = 0;
  for (const Suspect& s : suspects) {
    if (s.by_class) {
      std::fprintf(out, "\nsuspect %d: %" PRIu64 " instances of %s retain %" PRIu64 " bytes (%.1f %%)\n"
                   "  the biggest: %s, %" PRIu64 " bytes retained\n", ++rank, s.instances, s.what.c_str(), s.retained,
                   percent_of(s.retained, sizes.total()), object_label(graph, dominators.node(s.biggest)).c_str(),
                   sizes.retained_pre(s.biggest));
    } else {
      std::fprintf(out, "\nsuspect %d: %s retains %" PRIu64 " bytes (%.1f %%)\n", ++rank, s.what.c_str(), s.retained,
                   percent_of(s.retained, sizes.total()));
    }
    std::fprintf(out, "  accumulated in %s: %" PRIu64 " bytes, holding\n",
                 object_label(graph, dominators.node(s.accumulation)).c_str(), sizes.retained_pre(s.accumulation));
    for (const Held& held : s.holds) {
      std::fprintf(out, "    %12" PRIu64 " bytes in %" PRIu64 " %s\n", held.retained, held.objects, held.class_name.c_str());
    }
    if (s.holds.empty()) std::fputs("    nothing else (its own bytes)\n", out);
    std::fprintf(out, "  kept alive by: %s\n", path_line(s.path).c_str());
  }
}

void json_object(JsonWriter* json, const HeapGraph& graph, uint32_t node) {
  json->begin_object();
  json->field("id", graph.id(node));
  json->field("type", graph.type_name(node));
  json->end_object();
}

void print_json(FILE* out, const std::string& path, size_t dump, size_t dumps, const HeapGraph& graph,
                const Dominators& dominators, const RetainedSizes& sizes, const std::vector<Suspect>& suspects,
                double share) {
  JsonWriter json(out);
  json.begin_object();
  json.field("file", path);
  json.field("dump", uint64_t{dump + 1});
  json.field("dumps", uint64_t{dumps});
  json.field("retained_total", sizes.total());
  json.field("share", share);
  json.key("suspects");
  json.begin_array();
  for (const Suspect& s : suspects) {
    json.begin_object();
    json.field("kind", std::string_view(s.by_class ? "class" : "object"));
    json.field("what", s.what);
    json.field("instances", s.instances);
    json.field("retained", s.retained);
    json.field("share", percent_of(s.retained, sizes.total()));
    json.key("biggest");
    json_object(&json, graph, dominators.node(s.biggest));
    json.key("accumulation");
    json.begin_object();
    json.key("object");
    json_object(&json, graph, dominators.node(s.accumulation));
    json.field("retained", sizes.retained_pre(s.accumulation));
    json.key("holds");
    json.begin_array();
    for (const Held& held : s.holds) {
      json.begin_object();
      json.field("class", held.class_name);
      json.field("objects", held.objects);
      json.field("retained", held.retained);
      json.end_object();
    }
    json.end_array();
    json.end_object();
    json.key("path");
    json.begin_array();
    for (const PathStep& step : s.path) {
      json.begin_object();
      json.field("via", step.via);
      json.key("object");
      json_object(&json, graph, step.node);
      json.end_object();
    }
    json.end_array();
    json.end_object();
  }
  json.end_array();
  json.end_object();
  json.finish();
}

}  // namespace

int leaks_main(int argc, char** argv) {
  Args args;
  if (!parse_args("leaks", argc, argv, {"--json", "--weak", "--compressed"},
                  {"--share", "--top", kDumpOption, kMaxExpandedOption}, &args)) {
    return kExitBadInput;
  }
  if (args.help) {
    std::fputs(kLeaksUsage, stdout);
    return kExitOk;
  }
  uint64_t top = 5;
  if (args.has("--top") && (!parse_count(args.value("--top"), &top) || top == 0)) {
    return fail("leaks", "--top takes a count of 1 or more");
  }
  double share = 10;
  if (args.has("--share") && !parse_share("leaks", args.value("--share"), &share)) return kExitBadInput;
  if (args.operands.size() != 1) return fail("leaks", "needs one FILE (see fasthprof leaks --help)");
  const std::string path(args.operands[0]);
  HeapAnalysis analysis;
  std::unique_ptr<Loaded> loaded = load_for_graph("leaks", path.c_str(), args, &analysis.graph);
  if (loaded == nullptr) return kExitBadInput;
  size_t dump = 0;
  if (!choose_dump("leaks", args, loaded->model, &dump)) return kExitBadInput;
  if (!analyse("leaks", path, loaded->model, dump, HeapGraphOptions{args.has("--weak"), args.has("--compressed")},
               &analysis)) {
    return kExitBadInput;
  }
  const HeapGraph& graph = analysis.graph;
  const Dominators& dominators = analysis.dominators;
  const RetainedSizes& sizes = analysis.sizes;
  const std::vector<Suspect> suspects = find_suspects(graph, dominators, sizes, share, top);
  Output output;
  if (!output.open("leaks", args.output)) return kExitBadInput;
  if (args.has("--json")) {
    print_json(output.file(), path, dump, loaded->model.dumps().size(), graph, dominators, sizes, suspects, share);
  } else {
    std::fprintf(output.file(), "%s: heap dump %zu of %zu; referents of weak, soft, final and phantom references %s\n",
                 path.c_str(), dump + 1, loaded->model.dumps().size(), args.has("--weak") ? "followed" : "not followed");
    print_text(output.file(), graph, dominators, sizes, suspects, share);
  }
  return output.close("leaks") ? kExitOk : kExitBadInput;
}

}  // namespace fasthprof::cli
