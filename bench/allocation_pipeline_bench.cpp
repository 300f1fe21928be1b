// docs/performance.md §2, the agent's own share of exact allocation tracking, without a JVM: per event
// the callback side (XXH3 key of class + 4 frames, slot lookup in the lock-free SiteSlotTable, tag
// packing, push into the thread's producer) and the writer side (bulk drain, site update; a new
// site also interns its trace in the TraceTable).
//
//   BM_OneCore          producer and writer take turns on one thread: ns per event (goal <= 50)
//   BM_Producers/N      N producer threads + 1 writer thread: aggregate events per second
//
// The last line printed is the headline: 8 producers' throughput as a share of 2 producers' (goal
// >= 90 % on this 2-core machine).
#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <thread>
#include <vector>

#include "queues/allocation_recorder.h"
#include "registries/trace_table.h"

namespace fasthprof {
namespace {

constexpr int kSites = 64;
constexpr int kDepth = 4;

struct Sites {
  SlotFrame frames[kSites][kDepth];
  Sites() {
    for (int site = 0; site < kSites; ++site) {
      for (int f = 0; f < kDepth; ++f) frames[site][f] = {uint64_t(0x7f0000001000) + site * 64 + f * 8, f * 5};
    }
  }
};
const Sites sites;

// What one allocation costs the callback (AllocationRecorder::record, as the agent calls it) once
// the VM has given it the stack and the class tag.
inline void produce(AllocationRecorder& recorder, RecorderThread& thread, int site) {
  std::span<const SlotFrame> frames(sites.frames[site], kDepth);
  uint64_t class_key = 0x0301000000000000ULL + uint64_t(site % 8);
  recorder.record(thread, class_key, 0, frames, 24, [] { return uint64_t{0}; },
                  [](uint64_t tag) { benchmark::DoNotOptimize(tag); });
}

// The agent's writer: drain, and intern the trace of each new site.
struct Writer {
  AllocationRecorder& recorder;
  TraceTable traces;
  explicit Writer(AllocationRecorder& r) : recorder(r) {}
  size_t drain() {
    return recorder.drain([&](uint32_t, const SlotDescription& description, SiteIdentity* site) {
      uint64_t ids[kDepth];
      for (size_t i = 0; i < description.frames.size(); ++i) ids[i] = description.frames[i].method;
      site->class_serial = 100000 + static_cast<uint32_t>(description.class_key & 0xff);
      site->trace_serial = traces.intern(0, std::span<const uint64_t>(ids, description.frames.size())).serial;
      return true;
    });
  }
};

void BM_OneCore(benchmark::State& state) {
  AllocationRecorder recorder(SiteSlotTableOptions{}, 0);
  Writer writer(recorder);
  RecorderThread thread;
  constexpr int kBatch = 4096;
  int site = 0;
  for (auto _ : state) {
    for (int i = 0; i < kBatch; ++i) {
      produce(recorder, thread, site);
      site = site + 1 == kSites ? 0 : site + 1;
    }
    writer.drain();
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
  state.counters["ns_per_event"] =
      benchmark::Counter(double(state.iterations() * kBatch), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  if (recorder.sites().site_count() != kSites) state.SkipWithError("wrong number of sites");
}
BENCHMARK(BM_OneCore);

std::map<int, double> throughput_by_producers;

void BM_Producers(benchmark::State& state) {
  const int producers = static_cast<int>(state.range(0));
  const uint64_t per_producer = 4'000'000 / uint64_t(producers);
  AllocationRecorder recorder(SiteSlotTableOptions{}, 0);
  Writer writer(recorder);
  uint64_t events = 0;
  double seconds = 0;
  for (auto _ : state) {
    std::atomic<bool> done{false};
    auto start = std::chrono::steady_clock::now();
    std::thread consumer([&] {
      while (!done.load(std::memory_order_acquire)) {
        // As the agent's writer: a short drain means the producers are ahead of nothing; let a
        // batch build up instead of contending for every few events.
        if (writer.drain() < 4096) std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
      writer.drain();
    });
    std::vector<std::thread> threads;
    for (int p = 0; p < producers; ++p) {
      threads.emplace_back([&, p] {
        RecorderThread thread;
        int site = p % kSites;
        for (uint64_t i = 0; i < per_producer; ++i) {
          produce(recorder, thread, site);
          site = site + 1 == kSites ? 0 : site + 1;
        }
      });
    }
    for (auto& thread : threads) thread.join();
    done.store(true, std::memory_order_release);
    consumer.join();
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    state.SetIterationTime(elapsed);
    seconds += elapsed;
    events += per_producer * producers;
  }
  SiteTotals totals;
  recorder.sites().report_rows(0, &totals);
  if (totals.alloc_objects != events) state.SkipWithError("events were lost");
  state.SetItemsProcessed(int64_t(events));
  throughput_by_producers[producers] = double(events) / seconds;
}
BENCHMARK(BM_Producers)->Arg(1)->Arg(2)->Arg(8)->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace fasthprof

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  auto& figures = fasthprof::throughput_by_producers;
  if (figures.count(2) && figures.count(8)) {
    std::printf("allocation pipeline: 1 producer %.1f M events/s, 2 producers %.1f M/s, 8 producers %.1f M/s\n",
                figures[1] / 1e6, figures[2] / 1e6, figures[8] / 1e6);
    std::printf("8 producers keep %.0f %% of the throughput of 2 (goal >= 90 %%)\n", 100.0 * figures[8] / figures[2]);
  }
  return 0;
}
