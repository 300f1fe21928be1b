#include "base/flat_map.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/memory.h"

namespace fasthprof {
namespace {

// Every key lands on the same home slot, so probes, growth and erase all walk one long run.
struct CollidingHash {
  uint64_t operator()(uint64_t) const { return 7; }
};

// Keys whose homes wrap around the end of a 16-slot table.
struct WrappingHash {
  uint64_t operator()(uint64_t key) const { return 14 + key % 4; }
};

// A hash of 0 must not read as an empty slot.
struct ZeroHash {
  uint64_t operator()(uint64_t) const { return 0; }
};

TEST(FlatMap, FindsWhatWasInserted) {
  FlatMap<uint64_t, uint32_t> map;
  EXPECT_EQ(map.find(1), nullptr);
  auto [value, inserted] = map.try_emplace(1, 10);
  EXPECT_TRUE(inserted);
  EXPECT_EQ(*value, 10u);
  auto [again, inserted_again] = map.try_emplace(1, 20);
  EXPECT_FALSE(inserted_again);
  EXPECT_EQ(*again, 10u);  // the first value stays
  ASSERT_NE(map.find(1), nullptr);
  EXPECT_EQ(*map.find(1), 10u);
  EXPECT_EQ(map.find(2), nullptr);
  EXPECT_EQ(map.size(), 1u);
}

TEST(FlatMap, KeyZeroAndHashZeroAreOrdinary) {
  FlatMap<uint64_t, uint32_t, ZeroHash> map;
  map.try_emplace(0, 1);
  map.try_emplace(5, 2);
  ASSERT_NE(map.find(0), nullptr);
  EXPECT_EQ(*map.find(0), 1u);
  EXPECT_EQ(*map.find(5), 2u);
  EXPECT_TRUE(map.erase(0));
  EXPECT_EQ(map.find(0), nullptr);
  EXPECT_EQ(*map.find(5), 2u);
}

TEST(FlatMap, GrowsAtHalfLoadAndKeepsEveryKey) {
  FlatMap<uint64_t, uint64_t> map;
  EXPECT_EQ(map.capacity(), 16u);
  for (uint64_t key = 0; key < 8; ++key) map.try_emplace(key, key * 3);
  EXPECT_EQ(map.capacity(), 16u);
  map.try_emplace(8, 24);
  EXPECT_EQ(map.capacity(), 32u);
  for (uint64_t key = 9; key < 100000; ++key) map.try_emplace(key, key * 3);
  EXPECT_EQ(map.size(), 100000u);
  EXPECT_LE(map.size() * 2, map.capacity());
  for (uint64_t key = 0; key < 100000; ++key) {
    const uint64_t* value = map.find(key);
    ASSERT_NE(value, nullptr) << key;
    EXPECT_EQ(*value, key * 3);
  }
  EXPECT_EQ(map.find(100000), nullptr);
}

TEST(FlatMap, CapacityRoundsUpToAPowerOfTwo) {
  EXPECT_EQ((FlatMap<uint64_t, int>(0).capacity()), 16u);
  EXPECT_EQ((FlatMap<uint64_t, int>(1000).capacity()), 1024u);
  EXPECT_EQ((FlatMap<uint64_t, int>(1025).capacity()), 2048u);
}

TEST(FlatMap, CollidingKeysAllResolve) {
  FlatMap<uint64_t, uint32_t, CollidingHash> map;
  for (uint32_t key = 1; key <= 300; ++key) map.try_emplace(key, key + 1000);
  for (uint32_t key = 1; key <= 300; ++key) {
    ASSERT_NE(map.find(key), nullptr);
    EXPECT_EQ(*map.find(key), key + 1000);
  }
  EXPECT_EQ(map.find(301), nullptr);
}

TEST(FlatMap, EraseKeepsTheRestOfARunReachable) {
  FlatMap<uint64_t, uint32_t, CollidingHash> map;
  for (uint32_t key = 1; key <= 6; ++key) map.try_emplace(key, key);
  EXPECT_TRUE(map.erase(2));
  EXPECT_FALSE(map.erase(2));
  EXPECT_EQ(map.size(), 5u);
  for (uint32_t key : {1u, 3u, 4u, 5u, 6u}) {
    ASSERT_NE(map.find(key), nullptr) << key;
    EXPECT_EQ(*map.find(key), key);
  }
  EXPECT_EQ(map.find(2), nullptr);
  map.try_emplace(2, 22);
  EXPECT_EQ(*map.find(2), 22u);
}

TEST(FlatMap, EraseAcrossTheEndOfTheTable) {
  FlatMap<uint64_t, uint32_t, WrappingHash> map;  // 16 slots; homes 14, 15, 0, 1
  for (uint64_t key = 0; key < 8; ++key) map.try_emplace(key, static_cast<uint32_t>(key));
  ASSERT_EQ(map.capacity(), 16u);
  for (uint64_t erased = 0; erased < 8; ++erased) {
    EXPECT_TRUE(map.erase(erased));
    for (uint64_t key = erased + 1; key < 8; ++key) {
      ASSERT_NE(map.find(key), nullptr) << "erased " << erased << ", looking for " << key;
    }
  }
  EXPECT_EQ(map.size(), 0u);
}

// Random inserts and erases against std::unordered_map, with a hash weak enough to make long runs.
TEST(FlatMap, MatchesAReferenceMapUnderChurn) {
  struct WeakHash {
    uint64_t operator()(uint64_t key) const { return key % 97; }
  };
  FlatMap<uint64_t, uint64_t, WeakHash> map;
  std::unordered_map<uint64_t, uint64_t> reference;
  std::mt19937_64 random(42);
  for (int step = 0; step < 200000; ++step) {
    uint64_t key = random() % 2000;
    if (random() % 3 == 0) {
      EXPECT_EQ(map.erase(key), reference.erase(key) == 1);
    } else {
      auto [value, inserted] = map.try_emplace(key, step);
      auto [it, reference_inserted] = reference.try_emplace(key, step);
      EXPECT_EQ(inserted, reference_inserted);
      EXPECT_EQ(*value, it->second);
    }
  }
  EXPECT_EQ(map.size(), reference.size());
  for (uint64_t key = 0; key < 2000; ++key) {
    const uint64_t* value = map.find(key);
    auto it = reference.find(key);
    ASSERT_EQ(value != nullptr, it != reference.end()) << key;
    if (value != nullptr) {
      EXPECT_EQ(*value, it->second);
    }
  }
  size_t visited = 0;
  map.for_each([&](uint64_t key, uint64_t& value) {
    ++visited;
    EXPECT_EQ(reference.at(key), value);
  });
  EXPECT_EQ(visited, reference.size());
}

TEST(FlatMap, StringViewKeysCompareByContent) {
  FlatMap<std::string_view, uint32_t> map;
  std::string first = "java/lang/String";
  map.try_emplace(first, 1);
  std::string same = "java/lang/String";  // other storage, same text
  ASSERT_NE(map.find(same), nullptr);
  EXPECT_EQ(*map.find(same), 1u);
  EXPECT_EQ(map.find("java/lang/Strin"), nullptr);
  map.try_emplace("", 2);
  EXPECT_EQ(*map.find(std::string_view()), 2u);
}

TEST(FlatMap, PrecomputedHashFindsTheSameSlot) {
  FlatMap<std::string_view, uint32_t> map;
  uint64_t hash = map.hash_of("name");
  EXPECT_NE(hash, 0u);
  EXPECT_EQ(map.find("name", hash), nullptr);
  map.try_emplace("name", 5, hash);
  EXPECT_EQ(*map.find("name"), 5u);
}

TEST(FlatMap, MoveLeavesAnEmptyUsableMap) {
  FlatMap<uint64_t, uint32_t> map;
  for (uint64_t key = 0; key < 100; ++key) map.try_emplace(key, 1);
  FlatMap<uint64_t, uint32_t> moved(std::move(map));
  EXPECT_EQ(moved.size(), 100u);
  EXPECT_EQ(map.size(), 0u);  // NOLINT(bugprone-use-after-move): the state after a move is promised
  EXPECT_EQ(map.find(5), nullptr);
  map.try_emplace(5, 2);
  EXPECT_EQ(*map.find(5), 2u);
  FlatMap<uint64_t, uint32_t> assigned;
  assigned = std::move(moved);
  EXPECT_EQ(assigned.size(), 100u);
  EXPECT_EQ(moved.size(), 0u);  // NOLINT(bugprone-use-after-move)
}

TEST(FlatMap, FindOrInsertMakesOnlyOnAMiss) {
  FlatMap<std::string_view, uint32_t> map;
  std::vector<std::string> storage;
  storage.reserve(100);  // the views into it must not move
  int made = 0;
  auto intern = [&](std::string_view text) {
    return map.find_or_insert(text, map.hash_of(text), [&] {
      ++made;
      storage.emplace_back(text);
      return std::pair<std::string_view, uint32_t>(storage.back(), static_cast<uint32_t>(storage.size()));
    });
  };
  std::string temporary = "first";
  auto [value, inserted] = intern(temporary);
  EXPECT_TRUE(inserted);
  EXPECT_EQ(*value, 1u);
  temporary = "changed";  // the map keeps the copy, not the caller's text
  auto [again, inserted_again] = intern("first");
  EXPECT_FALSE(inserted_again);
  EXPECT_EQ(*again, 1u);
  EXPECT_EQ(made, 1);
  for (int i = 0; i < 40; ++i) intern("name" + std::to_string(i));  // grows while making
  EXPECT_EQ(made, 41);
  for (int i = 0; i < 40; ++i) EXPECT_EQ(*map.find("name" + std::to_string(i)), static_cast<uint32_t>(i + 2));
  EXPECT_EQ(*map.find("first"), 1u);
}

TEST(FlatMap, ClearForgetsAndShrinks) {
  FlatMap<uint64_t, uint32_t> map;
  for (uint64_t key = 0; key < 1000; ++key) map.try_emplace(key, 1);
  map.clear(64);
  EXPECT_EQ(map.size(), 0u);
  EXPECT_EQ(map.capacity(), 64u);
  EXPECT_EQ(map.find(5), nullptr);
  map.try_emplace(5, 2);
  EXPECT_EQ(*map.find(5), 2u);
}

TEST(FlatMap, SlotsComeFromTheAgentAllocator) {
  uint64_t before = memory::bytes_in_use();
  {
    FlatMap<uint64_t, uint64_t> map(1024);
    EXPECT_EQ(memory::bytes_in_use(), before + map.memory_bytes());
    for (uint64_t key = 0; key < 1000; ++key) map.try_emplace(key, key);
    EXPECT_EQ(memory::bytes_in_use(), before + map.memory_bytes());
    EXPECT_EQ(map.capacity(), 2048u);
  }
  EXPECT_EQ(memory::bytes_in_use(), before);
}

}  // namespace
}  // namespace fasthprof
