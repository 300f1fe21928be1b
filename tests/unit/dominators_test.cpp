// The semi-NCA dominators (hprof/dominators.h) on graphs whose dominator trees are known by hand,
// and on random graphs against a slow reference: "x dominates y" when removing x leaves y
// unreachable from the root.
#include "dominators.h"

#include "dominators_reference.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace fasthprof {
namespace {

// An edge list in CSR form, owning its arrays.
struct Graph {
  std::vector<uint32_t> start;
  std::vector<uint32_t> targets;

  Graph(uint32_t nodes, const std::vector<std::pair<uint32_t, uint32_t>>& edges) : start(nodes + 1, 0) {
    for (const auto& [from, to] : edges) ++start[from + 1];
    for (uint32_t v = 0; v < nodes; ++v) start[v + 1] += start[v];
    targets.resize(edges.size());
    std::vector<uint32_t> next(start.begin(), start.end() - 1);
    for (const auto& [from, to] : edges) targets[next[from]++] = to;
  }
  CsrGraph csr() const { return CsrGraph{static_cast<uint32_t>(start.size() - 1), start.data(), targets.data()}; }
};

std::vector<uint32_t> idoms(const Graph& graph, uint32_t root) {
  Dominators dominators;
  dominators.compute(graph.csr(), root);
  std::vector<uint32_t> out;
  for (uint32_t v = 0; v + 1 < graph.start.size(); ++v) out.push_back(dominators.idom(v));
  return out;
}

constexpr uint32_t X = kNoNode;

TEST(Dominators, Diamond) {
  // 0 -> 1, 2; 1, 2 -> 3; 3 -> 4: neither side of the diamond dominates its bottom.
  Graph g(5, {{0, 1}, {0, 2}, {1, 3}, {2, 3}, {3, 4}});
  EXPECT_EQ(idoms(g, 0), (std::vector<uint32_t>{X, 0, 0, 0, 3}));
}

TEST(Dominators, LoopAndSelfLoop) {
  // 0 -> 1 -> 2 -> 3 -> 1 (a loop entered at 1), 2 -> 2, 3 -> 4.
  Graph g(5, {{0, 1}, {1, 2}, {2, 3}, {3, 1}, {2, 2}, {3, 4}});
  EXPECT_EQ(idoms(g, 0), (std::vector<uint32_t>{X, 0, 1, 2, 3}));
}

TEST(Dominators, Irreducible) {
  // A loop of 1 and 2 entered at both: 0 -> 1, 0 -> 2, 1 <-> 2, 2 -> 3. Only the root dominates.
  Graph g(4, {{0, 1}, {0, 2}, {1, 2}, {2, 1}, {2, 3}});
  EXPECT_EQ(idoms(g, 0), (std::vector<uint32_t>{X, 0, 0, 2}));
}

TEST(Dominators, UnreachableNodesAndDanglingTargets) {
  // 3 and 4 are reached by nothing from 0 (4 points into the graph: 4 -> 2 must not change 2's
  // dominator); a kNoNode target is skipped.
  Graph g(5, {{0, 1}, {1, 2}, {4, 2}, {3, 4}, {1, X}});
  Dominators d;
  d.compute(g.csr(), 0);
  EXPECT_EQ(d.reachable(), 3u);
  EXPECT_EQ(d.pre(3), kNoNode);
  EXPECT_EQ(d.pre(4), kNoNode);
  EXPECT_EQ(idoms(g, 0), (std::vector<uint32_t>{X, 0, 1, X, X}));
}

TEST(Dominators, RootOtherThanZero) {
  Graph g(4, {{3, 0}, {0, 1}, {3, 2}, {2, 1}});
  EXPECT_EQ(idoms(g, 3), (std::vector<uint32_t>{3, 3, 3, X}));
}

TEST(Dominators, LengauerTarjanExample) {
  // The flow graph of Lengauer and Tarjan's paper (fig. 1), R A B C D E F G H I J K L = 0 .. 12,
  // and its dominator tree as printed there.
  enum { R, A, B, C, D, E, F, G, H, I, J, K, L };
  Graph g(13, {{R, A}, {R, B}, {R, C}, {A, D}, {B, A}, {B, D}, {B, E}, {C, F}, {C, G}, {D, L}, {E, H},
               {F, I}, {G, I}, {G, J}, {H, E}, {H, K}, {I, K}, {J, I}, {K, I}, {K, R}, {L, H}});
  EXPECT_EQ(idoms(g, R), (std::vector<uint32_t>{X, R, R, R, R, R, C, C, R, R, G, R, D}));
}

TEST(Dominators, LongChainNeedsNoRecursion) {
  // A list a million long, each node also pointing back to the root: the DFS and the path
  // compression run as deep as the list.
  const uint32_t n = 1000000;
  std::vector<std::pair<uint32_t, uint32_t>> edges;
  for (uint32_t v = 0; v + 1 < n; ++v) {
    edges.emplace_back(v, v + 1);
    edges.emplace_back(v + 1, 0);
  }
  edges.emplace_back(0, n - 1);  // a shortcut to the end: the end is the root's alone
  Graph g(n, edges);
  Dominators d;
  d.compute(g.csr(), 0);
  ASSERT_EQ(d.reachable(), n);
  EXPECT_EQ(d.idom(1), 0u);
  EXPECT_EQ(d.idom(n / 2), n / 2 - 1);
  EXPECT_EQ(d.idom(n - 1), 0u);
  EXPECT_EQ(d.idom(n - 2), n - 3);
}

TEST(Dominators, RandomGraphsAgreeWithTheReference) {
  std::mt19937 random(20261128);
  for (int round = 0; round < 3000; ++round) {
    const uint32_t n = 1 + random() % 40;
    // Sparse to dense, and a backbone of forward edges sometimes, so that most nodes are reached.
    const uint32_t edge_count = random() % (3 * n + 1);
    std::vector<std::pair<uint32_t, uint32_t>> edges;
    if (random() % 2 == 0) {
      for (uint32_t v = 1; v < n; ++v) edges.emplace_back(random() % v, v);
    }
    for (uint32_t e = 0; e < edge_count; ++e) edges.emplace_back(random() % n, random() % n);
    if (random() % 8 == 0 && n > 1) edges.emplace_back(random() % n, kNoNode);
    Graph g(n, edges);
    const uint32_t root = random() % n;
    ASSERT_EQ(idoms(g, root), dominator_reference::reference_idoms(g.start, g.targets, root))
        << "round " << round << ", " << n << " nodes, root " << root;
  }
}

TEST(Dominators, PreorderPutsDominatorsFirst) {
  std::mt19937 random(7);
  const uint32_t n = 5000;
  std::vector<std::pair<uint32_t, uint32_t>> edges;
  for (uint32_t e = 0; e < 4 * n; ++e) edges.emplace_back(random() % n, random() % n);
  Graph g(n, edges);
  Dominators d;
  d.compute(g.csr(), 0);
  for (uint32_t p = 1; p < d.reachable(); ++p) {
    ASSERT_LT(d.idom_pre(p), p);
    ASSERT_EQ(d.pre(d.node(p)), p);
  }
  EXPECT_GT(d.peak_bytes(), 0u);
}

}  // namespace
}  // namespace fasthprof
