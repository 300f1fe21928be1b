#include "heap_suspects.h"

#include <algorithm>
#include <cstdlib>
#include <map>

namespace fasthprof::cli {

namespace {

// Down from a suspect, a child holding this share of the suspect's bytes or more is where the
// memory went on.
constexpr double kAccumulationShare = 0.8;

// The top-level instances of one class under the threshold, added up.
struct Group {
  std::string what;
  uint64_t instances = 0;
  uint64_t retained = 0;
  uint32_t biggest = 0;
};

// Down the dominator tree from the suspect while one child holds most of its bytes, stopping at
// the head of a chain of one type (a linked list's first node, not its thousandth).
uint32_t accumulation_point(const HeapGraph& graph, const Dominators& dominators, const RetainedSizes& sizes,
                            uint32_t pre) {
  const double most = kAccumulationShare * static_cast<double>(sizes.retained_pre(pre));
  for (;;) {
    const std::vector<uint32_t> largest = sizes.children(pre, 1);
    if (largest.empty() || static_cast<double>(sizes.retained_pre(largest[0])) < most ||
        graph.type_name(dominators.node(largest[0])) == graph.type_name(dominators.node(pre))) {
      return pre;
    }
    pre = largest[0];
  }
}

// What the accumulation point holds: its dominator-tree children grouped by type, at most 5.
std::vector<Held> holdings(const HeapGraph& graph, const Dominators& dominators, const RetainedSizes& sizes,
                           uint32_t pre) {
  std::map<std::string, Held> by_class;
  for (uint32_t child : sizes.children(pre, 0)) {
    const std::string name = graph.type_name(dominators.node(child));
    Held& held = by_class[name];
    held.class_name = name;
    ++held.objects;
    held.retained += sizes.retained_pre(child);
  }
  std::vector<Held> rows;
  for (auto& [name, held] : by_class) rows.push_back(std::move(held));
  std::sort(rows.begin(), rows.end(), [](const Held& a, const Held& b) {
    return a.retained != b.retained ? a.retained > b.retained : a.class_name < b.class_name;
  });
  if (rows.size() > 5) rows.resize(5);
  return rows;
}

}  // namespace

std::vector<Suspect> find_suspects(const HeapGraph& graph, const Dominators& dominators, const RetainedSizes& sizes,
                                   double share, uint64_t top) {
  const double threshold = share / 100.0 * static_cast<double>(sizes.total());
  std::vector<Suspect> suspects;
  std::map<uint64_t, Group> classes;  // by class ID (a primitive array's by its element type)
  for (uint32_t child : sizes.children(0, 0)) {
    const uint32_t node = dominators.node(child);
    const uint64_t retained = sizes.retained_pre(child);
    if (static_cast<double>(retained) >= threshold) {
      suspects.push_back(Suspect{false, object_label(graph, node), 1, retained, child, child, {}, {}});
    } else if (graph.kind(node) != ObjectKind::kClass) {
      const uint64_t key = graph.kind(node) == ObjectKind::kPrimitiveArray ? graph.element_type(node) : graph.class_id(node);
      Group& group = classes[key];
      if (group.instances++ == 0 || retained > sizes.retained_pre(group.biggest)) group.biggest = child;
      group.retained += retained;
      if (group.what.empty()) group.what = graph.type_name(node);
    }
  }
  for (auto& [key, group] : classes) {
    if (static_cast<double>(group.retained) < threshold) continue;
    suspects.push_back(Suspect{true, group.what, group.instances, group.retained, group.biggest, 0, {}, {}});
  }
  std::sort(suspects.begin(), suspects.end(),
            [](const Suspect& a, const Suspect& b) { return a.retained > b.retained; });
  if (suspects.size() > top) suspects.resize(top);
  std::vector<uint32_t> targets;
  for (Suspect& suspect : suspects) {
    suspect.accumulation = accumulation_point(graph, dominators, sizes, suspect.biggest);
    suspect.holds = holdings(graph, dominators, sizes, suspect.accumulation);
    targets.push_back(dominators.node(suspect.accumulation));
  }
  const std::vector<uint32_t> before = shortest_paths(graph, targets);
  for (Suspect& suspect : suspects) suspect.path = path_to(graph, before, dominators.node(suspect.accumulation));
  return suspects;
}

std::string path_line(const std::vector<PathStep>& path) {
  std::string line;
  for (size_t i = 0; i < path.size();) {
    size_t run = 1;
    while (i + run < path.size() && path[i + run].via == path[i].via) ++run;
    if (!line.empty()) line += " -> ";
    line += path[i].via;
    if (run > 1) line += " x" + std::to_string(run);
    i += run;
  }
  return line;
}

bool parse_share(const char* verb, std::string_view text, double* share) {
  const std::string copy(text);
  char* end = nullptr;
  *share = std::strtod(copy.c_str(), &end);
  if (copy.empty() || end == nullptr || *end != '\0' || !(*share >= 0.1 && *share <= 100)) {
    return fail(verb, "--share takes a percentage from 0.1 to 100, not \"%s\"", copy.c_str()), false;
  }
  return true;
}

}  // namespace fasthprof::cli
