// cpu=samples' counting rule (runtime/sections/cpu_counting.h), its thread map (runtime/sections/cpu_thread_map.h)
// and the clocks they read (runtime/base/clock.h).
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "base/clock.h"
#include "sections/cpu_counting.h"
#include "sections/cpu_thread_map.h"

namespace fasthprof {
namespace {

constexpr int32_t kRunnable = static_cast<int32_t>(kThreadStateAlive | kThreadStateRunnable);
constexpr uint64_t kIntervalNs = 10'000'000;  // interval=10

TEST(CountsAsRunning, OnlyRunnableThreadsNeitherSuspendedNorInterrupted) {
  EXPECT_TRUE(counts_as_running(kRunnable));
  EXPECT_TRUE(counts_as_running(kRunnable | static_cast<int32_t>(kThreadStateInNative)));  // in native: still using the CPU
  EXPECT_FALSE(counts_as_running(0));                     // not started or ended
  EXPECT_FALSE(counts_as_running(static_cast<int32_t>(kThreadStateRunnable)));  // not alive
  EXPECT_FALSE(counts_as_running(static_cast<int32_t>(kThreadStateAlive)));     // alive, waiting / sleeping / blocked
  EXPECT_FALSE(counts_as_running(static_cast<int32_t>(kThreadStateAlive | kThreadStateBlockedOnMonitorEnter)));  // blocked on a monitor
  EXPECT_FALSE(counts_as_running(kRunnable | static_cast<int32_t>(kThreadStateSuspended)));
  EXPECT_FALSE(counts_as_running(kRunnable | static_cast<int32_t>(kThreadStateInterrupted)));
}

TEST(CpuTimeAdvanced, UpdatesTheBaseline) {
  int64_t last = 0;
  EXPECT_TRUE(cpu_time_advanced(&last, 5));
  EXPECT_EQ(5, last);
  EXPECT_FALSE(cpu_time_advanced(&last, 5));
  EXPECT_FALSE(cpu_time_advanced(&last, 3));  // never backwards: the new reading is kept
  EXPECT_EQ(3, last);
  EXPECT_TRUE(cpu_time_advanced(&last, 4));
}

TEST(CountsInRound, StateFirstThenCpuTimeThenTheRunQueue) {
  int asked = 0;
  auto waiting = [&asked] {
    ++asked;
    return true;
  };
  auto not_waiting = [&asked] {
    ++asked;
    return false;
  };
  // Not running: nothing else is read.
  EXPECT_FALSE(counts_in_round(static_cast<int32_t>(kThreadStateAlive), true, true, waiting));
  EXPECT_EQ(0, asked);
  // Ran since the last round.
  EXPECT_TRUE(counts_in_round(kRunnable, true, true, not_waiting));
  EXPECT_EQ(0, asked);
  // No CPU times from the VM: every RUNNABLE thread counts, as the original's did.
  EXPECT_TRUE(counts_in_round(kRunnable, false, false, not_waiting));
  EXPECT_EQ(0, asked);
  // Did not run: counts only if it waited for a core the whole interval.
  EXPECT_TRUE(counts_in_round(kRunnable, true, false, waiting));
  EXPECT_FALSE(counts_in_round(kRunnable, true, false, not_waiting));
  EXPECT_EQ(2, asked);
}

TEST(PendingCounts, OneHandlePerThreadCountsAddUp) {
  PendingCounts pending;
  int made = 0;
  int a = 0, b = 0;
  auto make_a = [&]() -> void* {
    ++made;
    return &a;
  };
  pending.add(1, 1, make_a);
  pending.add(1, 2, make_a);
  EXPECT_EQ(1, made);
  EXPECT_EQ(nullptr, pending.add_with_handle(2, 4, &b));  // kept
  int c = 0;
  EXPECT_EQ(&c, pending.add_with_handle(2, 1, &c));  // had one: the caller's to release
  EXPECT_EQ(2u, pending.size());
  EXPECT_EQ(8u, pending.total());

  PendingCounts batch;
  pending.take(&batch);
  EXPECT_TRUE(pending.empty());
  EXPECT_EQ(8u, batch.total());
  batch.for_each([&](int64_t tag, const PendingCounts::Entry& entry) {
    if (tag == 1) {
      EXPECT_EQ(&a, entry.handle);
      EXPECT_EQ(3u, entry.count);
    } else {
      EXPECT_EQ(2, tag);
      EXPECT_EQ(&b, entry.handle);
      EXPECT_EQ(5u, entry.count);
    }
  });
}

TEST(CpuThreadMap, NativeIdsAndVersion) {
  ManualClock clock;
  CpuThreadMap map(clock, kIntervalNs);
  EXPECT_EQ(0, map.native_id(7));
  uint64_t before = map.native_ids_version();
  map.set_native_id(7, 1234);
  EXPECT_EQ(1234, map.native_id(7));
  EXPECT_NE(before, map.native_ids_version());
  before = map.native_ids_version();
  map.set_native_id(7, 0);  // ThreadEnd: the id may be reused by the OS
  EXPECT_EQ(0, map.native_id(7));
  EXPECT_EQ(before, map.native_ids_version());
  EXPECT_EQ(0u, map.size());  // nothing counted of it: nothing kept
  map.set_native_id(8, 0);    // an unknown thread ending adds nothing
  EXPECT_EQ(0u, map.size());
  // A thread whose stack was counted is kept after its end, for its last trace.
  map.set_native_id(9, 900);
  map.stack_taken(9, 5);
  map.set_native_id(9, 0);
  EXPECT_EQ(1u, map.size());
  EXPECT_EQ(0, map.native_id(9));
  EXPECT_EQ(5u, map.charge_uncounted(9, 1, true));
}

TEST(CpuThreadMap, UncountedGoToARecentTrace) {
  ManualClock clock(1'000'000'000);
  CpuThreadMap map(clock, kIntervalNs);
  map.stack_taken(5, 42);
  clock.advance_ns(CpuThreadMap::kRecentIntervals * kIntervalNs);  // exactly 10 intervals: recent
  EXPECT_EQ(42u, map.charge_uncounted(5, 3, false));
  EXPECT_EQ(0u, map.lost());
  clock.advance_ns(1);  // older than 10 intervals: lost while the thread lives
  EXPECT_EQ(0u, map.charge_uncounted(5, 3, false));
  EXPECT_EQ(3u, map.lost());
  // The thread has ended: its last trace at any age.
  clock.advance_ms(60'000);
  EXPECT_EQ(42u, map.charge_uncounted(5, 2, true));
  EXPECT_EQ(3u, map.lost());
}

TEST(CpuThreadMap, UncountedWithoutATraceAreLost) {
  ManualClock clock;
  CpuThreadMap map(clock, kIntervalNs);
  EXPECT_EQ(0u, map.charge_uncounted(1, 4, false));
  EXPECT_EQ(0u, map.charge_uncounted(1, 1, true));  // ended before any stack was counted
  map.set_native_id(2, 77);                         // known, but no stack counted yet
  EXPECT_EQ(0u, map.charge_uncounted(2, 2, true));
  EXPECT_EQ(7u, map.lost());
}

TEST(CpuThreadMap, ANewerTraceReplacesTheOlder) {
  ManualClock clock;
  CpuThreadMap map(clock, kIntervalNs);
  map.stack_taken(1, 10);
  clock.advance_ms(50);
  map.stack_taken(1, 11);
  clock.advance_ms(90);  // 140 ms after the first, 90 after the second
  EXPECT_EQ(11u, map.charge_uncounted(1, 1, false));
}

TEST(CpuThreadMap, PruneKeepsLiveAndRecentThreads) {
  ManualClock clock;
  CpuThreadMap map(clock, kIntervalNs);
  map.set_native_id(1, 100);  // alive, never counted
  map.stack_taken(2, 20);     // ended long ago
  clock.advance_ms(500);
  map.stack_taken(4, 40);  // counted just now
  map.prune();
  EXPECT_EQ(2u, map.size());
  EXPECT_EQ(100, map.native_id(1));
  EXPECT_EQ(40u, map.charge_uncounted(4, 1, false));
  EXPECT_EQ(0u, map.charge_uncounted(2, 1, true));  // pruned: lost
}

TEST(CpuThreadMap, NativeIdsFromManyThreads) {
  ManualClock clock;
  CpuThreadMap map(clock, kIntervalNs);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&map, t] {
      for (int i = 1; i <= 500; ++i) {
        map.set_native_id(t * 1000 + i, static_cast<pid_t>(i));
        if (i % 2 == 0) map.set_native_id(t * 1000 + i, 0);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(1000u, map.size());  // the ended ones had nothing counted
  EXPECT_EQ(1, map.native_id(1));
  EXPECT_EQ(0, map.native_id(2));
  EXPECT_EQ(499, map.native_id(3499));
}

TEST(Clock, ManualClockMovesOnlyWhenTold) {
  ManualClock clock(5'000'000, 1'700'000'000'000'000'000);
  EXPECT_EQ(5u, clock.monotonic_ms());
  EXPECT_EQ(1'700'000'000'000u, clock.wall_ms());
  clock.advance_ms(3);
  EXPECT_EQ(8'000'000u, clock.monotonic_ns());
  EXPECT_EQ(1'700'000'000'003u, clock.wall_ms());
}

TEST(Clock, SystemClockIsMonotonicAndNearTheWallClock) {
  const Clock& clock = system_clock();
  uint64_t first = clock.monotonic_ns();
  uint64_t second = clock.monotonic_ns();
  EXPECT_LE(first, second);
  EXPECT_LE(monotonic_ms(), clock.monotonic_ms() + 1000);
  // After 2020-01-01 and within a second of the free function.
  EXPECT_GT(clock.wall_ms(), 1'577'836'800'000u);
  uint64_t wall = wall_ms();
  EXPECT_LE(clock.wall_ms() > wall ? clock.wall_ms() - wall : wall - clock.wall_ms(), 1000u);
  uint64_t cpu_before = thread_cpu_ns();
  volatile uint64_t sink = 0;
  for (int i = 0; i < 1'000'000; ++i) sink = sink + static_cast<uint64_t>(i);
  EXPECT_GT(thread_cpu_ns(), cpu_before);
}

}  // namespace
}  // namespace fasthprof
