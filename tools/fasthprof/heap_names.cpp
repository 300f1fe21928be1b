#include "heap_names.h"

#include <sys/resource.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>

namespace fasthprof::cli {

bool choose_dump(const char* verb, const Args& args, const HprofModel& model, size_t* index) {
  const size_t dumps = model.dumps().size();
  if (dumps == 0) {
    fail(verb, "the file holds no heap dump");
    return false;
  }
  *index = dumps - 1;
  if (!args.has(kDumpOption)) return true;
  uint64_t n = 0;
  const std::string_view text = args.value(kDumpOption);
  if (!parse_count(text, &n) || n == 0 || n > dumps) {
    fail(verb, "--dump takes a dump of the file, 1 to %zu, not \"%.*s\"", dumps, static_cast<int>(text.size()),
         text.data());
    return false;
  }
  *index = static_cast<size_t>(n - 1);
  return true;
}

std::unique_ptr<Loaded> load_for_graph(const char* verb, const char* path, const Args& args, HeapGraph* graph) {
  // A --dump that names no dump of the file is refused by choose_dump() once the file is read.
  uint64_t wanted = 0;
  const bool named = args.has(kDumpOption) && parse_count(args.value(kDumpOption), &wanted) && wanted > 0;
  graph->collect(named ? static_cast<size_t>(wanted - 1) : HeapGraph::kLastDump);
  return load(verb, path, args, false, true, graph);
}

std::string hex_id(uint64_t id) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%" PRIx64, id);
  return text;
}

std::string object_label(const HeapGraph& graph, uint32_t node) {
  if (node == HeapGraph::kSuperRoot) return "<roots>";
  return graph.type_name(node) + " " + hex_id(graph.id(node));
}

std::vector<uint32_t> shortest_paths(const HeapGraph& graph, const std::vector<uint32_t>& targets) {
  const CsrGraph csr = graph.csr();
  std::vector<uint32_t> before(csr.nodes, kNoNode);
  std::vector<uint32_t> queue{HeapGraph::kSuperRoot};
  before[HeapGraph::kSuperRoot] = HeapGraph::kSuperRoot;
  size_t waiting = targets.size();
  std::vector<bool> wanted(csr.nodes, false);
  for (uint32_t t : targets) wanted[t] = true;
  if (wanted[HeapGraph::kSuperRoot]) --waiting;
  for (size_t head = 0; head < queue.size() && waiting > 0; ++head) {
    const uint32_t v = queue[head];
    for (uint32_t e = csr.start[v]; e < csr.start[v + 1]; ++e) {
      const uint32_t t = csr.targets[e];
      if (t == kNoNode || before[t] != kNoNode) continue;
      before[t] = v;
      queue.push_back(t);
      if (wanted[t] && --waiting == 0) break;
    }
  }
  return before;
}

std::vector<PathStep> path_to(const HeapGraph& graph, const std::vector<uint32_t>& before, uint32_t target) {
  std::vector<PathStep> steps;
  if (before[target] == kNoNode) return steps;
  for (uint32_t v = target; v != HeapGraph::kSuperRoot; v = before[v]) {
    steps.push_back(PathStep{graph.reference_name(before[v], v), v});
  }
  std::reverse(steps.begin(), steps.end());
  return steps;
}

bool analyse(const char* verb, const std::string& path, const HprofModel& model, size_t dump,
             const HeapGraphOptions& options, HeapAnalysis* analysis) {
  std::string error;
  if (!analysis->graph.build(model, dump, options, &error)) {
    return fail(verb, "%s: %s", path.c_str(), error.c_str()), false;
  }
  analysis->dominators.compute(analysis->graph.csr(), HeapGraph::kSuperRoot);
  analysis->sizes.compute(analysis->graph, analysis->dominators);
  return true;
}

bool add_retained(const char* verb, const char* path, const HprofModel& model, Table* table) {
  HeapAnalysis analysis;
  if (!analyse(verb, path, model, model.dumps().size() - 1, HeapGraphOptions{}, &analysis)) return false;
  const RetainedSizes& sizes = analysis.sizes;
  for (const ClassRetained& row : sizes.classes()) table->rows[sizes.class_name(analysis.graph, row)][2] += row.retained;
  table->totals[2] = sizes.total();
  table->metrics.push_back("retained");
  return true;
}

uint64_t peak_resident_bytes() {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<uint64_t>(usage.ru_maxrss) * 1024;
}

}  // namespace fasthprof::cli
