// Dominators of a directed graph held in CSR form (for each node, its successors in one array),
// by the semi-NCA algorithm (Georgiadis, "Linear-Time Algorithms for Dominators and Related
// Problems", 2005; semidominators as Lengauer and Tarjan, 1979, with path compression, then
// each immediate dominator as the nearest common ancestor of the DFS parent and the
// semidominator). Node x dominates node y when every path from the root to y passes through x;
// the immediate dominator of y is its closest strict dominator, and those links form a tree.
//
// Heap dumps hold tens of millions of objects: indices are 32-bit, every array is flat, the DFS
// and the path compression use explicit stacks (a linked list a million long is a path a million
// deep), and the arrays are numbered in DFS preorder so that a dominator always has a smaller
// number than what it dominates: retained sizes are then one backward sweep.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "big_array.h"

namespace fasthprof {

inline constexpr uint32_t kNoNode = UINT32_MAX;

// A graph of `nodes` nodes: the successors of node v are targets[start[v] .. start[v + 1]);
// start has nodes + 1 entries. A target kNoNode (a reference that resolves to nothing) is skipped.
struct CsrGraph {
  uint32_t nodes = 0;
  const uint32_t* start = nullptr;
  const uint32_t* targets = nullptr;
};

class Dominators {
 public:
  // Computes the dominator tree of the nodes reachable from root. Allocates 4 bytes per node and 16
  // per reachable node, plus 4 per late predecessor (an edge from a node the DFS numbers after its
  // target, unless the target's semidominator is the root already), freed before it returns but
  // what the accessors below read (4 bytes per node, 8 per reachable node).
  void compute(const CsrGraph& graph, uint32_t root);

  // Nodes reachable from the root (the root included).
  uint32_t reachable() const { return static_cast<uint32_t>(order_.size()); }
  // The node of a DFS preorder number (0: the root), and the number of a node (kNoNode when the
  // root does not reach it).
  uint32_t node(uint32_t pre) const { return order_[pre]; }
  uint32_t pre(uint32_t node) const { return pre_[node]; }
  // The preorder number of the immediate dominator of the node numbered pre (kNoNode for the
  // root): always smaller than pre.
  uint32_t idom_pre(uint32_t pre) const { return idom_[pre]; }
  // The immediate dominator of a node: kNoNode for the root and for nodes it does not reach.
  uint32_t idom(uint32_t node) const {
    const uint32_t p = pre_[node];
    return p == kNoNode || p == 0 ? kNoNode : order_[idom_[p]];
  }
  // The most bytes compute() held at once, its own arrays only (not the graph's).
  size_t peak_bytes() const { return peak_bytes_; }
  // Bytes the result holds.
  size_t bytes() const { return (pre_.size() + order_.size() + idom_.size()) * sizeof(uint32_t); }

 private:
  void depth_first(const CsrGraph& graph, uint32_t root, BigVector<uint32_t>* semi, BigVector<uint32_t>* late_start);
  void late_predecessors(const CsrGraph& graph, const BigVector<uint32_t>& semi, BigVector<uint32_t>* start,
                         BigVector<uint32_t>* from);
  void semi_nca(BigVector<uint32_t>* semi, BigVector<uint32_t>* late_start, const BigVector<uint32_t>& late);
  void note_bytes(size_t bytes) {
    if (bytes > peak_bytes_) peak_bytes_ = bytes;
  }

  BigVector<uint32_t> pre_;    // by node
  BigVector<uint32_t> order_;  // by preorder number: the node
  BigVector<uint32_t> idom_;   // by preorder number: the preorder number of the immediate dominator
  size_t peak_bytes_ = 0;
};

}  // namespace fasthprof
