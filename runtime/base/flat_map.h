// The single-threaded hash tables of the writer side (names, frames, methods, classes, sites): one
// open-addressing map instead of a probe loop per table.
//
//   slots_ (linear probing, power-of-two size, at least 16, load <= 1/2)
//     [ hash | value | key ] [ 0 | - | - ] [ hash | value | key ] ...
//
// A slot keeps the low 32 bits of its key's hash (never 0: 0 marks an empty slot; the home slot is
// taken from the same bits), so that a probe compares keys only when the hashes agree and growing
// never hashes a key again, at 4 bytes a slot: a string view's slot is 24 bytes, a number's 16. erase() shifts the slots after
// the erased one back (no tombstones), so a table that loses and gains keys all day does not fill up.
// Keys and values are trivially copyable (numbers, string views into storage the owner keeps, small
// structs of these): slots are moved with memcpy and never destroyed. The slot array comes from
// memory::allocate (jemalloc where the agent has it, counted in the agent's memory figures); out of
// memory traps, as memory::Allocator does.
//
// Threads: none inside; one thread at a time. Pointers to values stay valid until the next insert.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>
#include <utility>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "base/memory.h"

namespace fasthprof {

// The default hash: XXH3-64 over a number's bytes or a string's characters.
template <typename Key>
struct FlatHash {
  static_assert(std::is_integral_v<Key>, "give FlatMap a hash for this key type");
  uint64_t operator()(Key key) const { return XXH3_64bits(&key, sizeof(key)); }
};

template <>
struct FlatHash<std::string_view> {
  uint64_t operator()(std::string_view text) const { return XXH3_64bits(text.data(), text.size()); }
};

template <typename Key, typename Value, typename Hash = FlatHash<Key>>
class FlatMap {
  static_assert(std::is_trivially_copyable_v<Key> && std::is_trivially_copyable_v<Value>,
                "FlatMap moves slots with memcpy");

 public:
  // capacity: slots to start with, rounded up to a power of two (at least 16). Allocates them.
  explicit FlatMap(size_t capacity = kMinSlots) { allocate(round_up(capacity)); }
  ~FlatMap() { memory::deallocate(slots_, slot_count_ * sizeof(Slot)); }
  FlatMap(const FlatMap&) = delete;
  FlatMap& operator=(const FlatMap&) = delete;
  // A moved-from map is empty and still usable (it gets fresh minimum-size slots).
  FlatMap(FlatMap&& other) : slots_(other.slots_), slot_count_(other.slot_count_), size_(other.size_) {
    other.allocate(kMinSlots);
    other.size_ = 0;
  }
  FlatMap& operator=(FlatMap&& other) {
    if (this != &other) {
      std::swap(slots_, other.slots_);
      std::swap(slot_count_, other.slot_count_);
      std::swap(size_, other.size_);
      other.clear();
    }
    return *this;
  }

  // The hash a key is stored under (never 0), for the overloads below that take it.
  uint32_t hash_of(const Key& key) const {
    auto hash = static_cast<uint32_t>(Hash{}(key));
    return hash == 0 ? 1 : hash;
  }

  // The value of key, or nullptr. Never allocates.
  Value* find(const Key& key) { return find(key, hash_of(key)); }
  const Value* find(const Key& key) const { return const_cast<FlatMap*>(this)->find(key, hash_of(key)); }
  Value* find(const Key& key, uint32_t hash) {
    Slot& slot = slots_[probe(key, hash)];
    return slot.hash == 0 ? nullptr : &slot.value;
  }

  // Starts loading the home slot of key into the cache, for a lookup soon after: callers that know
  // the next keys of a run of random lookups overlap their cache misses. Never allocates.
  void prefetch(const Key& key) const { __builtin_prefetch(&slots_[hash_of(key) & (slot_count_ - 1)]); }

  // Inserts key -> value unless key is present. Returns the stored value and whether this call
  // inserted it (an existing value is left as it is). Allocates when the table grows.
  std::pair<Value*, bool> try_emplace(const Key& key, const Value& value) {
    return try_emplace(key, value, hash_of(key));
  }
  std::pair<Value*, bool> try_emplace(const Key& key, const Value& value, uint32_t hash) {
    return find_or_insert(key, hash, [&] { return std::pair<Key, Value>(key, value); });
  }

  // The value of key (hash = hash_of(key)); when key is absent, make() is called once and the
  // (key, value) pair it returns is inserted, where the key it returns must equal key (the same
  // content, possibly in storage the caller has just made to keep it). One probe, so that a table
  // whose misses create the entry (names, frames) does not search twice. Allocates when it grows.
  template <typename Make>
  std::pair<Value*, bool> find_or_insert(const Key& key, uint32_t hash, Make&& make) {
    size_t index = probe(key, hash);
    if (slots_[index].hash != 0) return {&slots_[index].value, false};
    if ((size_ + 1) * 2 > slot_count_) {
      grow();
      index = probe(key, hash);
    }
    std::pair<Key, Value> made = make();
    Slot& slot = slots_[index];
    slot.hash = hash;
    slot.key = made.first;
    slot.value = made.second;
    ++size_;
    return {&slot.value, true};
  }

  // Removes key; false when it was not there. Never allocates.
  bool erase(const Key& key) {
    size_t mask = slot_count_ - 1;
    size_t hole = probe(key, hash_of(key));
    if (slots_[hole].hash == 0) return false;
    // Backward shift: move each later slot of the run into the hole unless its home lies
    // cyclically after the hole (then moving it would put it before where a probe starts).
    for (size_t next = (hole + 1) & mask; slots_[next].hash != 0; next = (next + 1) & mask) {
      size_t home = slots_[next].hash & mask;
      if (((next - home) & mask) >= ((next - hole) & mask)) {
        std::memcpy(static_cast<void*>(&slots_[hole]), &slots_[next], sizeof(Slot));
        hole = next;
      }
    }
    slots_[hole].hash = 0;
    --size_;
    return true;
  }

  // Forgets every key and goes back to capacity slots (rounded as in the constructor).
  void clear(size_t capacity = kMinSlots) {
    memory::deallocate(slots_, slot_count_ * sizeof(Slot));
    allocate(round_up(capacity));
    size_ = 0;
  }

  // Calls fn(const Key&, Value&) for every entry, in slot order.
  template <typename Fn>
  void for_each(Fn&& fn) {
    for (size_t i = 0; i < slot_count_; ++i) {
      if (slots_[i].hash != 0) fn(static_cast<const Key&>(slots_[i].key), slots_[i].value);
    }
  }

  size_t size() const { return size_; }
  size_t capacity() const { return slot_count_; }
  size_t memory_bytes() const { return slot_count_ * sizeof(Slot); }

 private:
  static constexpr size_t kMinSlots = 16;

  struct Slot {
    uint32_t hash;  // 0: empty
    Value value;
    Key key;
  };

  static size_t round_up(size_t count) {
    size_t result = kMinSlots;
    while (result < count) result *= 2;
    return result;
  }

  void allocate(size_t count) {
    slots_ = static_cast<Slot*>(memory::allocate(count * sizeof(Slot)));
    if (slots_ == nullptr) __builtin_trap();  // no exceptions: out of memory ends here
    std::memset(static_cast<void*>(slots_), 0, count * sizeof(Slot));
    slot_count_ = count;
  }

  // Index of the slot holding key, or of the empty slot where it belongs. The load factor keeps an
  // empty slot in every table, so the loop ends.
  size_t probe(const Key& key, uint32_t hash) const {
    size_t mask = slot_count_ - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
      const Slot& slot = slots_[i];
      if (slot.hash == 0 || (slot.hash == hash && slot.key == key)) return i;
    }
  }

  void grow() {
    Slot* old = slots_;
    size_t old_count = slot_count_;
    allocate(old_count * 2);
    size_t mask = slot_count_ - 1;
    for (size_t i = 0; i < old_count; ++i) {
      if (old[i].hash == 0) continue;
      size_t j = old[i].hash & mask;
      while (slots_[j].hash != 0) j = (j + 1) & mask;
      std::memcpy(static_cast<void*>(&slots_[j]), &old[i], sizeof(Slot));
    }
    memory::deallocate(old, old_count * sizeof(Slot));
  }

  Slot* slots_ = nullptr;
  size_t slot_count_ = 0;
  size_t size_ = 0;
};

}  // namespace fasthprof
