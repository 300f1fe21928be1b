// One pass over an HPROF binary file's records into what the `fasthprof` verbs need.
#include "hprof_model.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "base/hprof_format.h"

namespace fasthprof {
namespace {

constexpr uint8_t tag_of(RecordTag tag) { return static_cast<uint8_t>(tag); }
constexpr uint8_t tag_of(HeapTag tag) { return static_cast<uint8_t>(tag); }

const char* primitive_name(char descriptor) {
  switch (descriptor) {
    case 'Z': return "boolean";
    case 'C': return "char";
    case 'F': return "float";
    case 'D': return "double";
    case 'B': return "byte";
    case 'S': return "short";
    case 'I': return "int";
    case 'J': return "long";
  }
  return nullptr;
}

std::string hex_name(const char* what, uint64_t value) {
  char text[64];
  std::snprintf(text, sizeof(text), "<%s 0x%" PRIx64 ">", what, value);
  return text;
}

}  // namespace

std::string java_class_name(std::string_view name) {
  size_t dims = 0;
  while (dims < name.size() && name[dims] == '[') ++dims;
  std::string out;
  if (dims == 0) {
    out.assign(name);
  } else {
    std::string_view element = name.substr(dims);
    const char* primitive = element.size() == 1 ? primitive_name(element[0]) : nullptr;
    if (primitive != nullptr) {
      out = primitive;
    } else if (element.size() >= 2 && element.front() == 'L' && element.back() == ';') {
      out.assign(element.substr(1, element.size() - 2));
    } else {
      out.assign(name);  // not a descriptor: keep it as written
      dims = 0;
    }
  }
  std::replace(out.begin(), out.end(), '/', '.');
  for (size_t i = 0; i < dims; ++i) out += "[]";
  return out;
}

const char* primitive_array_name(uint8_t basic_type) {
  switch (static_cast<BasicType>(basic_type)) {
    case BasicType::kBoolean: return "boolean[]";
    case BasicType::kChar: return "char[]";
    case BasicType::kFloat: return "float[]";
    case BasicType::kDouble: return "double[]";
    case BasicType::kByte: return "byte[]";
    case BasicType::kShort: return "short[]";
    case BasicType::kInt: return "int[]";
    case BasicType::kLong: return "long[]";
    case BasicType::kObject: break;
  }
  return nullptr;
}

uint64_t shallow_instance_bytes(uint32_t id_size, uint64_t field_bytes) {
  return (2 * uint64_t{id_size} + field_bytes + 7) & ~uint64_t{7};
}

uint64_t shallow_array_bytes(uint32_t id_size, uint64_t element_size, uint64_t count) {
  return (2 * uint64_t{id_size} + 4 + element_size * count + 7) & ~uint64_t{7};
}

HprofModel::ClassCounter& HprofModel::ClassCounters::operator[](uint64_t class_id) {
  if ((count_ + 1) * 2 > slots_.size()) grow();
  // Fibonacci hashing: class IDs are addresses, aligned, and their low bits say little.
  const size_t mask = slots_.size() - 1;
  for (size_t i = static_cast<size_t>((class_id * 0x9e3779b97f4a7c15ULL) >> shift_);; i = (i + 1) & mask) {
    Slot& slot = slots_[i];
    if (slot.used && slot.class_id == class_id) return slot.counter;
    if (!slot.used) {
      slot.used = true;
      slot.class_id = class_id;
      ++count_;
      return slot.counter;
    }
  }
}

void HprofModel::ClassCounters::grow() {
  std::vector<Slot> old;
  old.swap(slots_);
  slots_.assign(old.empty() ? 1024 : old.size() * 2, Slot{});
  shift_ = 64 - static_cast<unsigned>(__builtin_ctzll(slots_.size()));
  count_ = 0;
  for (const Slot& slot : old) {
    if (slot.used) (*this)[slot.class_id] = slot.counter;
  }
}

void HprofModel::ClassCounters::clear() {
  slots_.clear();
  count_ = 0;
  shift_ = 64;
}

std::string_view HprofModel::utf8(uint64_t id) const {
  auto found = utf8_.find(id);
  return found != utf8_.end() ? found->second : std::string_view();
}

std::string HprofModel::class_name_by_serial(uint32_t serial) const {
  auto found = class_name_by_serial_.find(serial);
  // A class with no name, or whose name has no UTF8 record, is named by what identifies it.
  if (found == class_name_by_serial_.end() || utf8(found->second).empty()) {
    return "<class serial " + std::to_string(serial) + ">";
  }
  return java_class_name(utf8(found->second));
}

std::string HprofModel::class_name_by_object_id(uint64_t class_id) const {
  auto found = class_name_by_id_.find(class_id);
  if (found == class_name_by_id_.end() || utf8(found->second).empty()) return hex_name("class", class_id);
  return java_class_name(utf8(found->second));
}

std::string HprofModel::site_class_name(const SiteRow& row) const {
  const char* primitive = primitive_array_name(row.kind);
  if (primitive != nullptr && row.kind != static_cast<uint8_t>(BasicType::kObject)) return primitive;
  return class_name_by_serial(row.class_serial);
}

const FrameInfo* HprofModel::frame(uint64_t id) const {
  auto found = frames_.find(id);
  return found != frames_.end() ? &found->second : nullptr;
}

const TraceInfo* HprofModel::trace(uint32_t serial) const {
  auto found = traces_.find(serial);
  return found != traces_.end() ? &found->second : nullptr;
}

std::string HprofModel::frame_name(uint64_t frame_id, bool with_line) const {
  const FrameInfo* info = frame(frame_id);
  if (info == nullptr) return hex_name("frame", frame_id);
  std::string out = class_name_by_serial(info->class_serial);
  out += '.';
  out += info->method.empty() ? std::string_view("<Unknown Method>") : info->method;
  if (with_line) {
    out += '(';
    out += info->source.empty() ? std::string_view("<Unknown Source>") : info->source;
    out += ':';
    if (info->line > 0) {
      out += std::to_string(info->line);
    } else {
      out += info->line == -3 ? "Native method" : "Unknown line";  // as the text layout prints them
    }
    out += ')';
  }
  return out;
}

std::string_view HprofModel::thread_name(uint32_t serial) const {
  auto found = thread_name_by_serial_.find(serial);
  return found == thread_name_by_serial_.end() ? std::string_view() : utf8(found->second);
}

std::vector<std::string> HprofModel::native_frame_names() const {
  std::vector<std::string> names;
  for (const auto& [id, frame] : frames_) {
    if (frame.line == -3) names.push_back(frame_name(id, false));
  }
  return names;
}

std::string HprofModel::folded_stack(uint32_t trace_serial, bool with_lines) const {
  const TraceInfo* info = trace(trace_serial);
  if (info == nullptr) return "<trace " + std::to_string(trace_serial) + ">";
  if (info->frame_count == 0) return "<empty trace>";
  std::string out;
  for (uint32_t i = info->frame_count; i-- > 0;) {
    std::string name = frame_name(trace_frame(*info, i), with_lines);
    std::replace(name.begin(), name.end(), ';', ':');
    std::replace(name.begin(), name.end(), '\n', ' ');
    if (!out.empty()) out += ';';
    out += name;
  }
  return out;
}

bool HprofModel::load(const uint8_t* data, uint64_t size, ReadError* error, HprofInput* input,
                      HeapDumpObserver* observer) {
  observer_ = observer;
  HprofReader reader(data, size);
  if (!reader.read_header()) {
    *error = reader.error();
    return false;
  }
  header_ = reader.header();
  bytes_ = reader.bytes();
  RecordView record;
  while (reader.next_record(&record)) {
    ++records_;
    ++record_counts_[record.tag];
    if (!this->record(record, error)) return false;
    if (input != nullptr) input->release_before(record.end());
  }
  if (!reader.error().message.empty()) {
    *error = reader.error();
    return false;
  }
  // A 1.0.2 dump whose HEAP DUMP END is missing (a file cut inside a dump) is left out: its
  // counts would be a part of a heap presented as the whole.
  return true;
}

bool HprofModel::record(const RecordView& r, ReadError* error) {
  const uint64_t n = bytes_.id_size();
  auto too_short = [&](uint64_t need) {
    if (r.length >= need) return false;
    error->message = std::string(record_tag_name(r.tag)) + " record of length " + std::to_string(r.length) +
                     " is shorter than its fields (" + std::to_string(need) + " bytes)";
    error->offset = r.offset;
    return true;
  };
  const uint64_t at = r.body;
  switch (static_cast<RecordTag>(r.tag)) {
    case RecordTag::kUtf8:
      if (too_short(n)) return false;
      utf8_[bytes_.id(at)] =
          std::string_view(reinterpret_cast<const char*>(bytes_.data() + at + n), r.length - n);
      return true;
    case RecordTag::kLoadClass:
      if (too_short(8 + 2 * n)) return false;
      class_name_by_serial_[bytes_.u4(at)] = bytes_.id(at + 8 + n);
      class_name_by_id_[bytes_.id(at + 4)] = bytes_.id(at + 8 + n);
      return true;
    case RecordTag::kStackFrame: {
      if (too_short(4 * n + 8)) return false;
      FrameInfo& frame = frames_[bytes_.id(at)];
      frame.method = utf8(bytes_.id(at + n));
      frame.signature = utf8(bytes_.id(at + 2 * n));
      frame.source = utf8(bytes_.id(at + 3 * n));
      frame.class_serial = bytes_.u4(at + 4 * n);
      frame.line = static_cast<int32_t>(bytes_.u4(at + 4 * n + 4));
      return true;
    }
    case RecordTag::kStackTrace: {
      if (too_short(12)) return false;
      const uint32_t count = bytes_.u4(at + 8);
      if (uint64_t{count} * n > r.length - 12) {
        error->message = "STACK TRACE record names " + std::to_string(count) + " frames but holds " +
                         std::to_string((r.length - 12) / n);
        error->offset = r.offset;
        return false;
      }
      traces_[bytes_.u4(at)] = TraceInfo{bytes_.u4(at + 4), count, at + 12};
      return true;
    }
    case RecordTag::kAllocSites: {
      if (too_short(34)) return false;
      SitesSection section;
      section.offset = r.offset;
      section.flags = bytes_.u2(at);
      section.cutoff_bits = bytes_.u4(at + 2);
      section.total_live_bytes = bytes_.u4(at + 6);
      section.total_live_instances = bytes_.u4(at + 10);
      section.total_alloc_bytes = bytes_.u8(at + 14);
      section.total_alloc_instances = bytes_.u8(at + 22);
      const uint32_t count = bytes_.u4(at + 30);
      if (uint64_t{count} * 25 > r.length - 34) {
        error->message = "ALLOC SITES record names " + std::to_string(count) + " sites but holds " +
                         std::to_string((r.length - 34) / 25);
        error->offset = r.offset;
        return false;
      }
      section.rows.reserve(count);
      for (uint64_t p = at + 34, end = p + uint64_t{count} * 25; p < end; p += 25) {
        section.rows.push_back(SiteRow{bytes_.u1(p), bytes_.u4(p + 1), bytes_.u4(p + 5), bytes_.u4(p + 9),
                                       bytes_.u4(p + 13), bytes_.u4(p + 17), bytes_.u4(p + 21)});
      }
      sites_.push_back(std::move(section));
      return true;
    }
    case RecordTag::kCpuSamples: {
      if (too_short(8)) return false;
      CpuSamplesSection section;
      section.offset = r.offset;
      section.time_micros = r.time_micros;
      section.total = bytes_.u4(at);
      const uint32_t count = bytes_.u4(at + 4);
      if (uint64_t{count} * 8 > r.length - 8) {
        error->message = "CPU SAMPLES record names " + std::to_string(count) + " traces but holds " +
                         std::to_string((r.length - 8) / 8);
        error->offset = r.offset;
        return false;
      }
      section.rows.reserve(count);
      for (uint64_t p = at + 8, end = p + uint64_t{count} * 8; p < end; p += 8) {
        section.rows.push_back(CpuRow{bytes_.u4(p), bytes_.u4(p + 4)});
      }
      cpu_.push_back(std::move(section));
      return true;
    }
    case RecordTag::kControlSettings:
      if (too_short(6)) return false;
      has_control_ = true;
      control_flags_ = bytes_.u4(at);
      control_depth_ = bytes_.u2(at + 4);
      return true;
    case RecordTag::kStartThread:
      ++threads_started_;
      // serial, thread object ID, trace serial, name ID, group and parent group name IDs
      if (r.length >= 8 + 2 * uint64_t{bytes_.id_size()}) {
        thread_name_by_serial_[bytes_.u4(at)] = bytes_.id(at + 8 + bytes_.id_size());
      }
      return true;
    case RecordTag::kHeapDump:
    case RecordTag::kHeapDumpSegment:
      if (!dump_record(r, error)) return false;
      // A HEAP DUMP record is a whole dump; only segments wait for their HEAP DUMP END.
      if (r.tag == tag_of(RecordTag::kHeapDump)) finish_dump(true);
      return true;
    case RecordTag::kHeapDumpEnd:
      if (in_dump_) finish_dump(true);
      return true;
    case RecordTag::kUnloadClass:
    case RecordTag::kEndThread:
    case RecordTag::kHeapSummary: return true;
  }
  return true;
}

bool HprofModel::dump_record(const RecordView& r, ReadError* error) {
  if (!in_dump_) {
    in_dump_ = true;
    dump_ = HeapDumpInfo{};
    dump_.offset = r.offset;
    dump_classes_.clear();
    dump_primitive_arrays_ = {};
    class_dump_count_ = 0;
    class_class_id_ = 0;
    class_field_bytes_ = 0;
  }
  ++dump_.segments;
  const uint32_t id_size = bytes_.id_size();
  SubRecordReader reader(bytes_, r);
  SubRecordView sub;
  // Objects of one class tend to come in runs: the counter of the last class is kept at hand.
  uint64_t last_class = 0;
  ClassCounter* last = nullptr;
  auto counter = [&](uint64_t class_id) -> ClassCounter* {
    if (last == nullptr || class_id != last_class) {
      last = &dump_classes_[class_id];
      last_class = class_id;
    }
    return last;
  };
  while (reader.next(&sub)) {
    const uint64_t at = sub.offset;
    if (observer_ != nullptr) observer_->sub_record(bytes_, dumps_.size(), sub.tag, at);
    switch (static_cast<HeapTag>(sub.tag)) {
      case HeapTag::kInstanceDump: {
        ++dump_.instances;
        ClassCounter* c = counter(bytes_.id(at + 1 + id_size + 4));
        ++c->instances;
        c->bytes += shallow_instance_bytes(id_size, bytes_.u4(at + 1 + 2 * id_size + 4));
        break;
      }
      case HeapTag::kObjectArrayDump: {
        ++dump_.object_arrays;
        ClassCounter* c = counter(bytes_.id(at + 1 + id_size + 8));
        ++c->instances;
        c->bytes += shallow_array_bytes(id_size, id_size, bytes_.u4(at + 1 + id_size + 4));
        break;
      }
      case HeapTag::kPrimitiveArrayDump: {
        ++dump_.primitive_arrays;
        const uint8_t type = bytes_.u1(at + 1 + id_size + 8);
        ClassCounter& c = dump_primitive_arrays_[type & 15];
        ++c.instances;
        c.bytes += shallow_array_bytes(id_size, bytes_.value_size(type), bytes_.u4(at + 1 + id_size + 4));
        break;
      }
      case HeapTag::kClassDump: {
        ++dump_.classes;
        ++class_dump_count_;
        if (class_class_id_ == 0) {
          const uint64_t class_id = bytes_.id(at + 1);
          auto name = class_name_by_id_.find(class_id);
          if (name != class_name_by_id_.end()) {
            std::string_view text = utf8(name->second);
            if (text == "java.lang.Class" || text == "java/lang/Class") {
              class_class_id_ = class_id;
              const ClassDumpView view = decode_class_dump(bytes_, sub);
              uint64_t pos = view.fields_at;
              for (uint32_t i = 0; i < view.field_count; ++i, pos += id_size + 1) {
                class_field_bytes_ += bytes_.value_size(bytes_.u1(pos + id_size));
              }
            }
          }
        }
        break;
      }
      default:
        ++dump_.roots;
        break;
    }
  }
  if (!reader.error().message.empty()) {
    *error = reader.error();
    in_dump_ = false;
    return false;
  }
  return true;
}

void HprofModel::finish_dump(bool complete) {
  in_dump_ = false;
  dump_.complete = complete;
  const uint32_t id_size = bytes_.id_size();
  std::vector<HistogramRow>& rows = dump_.histogram;
  // Every class object is an instance of java.lang.Class, which no INSTANCE DUMP shows: they are
  // counted from the CLASS DUMPs, with the shallow size of java.lang.Class's own fields.
  if (class_dump_count_ > 0) {
    ClassCounter& c = dump_classes_[class_class_id_];
    c.is_class_dump = class_class_id_ == 0;
    c.instances += class_dump_count_;
    c.bytes += class_dump_count_ * shallow_instance_bytes(id_size, class_field_bytes_);
  }
  dump_classes_.for_each([&](uint64_t class_id, const ClassCounter& c) {
    if (c.instances == 0) return;
    rows.push_back(HistogramRow{c.is_class_dump ? std::string("java.lang.Class") : class_name_by_object_id(class_id),
                                c.instances, c.bytes});
  });
  for (size_t type = 0; type < dump_primitive_arrays_.size(); ++type) {
    const ClassCounter& c = dump_primitive_arrays_[type];
    const char* name = primitive_array_name(static_cast<uint8_t>(type));
    if (c.instances == 0) continue;
    rows.push_back(HistogramRow{name != nullptr ? name : hex_name("array type", type), c.instances, c.bytes});
  }
  // Two class objects of one name (two loaders) stay two rows, as in jmap -histo.
  std::sort(rows.begin(), rows.end(), [](const HistogramRow& a, const HistogramRow& b) {
    if (a.bytes != b.bytes) return a.bytes > b.bytes;
    if (a.instances != b.instances) return a.instances > b.instances;
    return a.name < b.name;
  });
  for (const HistogramRow& row : rows) dump_.total_bytes += row.bytes;
  dumps_.push_back(std::move(dump_));
  dump_ = HeapDumpInfo{};
  dump_classes_.clear();
}

}  // namespace fasthprof
