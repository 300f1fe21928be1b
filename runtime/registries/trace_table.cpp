#include "registries/trace_table.h"

#include <cstdlib>
#include <cstring>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "base/memory.h"

namespace fasthprof {

namespace {

constexpr size_t kMinSlots = 16;
constexpr size_t kInitialSerialCapacity = 1024;

size_t round_up_to_power_of_two(size_t n) {
  size_t result = kMinSlots;
  while (result < n) result *= 2;
  return result;
}

}  // namespace

uint64_t trace_hash(uint32_t thread_serial, const uint64_t* frames, size_t num_frames) {
  return XXH3_64bits_withSeed(frames, num_frames * sizeof(uint64_t), thread_serial);
}

TraceTable::TraceTable(const TraceTableOptions& options)
    : memory_limit_(options.memory_limit), hash_fn_(options.hash), arena_(options.arena_chunk_size) {
  slot_count_ = round_up_to_power_of_two(options.initial_slots);
  slots_ = allocate_slots(slot_count_);
  serial_capacity_ = kInitialSerialCapacity;
  by_serial_ = static_cast<Body**>(memory::allocate(serial_capacity_ * sizeof(Body*)));
  if (slots_ == nullptr || by_serial_ == nullptr) std::abort();  // out of memory at start-up
  uint64_t hash = hash_of(0, {});
  insert(hash & (slot_count_ - 1), hash, 0, {}, /*enforce_cap=*/false);
}

TraceTable::~TraceTable() {
  memory::deallocate(slots_, slot_count_ * sizeof(Slot));
  memory::deallocate(by_serial_, serial_capacity_ * sizeof(Body*));
}

TraceTable::Slot* TraceTable::allocate_slots(size_t count) {
  auto* slots = static_cast<Slot*>(memory::allocate(count * sizeof(Slot)));
  if (slots != nullptr) std::memset(slots, 0, count * sizeof(Slot));
  return slots;
}

uint64_t TraceTable::hash_of(uint32_t thread_serial, std::span<const uint64_t> frames) const {
  if (hash_fn_ != nullptr) return hash_fn_(thread_serial, frames.data(), frames.size());
  return trace_hash(thread_serial, frames.data(), frames.size());
}

TraceRef TraceTable::intern(uint32_t thread_serial, std::span<const uint64_t> frames) {
  uint64_t hash = hash_of(thread_serial, frames);
  size_t mask = slot_count_ - 1;
  size_t bytes = frames.size() * sizeof(uint64_t);
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    const Slot& slot = slots_[i];
    if (slot.body == nullptr) return insert(i, hash, thread_serial, frames, /*enforce_cap=*/true);
    const Body* body = slot.body;
    if (slot.hash == hash && body->thread_serial == thread_serial && body->num_frames == frames.size() &&
        (bytes == 0 || std::memcmp(body->frames(), frames.data(), bytes) == 0)) {
      return TraceRef{body->serial, false};
    }
  }
}

TraceRef TraceTable::insert(size_t slot, uint64_t hash, uint32_t thread_serial,
                            std::span<const uint64_t> frames, bool enforce_cap) {
  if (full_) return overflow();
  size_t body_bytes = sizeof(Body) + frames.size() * sizeof(uint64_t);
  bool needs_slots = (used_slots_ + 1) * 2 > slot_count_;
  // One serial index entry stays spare, so the overflow trace never needs memory.
  bool needs_index = serial_count_ + 2 > serial_capacity_;
  if (enforce_cap) {
    size_t used = memory_used();
    size_t extra = arena_.chunk_cost(body_bytes, alignof(Body)) +
                   (needs_index ? serial_capacity_ * 2 * sizeof(Body*) : 0);
    if (used + extra > memory_limit_) return overflow();
    // The old slot array lives until the new one is filled, so growth costs the new array in full.
    // Without room for it the table may fill up to 7/8 before giving up.
    if (needs_slots && used + extra + slot_count_ * 2 * sizeof(Slot) > memory_limit_) {
      if ((used_slots_ + 1) * 8 > slot_count_ * 7) return overflow();
      needs_slots = false;
    }
  }
  if (needs_index && !grow_serial_index()) return overflow();
  if (needs_slots) {
    if (!grow_slots()) return overflow();
    size_t mask = slot_count_ - 1;
    slot = hash & mask;
    while (slots_[slot].body != nullptr) slot = (slot + 1) & mask;
  }
  auto* body = static_cast<Body*>(arena_.allocate(body_bytes, alignof(Body)));
  if (body == nullptr) return overflow();
  body->serial = kFirstTraceSerial + static_cast<uint32_t>(serial_count_);
  body->thread_serial = thread_serial;
  body->num_frames = static_cast<uint32_t>(frames.size());
  body->written = 0;
  if (!frames.empty()) std::memcpy(body->frames(), frames.data(), frames.size() * sizeof(uint64_t));
  by_serial_[serial_count_++] = body;
  slots_[slot] = Slot{hash, body};
  ++used_slots_;
  return TraceRef{body->serial, true};
}

TraceRef TraceTable::overflow() {
  full_ = true;
  ++dropped_;
  if (overflow_serial_ == 0) {
    overflow_body_.serial = kFirstTraceSerial + static_cast<uint32_t>(serial_count_);
    overflow_serial_ = overflow_body_.serial;
    by_serial_[serial_count_++] = &overflow_body_;
  }
  return TraceRef{overflow_serial_, false};
}

bool TraceTable::grow_slots() {
  size_t count = slot_count_ * 2;
  Slot* grown = allocate_slots(count);
  if (grown == nullptr) return false;
  size_t mask = count - 1;
  for (size_t i = 0; i < slot_count_; ++i) {
    const Slot& slot = slots_[i];
    if (slot.body == nullptr) continue;
    size_t j = slot.hash & mask;
    while (grown[j].body != nullptr) j = (j + 1) & mask;
    grown[j] = slot;
  }
  memory::deallocate(slots_, slot_count_ * sizeof(Slot));
  slots_ = grown;
  slot_count_ = count;
  return true;
}

bool TraceTable::grow_serial_index() {
  size_t capacity = serial_capacity_ * 2;
  auto* grown = static_cast<Body**>(memory::allocate(capacity * sizeof(Body*)));
  if (grown == nullptr) return false;
  std::memcpy(grown, by_serial_, serial_count_ * sizeof(Body*));
  memory::deallocate(by_serial_, serial_capacity_ * sizeof(Body*));
  by_serial_ = grown;
  serial_capacity_ = capacity;
  return true;
}

TraceView TraceTable::view(const Body* body) const {
  return TraceView{body->serial, body->thread_serial, {body->frames(), body->num_frames}, body->written != 0,
                   body == &overflow_body_};
}

std::optional<TraceView> TraceTable::find(uint32_t serial) const {
  if (serial < kFirstTraceSerial || serial - kFirstTraceSerial >= serial_count_) return std::nullopt;
  return view(by_serial_[serial - kFirstTraceSerial]);
}

bool TraceTable::claim(uint32_t serial) {
  if (serial < kFirstTraceSerial || serial - kFirstTraceSerial >= serial_count_) return false;
  Body* body = by_serial_[serial - kFirstTraceSerial];
  if (body->written) return false;
  body->written = 1;
  return true;
}

void TraceTable::reset_written() {
  for (size_t i = 0; i < serial_count_; ++i) by_serial_[i]->written = 0;
  unwritten_from_ = 0;
}

size_t TraceTable::memory_used() const {
  return arena_.bytes_reserved() + slot_count_ * sizeof(Slot) + serial_capacity_ * sizeof(Body*);
}

}  // namespace fasthprof
