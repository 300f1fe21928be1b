#include "dominators.h"

namespace fasthprof {

void Dominators::compute(const CsrGraph& graph, uint32_t root) {
  peak_bytes_ = 0;
  pre_.clear();
  order_.clear();
  idom_.clear();
  if (root >= graph.nodes) return;
  // idom_ holds each node's DFS parent until semi_nca() turns it into its immediate dominator.
  depth_first(graph, root, &idom_);
  BigVector<uint32_t> pred_start;
  BigVector<uint32_t> preds;
  predecessors(graph, &pred_start, &preds);
  semi_nca(pred_start, preds);
}

void Dominators::depth_first(const CsrGraph& graph, uint32_t root, BigVector<uint32_t>* parent) {
  pre_.assign(graph.nodes, kNoNode);
  // Reserved for every node, touched only for the reachable ones: pages never written cost no memory.
  order_.reserve(graph.nodes);
  parent->reserve(graph.nodes);
  struct Frame {
    uint32_t node;
    uint32_t pre;
    uint32_t next;  // the next successor to look at, as an index into graph.targets
  };
  std::vector<Frame> stack;
  pre_[root] = 0;
  order_.push_back(root);
  parent->push_back(kNoNode);
  stack.push_back(Frame{root, 0, graph.start[root]});
  size_t deepest = 1;
  while (!stack.empty()) {
    Frame& top = stack.back();
    const uint32_t end = graph.start[top.node + 1];
    uint32_t found = kNoNode;
    while (top.next < end) {
      const uint32_t target = graph.targets[top.next++];
      if (target != kNoNode && pre_[target] == kNoNode) {
        found = target;
        break;
      }
    }
    if (found == kNoNode) {
      stack.pop_back();
      continue;
    }
    const uint32_t number = static_cast<uint32_t>(order_.size());
    pre_[found] = number;
    order_.push_back(found);
    parent->push_back(top.pre);
    stack.push_back(Frame{found, number, graph.start[found]});
    if (stack.size() > deepest) deepest = stack.size();
  }
  note_bytes((pre_.size() + 2 * order_.size()) * sizeof(uint32_t) + deepest * sizeof(Frame));
}

void Dominators::predecessors(const CsrGraph& graph, BigVector<uint32_t>* start, BigVector<uint32_t>* from) const {
  const uint32_t reached = reachable();
  // Counted into start[q], summed so that start[q] is the end of q's list, then filled backwards:
  // each list's end moves down to its beginning, and start[reached] stays the total.
  start->assign(size_t{reached} + 1, 0);
  uint64_t total = 0;
  for (uint32_t p = 0; p < reached; ++p) {
    const uint32_t v = order_[p];
    for (uint32_t e = graph.start[v]; e < graph.start[v + 1]; ++e) {
      const uint32_t target = graph.targets[e];
      if (target == kNoNode) continue;
      ++(*start)[pre_[target]];
      ++total;
    }
  }
  uint32_t sum = 0;
  for (uint32_t& entry : *start) {
    sum += entry;
    entry = sum;
  }
  from->resize(total);
  for (uint32_t p = 0; p < reached; ++p) {
    const uint32_t v = order_[p];
    for (uint32_t e = graph.start[v]; e < graph.start[v + 1]; ++e) {
      const uint32_t target = graph.targets[e];
      if (target != kNoNode) (*from)[--(*start)[pre_[target]]] = p;
    }
  }
}

void Dominators::semi_nca(const BigVector<uint32_t>& pred_start, const BigVector<uint32_t>& preds) {
  const uint32_t reached = reachable();
  // All by preorder number. semi: the semidominator. best: during the sweep, the smallest semi on
  // the compressed forest path from a node up to (not including) its tree's root. forest: the
  // link of a node already swept to its DFS parent, shortened by path compression.
  BigVector<uint32_t> semi(reached);
  BigVector<uint32_t> best(reached);
  BigVector<uint32_t> forest(reached, kNoNode);
  BigVector<uint32_t> path;
  // The smallest semi on the forest path from v (swept, so linked) to its tree's root, exclusive.
  auto eval = [&](uint32_t v) {
    uint32_t u = v;
    path.clear();
    while (forest[forest[u]] != kNoNode) {
      path.push_back(u);
      u = forest[u];
    }
    // From the top down, each node takes its link's minimum and then links past it, to the root.
    for (size_t i = path.size(); i-- > 0;) {
      const uint32_t x = path[i];
      const uint32_t link = forest[x];
      if (best[link] < best[x]) best[x] = best[link];
      forest[x] = forest[link];
    }
    return best[v];
  };
  for (uint32_t w = reached; w-- > 1;) {
    uint32_t s = idom_[w];  // the DFS parent: a predecessor, so a candidate
    for (uint32_t e = pred_start[w]; e < pred_start[w + 1]; ++e) {
      const uint32_t v = preds[e];
      if (v == w) continue;
      const uint32_t candidate = v < w ? v : eval(v);
      if (candidate < s) s = candidate;
    }
    semi[w] = s;
    best[w] = s;
    forest[w] = idom_[w];
  }
  note_bytes(bytes() + (pred_start.size() + preds.size() + 3 * size_t{reached} + path.capacity()) * sizeof(uint32_t));
  // The immediate dominator of w is the nearest common ancestor, in the dominator tree built so
  // far (every smaller number is done), of w's parent and its semidominator: the first ancestor
  // of the parent whose number is at most semi(w).
  for (uint32_t w = 1; w < reached; ++w) {
    uint32_t d = idom_[w];
    while (d > semi[w]) d = idom_[d];
    idom_[w] = d;
  }
  if (reached > 0) idom_[0] = kNoNode;
  order_.shrink_to_fit();
  idom_.shrink_to_fit();
}

}  // namespace fasthprof
