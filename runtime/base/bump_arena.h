// A bump allocator for bodies that live until the whole table goes away (trace bodies, interned
// names): no per-object header, no free, one memory::allocate per chunk (jemalloc where the agent
// found it). Objects never move.
//
//   chunk: [next | capacity | used bytes ........ | free ............]
//                                                 ^ cursor_         ^ limit_
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/memory.h"

namespace fasthprof {

class BumpArena {
 public:
  explicit BumpArena(size_t chunk_size = 64 * 1024) : chunk_size_(chunk_size) {}
  ~BumpArena() { release(); }
  BumpArena(const BumpArena&) = delete;
  BumpArena& operator=(const BumpArena&) = delete;

  // Returns size bytes aligned to align (a power of two, at most 16). Allocates a new chunk when
  // the current one is full. Returns nullptr when the allocator fails. One thread at a time.
  void* allocate(size_t size, size_t align = 8) {
    uintptr_t start = (cursor_ + align - 1) & ~uintptr_t{align - 1};
    if (cursor_ == 0 || start + size > limit_) {
      if (!add_chunk(size + align)) return nullptr;
      start = (cursor_ + align - 1) & ~uintptr_t{align - 1};
    }
    cursor_ = start + size;
    return reinterpret_cast<void*>(start);
  }

  // Bytes that allocate(size, align) would take from the allocator now: 0 when it fits the current chunk.
  // Lets a caller with a memory cap refuse before allocating. Never allocates.
  size_t chunk_cost(size_t size, size_t align = 8) const {
    uintptr_t start = (cursor_ + align - 1) & ~uintptr_t{align - 1};
    if (cursor_ != 0 && start + size <= limit_) return 0;
    return chunk_bytes(size + align);
  }

  // Bytes obtained from the allocator so far (headers included).
  size_t bytes_reserved() const { return reserved_; }

  // Frees every chunk; everything allocated before becomes invalid.
  void release() {
    while (head_ != nullptr) {
      Chunk* next = head_->next;
      memory::deallocate(head_, head_->bytes);
      head_ = next;
    }
    cursor_ = limit_ = 0;
    reserved_ = 0;
  }

 private:
  struct alignas(16) Chunk {
    Chunk* next;
    size_t bytes;
  };

  size_t chunk_bytes(size_t need) const {
    size_t payload = need > chunk_size_ ? need : chunk_size_;
    return sizeof(Chunk) + payload;
  }

  bool add_chunk(size_t need) {
    size_t bytes = chunk_bytes(need);
    auto* chunk = static_cast<Chunk*>(memory::allocate(bytes));
    if (chunk == nullptr) return false;
    chunk->next = head_;
    chunk->bytes = bytes;
    head_ = chunk;
    cursor_ = reinterpret_cast<uintptr_t>(chunk + 1);
    limit_ = reinterpret_cast<uintptr_t>(chunk) + bytes;
    reserved_ += bytes;
    return true;
  }

  size_t chunk_size_;
  Chunk* head_ = nullptr;
  uintptr_t cursor_ = 0;
  uintptr_t limit_ = 0;
  size_t reserved_ = 0;
};

}  // namespace fasthprof
