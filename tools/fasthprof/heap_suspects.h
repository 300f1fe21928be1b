// Leak suspects of a heap dump, as Eclipse MAT names them (`fasthprof leaks`, `fasthprof report`):
// an object right below the GC roots in the dominator tree that retains a share of the heap by
// itself, or a class whose many such instances do together; for each, where its memory
// accumulates and what that point holds.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "heap_names.h"
#include "retained_sizes.h"

namespace fasthprof::cli {

struct Held {
  std::string class_name;
  uint64_t objects = 0;
  uint64_t retained = 0;
};

struct Suspect {
  bool by_class = false;
  std::string what;        // the object's label, or the class's name
  uint64_t instances = 1;  // objects of the suspect
  uint64_t retained = 0;
  uint32_t biggest = 0;       // preorder number of the suspect (its biggest instance for a class)
  uint32_t accumulation = 0;  // preorder number
  std::vector<Held> holds;    // the accumulation point's children by class, largest first
  std::vector<PathStep> path;
};

// The suspects of the dump, largest first, at most top of them, with their accumulation points,
// holdings and the shortest path from a GC root to each accumulation point (one search for all).
// share is in percent.
std::vector<Suspect> find_suspects(const HeapGraph& graph, const Dominators& dominators, const RetainedSizes& sizes,
                                   double share, uint64_t top);

// A path's references on one line, a run of the same reference written once with its count
// ("RetainedShapes$Link.next x57").
std::string path_line(const std::vector<PathStep>& path);

// --share PERCENT of leaks and report: 0.1 to 100. False after a message.
bool parse_share(const char* verb, std::string_view text, double* share);

// part as a percentage of whole (0 for an empty whole).
inline double percent_of(uint64_t part, uint64_t whole) { return whole == 0 ? 0 : 100.0 * part / whole; }

}  // namespace fasthprof::cli
