// Retained sizes over a heap dump's dominator tree: what would be freed if an object went away
// (its shallow bytes and those of every object it dominates), per object and per class, and the
// dominator tree's children, for the verbs and reports that rank what keeps memory alive.
//
// Per class, as VisualVM's heap library counts it (HprofHeap.computeRetainedSizeByClass): the
// retained sizes of the class's instances that no other instance of the class dominates, so that a
// linked list's nodes are not counted once per node above them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "big_array.h"

#include "dominators.h"
#include "heap_graph.h"

namespace fasthprof {

struct ClassRetained {
  uint64_t key = 0;  // the class object ID; a primitive array's element type; 1 for class objects
  uint64_t count = 0;    // objects of the class in the dump, reachable or not
  uint64_t shallow = 0;  // their shallow bytes
  uint64_t retained = 0;
};

class RetainedSizes {
 public:
  // From a graph and its dominators (computed from HeapGraph::kSuperRoot). Allocates 20 bytes per
  // reachable object.
  void compute(const HeapGraph& graph, const Dominators& dominators);

  // By preorder number (Dominators::pre); 0 is the super-root: every reachable object's bytes.
  uint64_t retained_pre(uint32_t pre) const { return retained_[pre]; }
  // By node (HeapGraph's): 0 for an object no root reaches.
  uint64_t retained(uint32_t node) const {
    const uint32_t pre = dominators_->pre(node);
    return pre == kNoNode ? 0 : retained_[pre];
  }
  uint64_t total() const { return retained_.empty() ? 0 : retained_[0]; }
  // The n objects of largest retained size, largest first (ties: the smaller ID first), as
  // preorder numbers; the super-root never.
  std::vector<uint32_t> top(size_t n) const;
  // The children of a node in the dominator tree (preorder numbers), largest retained first, at
  // most n of them (0: all).
  std::vector<uint32_t> children(uint32_t pre, size_t n) const;
  uint32_t child_count(uint32_t pre) const { return child_start_[pre + 1] - child_start_[pre]; }
  // Every class of the dump, largest retained first (ties: larger shallow, then key).
  const std::vector<ClassRetained>& classes() const { return classes_; }
  // The name of a class of classes(): "java.util.HashMap", "byte[]", "java.lang.Class".
  std::string class_name(const HeapGraph& graph, const ClassRetained& row) const;
  size_t bytes() const;

 private:
  void count_classes(const HeapGraph& graph, const Dominators& dominators);
  void tree(const Dominators& dominators);
  void per_class();

  const Dominators* dominators_ = nullptr;
  const HeapGraph* graph_ = nullptr;
  BigVector<uint64_t> retained_;     // by preorder number
  BigVector<uint32_t> class_of_;     // by preorder number: index into classes_
  BigVector<uint32_t> child_start_;  // the dominator tree in CSR form, by preorder number
  BigVector<uint32_t> children_;
  std::vector<ClassRetained> classes_;
};

}  // namespace fasthprof
