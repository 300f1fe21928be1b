// Framing of HPROF records and sub-records, and the names of their tags.
#include "hprof_reader.h"

#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "base/hprof_format.h"

namespace fasthprof {
namespace {

static_assert(static_cast<uint8_t>(HeapTag::kInstanceDump) == 0x21 && static_cast<uint8_t>(HeapTag::kObjectArrayDump) == 0x22 &&
              static_cast<uint8_t>(HeapTag::kPrimitiveArrayDump) == 0x23);
static_assert(static_cast<uint8_t>(BasicType::kBoolean) == 4 && static_cast<uint8_t>(BasicType::kLong) == 11);

constexpr size_t kVersionSize = sizeof(kBinaryHeaderVersion) - 1;  // both versions are 18 bytes
static_assert(sizeof(kTextHeaderVersion) == sizeof(kBinaryHeaderVersion));
static_assert(kHprofHeaderSize == kVersionSize + 1 + 4 + 8);
constexpr uint64_t kClassDumpFixedIds = 7;  // class, super, loader, signers, domain, 2 reserved

__attribute__((format(printf, 1, 2))) std::string format(const char* format, ...) {
  char message[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(message, sizeof(message), format, args);
  va_end(args);
  return message;
}

}  // namespace

uint64_t HprofBytes::value_size(uint8_t type) const {
  if (type == static_cast<uint8_t>(BasicType::kObject)) return id_size_;
  return is_valid_basic_type(type) ? basic_type_size(static_cast<BasicType>(type)) : 0;
}

uint64_t HprofBytes::value(uint8_t type, uint64_t at) const {
  switch (value_size(type)) {
    case 1: return u1(at);
    case 2: return u2(at);
    case 4: return u4(at);
    case 8: return u8(at);
  }
  return 0;
}

bool is_valid_basic_type(uint8_t code) {
  return code == static_cast<uint8_t>(BasicType::kObject) ||
         (code >= static_cast<uint8_t>(BasicType::kBoolean) && code <= static_cast<uint8_t>(BasicType::kLong));
}

bool is_primitive_basic_type(uint8_t code) {
  return is_valid_basic_type(code) && code != static_cast<uint8_t>(BasicType::kObject);
}

bool is_root_tag(uint8_t tag) {
  return heap_tag_name(tag) != nullptr && tag != static_cast<uint8_t>(HeapTag::kClassDump) &&
         tag != static_cast<uint8_t>(HeapTag::kInstanceDump) && tag != static_cast<uint8_t>(HeapTag::kObjectArrayDump) &&
         tag != static_cast<uint8_t>(HeapTag::kPrimitiveArrayDump);
}

// ---- top-level records ----

bool HprofReader::fail(uint64_t at, std::string message) {
  error_.message = std::move(message);
  error_.offset = at;
  done_ = true;
  return false;
}

bool HprofReader::read_header() {
  const uint8_t* data = bytes_.data();
  const uint64_t size = bytes_.size();
  if (size == 0) return fail(0, "empty file: no HPROF header");
  // A prefix of a version string is reported as truncated below, anything else as not HPROF.
  const size_t compared = static_cast<size_t>(std::min<uint64_t>(size, kVersionSize + 1));
  for (const char* version : {kTextHeaderVersion, kBinaryHeaderVersion}) {
    if (std::memcmp(data, version, compared) == 0) header_.version = std::string_view(version, kVersionSize);
  }
  if (header_.version.empty()) {
    return fail(0, format("not an HPROF binary file: the header is not \"%s\" or \"%s\" followed by NUL",
                          kTextHeaderVersion, kBinaryHeaderVersion));
  }
  if (size < kHprofHeaderSize) {
    return fail(size, format("truncated header: %" PRIu64 " bytes, need %" PRIu64, size, kHprofHeaderSize));
  }
  HprofBytes header(data, size, 0);
  uint32_t id_size = header.u4(kVersionSize + 1);
  if (id_size != 4 && id_size != 8) {
    return fail(kVersionSize + 1, format("identifier size %" PRIu32 " is not 4 or 8", id_size));
  }
  header_.id_size = id_size;
  header_.timestamp_millis = header.u8(kVersionSize + 5);
  bytes_ = HprofBytes(data, size, id_size);
  position_ = kHprofHeaderSize;
  return true;
}

bool HprofReader::next_record(RecordView* record) {
  if (done_ || header_.id_size == 0) return false;
  const uint64_t size = bytes_.size();
  const uint64_t at = position_;
  if (at == size) {
    done_ = true;
    return false;
  }
  if (size - at < kRecordHeaderSize) {
    return fail(at, format("truncated record header: %" PRIu64 " bytes left, a record header has %zu", size - at,
                           kRecordHeaderSize));
  }
  uint8_t tag = bytes_.u1(at);
  // The tag set is closed: an unknown tag is far more often a framing error than a new record kind.
  if (record_tag_name(tag) == nullptr) return fail(at, format("unknown record tag 0x%02x", tag));
  uint32_t length = bytes_.u4(at + 5);
  uint64_t body = at + kRecordHeaderSize;
  if (length > size - body) {
    return fail(at, format("%s record of length %" PRIu32 " runs past the end of the file (%" PRIu64 " bytes left)",
                           record_tag_name(tag), length, size - body));
  }
  record->tag = tag;
  record->time_micros = bytes_.u4(at + 1);
  record->offset = at;
  record->body = body;
  record->length = length;
  position_ = body + length;
  return true;
}

// ---- heap-dump sub-records ----

bool SubRecordReader::fail(uint64_t at, std::string message) {
  error_.message = std::move(message);
  error_.offset = at;
  done_ = true;
  return false;
}

bool SubRecordReader::next_slow(SubRecordView* sub) {
  if (done_) return false;
  const uint64_t at = position_;
  if (at >= end_) {
    done_ = true;
    return false;
  }
  const uint64_t n = bytes_.id_size();
  const uint64_t left = end_ - at;
  const uint8_t tag = bytes_.u1(at);
  const char* name = heap_tag_name(tag);
  if (name == nullptr) return fail(at, format("unknown heap dump sub-record tag 0x%02x", tag));
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
    case HeapTag::kClassDump:
      if (!class_dump_size(at, &need)) return false;
      break;
    case HeapTag::kInstanceDump:
      need = 1 + n + 4 + n + 4;
      if (left >= need) need += bytes_.u4(at + 1 + 2 * n + 4);
      break;
    case HeapTag::kObjectArrayDump:
      need = 1 + n + 4 + 4 + n;
      if (left >= need) need += uint64_t{bytes_.u4(at + 1 + n + 4)} * n;
      break;
    case HeapTag::kPrimitiveArrayDump:
      need = 1 + n + 4 + 4 + 1;
      if (left >= need) {
        uint8_t type = bytes_.u1(at + need - 1);
        if (!is_primitive_basic_type(type)) return fail(at, format("PRIMITIVE ARRAY DUMP with element type %u", type));
        need += uint64_t{bytes_.u4(at + 1 + n + 4)} * bytes_.value_size(type);
      }
      break;
  }
  if (need > left) {
    return fail(at, format("%s sub-record needs %" PRIu64 " bytes but only %" PRIu64
                           " are left in its segment (sub-records must not span segments)",
                           name, need, left));
  }
  sub->tag = tag;
  sub->offset = at;
  sub->size = need;
  position_ = at + need;
  return true;
}

bool SubRecordReader::class_dump_size(uint64_t at, uint64_t* size) {
  const uint64_t n = bytes_.id_size();
  const uint64_t end = end_;
  uint64_t pos = at + 1 + kClassDumpFixedIds * n + 8;
  auto truncated = [&]() {
    return fail(at, "CLASS DUMP sub-record runs past the end of its segment (sub-records must not span segments)");
  };
  auto bad_type = [&](uint64_t type_at, const char* what) {
    return fail(type_at, format("CLASS DUMP %s has invalid basic type %u", what, bytes_.u1(type_at)));
  };
  if (pos > end || end - pos < 2) return truncated();
  uint32_t constants = bytes_.u2(pos);
  pos += 2;
  for (uint32_t i = 0; i < constants; ++i) {
    if (end - pos < 3) return truncated();
    if (!is_valid_basic_type(bytes_.u1(pos + 2))) return bad_type(pos + 2, "constant pool entry");
    uint64_t value = bytes_.value_size(bytes_.u1(pos + 2));
    pos += 3;
    if (end - pos < value) return truncated();
    pos += value;
  }
  if (end - pos < 2) return truncated();
  uint32_t statics = bytes_.u2(pos);
  pos += 2;
  for (uint32_t i = 0; i < statics; ++i) {
    if (end - pos < n + 1) return truncated();
    if (!is_valid_basic_type(bytes_.u1(pos + n))) return bad_type(pos + n, "static field");
    uint64_t value = bytes_.value_size(bytes_.u1(pos + n));
    pos += n + 1;
    if (end - pos < value) return truncated();
    pos += value;
  }
  if (end - pos < 2) return truncated();
  uint32_t fields = bytes_.u2(pos);
  pos += 2;
  if (end - pos < uint64_t{fields} * (n + 1)) return truncated();
  for (uint32_t i = 0; i < fields; ++i, pos += n + 1) {
    if (!is_valid_basic_type(bytes_.u1(pos + n))) return bad_type(pos + n, "instance field");
  }
  *size = pos - at;
  return true;
}

// ---- decoders ----

RootView decode_root(const HprofBytes& bytes, const SubRecordView& sub) {
  const uint64_t n = bytes.id_size();
  const uint64_t at = sub.offset;
  RootView root;
  root.object_id = bytes.id(at + 1);
  switch (static_cast<HeapTag>(sub.tag)) {
    case HeapTag::kRootJniGlobal: root.jni_global_ref_id = bytes.id(at + 1 + n); break;
    case HeapTag::kRootJniLocal:
    case HeapTag::kRootJavaFrame:
      root.thread_serial = bytes.u4(at + 1 + n);
      root.frame = static_cast<int32_t>(bytes.u4(at + 1 + n + 4));
      break;
    case HeapTag::kRootNativeStack:
    case HeapTag::kRootThreadBlock: root.thread_serial = bytes.u4(at + 1 + n); break;
    case HeapTag::kRootThreadObject:
      root.thread_serial = bytes.u4(at + 1 + n);
      root.trace_serial = bytes.u4(at + 1 + n + 4);
      break;
    default: break;
  }
  return root;
}

ClassDumpView decode_class_dump(const HprofBytes& bytes, const SubRecordView& sub) {
  const uint64_t n = bytes.id_size();
  const uint64_t at = sub.offset;
  ClassDumpView view;
  view.class_id = bytes.id(at + 1);
  view.trace_serial = bytes.u4(at + 1 + n);
  view.super_id = bytes.id(at + 1 + n + 4);
  view.loader_id = bytes.id(at + 1 + 2 * n + 4);
  view.signers_id = bytes.id(at + 1 + 3 * n + 4);
  view.protection_domain_id = bytes.id(at + 1 + 4 * n + 4);
  uint64_t pos = at + 1 + kClassDumpFixedIds * n + 4;
  view.instance_size = bytes.u4(pos);
  pos += 4;
  view.constant_count = bytes.u2(pos);
  view.constants_at = pos += 2;
  for (uint32_t i = 0; i < view.constant_count; ++i) pos += 3 + bytes.value_size(bytes.u1(pos + 2));
  view.static_count = bytes.u2(pos);
  view.statics_at = pos += 2;
  for (uint32_t i = 0; i < view.static_count; ++i) pos += n + 1 + bytes.value_size(bytes.u1(pos + n));
  view.field_count = bytes.u2(pos);
  view.fields_at = pos + 2;
  return view;
}

ObjectDumpView decode_object_dump(const HprofBytes& bytes, const SubRecordView& sub) {
  const uint64_t n = bytes.id_size();
  const uint64_t at = sub.offset;
  ObjectDumpView view;
  view.object_id = bytes.id(at + 1);
  view.trace_serial = bytes.u4(at + 1 + n);
  switch (static_cast<HeapTag>(sub.tag)) {
    case HeapTag::kInstanceDump:
      view.class_id = bytes.id(at + 1 + n + 4);
      view.count = bytes.u4(at + 1 + 2 * n + 4);
      view.values_at = at + 1 + 2 * n + 8;
      break;
    case HeapTag::kObjectArrayDump:
      view.count = bytes.u4(at + 1 + n + 4);
      view.class_id = bytes.id(at + 1 + n + 8);
      view.element_type = static_cast<uint8_t>(BasicType::kObject);
      view.values_at = at + 1 + 2 * n + 8;
      break;
    case HeapTag::kPrimitiveArrayDump:
      view.count = bytes.u4(at + 1 + n + 4);
      view.element_type = bytes.u1(at + 1 + n + 8);
      view.values_at = at + 1 + n + 9;
      break;
    default: break;
  }
  return view;
}

}  // namespace fasthprof
