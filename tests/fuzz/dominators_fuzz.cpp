// The semi-NCA dominators (hprof/dominators.h) on graphs made of arbitrary bytes, against the slow
// reference of tests/unit/dominators_reference.h (the dominators of y are the x whose removal
// leaves y unreachable from the root). Byte 0 gives the number of nodes (1 to 48), byte 1 the
// root, each further pair of bytes an edge (a target byte of 255 is a reference to nothing,
// kNoNode). Any mismatch aborts.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

#include "../unit/dominators_reference.h"
#include "dominators.h"

using fasthprof::kNoNode;

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

  const std::vector<bool> reachable = fasthprof::dominator_reference::reachable_without(start, targets, root, kNoNode);
  const std::vector<uint32_t> reference = fasthprof::dominator_reference::reference_idoms(start, targets, root);
  for (uint32_t y = 0; y < n; ++y) {
    const uint32_t expected = reference[y];
    if (dominators.idom(y) != expected) {
      std::fprintf(stderr, "dominators_fuzz: node %u of %u (root %u): idom %u, the reference says %u\n", y, n, root,
                   dominators.idom(y), expected);
      std::abort();
    }
    if ((dominators.pre(y) != kNoNode) != static_cast<bool>(reachable[y])) std::abort();
  }
  return 0;
}
