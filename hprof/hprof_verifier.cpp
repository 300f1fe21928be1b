// The checks of what records say, on top of the reader (hprof_reader.h), which frames them. They
// are in two layers. Top-level records are checked as they come, against the UTF8s, frames,
// traces, classes and threads written before them. A heap dump is checked in two passes:
// the first runs over each segment as it arrives (structure, serials, names, thread roots) and
// collects every object ID; the second runs at HEAP DUMP END, when all IDs of the dump are known,
// and resolves references, class order and instance layouts.
#include "hprof_verifier.h"

#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "base/hprof_format.h"
#include "hprof_model.h"
#include "hprof_reader.h"
#include "id_set.h"

namespace fasthprof {
namespace {

struct ClassInfo {
  uint64_t offset = 0;    // of its CLASS DUMP sub-record
  uint64_t super_id = 0;
  bool laid_out = false;  // set by the second pass
  // The instance layout is the class's own fields, then each super class's: kept as a link to
  // the nearest super class that declares fields, not as a copy, so that a chain of N classes
  // costs N entries and an instance's walk visits only classes that hold some of its bytes.
  uint64_t fields_at = 0;
  uint16_t field_count = 0;
  const ClassInfo* fields_super = nullptr;
  uint64_t instance_bytes = 0;  // the whole chain's
  uint64_t count = 0;     // instances and object arrays of this class
};

struct TraceInfo {
  uint64_t offset;
  uint32_t frames;
};

class Verifier {
 public:
  Verifier(const uint8_t* data, size_t size, const VerifyOptions& options)
      : reader_(data, size), options_(options) {}

  VerifyResult run() {
    result_.ok = check_file();
    return std::move(result_);
  }

 private:
  // ---- reading (the reader has framed the record or sub-record read from) ----
  uint8_t u1(uint64_t at) const { return bytes_.u1(at); }
  uint16_t u2(uint64_t at) const { return bytes_.u2(at); }
  uint32_t u4(uint64_t at) const { return bytes_.u4(at); }
  uint64_t id(uint64_t at) const { return bytes_.id(at); }
  uint64_t value_size(uint8_t type) const { return bytes_.value_size(type); }

  __attribute__((format(printf, 3, 4))) bool fail(uint64_t at, const char* format, ...) {
    char message[512];
    va_list args;
    va_start(args, format);
    std::vsnprintf(message, sizeof(message), format, args);
    va_end(args);
    result_.error = message;
    result_.error_offset = at;
    return false;
  }

  // ---- header and top-level records ----
  bool check_file();
  bool fail_read(const ReadError& error);
  bool check_record(const RecordView& record);
  bool expect_length(uint64_t at, const char* what, uint32_t length, uint64_t expected);
  bool check_trace_serial(uint64_t at, uint32_t serial, const char* what);
  bool check_class_loaded_once(uint64_t at, uint32_t serial, uint64_t class_id);
  bool is_jdk_address(uint64_t id) const { return id_size_ == 8 && (id >> 56) == 0; }
  // A class of a VM dump: a JDK address loaded with a VM-dump serial (docs/decisions.md).
  bool is_vm_dump_class(uint32_t serial, uint64_t class_id) const {
    return serial >= kFirstVmDumpSerial && is_jdk_address(class_id);
  }
  void forget_dump_scoped_classes();
  bool check_utf8(uint64_t at, uint64_t name, const char* what, bool zero_allowed);
  bool check_stack_trace(uint64_t at, uint64_t body, uint32_t length);
  bool check_alloc_sites(uint64_t at, uint64_t body, uint32_t length);
  bool check_cpu_samples(uint64_t at, uint64_t body, uint32_t length);

  // ---- heap dumps ----
  void begin_dump(uint64_t at);
  bool scan_segment(const RecordView& record);
  bool collect_sub_record(uint8_t tag, uint64_t at);
  bool collect_class_dump(uint64_t at);
  bool thread_root(uint64_t at, const char* what, uint32_t thread_serial, bool has_frame);
  bool define_object(uint64_t at, uint64_t object_id);
  bool finish_dump();
  bool lay_out_classes();
  bool resolve_sub_record(uint8_t tag, uint64_t at);
  bool resolve_class_dump(uint64_t at);
  bool resolve_fields(uint64_t field, const ClassInfo* info);
  bool resolve(uint64_t field_at, uint64_t object_id, const char* what);
  ClassInfo* find_class(uint64_t at, uint64_t class_id, const char* what);
  bool check_boolean(uint64_t at, const char* what);
  std::string class_name(uint64_t class_id) const;

  HprofReader reader_;
  HprofBytes bytes_;  // reader_'s, with the header's identifier size
  VerifyOptions options_;
  VerifyResult result_;
  uint32_t id_size_ = 0;
  bool segments_allowed_ = false;

  std::unordered_map<uint64_t, uint64_t> utf8_;                // UTF8 id -> record offset
  std::unordered_set<uint64_t> frames_;                        // STACK FRAME ids
  std::unordered_map<uint32_t, TraceInfo> traces_;             // trace serial -> TRACE
  // Without strict: trace serials named before their STACK TRACE -> (offset, what named it).
  std::unordered_map<uint32_t, std::pair<uint64_t, const char*>> forward_traces_;
  std::unordered_set<uint32_t> class_serials_;                 // from LOAD CLASS
  std::unordered_map<uint64_t, uint64_t> class_name_ids_;      // class object id -> name UTF8 id
  std::unordered_set<uint32_t> started_threads_;
  // Classes loaded and not unloaded: serial -> (class object id, LOAD CLASS offset), and the ids.
  std::unordered_map<uint32_t, std::pair<uint64_t, uint64_t>> loaded_classes_;
  std::unordered_map<uint64_t, uint32_t> loaded_class_ids_;  // class object id -> serial

  bool dump_open_ = false;
  DumpSummary dump_;
  std::vector<RecordView> segments_;
  IdSet objects_;
  std::unordered_map<uint64_t, ClassInfo> classes_;
  std::unordered_map<uint32_t, uint32_t> thread_frames_;       // thread serial -> its trace's frames
  // The dump is a VM dump (collect_class_dump): the JDK writes classes in no order.
  bool vm_dump_ = false;
  std::array<uint64_t, 256> primitive_arrays_by_type_{};
};

bool Verifier::check_file() {
  if (!reader_.read_header()) return fail_read(reader_.error());
  const HprofHeader& header = reader_.header();
  bytes_ = reader_.bytes();
  id_size_ = header.id_size;
  result_.version = header.version;
  result_.id_size = header.id_size;
  result_.timestamp_millis = header.timestamp_millis;
  segments_allowed_ = header.version == kBinaryHeaderVersion;
  RecordView record;
  while (reader_.next_record(&record)) {
    if (!check_record(record)) return false;
    ++result_.record_counts[record.tag];
    if (options_.input != nullptr) options_.input->release_before(record.end());
  }
  if (!reader_.error().message.empty()) return fail_read(reader_.error());
  if (dump_open_) {
    return fail(bytes_.size(), "file ends inside the heap dump that began at byte %" PRIu64 " (no HEAP DUMP END)",
                dump_.offset);
  }
  const std::pair<uint64_t, const char*>* first_missing = nullptr;
  uint32_t missing_serial = 0;
  for (const auto& [serial, named] : forward_traces_) {
    if (traces_.count(serial) || (first_missing != nullptr && first_missing->first <= named.first)) continue;
    first_missing = &named;
    missing_serial = serial;
  }
  if (first_missing != nullptr) {
    return fail(first_missing->first, "%s names stack trace serial %" PRIu32 ", which no STACK TRACE in the file defines",
                first_missing->second, missing_serial);
  }
  return true;
}

bool Verifier::fail_read(const ReadError& error) {
  result_.error = error.message;
  result_.error_offset = error.offset;
  return false;
}

bool Verifier::expect_length(uint64_t at, const char* what, uint32_t length, uint64_t expected) {
  if (length == expected) return true;
  return fail(at, "%s record has length %" PRIu32 ", expected %" PRIu64, what, length, expected);
}

bool Verifier::check_trace_serial(uint64_t at, uint32_t serial, const char* what) {
  if (traces_.count(serial)) return true;
  if (!options_.strict) {
    forward_traces_.emplace(serial, std::make_pair(at, what));  // checked at the end of the file
    return true;
  }
  return fail(at, "%s names stack trace serial %" PRIu32 ", which no earlier STACK TRACE defines", what, serial);
}

// A class serial is loaded once until it is unloaded. With strict, so is a class object ID (a repeat
// is what a writer leaves behind when it cuts back failed reports); JDK 17's own dumper writes a
// second LOAD CLASS, with a serial of its own, for every array class. A class of a VM dump (a JDK
// address, 8-byte ID with top byte 0, loaded with a serial from kFirstVmDumpSerial: a JDK dump
// that fasthprof inserted, docs/decisions.md) is scoped to its dump: the LOAD CLASS records since
// the previous HEAP DUMP END and that dump's CLASS DUMPs. A later VM dump may load the same address
// again (a mirror that stayed) or another class under it.
bool Verifier::check_class_loaded_once(uint64_t at, uint32_t serial, uint64_t class_id) {
  auto by_serial = loaded_classes_.find(serial);
  if (by_serial != loaded_classes_.end()) {
    return fail(at, "LOAD CLASS of class serial %" PRIu32 ", which the LOAD CLASS at byte %" PRIu64
                " loaded already", serial, by_serial->second.second);
  }
  auto by_id = loaded_class_ids_.find(class_id);
  if (options_.strict && by_id != loaded_class_ids_.end()) {
    return fail(at, "LOAD CLASS of class object ID 0x%" PRIx64 ", which the LOAD CLASS of class serial %" PRIu32
                " at byte %" PRIu64 " loaded already", class_id, by_id->second, loaded_classes_[by_id->second].second);
  }
  loaded_classes_.emplace(serial, std::make_pair(class_id, at));
  loaded_class_ids_.emplace(class_id, serial);
  return true;
}

bool Verifier::check_utf8(uint64_t at, uint64_t name, const char* what, bool zero_allowed) {
  if (name == 0 && zero_allowed) return true;
  if (utf8_.count(name)) return true;
  return fail(at, "%s 0x%" PRIx64 " is not a UTF8 written earlier", what, name);
}

bool Verifier::check_record(const RecordView& record) {
  const uint8_t tag = record.tag;
  const uint64_t at = record.offset;
  const uint64_t body = record.body;
  const uint32_t length = record.length;
  const uint64_t n = id_size_;
  switch (static_cast<RecordTag>(tag)) {
    case RecordTag::kUtf8: {
      if (length < n) return fail(at, "UTF8 record of length %" PRIu32 " is shorter than an ID", length);
      uint64_t name = id(body);
      if (name == 0) return fail(at, "UTF8 record with ID 0");
      auto [it, inserted] = utf8_.emplace(name, at);
      if (!inserted) {
        return fail(at, "UTF8 ID 0x%" PRIx64 " is already defined at byte %" PRIu64, name, it->second);
      }
      return true;
    }
    case RecordTag::kLoadClass: {
      if (!expect_length(at, "LOAD CLASS", length, 4 + n + 4 + n)) return false;
      uint32_t serial = u4(body);
      uint64_t class_id = id(body + 4);
      if (serial == 0) return fail(at, "LOAD CLASS with class serial 0");
      if (class_id == 0) return fail(at, "LOAD CLASS with class object ID 0");
      if (!check_trace_serial(at, u4(body + 4 + n), "LOAD CLASS")) return false;
      uint64_t name = id(body + 8 + n);
      if (!check_utf8(at, name, "LOAD CLASS class name", false)) return false;
      if (!check_class_loaded_once(at, serial, class_id)) return false;
      class_serials_.insert(serial);
      class_name_ids_[class_id] = name;
      return true;
    }
    case RecordTag::kUnloadClass: {
      if (!expect_length(at, "UNLOAD CLASS", length, 4)) return false;
      if (!class_serials_.count(u4(body))) {
        return fail(at, "UNLOAD CLASS names class serial %" PRIu32 ", which no LOAD CLASS defined", u4(body));
      }
      auto loaded = loaded_classes_.find(u4(body));
      if (loaded != loaded_classes_.end()) {
        auto by_id = loaded_class_ids_.find(loaded->second.first);
        if (by_id != loaded_class_ids_.end() && by_id->second == loaded->first) loaded_class_ids_.erase(by_id);
        loaded_classes_.erase(loaded);
      }
      return true;
    }
    case RecordTag::kStackFrame: {
      if (!expect_length(at, "STACK FRAME", length, 4 * n + 8)) return false;
      uint64_t frame = id(body);
      if (frame == 0) return fail(at, "STACK FRAME with frame ID 0");
      if (!check_utf8(at, id(body + n), "STACK FRAME method name", false)) return false;
      if (!check_utf8(at, id(body + 2 * n), "STACK FRAME method signature", false)) return false;
      if (!check_utf8(at, id(body + 3 * n), "STACK FRAME source file", true)) return false;
      int32_t line = static_cast<int32_t>(u4(body + 4 * n + 4));
      if (line < -3) return fail(at, "STACK FRAME line number %" PRId32 " is below -3", line);
      frames_.insert(frame);
      return true;
    }
    case RecordTag::kStackTrace: return check_stack_trace(at, body, length);
    case RecordTag::kAllocSites: return check_alloc_sites(at, body, length);
    case RecordTag::kHeapSummary: return expect_length(at, "HEAP SUMMARY", length, 24);
    case RecordTag::kStartThread: {
      if (!expect_length(at, "START THREAD", length, 4 + n + 4 + 3 * n)) return false;
      if (!check_trace_serial(at, u4(body + 4 + n), "START THREAD")) return false;
      if (!check_utf8(at, id(body + 8 + n), "START THREAD thread name", true)) return false;
      if (!check_utf8(at, id(body + 8 + 2 * n), "START THREAD group name", true)) return false;
      if (!check_utf8(at, id(body + 8 + 3 * n), "START THREAD parent group name", true)) return false;
      started_threads_.insert(u4(body));
      return true;
    }
    case RecordTag::kEndThread: {
      if (!expect_length(at, "END THREAD", length, 4)) return false;
      if (!started_threads_.count(u4(body))) {
        return fail(at, "END THREAD names thread serial %" PRIu32 ", which no START THREAD started", u4(body));
      }
      return true;
    }
    case RecordTag::kHeapDump:
      if (dump_open_) {
        return fail(at, "HEAP DUMP inside the segmented heap dump that began at byte %" PRIu64 " (no HEAP DUMP END)",
                    dump_.offset);
      }
      begin_dump(at);
      return scan_segment(record) && finish_dump();
    case RecordTag::kCpuSamples: return check_cpu_samples(at, body, length);
    case RecordTag::kControlSettings: return expect_length(at, "CONTROL SETTINGS", length, 6);
    case RecordTag::kHeapDumpSegment:
      if (!segments_allowed_) return fail(at, "HEAP DUMP SEGMENT in a %s file", result_.version.c_str());
      if (length == 0) return fail(at, "empty HEAP DUMP SEGMENT");
      if (!dump_open_) begin_dump(at);
      return scan_segment(record);
    case RecordTag::kHeapDumpEnd:
      if (!segments_allowed_) return fail(at, "HEAP DUMP END in a %s file", result_.version.c_str());
      if (!expect_length(at, "HEAP DUMP END", length, 0)) return false;
      if (!dump_open_) return fail(at, "HEAP DUMP END without a HEAP DUMP SEGMENT before it");
      return finish_dump();
  }
  return fail(at, "unknown record tag 0x%02x", tag);
}

bool Verifier::check_stack_trace(uint64_t at, uint64_t body, uint32_t length) {
  if (length < 12) return fail(at, "STACK TRACE record of length %" PRIu32 " is shorter than 12", length);
  uint32_t serial = u4(body);
  uint32_t count = u4(body + 8);
  if (!expect_length(at, "STACK TRACE", length, 12 + uint64_t{count} * id_size_)) return false;
  for (uint64_t i = 0, field = body + 12; i < count; ++i, field += id_size_) {
    if (!frames_.count(id(field))) {
      return fail(field, "STACK TRACE %" PRIu32 " frame %" PRIu64 " names frame 0x%" PRIx64
                  ", which no earlier STACK FRAME defines", serial, i, id(field));
    }
  }
  traces_[serial] = TraceInfo{at, count};
  return true;
}

bool Verifier::check_alloc_sites(uint64_t at, uint64_t body, uint32_t length) {
  constexpr uint64_t kFixed = 2 + 4 + 4 + 4 + 8 + 8 + 4;
  constexpr uint64_t kSite = 1 + 6 * 4;
  if (length < kFixed) return fail(at, "ALLOC SITES record of length %" PRIu32 " is shorter than %" PRIu64, length, kFixed);
  uint32_t count = u4(body + kFixed - 4);
  if (!expect_length(at, "ALLOC SITES", length, kFixed + count * kSite)) return false;
  for (uint64_t i = 0, site = body + kFixed; i < count; ++i, site += kSite) {
    uint8_t kind = u1(site);
    if (kind != 0 && !is_valid_basic_type(kind)) return fail(site, "ALLOC SITES site %" PRIu64 " has array kind %u", i, kind);
    if (!class_serials_.count(u4(site + 1))) {
      return fail(site, "ALLOC SITES site %" PRIu64 " names class serial %" PRIu32 ", which no earlier LOAD CLASS defines",
                  i, u4(site + 1));
    }
    if (!check_trace_serial(site, u4(site + 5), "ALLOC SITES site")) return false;
  }
  return true;
}

bool Verifier::check_cpu_samples(uint64_t at, uint64_t body, uint32_t length) {
  if (length < 8) return fail(at, "CPU SAMPLES record of length %" PRIu32 " is shorter than 8", length);
  uint32_t count = u4(body + 4);
  if (!expect_length(at, "CPU SAMPLES", length, 8 + uint64_t{count} * 8)) return false;
  for (uint64_t i = 0, entry = body + 8; i < count; ++i, entry += 8) {
    if (!check_trace_serial(entry, u4(entry + 4), "CPU SAMPLES entry")) return false;
  }
  return true;
}

// ---- heap dumps, first pass: structure, serials, names, thread roots, and the set of IDs ----

void Verifier::begin_dump(uint64_t at) {
  dump_open_ = true;
  dump_ = DumpSummary{};
  dump_.offset = at;
  segments_.clear();
  objects_.clear();
  classes_.clear();
  thread_frames_.clear();
  primitive_arrays_by_type_.fill(0);
  vm_dump_ = false;
}

// The end of a dump ends the scope of the VM dump classes loaded before it (check_class_loaded_once).
void Verifier::forget_dump_scoped_classes() {
  if (id_size_ != 8) return;
  // The serials stay loaded: a serial is never defined twice in a file.
  for (const auto& [serial, loaded] : loaded_classes_) {
    if (!is_vm_dump_class(serial, loaded.first)) continue;
    auto by_id = loaded_class_ids_.find(loaded.first);
    if (by_id != loaded_class_ids_.end() && by_id->second == serial) {
      loaded_class_ids_.erase(by_id);
      class_name_ids_.erase(loaded.first);
    }
  }
}

bool Verifier::scan_segment(const RecordView& record) {
  segments_.push_back(record);
  ++dump_.segments;
  SubRecordReader sub_records(bytes_, record);
  SubRecordView sub;
  while (sub_records.next(&sub)) {
    if (!collect_sub_record(sub.tag, sub.offset)) return false;
    ++dump_.sub_record_counts[sub.tag];
  }
  return sub_records.error().message.empty() || fail_read(sub_records.error());
}

bool Verifier::define_object(uint64_t at, uint64_t object_id) {
  if (object_id == 0) return fail(at, "%s with object ID 0", heap_tag_name(u1(at)));
  if (!objects_.insert(object_id)) {
    return fail(at, "%s object ID 0x%" PRIx64 " is already defined in this dump", heap_tag_name(u1(at)), object_id);
  }
  return true;
}

bool Verifier::thread_root(uint64_t at, const char* what, uint32_t thread_serial, bool has_frame) {
  auto thread = thread_frames_.find(thread_serial);
  if (thread == thread_frames_.end()) {
    return fail(at, "%s names thread serial %" PRIu32 ", which has no ROOT THREAD OBJECT earlier in this dump", what,
                thread_serial);
  }
  if (!has_frame) return true;
  int32_t frame = static_cast<int32_t>(u4(at + 1 + id_size_ + 4));
  if (frame != -1 && (frame < 0 || static_cast<uint32_t>(frame) >= thread->second)) {
    return fail(at, "%s frame number %" PRId32 " is outside the %" PRIu32 " frames of thread %" PRIu32
                "'s stack trace", what, frame, thread->second, thread_serial);
  }
  return true;
}

bool Verifier::collect_sub_record(uint8_t tag, uint64_t at) {
  const uint64_t n = id_size_;
  const char* name = heap_tag_name(tag);
  switch (static_cast<HeapTag>(tag)) {
    case HeapTag::kRootThreadObject: {
      uint32_t trace = u4(at + 1 + n + 4);
      if (!check_trace_serial(at, trace, name)) return false;
      // A trace defined later (lenient mode) has an unknown length: any frame number is taken.
      auto known = traces_.find(trace);
      thread_frames_[u4(at + 1 + n)] = known != traces_.end() ? known->second.frames : UINT32_MAX;
      ++dump_.roots;
      return true;
    }
    case HeapTag::kRootJniLocal:
    case HeapTag::kRootJavaFrame:
      ++dump_.roots;
      return thread_root(at, name, u4(at + 1 + n), true);
    case HeapTag::kRootNativeStack:
    case HeapTag::kRootThreadBlock:
      ++dump_.roots;
      return thread_root(at, name, u4(at + 1 + n), false);
    case HeapTag::kRootUnknown:
    case HeapTag::kRootJniGlobal:
    case HeapTag::kRootStickyClass:
    case HeapTag::kRootMonitorUsed:
      ++dump_.roots;
      return true;
    case HeapTag::kClassDump:
      ++dump_.classes;
      return collect_class_dump(at);
    case HeapTag::kInstanceDump:
      ++dump_.instances;
      return define_object(at, id(at + 1)) && check_trace_serial(at, u4(at + 1 + n), name);
    case HeapTag::kObjectArrayDump:
      ++dump_.object_arrays;
      return define_object(at, id(at + 1)) && check_trace_serial(at, u4(at + 1 + n), name);
    case HeapTag::kPrimitiveArrayDump:
      ++dump_.primitive_arrays;
      ++primitive_arrays_by_type_[u1(at + 1 + n + 8)];
      return define_object(at, id(at + 1)) && check_trace_serial(at, u4(at + 1 + n), name);
  }
  return fail(at, "unknown heap dump sub-record tag 0x%02x", tag);
}

bool Verifier::collect_class_dump(uint64_t at) {
  const uint64_t n = id_size_;
  uint64_t class_id = id(at + 1);
  if (!define_object(at, class_id)) return false;
  if (!check_trace_serial(at, u4(at + 1 + n), "CLASS DUMP")) return false;
  if (!class_name_ids_.count(class_id)) {
    return fail(at, "CLASS DUMP 0x%" PRIx64 " has no LOAD CLASS before it", class_id);
  }
  const ClassDumpView view = decode_class_dump(bytes_, SubRecordView{u1(at), at, 0});
  // A VM dump as fasthprof writes it: classes under JDK addresses, loaded with VM-dump serials.
  auto loaded = loaded_class_ids_.find(class_id);
  if (loaded != loaded_class_ids_.end() && is_vm_dump_class(loaded->second, class_id)) vm_dump_ = true;
  ClassInfo& info = classes_[class_id];
  info.offset = at;
  info.super_id = view.super_id;
  // Check the static and instance field names.
  uint64_t pos = view.statics_at;
  for (uint32_t i = 0; i < view.static_count; ++i) {
    if (!check_utf8(pos, id(pos), "CLASS DUMP static field name", true)) return false;
    pos += n + 1 + value_size(u1(pos + n));
  }
  pos = view.fields_at;
  for (uint32_t i = 0; i < view.field_count; ++i, pos += n + 1) {
    if (!check_utf8(pos, id(pos), "CLASS DUMP instance field name", true)) return false;
  }
  return true;
}

// ---- heap dumps, second pass: references, class order, instance layouts ----

bool Verifier::finish_dump() {
  // A VM dump's classes come in the JDK's order, subclasses often first: laid out from each chain's top.
  if ((!options_.strict || vm_dump_) && !lay_out_classes()) return false;
  for (const RecordView& segment : segments_) {
    // The first pass framed every sub-record of these segments without error.
    SubRecordReader sub_records(bytes_, segment);
    SubRecordView sub;
    while (sub_records.next(&sub)) {
      bool laid_out = sub.tag == static_cast<uint8_t>(HeapTag::kClassDump) && classes_[id(sub.offset + 1)].laid_out;
      if (!laid_out && !resolve_sub_record(sub.tag, sub.offset)) return false;
    }
    // The first pass released these pages; this one mapped them again.
    if (options_.input != nullptr) options_.input->release_range(segment.offset, segment.end());
  }
  for (size_t tag = 0; tag < dump_.sub_record_counts.size(); ++tag) {
    result_.sub_record_counts[tag] += dump_.sub_record_counts[tag];
  }
  if (options_.count_classes) {
    std::map<std::string, uint64_t> by_name;
    for (const auto& [class_id, info] : classes_) {
      if (info.count) by_name[class_name(class_id)] += info.count;
    }
    for (size_t type = 0; type < primitive_arrays_by_type_.size(); ++type) {
      if (!primitive_arrays_by_type_[type]) continue;
      const char* name = primitive_array_name(static_cast<uint8_t>(type));
      by_name[name != nullptr ? name : "?[]"] += primitive_arrays_by_type_[type];
    }
    dump_.class_counts.assign(by_name.begin(), by_name.end());
    std::stable_sort(dump_.class_counts.begin(), dump_.class_counts.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
  }
  result_.dumps.push_back(std::move(dump_));
  dump_open_ = false;
  objects_.clear();
  classes_.clear();
  forget_dump_scoped_classes();
  return true;
}

// Without strict, a class may come before its super class: each chain of classes not yet laid out
// is laid out from its top, before the pass in file order.
bool Verifier::lay_out_classes() {
  std::vector<uint64_t> chain;
  for (const auto& [class_id, info] : classes_) {
    chain.clear();
    for (uint64_t next = class_id; next != 0;) {
      auto found = classes_.find(next);
      if (found == classes_.end() || found->second.laid_out) break;  // resolve_class_dump says what is missing
      if (chain.size() > classes_.size()) {
        return fail(info.offset, "CLASS DUMP 0x%" PRIx64 " is its own super class (through its chain)", class_id);
      }
      chain.push_back(next);
      next = found->second.super_id;
    }
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      if (!resolve_class_dump(classes_.find(*it)->second.offset)) return false;
    }
  }
  return true;
}

bool Verifier::resolve(uint64_t field_at, uint64_t object_id, const char* what) {
  if (object_id == 0 || objects_.contains(object_id)) return true;
  // The JDK's dumper leaves out objects that the VM's own arrays still reference (JDK 25: a few),
  // so a VM dump is held to the lenient rule even in strict mode.
  if (!options_.strict || vm_dump_) {
    ++dump_.unresolved_references;
    return true;
  }
  return fail(field_at, "%s 0x%" PRIx64 " is not an object, array or class in this dump", what, object_id);
}

bool Verifier::check_boolean(uint64_t at, const char* what) {
  if (u1(at) <= 1) return true;
  return fail(at, "%s has boolean value %u", what, u1(at));
}

ClassInfo* Verifier::find_class(uint64_t at, uint64_t class_id, const char* what) {
  auto it = classes_.find(class_id);
  if (it == classes_.end()) {
    if (objects_.contains(class_id)) {
      fail(at, "%s 0x%" PRIx64 " is not a CLASS DUMP", what, class_id);
    } else {
      fail(at, "%s 0x%" PRIx64 " has no CLASS DUMP in this dump", what, class_id);
    }
    return nullptr;
  }
  if (options_.strict && !vm_dump_ && it->second.offset > at) {
    fail(at, "%s 0x%" PRIx64 " is dumped later, at byte %" PRIu64 " (a CLASS DUMP must come first)", what, class_id,
         it->second.offset);
    return nullptr;
  }
  return &it->second;
}

bool Verifier::resolve_sub_record(uint8_t tag, uint64_t at) {
  const uint64_t n = id_size_;
  const uint64_t object_at = at + 1;
  switch (static_cast<HeapTag>(tag)) {
    case HeapTag::kRootUnknown:
    case HeapTag::kRootJniGlobal:  // its second ID names the JNI reference, not an object
    case HeapTag::kRootJniLocal:
    case HeapTag::kRootJavaFrame:
    case HeapTag::kRootNativeStack:
    case HeapTag::kRootStickyClass:
    case HeapTag::kRootThreadBlock:
    case HeapTag::kRootMonitorUsed:
    case HeapTag::kRootThreadObject:
      return resolve(object_at, id(object_at), heap_tag_name(tag));
    case HeapTag::kClassDump: return resolve_class_dump(at);
    case HeapTag::kInstanceDump: {
      ClassInfo* info = find_class(at, id(at + 1 + n + 4), "INSTANCE DUMP's class");
      if (info == nullptr) return false;
      ++info->count;
      uint32_t bytes = u4(at + 1 + 2 * n + 4);
      if (bytes != info->instance_bytes) {
        return fail(at, "INSTANCE DUMP 0x%" PRIx64 " has %" PRIu32 " bytes of field values, its class chain declares %"
                    PRIu64, id(object_at), bytes, info->instance_bytes);
      }
      return resolve_fields(at + 1 + 2 * n + 8, info);
    }
    case HeapTag::kObjectArrayDump: {
      ClassInfo* info = find_class(at, id(at + 1 + n + 8), "OBJECT ARRAY DUMP's class");
      if (info == nullptr) return false;
      ++info->count;
      uint32_t count = u4(at + 1 + n + 4);
      uint64_t element = at + 1 + n + 8 + n;
      for (uint32_t i = 0; i < count; ++i, element += n) {
        if (!resolve(element, id(element), "OBJECT ARRAY DUMP element")) return false;
      }
      return true;
    }
    case HeapTag::kPrimitiveArrayDump: return true;
  }
  return fail(at, "unknown heap dump sub-record tag 0x%02x", tag);
}

bool Verifier::resolve_class_dump(uint64_t at) {
  const uint64_t n = id_size_;
  const ClassDumpView view = decode_class_dump(bytes_, SubRecordView{u1(at), at, 0});
  const uint64_t class_id = view.class_id;
  ClassInfo& info = classes_[class_id];
  uint64_t pos = at + 1 + n + 4;
  const char* references[] = {"CLASS DUMP super class", "CLASS DUMP class loader", "CLASS DUMP signers",
                              "CLASS DUMP protection domain"};
  for (const char* what : references) {
    if (!resolve(pos, id(pos), what)) return false;
    pos += n;
  }
  const ClassInfo* super = nullptr;
  if (info.super_id != 0) {
    super = find_class(at, info.super_id, "CLASS DUMP's super class");
    if (super == nullptr) return false;
    if (!super->laid_out) return fail(at, "CLASS DUMP 0x%" PRIx64 " is its own super class", class_id);
  }
  pos = view.constants_at;
  for (uint32_t i = 0; i < view.constant_count; ++i) {
    uint8_t type = u1(pos + 2);
    pos += 3;
    if (type == static_cast<uint8_t>(BasicType::kObject) && !resolve(pos, id(pos), "CLASS DUMP constant pool entry")) {
      return false;
    }
    if (type == static_cast<uint8_t>(BasicType::kBoolean) && !check_boolean(pos, "CLASS DUMP constant pool entry")) {
      return false;
    }
    pos += value_size(type);
  }
  pos = view.statics_at;
  for (uint32_t i = 0; i < view.static_count; ++i) {
    uint8_t type = u1(pos + n);
    pos += n + 1;
    if (type == static_cast<uint8_t>(BasicType::kObject) && !resolve(pos, id(pos), "CLASS DUMP static field value")) {
      return false;
    }
    if (type == static_cast<uint8_t>(BasicType::kBoolean) && !check_boolean(pos, "CLASS DUMP static field")) {
      return false;
    }
    pos += value_size(type);
  }
  info.fields_at = view.fields_at;
  info.field_count = static_cast<uint16_t>(view.field_count);
  info.instance_bytes = 0;
  pos = view.fields_at;
  for (uint32_t i = 0; i < view.field_count; ++i, pos += n + 1) info.instance_bytes += value_size(u1(pos + n));
  info.fields_super = nullptr;
  if (super != nullptr) {
    info.fields_super = super->field_count > 0 ? super : super->fields_super;
    info.instance_bytes += super->instance_bytes;
  }
  info.laid_out = true;
  return true;
}

// The values of an instance whose size matched its chain's: each class's fields, own class first.
bool Verifier::resolve_fields(uint64_t field, const ClassInfo* info) {
  const uint64_t n = id_size_;
  for (const ClassInfo* c = info->field_count > 0 ? info : info->fields_super; c != nullptr; c = c->fields_super) {
    uint64_t pos = c->fields_at;
    for (uint32_t i = 0; i < c->field_count; ++i, pos += n + 1) {
      const uint8_t type = u1(pos + n);
      if (type == static_cast<uint8_t>(BasicType::kObject)) {
        if (!resolve(field, id(field), "INSTANCE DUMP field value")) return false;
      } else if (type == static_cast<uint8_t>(BasicType::kBoolean)) {
        if (!check_boolean(field, "INSTANCE DUMP field")) return false;
      }
      field += value_size(type);
    }
  }
  return true;
}

std::string Verifier::class_name(uint64_t class_id) const {
  auto name = class_name_ids_.find(class_id);
  if (name != class_name_ids_.end()) {
    auto utf8 = utf8_.find(name->second);
    if (utf8 != utf8_.end()) {
      uint64_t body = utf8->second + kRecordHeaderSize;
      uint64_t length = u4(utf8->second + 5) - id_size_;
      return std::string(reinterpret_cast<const char*>(bytes_.data() + body + id_size_), length);
    }
  }
  char fallback[32];
  std::snprintf(fallback, sizeof(fallback), "0x%" PRIx64, class_id);
  return fallback;
}

}  // namespace

VerifyResult verify_hprof(const uint8_t* data, size_t size, const VerifyOptions& options) {
  return Verifier(data, size, options).run();
}

}  // namespace fasthprof
