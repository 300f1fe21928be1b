#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "base/hprof_format.h"
#include "registries/trace_table.h"

namespace fasthprof {
namespace {

using Frames = std::vector<uint64_t>;

std::vector<uint64_t> frames_of(const TraceTable& table, uint32_t serial) {
  std::optional<TraceView> view = table.find(serial);
  if (!view) return {};
  return std::vector<uint64_t>(view->frames.begin(), view->frames.end());
}

TEST(TraceTable, EmptyTraceIsTheFirstSerial) {
  TraceTable table;
  EXPECT_EQ(table.size(), 1u);
  EXPECT_EQ(table.empty_trace_serial(), kFirstTraceSerial);
  TraceRef empty = table.intern(0, {});
  EXPECT_EQ(empty.serial, 300000u);
  EXPECT_FALSE(empty.is_new);
  std::optional<TraceView> view = table.find(kFirstTraceSerial);
  ASSERT_TRUE(view.has_value());
  EXPECT_TRUE(view->frames.empty());
  EXPECT_EQ(view->thread_serial, 0u);
  EXPECT_FALSE(view->overflow);
}

TEST(TraceTable, ReturnsSameSerialForEqualStacks) {
  TraceTable table;
  Frames stack = {11, 22, 33, 44};
  TraceRef first = table.intern(0, stack);
  Frames copy = stack;
  TraceRef second = table.intern(0, copy);
  EXPECT_TRUE(first.is_new);
  EXPECT_FALSE(second.is_new);
  EXPECT_EQ(first.serial, second.serial);
  EXPECT_EQ(first.serial, kFirstTraceSerial + 1);
  EXPECT_EQ(frames_of(table, first.serial), stack);
}

TEST(TraceTable, ThreadOrderAndLengthMakeDifferentTraces) {
  TraceTable table;
  std::set<uint32_t> serials;
  serials.insert(table.intern(0, Frames{1, 2, 3}).serial);
  serials.insert(table.intern(200001, Frames{1, 2, 3}).serial);  // thread=y
  serials.insert(table.intern(200002, Frames{1, 2, 3}).serial);
  serials.insert(table.intern(0, Frames{3, 2, 1}).serial);        // order
  serials.insert(table.intern(0, Frames{1, 2}).serial);           // prefix
  serials.insert(table.intern(0, Frames{1, 2, 3, 0}).serial);     // longer, zero frame
  serials.insert(table.intern(200001, {}).serial);                // empty trace of a thread
  serials.insert(kFirstTraceSerial);
  EXPECT_EQ(serials.size(), 8u);
  std::optional<TraceView> view = table.find(kFirstTraceSerial + 2);
  ASSERT_TRUE(view.has_value());
  EXPECT_EQ(view->thread_serial, 200001u);
}

TEST(TraceTable, GrowthKeepsSerialsAndLookups) {
  TraceTable table(TraceTableOptions{.initial_slots = 16, .arena_chunk_size = 4096});
  constexpr uint32_t kCount = 100000;
  std::vector<uint32_t> serials;
  serials.reserve(kCount);
  for (uint32_t i = 0; i < kCount; ++i) {
    Frames stack = {i, i * 7 + 1, i ^ 0x5555, uint64_t{i} << 40};
    TraceRef ref = table.intern(i % 3 == 0 ? 0 : 200001, stack);
    ASSERT_TRUE(ref.is_new);
    ASSERT_EQ(ref.serial, kFirstTraceSerial + 1 + i);  // creation order
    serials.push_back(ref.serial);
  }
  EXPECT_GE(table.slot_count(), 2 * (kCount + 1));
  for (uint32_t i = 0; i < kCount; ++i) {
    Frames stack = {i, i * 7 + 1, i ^ 0x5555, uint64_t{i} << 40};
    TraceRef ref = table.intern(i % 3 == 0 ? 0 : 200001, stack);
    ASSERT_FALSE(ref.is_new);
    ASSERT_EQ(ref.serial, serials[i]);
    ASSERT_EQ(frames_of(table, serials[i]), stack);
  }
  EXPECT_EQ(table.size(), kCount + 1);
  EXPECT_EQ(table.dropped_traces(), 0u);
}

uint64_t constant_hash(uint32_t, const uint64_t*, size_t) { return 0x1234; }

uint64_t first_frame_hash(uint32_t, const uint64_t* frames, size_t num_frames) {
  return num_frames == 0 ? 0 : frames[0];
}

TEST(TraceTable, EveryHashCollidingStillSeparatesTraces) {
  TraceTable table(TraceTableOptions{.initial_slots = 16, .hash = constant_hash});
  std::vector<uint32_t> serials;
  for (uint64_t i = 0; i < 500; ++i) serials.push_back(table.intern(uint32_t(i % 2), Frames{i, i + 1}).serial);
  EXPECT_EQ(std::set<uint32_t>(serials.begin(), serials.end()).size(), serials.size());
  for (uint64_t i = 0; i < 500; ++i) {
    TraceRef ref = table.intern(uint32_t(i % 2), Frames{i, i + 1});
    ASSERT_FALSE(ref.is_new);
    ASSERT_EQ(ref.serial, serials[i]);
  }
  // Same frames, other thread: a collision on hash and frames, told apart by the thread.
  EXPECT_TRUE(table.intern(1, Frames{0, 1}).is_new);
  EXPECT_EQ(table.intern(0, {}).serial, kFirstTraceSerial);
}

TEST(TraceTable, CollidingHashesAcrossGrowthAndWraparound) {
  // Hashes that all land in the last slots force probing to wrap to the front of the array.
  TraceTable table(TraceTableOptions{.initial_slots = 16, .hash = first_frame_hash});
  std::vector<uint32_t> serials;
  for (uint64_t i = 0; i < 300; ++i) {
    uint64_t top = 15 + (i % 3) * 16;  // three hash values, all ≡ 15 mod 16
    serials.push_back(table.intern(0, Frames{top, i}).serial);
  }
  for (uint64_t i = 0; i < 300; ++i) {
    uint64_t top = 15 + (i % 3) * 16;
    ASSERT_EQ(table.intern(0, Frames{top, i}).serial, serials[i]);
    ASSERT_EQ(frames_of(table, serials[i]), (Frames{top, i}));
  }
}

TEST(TraceTable, MemoryCapMapsNewTracesToOneOverflowTrace) {
  TraceTableOptions options;
  options.memory_limit = 256 * 1024;
  options.initial_slots = 16;
  options.arena_chunk_size = 4096;
  TraceTable table(options);
  std::vector<uint32_t> kept;
  uint64_t i = 0;
  for (; i < 1000000; ++i) {
    TraceRef ref = table.intern(0, Frames{i, i + 1, i + 2, i + 3});
    if (!ref.is_new) break;
    kept.push_back(ref.serial);
  }
  ASSERT_LT(i, 1000000u) << "the cap never applied";
  uint32_t overflow = table.overflow_serial();
  ASSERT_NE(overflow, 0u);
  EXPECT_EQ(overflow, kFirstTraceSerial + 1 + kept.size());
  EXPECT_EQ(table.dropped_traces(), 1u);
  EXPECT_LE(table.memory_used(), options.memory_limit);

  // Every later new trace, even a small one, maps to the same serial and is counted.
  EXPECT_EQ(table.intern(0, Frames{~0ull}).serial, overflow);
  EXPECT_EQ(table.intern(7, {}).serial, overflow);
  EXPECT_FALSE(table.intern(0, Frames{~1ull}).is_new);
  EXPECT_EQ(table.dropped_traces(), 4u);

  // Traces interned before the cap keep resolving.
  EXPECT_EQ(table.intern(0, Frames{0, 1, 2, 3}).serial, kept.front());
  EXPECT_EQ(table.intern(0, Frames{i - 1, i, i + 1, i + 2}).serial, kept.back());
  EXPECT_EQ(table.intern(0, {}).serial, kFirstTraceSerial);
  EXPECT_EQ(table.dropped_traces(), 4u);

  std::optional<TraceView> view = table.find(overflow);
  ASSERT_TRUE(view.has_value());
  EXPECT_TRUE(view->overflow);
  EXPECT_TRUE(view->frames.empty());
  EXPECT_EQ(table.size(), kept.size() + 2);
  EXPECT_LE(table.memory_used(), options.memory_limit);
}

TEST(TraceTable, CapSmallerThanTheTableStillHasTheEmptyTrace) {
  TraceTable table(TraceTableOptions{.memory_limit = 1});
  EXPECT_EQ(table.intern(0, {}).serial, kFirstTraceSerial);
  TraceRef ref = table.intern(0, Frames{1});
  EXPECT_FALSE(ref.is_new);
  EXPECT_EQ(ref.serial, kFirstTraceSerial + 1);
  EXPECT_EQ(table.overflow_serial(), ref.serial);
  EXPECT_EQ(table.dropped_traces(), 1u);
}

TEST(TraceTable, ClaimWritesEachTraceOncePerFile) {
  TraceTable table;
  uint32_t a = table.intern(0, Frames{1}).serial;
  uint32_t b = table.intern(0, Frames{2}).serial;
  EXPECT_TRUE(table.claim(b));
  EXPECT_FALSE(table.claim(b));
  EXPECT_FALSE(table.claim(12345));
  EXPECT_TRUE(table.find(b)->written);

  std::vector<uint32_t> claimed;
  table.claim_unwritten([&](const TraceView& view) { claimed.push_back(view.serial); });
  EXPECT_EQ(claimed, (std::vector<uint32_t>{kFirstTraceSerial, a}));
  EXPECT_FALSE(table.claim(a));

  uint32_t c = table.intern(0, Frames{3}).serial;
  claimed.clear();
  table.claim_unwritten([&](const TraceView& view) { claimed.push_back(view.serial); });
  EXPECT_EQ(claimed, (std::vector<uint32_t>{c}));

  table.reset_written();
  claimed.clear();
  table.claim_unwritten([&](const TraceView& view) { claimed.push_back(view.serial); });
  EXPECT_EQ(claimed, (std::vector<uint32_t>{kFirstTraceSerial, a, b, c}));
}

TEST(TraceTable, FindRejectsUnknownSerials) {
  TraceTable table;
  EXPECT_FALSE(table.find(0).has_value());
  EXPECT_FALSE(table.find(kFirstTraceSerial - 1).has_value());
  EXPECT_FALSE(table.find(kFirstTraceSerial + 1).has_value());
}

TEST(TraceTable, DefaultHashDependsOnThreadAndEveryFrame) {
  uint64_t frames[] = {1, 2, 3, 4};
  uint64_t base = trace_hash(0, frames, 4);
  EXPECT_NE(base, trace_hash(1, frames, 4));
  EXPECT_NE(base, trace_hash(0, frames, 3));
  frames[3] = 5;
  EXPECT_NE(base, trace_hash(0, frames, 4));
}

}  // namespace
}  // namespace fasthprof
