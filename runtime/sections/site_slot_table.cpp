#include "sections/site_slot_table.h"

#include <sched.h>

#include <algorithm>
#include <cstring>

#include "base/reserved_memory.h"
#include "sections/allocation_event.h"
#include "xxhash.h"

namespace fasthprof {
namespace {

uint64_t round_up_power_of_two(uint64_t value) {
  uint64_t result = 16;
  while (result < value) result <<= 1;
  return result;
}

}  // namespace

SiteSlotTable::SiteSlotTable(const SiteSlotTableOptions& options) {
  max_slots_ = std::clamp<uint32_t>(options.max_slots, 1, kMaxTagSlot);
  max_frames_ = std::max<uint64_t>(options.max_frames, 1);
  uint64_t bucket_count = round_up_power_of_two(uint64_t{max_slots_} * 2);
  bucket_mask_ = bucket_count - 1;
  buckets_bytes_ = bucket_count * sizeof(Bucket);
  entries_bytes_ = (size_t{max_slots_} + 1) * sizeof(Entry);
  frames_bytes_ = max_frames_ * sizeof(SlotFrame);
  auto* buckets = static_cast<Bucket*>(reserve_memory(buckets_bytes_));
  entries_ = static_cast<Entry*>(reserve_memory(entries_bytes_));
  frames_ = static_cast<SlotFrame*>(reserve_memory(frames_bytes_));
  if (buckets == nullptr || entries_ == nullptr || frames_ == nullptr) {
    release_memory(buckets, buckets_bytes_);
    release_memory(entries_, entries_bytes_);
    release_memory(frames_, frames_bytes_);
    entries_ = nullptr;
    frames_ = nullptr;
    return;
  }
  buckets_ = buckets;  // zero pages are valid empty atomics
}

SiteSlotTable::~SiteSlotTable() {
  release_memory(buckets_, buckets_bytes_);
  release_memory(entries_, entries_bytes_);
  release_memory(frames_, frames_bytes_);
}

uint64_t SiteSlotTable::key_of(uint64_t class_key, uint64_t thread_key, std::span<const SlotFrame> frames) {
  uint64_t seed = class_key * 0x9E3779B97F4A7C15ULL ^ (thread_key + 0x632BE59BD9B4E019ULL);
  uint64_t key = XXH3_64bits_withSeed(frames.data(), frames.size_bytes(), seed);
  return key == 0 ? 1 : key;
}

SlotClaim SiteSlotTable::find_or_reserve(uint64_t key, uint64_t* bucket_out) {
  *bucket_out = kNoBucket;
  if (buckets_ == nullptr) return {};
  uint64_t index = key & bucket_mask_;
  for (uint64_t probes = 0; probes <= bucket_mask_; ++probes, index = (index + 1) & bucket_mask_) {
    Bucket& bucket = buckets_[index];
    uint64_t current = bucket.key.load(std::memory_order_acquire);
    if (current == 0) {
      if (bucket.key.compare_exchange_strong(current, key, std::memory_order_acq_rel)) {
        *bucket_out = index;
        return {};
      }
      // Lost the race: current now holds the winner's key.
    }
    if (current != key) continue;
    uint32_t slot = bucket.slot.load(std::memory_order_acquire);
    for (int spins = 0; slot == kClaiming; ++spins) {
      if (spins > 64) sched_yield();
      slot = bucket.slot.load(std::memory_order_acquire);
    }
    return {slot == kDroppedSlot ? 0 : slot, false};
  }
  dropped_.fetch_add(1, std::memory_order_relaxed);
  return {};
}

SlotClaim SiteSlotTable::fill(uint64_t bucket_index, uint64_t class_key, uint64_t thread_key,
                              std::span<const SlotFrame> frames, uint64_t class_handle) {
  Bucket& bucket = buckets_[bucket_index];
  uint64_t offset = frames_used_.fetch_add(frames.size(), std::memory_order_relaxed);
  uint32_t slot = 0;
  if (offset + frames.size() <= max_frames_) {
    slot = next_slot_.fetch_add(1, std::memory_order_relaxed);
    if (slot > max_slots_) slot = 0;
  }
  if (slot == 0) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    bucket.slot.store(kDroppedSlot, std::memory_order_release);
    return {};
  }
  if (!frames.empty()) std::memcpy(frames_ + offset, frames.data(), frames.size_bytes());
  Entry& entry = entries_[slot];
  entry.class_key = class_key;
  entry.class_handle = class_handle;
  entry.thread_key = thread_key;
  entry.frames_offset = offset;
  entry.num_frames = static_cast<uint32_t>(frames.size());
  entry.ready.store(1, std::memory_order_release);
  bucket.slot.store(slot, std::memory_order_release);
  return {slot, true};
}

bool SiteSlotTable::describe(uint32_t slot, SlotDescription* out) const {
  if (entries_ == nullptr || slot == 0 || slot > max_slots_) return false;
  const Entry& entry = entries_[slot];
  if (entry.ready.load(std::memory_order_acquire) == 0) return false;
  out->class_key = entry.class_key;
  out->class_handle = entry.class_handle;
  out->thread_key = entry.thread_key;
  out->frames = std::span<const SlotFrame>(frames_ + entry.frames_offset, entry.num_frames);
  return true;
}

void SiteSlotTable::set_trace_serial(uint32_t slot, uint32_t serial) {
  if (entries_ == nullptr || slot == 0 || slot > max_slots_) return;
  entries_[slot].trace_serial.store(serial, std::memory_order_release);
}

uint32_t SiteSlotTable::trace_serial(uint32_t slot) const {
  if (entries_ == nullptr || slot == 0 || slot > max_slots_) return 0;
  return entries_[slot].trace_serial.load(std::memory_order_acquire);
}

uint32_t SiteSlotTable::claimed() const {
  return std::min(next_slot_.load(std::memory_order_acquire) - 1, max_slots_);
}

}  // namespace fasthprof
