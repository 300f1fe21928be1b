// The slow reference the dominator tests check hprof/dominators.h against (the unit test's random
// graphs, the fuzz target's arbitrary ones): y's dominators are the x whose removal leaves y
// unreachable from the root; its immediate dominator is the strict dominator that every other
// strict dominator of y dominates too, i.e. the one with the most dominators of its own. Cubic:
// for graphs of a few dozen nodes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "dominators.h"

namespace fasthprof::dominator_reference {

// The nodes reachable from root in the CSR graph (start, targets) without passing through removed
// (kNoNode: none removed); a target kNoNode is a reference to nothing.
inline std::vector<bool> reachable_without(const std::vector<uint32_t>& start, const std::vector<uint32_t>& targets,
                                           uint32_t root, uint32_t removed) {
  std::vector<bool> seen(start.size() - 1, false);
  std::vector<uint32_t> stack;
  if (root != removed) {
    seen[root] = true;
    stack.push_back(root);
  }
  while (!stack.empty()) {
    const uint32_t v = stack.back();
    stack.pop_back();
    for (uint32_t e = start[v]; e < start[v + 1]; ++e) {
      const uint32_t t = targets[e];
      if (t != kNoNode && t != removed && !seen[t]) {
        seen[t] = true;
        stack.push_back(t);
      }
    }
  }
  return seen;
}

// Each node's immediate dominator, kNoNode for the root and for nodes it does not reach.
inline std::vector<uint32_t> reference_idoms(const std::vector<uint32_t>& start, const std::vector<uint32_t>& targets,
                                             uint32_t root) {
  const uint32_t n = static_cast<uint32_t>(start.size() - 1);
  const std::vector<bool> reachable = reachable_without(start, targets, root, kNoNode);
  std::vector<std::vector<bool>> dominates(n, std::vector<bool>(n, false));  // [x][y]
  for (uint32_t x = 0; x < n; ++x) {
    if (!reachable[x]) continue;
    const std::vector<bool> without = reachable_without(start, targets, root, x);
    for (uint32_t y = 0; y < n; ++y) dominates[x][y] = reachable[y] && (y == x || !without[y]);
  }
  std::vector<uint32_t> out(n, kNoNode);
  for (uint32_t y = 0; y < n; ++y) {
    if (!reachable[y] || y == root) continue;
    size_t best_count = 0;
    for (uint32_t x = 0; x < n; ++x) {
      if (x == y || !dominates[x][y]) continue;
      size_t count = 0;
      for (uint32_t z = 0; z < n; ++z) count += dominates[z][x];
      if (out[y] == kNoNode || count > best_count) {
        out[y] = x;
        best_count = count;
      }
    }
  }
  return out;
}

}  // namespace fasthprof::dominator_reference
