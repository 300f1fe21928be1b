// IdSet: the set of object IDs of one heap dump, which the verifier fills in its first pass over
// the dump and looks up in the second.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fasthprof {

// Open-addressing set (linear probing, at most half full) of nonzero 64-bit IDs: a dump can hold
// tens of millions of objects, and a node-based set would cost three times the memory. Not
// thread-safe; one owner at a time.
class IdSet {
 public:
  // Inserts id, which must be nonzero (0 marks a free slot); returns false if it was already
  // present. Allocates when the table doubles; out of memory aborts, as for any std::vector.
  bool insert(uint64_t id) {
    if ((count_ + 1) * 2 > slots_.size()) grow();
    size_t mask = slots_.size() - 1;
    for (size_t i = mix(id) & mask;; i = (i + 1) & mask) {
      if (slots_[i] == id) return false;
      if (slots_[i] == 0) {
        slots_[i] = id;
        ++count_;
        return true;
      }
    }
  }

  // Whether id was inserted; never allocates. 0 is never contained.
  bool contains(uint64_t id) const {
    if (slots_.empty() || id == 0) return false;
    size_t mask = slots_.size() - 1;
    for (size_t i = mix(id) & mask;; i = (i + 1) & mask) {
      if (slots_[i] == id) return true;
      if (slots_[i] == 0) return false;
    }
  }

  // Empties the set and frees its table.
  void clear() {
    slots_.clear();
    slots_.shrink_to_fit();
    count_ = 0;
  }

 private:
  // Runs of 64 consecutive IDs (agents number objects sequentially) share one scattered block of
  // slots, so a dump's own order stays cache- and TLB-friendly; the block number is mixed so that
  // no pattern of IDs piles into one place.
  static size_t mix(uint64_t x) {
    uint64_t block = x >> 6;
    block ^= block >> 33;
    block *= 0xff51afd7ed558ccdULL;
    block ^= block >> 33;
    return static_cast<size_t>(block << 6 | (x & 63));
  }

  void grow() {
    std::vector<uint64_t> old;
    old.swap(slots_);
    slots_.assign(old.empty() ? 1024 : old.size() * 2, 0);
    count_ = 0;
    for (uint64_t id : old) {
      if (id != 0) insert(id);
    }
  }

  std::vector<uint64_t> slots_;
  size_t count_ = 0;
};

}  // namespace fasthprof
