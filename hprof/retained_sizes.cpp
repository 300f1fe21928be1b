#include "retained_sizes.h"

#include <algorithm>
#include <unordered_map>

namespace fasthprof {

namespace {

constexpr uint64_t kClassObjectKey = 1;

uint64_t class_key(const HeapGraph::Facts& facts) {
  return facts.kind == ObjectKind::kClass ? kClassObjectKey : facts.class_key;
}

}  // namespace

void RetainedSizes::compute(const HeapGraph& graph, const Dominators& dominators) {
  graph_ = &graph;
  dominators_ = &dominators;
  count_classes(graph, dominators);
  const uint32_t reached = dominators.reachable();
  // Dominators have smaller preorder numbers than what they dominate: one backward sweep adds
  // each object's retained size into its immediate dominator's.
  for (uint32_t p = reached; p-- > 1;) retained_[dominators.idom_pre(p)] += retained_[p];
  tree(dominators);
  per_class();
}

// Shallow sizes and classes, in node order (the dump's order when its IDs ascend).
void RetainedSizes::count_classes(const HeapGraph& graph, const Dominators& dominators) {
  const uint32_t reached = dominators.reachable();
  retained_.assign(reached, 0);
  class_of_.assign(reached, 0);
  classes_.clear();
  std::unordered_map<uint64_t, uint32_t> index;
  // Objects in ID (address) order change class at nearly every object, among a few classes: a
  // small direct-mapped cache in front of the map.
  struct Cached {
    uint64_t key = UINT64_MAX;
    uint32_t index = 0;
  };
  std::vector<Cached> cache(256);
  for (uint32_t v = 1; v < graph.nodes(); ++v) {
    const HeapGraph::Facts facts = graph.facts(v);
    const uint64_t key = class_key(facts);
    Cached& cached = cache[(key ^ (key >> 8) ^ (key >> 16)) & 255];
    if (cached.key != key) {
      const auto [found, added] = index.emplace(key, static_cast<uint32_t>(classes_.size()));
      if (added) classes_.push_back(ClassRetained{key, 0, 0, 0});
      cached = Cached{key, found->second};
    }
    const uint64_t shallow = facts.shallow;
    ClassRetained& row = classes_[cached.index];
    ++row.count;
    row.shallow += shallow;
    const uint32_t p = dominators.pre(v);
    if (p == kNoNode) continue;
    retained_[p] = shallow;
    class_of_[p] = cached.index;
  }
}

void RetainedSizes::tree(const Dominators& dominators) {
  const uint32_t reached = dominators.reachable();
  child_start_.assign(size_t{reached} + 1, 0);
  for (uint32_t p = 1; p < reached; ++p) ++child_start_[dominators.idom_pre(p) + 1];
  for (uint32_t p = 0; p < reached; ++p) child_start_[p + 1] += child_start_[p];
  children_.resize(reached > 0 ? reached - 1 : 0);
  // Filled from the back, each list's end (child_start_[q + 1]) moving down to its beginning: no
  // copy of the starts, and each node's children in ascending order. child_start_[q + 1] ends as
  // the beginning of q's list: moved down by one, with the total last.
  for (uint32_t p = reached; p-- > 1;) children_[--child_start_[dominators.idom_pre(p) + 1]] = p;
  for (uint32_t p = 0; p < reached; ++p) child_start_[p] = child_start_[p + 1];
  if (reached > 0) child_start_[reached] = reached - 1;
}

// A walk of the dominator tree that keeps, per class, how many of the nodes on the way down are
// of that class: a node is its class's top-level instance when none is.
void RetainedSizes::per_class() {
  if (retained_.empty()) return;
  BigVector<uint32_t> above(classes_.size(), 0);
  struct Frame {
    uint32_t pre;
    uint32_t next;
  };
  std::vector<Frame> stack{Frame{0, child_start_[0]}};
  while (!stack.empty()) {
    Frame& top = stack.back();
    if (top.next < child_start_[top.pre + 1]) {
      const uint32_t child = children_[top.next++];
      const uint32_t cls = class_of_[child];
      // Class objects count in no class, as in VisualVM: only what instances and arrays retain.
      if (above[cls]++ == 0 && classes_[cls].key != kClassObjectKey) classes_[cls].retained += retained_[child];
      stack.push_back(Frame{child, child_start_[child]});
      continue;
    }
    if (top.pre != 0) --above[class_of_[top.pre]];
    stack.pop_back();
  }
  std::sort(classes_.begin(), classes_.end(), [](const ClassRetained& a, const ClassRetained& b) {
    if (a.retained != b.retained) return a.retained > b.retained;
    if (a.shallow != b.shallow) return a.shallow > b.shallow;
    return a.key < b.key;
  });
}

std::vector<uint32_t> RetainedSizes::top(size_t n) const {
  // Larger first; of equal sizes the smaller ID first.
  auto before = [this](uint32_t a, uint32_t b) {
    if (retained_[a] != retained_[b]) return retained_[a] > retained_[b];
    return graph_->id(dominators_->node(a)) < graph_->id(dominators_->node(b));
  };
  // A heap of the n best so far, the worst of them on top: one pass, n entries of memory.
  std::vector<uint32_t> best;
  for (uint32_t p = 1; p < retained_.size() && n > 0; ++p) {
    if (best.size() < n) {
      best.push_back(p);
      std::push_heap(best.begin(), best.end(), before);
    } else if (before(p, best.front())) {
      std::pop_heap(best.begin(), best.end(), before);
      best.back() = p;
      std::push_heap(best.begin(), best.end(), before);
    }
  }
  std::sort(best.begin(), best.end(), before);
  return best;
}

std::vector<uint32_t> RetainedSizes::children(uint32_t pre, size_t n) const {
  std::vector<uint32_t> out(children_.begin() + child_start_[pre], children_.begin() + child_start_[pre + 1]);
  auto before = [this](uint32_t a, uint32_t b) {
    if (retained_[a] != retained_[b]) return retained_[a] > retained_[b];
    return graph_->id(dominators_->node(a)) < graph_->id(dominators_->node(b));
  };
  const size_t kept = n == 0 ? out.size() : std::min(n, out.size());
  std::partial_sort(out.begin(), out.begin() + kept, out.end(), before);
  out.resize(kept);
  return out;
}

std::string RetainedSizes::class_name(const HeapGraph& graph, const ClassRetained& row) const {
  if (row.key == kClassObjectKey) return "java.lang.Class";
  if (row.key < 16) {
    const char* name = primitive_array_name(static_cast<uint8_t>(row.key));
    return name != nullptr ? name : "<primitive array>";
  }
  return graph.class_name(row.key);
}

size_t RetainedSizes::bytes() const {
  return retained_.capacity() * 8 + (class_of_.capacity() + child_start_.capacity() + children_.capacity()) * 4 +
         classes_.capacity() * sizeof(ClassRetained);
}

}  // namespace fasthprof
