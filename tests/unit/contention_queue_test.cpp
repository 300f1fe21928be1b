#include "queues/contention_queue.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace fasthprof {
namespace {

TEST(ContentionQueue, DrainsInPushOrderAcrossThreads) {
  ContentionQueue queue(ContentionQueueOptions{64, 100});
  constexpr int kThreads = 4, kEach = 2000;
  std::vector<std::thread> producers;
  for (int t = 0; t < kThreads; ++t) {
    producers.emplace_back([&queue, t] {
      for (int i = 0; i < kEach; ++i) {
        ContentionEvent event;
        event.thread_object_id = static_cast<uint64_t>(t);
        event.waited_ns = static_cast<uint64_t>(i);
        queue.push(std::move(event));
      }
    });
  }
  std::vector<uint64_t> next(kThreads, 0);
  size_t total = 0;
  bool in_order = true;
  while (total < static_cast<size_t>(kThreads * kEach)) {
    total += queue.drain([&](ContentionEvent& event) {
      in_order = in_order && event.waited_ns == next[event.thread_object_id];
      ++next[event.thread_object_id];
    });
  }
  for (auto& producer : producers) producer.join();
  EXPECT_TRUE(in_order);
  ContentionQueueStats stats = queue.stats();
  EXPECT_EQ(stats.pushed, static_cast<uint64_t>(kThreads * kEach));
  EXPECT_LE(stats.deepest, 64u + kThreads);  // bounded, give or take the ones forced past it
}

TEST(ContentionQueue, QueuesPastTheBoundWhenTheOwnerStalls) {
  ContentionQueue queue(ContentionQueueOptions{2, 20});
  for (int i = 0; i < 3; ++i) queue.push(ContentionEvent{});
  ContentionQueueStats stats = queue.stats();
  EXPECT_EQ(stats.pushed, 3u);
  EXPECT_EQ(stats.waits, 1u);
  EXPECT_EQ(stats.forced, 1u);
  EXPECT_EQ(queue.drain([](ContentionEvent&) {}), 3u);
}

}  // namespace
}  // namespace fasthprof
