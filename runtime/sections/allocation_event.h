// What allocation tracking (heap=sites|all, sample=) passes from the JVMTI callback to the writer
// thread, and the JVMTI tag it puts on every tracked object.
//
// Tag layout (runtime/base/ids.h gives allocation tracking the spaces 0x10..0x1F, i.e. bits 63..60 = 0001):
//
//   63  60 59                 40 39                                        0
//   +-----+---------------------+-------------------------------------------+
//   | 0x1 |   site slot (20)    |     object sequence number (40 bits)      |
//   +-----+---------------------+-------------------------------------------+
//
//   - site slot: the dense slot the callback claimed in the SiteSlotTable for (class, frames,
//     thread with thread=y). The walk that counts live objects at a report maps a tag to its site
//     through this field alone: the agent keeps nothing per object.
//   - sequence: unique per tracked object, handed out per thread in blocks from one global counter,
//     so that heap=all dumps can use the tag as the object's ID. It wraps after 2^40 (about 10^12)
//     tracked allocations; after that an ID may repeat in a heap dump (sites stay exact).
//
// Memory per tracked object: none in the agent; the JVM's tag map keeps one entry per tagged object
// (about 32 bytes on HotSpot 17/25).
#pragma once

#include <atomic>
#include <cstdint>

#include "base/ids.h"

namespace fasthprof {

// One allocation, as queued by the callback. 16 bytes, trivially copyable.
struct AllocationEvent {
  uint32_t slot = 0;  // SiteSlotTable slot (from 1)
  uint32_t reserved = 0;
  uint64_t size = 0;  // object size in bytes, as the JVM reports it
};
static_assert(sizeof(AllocationEvent) == 16);

inline constexpr int kTagSlotBits = 20;
inline constexpr int kTagSequenceBits = 40;
inline constexpr uint32_t kMaxTagSlot = (uint32_t{1} << kTagSlotBits) - 1;
inline constexpr uint64_t kTagSequenceMask = (uint64_t{1} << kTagSequenceBits) - 1;
inline constexpr uint64_t kAllocationTagBase = uint64_t{static_cast<uint8_t>(IdSpace::kFirstAllocationTag)}
                                               << kIdSpaceShift;

// The tag of a tracked object: slot in 1..kMaxTagSlot, sequence taken modulo 2^40 (0 is skipped by
// the caller so that a tag is never the bare base).
constexpr uint64_t make_allocation_tag(uint32_t slot, uint64_t sequence) {
  return kAllocationTagBase | (uint64_t{slot & kMaxTagSlot} << kTagSequenceBits) | (sequence & kTagSequenceMask);
}

// True for every tag in the allocation tag space.
constexpr bool is_allocation_space_tag(uint64_t tag) { return (tag >> 60) == 0x1; }

// The site slot of a tracked object's tag, or 0 when tag is not one (other spaces).
constexpr uint32_t allocation_tag_slot(uint64_t tag) {
  if (!is_allocation_space_tag(tag)) return 0;
  return static_cast<uint32_t>((tag >> kTagSequenceBits) & kMaxTagSlot);
}

static_assert(make_allocation_tag(1, 1) == 0x1000010000000001);
static_assert(allocation_tag_slot(make_allocation_tag(kMaxTagSlot, kTagSequenceMask)) == kMaxTagSlot);
static_assert(allocation_tag_slot(0x2000000000000005) == 0);
static_assert(static_cast<IdSpace>(make_allocation_tag(kMaxTagSlot, 1) >> kIdSpaceShift) <= IdSpace::kLastAllocationTag);

// Hands out object sequence numbers to one thread in blocks, touching the shared counter once per
// block. Not thread-safe: one instance per thread; the shared counter is.
class SequenceBlock {
 public:
  static constexpr uint64_t kBlockSize = 4096;

  // Never allocates; lock-free (one fetch_add per kBlockSize calls).
  template <typename AtomicCounter>
  uint64_t next(AtomicCounter& shared) {
    if (next_ == end_) {
      next_ = shared.fetch_add(kBlockSize, std::memory_order_relaxed);
      end_ = next_ + kBlockSize;
    }
    uint64_t value = next_++;
    if ((value & kTagSequenceMask) == 0) value = next(shared);  // never a zero sequence
    return value;
  }

 private:
  uint64_t next_ = 0;
  uint64_t end_ = 0;
};

}  // namespace fasthprof
