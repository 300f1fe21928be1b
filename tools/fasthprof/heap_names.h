// What the verbs that walk a heap dump's object graph (dominators, path, leaks) share: choosing the
// dump of a file that holds several, naming objects, shortest paths from the roots, and the memory
// they used.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cli.h"
#include "heap_graph.h"
#include "profile.h"
#include "retained_sizes.h"

namespace fasthprof::cli {

// --dump N: the options line of both verbs' --help.
inline constexpr char kDumpOption[] = "--dump";
#define FASTHPROF_DUMP_HELP                                                        \
  "  --dump N  the Nth heap dump of a file that holds several (1 = the first;\n"   \
  "            default the last)\n"

// The dump --dump names (0-based into model.dumps()), by default the last. False after a message
// when the file has no heap dump or N is not one of its dumps.
bool choose_dump(const char* verb, const Args& args, const HprofModel& model, size_t* index);

// load() for a verb that then builds the object graph of the dump --dump names (the last by
// default): graph frames that dump's objects during the model's pass (HeapGraph::collect), so that
// its build() does not read the records a second time. The pages read stay in the process.
std::unique_ptr<Loaded> load_for_graph(const char* verb, const char* path, const Args& args, HeapGraph* graph);

// An object ID as the dumps' readers print it: 0x7f3a2c10.
std::string hex_id(uint64_t id);
// "java.util.HashMap 0x7f3a2c10"; "<roots>" for the super-root.
std::string object_label(const HeapGraph& graph, uint32_t node);
// A breadth-first search from the super-root: each reached node's predecessor on a shortest path,
// kNoNode where none is. Stops once every target is reached. 4 bytes per object.
std::vector<uint32_t> shortest_paths(const HeapGraph& graph, const std::vector<uint32_t>& targets);

// One reference of a path: its name (HeapGraph::reference_name) and the object it reaches.
struct PathStep {
  std::string via;
  uint32_t node;
};

// The path to target out of shortest_paths(): empty when no root reaches it.
std::vector<PathStep> path_to(const HeapGraph& graph, const std::vector<uint32_t>& before, uint32_t target);

// One dump's object graph, its dominator tree from the GC roots and the retained sizes over it, as
// leaks, report and diff --value retained need them (dominators times each step itself).
struct HeapAnalysis {
  HeapGraph graph;
  Dominators dominators;
  RetainedSizes sizes;  // refers to graph and dominators: the analysis stays where it was made
};

// Builds *analysis from dump (0-based) of model. False after a message naming path.
bool analyse(const char* verb, const std::string& path, const HprofModel& model, size_t dump,
             const HeapGraphOptions& options, HeapAnalysis* analysis);

// The retained bytes of each class of the file's last heap dump (as `fasthprof dominators` counts
// them, without --weak or --compressed) as a third metric, "retained", of a heap table that
// build_table made from the same file; its total is what the roots retain. False after a message.
bool add_retained(const char* verb, const char* path, const HprofModel& model, Table* table);

// The most resident memory the process has had, in bytes (getrusage), the mapped file's pages
// included.
uint64_t peak_resident_bytes();

}  // namespace fasthprof::cli
