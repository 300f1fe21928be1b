#include "dominators.h"

#include <algorithm>

namespace fasthprof {

void Dominators::compute(const CsrGraph& graph, uint32_t root) {
  peak_bytes_ = 0;
  pre_.clear();
  order_.clear();
  idom_.clear();
  if (root >= graph.nodes) return;
  // idom_ holds each node's DFS parent until semi_nca() turns it into its immediate dominator.
  BigVector<uint32_t> semi;
  BigVector<uint32_t> late_start;
  depth_first(graph, root, &semi, &late_start);
  BigVector<uint32_t> late;
  late_predecessors(graph, semi, &late_start, &late);
  semi_nca(&semi, &late_start, late);
}

// Besides the preorder and the parents, the DFS sees every edge once, when its source is on top
// of the stack: a target numbered after the source is in the source's subtree, so the source is a
// candidate semidominator as it is (semi starts as the smallest such source, the parent
// included); a target numbered before it needs the forest's eval() of the source in the sweep,
// and is only counted here (late_start) for late_predecessors() to list.
void Dominators::depth_first(const CsrGraph& graph, uint32_t root, BigVector<uint32_t>* semi,
                             BigVector<uint32_t>* late_start) {
  pre_.assign(graph.nodes, kNoNode);
  // Reserved for every node, touched only for the reachable ones: pages never written cost no memory.
  order_.reserve(graph.nodes);
  idom_.reserve(graph.nodes);
  semi->reserve(graph.nodes);
  late_start->reserve(size_t{graph.nodes} + 1);
  struct Frame {
    uint32_t node;
    uint32_t pre;
    uint32_t next;  // the next successor to look at, as an index into graph.targets
  };
  std::vector<Frame> stack;
  pre_[root] = 0;
  order_.push_back(root);
  idom_.push_back(kNoNode);
  semi->push_back(0);
  late_start->push_back(0);
  stack.push_back(Frame{root, 0, graph.start[root]});
  size_t deepest = 1;
  uint32_t* pre = pre_.data();
  while (!stack.empty()) {
    Frame& top = stack.back();
    const uint32_t end = graph.start[top.node + 1];
    uint32_t found = kNoNode;
    while (top.next < end) {
      const uint32_t target = graph.targets[top.next++];
      if (target == kNoNode) continue;
      const uint32_t q = pre[target];
      if (q == kNoNode) {
        found = target;
        break;
      }
      if (q > top.pre) {
        if (top.pre < (*semi)[q]) (*semi)[q] = top.pre;
      } else if (q < top.pre) {
        ++(*late_start)[q];
      }
    }
    if (found == kNoNode) {
      stack.pop_back();
      continue;
    }
    const uint32_t number = static_cast<uint32_t>(order_.size());
    pre[found] = number;
    order_.push_back(found);
    idom_.push_back(top.pre);
    semi->push_back(top.pre);
    late_start->push_back(0);
    stack.push_back(Frame{found, number, graph.start[found]});
    if (stack.size() > deepest) deepest = stack.size();
  }
  late_start->push_back(0);
  note_bytes((pre_.size() + 4 * order_.size()) * sizeof(uint32_t) + deepest * sizeof(Frame));
}

// The late predecessors of each node (sources numbered after it), as preorder numbers. Skipped:
// those of the root, and of a node whose semidominator is the root already (a GC root's object,
// whatever else points at it): no eval() can give less. On a heap dump most edges to class
// objects of the system classes are such.
void Dominators::late_predecessors(const CsrGraph& graph, const BigVector<uint32_t>& semi,
                                   BigVector<uint32_t>* start, BigVector<uint32_t>* from) {
  const uint32_t reached = reachable();
  // Summed so that (*start)[q] is the end of q's list, then filled backwards: each list's end
  // moves down to its beginning, and (*start)[reached] stays the total.
  uint32_t sum = 0;
  for (uint32_t q = 0; q < reached; ++q) {
    if (q == 0 || semi[q] == 0) (*start)[q] = 0;
    sum += (*start)[q];
    (*start)[q] = sum;
  }
  (*start)[reached] = sum;
  from->resize(sum);
  const uint32_t* pre = pre_.data();
  uint32_t* slot = start->data();
  uint32_t* list = from->data();
  for (uint32_t p = 1; p < reached; ++p) {
    const uint32_t v = order_[p];
    for (uint32_t e = graph.start[v]; e < graph.start[v + 1]; ++e) {
      const uint32_t target = graph.targets[e];
      if (target == kNoNode) continue;
      const uint32_t q = pre[target];
      if (q < p && q != 0 && semi[q] != 0) list[--slot[q]] = p;
    }
  }
  note_bytes((pre_.size() + 4 * order_.size() + from->size()) * sizeof(uint32_t));
}

// Arrays by preorder number, reused as the sweep goes: late_start[w] holds the beginning of w's
// list until w is swept, then w's best (the smallest semi on the compressed forest path from w up
// to, not including, its tree's root); pre_ is not needed during the sweep, so its memory holds
// the forest (the link of a node already swept to its DFS parent, shortened by path compression)
// and the numbers are written back afterwards. That keeps the peak at 20 bytes per reachable node
// and 4 per late predecessor.
void Dominators::semi_nca(BigVector<uint32_t>* semi_array, BigVector<uint32_t>* late_start,
                          const BigVector<uint32_t>& late) {
  const uint32_t reached = reachable();
  uint32_t* semi = semi_array->data();
  uint32_t* best = late_start->data();
  uint32_t* forest = pre_.data();
  uint32_t* parent = idom_.data();
  std::fill(forest, forest + reached, kNoNode);
  std::vector<uint32_t> path;
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
  uint32_t end = reached > 0 ? best[reached] : 0;
  for (uint32_t w = reached; w-- > 1;) {
    const uint32_t begin = best[w];
    uint32_t s = semi[w];
    for (uint32_t e = begin; e < end; ++e) {
      const uint32_t candidate = eval(late[e]);
      if (candidate < s) s = candidate;
    }
    end = begin;
    semi[w] = s;
    best[w] = s;
    forest[w] = parent[w];
  }
  note_bytes((pre_.size() + 4 * size_t{reached} + late.size() + path.capacity()) * sizeof(uint32_t));
  // The immediate dominator of w is the nearest common ancestor, in the dominator tree built so
  // far (every smaller number is done), of w's parent and its semidominator: the first ancestor
  // of the parent whose number is at most semi(w).
  for (uint32_t w = 1; w < reached; ++w) {
    uint32_t d = parent[w];
    while (d > semi[w]) d = parent[d];
    parent[w] = d;
  }
  if (reached > 0) idom_[0] = kNoNode;
  std::fill(forest, forest + reached, kNoNode);
  for (uint32_t p = 0; p < reached; ++p) pre_[order_[p]] = p;
}

}  // namespace fasthprof
