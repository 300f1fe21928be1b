// Heap-dump encoding speed: a realistic mix of INSTANCE DUMP, OBJECT ARRAY DUMP and PRIMITIVE ARRAY
// DUMP sub-records through HeapDumpWriter into a memory OutputStream. Goal: >= 1 GB/s. The
// "streamed" run writes the object arrays element by element, as the heap walk does (every fourth
// element null), instead of from a whole array.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "heap_dump/heap_dump_writer.h"
#include "records/record_writer.h"
#include "sink/output_stream.h"

namespace fasthprof {
namespace {

// Keeps the bytes in one reused buffer, as a sink's staging buffer would.
class MemoryStream : public OutputStream {
 public:
  void write(const void* data, size_t size) override {
    if (size_ + size > bytes_.size()) bytes_.resize((size_ + size) * 2);
    std::memcpy(bytes_.data() + size_, data, size);
    size_ += size;
  }
  void reset() { size_ = 0; }
  size_t size() const { return size_; }

 private:
  std::vector<uint8_t> bytes_;
  size_t size_ = 0;
};

enum class Kind : uint8_t { kInstance, kObjectArray, kCharArray, kByteArray, kIntArray, kLongArray };

struct Object {
  Kind kind;
  uint32_t length;  // elements for arrays, value bytes for instances
};

// Roughly the shape of a Java heap: most records are small instances (Strings, nodes, boxes), then
// char/byte arrays (string contents), object arrays (collections) and a few larger primitive arrays.
std::vector<Object> make_heap(size_t count) {
  std::mt19937 random(42);
  std::vector<Object> heap(count);
  auto below = [&random](uint32_t bound) { return static_cast<uint32_t>(random() % bound); };
  for (Object& object : heap) {
    uint32_t pick = below(100);
    if (pick < 55) {
      object = {Kind::kInstance, 8u * (1 + below(5))};
    } else if (pick < 70) {
      object = {Kind::kCharArray, 4 + below(60)};
    } else if (pick < 82) {
      object = {Kind::kByteArray, 8 + below(120)};
    } else if (pick < 95) {
      object = {Kind::kObjectArray, below(32)};
    } else if (pick < 99) {
      object = {Kind::kIntArray, 16 + below(256)};
    } else {
      object = {Kind::kLongArray, 64 + below(4096)};
    }
  }
  return heap;
}

// Encodes every object of heap as one dump; returns the bytes the stream received.
size_t encode_heap(const std::vector<Object>& heap, const std::vector<uint64_t>& source,
                   MemoryStream& stream, RecordWriter& records, HeapDumpWriter& dump,
                   bool streamed) {
  stream.reset();
  uint64_t id = 0x500000000ull;
  for (const Object& object : heap) {
    ++id;
    const uint64_t* elements = source.data() + (id & 4095);
    switch (object.kind) {
      case Kind::kInstance: {
        EncodeCursor values = dump.begin_instance(id, 300000, 0x400000001ull, object.length);
        for (uint32_t i = 0; i < object.length; i += 8) values.u8(elements[i / 8]);
        dump.end_instance(values);
        break;
      }
      case Kind::kObjectArray:
        if (!streamed) {
          dump.object_array_dump(id, 300000, 0x400000002ull,
                                 std::span<const uint64_t>(elements, object.length));
          break;
        }
        dump.begin_object_array(id, 300000, 0x400000002ull, object.length);
        for (uint32_t i = 0; i < object.length; ++i) {
          if ((i & 3) != 3) dump.object_array_element(i, elements[i]);
        }
        dump.end_object_array();
        break;
      case Kind::kCharArray:
        dump.primitive_array_dump(id, 300000, BasicType::kChar, elements, object.length);
        break;
      case Kind::kByteArray:
        dump.primitive_array_dump(id, 300000, BasicType::kByte, elements, object.length);
        break;
      case Kind::kIntArray:
        dump.primitive_array_dump(id, 300000, BasicType::kInt, elements, object.length);
        break;
      case Kind::kLongArray:
        dump.primitive_array_dump(id, 300000, BasicType::kLong, elements, object.length);
        break;
    }
  }
  dump.finish();
  records.flush();
  return stream.size();
}

// The best rate each variant measured, printed as the figure when the program ends.
struct Figure {
  double best_gigabytes_per_second[2] = {0, 0};  // whole object arrays, streamed ones
  ~Figure() {
    std::printf("record encoding: %.2f GB/s (goal >= 1 GB/s); object arrays streamed: %.2f GB/s\n",
                best_gigabytes_per_second[0], best_gigabytes_per_second[1]);
  }
};
Figure g_figure;

void BM_HeapDumpEncoding(benchmark::State& state) {
  bool streamed = state.range(0) != 0;
  std::vector<Object> heap = make_heap(200000);
  std::vector<uint64_t> source(16384);
  for (size_t i = 0; i < source.size(); ++i) source[i] = 0x0000000500000000ull + i * 977;
  MemoryStream stream;
  RecordWriter records(stream, 0, [] { return uint64_t{0}; });
  HeapDumpWriter dump(records);
  encode_heap(heap, source, stream, records, dump, streamed);  // warm the buffers
  uint64_t bytes = 0;
  auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    bytes += encode_heap(heap, source, stream, records, dump, streamed);
    benchmark::ClobberMemory();
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (bytes > 0 && seconds > 0.05) {
    double& best = g_figure.best_gigabytes_per_second[streamed ? 1 : 0];
    best = std::max(best, static_cast<double>(bytes) / seconds / 1e9);
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.counters["records"] =
      benchmark::Counter(static_cast<double>(heap.size()) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
}

BENCHMARK(BM_HeapDumpEncoding)->ArgName("streamed")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace fasthprof

BENCHMARK_MAIN();
