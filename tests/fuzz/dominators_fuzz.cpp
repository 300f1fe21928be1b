// The semi-NCA dominators (hprof/dominators.h) on graphs made of arbitrary bytes, against a slow
// reference written here: the dominators of y are the x whose removal leaves y unreachable from
// the root, and its immediate dominator the one of them that all the others dominate. Byte 0 gives
// the number of nodes (1 to 48), byte 1 the root, each further pair of bytes an edge (a target
// byte of 255 is a reference to nothing, kNoNode). Any mismatch aborts.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

#include "dominators.h"

namespace {

using fasthprof::kNoNode;

std::vector<bool> reach(const std::vector<uint32_t>& start, const std::vector<uint32_t>& targets, uint32_t root,
                        uint32_t removed) {
  const size_t n = start.size() - 1;
  std::vector<bool> seen(n, false);
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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint32_t n = 1 + data[0] % 48;
  const uint32_t root = data[1] % n;
  std::vector<std::pair<uint32_t, uint32_t>> edges;
  for (size_t i = 2; i + 1 < size && edges.size() < 400; i += 2) {
    edges.emplace_back(data[i] % n, data[i + 1] == 255 ? kNoNode : data[i + 1] % n);
  }
  std::vector<uint32_t> start(n + 1, 0);
  for (const auto& edge : edges) ++start[edge.first + 1];
  for (uint32_t v = 0; v < n; ++v) start[v + 1] += start[v];
  std::vector<uint32_t> targets(edges.size());
  std::vector<uint32_t> next(start.begin(), start.end() - 1);
  for (const auto& edge : edges) targets[next[edge.first]++] = edge.second;
  fasthprof::Dominators dominators;
  dominators.compute(fasthprof::CsrGraph{n, start.data(), targets.data()}, root);

  const std::vector<bool> reachable = reach(start, targets, root, kNoNode);
  std::vector<std::vector<bool>> dominates(n);
  for (uint32_t x = 0; x < n; ++x) {
    const std::vector<bool> without = reach(start, targets, root, x);
    dominates[x].resize(n);
    for (uint32_t y = 0; y < n; ++y) dominates[x][y] = reachable[x] && reachable[y] && (x == y || !without[y]);
  }
  for (uint32_t y = 0; y < n; ++y) {
    uint32_t expected = kNoNode;
    if (reachable[y] && y != root) {
      // The strict dominator that every other strict dominator of y dominates.
      for (uint32_t x = 0; x < n && expected == kNoNode; ++x) {
        if (x == y || !dominates[x][y]) continue;
        bool closest = true;
        for (uint32_t z = 0; z < n && closest; ++z) closest = z == y || z == x || !dominates[z][y] || dominates[z][x];
        if (closest) expected = x;
      }
    }
    if (dominators.idom(y) != expected) {
      std::fprintf(stderr, "dominators_fuzz: node %u of %u (root %u): idom %u, the reference says %u\n", y, n, root,
                   dominators.idom(y), expected);
      std::abort();
    }
    if ((dominators.pre(y) != kNoNode) != static_cast<bool>(reachable[y])) std::abort();
  }
  return 0;
}
