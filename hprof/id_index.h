// IdIndex: the rank of an object ID among the IDs of a heap dump, for HeapGraph, which numbers its
// nodes by ID and resolves every reference of the dump to a node. HotSpot's IDs are addresses: a
// dump's objects lie in a few dense stretches of a span of some GiB, in steps of the object
// alignment. The index is a bitmap over that span, one bit per step, cut into blocks of one cache
// line: the count of the set bits before the block, the counts before each of its words, then 384
// bits. A lookup reads one line and counts the bits of one word (a binary search over 16 bytes per
// object read several lines, mostly out of cache), and building it needs no sort: the bits are set
// in the dump's order.
//
// The bitmap is mapped zeroed and only the stretches that hold objects get written, so its memory
// follows the heap's used bytes (about one bit per 8 bytes), not the span; a dump whose IDs are
// too spread for that (fuzzed files, other tools' IDs) is left to HeapGraph's sorted array.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "big_array.h"

namespace fasthprof {

class IdIndex {
 public:
  static constexpr uint32_t kAbsent = UINT32_MAX;

  IdIndex() = default;
  IdIndex(const IdIndex&) = delete;
  IdIndex& operator=(const IdIndex&) = delete;
  ~IdIndex() { release(); }

  // Makes an empty index for IDs in [low, high] that differ only in the bits of varying (the OR of
  // id - low over them), for `objects` IDs: false, and nothing allocated, when its address space
  // would pass 16 bytes per object (and 1 MiB), too much should the stretches spread.
  bool plan(uint64_t low, uint64_t high, uint64_t varying, uint64_t objects) {
    release();
    low_ = low;
    skip_ = varying == 0 ? 0 : static_cast<unsigned>(__builtin_ctzll(varying));
    const uint64_t most_blocks = (uint64_t{16} * objects + (uint64_t{1} << 20)) / sizeof(Block);
    // Compared before adding 1: a span of the whole 64 bits must not wrap to a small one.
    if (((high - low) >> skip_) / kBitsPerBlock >= most_blocks) return false;
    const uint64_t blocks = ((high - low) >> skip_) / kBitsPerBlock + 1;
    blocks_count_ = static_cast<size_t>(blocks);
    blocks_ = HugePageAllocator<Block>().allocate(blocks_count_);
    // Small arrays come from operator new, not from a fresh (zeroed) mapping.
    if (blocks_count_ * sizeof(Block) < HugePageAllocator<Block>::kThreshold) std::memset(blocks_, 0, blocks_count_ * sizeof(Block));
    written_.assign(blocks_count_ / kBlocksPerPage + 1, 0);
    return true;
  }

  // Sets id's bit; false when it was set already (a second object of the same ID).
  bool add(uint64_t id) {
    const uint64_t step = (id - low_) >> skip_;
    Block& block = blocks_[step / kBitsPerBlock];
    const unsigned bit = static_cast<unsigned>(step % kBitsPerBlock);
    uint64_t& word = block.words[bit / 64];
    const uint64_t mask = uint64_t{1} << (bit % 64);
    if (word & mask) return false;
    word |= mask;
    written_[step / kBitsPerBlock / kBlocksPerPage] = 1;
    return true;
  }

  // After the last add(): the counts before each block, skipping the pages no ID reached.
  // Returns the number of IDs.
  uint64_t finish() {
    uint64_t count = 0;
    for (size_t page = 0; page < written_.size(); ++page) {
      if (!written_[page]) continue;
      const size_t end = std::min(blocks_count_, (page + 1) * kBlocksPerPage);
      for (size_t b = page * kBlocksPerPage; b < end; ++b) {
        Block& block = blocks_[b];
        block.base = static_cast<uint32_t>(count);
        uint32_t before = 0;
        for (unsigned w = 0; w < kWords; ++w) {
          block.before[w] = static_cast<uint16_t>(before);
          before += bit_count(block.words[w]);
        }
        count += before;
      }
    }
    return count;
  }

  // The rank of id among the IDs added (0 for the smallest), kAbsent when it was not added. The
  // caller checks low <= id <= high.
  uint32_t rank(uint64_t id) const {
    const uint64_t offset = id - low_;
    if (offset & ((uint64_t{1} << skip_) - 1)) return kAbsent;
    const uint64_t step = offset >> skip_;
    const uint64_t b = step / kBitsPerBlock;
    if (!written_[b / kBlocksPerPage]) return kAbsent;
    const Block& block = blocks_[b];
    const unsigned bit = static_cast<unsigned>(step % kBitsPerBlock);
    const unsigned w = bit / 64;
    const uint64_t below = (uint64_t{1} << (bit % 64)) - 1;
    if (!(block.words[w] & (below + 1))) return kAbsent;
    return block.base + block.before[w] + bit_count(block.words[w] & below);
  }

  bool empty() const { return blocks_ == nullptr; }
  // The bytes written: the blocks of the pages that hold IDs.
  size_t bytes() const {
    size_t pages = 0;
    for (uint8_t w : written_) pages += w;
    return pages * kBlocksPerPage * sizeof(Block) + written_.capacity();
  }

  void release() {
    if (blocks_ != nullptr) HugePageAllocator<Block>().deallocate(blocks_, blocks_count_);
    blocks_ = nullptr;
    blocks_count_ = 0;
    written_.clear();
    written_.shrink_to_fit();
  }

 private:
  static constexpr unsigned kWords = 6;
  struct Block {
    uint32_t base;             // the IDs before this block (fewer than 2^32: HeapGraph's limit)
    uint16_t before[kWords];   // the IDs before each word within the block
    uint64_t words[kWords];
  };
  static_assert(sizeof(Block) == 64);
  static constexpr uint64_t kBitsPerBlock = 64 * kWords;

  // The baseline x86-64 has no popcnt instruction (std::popcount is a library call there).
  static uint32_t bit_count(uint64_t x) {
    x -= (x >> 1) & 0x5555555555555555;
    x = (x & 0x3333333333333333) + ((x >> 2) & 0x3333333333333333);
    x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0f;
    return static_cast<uint32_t>((x * 0x0101010101010101) >> 56);
  }
  static constexpr size_t kBlocksPerPage = 4096 / sizeof(Block);

  Block* blocks_ = nullptr;
  size_t blocks_count_ = 0;
  std::vector<uint8_t> written_;  // per 4 KiB of blocks: whether an ID fell in it
  uint64_t low_ = 0;
  unsigned skip_ = 0;
};

}  // namespace fasthprof
