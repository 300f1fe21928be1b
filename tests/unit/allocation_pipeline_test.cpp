#include "queues/allocation_pipeline.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <set>
#include <thread>
#include <vector>

#include "queues/allocation_recorder.h"
#include "sections/allocation_event.h"
#include "sections/site_slot_table.h"

namespace fasthprof {
namespace {

std::vector<SlotFrame> frames_of(uint64_t method, size_t depth) {
  std::vector<SlotFrame> frames;
  for (size_t i = 0; i < depth; ++i) frames.push_back({method + i, static_cast<int64_t>(i * 3)});
  return frames;
}

// ---- recorder ----------------------------------------------------------------------------------

// Every object recorded is still alive at the report: its live counts must be what its allocated
// counts are, exact or (sample=) estimated the same way.
void expect_live_counts_equal_allocated(uint64_t sample_interval) {
  AllocationRecorder recorder(SiteSlotTableOptions{64, 1024}, sample_interval);
  RecorderThread thread;
  std::vector<SlotFrame> frames = frames_of(7, 2);
  std::vector<uint64_t> tags;
  const uint64_t sizes[] = {16, 24, 4096, 100000, 16, 1 << 20, 40};
  for (uint64_t size : sizes) {
    recorder.record(thread, 11, 0, frames, size, [] { return uint64_t{1}; },
                    [&](uint64_t tag) { tags.push_back(tag); });
  }
  auto resolve = [](uint32_t, const SlotDescription&, SiteIdentity* site) {
    *site = {100001, 300001, 0};
    return true;
  };
  EXPECT_EQ(recorder.drain(resolve), std::size(sizes));
  LiveCount live = recorder.start_live_count();
  for (size_t i = 0; i < tags.size(); ++i) live.count(tags[i], sizes[i]);
  recorder.apply_live(live, resolve);
  SiteTotals totals;
  std::vector<SiteRow> rows = recorder.sites().report_rows(0.0, &totals);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].counts.live_objects, rows[0].counts.alloc_objects);
  EXPECT_EQ(rows[0].counts.live_bytes, rows[0].counts.alloc_bytes);
  uint64_t bytes = 0;
  double weighted_objects = 0;
  for (uint64_t size : sizes) {
    bytes += size;
    weighted_objects += sample_weight(size, sample_interval);
  }
  EXPECT_EQ(rows[0].counts.alloc_objects, static_cast<uint64_t>(std::llround(weighted_objects)));
  if (sample_interval == 0) {
    EXPECT_EQ(rows[0].counts.live_objects, std::size(sizes));
    EXPECT_EQ(rows[0].counts.live_bytes, bytes);
  } else {
    EXPECT_GT(rows[0].counts.live_objects, std::size(sizes));  // small objects stand for many
  }
}

TEST(AllocationRecorder, LiveCountsAreCountedAsAllocationsAreWhenExact) { expect_live_counts_equal_allocated(0); }

TEST(AllocationRecorder, LiveCountsAreWeightedAsAllocationsAreWhenSampled) {
  expect_live_counts_equal_allocated(512 * 1024);
}

// ---- tags --------------------------------------------------------------------------------------

TEST(AllocationTag, PacksSlotAndSequenceInTheAllocationSpace) {
  uint64_t tag = make_allocation_tag(12345, 987654321);
  EXPECT_EQ(allocation_tag_slot(tag), 12345u);
  EXPECT_EQ(tag & kTagSequenceMask, 987654321u);
  EXPECT_GE(static_cast<uint8_t>(id_space(tag)), static_cast<uint8_t>(IdSpace::kFirstAllocationTag));
  EXPECT_LE(static_cast<uint8_t>(id_space(tag)), static_cast<uint8_t>(IdSpace::kLastAllocationTag));
  EXPECT_EQ(allocation_tag_slot(make_registry_object_id(RegistryObjectKind::kClass, 3)), 0u);
  EXPECT_EQ(allocation_tag_slot(make_id(IdSpace::kFirstHeapDumpTag, 99)), 0u);
  EXPECT_EQ(allocation_tag_slot(0), 0u);
}

TEST(SequenceBlock, HandsOutUniqueNonZeroNumbersAcrossThreads) {
  std::atomic<uint64_t> shared{0};
  constexpr int kThreads = 4;
  constexpr int kEach = 20000;
  std::vector<std::vector<uint64_t>> seen(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      SequenceBlock block;
      for (int i = 0; i < kEach; ++i) seen[t].push_back(block.next(shared));
    });
  }
  for (auto& thread : threads) thread.join();
  std::set<uint64_t> all;
  for (auto& list : seen) all.insert(list.begin(), list.end());
  EXPECT_EQ(all.size(), size_t{kThreads} * kEach);
  EXPECT_EQ(all.count(0), 0u);
}

// ---- slot table --------------------------------------------------------------------------------

TEST(SiteSlotTable, GivesOneDenseSlotPerKeyAndKeepsTheDescription) {
  SiteSlotTable table(SiteSlotTableOptions{64, 1024});
  ASSERT_TRUE(table.valid());
  auto frames_a = frames_of(100, 4);
  auto frames_b = frames_of(200, 2);
  uint64_t key_a = SiteSlotTable::key_of(7, 0, frames_a);
  uint64_t key_b = SiteSlotTable::key_of(7, 0, frames_b);
  EXPECT_NE(key_a, key_b);
  EXPECT_NE(SiteSlotTable::key_of(8, 0, frames_a), key_a);  // the class is part of the key
  EXPECT_NE(SiteSlotTable::key_of(7, 1, frames_a), key_a);  // and the thread
  int handles = 0;
  SlotClaim a = table.find_or_claim(key_a, 7, 0, frames_a, [&] { return uint64_t(++handles + 1000); });
  SlotClaim b = table.find_or_claim(key_b, 7, 0, frames_b, [&] { return uint64_t(++handles + 1000); });
  SlotClaim again = table.find_or_claim(key_a, 7, 0, frames_a, [&] { return uint64_t(++handles + 1000); });
  EXPECT_TRUE(a.is_new);
  EXPECT_TRUE(b.is_new);
  EXPECT_FALSE(again.is_new);
  EXPECT_EQ(a.slot, 1u);
  EXPECT_EQ(b.slot, 2u);
  EXPECT_EQ(again.slot, 1u);
  EXPECT_EQ(handles, 2);
  EXPECT_EQ(table.claimed(), 2u);
  SlotDescription description;
  ASSERT_TRUE(table.describe(1, &description));
  EXPECT_EQ(description.class_key, 7u);
  EXPECT_EQ(description.class_handle, 1001u);
  ASSERT_EQ(description.frames.size(), 4u);
  EXPECT_EQ(description.frames[3].method, 103u);
  EXPECT_EQ(description.frames[3].location, 9);
  EXPECT_FALSE(table.describe(3, &description));
  EXPECT_FALSE(table.describe(0, &description));
  EXPECT_EQ(table.trace_serial(1), 0u);
  table.set_trace_serial(1, 300123);
  EXPECT_EQ(table.trace_serial(1), 300123u);
}

TEST(SiteSlotTable, FullTableReturnsSlotZeroAndCountsTheDrops) {
  SiteSlotTable table(SiteSlotTableOptions{4, 1000});
  for (uint64_t site = 0; site < 10; ++site) {
    auto frames = frames_of(site * 10, 1);
    SlotClaim claim = table.find_or_claim(SiteSlotTable::key_of(1, 0, frames), 1, 0, frames, [] { return 0; });
    EXPECT_EQ(claim.slot, site < 4 ? site + 1 : 0) << site;
  }
  EXPECT_EQ(table.claimed(), 4u);
  EXPECT_EQ(table.dropped(), 6u);
  // A dropped key stays dropped; a known key still resolves.
  auto known = frames_of(0, 1);
  EXPECT_EQ(table.find_or_claim(SiteSlotTable::key_of(1, 0, known), 1, 0, known, [] { return 0; }).slot, 1u);
}

TEST(SiteSlotTable, FrameBudgetBoundsTheSites) {
  SiteSlotTable table(SiteSlotTableOptions{100, 10});
  auto deep = frames_of(1, 8);
  auto other = frames_of(50, 8);
  EXPECT_EQ(table.find_or_claim(SiteSlotTable::key_of(1, 0, deep), 1, 0, deep, [] { return 0; }).slot, 1u);
  EXPECT_EQ(table.find_or_claim(SiteSlotTable::key_of(1, 0, other), 1, 0, other, [] { return 0; }).slot, 0u);
  EXPECT_EQ(table.dropped(), 1u);
}

TEST(SiteSlotTable, ConcurrentClaimersAgreeOnEverySlot) {
  SiteSlotTable table(SiteSlotTableOptions{4096, 1 << 16});
  constexpr int kThreads = 4;
  constexpr int kSites = 500;
  std::vector<std::vector<uint32_t>> slots(kThreads, std::vector<uint32_t>(kSites));
  std::atomic<int> created{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 3; ++round) {
        for (int site = 0; site < kSites; ++site) {
          int chosen = (site * 7 + t * 131) % kSites;
          auto frames = frames_of(uint64_t(chosen) * 16, 3);
          SlotClaim claim = table.find_or_claim(SiteSlotTable::key_of(5, 0, frames), 5, 0, frames, [&] {
            created.fetch_add(1);
            return uint64_t(chosen);
          });
          slots[t][chosen] = claim.slot;
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(created.load(), kSites);
  EXPECT_EQ(table.claimed(), uint32_t{kSites});
  std::set<uint32_t> distinct;
  for (int site = 0; site < kSites; ++site) {
    for (int t = 1; t < kThreads; ++t) EXPECT_EQ(slots[t][site], slots[0][site]);
    distinct.insert(slots[0][site]);
    SlotDescription description;
    ASSERT_TRUE(table.describe(slots[0][site], &description));
    EXPECT_EQ(description.class_handle, uint64_t(site));
    EXPECT_EQ(description.frames[0].method, uint64_t(site) * 16);
  }
  EXPECT_EQ(distinct.size(), size_t{kSites});
}

// ---- pipeline ----------------------------------------------------------------------------------

TEST(AllocationPipeline, DrainsOneProducersEventsInOrder) {
  AllocationPipeline pipeline(AllocationPipelineOptions{1024, 100, 100});
  auto producer = pipeline.make_producer();
  for (uint32_t i = 1; i <= 500; ++i) pipeline.push(*producer, {i, 0, i * 8u});
  std::vector<AllocationEvent> seen;
  size_t drained = pipeline.drain([&](std::span<const AllocationEvent> batch) {
    EXPECT_LE(batch.size(), 100u);
    seen.insert(seen.end(), batch.begin(), batch.end());
  });
  ASSERT_EQ(drained, 500u);
  ASSERT_EQ(seen.size(), 500u);
  for (uint32_t i = 0; i < 500; ++i) {
    EXPECT_EQ(seen[i].slot, i + 1);
    EXPECT_EQ(seen[i].size, (i + 1) * 8u);
  }
  EXPECT_EQ(pipeline.drain([](std::span<const AllocationEvent>) {}), 0u);
  EXPECT_EQ(pipeline.stats().drained, 500u);
  EXPECT_GE(pipeline.stats().deepest_queue, 500u);
}

TEST(AllocationPipeline, ManyProducersLoseNothing) {
  AllocationPipeline pipeline(AllocationPipelineOptions{4096, 512, 1000});
  constexpr int kThreads = 6;
  constexpr uint32_t kEach = 50000;
  std::atomic<bool> done{false};
  std::vector<uint64_t> per_slot(kThreads + 1, 0);
  std::vector<uint32_t> last_size(kThreads + 1, 0);
  bool in_order = true;
  std::thread consumer([&] {
    auto take = [&](std::span<const AllocationEvent> batch) {
      for (const AllocationEvent& event : batch) {
        ++per_slot[event.slot];
        if (event.size <= last_size[event.slot]) in_order = false;
        last_size[event.slot] = static_cast<uint32_t>(event.size);
      }
    };
    while (!done.load()) pipeline.drain(take);
    pipeline.drain(take);
  });
  std::vector<std::thread> producers;
  for (int t = 1; t <= kThreads; ++t) {
    producers.emplace_back([&, t] {
      auto producer = pipeline.make_producer();
      for (uint32_t i = 1; i <= kEach; ++i) pipeline.push(*producer, {uint32_t(t), 0, i});
    });
  }
  for (auto& producer : producers) producer.join();
  done.store(true);
  consumer.join();
  for (int t = 1; t <= kThreads; ++t) EXPECT_EQ(per_slot[t], kEach) << t;
  EXPECT_TRUE(in_order);
}

TEST(AllocationPipeline, AFullQueueMakesTheProducerWaitForTheWriter) {
  AllocationPipeline pipeline(AllocationPipelineOptions{256, 64, 60000});
  auto producer = pipeline.make_producer();
  std::atomic<uint32_t> pushed{0};
  std::thread writer_side([&] {
    for (uint32_t i = 0; i < 5000; ++i) {
      pipeline.push(*producer, {1, 0, 1});
      pushed.fetch_add(1);
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  // Nobody drained yet: the producer is stuck near the capacity, not past it.
  EXPECT_LT(pushed.load(), 5000u);
  EXPECT_LE(pipeline.size_approx(), 256u + 256u);
  uint64_t total = 0;
  while (total < 5000) {
    total += pipeline.drain([](std::span<const AllocationEvent>) {});
    std::this_thread::yield();
  }
  writer_side.join();
  EXPECT_EQ(total, 5000u);
  EXPECT_GT(pipeline.stats().producer_waits, 0u);
  EXPECT_EQ(pipeline.stats().forced_growth, 0u);
}

TEST(AllocationPipeline, AStalledWriterLetsTheQueueGrowInsteadOfDeadlocking) {
  AllocationPipeline pipeline(AllocationPipelineOptions{256, 64, 20});
  auto producer = pipeline.make_producer();
  for (uint32_t i = 0; i < 2000; ++i) pipeline.push(*producer, {1, 0, 1});
  EXPECT_GT(pipeline.stats().forced_growth, 0u);
  EXPECT_EQ(pipeline.drain([](std::span<const AllocationEvent>) {}), 2000u);
}

TEST(AllocationPipeline, EventsOfEndedThreadsAreStillDrainedAndProducersAreReused) {
  AllocationPipeline pipeline(AllocationPipelineOptions{1 << 14, 1024, 1000});
  uint64_t total = 0;
  for (int wave = 0; wave < 20; ++wave) {
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&] {
        auto producer = pipeline.make_producer();
        for (int i = 0; i < 300; ++i) pipeline.push(*producer, {2, 0, 4});
      });
    }
    for (auto& thread : threads) thread.join();
    total += pipeline.drain([](std::span<const AllocationEvent>) {});
  }
  EXPECT_EQ(total, 20u * 8u * 300u);
}

}  // namespace
}  // namespace fasthprof
