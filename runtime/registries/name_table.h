// Interns the UTF-8 names that UTF8 records carry (class, method, signature, source-file, thread
// and group names): one ID per distinct string per output file, so each UTF8 record is written once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "base/bump_arena.h"
#include "base/flat_map.h"
#include "base/ids.h"
#include "base/memory.h"

namespace fasthprof {

// The result of an interning: the name's ID (space IdSpace::kName, never 0) and whether this call
// created it, i.e. whether the caller must write its UTF8 record before using the ID.
struct NameRef {
  uint64_t id = 0;
  bool is_new = false;
};

// Not thread-safe: the writer thread alone owns a NameTable.
class NameTable {
 public:
  NameTable();
  ~NameTable();
  NameTable(const NameTable&) = delete;
  NameTable& operator=(const NameTable&) = delete;

  // Returns the ID of text, creating it (is_new = true) the first time this content is seen since
  // construction or the last reset(). The empty string is a name like any other. Allocates when the
  // name is new (a copy of the bytes, and table growth); aborts when memory is exhausted.
  NameRef intern(std::string_view text);

  // The ID of text if it was interned, else 0. Never allocates.
  uint64_t find(std::string_view text) const;

  // The text of id, or an empty view with ok = false when id is not a live name of this table.
  // The view stays valid until reset() or destruction.
  std::string_view text(uint64_t id, bool* ok = nullptr) const;

  // Forgets every name, for a new output file: the next intern of any text reports is_new again.
  // IDs keep increasing across resets, so an ID kept from an earlier file never names new content.
  void reset();

  size_t size() const { return entries_.size(); }

 private:
  BumpArena arena_;
  // entry i has ID make_id(kName, first_index_ + i)
  std::vector<std::string_view, memory::Allocator<std::string_view>> entries_;
  // text (a view of the arena's copy) -> index into entries_
  FlatMap<std::string_view, uint32_t> index_;
  uint64_t first_index_ = 1;
};

}  // namespace fasthprof
