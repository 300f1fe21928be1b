// The file sink against the disk (docs/performance.md §5: the sink reaches >= 90 % of the disk's
// buffered throughput). In one run, alternating, each round writes the same amount
//   (a) with plain write() calls of 1 MiB buffers: the disk's buffered throughput, and
//   (b) through AsyncSink + FileBackend, fed in 64 KiB producer chunks,
// and the medians are compared. Both clocks stop after close(), so (b) includes draining.
//
// Environment: FASTHPROF_BENCH_BYTES (default 1 GiB), FASTHPROF_BENCH_ROUNDS (default 5),
// FASTHPROF_BENCH_BUFFER and FASTHPROF_BENCH_BUFFERS (AsyncSink buffer size and count, default
// AsyncSinkOptions'), FASTHPROF_BENCH_DIR
// (default: the working directory, which is the build dir under `meson test --benchmark`),
// FASTHPROF_BENCH_JSON (default sink_throughput.json; Google Benchmark's JSON layout).
// Last line: the headline ratio.
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "sink/async_sink.h"
#include "sink/file_backend.h"

namespace {

constexpr size_t kDirectBuffer = size_t{1} << 20;
constexpr size_t kProducerChunk = size_t{64} << 10;

uint64_t env_number(const char* name, uint64_t fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text, &end, 10);
  if (*end != '\0' || value == 0) {
    std::fprintf(stderr, "%s=%s is not a positive number\n", name, text);
    std::exit(2);
  }
  return value;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// User plus system CPU seconds of the whole process (io thread included).
double cpu_seconds() {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec +
         (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

// (a): the same bytes straight to the file, 1 MiB per write(). Returns seconds, or < 0 on error.
double run_direct(const std::string& path, const std::vector<uint8_t>& source, uint64_t total) {
  const auto start = std::chrono::steady_clock::now();
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return -1;
  uint64_t done = 0;
  while (done < total) {
    const size_t size = static_cast<size_t>(std::min<uint64_t>(kDirectBuffer, total - done));
    size_t written = 0;
    while (written < size) {
      const ssize_t n = write(fd, source.data() + written, size - written);
      if (n <= 0) {
        close(fd);
        return -1;
      }
      written += static_cast<size_t>(n);
    }
    done += size;
  }
  if (close(fd) != 0) return -1;
  return seconds_since(start);
}

// (b): the producer copies 64 KiB chunks into the sink; the io thread writes them.
double run_sink(const std::string& path, const std::vector<uint8_t>& source, uint64_t total,
                const fasthprof::AsyncSinkOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  std::string error;
  auto backend = fasthprof::FileBackend::open(path, &error);
  if (backend == nullptr) return -1;
  auto sink = fasthprof::AsyncSink::create(std::move(backend), options, &error);
  if (sink == nullptr) return -1;
  uint64_t done = 0;
  size_t position = 0;
  while (done < total) {
    const size_t size = static_cast<size_t>(std::min<uint64_t>(kProducerChunk, total - done));
    sink->write(source.data() + position, size);
    position = (position + size) % source.size();
    done += size;
  }
  sink->close();
  if (sink->failed()) return -1;
  return seconds_since(start);
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

void write_json(const std::string& path, uint64_t total, const std::vector<double>& direct,
                const std::vector<double>& sink) {
  FILE* out = std::fopen(path.c_str(), "w");
  if (out == nullptr) {
    std::fprintf(stderr, "cannot write %s: %s\n", path.c_str(), std::strerror(errno));
    return;
  }
  std::fprintf(out, "{\n  \"context\": {\"executable\": \"bench_sink\", \"bytes\": %llu},\n"
                    "  \"benchmarks\": [\n",
               static_cast<unsigned long long>(total));
  const struct {
    const char* name;
    const std::vector<double>* seconds;
  } series[] = {{"direct_write_1MiB", &direct}, {"async_sink_64KiB_chunks", &sink}};
  bool first = true;
  for (const auto& entry : series) {
    for (size_t i = 0; i < entry.seconds->size(); ++i) {
      const double s = (*entry.seconds)[i];
      std::fprintf(out,
                   "%s    {\"name\": \"%s\", \"run_name\": \"%s\", \"run_type\": \"iteration\", "
                   "\"repetitions\": %zu, \"repetition_index\": %zu, \"iterations\": 1, "
                   "\"real_time\": %.6f, \"time_unit\": \"s\", \"bytes_per_second\": %.0f}",
                   first ? "" : ",\n", entry.name, entry.name, entry.seconds->size(), i, s,
                   static_cast<double>(total) / s);
      first = false;
    }
  }
  std::fprintf(out, "\n  ]\n}\n");
  std::fclose(out);
}

}  // namespace

int main() {
  const uint64_t total = env_number("FASTHPROF_BENCH_BYTES", uint64_t{1} << 30);
  const uint64_t rounds = env_number("FASTHPROF_BENCH_ROUNDS", 5);
  fasthprof::AsyncSinkOptions options;
  options.buffer_size =
      static_cast<size_t>(env_number("FASTHPROF_BENCH_BUFFER", options.buffer_size));
  options.buffer_count =
      static_cast<size_t>(env_number("FASTHPROF_BENCH_BUFFERS", options.buffer_count));
  const char* dir_env = std::getenv("FASTHPROF_BENCH_DIR");
  const std::string dir = dir_env != nullptr && *dir_env != '\0' ? dir_env : ".";
  const char* json_env = std::getenv("FASTHPROF_BENCH_JSON");
  const std::string json =
      json_env != nullptr && *json_env != '\0' ? json_env : "sink_throughput.json";
  const std::string direct_path = dir + "/sink_bench_direct.tmp." + std::to_string(getpid());
  const std::string sink_path = dir + "/sink_bench_sink.tmp." + std::to_string(getpid());

  std::vector<uint8_t> source(kDirectBuffer);
  uint32_t x = 12345;
  for (uint8_t& b : source) {
    x = x * 1664525u + 1013904223u;
    b = static_cast<uint8_t>(x >> 24);
  }

  std::printf("writing %.2f GiB per run, %llu rounds, sink buffers %zu x %zu KiB, in %s\n",
              static_cast<double>(total) / (1 << 30), static_cast<unsigned long long>(rounds),
              options.buffer_count, options.buffer_size >> 10, dir.c_str());
  std::vector<double> direct_seconds;
  std::vector<double> sink_seconds;
  std::vector<double> direct_cpu;
  std::vector<double> sink_cpu;
  for (uint64_t round = 0; round < rounds; ++round) {
    // Alternate which goes first, so that neither always meets the other's writeback.
    double direct = 0;
    double sink = 0;
    for (int step = 0; step < 2; ++step) {
      const double cpu_before = cpu_seconds();
      if ((step == 0) == (round % 2 == 0)) {
        direct = run_direct(direct_path, source, total);
        unlink(direct_path.c_str());
        direct_cpu.push_back(cpu_seconds() - cpu_before);
      } else {
        sink = run_sink(sink_path, source, total, options);
        unlink(sink_path.c_str());
        sink_cpu.push_back(cpu_seconds() - cpu_before);
      }
    }
    if (direct < 0 || sink < 0) {
      std::fprintf(stderr, "round %llu: writing to %s failed: %s\n",
                   static_cast<unsigned long long>(round), dir.c_str(), std::strerror(errno));
      return 1;
    }
    direct_seconds.push_back(direct);
    sink_seconds.push_back(sink);
    std::printf("round %llu: direct write() %.3f GB/s, sink %.3f GB/s\n",
                static_cast<unsigned long long>(round), total / direct / 1e9, total / sink / 1e9);
  }
  write_json(json, total, direct_seconds, sink_seconds);
  // On a machine shared with other work the two threads cannot overlap; CPU time per GB shows
  // what the sink costs on top of write() whatever the load.
  std::printf("CPU per GB (unlink included): direct write() %.3f s, sink %.3f s\n",
              median(direct_cpu) / (total / 1e9), median(sink_cpu) / (total / 1e9));
  const double direct_rate = total / median(direct_seconds) / 1e9;
  const double sink_rate = total / median(sink_seconds) / 1e9;
  std::printf("sink throughput: %.2f GB/s vs direct write() %.2f GB/s = %.0f %% (goal >= 90 %%)\n",
              sink_rate, direct_rate, 100.0 * sink_rate / direct_rate);
  return 0;
}
