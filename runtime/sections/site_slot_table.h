// The allocation callback's side of the site table: a flat lock-free table that gives every distinct
// (class, frames, thread with thread=y) a dense slot number, so that the callback can put the slot
// into the object's tag (allocation_event.h) before the writer thread has interned anything.
//
//   buckets_ (open addressing, linear probing, fixed power-of-two size >= 2 x max slots)
//     [ key | slot ] [ 0 | 0 ] [ key | slot ] ...      key: XXH3-64 of the site, never 0
//               |                      |
//   entries_ [slot]                    v                dense, from 1; mmap'd, touched in order
//     [ class key | class handle | thread key | frames offset, count | trace serial | ready ]
//                                                |
//   frames_ (one mmap'd region, bump allocated)  v
//     [ method | location ] x count ...
//
// Claiming, after async-profiler's call-trace storage: a thread that finds an empty bucket CASes its
// key in, takes the next dense slot, fills the entry and its frames, then publishes the slot in the
// bucket (release). A thread that finds the key already there waits (spinning) until the slot is
// published, so whoever holds a slot number sees a complete entry. Nothing moves or is freed while
// the table lives; there is no growth: once max_slots sites (or the frame region) are used up, new
// sites get slot 0 ("not tracked") and are counted as dropped. Two different sites whose 64-bit keys
// collide share a slot (probability about n^2 / 2^65 for n sites).
//
// Threads: find_or_claim() from any number of threads; describe(), set_trace_serial() and
// trace_serial() from any thread for a slot that find_or_claim() returned.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>

namespace fasthprof {

// One frame as JVMTI reports it (same layout as jvmtiFrameInfo: a jmethodID and a jlocation).
struct SlotFrame {
  uint64_t method = 0;
  int64_t location = 0;
};
static_assert(sizeof(SlotFrame) == 16);

struct SiteSlotTableOptions {
  uint32_t max_slots = uint32_t{1} << 18;  // at most kMaxTagSlot (allocation_event.h)
  uint64_t max_frames = uint64_t{1} << 22;  // frames kept over all slots (16 bytes each, reserved)
};

struct SlotClaim {
  uint32_t slot = 0;    // 0: not tracked (table full)
  bool is_new = false;  // this call created the slot
};

// What the callback recorded for a slot.
struct SlotDescription {
  uint64_t class_key = 0;     // the class's tag when the slot was claimed
  uint64_t class_handle = 0;  // opaque to the table: the agent's handle back to the class
  uint64_t thread_key = 0;    // the thread object's tag with thread=y, else 0
  std::span<const SlotFrame> frames;
};

class SiteSlotTable {
 public:
  // Reserves the address space for the buckets, entries and frames (pages are touched as slots are
  // claimed). On failure valid() is false and every claim returns slot 0.
  explicit SiteSlotTable(const SiteSlotTableOptions& options = {});
  ~SiteSlotTable();
  SiteSlotTable(const SiteSlotTable&) = delete;
  SiteSlotTable& operator=(const SiteSlotTable&) = delete;

  bool valid() const { return buckets_ != nullptr; }

  // The table key of a site: XXH3-64 over the frames, seeded with the class and thread keys; never
  // 0. Pure; any thread.
  static uint64_t key_of(uint64_t class_key, uint64_t thread_key, std::span<const SlotFrame> frames);

  // The slot of key, claiming a new one (with the given description) when the key is new. For a new
  // slot, make_handle() is called once, before the slot is published, and its result is stored as
  // the class handle. Lock-free except that a caller that finds a slot being claimed by another
  // thread waits for it. Never allocates (the pages of the reserved regions are touched).
  template <typename MakeHandle>
  SlotClaim find_or_claim(uint64_t key, uint64_t class_key, uint64_t thread_key,
                          std::span<const SlotFrame> frames, MakeHandle&& make_handle) {
    uint64_t bucket = 0;
    SlotClaim found = find_or_reserve(key, &bucket);
    if (found.slot != 0 || bucket == kNoBucket) return found;
    return fill(bucket, class_key, thread_key, frames, make_handle());
  }

  // The description of a slot that find_or_claim() returned; false for 0 or an unknown slot.
  // The frames stay valid for the table's lifetime. Never allocates.
  bool describe(uint32_t slot, SlotDescription* out) const;

  // The trace serial the writer interned for a slot (0 until it did). Lock-free; any thread, also
  // from heap-walk callbacks.
  void set_trace_serial(uint32_t slot, uint32_t serial);
  uint32_t trace_serial(uint32_t slot) const;

  uint32_t claimed() const;  // highest slot handed out so far
  uint32_t max_slots() const { return max_slots_; }
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }

 private:
  static constexpr uint64_t kNoBucket = ~uint64_t{0};
  static constexpr uint32_t kClaiming = 0;                // bucket key set, slot not yet published
  static constexpr uint32_t kDroppedSlot = ~uint32_t{0};  // published: the site is not tracked

  struct Bucket {
    std::atomic<uint64_t> key;
    std::atomic<uint32_t> slot;
    uint32_t unused;
  };
  struct Entry {
    uint64_t class_key;
    uint64_t class_handle;
    uint64_t thread_key;
    uint64_t frames_offset;
    uint32_t num_frames;
    std::atomic<uint32_t> trace_serial;
    std::atomic<uint32_t> ready;
    uint32_t unused;
  };

  // The published slot of key (slot != 0), or the bucket this caller now owns (slot 0, *bucket set),
  // or slot 0 with *bucket = kNoBucket when the key cannot be tracked.
  SlotClaim find_or_reserve(uint64_t key, uint64_t* bucket);
  SlotClaim fill(uint64_t bucket, uint64_t class_key, uint64_t thread_key,
                 std::span<const SlotFrame> frames, uint64_t class_handle);

  uint32_t max_slots_ = 0;
  uint64_t bucket_mask_ = 0;
  uint64_t max_frames_ = 0;
  Bucket* buckets_ = nullptr;
  Entry* entries_ = nullptr;  // index = slot
  SlotFrame* frames_ = nullptr;
  size_t buckets_bytes_ = 0, entries_bytes_ = 0, frames_bytes_ = 0;
  std::atomic<uint32_t> next_slot_{1};
  std::atomic<uint64_t> frames_used_{0};
  std::atomic<uint64_t> dropped_{0};
};

}  // namespace fasthprof
