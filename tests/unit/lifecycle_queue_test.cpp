#include "queues/lifecycle_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace fasthprof {
namespace {

LifecycleEvent thread_start(uint64_t id) {
  LifecycleEvent event;
  event.kind = LifecycleEvent::Kind::kThreadStart;
  event.object_id = id;
  return event;
}

TEST(LifecycleQueue, DrainsInPushOrderWithSequenceNumbers) {
  LifecycleQueue queue;
  EXPECT_EQ(queue.push(thread_start(7)), 1u);
  EXPECT_EQ(queue.push(thread_start(8)), 2u);
  std::vector<uint64_t> seen;
  EXPECT_EQ(queue.drain([&](LifecycleEvent& event) {
    seen.push_back(event.object_id);
    EXPECT_EQ(event.sequence, seen.size());
  }),
            2u);
  EXPECT_EQ(seen, (std::vector<uint64_t>{7, 8}));
  EXPECT_EQ(queue.drain([](LifecycleEvent&) { FAIL(); }), 0u);
  EXPECT_EQ(queue.push(thread_start(9)), 3u);  // sequence numbers go on across drains
}

TEST(LifecycleQueue, EachThreadsEventsStayInOrderAcrossThreads) {
  LifecycleQueue queue;
  constexpr int kThreads = 8, kEach = 2000;
  std::vector<std::thread> producers;
  for (int t = 0; t < kThreads; ++t) {
    producers.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) queue.push(thread_start(uint64_t(t) << 32 | uint64_t(i)));
    });
  }
  std::vector<int64_t> last(kThreads, -1);
  uint64_t last_sequence = 0;
  size_t total = 0;
  while (total < size_t{kThreads} * kEach) {
    total += queue.drain([&](LifecycleEvent& event) {
      int t = int(event.object_id >> 32);
      int64_t i = int64_t(event.object_id & 0xffffffff);
      EXPECT_EQ(i, last[t] + 1);
      last[t] = i;
      EXPECT_GT(event.sequence, last_sequence);
      last_sequence = event.sequence;
    });
  }
  for (auto& producer : producers) producer.join();
  EXPECT_EQ(queue.stats().pushed, uint64_t{kThreads} * kEach);
}

TEST(LifecycleQueue, FullQueueWaitsForTheWriter) {
  LifecycleQueue queue({/*capacity=*/2, /*stall_limit_ms=*/60000});
  queue.push(thread_start(1));
  queue.push(thread_start(2));
  std::atomic<bool> pushed{false};
  std::thread producer([&] {
    queue.push(thread_start(3));
    pushed = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(pushed.load());  // waits while two events are queued
  size_t drained = queue.drain([](LifecycleEvent&) {});
  producer.join();
  EXPECT_TRUE(pushed.load());
  EXPECT_EQ(drained, 2u);
  EXPECT_EQ(queue.size(), 1u);
  EXPECT_EQ(queue.stats().waits, 1u);
  EXPECT_EQ(queue.stats().forced, 0u);
}

TEST(LifecycleQueue, StalledWriterDoesNotBlockForever) {
  LifecycleQueue queue({/*capacity=*/1, /*stall_limit_ms=*/20});
  queue.push(thread_start(1));
  auto started = std::chrono::steady_clock::now();
  queue.push(thread_start(2));  // nobody drains: queued after the stall limit
  auto waited = std::chrono::steady_clock::now() - started;
  EXPECT_GE(waited, std::chrono::milliseconds(20));
  EXPECT_EQ(queue.size(), 2u);
  EXPECT_EQ(queue.stats().forced, 1u);
}

}  // namespace
}  // namespace fasthprof
