// The checks are in two layers. Top-level records are checked as they come, against the UTF8s,
// frames, traces, classes and threads written before them. A heap dump is checked in two passes:
// the first runs over each segment as it arrives (structure, serials, names, thread roots) and
// collects every object ID; the second runs at HEAP DUMP END, when all IDs of the dump are known,
// and resolves references, class order and instance layouts.
#include "hprof_verifier.h"

#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "hprof_format.h"
#include "id_set.h"

namespace fasthprof {
namespace {

constexpr size_t kVersionSize = sizeof(kBinaryHeaderVersion) - 1;  // both versions are 18 bytes
constexpr uint64_t kHeaderSize = kVersionSize + 1 + 4 + 8;
constexpr uint64_t kClassDumpFixedIds = 7;  // class, super, loader, signers, domain, 2 reserved

bool is_valid_type(uint8_t code) {
  return code == static_cast<uint8_t>(BasicType::kObject) ||
         (code >= static_cast<uint8_t>(BasicType::kBoolean) && code <= static_cast<uint8_t>(BasicType::kLong));
}

bool is_primitive_type(uint8_t code) { return is_valid_type(code) && code != static_cast<uint8_t>(BasicType::kObject); }

const char* primitive_array_name(uint8_t code) {
  switch (static_cast<BasicType>(code)) {
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
  return "?[]";
}

struct ClassInfo {
  uint64_t offset = 0;    // of its CLASS DUMP sub-record
  uint64_t super_id = 0;
  bool laid_out = false;  // set by the second pass
  std::vector<uint8_t> layout;  // instance field types: own class first, then each super
  uint64_t instance_bytes = 0;
  uint64_t count = 0;     // instances and object arrays of this class
};

struct TraceInfo {
  uint64_t offset;
  uint32_t frames;
};

class Verifier {
 public:
  Verifier(const uint8_t* data, size_t size, const VerifyOptions& options)
      : data_(data), size_(size), options_(options) {}

  VerifyResult run() {
    result_.ok = check_file();
    return std::move(result_);
  }

 private:
  // ---- reading (callers have checked bounds) ----
  uint8_t u1(uint64_t at) const { return data_[at]; }
  uint16_t u2(uint64_t at) const { return static_cast<uint16_t>(data_[at] << 8 | data_[at + 1]); }
  uint32_t u4(uint64_t at) const {
    return uint32_t{data_[at]} << 24 | uint32_t{data_[at + 1]} << 16 | uint32_t{data_[at + 2]} << 8 | data_[at + 3];
  }
  uint64_t u8(uint64_t at) const { return uint64_t{u4(at)} << 32 | u4(at + 4); }
  uint64_t id(uint64_t at) const { return id_size_ == 4 ? u4(at) : u8(at); }
  uint64_t value_size(uint8_t type) const {
    return type == static_cast<uint8_t>(BasicType::kObject) ? id_size_ : basic_type_size(static_cast<BasicType>(type));
  }

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
  bool check_header();
  bool check_record(uint8_t tag, uint64_t at, uint64_t body, uint32_t length);
  bool expect_length(uint64_t at, const char* what, uint32_t length, uint64_t expected);
  bool check_trace_serial(uint64_t at, uint32_t serial, const char* what);
  bool check_class_loaded_once(uint64_t at, uint32_t serial, uint64_t class_id);
  bool check_utf8(uint64_t at, uint64_t name, const char* what, bool zero_allowed);
  bool check_stack_trace(uint64_t at, uint64_t body, uint32_t length);
  bool check_alloc_sites(uint64_t at, uint64_t body, uint32_t length);
  bool check_cpu_samples(uint64_t at, uint64_t body, uint32_t length);

  // ---- heap dumps ----
  void begin_dump(uint64_t at);
  bool scan_segment(uint64_t body, uint64_t length);
  bool sub_record_size(uint8_t tag, uint64_t at, uint64_t end, uint64_t* size);
  bool class_dump_size(uint64_t at, uint64_t end, uint64_t* size);
  bool collect_sub_record(uint8_t tag, uint64_t at);
  bool collect_class_dump(uint64_t at);
  bool thread_root(uint64_t at, const char* what, uint32_t thread_serial, bool has_frame);
  bool define_object(uint64_t at, uint64_t object_id);
  bool finish_dump();
  bool lay_out_classes();
  bool resolve_sub_record(uint8_t tag, uint64_t at);
  bool resolve_class_dump(uint64_t at);
  bool resolve(uint64_t field_at, uint64_t object_id, const char* what);
  ClassInfo* find_class(uint64_t at, uint64_t class_id, const char* what);
  bool check_boolean(uint64_t at, const char* what);
  std::string class_name(uint64_t class_id) const;

  const uint8_t* data_;
  uint64_t size_;
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
  std::vector<std::pair<uint64_t, uint64_t>> segments_;        // (body offset, length)
  IdSet objects_;
  std::unordered_map<uint64_t, ClassInfo> classes_;
  std::unordered_map<uint32_t, uint32_t> thread_frames_;       // thread serial -> its trace's frames
  std::array<uint64_t, 256> primitive_arrays_by_type_{};
};

bool Verifier::check_file() {
  if (!check_header()) return false;
  uint64_t at = kHeaderSize;
  while (at < size_) {
    if (size_ - at < kRecordHeaderSize) {
      return fail(at, "truncated record header: %" PRIu64 " bytes left, a record header has %zu", size_ - at,
                  kRecordHeaderSize);
    }
    uint8_t tag = u1(at);
    if (record_tag_name(tag) == nullptr) return fail(at, "unknown record tag 0x%02x", tag);
    uint32_t length = u4(at + 5);
    uint64_t body = at + kRecordHeaderSize;
    if (length > size_ - body) {
      return fail(at, "%s record of length %" PRIu32 " runs past the end of the file (%" PRIu64 " bytes left)",
                  record_tag_name(tag), length, size_ - body);
    }
    if (!check_record(tag, at, body, length)) return false;
    ++result_.record_counts[tag];
    at = body + length;
  }
  if (dump_open_) {
    return fail(size_, "file ends inside the heap dump that began at byte %" PRIu64 " (no HEAP DUMP END)",
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

bool Verifier::check_header() {
  const char* versions[] = {kTextHeaderVersion, kBinaryHeaderVersion};
  static_assert(sizeof(kTextHeaderVersion) == sizeof(kBinaryHeaderVersion));
  if (size_ == 0) return fail(0, "empty file: no HPROF header");
  const size_t compared = static_cast<size_t>(std::min<uint64_t>(size_, kVersionSize + 1));
  for (const char* version : versions) {
    if (std::memcmp(data_, version, compared) == 0) result_.version = version;
  }
  if (result_.version.empty()) {
    return fail(0, "not an HPROF binary file: the header is not \"%s\" or \"%s\" followed by NUL",
                kTextHeaderVersion, kBinaryHeaderVersion);
  }
  segments_allowed_ = result_.version == kBinaryHeaderVersion;
  if (size_ < kHeaderSize) return fail(size_, "truncated header: %" PRIu64 " bytes, need %" PRIu64, size_, kHeaderSize);
  id_size_ = u4(kVersionSize + 1);
  if (id_size_ != 4 && id_size_ != 8) return fail(kVersionSize + 1, "identifier size %" PRIu32 " is not 4 or 8", id_size_);
  result_.id_size = id_size_;
  result_.timestamp_millis = u8(kVersionSize + 5);
  return true;
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
// second LOAD CLASS, with a serial of its own, for every array class.
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

bool Verifier::check_record(uint8_t tag, uint64_t at, uint64_t body, uint32_t length) {
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
        loaded_class_ids_.erase(loaded->second.first);
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
      return scan_segment(body, length) && finish_dump();
    case RecordTag::kCpuSamples: return check_cpu_samples(at, body, length);
    case RecordTag::kControlSettings: return expect_length(at, "CONTROL SETTINGS", length, 6);
    case RecordTag::kHeapDumpSegment:
      if (!segments_allowed_) return fail(at, "HEAP DUMP SEGMENT in a %s file", result_.version.c_str());
      if (length == 0) return fail(at, "empty HEAP DUMP SEGMENT");
      if (!dump_open_) begin_dump(at);
      return scan_segment(body, length);
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
    if (kind != 0 && !is_valid_type(kind)) return fail(site, "ALLOC SITES site %" PRIu64 " has array kind %u", i, kind);
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
}

bool Verifier::scan_segment(uint64_t body, uint64_t length) {
  segments_.emplace_back(body, length);
  ++dump_.segments;
  const uint64_t end = body + length;
  for (uint64_t at = body; at < end;) {
    uint8_t tag = u1(at);
    uint64_t size = 0;
    if (!sub_record_size(tag, at, end, &size)) return false;
    if (!collect_sub_record(tag, at)) return false;
    ++dump_.sub_record_counts[tag];
    at += size;
  }
  return true;
}

bool Verifier::sub_record_size(uint8_t tag, uint64_t at, uint64_t end, uint64_t* size) {
  const uint64_t n = id_size_;
  const uint64_t left = end - at;
  const char* name = heap_tag_name(tag);
  if (name == nullptr) return fail(at, "unknown heap dump sub-record tag 0x%02x", tag);
  uint64_t need = 0;
  switch (static_cast<HeapTag>(tag)) {
    case HeapTag::kRootUnknown:
    case HeapTag::kRootStickyClass:
    case HeapTag::kRootMonitorUsed: need = 1 + n; break;
    case HeapTag::kRootJniGlobal: need = 1 + 2 * n; break;
    case HeapTag::kRootJniLocal:
    case HeapTag::kRootJavaFrame:
    case HeapTag::kRootThreadObject: need = 1 + n + 8; break;
    case HeapTag::kRootNativeStack:
    case HeapTag::kRootThreadBlock: need = 1 + n + 4; break;
    case HeapTag::kClassDump: return class_dump_size(at, end, size);
    case HeapTag::kInstanceDump:
      need = 1 + n + 4 + n + 4;
      if (left >= need) need += u4(at + 1 + 2 * n + 4);
      break;
    case HeapTag::kObjectArrayDump:
      need = 1 + n + 4 + 4 + n;
      if (left >= need) need += uint64_t{u4(at + 1 + n + 4)} * n;
      break;
    case HeapTag::kPrimitiveArrayDump:
      need = 1 + n + 4 + 4 + 1;
      if (left >= need) {
        uint8_t type = u1(at + need - 1);
        if (!is_primitive_type(type)) return fail(at, "PRIMITIVE ARRAY DUMP with element type %u", type);
        need += uint64_t{u4(at + 1 + n + 4)} * value_size(type);
      }
      break;
  }
  if (need > left) {
    return fail(at, "%s sub-record needs %" PRIu64 " bytes but only %" PRIu64
                " are left in its segment (sub-records must not span segments)", name, need, left);
  }
  *size = need;
  return true;
}

bool Verifier::class_dump_size(uint64_t at, uint64_t end, uint64_t* size) {
  const uint64_t n = id_size_;
  uint64_t pos = at + 1 + kClassDumpFixedIds * n + 8;
  auto truncated = [&]() {
    return fail(at, "CLASS DUMP sub-record runs past the end of its segment (sub-records must not span segments)");
  };
  auto bad_type = [&](uint64_t type_at, const char* what) {
    return fail(type_at, "CLASS DUMP %s has invalid basic type %u", what, u1(type_at));
  };
  if (pos > end || end - pos < 2) return truncated();
  uint32_t constants = u2(pos);
  pos += 2;
  for (uint32_t i = 0; i < constants; ++i) {
    if (end - pos < 3) return truncated();
    if (!is_valid_type(u1(pos + 2))) return bad_type(pos + 2, "constant pool entry");
    uint64_t value = value_size(u1(pos + 2));
    pos += 3;
    if (end - pos < value) return truncated();
    pos += value;
  }
  if (end - pos < 2) return truncated();
  uint32_t statics = u2(pos);
  pos += 2;
  for (uint32_t i = 0; i < statics; ++i) {
    if (end - pos < n + 1) return truncated();
    if (!is_valid_type(u1(pos + n))) return bad_type(pos + n, "static field");
    uint64_t value = value_size(u1(pos + n));
    pos += n + 1;
    if (end - pos < value) return truncated();
    pos += value;
  }
  if (end - pos < 2) return truncated();
  uint32_t fields = u2(pos);
  pos += 2;
  if (end - pos < uint64_t{fields} * (n + 1)) return truncated();
  for (uint32_t i = 0; i < fields; ++i, pos += n + 1) {
    if (!is_valid_type(u1(pos + n))) return bad_type(pos + n, "instance field");
  }
  *size = pos - at;
  return true;
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
  ClassInfo& info = classes_[class_id];
  info.offset = at;
  info.super_id = id(at + 1 + n + 4);
  // Skip the constant pool; check the static and instance field names.
  uint64_t pos = at + 1 + kClassDumpFixedIds * n + 8;
  uint32_t constants = u2(pos);
  pos += 2;
  for (uint32_t i = 0; i < constants; ++i) pos += 3 + value_size(u1(pos + 2));
  uint32_t statics = u2(pos);
  pos += 2;
  for (uint32_t i = 0; i < statics; ++i) {
    if (!check_utf8(pos, id(pos), "CLASS DUMP static field name", true)) return false;
    pos += n + 1 + value_size(u1(pos + n));
  }
  uint32_t fields = u2(pos);
  pos += 2;
  for (uint32_t i = 0; i < fields; ++i, pos += n + 1) {
    if (!check_utf8(pos, id(pos), "CLASS DUMP instance field name", true)) return false;
  }
  return true;
}

// ---- heap dumps, second pass: references, class order, instance layouts ----

bool Verifier::finish_dump() {
  if (!options_.strict && !lay_out_classes()) return false;
  for (const auto& [body, length] : segments_) {
    const uint64_t end = body + length;
    for (uint64_t at = body; at < end;) {
      uint8_t tag = u1(at);
      uint64_t size = 0;
      if (!sub_record_size(tag, at, end, &size)) return false;
      bool laid_out = tag == static_cast<uint8_t>(HeapTag::kClassDump) && classes_[id(at + 1)].laid_out;
      if (!laid_out && !resolve_sub_record(tag, at)) return false;
      at += size;
    }
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
      if (primitive_arrays_by_type_[type]) by_name[primitive_array_name(static_cast<uint8_t>(type))] += primitive_arrays_by_type_[type];
    }
    dump_.class_counts.assign(by_name.begin(), by_name.end());
    std::stable_sort(dump_.class_counts.begin(), dump_.class_counts.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
  }
  result_.dumps.push_back(std::move(dump_));
  dump_open_ = false;
  objects_.clear();
  classes_.clear();
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
  if (!options_.strict) {
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
  if (options_.strict && it->second.offset > at) {
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
      uint64_t field = at + 1 + 2 * n + 8;
      for (uint8_t type : info->layout) {
        if (type == static_cast<uint8_t>(BasicType::kObject)) {
          if (!resolve(field, id(field), "INSTANCE DUMP field value")) return false;
        } else if (type == static_cast<uint8_t>(BasicType::kBoolean)) {
          if (!check_boolean(field, "INSTANCE DUMP field")) return false;
        }
        field += value_size(type);
      }
      return true;
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
  const uint64_t class_id = id(at + 1);
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
  pos = at + 1 + kClassDumpFixedIds * n + 8;
  uint32_t constants = u2(pos);
  pos += 2;
  for (uint32_t i = 0; i < constants; ++i) {
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
  uint32_t statics = u2(pos);
  pos += 2;
  for (uint32_t i = 0; i < statics; ++i) {
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
  uint32_t fields = u2(pos);
  pos += 2;
  info.layout.clear();
  info.instance_bytes = 0;
  for (uint32_t i = 0; i < fields; ++i, pos += n + 1) {
    info.layout.push_back(u1(pos + n));
    info.instance_bytes += value_size(u1(pos + n));
  }
  if (super != nullptr) {
    info.layout.insert(info.layout.end(), super->layout.begin(), super->layout.end());
    info.instance_bytes += super->instance_bytes;
  }
  info.laid_out = true;
  return true;
}

std::string Verifier::class_name(uint64_t class_id) const {
  auto name = class_name_ids_.find(class_id);
  if (name != class_name_ids_.end()) {
    auto utf8 = utf8_.find(name->second);
    if (utf8 != utf8_.end()) {
      uint64_t body = utf8->second + kRecordHeaderSize;
      uint64_t length = u4(utf8->second + 5) - id_size_;
      return std::string(reinterpret_cast<const char*>(data_ + body + id_size_), length);
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
