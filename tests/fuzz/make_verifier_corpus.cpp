// Writes the seeds of tests/fuzz/corpus/verifier that come from the project's own writers
// (runtime/records/record_writer, runtime/heap_dump/heap_dump_writer, runtime/vm_dump/vm_dump_rewriter): small valid files,
// one per record kind, a heap dump with every sub-record kind and a file with VM dumps, so that
// fuzzing starts from inputs that get past the header and the framing. (The hand-built seeds next
// to them come from tests/unit/verifier_test.cpp.)
//
//   make_verifier_corpus --write FOLDER   writes writer-*.hprof into FOLDER
//   make_verifier_corpus --check FOLDER   fails unless FOLDER holds exactly those bytes
//
// Every seed must pass the verifier in strict mode before it is written or compared. The output is
// deterministic: a fixed header time stamp and record times that count up from 0.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/hprof_format.h"
#include "heap_dump/heap_dump_writer.h"
#include "hprof_verifier.h"
#include "records/record_writer.h"
#include "sink/output_stream.h"
#include "vm_dump/vm_dump_rewriter.h"

namespace fasthprof {
namespace {

constexpr uint64_t kHeaderMillis = 1700000000000ULL;

class BytesStream final : public OutputStream {
 public:
  void write(const void* data, size_t size) override {
    const auto* begin = static_cast<const uint8_t*>(data);
    bytes.insert(bytes.end(), begin, begin + size);
  }
  std::vector<uint8_t> bytes;
};

// IDs and serials the seeds share.
enum : uint64_t {
  kNameObject = 1, kNamePoint, kNamePointArray, kNameX, kNameNext, kNameLabel, kNameFlag, kNameMain, kNameRun,
  kNameSignature, kNameSource, kNameThread, kNameGroup, kNameByte, kNameChar, kNameShort, kNameLong, kNameFloat,
  kNameDouble,
  kObjectClass = 0x1000, kPointClass, kPointArrayClass,
  kPointA = 0x2001, kPointB, kThreadObject,
  kPoints = 0x3001, kStreamedPoints, kFirstPrimitiveArray = 0x3010,
  kFrameMain = 0x7001, kFrameRun,
};
constexpr uint32_t kObjectSerial = kFirstClassSerial;
constexpr uint32_t kPointSerial = kFirstClassSerial + 1;
constexpr uint32_t kPointArraySerial = kFirstClassSerial + 2;
constexpr uint32_t kMainThread = kFirstThreadSerial + 1;
constexpr uint32_t kEmptyTrace = kFirstTraceSerial;
constexpr uint32_t kMainTrace = kFirstTraceSerial + 1;  // two frames, thread main

// One seed file being written.
struct Seed {
  explicit Seed(std::string seed_name) : name(std::move(seed_name)) { records.write_file_header(); }

  std::vector<uint8_t> finish() {
    records.flush();
    return stream.bytes;
  }

  // UTF8s, frames and traces, the classes Object, Point and Point[], and the thread main.
  void prologue() {
    const char* names[] = {"java.lang.Object", "Point", "[LPoint;", "x", "next", "label", "flag", "main", "run",
                           "()V", "Main.java", "main", "main", "b", "c", "s", "j", "f", "d"};
    for (uint64_t i = 0; i < std::size(names); ++i) records.write_utf8(kNameObject + i, names[i]);
    records.write_stack_frame({kFrameMain, kNameMain, kNameSignature, kNameSource, kPointSerial, 12});
    records.write_stack_frame({kFrameRun, kNameRun, kNameSignature, 0, kPointSerial, -1});
    records.write_stack_trace(kEmptyTrace, 0, {});
    const uint64_t frames[] = {kFrameRun, kFrameMain};
    records.write_stack_trace(kMainTrace, kMainThread, frames);
    records.write_load_class(kObjectSerial, kObjectClass, kEmptyTrace, kNameObject);
    records.write_load_class(kPointSerial, kPointClass, kMainTrace, kNamePoint);
    records.write_load_class(kPointArraySerial, kPointArrayClass, kEmptyTrace, kNamePointArray);
    records.write_start_thread({kMainThread, kThreadObject, kMainTrace, kNameThread, kNameGroup, 0});
  }

  std::string name;
  BytesStream stream;
  uint64_t clock = 0;
  RecordWriter records{stream, kHeaderMillis, [this] { return clock++; }};
};

// Every sub-record kind, with references that resolve inside the dump (strict mode): Object, Point
// (x: int, next: Point; a constant pool and a static of every basic type) and Point[].
void write_heap_dump(HeapDumpWriter& dump) {
  dump.root_thread_object(kThreadObject, kMainThread, kMainTrace);
  dump.root_jni_local(kPointA, kMainThread, 0);
  dump.root_java_frame(kPointB, kMainThread, 1);
  dump.root_java_frame(kPoints, kMainThread, -1);
  dump.root_native_stack(kStreamedPoints, kMainThread);
  dump.root_thread_block(kThreadObject, kMainThread);
  dump.root_jni_global(kPointA, 0x9999);
  dump.root_sticky_class(kObjectClass);
  dump.root_monitor_used(kPointB);
  dump.root_unknown(kFirstPrimitiveArray);

  dump.class_dump({.class_id = kObjectClass, .trace_serial = kEmptyTrace});
  const ConstantPoolEntry constants[] = {{1, BasicType::kObject, kObjectClass}, {2, BasicType::kInt, 7}};
  const StaticFieldValue statics[] = {
      {kNameLabel, BasicType::kObject, kPointA}, {kNameFlag, BasicType::kBoolean, 1},
      {kNameByte, BasicType::kByte, 0x7f},       {kNameChar, BasicType::kChar, 'c'},
      {kNameShort, BasicType::kShort, 0x1234},   {kNameX, BasicType::kInt, 42},
      {kNameLong, BasicType::kLong, 1ULL << 40}, {kNameFloat, BasicType::kFloat, 0x3f800000},
      {kNameDouble, BasicType::kDouble, 0x3ff0000000000000ULL}};
  const InstanceFieldDecl fields[] = {{kNameX, BasicType::kInt}, {kNameNext, BasicType::kObject}};
  dump.class_dump({.class_id = kPointClass, .trace_serial = kMainTrace, .super_id = kObjectClass,
                   .instance_size = 4 + kIdSize, .constant_pool = constants, .static_fields = statics,
                   .instance_fields = fields});
  dump.class_dump({.class_id = kPointArrayClass, .trace_serial = kEmptyTrace, .super_id = kObjectClass});

  auto point = [&](uint64_t object_id, uint32_t x, uint64_t next) {
    EncodeCursor values = dump.begin_instance(object_id, kEmptyTrace, kPointClass, 4 + kIdSize);
    values.u4(x);
    values.id(next);
    dump.end_instance(values);
  };
  point(kPointA, 1, kPointB);
  point(kPointB, 2, 0);
  dump.instance_dump(kThreadObject, kMainTrace, kObjectClass, {});
  const uint64_t elements[] = {kPointA, 0, kPointB};
  dump.object_array_dump(kPoints, kEmptyTrace, kPointArrayClass, elements);
  dump.begin_object_array(kStreamedPoints, kMainTrace, kPointArrayClass, 4);
  dump.object_array_element(1, kPointB);
  dump.object_array_element(2, kPoints);  // any object, not only a Point: the format does not say
  dump.end_object_array();

  const uint8_t booleans[] = {1, 0, 1};
  const int8_t bytes[] = {-1, 0, 1};
  const uint16_t chars[] = {'h', 'i'};
  const int16_t shorts[] = {-2, 3};
  const int32_t ints[] = {1, 2, 3};
  const int64_t longs[] = {-1, 1LL << 40};
  const float floats[] = {0.5f};
  const double doubles[] = {0.25, -8};
  uint64_t id = kFirstPrimitiveArray;
  dump.primitive_array_dump(id++, kEmptyTrace, BasicType::kBoolean, booleans, std::size(booleans));
  dump.primitive_array_dump(id++, kEmptyTrace, BasicType::kByte, bytes, std::size(bytes));
  dump.primitive_array_dump(id++, kEmptyTrace, BasicType::kChar, chars, std::size(chars));
  dump.primitive_array_dump(id++, kEmptyTrace, BasicType::kShort, shorts, std::size(shorts));
  dump.primitive_array_dump(id++, kMainTrace, BasicType::kInt, ints, std::size(ints));
  dump.primitive_array_dump(id++, kEmptyTrace, BasicType::kLong, longs, std::size(longs));
  dump.primitive_array_dump(id++, kEmptyTrace, BasicType::kFloat, floats, std::size(floats));
  dump.primitive_array_dump(id++, kEmptyTrace, BasicType::kDouble, doubles, std::size(doubles));
  dump.primitive_array_dump(id++, kEmptyTrace, BasicType::kInt, ints, 0);
}

HeapDumpWriterOptions segments_of(size_t segment_size) {
  HeapDumpWriterOptions options;
  options.segment_size = segment_size;
  options.warn = [](std::string_view text) { std::fprintf(stderr, "make_verifier_corpus: %.*s\n",
                                                          static_cast<int>(text.size()), text.data()); };
  return options;
}

// A heap dump in the shape HotSpot's dumper writes (its own file header, symbol addresses as UTF8
// IDs, mirror addresses as class IDs, class serials that go on counting from dump to dump, LOAD
// CLASS naming the dummy trace 1 written after it, frames 1, 2, ...), for VmDumpRewriter. text
// changes the text of one symbol, as an address reused after class unloading does.
std::vector<uint8_t> jdk_like_dump(uint32_t first_class_serial, uint64_t mirror_base, const char* text) {
  constexpr uint64_t kSymbols = 0x7f1200000000ULL;
  BytesStream stream;
  RecordWriter records(stream, kHeaderMillis, [] { return uint64_t{0}; });
  records.write_file_header();
  const char* names[] = {"java/lang/Object", "Point", "[LPoint;", "x", "main", "()V", "Main.java", text};
  for (uint64_t i = 0; i < std::size(names); ++i) records.write_utf8(kSymbols + 16 * i, names[i]);
  const uint64_t object = mirror_base, point = mirror_base + 0x40, points = mirror_base + 0x80;
  const uint64_t objects = mirror_base + 0x10000;
  records.write_load_class(first_class_serial, object, 1, kSymbols);
  records.write_load_class(first_class_serial + 1, point, 1, kSymbols + 16);
  records.write_load_class(first_class_serial + 2, points, 1, kSymbols + 32);
  records.write_load_class(first_class_serial + 3, points, 1, kSymbols + 32);  // JDK 17: arrays twice
  records.write_stack_trace(1, 0, {});
  records.write_stack_frame({1, kSymbols + 64, kSymbols + 80, kSymbols + 96, first_class_serial + 1, 7});
  records.write_stack_frame({2, kSymbols + 64, kSymbols + 80, 0, first_class_serial + 3, -3});
  const uint64_t frames[] = {1, 2};
  records.write_stack_trace(2, 1, frames);
  HeapDumpWriter dump(records, segments_of(64));
  const InstanceFieldDecl fields[] = {{kSymbols + 48, BasicType::kInt}};
  dump.class_dump({.class_id = point, .trace_serial = 1, .super_id = object, .instance_size = 4,
                   .instance_fields = fields});
  const StaticFieldValue statics[] = {{kSymbols + 112, BasicType::kInt, 5}};
  dump.class_dump({.class_id = object, .trace_serial = 1, .static_fields = statics});
  dump.class_dump({.class_id = points, .trace_serial = 1, .super_id = object});
  dump.root_thread_object(objects, 1, 2);
  dump.root_java_frame(objects + 0x20, 1, 0);
  dump.root_jni_local(objects + 0x40, 1, 1);
  dump.root_sticky_class(object);
  dump.instance_dump(objects, 1, object, {});
  EncodeCursor values = dump.begin_instance(objects + 0x20, 1, point, 4);
  values.u4(11);
  dump.end_instance(values);
  const uint64_t elements[] = {objects + 0x20, 0, 0x55500000};  // the JDK leaves some objects out
  dump.object_array_dump(objects + 0x40, 1, points, elements);
  const int32_t ints[] = {1, 2, 3};
  dump.primitive_array_dump(objects + 0x60, 1, BasicType::kInt, ints, std::size(ints));
  dump.finish();
  records.flush();
  return stream.bytes;
}

// Seeds stay where they are made: their clock callback holds their address.
std::vector<std::unique_ptr<Seed>> make_seeds() {
  std::vector<std::unique_ptr<Seed>> seeds;
  {
    Seed& s = *seeds.emplace_back(std::make_unique<Seed>("writer-control-settings"));
    s.records.write_control_settings(kControlAllocTraces | kControlCpuSampling, 4);
  }
  {
    Seed& s = *seeds.emplace_back(std::make_unique<Seed>("writer-classes"));
    s.prologue();
    s.records.write_unload_class(kPointArraySerial);
    s.records.write_load_class(kPointArraySerial + 1, kPointArrayClass, kMainTrace, kNamePointArray);
  }
  {
    Seed& s = *seeds.emplace_back(std::make_unique<Seed>("writer-threads"));
    s.prologue();
    s.records.write_start_thread({kMainThread + 1, 0x2100, kEmptyTrace, kNameRun, kNameGroup, kNameGroup});
    s.records.write_end_thread(kMainThread + 1);
    s.records.write_end_thread(kMainThread);
  }
  {
    Seed& s = *seeds.emplace_back(std::make_unique<Seed>("writer-alloc-sites"));
    s.records.write_control_settings(kControlAllocTraces, 4);
    s.prologue();
    const AllocSiteRow rows[] = {{0, kPointSerial, kMainTrace, 24, 1, 48, 2},
                                 {2, kPointArraySerial, kEmptyTrace, 40, 1, 40, 1},
                                 {static_cast<uint8_t>(BasicType::kInt), kObjectSerial, kMainTrace, 16, 1, 32, 2}};
    s.records.write_alloc_sites({.flags = kSitesSortedByAllocation, .cutoff = 0.0001f, .total_live_bytes = 80,
                                 .total_live_instances = 3, .total_alloc_bytes = 120, .total_alloc_instances = 5},
                                rows);
    s.records.write_heap_summary(80, 3, 120, 5);
  }
  {
    Seed& s = *seeds.emplace_back(std::make_unique<Seed>("writer-cpu-samples"));
    s.records.write_control_settings(kControlCpuSampling, 4);
    s.prologue();
    const CpuSampleRow rows[] = {{5, kMainTrace}, {2, kEmptyTrace}};
    s.records.write_cpu_samples(7, rows);
  }
  {
    // Segments of at most 96 body bytes: most sub-records get a segment of their own.
    Seed& s = *seeds.emplace_back(std::make_unique<Seed>("writer-heap-dump-segments"));
    s.prologue();
    HeapDumpWriter dump(s.records, segments_of(96));
    write_heap_dump(dump);
    dump.finish();
  }
  {
    // Two dumps, each in one segment, with records between them.
    Seed& s = *seeds.emplace_back(std::make_unique<Seed>("writer-two-heap-dumps"));
    s.prologue();
    HeapDumpWriter dump(s.records, segments_of(HeapDumpWriterOptions::kDefaultSegmentSize));
    write_heap_dump(dump);
    dump.finish();
    s.records.write_heap_summary(80, 3, 120, 5);
    write_heap_dump(dump);
    dump.finish();
  }
  {
    // The whole dump as one HEAP DUMP (0x0C) record: the segment a HeapDumpWriter writes on a
    // stream of its own, without its record header and the HEAP DUMP END after it.
    Seed& s = *seeds.emplace_back(std::make_unique<Seed>("writer-heap-dump-record"));
    s.prologue();
    BytesStream segment_stream;
    RecordWriter segment_records(segment_stream, kHeaderMillis, [] { return uint64_t{0}; });
    HeapDumpWriter dump(segment_records, segments_of(HeapDumpWriterOptions::kDefaultSegmentSize));
    write_heap_dump(dump);
    dump.finish();
    segment_records.flush();
    const std::vector<uint8_t>& framed = segment_stream.bytes;
    s.records.write_heap_dump(std::span<const uint8_t>(framed).subspan(
        kRecordHeaderSize, framed.size() - 2 * kRecordHeaderSize));
  }
  {
    // fasthprof's records and a dump of its own between VM dumps: the second VM dump's class
    // serials pass 100000, its mirrors moved, one symbol address holds another text; the third
    // reuses the first one's addresses.
    Seed& s = *seeds.emplace_back(std::make_unique<Seed>("writer-vm-dumps"));
    s.prologue();
    s.records.flush();
    VmDumpNumbering numbering;
    const std::vector<uint8_t> jdk_dumps[] = {jdk_like_dump(1, 0x600000000, "next"),
                                              jdk_like_dump(100000, 0x600001000, "label"),
                                              jdk_like_dump(200000, 0x600000000, "next")};
    for (const std::vector<uint8_t>& jdk : jdk_dumps) {
      VmDumpRewriter rewriter(numbering, s.stream);
      if (!rewriter.feed(jdk.data(), jdk.size()) || !rewriter.finish()) {
        std::fprintf(stderr, "make_verifier_corpus: the rewriter rejects a dump: %s\n", rewriter.error().c_str());
      }
      if (&jdk == &jdk_dumps[0]) {
        HeapDumpWriter dump(s.records, segments_of(HeapDumpWriterOptions::kDefaultSegmentSize));
        write_heap_dump(dump);
        dump.finish();
        s.records.flush();
      }
    }
  }
  return seeds;
}

bool read_file(const std::string& path, std::vector<uint8_t>* bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  bytes->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return true;
}

}  // namespace
}  // namespace fasthprof

int main(int argc, char** argv) {
  using namespace fasthprof;
  if (argc != 3 || (std::strcmp(argv[1], "--write") != 0 && std::strcmp(argv[1], "--check") != 0)) {
    std::fputs("usage: make_verifier_corpus --write|--check FOLDER\n", stderr);
    return 2;
  }
  const bool write = std::strcmp(argv[1], "--write") == 0;
  const std::string folder = argv[2];
  int status = 0;
  for (const std::unique_ptr<Seed>& seed : make_seeds()) {
    std::vector<uint8_t> bytes = seed->finish();
    VerifyOptions strict;
    strict.strict = true;
    VerifyResult result = verify_hprof(bytes.data(), bytes.size(), strict);
    if (!result.ok) {
      std::fprintf(stderr, "%s: the verifier rejects it at byte %llu: %s\n", seed->name.c_str(),
                   static_cast<unsigned long long>(result.error_offset), result.error.c_str());
      status = 1;
      continue;
    }
    const std::string path = folder + "/" + seed->name + ".hprof";
    if (write) {
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
      if (!out) {
        std::fprintf(stderr, "%s: cannot write\n", path.c_str());
        return 2;
      }
      std::printf("%s: %zu bytes\n", path.c_str(), bytes.size());
    } else {
      std::vector<uint8_t> committed;
      if (!read_file(path, &committed)) {
        std::fprintf(stderr, "%s: missing; regenerate with make_verifier_corpus --write %s\n", path.c_str(),
                     folder.c_str());
        status = 1;
      } else if (committed != bytes) {
        std::fprintf(stderr, "%s: differs from what the writers produce now (%zu bytes, now %zu); regenerate "
                     "with make_verifier_corpus --write %s\n", path.c_str(), committed.size(), bytes.size(),
                     folder.c_str());
        status = 1;
      } else {
        std::printf("%s: up to date, passes the verifier\n", path.c_str());
      }
    }
  }
  return status;
}
