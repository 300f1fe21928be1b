// `fasthprof text FILE`: a binary file in the text layout of format=a, through the agent's own text
// writer (runtime/records/text_writer.h), so that the two layouts cannot drift apart.
#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <unordered_map>
#include <vector>

#include "base/hprof_format.h"
#include "records/text_writer.h"
#include "sink/output_stream.h"
#include "verbs.h"

namespace fasthprof::cli {

const char kTextUsage[] =
    "usage: fasthprof text [-o OUT] FILE\n"
    "Rewrites an HPROF binary file (format=b, gz=y, a net= capture, a JDK dump) in\n"
    "the text layout of format=a (docs/compatibility.md), record by record in file\n"
    "order: the file header (its date from the binary header's time stamp, local\n"
    "time), THREAD START / END, TRACE, each heap dump (HEAP DUMP BEGIN, ROOT lines,\n"
    "OBJ and ARR lines with their non-null references, CLS lines superclass first,\n"
    "HEAP DUMP END), SITES and CPU SAMPLES / CPU TIME (ms) sections.\n"
    "What the binary file does not hold is computed or left out:\n"
    "  - sz= of OBJ and ARR lines, and the bytes of HEAP DUMP BEGIN: the shallow\n"
    "    sizes of `fasthprof summary --help` (two identifiers of header, the fields\n"
    "    as dumped or a 4-byte length and the elements, rounded up to 8), not the\n"
    "    JVM's own sizes that format=a prints; HEAP DUMP BEGIN's object count: the\n"
    "    instances and arrays of the dump;\n"
    "  - trace= of a JNI global root: 0 (its binary record names no trace);\n"
    "  - nelems= of an object array: its length (format=a prints the highest\n"
    "    non-null index + 1);\n"
    "  - MONITOR DUMP, MONITOR TIME and the monitor WAIT lines: no binary record\n"
    "    holds them.\n"
    "  -o OUT   write to OUT instead of standard output\n"
    FASTHPROF_MAX_EXPANDED_HELP
    "Exit status: 0 done, 2 bad usage or bad input (one message on stderr).\n";

namespace {

// The writer's bytes into the verb's output file.
class FileStream : public OutputStream {
 public:
  explicit FileStream(FILE* file) : file_(file) {}
  void write(const void* data, size_t size) override { std::fwrite(data, 1, size, file_); }

 private:
  FILE* file_;
};

struct ClassEntry {
  uint64_t offset = 0;  // of its CLASS DUMP
  uint64_t super_id = 0;
  uint64_t fields_at = 0;
  uint16_t field_count = 0;
  uint64_t field_bytes = 0;  // its own instance fields' values
  // Its chain of super classes, resolved once per dump (resolve_chains): how many classes it has
  // (this one included), their field bytes together, and the nearest super class with fields.
  // A chain that runs into a cycle has no end: cyclic, sorted last, its instances' fields left out.
  enum class State : uint8_t { kNew, kClimbing, kDone } state = State::kNew;
  bool cyclic = false;
  size_t depth = 0;
  uint64_t chain_bytes = 0;
  const ClassEntry* fields_super = nullptr;
};

class TextConverter {
 public:
  // input: the bytes' HprofInput, whose pages each pass over a dump releases behind it.
  TextConverter(const HprofModel& model, HprofInput& input, TextWriter& text)
      : model_(model), bytes_(model.bytes()), input_(input), text_(text) {}

  time_t when(const RecordView& record) const {
    return static_cast<time_t>((model_.header().timestamp_millis + record.time_micros / 1000) / 1000);
  }

  void record(const RecordView& record) {
    const uint64_t n = bytes_.id_size();
    const uint64_t at = record.body;
    switch (static_cast<RecordTag>(record.tag)) {
      case RecordTag::kStartThread:
        if (record.length >= 8 + 4 * n) {
          text_.thread_start(bytes_.id(at + 4), bytes_.u4(at), model_.utf8(bytes_.id(at + 8 + n)),
                             model_.utf8(bytes_.id(at + 8 + 2 * n)));
        }
        break;
      case RecordTag::kEndThread:
        if (record.length >= 4) text_.thread_end(bytes_.u4(at));
        break;
      case RecordTag::kStackTrace: trace(bytes_.u4(at)); break;
      case RecordTag::kHeapDump:
        dump_records_.push_back(record);
        heap_dump();
        break;
      case RecordTag::kHeapDumpSegment: dump_records_.push_back(record); break;
      case RecordTag::kHeapDumpEnd:
        if (!dump_records_.empty()) heap_dump();
        break;
      case RecordTag::kAllocSites: sites(record); break;
      case RecordTag::kCpuSamples: cpu(record); break;
      default: break;
    }
  }

 private:
  void trace(uint32_t serial) {
    const TraceInfo* info = model_.trace(serial);
    if (info == nullptr) return;
    text_.trace_header(serial, info->thread_serial);
    if (info->frame_count == 0) text_.trace_empty();
    for (uint32_t i = 0; i < info->frame_count; ++i) {
      const FrameInfo* frame = model_.frame(model_.trace_frame(*info, i));
      if (frame == nullptr) continue;
      const std::string class_name = model_.class_name_by_serial(frame->class_serial);
      text_.trace_frame({class_name, frame->method, frame->source, frame->line});
    }
  }

  std::string class_name(uint64_t class_id) {
    auto found = names_.find(class_id);
    if (found != names_.end()) return found->second;
    return names_.emplace(class_id, model_.class_name_by_object_id(class_id)).first->second;
  }

  void heap_dump() {
    const uint32_t n = bytes_.id_size();
    classes_.clear();
    names_.clear();
    uint64_t objects = 0;
    uint64_t total = 0;
    // First pass: the classes (their field layouts are needed before their instances), the totals.
    for_each_sub_record([&](const SubRecordView& sub) {
      const uint64_t at = sub.offset;
      switch (static_cast<HeapTag>(sub.tag)) {
        case HeapTag::kClassDump: {
          const ClassDumpView view = decode_class_dump(bytes_, sub);
          ClassEntry entry{at, view.super_id, view.fields_at, view.field_count, 0};
          for (uint32_t i = 0; i < view.field_count; ++i) {
            entry.field_bytes += bytes_.value_size(bytes_.u1(view.fields_at + uint64_t{i} * (n + 1) + n));
          }
          classes_[view.class_id] = entry;
          break;
        }
        case HeapTag::kInstanceDump:
          ++objects;
          total += shallow_instance_bytes(n, bytes_.u4(at + 1 + 2 * n + 4));
          break;
        case HeapTag::kObjectArrayDump:
          ++objects;
          total += shallow_array_bytes(n, n, bytes_.u4(at + 1 + n + 4));
          break;
        case HeapTag::kPrimitiveArrayDump:
          ++objects;
          total += shallow_array_bytes(n, bytes_.value_size(bytes_.u1(at + 1 + n + 8)), bytes_.u4(at + 1 + n + 4));
          break;
        default: break;
      }
    });
    resolve_chains();
    text_.heap_dump_begin(objects, total, when(dump_records_.back()));
    // Second pass: roots, then objects; the classes last, superclass first, as format=a orders them.
    for_each_sub_record([&](const SubRecordView& sub) {
      if (is_root_tag(sub.tag)) root(sub);
    });
    for_each_sub_record([&](const SubRecordView& sub) {
      if (sub.tag != static_cast<uint8_t>(HeapTag::kClassDump) && !is_root_tag(sub.tag)) object(sub);
    });
    std::vector<uint64_t> order;
    std::unordered_map<uint64_t, bool> placed;
    for (const auto& [class_id, entry] : classes_) {
      std::vector<uint64_t> chain;
      for (uint64_t id = class_id; id != 0 && !placed[id] && chain.size() <= classes_.size();) {
        auto found = classes_.find(id);
        if (found == classes_.end()) break;
        chain.push_back(id);
        placed[id] = true;
        id = found->second.super_id;
      }
      order.insert(order.end(), chain.rbegin(), chain.rend());
    }
    // Within the superclass-first order, classes keep their file order where the order allows it.
    std::stable_sort(order.begin(), order.end(),
                     [&](uint64_t a, uint64_t b) { return classes_[a].depth < classes_[b].depth; });
    for (uint64_t class_id : order) class_dump(class_id);
    text_.heap_dump_end();
    dump_records_.clear();
  }

  ClassEntry* find_class(uint64_t class_id) {
    auto found = classes_.find(class_id);
    return found != classes_.end() ? &found->second : nullptr;
  }

  // Every class's chain in one pass over the classes (each climbed once, then unwound from the
  // top), so that a chain of N classes costs N steps, not N per class or per instance.
  void resolve_chains() {
    std::vector<ClassEntry*> climbed;
    for (auto& [class_id, entry] : classes_) {
      ClassEntry* next = &entry;
      for (; next != nullptr && next->state == ClassEntry::State::kNew; next = find_class(next->super_id)) {
        next->state = ClassEntry::State::kClimbing;
        climbed.push_back(next);
      }
      // Stopped at the top, at a class already resolved, or on one climbed now: a cycle.
      const bool cyclic = next != nullptr && (next->state == ClassEntry::State::kClimbing || next->cyclic);
      for (; !climbed.empty(); climbed.pop_back()) {
        ClassEntry* c = climbed.back();
        const ClassEntry* super = cyclic ? nullptr : find_class(c->super_id);
        c->state = ClassEntry::State::kDone;
        c->cyclic = cyclic;
        c->depth = cyclic ? SIZE_MAX : super == nullptr ? 1 : super->depth + 1;
        c->chain_bytes = c->field_bytes + (super == nullptr ? 0 : super->chain_bytes);
        c->fields_super = super == nullptr ? nullptr : super->field_count > 0 ? super : super->fields_super;
      }
    }
  }

  template <typename Visit>
  void for_each_sub_record(Visit visit) {
    for (const RecordView& record : dump_records_) {
      SubRecordReader reader(bytes_, record);  // framed once already by the model's pass
      SubRecordView sub;
      while (reader.next(&sub)) visit(sub);
      // A dump is read several times over (counts, roots, objects, classes): without this its
      // pages stayed mapped, the whole dump's worth of resident memory.
      input_.release_range(record.body, record.end());
    }
  }

  void root(const SubRecordView& sub) {
    const RootView root = decode_root(bytes_, sub);
    switch (static_cast<HeapTag>(sub.tag)) {
      case HeapTag::kRootJniGlobal: text_.root_jni_global(root.object_id, root.jni_global_ref_id, 0); break;
      case HeapTag::kRootStickyClass: text_.root_system_class(root.object_id, class_name(root.object_id)); break;
      case HeapTag::kRootMonitorUsed: text_.root_monitor(root.object_id); break;
      case HeapTag::kRootThreadObject: text_.root_thread(root.object_id, root.thread_serial, root.trace_serial); break;
      case HeapTag::kRootThreadBlock: text_.root_thread_block(root.object_id, root.thread_serial); break;
      case HeapTag::kRootJavaFrame: text_.root_java_frame(root.object_id, root.thread_serial, root.frame); break;
      case HeapTag::kRootJniLocal: text_.root_jni_local(root.object_id, root.thread_serial, root.frame); break;
      case HeapTag::kRootNativeStack: text_.root_native_stack(root.object_id, root.thread_serial); break;
      default: text_.root_unknown(root.object_id); break;
    }
  }

  void object(const SubRecordView& sub) {
    const uint32_t n = bytes_.id_size();
    const ObjectDumpView view = decode_object_dump(bytes_, sub);
    switch (static_cast<HeapTag>(sub.tag)) {
      case HeapTag::kInstanceDump: {
        text_.object(view.object_id, shallow_instance_bytes(n, view.count), view.trace_serial,
                     class_name(view.class_id), view.class_id);
        // The values hold the class's own fields first, then its superclass's; format=a lists the
        // superclass's first. A layout the values do not fit (or a cyclic chain): no fields.
        const ClassEntry* entry = find_class(view.class_id);
        if (entry == nullptr || entry->cyclic || entry->chain_bytes > view.count) break;
        chain_.clear();
        for (const ClassEntry* c = entry->field_count > 0 ? entry : entry->fields_super; c != nullptr;
             c = c->fields_super) {
          chain_.push_back(c);
        }
        for (size_t c = chain_.size(); c-- > 0;) {
          uint64_t pos = view.values_at + (entry->chain_bytes - chain_[c]->chain_bytes);
          for (uint32_t i = 0; i < chain_[c]->field_count; ++i) {
            const uint64_t field = chain_[c]->fields_at + uint64_t{i} * (n + 1);
            const uint8_t type = bytes_.u1(field + n);
            if (type == static_cast<uint8_t>(BasicType::kObject)) {
              text_.object_field(model_.utf8(bytes_.id(field)), bytes_.id(pos));
            }
            pos += bytes_.value_size(type);
          }
        }
        break;
      }
      case HeapTag::kObjectArrayDump:
        text_.object_array(view.object_id, shallow_array_bytes(n, n, view.count), view.trace_serial, view.count,
                           class_name(view.class_id), view.class_id);
        for (uint32_t i = 0; i < view.count; ++i) text_.array_element(i, bytes_.id(view.values_at + uint64_t{i} * n));
        break;
      case HeapTag::kPrimitiveArrayDump: {
        const char* type = primitive_array_name(view.element_type);
        text_.primitive_array(view.object_id, shallow_array_bytes(n, bytes_.value_size(view.element_type), view.count),
                              view.trace_serial, view.count, type != nullptr ? type : "<unknown>[]");
        break;
      }
      default: break;
    }
  }

  void class_dump(uint64_t class_id) {
    const uint32_t n = bytes_.id_size();
    const ClassEntry& entry = classes_[class_id];
    const SubRecordView sub{static_cast<uint8_t>(HeapTag::kClassDump), entry.offset, 0};
    const ClassDumpView view = decode_class_dump(bytes_, sub);
    text_.class_begin(class_id, class_name(class_id), view.trace_serial);
    text_.class_super(view.super_id);
    text_.class_loader(view.loader_id);
    text_.class_signers(view.signers_id);
    text_.class_domain(view.protection_domain_id);
    uint64_t pos = view.statics_at;
    for (uint32_t i = 0; i < view.static_count; ++i) {
      const uint8_t type = bytes_.u1(pos + n);
      if (type == static_cast<uint8_t>(BasicType::kObject)) text_.class_static(model_.utf8(bytes_.id(pos)), bytes_.id(pos + n + 1));
      pos += n + 1 + bytes_.value_size(type);
    }
    pos = view.constants_at;
    for (uint32_t i = 0; i < view.constant_count; ++i) {
      const uint8_t type = bytes_.u1(pos + 2);
      if (type == static_cast<uint8_t>(BasicType::kObject)) text_.class_constant_pool(bytes_.u2(pos), bytes_.id(pos + 3));
      pos += 3 + bytes_.value_size(type);
    }
  }

  void sites(const RecordView& record) {
    for (const SitesSection& section : model_.sites()) {
      if (section.offset != record.offset) continue;
      const bool by_alloc = (section.flags & 2) != 0;
      text_.sites_begin(by_alloc ? "allocated bytes" : "live bytes", when(record));
      double accumulated = 0;
      uint32_t rank = 0;
      for (const SiteRow& row : section.rows) {
        const double value = by_alloc ? row.alloc_bytes : row.live_bytes;
        const double total = by_alloc ? static_cast<double>(section.total_alloc_bytes) : section.total_live_bytes;
        const double self = total == 0 ? 0.0 : 100.0 * value / total;
        accumulated += self;
        text_.sites_row(++rank, self, accumulated, row.live_bytes, row.live_instances, row.alloc_bytes,
                        row.alloc_instances, row.trace_serial, model_.site_class_name(row));
      }
      text_.sites_end();
    }
  }

  void cpu(const RecordView& record) {
    const CpuSection kind = model_.cpu_is_times() ? CpuSection::kTimes : CpuSection::kSamples;
    for (const CpuSamplesSection& section : model_.cpu()) {
      if (section.offset != record.offset) continue;
      text_.cpu_begin(kind, section.total, section.rows.size(), when(record));
      double accumulated = 0;
      uint32_t rank = 0;
      for (const CpuRow& row : section.rows) {
        const double self = section.total == 0 ? 0.0 : 100.0 * row.count / section.total;
        accumulated += self;
        std::string class_name;
        std::string_view method;
        const TraceInfo* trace = model_.trace(row.trace_serial);
        if (trace != nullptr && trace->frame_count > 0) {
          const FrameInfo* top = model_.frame(model_.trace_frame(*trace, 0));
          if (top != nullptr) {
            class_name = model_.class_name_by_serial(top->class_serial);
            method = top->method;
          }
        }
        text_.cpu_row(++rank, self, accumulated, row.count, row.trace_serial, class_name, method);
      }
      text_.cpu_end(kind);
    }
  }

  const HprofModel& model_;
  const HprofBytes& bytes_;
  HprofInput& input_;
  TextWriter& text_;
  std::vector<RecordView> dump_records_;
  std::unordered_map<uint64_t, ClassEntry> classes_;
  std::unordered_map<uint64_t, std::string> names_;
  std::vector<const ClassEntry*> chain_;
};

}  // namespace

int text_main(int argc, char** argv) {
  Args args;
  if (!parse_args("text", argc, argv, {}, {kMaxExpandedOption}, &args)) return kExitBadInput;
  if (args.help) {
    std::fputs(kTextUsage, stdout);
    return kExitOk;
  }
  if (args.operands.size() != 1) return fail("text", "needs one FILE (see fasthprof text --help)");
  const std::string path(args.operands[0]);
  std::unique_ptr<Loaded> loaded = load("text", path.c_str(), args);
  if (loaded == nullptr) return kExitBadInput;
  Output output;
  if (!output.open("text", args.output)) return kExitBadInput;
  {
    FileStream stream(output.file());
    TextWriter text(stream);
    const HprofModel& model = loaded->model;
    // A heap=sites,live=n run (CONTROL SETTINGS flag 0x4) says so in the header, as format=a does.
    text.file_header(static_cast<time_t>(model.header().timestamp_millis / 1000),
                     model.has_control_settings() && (model.control_flags() & kControlNoLiveCounts) != 0);
    TextConverter converter(model, loaded->input, text);
    // The model's pass framed every record and sub-record without error.
    HprofReader reader(loaded->input.data(), loaded->input.size());
    reader.read_header();
    RecordView record;
    // The model's pass released the pages behind it once; this second pass maps them again, and
    // lets them go again every 32 MiB.
    uint64_t behind = 0;
    while (reader.next_record(&record)) {
      converter.record(record);
      if (record.end() - behind >= (uint64_t{32} << 20)) {
        loaded->input.release_range(behind, record.end());
        behind = record.end();
      }
    }
  }
  return output.close("text") ? kExitOk : kExitBadInput;
}

}  // namespace fasthprof::cli
