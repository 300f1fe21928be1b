#include "registries/name_table.h"

#include <cstdlib>
#include <cstring>
#include <utility>

namespace fasthprof {

namespace {

constexpr size_t kInitialSlots = 1024;

}  // namespace

NameTable::NameTable() : index_(kInitialSlots) {}

NameTable::~NameTable() = default;

NameRef NameTable::intern(std::string_view text) {
  auto [entry, is_new] = index_.find_or_insert(text, index_.hash_of(text), [&] {
    char* copy = static_cast<char*>(arena_.allocate(text.size() + 1, 1));
    if (copy == nullptr) std::abort();  // out of memory: a name cannot degrade, and the original also died here
    if (!text.empty()) std::memcpy(copy, text.data(), text.size());
    copy[text.size()] = '\0';
    entries_.emplace_back(copy, text.size());
    return std::pair<std::string_view, uint32_t>(entries_.back(), static_cast<uint32_t>(entries_.size() - 1));
  });
  return NameRef{make_id(IdSpace::kName, first_index_ + *entry), is_new};
}

uint64_t NameTable::find(std::string_view text) const {
  const uint32_t* entry = index_.find(text);
  return entry == nullptr ? 0 : make_id(IdSpace::kName, first_index_ + *entry);
}

std::string_view NameTable::text(uint64_t id, bool* ok) const {
  uint64_t index = id_index(id);
  bool valid = id_space(id) == IdSpace::kName && index >= first_index_ &&
               index - first_index_ < entries_.size();
  if (ok != nullptr) *ok = valid;
  return valid ? entries_[index - first_index_] : std::string_view();
}

void NameTable::reset() {
  first_index_ += entries_.size();
  entries_.clear();
  entries_.shrink_to_fit();
  index_.clear(kInitialSlots);
  arena_.release();
}

}  // namespace fasthprof
