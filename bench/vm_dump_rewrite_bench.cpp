// VmDumpRewriter speed (issue 14): on JDK 17 the rewriter reads the dump from a pipe while HotSpot's
// VM thread writes it inside a safepoint, so it must keep well above 1 GB/s on one core. The input
// is a synthetic JDK dump shaped like a real one: 40 000 symbols, 800 classes with their CLASS
// DUMPs, thread stacks and roots, then 1 MiB segments of a Java heap's mix of objects (small
// instances most, byte arrays, object arrays, a few large primitive arrays: about 90 bytes a
// sub-record, as in a JDK 17 dump of a small program).
//
//   Copy          the floor: the same bytes read into a 1 MiB buffer (as from a pipe) and handed to
//                 the output stream unchanged (what pasting the dump as is would cost)
//   Rewrite       the same, through feed_in_place (a first dump: every symbol is new)
//   RewriteAgain  a later dump of the same VM: the numbering has seen every symbol (all dropped)
//   RewriteCopying  through feed(const ...), which copies into its own scratch buffer first
//
// Environment: FASTHPROF_BENCH_BYTES (heap part of the dump, default 256 MiB), FASTHPROF_BENCH_HPROF
// (a JDK dump to use instead, e.g. one `jcmd <pid> GC.heap_dump` wrote).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "base/hprof_format.h"
#include "sink/output_stream.h"
#include "vm_dump/vm_dump_rewriter.h"

namespace fasthprof {
namespace {

// Takes bytes into one reused 1 MiB buffer, as the sink's staging buffer would.
class StagingStream final : public OutputStream {
 public:
  StagingStream() : buffer_(1 << 20) {}
  void write(const void* data, size_t size) override {
    const auto* bytes = static_cast<const uint8_t*>(data);
    while (size > 0) {
      if (used_ == buffer_.size()) used_ = 0;
      size_t n = std::min(size, buffer_.size() - used_);
      std::memcpy(buffer_.data() + used_, bytes, n);
      used_ += n;
      bytes += n;
      size -= n;
      total_ += n;
    }
  }
  uint64_t total() const { return total_; }

 private:
  std::vector<uint8_t> buffer_;
  size_t used_ = 0;
  uint64_t total_ = 0;
};

struct Builder {
  std::vector<uint8_t> data;
  void u1(uint64_t v) { data.push_back(static_cast<uint8_t>(v)); }
  void u2(uint64_t v) { u1(v >> 8); u1(v); }
  void u4(uint64_t v) { u2(v >> 16); u2(v); }
  void u8(uint64_t v) { u4(v >> 32); u4(v); }
  void fill(size_t n, uint8_t byte) { data.insert(data.end(), n, byte); }
  size_t record(RecordTag tag, uint32_t length) {
    u1(static_cast<uint8_t>(tag));
    u4(0);
    u4(length);
    return data.size();
  }
};

std::vector<uint8_t> make_dump(uint64_t heap_bytes) {
  std::mt19937 random(14);
  auto below = [&random](uint32_t bound) { return static_cast<uint32_t>(random() % bound); };
  Builder b;
  for (const char* c = kBinaryHeaderVersion; *c; ++c) b.u1(*c);
  b.u1(0);
  b.u4(8);
  b.u8(1700000000000ULL);
  const uint64_t symbol_base = 0x7f3a00000000ULL;
  constexpr uint32_t kSymbols = 40000;
  for (uint32_t i = 0; i < kSymbols; ++i) {
    std::string text = "java/util/concurrent/Symbol" + std::to_string(i * 7919u);
    b.record(RecordTag::kUtf8, 8 + text.size());
    b.u8(symbol_base + i * 48);
    b.data.insert(b.data.end(), text.begin(), text.end());
  }
  constexpr uint32_t kClasses = 800;
  const uint64_t class_base = 0x7ff000000ULL;
  for (uint32_t i = 0; i < kClasses; ++i) {
    b.record(RecordTag::kLoadClass, 24);
    b.u4(1 + i);
    b.u8(class_base + i * 0x80);
    b.u4(1);
    b.u8(symbol_base + i * 48);
  }
  b.record(RecordTag::kStackTrace, 12);
  b.u4(1);
  b.u4(0);
  b.u4(0);
  constexpr uint32_t kThreads = 12, kDepth = 20;
  uint32_t frame = 0;
  for (uint32_t t = 0; t < kThreads; ++t) {
    for (uint32_t f = 0; f < kDepth; ++f) {
      b.record(RecordTag::kStackFrame, 40);
      b.u8(++frame);
      b.u8(symbol_base + below(kSymbols) * 48);
      b.u8(symbol_base + below(kSymbols) * 48);
      b.u8(symbol_base + below(kSymbols) * 48);
      b.u4(1 + below(kClasses));
      b.u4(below(500));
    }
    b.record(RecordTag::kStackTrace, 12 + 8 * kDepth);
    b.u4(2 + t);
    b.u4(1 + t);
    b.u4(kDepth);
    for (uint32_t f = 0; f < kDepth; ++f) b.u8(frame - kDepth + 1 + f);
  }
  // Segments: filled to about 1 MiB each, lengths patched when closed.
  size_t segment_at = 0;
  auto open_segment = [&] { segment_at = b.record(RecordTag::kHeapDumpSegment, 0); };
  auto close_segment = [&] {
    uint32_t length = static_cast<uint32_t>(b.data.size() - segment_at);
    for (int i = 0; i < 4; ++i) b.data[segment_at - 4 + i] = static_cast<uint8_t>(length >> (24 - 8 * i));
  };
  open_segment();
  for (uint32_t i = 0; i < kClasses; ++i) {
    b.u1(0x20);
    b.u8(class_base + i * 0x80);
    b.u4(1);
    b.u8(i == 0 ? 0 : class_base);
    for (int k = 0; k < 5; ++k) b.u8(0);
    b.u4(24);
    b.u2(0);
    uint32_t statics = below(4);
    b.u2(statics);
    for (uint32_t s = 0; s < statics; ++s) {
      b.u8(symbol_base + below(kSymbols) * 48);
      b.u1(10);
      b.u4(s);
    }
    uint32_t fields = below(6);
    b.u2(fields);
    for (uint32_t f = 0; f < fields; ++f) {
      b.u8(symbol_base + below(kSymbols) * 48);
      b.u1(f % 2 ? 2 : 10);
    }
  }
  for (uint32_t t = 0; t < kThreads; ++t) {
    b.u1(0x08);
    b.u8(0x600000000ULL + t * 64);
    b.u4(1 + t);
    b.u4(2 + t);
    for (uint32_t f = 0; f < 6; ++f) {
      b.u1(0x03);
      b.u8(0x600010000ULL + f * 64);
      b.u4(1 + t);
      b.u4(f);
    }
  }
  uint64_t object = 0x600100000ULL;
  const size_t heap_start = b.data.size();
  while (b.data.size() - heap_start < heap_bytes) {
    if (b.data.size() - segment_at > (1u << 20)) {
      close_segment();
      open_segment();
    }
    object += 32;
    uint32_t pick = below(100);
    if (pick < 60) {  // instances: 8..40 bytes of fields
      uint32_t bytes = 8 * (1 + below(5));
      b.u1(0x21);
      b.u8(object);
      b.u4(1);
      b.u8(class_base + below(kClasses) * 0x80);
      b.u4(bytes);
      b.fill(bytes, 0x11);
    } else if (pick < 82) {  // byte arrays (string contents)
      uint32_t length = 8 + below(120);
      b.u1(0x23);
      b.u8(object);
      b.u4(1);
      b.u4(length);
      b.u1(8);
      b.fill(length, 'a');
    } else if (pick < 95) {  // object arrays
      uint32_t length = below(32);
      b.u1(0x22);
      b.u8(object);
      b.u4(1);
      b.u4(length);
      b.u8(class_base);
      b.fill(8u * length, 0x06);
    } else if (pick < 99 || below(10) != 0) {
      uint32_t length = 16 + below(256);
      b.u1(0x23);
      b.u8(object);
      b.u4(1);
      b.u4(length);
      b.u1(10);
      b.fill(4u * length, 0);
    } else {
      uint32_t length = 64 + below(4096);
      b.u1(0x23);
      b.u8(object);
      b.u4(1);
      b.u4(length);
      b.u1(11);
      b.fill(8u * length, 0);
    }
  }
  close_segment();
  b.record(RecordTag::kHeapDumpEnd, 0);
  return b.data;
}

const std::vector<uint8_t>& dump() {
  static const std::vector<uint8_t> bytes = [] {
    if (const char* path = std::getenv("FASTHPROF_BENCH_HPROF")) {
      std::vector<uint8_t> file;
      if (FILE* in = std::fopen(path, "rb")) {
        uint8_t chunk[1 << 16];
        for (size_t n; (n = std::fread(chunk, 1, sizeof(chunk), in)) > 0;) file.insert(file.end(), chunk, chunk + n);
        std::fclose(in);
      }
      if (file.empty()) std::fprintf(stderr, "FASTHPROF_BENCH_HPROF=%s: cannot read it\n", path);
      return file;
    }
    uint64_t heap = 256u << 20;
    if (const char* text = std::getenv("FASTHPROF_BENCH_BYTES")) heap = std::strtoull(text, nullptr, 10);
    return make_dump(heap);
  }();
  return bytes;
}

constexpr size_t kReadSize = 1 << 20;  // what one read() from the pipe gives

enum class Mode { kCopy, kRewrite, kRewriteAgain, kRewriteCopying };

void run(benchmark::State& state, Mode mode) {
  const std::vector<uint8_t>& source = dump();
  std::vector<uint8_t> buffer(kReadSize);
  VmDumpNumbering seen;
  if (mode == Mode::kRewriteAgain) {
    StagingStream out;
    VmDumpRewriter first(seen, out);
    std::vector<uint8_t> copy = source;
    if (!first.feed_in_place(copy.data(), copy.size()) || !first.finish()) state.SkipWithError(first.error().c_str());
  }
  VmDumpStats stats;
  for (auto _ : state) {
    StagingStream out;
    std::optional<VmDumpNumbering> fresh;  // a first dump pays for its numbering's table
    if (mode != Mode::kRewriteAgain) fresh.emplace();
    VmDumpRewriter rewriter(mode == Mode::kRewriteAgain ? seen : *fresh, out);
    bool ok = true;
    for (size_t at = 0; at < source.size() && ok; at += kReadSize) {
      size_t n = std::min(kReadSize, source.size() - at);
      switch (mode) {
        case Mode::kCopy:
          std::memcpy(buffer.data(), source.data() + at, n);
          out.write(buffer.data(), n);
          break;
        case Mode::kRewrite:
        case Mode::kRewriteAgain:
          std::memcpy(buffer.data(), source.data() + at, n);
          ok = rewriter.feed_in_place(buffer.data(), n);
          break;
        case Mode::kRewriteCopying: ok = rewriter.feed(source.data() + at, n); break;
      }
    }
    if (mode != Mode::kCopy && (!ok || !rewriter.finish())) {
      state.SkipWithError(rewriter.error().c_str());
      break;
    }
    stats = rewriter.stats();
    benchmark::DoNotOptimize(out.total());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * source.size()));
  state.counters["dump_MiB"] = static_cast<double>(source.size()) / (1 << 20);
  if (mode != Mode::kCopy) {
    state.counters["sub_records"] = static_cast<double>(stats.sub_records);
    state.counters["utf8_dropped"] = static_cast<double>(stats.utf8_dropped);
  }
}

void BM_Copy(benchmark::State& state) { run(state, Mode::kCopy); }
void BM_Rewrite(benchmark::State& state) { run(state, Mode::kRewrite); }
void BM_RewriteAgain(benchmark::State& state) { run(state, Mode::kRewriteAgain); }
void BM_RewriteCopying(benchmark::State& state) { run(state, Mode::kRewriteCopying); }

// Alternating, so that a noisy neighbour hurts both sides alike.
BENCHMARK(BM_Copy)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Rewrite)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_RewriteAgain)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_RewriteCopying)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Copy)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Rewrite)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace fasthprof

BENCHMARK_MAIN();
