#include "name_table.h"

#include <cstdlib>
#include <cstring>

#include <xxhash.h>

namespace fasthprof {

namespace {

constexpr size_t kInitialSlots = 1024;

uint64_t hash_text(std::string_view text) { return XXH3_64bits(text.data(), text.size()); }

}  // namespace

NameTable::NameTable() : slots_(kInitialSlots, Slot{0, 0}) {}

NameTable::~NameTable() = default;

// Index of the slot holding text, or of the empty slot where it belongs.
size_t NameTable::probe(std::string_view text, uint64_t hash) const {
  size_t mask = slots_.size() - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    const Slot& slot = slots_[i];
    if (slot.entry == 0) return i;
    if (slot.hash == hash && entries_[slot.entry - 1] == text) return i;
  }
}

NameRef NameTable::intern(std::string_view text) {
  uint64_t hash = hash_text(text);
  size_t index = probe(text, hash);
  if (slots_[index].entry != 0) {
    return NameRef{make_id(IdSpace::kName, first_index_ + slots_[index].entry - 1), false};
  }
  // Keep the load factor at or below one half.
  if ((entries_.size() + 1) * 2 > slots_.size()) {
    grow();
    index = probe(text, hash);
  }
  char* copy = static_cast<char*>(arena_.allocate(text.size() + 1, 1));
  if (copy == nullptr) std::abort();  // out of memory: a name cannot degrade, and the original also died here
  if (!text.empty()) std::memcpy(copy, text.data(), text.size());
  copy[text.size()] = '\0';
  entries_.emplace_back(copy, text.size());
  slots_[index] = Slot{hash, static_cast<uint32_t>(entries_.size())};
  return NameRef{make_id(IdSpace::kName, first_index_ + entries_.size() - 1), true};
}

uint64_t NameTable::find(std::string_view text) const {
  size_t index = probe(text, hash_text(text));
  uint32_t entry = slots_[index].entry;
  return entry == 0 ? 0 : make_id(IdSpace::kName, first_index_ + entry - 1);
}

std::string_view NameTable::text(uint64_t id, bool* ok) const {
  uint64_t index = id_index(id);
  bool valid = id_space(id) == IdSpace::kName && index >= first_index_ &&
               index - first_index_ < entries_.size();
  if (ok != nullptr) *ok = valid;
  return valid ? entries_[index - first_index_] : std::string_view();
}

void NameTable::grow() {
  std::vector<Slot, memory::Allocator<Slot>> old;
  old.swap(slots_);
  slots_.assign(old.size() * 2, Slot{0, 0});
  size_t mask = slots_.size() - 1;
  for (const Slot& slot : old) {
    if (slot.entry == 0) continue;
    size_t i = slot.hash & mask;
    while (slots_[i].entry != 0) i = (i + 1) & mask;
    slots_[i] = slot;
  }
}

void NameTable::reset() {
  first_index_ += entries_.size();
  entries_.clear();
  entries_.shrink_to_fit();
  slots_.assign(kInitialSlots, Slot{0, 0});
  arena_.release();
}

}  // namespace fasthprof
