// Trace interning on the writer thread (docs/performance.md §5): a depth-4 trace that is already in the
// table (hit), and one that is not (miss + insert, table growth included). After Google Benchmark's
// own report it prints one headline per figure, then the time of every size measured. The frame and
// name tables the writer interns through before a trace are measured the same way (hit, miss).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "registries/frame_registry.h"
#include "registries/name_table.h"
#include "registries/trace_table.h"

namespace fasthprof {
namespace {

constexpr size_t kDepth = 4;

// Frame IDs shaped like FrameRegistry's (space 0x02, small indices), distinct per trace.
void make_trace(uint64_t n, uint64_t* frames) {
  constexpr uint64_t kFrameSpace = uint64_t{0x02} << 56;
  frames[0] = kFrameSpace | (n * 4 + 1);
  frames[1] = kFrameSpace | (n % 1000 + 1);
  frames[2] = kFrameSpace | (n % 50 + 1);
  frames[3] = kFrameSpace | 7;
}

// A working set of traces interned again and again, as a busy allocation site mix does.
void BM_InternHit(benchmark::State& state) {
  const size_t count = static_cast<size_t>(state.range(0));
  TraceTable table;
  std::vector<uint64_t> frames(count * kDepth);
  for (size_t i = 0; i < count; ++i) {
    make_trace(i, &frames[i * kDepth]);
    table.intern(0, std::span<const uint64_t>(&frames[i * kDepth], kDepth));
  }
  size_t i = 0;
  for (auto _ : state) {
    TraceRef ref = table.intern(0, std::span<const uint64_t>(&frames[i * kDepth], kDepth));
    benchmark::DoNotOptimize(ref);
    if (++i == count) i = 0;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_InternHit)->Arg(1024)->Arg(65536);

// Every iteration interns a trace never seen before. The table starts at its default size and is
// replaced (untimed) every `batch` traces, so growth is measured but memory stays bounded.
void BM_InternMissInsert(benchmark::State& state) {
  const uint64_t batch = static_cast<uint64_t>(state.range(0));
  auto table = std::make_unique<TraceTable>();
  uint64_t n = 0;
  uint64_t frames[kDepth];
  for (auto _ : state) {
    make_trace(n, frames);
    TraceRef ref = table->intern(0, frames);
    benchmark::DoNotOptimize(ref);
    if (++n == batch) {
      state.PauseTiming();
      table = std::make_unique<TraceTable>();
      n = 0;
      state.ResumeTiming();
    }
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_InternMissInsert)->Arg(1 << 14)->Arg(1 << 16)->Arg(1 << 18);

// Frames of a working set of methods, interned again and again (the step before every trace).
void BM_FrameInternHit(benchmark::State& state) {
  const uint64_t count = static_cast<uint64_t>(state.range(0));
  FrameRegistry frames(nullptr);
  for (uint64_t i = 0; i < count; ++i) frames.intern(i / 8 + 1, static_cast<int64_t>(i % 8));
  uint64_t i = 0;
  for (auto _ : state) {
    FrameRef ref = frames.intern(i / 8 + 1, static_cast<int64_t>(i % 8));
    benchmark::DoNotOptimize(ref);
    if (++i == count) i = 0;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_FrameInternHit)->Arg(1024)->Arg(65536);

// New frames, eight locations per method (so methods are new one time in eight); the registry is
// replaced (untimed) every `batch` frames.
void BM_FrameInternMiss(benchmark::State& state) {
  const uint64_t batch = static_cast<uint64_t>(state.range(0));
  auto frames = std::make_unique<FrameRegistry>(nullptr);
  uint64_t n = 0;
  for (auto _ : state) {
    FrameRef ref = frames->intern(n / 8 + 1, static_cast<int64_t>(n % 8));
    benchmark::DoNotOptimize(ref);
    if (++n == batch) {
      state.PauseTiming();
      frames = std::make_unique<FrameRegistry>(nullptr);
      n = 0;
      state.ResumeTiming();
    }
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_FrameInternMiss)->Arg(1 << 16);

std::vector<std::string> make_names(size_t count) {
  std::vector<std::string> names;
  names.reserve(count);
  for (size_t i = 0; i < count; ++i) names.push_back("com/example/service/Handler" + std::to_string(i * 7919));
  return names;
}

// Names (class, method, signature) interned again, as every FRAME record's names are.
void BM_NameInternHit(benchmark::State& state) {
  std::vector<std::string> names = make_names(static_cast<size_t>(state.range(0)));
  NameTable table;
  for (const std::string& name : names) table.intern(name);
  size_t i = 0;
  for (auto _ : state) {
    NameRef ref = table.intern(names[i]);
    benchmark::DoNotOptimize(ref);
    if (++i == names.size()) i = 0;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_NameInternHit)->Arg(1024)->Arg(65536);

// Names never seen before; the table is reset (untimed) after each pass over the list.
void BM_NameInternMiss(benchmark::State& state) {
  std::vector<std::string> names = make_names(static_cast<size_t>(state.range(0)));
  NameTable table;
  size_t i = 0;
  for (auto _ : state) {
    NameRef ref = table.intern(names[i]);
    benchmark::DoNotOptimize(ref);
    if (++i == names.size()) {
      state.PauseTiming();
      table.reset();
      i = 0;
      state.ResumeTiming();
    }
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_NameInternMiss)->Arg(1 << 16);

// Keeps Google Benchmark's console output and records each run's time per iteration. CPU time is
// the headline: on a shared two-core machine the wall time also counts the time spent descheduled.
class FigureReporter : public benchmark::ConsoleReporter {
 public:
  struct Figure {
    double real_ns;
    double cpu_ns;
  };
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.run_type == Run::RT_Iteration && !run.error_occurred && run.iterations > 0) {
        double iterations = static_cast<double>(run.iterations);
        figures.emplace_back(run.benchmark_name(), Figure{run.real_accumulated_time * 1e9 / iterations,
                                                          run.cpu_accumulated_time * 1e9 / iterations});
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }
  std::vector<std::pair<std::string, Figure>> figures;  // in run order
};

// The headline line for one representative run, then every size measured, so that nothing is hidden.
void print_figure(const FigureReporter& reporter, const std::string& function, const std::string& headline,
                  const char* label, int goal) {
  for (const auto& [name, figure] : reporter.figures) {
    if (name == headline) std::printf("%s: %.1f ns (goal <= %d ns)\n", label, figure.cpu_ns, goal);
  }
  for (const auto& [name, figure] : reporter.figures) {
    if (name.rfind(function + "/", 0) != 0) continue;
    std::printf("  %s: %.1f ns cpu, %.1f ns wall\n", name.c_str(), figure.cpu_ns, figure.real_ns);
  }
}

}  // namespace
}  // namespace fasthprof

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  fasthprof::FigureReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  std::fflush(stdout);
  // Headlines: a hot working set of 1024 traces, and a table that grows to 65536 traces (a large
  // application's distinct allocation sites). The larger sizes show the cost of a table beyond L2.
  fasthprof::print_figure(reporter, "BM_InternHit", "BM_InternHit/1024", "trace interning hit", 20);
  fasthprof::print_figure(reporter, "BM_InternMissInsert", "BM_InternMissInsert/65536",
                          "trace interning miss+insert", 100);
  return 0;
}
