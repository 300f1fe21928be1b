// `fasthprof path FILE OBJECT|CLASS`: the shortest chain of references from a GC root to an
// object, or to the largest instances of a class, each step named.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unordered_set>
#include <vector>

#include "heap_names.h"
#include "json_writer.h"
#include "verbs.h"

namespace fasthprof::cli {

const char kPathUsage[] =
    "usage: fasthprof path [--dump N] [--top N] [--weak] [--json] [-o OUT] FILE\n"
    "                      OBJECT|CLASS\n"
    "The shortest path of references from a GC root to an object: OBJECT is its ID\n"
    "(0x7f3a2c10, or decimal), or CLASS a class name (java.util.HashMap, byte[],\n"
    "the Java spelling) for its --top largest instances by shallow size. Each step\n"
    "names the reference it follows:\n"
    "  ROOT STICKY CLASS            class Foo 0x...\n"
    "  static Foo.cache             java.util.HashMap 0x...\n"
    "  java.util.HashMap.table      java.util.HashMap$Node[] 0x...\n"
    "  [7]                          java.util.HashMap$Node 0x...\n"
    "a static field, an instance field (named with the class that declares it), an\n"
    "array element, <class> (an object's class) or <classLoader> (a class's loader);\n"
    "then the same steps on one line. Roots and references are those of\n"
    "`fasthprof dominators` (every ROOT sub-record is a root). The referent of a\n"
    "java.lang.ref.Reference (weak, soft, final, phantom) is not followed unless\n"
    "--weak: a path through one would not keep the object alive.\n"
    "Memory: the object graph (about 20 bytes per object and 4 per reference) and\n"
    "4 bytes per object for the search.\n"
    "\n"
    FASTHPROF_DUMP_HELP
    "  --top N   CLASS: paths to its N largest instances (default 3)\n"
    "  --weak    follow Reference.referent like any other field\n"
    "  --json    the same as one JSON object: file, dump, dumps, paths (each with\n"
    "            target, reachable, steps: via, id, type, shallow)\n"
    "  -o OUT    write to OUT instead of standard output\n"
    FASTHPROF_MAX_EXPANDED_HELP
    "Exit status: 0 a path found to every object asked for, 1 none found for one\n"
    "of them (no root reaches it), 2 bad usage or bad input (one message on\n"
    "stderr).\n";

namespace {

// An object ID as written: 0x hexadecimal or decimal. False for anything else.
bool parse_id(std::string_view text, uint64_t* id) {
  if (text.empty() || text.size() > 20) return false;
  const std::string copy(text);
  const bool hex = copy.size() > 2 && copy[0] == '0' && (copy[1] == 'x' || copy[1] == 'X');
  if (!hex && copy.find_first_not_of("0123456789") != std::string::npos) return false;
  char* end = nullptr;
  *id = std::strtoull(copy.c_str(), &end, hex ? 16 : 10);
  return end != nullptr && *end == '\0';
}

// The top instances of a class by shallow size (ties: the smaller ID), or none.
std::vector<uint32_t> instances_of(const HeapGraph& graph, std::string_view name, uint64_t top) {
  std::unordered_set<uint64_t> class_ids;
  uint8_t element_type = 0;
  for (uint32_t v = 1; v < graph.nodes(); ++v) {
    if (graph.kind(v) == ObjectKind::kClass && graph.class_name(graph.id(v)) == name) class_ids.insert(graph.id(v));
  }
  for (uint8_t type = 4; type <= 11; ++type) {
    const char* primitive = primitive_array_name(type);
    if (primitive != nullptr && name == primitive) element_type = type;
  }
  std::vector<uint32_t> found;
  for (uint32_t v = 1; v < graph.nodes(); ++v) {
    const ObjectKind kind = graph.kind(v);
    if (kind == ObjectKind::kPrimitiveArray ? graph.element_type(v) == element_type && element_type != 0
                                            : kind != ObjectKind::kClass && class_ids.count(graph.class_id(v)) != 0) {
      found.push_back(v);
    }
  }
  auto before = [&graph](uint32_t a, uint32_t b) {
    const uint64_t sa = graph.shallow_bytes(a), sb = graph.shallow_bytes(b);
    return sa != sb ? sa > sb : graph.id(a) < graph.id(b);
  };
  const size_t kept = std::min<size_t>(top, found.size());
  std::partial_sort(found.begin(), found.begin() + kept, found.end(), before);
  found.resize(kept);
  return found;
}

void print_text(FILE* out, const HeapGraph& graph, const std::vector<uint32_t>& targets,
                const std::vector<uint32_t>& before) {
  for (uint32_t target : targets) {
    const std::vector<PathStep> steps = path_to(graph, before, target);
    std::fprintf(out, "\npath to %s (%" PRIu64 " bytes): ", object_label(graph, target).c_str(), graph.shallow_bytes(target));
    if (steps.empty()) {
      std::fputs("none, no GC root reaches it\n", out);
      continue;
    }
    std::fprintf(out, "%zu references from a GC root\n", steps.size());
    size_t width = 0;
    for (const PathStep& step : steps) width = std::max(width, step.via.size());
    for (const PathStep& step : steps) {
      std::fprintf(out, "  %-*s  %s\n", static_cast<int>(width), step.via.c_str(), object_label(graph, step.node).c_str());
    }
    std::fputs("  ", out);
    for (size_t i = 0; i < steps.size(); ++i) std::fprintf(out, "%s%s", i == 0 ? "" : " -> ", steps[i].via.c_str());
    std::fputc('\n', out);
  }
}

void print_json(FILE* out, const std::string& path, size_t dump, size_t dumps, bool weak, const HeapGraph& graph,
                const std::vector<uint32_t>& targets, const std::vector<uint32_t>& before) {
  JsonWriter json(out);
  json.begin_object();
  json.field("file", path);
  json.field("dump", uint64_t{dump + 1});
  json.field("dumps", uint64_t{dumps});
  json.field("weak_references_followed", weak);
  json.key("paths");
  json.begin_array();
  for (uint32_t target : targets) {
    const std::vector<PathStep> steps = path_to(graph, before, target);
    json.begin_object();
    json.key("target");
    json.begin_object();
    json.field("id", graph.id(target));
    json.field("type", graph.type_name(target));
    json.field("shallow", graph.shallow_bytes(target));
    json.end_object();
    json.field("reachable", !steps.empty());
    json.key("steps");
    json.begin_array();
    for (const PathStep& step : steps) {
      json.begin_object();
      json.field("via", step.via);
      json.field("id", graph.id(step.node));
      json.field("type", graph.type_name(step.node));
      json.field("shallow", graph.shallow_bytes(step.node));
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

int path_main(int argc, char** argv) {
  Args args;
  if (!parse_args("path", argc, argv, {"--json", "--weak"}, {"--top", kDumpOption, kMaxExpandedOption}, &args)) {
    return kExitBadInput;
  }
  if (args.help) {
    std::fputs(kPathUsage, stdout);
    return kExitOk;
  }
  uint64_t top = 3;
  if (args.has("--top") && (!parse_count(args.value("--top"), &top) || top == 0)) {
    return fail("path", "--top takes a count of 1 or more, not \"%.*s\"", static_cast<int>(args.value("--top").size()),
                args.value("--top").data());
  }
  if (args.operands.size() != 2) return fail("path", "needs FILE and OBJECT or CLASS (see fasthprof path --help)");
  const std::string path(args.operands[0]);
  const std::string_view wanted = args.operands[1];
  HeapGraph graph;
  std::unique_ptr<Loaded> loaded = load_for_graph("path", path.c_str(), args, &graph);
  if (loaded == nullptr) return kExitBadInput;
  size_t dump = 0;
  if (!choose_dump("path", args, loaded->model, &dump)) return kExitBadInput;
  const bool weak = args.has("--weak");
  std::string error;
  if (!graph.build(loaded->model, dump, HeapGraphOptions{weak}, &error)) {
    return fail("path", "%s: %s", path.c_str(), error.c_str());
  }
  std::vector<uint32_t> targets;
  uint64_t id = 0;
  if (parse_id(wanted, &id) && graph.find(id) != kNoNode) {
    targets.push_back(graph.find(id));
  } else {
    targets = instances_of(graph, wanted, top);
  }
  if (targets.empty()) {
    return fail("path", "%s: dump %zu has no object %.*s and no instance of a class of that name", path.c_str(),
                dump + 1, static_cast<int>(wanted.size()), wanted.data());
  }
  const std::vector<uint32_t> before = shortest_paths(graph, targets);
  Output output;
  if (!output.open("path", args.output)) return kExitBadInput;
  if (args.has("--json")) {
    print_json(output.file(), path, dump, loaded->model.dumps().size(), weak, graph, targets, before);
  } else {
    std::fprintf(output.file(), "%s: heap dump %zu of %zu; referents of weak, soft, final and phantom references %s\n",
                 path.c_str(), dump + 1, loaded->model.dumps().size(), weak ? "followed" : "not followed");
    print_text(output.file(), graph, targets, before);
  }
  const size_t unreached = static_cast<size_t>(
      std::count_if(targets.begin(), targets.end(), [&before](uint32_t t) { return before[t] == kNoNode; }));
  if (!output.close("path")) return kExitBadInput;
  if (unreached == 0) return kExitOk;
  std::fprintf(stderr, "fasthprof path: no GC root reaches %zu of the %zu objects asked for\n", unreached,
               targets.size());
  return kExitVerdict;
}

}  // namespace fasthprof::cli
