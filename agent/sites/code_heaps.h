// Whether a return address lies in compiled Java code (an nmethod), told from HotSpot's own map
// of its code heaps, for the frame walk (frame_walk.h) when CompiledMethodLoad has not named that
// code yet. HotSpot posts those events from its Service thread, which a busy machine runs late:
// on an H2 load with 4 threads at depth 4, 25 000 of the 36 000 stack walks the allocation
// traces asked of JVMTI were for frames in methods compiled whose event had not come yet.
//
//   CodeCache::_heaps -> each CodeHeap: its memory (VirtualSpace), its segment map (one byte per
//   segment: 0 where a block starts, else how many segments back to hop, 0xFF free), the segment
//   size -> the block (HeapBlock: a header with `used`) -> the CodeBlob after it, whose _name is
//   the same pointer for every nmethod ("nmethod", or "native nmethod" for a native method's
//   wrapper: learned from the first ones CompiledMethodLoad reports).
//
// Every offset comes from the tables HotSpot exports for its Serviceability Agent; what they do not
// list turns the lookup off (the walk then asks JVMTI, as before). Only addresses inside a heap's
// committed memory and its committed segment map are read, and only pointer values compared: a
// live frame's return address lies in a live block, whose map entries and header do not change.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace fasthprof {

class CodeHeaps {
 public:
  // Live, once: reads where the heaps are. False with *why when the VM does not describe them.
  bool start(std::string* why);
  // CompiledMethodLoad of an nmethod whose instructions start at `code` (any thread): learns the
  // name its blob carries, once.
  void learn(const void* code);
  // Whether `pc`, a return address on a live Java stack, lies in an nmethod. False when unsure.
  bool in_nmethod(uintptr_t pc) const;
  // For verbose=y: return addresses named here that CompiledMethodLoad had not named yet.
  uint64_t named() const { return named_.load(std::memory_order_relaxed); }
  void count_named() const { named_.fetch_add(1, std::memory_order_relaxed); }

 private:
  static constexpr int kMaxHeaps = 8;
  uintptr_t blob_at(uintptr_t pc) const;  // the blob holding pc, 0 when none or unsure

  const char* heaps_[kMaxHeaps] = {};
  int heap_count_ = 0;
  uint64_t memory_ = 0, segmap_ = 0, log2_segment_ = 0;    // in a CodeHeap
  uint64_t low_ = 0, high_ = 0;                            // in a VirtualSpace: committed memory
  uint64_t block_size_ = 0, used_ = 0;                     // HeapBlock, its header's `used`
  uint64_t name_ = 0;                                      // CodeBlob::_name
  std::atomic<uintptr_t> names_[2] = {};  // the names of an nmethod's blob and of a native wrapper's
  mutable std::atomic<uint64_t> named_{0};
};

}  // namespace fasthprof
