// Stress test of allocation tracking's own code (runtime/queues/allocation_recorder.*, which the agent's
// callback and writer call) without a JVM, built with -fsanitize=thread (see tests/meson.build):
// AllocationRecorder::record() on many threads that start and end, drain() on the writer thread and
// on a report thread taking turns, live counts over a simulated heap of tags that the producers
// keep overwriting, and lock-free trace-serial lookups as a heap-walk callback makes them. Exits
// non-zero when a count is off; ThreadSanitizer fails the run on any race outside tests/tsan.supp.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "queues/allocation_recorder.h"
#include "sections/allocation_event.h"

namespace fasthprof {
namespace {

constexpr int kSites = 300;
constexpr int kWaves = 6;
constexpr int kThreadsPerWave = 8;
constexpr int kEventsPerThread = 20000;
constexpr int kHeapCells = 4096;  // the simulated heap: each cell holds one live object's tag

int run() {
  AllocationRecorder recorder(SiteSlotTableOptions{1024, 1 << 14}, 0, AllocationPipelineOptions{2048, 256, 2000});
  std::mutex drain_mutex;  // as the agent: one consumer at a time
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> pushed{0};
  std::atomic<uint64_t> lookups{0};
  std::atomic<uint64_t> live_counts{0};
  std::vector<std::atomic<uint64_t>> heap(kHeapCells);

  // As the agent's writer resolves a new slot: class and trace serials from the description.
  auto resolve = [](uint32_t, const SlotDescription& description, SiteIdentity* site) {
    if (description.frames.size() != 4 || description.class_key == 0) std::abort();
    site->class_serial = 100000 + static_cast<uint32_t>(description.class_key);
    site->trace_serial = 300000 + static_cast<uint32_t>(description.frames[0].method);
    return true;
  };
  auto drain_once = [&] {
    std::lock_guard<std::mutex> lock(drain_mutex);
    return recorder.drain(resolve);
  };
  // A live count as a report makes it; returns the objects counted.
  auto count_live = [&] {
    std::lock_guard<std::mutex> lock(drain_mutex);
    recorder.drain(resolve);
    LiveCount live = recorder.start_live_count();
    for (const auto& cell : heap) {
      if (uint64_t tag = cell.load(std::memory_order_acquire)) live.count(tag, 16);
    }
    recorder.drain(resolve);
    recorder.apply_live(live, resolve);
    SiteTotals totals;
    recorder.sites().report_rows(0.0, &totals);
    return totals.live_objects;
  };
  std::thread writer([&] {
    while (!stop.load()) {
      if (drain_once() == 0) std::this_thread::yield();
    }
  });
  // A second consumer taking turns, as the report thread does.
  std::thread reporter([&] {
    while (!stop.load()) {
      live_counts.fetch_add(count_live(), std::memory_order_relaxed);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  // Heap-walk style readers of the published trace serials.
  std::thread walker([&] {
    while (!stop.load()) {
      for (const auto& cell : heap) {
        uint64_t tag = cell.load(std::memory_order_acquire);
        uint32_t serial = recorder.trace_serial_of_tag(tag);
        if (serial != 0) lookups.fetch_add(1, std::memory_order_relaxed);
        // A slot may be claimed but not yet filled; once describe() says yes, the entry is whole.
        SlotDescription description;
        if (recorder.slots().describe(allocation_tag_slot(tag), &description) &&
            (description.frames.size() != 4 || description.frames[0].method == 0 || description.class_key == 0)) {
          std::abort();
        }
      }
      std::this_thread::yield();
    }
  });

  for (int wave = 0; wave < kWaves; ++wave) {
    std::vector<std::thread> producers;
    for (int t = 0; t < kThreadsPerWave; ++t) {
      producers.emplace_back([&, t] {
        RecorderThread thread;
        SlotFrame frames[4];
        for (int i = 0; i < kEventsPerThread; ++i) {
          int site = (i * 31 + t * 17 + wave) % kSites;
          for (int f = 0; f < 4; ++f) frames[f] = {uint64_t(site) + 1 + f, f};
          uint64_t class_key = uint64_t(site % 7) + 1;
          std::span<const SlotFrame> stack(frames, 4);
          uint64_t tagged = 0;
          uint32_t slot = recorder.record(
              thread, class_key, 0, stack, 16, [] { return uint64_t{0}; },
              [&](uint64_t tag) {
                tagged = tag;
                heap[(i * 7 + t * 13 + wave) % kHeapCells].store(tag, std::memory_order_release);
              });
          if (slot == 0) continue;
          if (allocation_tag_slot(tagged) != slot) std::abort();
          pushed.fetch_add(1, std::memory_order_relaxed);
        }
      });
    }
    for (auto& producer : producers) producer.join();
  }
  stop.store(true);
  writer.join();
  reporter.join();
  walker.join();
  uint64_t live_at_end = count_live();

  SiteTotals totals;
  std::vector<SiteRow> rows = recorder.sites().report_rows(0.0, &totals);
  uint64_t expected = uint64_t{kWaves} * kThreadsPerWave * kEventsPerThread;
  int failures = 0;
  if (pushed.load() != expected || totals.alloc_objects != expected || totals.alloc_bytes != expected * 16) {
    std::fprintf(stderr, "counts: pushed %llu, counted %llu objects / %llu bytes, expected %llu\n",
                 (unsigned long long)pushed.load(), (unsigned long long)totals.alloc_objects,
                 (unsigned long long)totals.alloc_bytes, (unsigned long long)expected);
    ++failures;
  }
  uint64_t filled_cells = 0;
  for (const auto& cell : heap) filled_cells += cell.load() != 0;
  if (live_at_end != filled_cells || totals.live_objects != filled_cells || totals.live_bytes != filled_cells * 16) {
    std::fprintf(stderr, "live: counted %llu objects / %llu bytes, the heap holds %llu\n",
                 (unsigned long long)totals.live_objects, (unsigned long long)totals.live_bytes,
                 (unsigned long long)filled_cells);
    ++failures;
  }
  const SiteSlotTable& slots = recorder.slots();
  if (slots.claimed() != kSites || recorder.sites().site_count() != kSites || slots.dropped() != 0 ||
      recorder.sites().unattributed() != 0) {
    std::fprintf(stderr, "sites: %u slots, %zu rows, %llu dropped, %llu unattributed, expected %d\n",
                 slots.claimed(), recorder.sites().site_count(), (unsigned long long)slots.dropped(),
                 (unsigned long long)recorder.sites().unattributed(), kSites);
    ++failures;
  }
  PipelineStats stats = recorder.pipeline_stats();
  std::printf("allocation pipeline stress: %llu events, %d sites, deepest queue %llu, %llu waits, "
              "%llu forced growths, %llu serial lookups, %llu live objects counted in reports\n",
              (unsigned long long)expected, kSites, (unsigned long long)stats.deepest_queue,
              (unsigned long long)stats.producer_waits, (unsigned long long)stats.forced_growth,
              (unsigned long long)lookups.load(), (unsigned long long)live_counts.load());
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace fasthprof

int main() { return fasthprof::run(); }
