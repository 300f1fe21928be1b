// When code at an address was last freed, by epoch: lets a cache of keys made of code addresses
// (the frame walk's, agent/sites/frame_walk.h) keep the keys an unload did not touch instead of
// dropping all of them at every unload.
//
//   [low, high) in granules of 64 bytes (HotSpot's code cache segment):  uint32 epoch per granule
//
// record(start, size, epoch) sets every granule the range touches to `epoch` (a granule shared
// with a neighbour counts as freed: the neighbour's keys are made again, never kept wrongly);
// unchanged_since(pc, e) is true when no range recorded with an epoch after e touches pc's granule,
// i.e. whatever code held pc at epoch e holds it still. The map is reserved, not committed
// (MAP_NORESERVE): a 240 MiB code cache reserves 15 MiB, of which only the pages over freed code
// are ever touched.
//
// Threads: record() by one thread at a time (the caller's lock), before it publishes the epoch
// (release); unchanged_since() by any thread that read that epoch (acquire).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "base/reserved_memory.h"

namespace fasthprof {

class UnloadEpochs {
 public:
  static constexpr uintptr_t kGranule = 64;

  UnloadEpochs() = default;
  ~UnloadEpochs() {
    release_memory(epochs_, count_ * sizeof(uint32_t));
  }
  UnloadEpochs(const UnloadEpochs&) = delete;
  UnloadEpochs& operator=(const UnloadEpochs&) = delete;

  // Covers [low, high). False when the map cannot be reserved (then nothing is ever unchanged).
  bool start(uintptr_t low, uintptr_t high) {
    if (epochs_ != nullptr || high <= low) return false;
    const size_t count = (high - low + kGranule - 1) / kGranule;
    void* memory = reserve_memory(count * sizeof(uint32_t));
    if (memory == nullptr) return false;
    epochs_ = static_cast<std::atomic<uint32_t>*>(memory);
    count_ = count;
    low_ = low;
    high_ = high;
    return true;
  }

  // The code at [start, start + size) was freed at `epoch` (later than any recorded before).
  void record(uintptr_t start, uint64_t size, uint32_t epoch) {
    if (epochs_ == nullptr || size == 0 || start >= high_ || start + size <= low_) return;
    const uintptr_t first = start < low_ ? 0 : (start - low_) / kGranule;
    const uintptr_t end = start + size > high_ ? high_ : start + size;
    const uintptr_t last = (end - 1 - low_) / kGranule;
    for (uintptr_t granule = first; granule <= last; ++granule) epochs_[granule].store(epoch, std::memory_order_relaxed);
  }

  // Whether the code at pc is what it was at epoch `since`: not freed after it.
  bool unchanged_since(uintptr_t pc, uint32_t since) const {
    if (epochs_ == nullptr || pc < low_ || pc >= high_) return false;
    return epochs_[(pc - low_) / kGranule].load(std::memory_order_relaxed) <= since;
  }

 private:
  std::atomic<uint32_t>* epochs_ = nullptr;
  size_t count_ = 0;
  uintptr_t low_ = 0, high_ = 0;
};

}  // namespace fasthprof
