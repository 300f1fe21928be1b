// `fasthprof dominators FILE`: retained sizes, the objects and classes that retain the most, and
// the dominator tree near its root.
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "base/hprof_format.h"
#include "heap_names.h"
#include "json_writer.h"
#include "retained_sizes.h"
#include "verbs.h"

namespace fasthprof::cli {

const char kDominatorsUsage[] =
    "usage: fasthprof dominators [--dump N] [--top N] [--depth N] [--children N]\n"
    "                            [--weak] [--compressed] [--json] [--verbose]\n"
    "                            [-o OUT] FILE\n"
    "What keeps a heap dump's memory alive: the retained size of every object (its\n"
    "shallow bytes and those of every object reachable only through it), then\n"
    "  - the top N objects by retained size, with their shallow size;\n"
    "  - the top N classes by retained size (the instances that no instance of the\n"
    "    same class dominates, as VisualVM counts), with their count and shallow\n"
    "    bytes;\n"
    "  - the dominator tree from the GC roots down, --depth levels, the --children\n"
    "    largest children of each node.\n"
    "Roots: the object of every ROOT sub-record of the dump, of every kind (Java\n"
    "frames, JNI globals and locals, sticky (system) classes, thread objects,\n"
    "monitors...), VisualVM's root set. References: instance fields, array\n"
    "elements, each object's class, a class's statics and its class loader. The\n"
    "referent of a java.lang.ref.Reference (weak, soft, final, phantom) is not\n"
    "followed unless --weak. Shallow sizes follow `fasthprof summary`; a class\n"
    "object counts 0 bytes itself (as in VisualVM), what its statics hold counts.\n"
    "Dominators by the semi-NCA algorithm; memory at its peak about 45 bytes per\n"
    "object and 4 to 8 per reference, stated in the output, besides the dump's\n"
    "mapping.\n"
    "\n"
    FASTHPROF_DUMP_HELP
    "  --top N   objects and classes listed (default 20; 0: all classes, no\n"
    "            objects)\n"
    "  --depth N  levels of the dominator tree printed (default 3; 0: none)\n"
    "  --children N  children shown per node of the tree (default 10; 0: all)\n"
    "  --weak    follow Reference.referent like any other field\n"
    "  --compressed  shallow sizes of a JVM with compressed references and class\n"
    "            pointers (HotSpot's default under 32 GiB of heap, and VisualVM's\n"
    "            guess for such dumps): 12-byte headers, 4-byte references, arrays\n"
    "            16 bytes before their elements, rounded up to 8\n"
    "  --json    the same as one JSON object: file, dump, dumps, objects,\n"
    "            reachable, references, dangling, roots (per kind), memory,\n"
    "            retained_total, top_objects, top_classes, tree\n"
    "  --verbose  the time of each step on standard error\n"
    "  -o OUT    write to OUT instead of standard output\n"
    FASTHPROF_MAX_EXPANDED_HELP
    "Exit status: 0 done, 2 bad usage or bad input (one message on stderr).\n";

namespace {

struct Settings {
  uint64_t top = 20;
  uint64_t depth = 3;
  uint64_t children = 10;
  bool weak = false;
  bool compressed = false;
  bool verbose = false;
};

// The steps' times for --verbose.
class Clock {
 public:
  explicit Clock(bool on) : on_(on), last_(std::chrono::steady_clock::now()) {}
  void step(const char* what) {
    const auto now = std::chrono::steady_clock::now();
    if (on_) {
      std::fprintf(stderr, "fasthprof dominators: %-22s %8.3f s\n", what,
                   std::chrono::duration<double>(now - last_).count());
    }
    last_ = now;
  }

 private:
  bool on_;
  std::chrono::steady_clock::time_point last_;
};

// What the output says besides the rankings.
struct Facts {
  std::string path;
  size_t dump = 0;
  size_t dumps = 0;
  std::map<std::string, uint64_t> root_kinds;
  double graph_per_object = 0;
  double dominators_per_object = 0;
  double sizes_per_object = 0;
  uint64_t peak_resident = 0;
};

Facts gather(const std::string& path, const Loaded& loaded, size_t dump, const HeapGraph& graph,
             const Dominators& dominators, const RetainedSizes& sizes) {
  Facts facts;
  facts.path = path;
  facts.dump = dump;
  facts.dumps = loaded.model.dumps().size();
  for (const GraphRoot& root : graph.roots()) {
    const char* name = heap_tag_name(root.tag);
    ++facts.root_kinds[name != nullptr ? name : "ROOT"];
  }
  const double objects = graph.nodes() > 1 ? graph.nodes() - 1 : 1;
  facts.graph_per_object = static_cast<double>(graph.bytes()) / objects;
  facts.dominators_per_object = static_cast<double>(dominators.peak_bytes()) / objects;
  facts.sizes_per_object = static_cast<double>(sizes.bytes()) / objects;
  facts.peak_resident = peak_resident_bytes();
  return facts;
}

void print_tree(FILE* out, const HeapGraph& graph, const Dominators& dominators, const RetainedSizes& sizes,
                const Settings& settings, uint32_t pre, uint64_t level) {
  const uint32_t node = dominators.node(pre);
  std::fprintf(out, "%*s%" PRIu64 "  %s", static_cast<int>(2 * level), "", sizes.retained_pre(pre),
               object_label(graph, node).c_str());
  const uint32_t count = sizes.child_count(pre);
  if (level + 1 >= settings.depth || count == 0) {
    if (count == 0) {
      std::fputc('\n', out);
    } else {
      std::fprintf(out, "  (%" PRIu32 " %s)\n", count, count == 1 ? "child" : "children");
    }
    return;
  }
  std::fputc('\n', out);
  const std::vector<uint32_t> shown = sizes.children(pre, settings.children);
  for (uint32_t child : shown) print_tree(out, graph, dominators, sizes, settings, child, level + 1);
  if (shown.size() < count) {
    std::fprintf(out, "%*s... %zu more\n", static_cast<int>(2 * level + 2), "", count - shown.size());
  }
}

void print_text(FILE* out, const Facts& facts, const HeapGraph& graph, const Dominators& dominators,
                const RetainedSizes& sizes, const Settings& settings) {
  std::fprintf(out, "%s: heap dump %zu of %zu\n", facts.path.c_str(), facts.dump + 1, facts.dumps);
  std::fprintf(out,
               "objects: %" PRIu32 ", %" PRIu32 " reachable from the roots; references: %" PRIu64 ", %" PRIu64
               " to no object of the dump\n",
               graph.nodes() - 1, dominators.reachable() - 1, graph.references(), graph.dangling());
  std::fprintf(out, "roots: %zu (", graph.roots().size());
  const char* separator = "";
  for (const auto& [kind, count] : facts.root_kinds) {
    std::fprintf(out, "%s%s %" PRIu64, separator, kind.c_str(), count);
    separator = ", ";
  }
  std::fprintf(out, "); referents of weak, soft, final and phantom references %s\n",
               settings.weak ? "followed" : "not followed");
  std::fprintf(out, "retained by the roots: %" PRIu64 " bytes\n", sizes.total());
  std::fprintf(out,
               "memory: graph %.1f, dominators %.1f (at most), retained sizes %.1f bytes per object; "
               "peak resident %" PRIu64 " MiB (the mapped dump's pages included)\n",
               facts.graph_per_object, facts.dominators_per_object, facts.sizes_per_object,
               facts.peak_resident >> 20);
  const std::vector<uint32_t> top = sizes.top(settings.top);
  std::fprintf(out, "\ntop %zu objects by retained size:\n rank         retained      shallow  object\n", top.size());
  for (size_t r = 0; r < top.size(); ++r) {
    const uint32_t node = dominators.node(top[r]);
    std::fprintf(out, "%5zu %16" PRIu64 " %12" PRIu64 "  %s\n", r + 1, sizes.retained_pre(top[r]),
                 graph.shallow_bytes(node), object_label(graph, node).c_str());
  }
  const auto& classes = sizes.classes();
  const size_t shown = settings.top == 0 ? classes.size() : std::min<size_t>(settings.top, classes.size());
  std::fprintf(out, "\ntop %zu classes by retained size:\n rank         retained          shallow      count  class\n",
               shown);
  for (size_t r = 0; r < shown; ++r) {
    const ClassRetained& row = classes[r];
    std::fprintf(out, "%5zu %16" PRIu64 " %16" PRIu64 " %10" PRIu64 "  %s\n", r + 1, row.retained, row.shallow,
                 row.count, sizes.class_name(graph, row).c_str());
  }
  if (settings.depth > 0) {
    if (settings.children == 0) {
      std::fprintf(out, "\ndominator tree, %" PRIu64 " levels, every child of each node:\n", settings.depth);
    } else {
      std::fprintf(out, "\ndominator tree, %" PRIu64 " levels, the %" PRIu64 " largest children of each node:\n",
                   settings.depth, settings.children);
    }
    print_tree(out, graph, dominators, sizes, settings, 0, 0);
  }
}

void json_tree(JsonWriter* json, const HeapGraph& graph, const Dominators& dominators, const RetainedSizes& sizes,
               const Settings& settings, uint32_t pre, uint64_t level) {
  const uint32_t node = dominators.node(pre);
  json->begin_object();
  json->field("id", graph.id(node));
  json->field("type", node == HeapGraph::kSuperRoot ? std::string("<roots>") : graph.type_name(node));
  json->field("shallow", graph.shallow_bytes(node));
  json->field("retained", sizes.retained_pre(pre));
  json->field("child_count", uint64_t{sizes.child_count(pre)});
  if (level + 1 < settings.depth) {
    json->key("children");
    json->begin_array();
    for (uint32_t child : sizes.children(pre, settings.children)) {
      json_tree(json, graph, dominators, sizes, settings, child, level + 1);
    }
    json->end_array();
  }
  json->end_object();
}

void print_json(FILE* out, const Facts& facts, const HeapGraph& graph, const Dominators& dominators,
                const RetainedSizes& sizes, const Settings& settings) {
  JsonWriter json(out);
  json.begin_object();
  json.field("file", facts.path);
  json.field("dump", uint64_t{facts.dump + 1});
  json.field("dumps", uint64_t{facts.dumps});
  json.field("objects", uint64_t{graph.nodes() - 1});
  json.field("reachable", uint64_t{dominators.reachable() - 1});
  json.field("references", graph.references());
  json.field("dangling", graph.dangling());
  json.field("weak_references_followed", settings.weak);
  json.field("compressed_references", settings.compressed);
  json.key("roots");
  json.begin_object();
  for (const auto& [kind, count] : facts.root_kinds) json.field(kind, count);
  json.end_object();
  json.key("memory");
  json.begin_object();
  json.field("graph_bytes_per_object", facts.graph_per_object);
  json.field("dominator_bytes_per_object", facts.dominators_per_object);
  json.field("retained_size_bytes_per_object", facts.sizes_per_object);
  json.field("peak_resident_bytes", facts.peak_resident);
  json.end_object();
  json.field("retained_total", sizes.total());
  json.key("top_objects");
  json.begin_array();
  for (uint32_t pre : sizes.top(settings.top)) {
    const uint32_t node = dominators.node(pre);
    json.begin_object();
    json.field("id", graph.id(node));
    json.field("type", graph.type_name(node));
    json.field("shallow", graph.shallow_bytes(node));
    json.field("retained", sizes.retained_pre(pre));
    json.end_object();
  }
  json.end_array();
  json.key("top_classes");
  json.begin_array();
  const auto& classes = sizes.classes();
  const size_t shown = settings.top == 0 ? classes.size() : std::min<size_t>(settings.top, classes.size());
  for (size_t r = 0; r < shown; ++r) {
    json.begin_object();
    json.field("name", sizes.class_name(graph, classes[r]));
    json.field("count", classes[r].count);
    json.field("shallow", classes[r].shallow);
    json.field("retained", classes[r].retained);
    json.end_object();
  }
  json.end_array();
  if (settings.depth > 0) {
    json.key("tree");
    json_tree(&json, graph, dominators, sizes, settings, 0, 0);
  }
  json.end_object();
  json.finish();
}

bool parse_settings(const Args& args, Settings* settings) {
  for (const auto& [name, target] : {std::pair<const char*, uint64_t*>{"--top", &settings->top},
                                     {"--depth", &settings->depth}, {"--children", &settings->children}}) {
    if (args.has(name) && !parse_count(args.value(name), target)) {
      fail("dominators", "%s takes a count, not \"%.*s\"", name, static_cast<int>(args.value(name).size()),
           args.value(name).data());
      return false;
    }
  }
  settings->weak = args.has("--weak");
  settings->compressed = args.has("--compressed");
  settings->verbose = args.has("--verbose");
  return true;
}

}  // namespace

int dominators_main(int argc, char** argv) {
  Args args;
  if (!parse_args("dominators", argc, argv, {"--json", "--weak", "--compressed", "--verbose"},
                  {"--top", "--depth", "--children", kDumpOption, kMaxExpandedOption}, &args)) {
    return kExitBadInput;
  }
  if (args.help) {
    std::fputs(kDominatorsUsage, stdout);
    return kExitOk;
  }
  Settings settings;
  if (!parse_settings(args, &settings)) return kExitBadInput;
  if (args.operands.size() != 1) return fail("dominators", "needs one FILE (see fasthprof dominators --help)");
  const std::string path(args.operands[0]);
  Clock clock(settings.verbose);
  HeapGraph graph;
  std::unique_ptr<Loaded> loaded = load_for_graph("dominators", path.c_str(), args, &graph);
  if (loaded == nullptr) return kExitBadInput;
  clock.step("read the file");
  size_t dump = 0;
  if (!choose_dump("dominators", args, loaded->model, &dump)) return kExitBadInput;
  std::string error;
  if (!graph.build(loaded->model, dump, HeapGraphOptions{settings.weak, settings.compressed}, &error)) {
    return fail("dominators", "%s: %s", path.c_str(), error.c_str());
  }
  clock.step("build the graph");
  Dominators dominators;
  dominators.compute(graph.csr(), HeapGraph::kSuperRoot);
  clock.step("dominators");
  RetainedSizes sizes;
  sizes.compute(graph, dominators);
  clock.step("retained sizes");
  const Facts facts = gather(path, *loaded, dump, graph, dominators, sizes);
  Output output;
  if (!output.open("dominators", args.output)) return kExitBadInput;
  if (args.has("--json")) {
    print_json(output.file(), facts, graph, dominators, sizes, settings);
  } else {
    print_text(output.file(), facts, graph, dominators, sizes, settings);
  }
  clock.step("print");
  return output.close("dominators") ? kExitOk : kExitBadInput;
}

}  // namespace fasthprof::cli
