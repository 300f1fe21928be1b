// Stress test of the allocation pipeline without a JVM, built with -fsanitize=thread (see
// tests/meson.build): the callback side (slot claims, tags, pushes) on many threads that start and
// end, the writer side (bulk drain, site table, trace serial publication) on one thread, and
// lock-free trace-serial lookups as a heap-walk callback would make them. Exits non-zero when a
// count is off; ThreadSanitizer fails the run on any race outside tests/tsan.supp.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "allocation_event.h"
#include "allocation_pipeline.h"
#include "site_slot_table.h"
#include "site_table.h"

namespace fasthprof {
namespace {

constexpr int kSites = 300;
constexpr int kWaves = 6;
constexpr int kThreadsPerWave = 8;
constexpr int kEventsPerThread = 20000;

int run() {
  SiteSlotTable slots(SiteSlotTableOptions{1024, 1 << 14});
  AllocationPipeline pipeline(AllocationPipelineOptions{2048, 256, 2000});
  SiteTable sites;
  std::mutex drain_mutex;  // as the agent: one consumer at a time
  std::atomic<uint64_t> sequence{1};
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> pushed{0};
  std::atomic<uint64_t> lookups{0};

  auto drain_once = [&] {
    std::lock_guard<std::mutex> lock(drain_mutex);
    return pipeline.drain([&](std::span<const AllocationEvent> batch) {
      sites.apply(batch, [&](uint32_t slot, SiteIdentity* site) {
        SlotDescription description;
        if (!slots.describe(slot, &description)) return false;
        site->class_serial = 100000 + static_cast<uint32_t>(description.class_key);
        site->trace_serial = 300000 + static_cast<uint32_t>(description.frames[0].method);
        slots.set_trace_serial(slot, site->trace_serial);
        return true;
      });
    });
  };
  std::thread writer([&] {
    while (!stop.load()) {
      if (drain_once() == 0) std::this_thread::yield();
    }
  });
  // A second consumer taking turns, as the report thread does.
  std::thread reporter([&] {
    while (!stop.load()) {
      drain_once();
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  // Heap-walk style readers of the published trace serials.
  std::thread walker([&] {
    while (!stop.load()) {
      uint32_t claimed = slots.claimed();
      for (uint32_t slot = 1; slot <= claimed; ++slot) {
        uint32_t serial = slots.trace_serial(slot);
        if (serial != 0) lookups.fetch_add(1, std::memory_order_relaxed);
        // A slot may be claimed but not yet filled; once describe() says yes, the entry is whole.
        SlotDescription description;
        if (slots.describe(slot, &description) &&
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
        AllocationPipeline::ProducerPtr producer = pipeline.make_producer();
        SequenceBlock block;
        SlotFrame frames[4];
        for (int i = 0; i < kEventsPerThread; ++i) {
          int site = (i * 31 + t * 17 + wave) % kSites;
          for (int f = 0; f < 4; ++f) frames[f] = {uint64_t(site) + 1 + f, f};
          uint64_t class_key = uint64_t(site % 7) + 1;
          std::span<const SlotFrame> stack(frames, 4);
          SlotClaim claim = slots.find_or_claim(SiteSlotTable::key_of(class_key, 0, stack), class_key, 0, stack,
                                                [] { return uint64_t{0}; });
          if (claim.slot == 0) continue;
          uint64_t tag = make_allocation_tag(claim.slot, block.next(sequence));
          if (allocation_tag_slot(tag) != claim.slot) std::abort();
          pipeline.push(*producer, {claim.slot, 0, 16});
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
  drain_once();

  SiteTotals totals;
  std::vector<SiteRow> rows = sites.report_rows(0.0, &totals);
  uint64_t expected = uint64_t{kWaves} * kThreadsPerWave * kEventsPerThread;
  int failures = 0;
  if (pushed.load() != expected || totals.alloc_objects != expected || totals.alloc_bytes != expected * 16) {
    std::fprintf(stderr, "counts: pushed %llu, counted %llu objects / %llu bytes, expected %llu\n",
                 (unsigned long long)pushed.load(), (unsigned long long)totals.alloc_objects,
                 (unsigned long long)totals.alloc_bytes, (unsigned long long)expected);
    ++failures;
  }
  if (slots.claimed() != kSites || sites.site_count() != kSites || slots.dropped() != 0) {
    std::fprintf(stderr, "sites: %u slots, %zu rows, %llu dropped, expected %d\n", slots.claimed(),
                 sites.site_count(), (unsigned long long)slots.dropped(), kSites);
    ++failures;
  }
  PipelineStats stats = pipeline.stats();
  std::printf("allocation pipeline stress: %llu events, %d sites, deepest queue %llu, %llu waits, "
              "%llu forced growths, %llu serial lookups\n",
              (unsigned long long)expected, kSites, (unsigned long long)stats.deepest_queue,
              (unsigned long long)stats.producer_waits, (unsigned long long)stats.forced_growth,
              (unsigned long long)lookups.load());
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace fasthprof

int main() { return fasthprof::run(); }
