// The rewriter is a streaming parser over "units": the file header, a whole top-level record (or
// only the 9-byte header of a HEAP DUMP SEGMENT), and inside a segment a sub-record's fixed part
// (a CLASS DUMP whole). A unit is patched where it lies, then either left in the pending output
// run or cut out of it (dropped); the values that follow a unit (instance fields, array elements)
// are passed over without being looked at. A unit split across two feeds is gathered in carry_.
//
//   feed:  [ ... run_start_ ............ pos ......... end )
//            written already | pending, patched | not read yet
#include "vm_dump/vm_dump_rewriter.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "base/byte_decoder.h"
#include "base/byte_encoder.h"
#include "base/ids.h"

namespace fasthprof {
namespace {

constexpr size_t kFileHeaderBytes = sizeof(kBinaryHeaderVersion) + 4 + 8;
constexpr uint64_t kId = kIdSize;
// Longest record outside the heap segments gathered whole (a symbol is at most 64 KiB; a stack
// trace of a million frames is 8 MiB).
constexpr uint64_t kMaxRecordBody = 64u << 20;
// The longest fixed part of a sub-record other than CLASS DUMP (INSTANCE / OBJECT ARRAY DUMP).
constexpr size_t kLongestFixedPart = 1 + kId + 4 + kId + 4;
// When a unit is split, at least this much more is gathered per step, so that a long CLASS DUMP is
// measured a few times, not once per field.
constexpr size_t kGatherStep = 4096;
constexpr size_t kScratchSize = 256 << 10;
// UTF8 records whose name slots are prefetched at a time, and how far ahead of the end of the last
// batch the next one starts (a UTF8 record is about 40 bytes).
constexpr int kPrefetchRecords = 32;
constexpr ptrdiff_t kPrefetchAhead = 8 * 40;
// A CLASS DUMP's fixed part: tag, class, trace serial, super, loader, signers, domain, 2 reserved,
// instance size.
constexpr size_t kClassDumpFixed = 1 + kId + 4 + 6 * kId + 4;
// The bytes of a sub-record other than CLASS DUMP that a patch may change: the tag, an object ID,
// then a thread serial, trace serial or frame number or two.
constexpr size_t kPatchedPrefix = 1 + kId + 8;
// feed_file: the bytes of the side file read at a time (pread into one buffer, 4.5 times as fast
// as a private mapping's page faults here: 4.5 against 1.0 GB/s), and the shortest unchanged run
// handed to the output as a file range on its own (a shorter one is written from memory, unless it
// continues the range before it: a range is queued like a buffer, so a run between two patched
// roots is cheaper copied).
constexpr size_t kFileChunk = size_t{1} << 20;
constexpr uint64_t kMinFileRange = uint64_t{128} << 10;
// A range grows to this at most before it is handed over, so that the sink's io thread copies
// while this thread reads on (one range for a whole side file would copy after the parse).
constexpr uint64_t kMaxFileRange = uint64_t{8} << 20;

// Size of a value of basic type code, 0 for a code HPROF does not define.
inline size_t value_size(uint8_t code) {
  return code == 1 ? 0 : basic_type_size(static_cast<BasicType>(code));
}

uint64_t rename_key(uint64_t name, uint64_t text_hash) {
  const uint64_t both[2] = {name, text_hash};
  return XXH3_64bits(both, sizeof(both));
}

}  // namespace

// A unit at the current position: complete (size > 0, then body bytes follow it in the segment)
// or not (size == 0: it needs at least `need` bytes to be measured further).
struct VmDumpRewriter::Unit {
  uint64_t size = 0;
  uint64_t body = 0;
  uint64_t need = 0;
};

VmDumpNumbering::VmDumpNumbering(uint32_t empty_trace_serial)
    : empty_trace_serial_(empty_trace_serial),
      next_class_serial_(kFirstVmDumpSerial),
      next_thread_serial_(kFirstVmDumpSerial),
      next_trace_serial_(kFirstVmDumpSerial) {}

VmDumpRewriter::VmDumpRewriter(VmDumpNumbering& numbering, OutputStream& out) : numbering_(numbering), out_(out) {}

VmDumpRewriter::~VmDumpRewriter() = default;

bool VmDumpRewriter::fail(uint64_t offset, const char* format, ...) {
  char message[256];
  va_list args;
  va_start(args, format);
  std::vsnprintf(message, sizeof(message), format, args);
  va_end(args);
  char line[320];
  std::snprintf(line, sizeof(line), "byte %" PRIu64 " of the JDK's heap dump: %s", offset, message);
  error_ = line;
  state_ = State::kFailed;
  return false;
}

void VmDumpRewriter::flush_run(const uint8_t* to) {
  if (to > run_start_) {
    const uint64_t length = static_cast<uint64_t>(to - run_start_);
    const uint64_t at = source_offset_ + static_cast<uint64_t>(run_start_ - block_);
    if (file_mode_ && range_open_ && range_offset_ + range_size_ == at) {
      range_size_ += length;  // the run goes on from the previous chunk's
      if (range_size_ >= kMaxFileRange) {
        emit_range();
        range_offset_ = at + length;
        range_open_ = true;  // what follows on from it still joins it
      }
    } else if (file_mode_ && length >= kMinFileRange) {
      emit_range();
      range_offset_ = at;
      range_size_ = length;
      range_open_ = true;
    } else {
      emit_range();
      out_.write(run_start_, static_cast<size_t>(length));
    }
    stats_.bytes_out += length;
  }
  run_start_ = to;
}

void VmDumpRewriter::emit_range() {
  range_open_ = false;
  if (range_size_ == 0) return;
  if (!out_.write_file_range(source_fd_, range_offset_, range_size_)) {
    // Noted here, failed at the end of the feed: the hot loop does not look for it.
    if (source_error_at_ == 0) source_error_at_ = range_offset_ + 1;
  }
  ++stats_.file_ranges;
  stats_.file_range_bytes += range_size_;
  range_size_ = 0;
}

void VmDumpRewriter::write_patched(const uint8_t* from, const uint8_t* to) {
  flush_run(from);
  emit_range();
  out_.write(from, static_cast<size_t>(to - from));
  stats_.bytes_out += static_cast<uint64_t>(to - from);
  run_start_ = to;
}

void VmDumpRewriter::set32(uint8_t* p, uint32_t value) {
  if (load_be32(p) == value) return;
  store_be32(p, value);
  dirty_ = true;
}

void VmDumpRewriter::set64(uint8_t* p, uint64_t value) {
  if (load_be64(p) == value) return;
  store_be64(p, value);
  dirty_ = true;
}

bool VmDumpRewriter::feed(const uint8_t* data, size_t size) {
  if (scratch_.empty()) scratch_.resize(kScratchSize);
  while (size > 0) {
    size_t n = std::min(size, scratch_.size());
    std::memcpy(scratch_.data(), data, n);
    if (!feed_in_place(scratch_.data(), n)) return false;
    data += n;
    size -= n;
  }
  return state_ != State::kFailed;
}

bool VmDumpRewriter::feed_in_place(uint8_t* data, size_t size) {
  if (state_ == State::kFailed) return false;
  block_ = data;
  run_start_ = data;
  prefetched_until_ = data;
  uint8_t* pos = data;
  uint8_t* end = data + size;
  stats_.bytes_in += size;
  if (!carry_.empty() && !take_carried(pos, end)) return false;
  while (pos < end) {
    if (!step(pos, end)) return false;
  }
  if (exhausted_) return fail(offset_ + size, "more VM dump serials than a u4 holds");
  flush_run(pos);
  offset_ += size;
  return true;
}

bool VmDumpRewriter::feed_file(int fd, uint64_t size) {
  if (state_ == State::kFailed) return false;
  if (file_chunk_.empty()) file_chunk_.resize(kFileChunk);
  bool ok = true;
  for (uint64_t at = 0; ok && at < size;) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(kFileChunk, size - at));
    size_t have = 0;
    while (have < want) {
      const ssize_t got = ::pread(fd, file_chunk_.data() + have, want - have, static_cast<off_t>(at + have));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        emit_range();
        return fail(offset_ + have, "cannot read the JVM's side file at byte %" PRIu64 " (%s)", at + have,
                    got < 0 ? std::strerror(errno) : "it ends early");
      }
      have += static_cast<size_t>(got);
    }
    file_mode_ = true;
    source_fd_ = fd;
    source_offset_ = at;
    dirty_ = false;
    ok = feed_in_place(file_chunk_.data(), want);
    file_mode_ = false;
    stats_.file_bytes += want;
    at += want;
  }
  emit_range();
  if (ok && source_error_at_ != 0) {
    return fail(offset_, "cannot read the JVM's side file at byte %" PRIu64, source_error_at_ - 1);
  }
  block_ = nullptr;
  run_start_ = nullptr;
  prefetched_until_ = nullptr;
  return ok;
}

bool VmDumpRewriter::finish() {
  if (state_ == State::kFailed) return false;
  if (!carry_.empty()) {
    return fail(carry_offset_, "the stream ends inside a %s (%zu bytes of it)",
                state_ == State::kSubRecords ? "sub-record" : "record", carry_.size());
  }
  switch (state_) {
    case State::kEnded: return true;
    case State::kFileHeader: return fail(offset_, "the stream ends before its file header");
    case State::kSubRecords:
    case State::kBody:
      return fail(offset_, "the stream ends inside a HEAP DUMP SEGMENT (%" PRIu64 " bytes missing)", segment_left_);
    default: return fail(offset_, "the stream ends without HEAP DUMP END");
  }
}

void VmDumpRewriter::abandon() {
  if (abandoned_) return;
  abandoned_ = true;
  if (defined_dummy_) numbering_.dummy_trace_serial_ = 0;
  for (uint64_t name : names_added_) numbering_.name_hashes_.erase(name);
  for (uint64_t key : renames_added_) numbering_.renamed_.erase(key);
  names_added_.clear();
  renames_added_.clear();
}

// ---- units ----

// Completes the unit in carry_ with bytes from [pos, end). Gathers more than the unit may need and
// gives the excess back (it came from this feed's block, which is still there).
bool VmDumpRewriter::take_carried(uint8_t*& pos, uint8_t* end) {
  const uint8_t* const taken_from = pos;
  Unit unit;
  for (;;) {
    bool hard_end = state_ == State::kSubRecords && carry_.size() == segment_left_;
    if (!measure(carry_.data(), carry_.size(), carry_offset_, hard_end, &unit)) return false;
    if (unit.size != 0) break;
    if (pos == end) {
      run_start_ = end;
      return true;
    }
    uint64_t want = std::max<uint64_t>(unit.need - carry_.size(), kGatherStep);
    want = std::min<uint64_t>(want, static_cast<uint64_t>(end - pos));
    if (state_ == State::kSubRecords) want = std::min<uint64_t>(want, segment_left_ - carry_.size());
    carry_.insert(carry_.end(), pos, pos + want);
    pos += want;
  }
  uint64_t excess = carry_.size() - unit.size;
  pos -= excess;  // at most what this call took: before it the unit was incomplete
  if (pos < taken_from) return fail(carry_offset_, "internal error: carried unit shrank");
  carry_.resize(unit.size);
  bool keep = false;
  if (!apply(carry_.data(), unit, carry_offset_, &keep)) return false;
  if (keep) {
    emit_range();
    out_.write(carry_.data(), carry_.size());
    stats_.bytes_out += carry_.size();
  }
  dirty_ = false;
  carry_.clear();
  run_start_ = pos;
  return true;
}

// The JDK writes tens of thousands of UTF8s in symbol table order: each looks up a random slot of
// the numbering's name table. Prefetching the slots of the next records of the block overlaps
// those cache misses (a JDK 17 dump's symbols took 185 ns each without it).
void VmDumpRewriter::prefetch_names(const uint8_t* pos, const uint8_t* end) {
  const uint8_t* p = std::max<const uint8_t*>(pos, prefetched_until_);
  for (int records = 0; records < kPrefetchRecords && end - p >= static_cast<ptrdiff_t>(kRecordHeaderSize + kId); ++records) {
    if (p[0] != static_cast<uint8_t>(RecordTag::kUtf8)) break;
    numbering_.name_hashes_.prefetch(load_be64(p + kRecordHeaderSize));
    uint64_t record = kRecordHeaderSize + uint64_t{load_be32(p + 5)};
    if (record > static_cast<uint64_t>(end - p)) break;
    p += record;
  }
  prefetched_until_ = p;
}

bool VmDumpRewriter::step(uint8_t*& pos, uint8_t* end) {
  switch (state_) {
    case State::kBody: {
      uint64_t take = std::min<uint64_t>(body_left_, static_cast<uint64_t>(end - pos));
      pos += take;
      body_left_ -= take;
      segment_left_ -= take;
      if (body_left_ == 0) state_ = segment_left_ != 0 ? State::kSubRecords : State::kRecords;
      return true;
    }
    case State::kSubRecords:
      sub_records(pos, end);
      if (pos == end || state_ != State::kSubRecords) return true;
      break;  // a CLASS DUMP, the last bytes of the block or segment, or a bad tag
    case State::kEnded: return fail(offset_of(pos), "data after HEAP DUMP END");
    case State::kFailed: return false;
    case State::kRecords:
      if ((prefetched_until_ <= pos || prefetched_until_ - pos <= kPrefetchAhead) &&
          pos[0] == static_cast<uint8_t>(RecordTag::kUtf8)) {
        prefetch_names(pos, end);
      }
      break;
    default: break;
  }
  uint64_t avail = static_cast<uint64_t>(end - pos);
  bool hard_end = false;
  if (state_ == State::kSubRecords && segment_left_ <= avail) {
    avail = segment_left_;
    hard_end = true;
  }
  Unit unit;
  const uint64_t at = offset_of(pos);
  if (!measure(pos, avail, at, hard_end, &unit)) return false;
  if (unit.size == 0) {
    flush_run(pos);
    carry_.assign(pos, end);
    carry_offset_ = at;
    pos = end;
    run_start_ = end;
    return true;
  }
  bool keep = false;
  if (!apply(pos, unit, at, &keep)) return false;
  if (keep && file_mode_ && dirty_) {
    write_patched(pos, pos + unit.size);
    pos += unit.size;
  } else {
    if (!keep) flush_run(pos);
    pos += unit.size;
    if (!keep) run_start_ = pos;
  }
  dirty_ = false;
  return true;
}

// The sub-records that lie whole (fixed part, at least) in this block: the hot loop.
void VmDumpRewriter::sub_records(uint8_t*& pos, uint8_t* end) {
  uint8_t* p = pos;
  uint8_t* const limit = p + std::min<uint64_t>(static_cast<uint64_t>(end - p), segment_left_);
  while (limit - p >= static_cast<ptrdiff_t>(kLongestFixedPart)) {
    uint64_t total;
    switch (static_cast<HeapTag>(p[0])) {
      case HeapTag::kInstanceDump:
        total = kLongestFixedPart + load_be32(p + 1 + kId + 4 + kId);
        break;
      case HeapTag::kObjectArrayDump:
        total = kLongestFixedPart + uint64_t{load_be32(p + 1 + kId + 4)} * kId;
        break;
      case HeapTag::kPrimitiveArrayDump: {
        size_t element = value_size(p[1 + kId + 8]);
        if (element == 0 || p[1 + kId + 8] == static_cast<uint8_t>(BasicType::kObject)) goto done;
        total = 1 + kId + 4 + 4 + 1 + uint64_t{load_be32(p + 1 + kId + 4)} * element;
        break;
      }
      case HeapTag::kRootJniLocal:
      case HeapTag::kRootJavaFrame:
      case HeapTag::kRootThreadObject:
      case HeapTag::kRootJniGlobal:
        total = 1 + kId + 8;
        break;
      case HeapTag::kRootNativeStack:
      case HeapTag::kRootThreadBlock:
        total = 1 + kId + 4;
        break;
      case HeapTag::kRootUnknown:
      case HeapTag::kRootStickyClass:
      case HeapTag::kRootMonitorUsed:
        total = 1 + kId;
        break;
      default: goto done;  // CLASS DUMP, or a bad tag: measure() says which
    }
    if (total > segment_left_) goto done;  // measure() reports it
    patch_sub_record(p);
    if (file_mode_ && dirty_) {
      write_patched(p, p + std::min<uint64_t>(total, kPatchedPrefix));
      dirty_ = false;
    }
    ++stats_.sub_records;
    if (total > static_cast<uint64_t>(limit - p)) {
      // The values run on into the next block (limit is the block's end: total fits the segment).
      uint64_t here = static_cast<uint64_t>(limit - p);
      body_left_ = total - here;
      segment_left_ -= here;
      p = limit;
      state_ = State::kBody;
      pos = p;
      return;
    }
    p += total;
    segment_left_ -= total;
  }
done:
  pos = p;
  if (segment_left_ == 0) state_ = State::kRecords;
}

// Longer than a function here should be, knowingly: it is a table, one case per heap-dump
// sub-record kind with that kind's layout, and reads best as one switch beside the format.
bool VmDumpRewriter::measure(const uint8_t* p, uint64_t avail, uint64_t at, bool hard_end, Unit* unit) {
  *unit = Unit{};
  auto need = [&](uint64_t bytes) {
    unit->need = bytes;
    if (hard_end) return fail(at, "sub-record 0x%02x overruns its HEAP DUMP SEGMENT (%" PRIu64 " bytes left)",
                              avail ? p[0] : 0, avail);
    return true;
  };
  switch (state_) {
    case State::kFileHeader:
      if (avail < kFileHeaderBytes) return need(kFileHeaderBytes);
      unit->size = kFileHeaderBytes;
      return true;
    case State::kRecords: {
      if (avail < kRecordHeaderSize) return need(kRecordHeaderSize);
      uint8_t tag = p[0];
      uint32_t length = load_be32(p + 5);
      if (tag == static_cast<uint8_t>(RecordTag::kHeapDumpSegment) || tag == static_cast<uint8_t>(RecordTag::kHeapDumpEnd)) {
        unit->size = kRecordHeaderSize;
        return true;
      }
      if (length > kMaxRecordBody) {
        return fail(at, "record 0x%02x of %" PRIu32 " bytes (at most %" PRIu64 " are accepted outside heap segments)",
                    tag, length, kMaxRecordBody);
      }
      if (avail < kRecordHeaderSize + length) return need(kRecordHeaderSize + length);
      unit->size = kRecordHeaderSize + length;
      return true;
    }
    case State::kSubRecords: break;
    default: return fail(at, "internal error: no unit in state %d", static_cast<int>(state_));
  }
  if (avail < 1) return need(1);
  uint64_t fixed = 0;
  switch (static_cast<HeapTag>(p[0])) {
    case HeapTag::kRootUnknown:
    case HeapTag::kRootStickyClass:
    case HeapTag::kRootMonitorUsed: fixed = 1 + kId; break;
    case HeapTag::kRootNativeStack:
    case HeapTag::kRootThreadBlock: fixed = 1 + kId + 4; break;
    case HeapTag::kRootJniGlobal:
    case HeapTag::kRootJniLocal:
    case HeapTag::kRootJavaFrame:
    case HeapTag::kRootThreadObject: fixed = 1 + kId + 8; break;
    case HeapTag::kInstanceDump:
    case HeapTag::kObjectArrayDump:
      fixed = kLongestFixedPart;
      if (avail < fixed) return need(fixed);
      unit->body = p[0] == static_cast<uint8_t>(HeapTag::kInstanceDump) ? load_be32(p + 1 + kId + 4 + kId)
                                                                         : uint64_t{load_be32(p + 1 + kId + 4)} * kId;
      break;
    case HeapTag::kPrimitiveArrayDump: {
      fixed = 1 + kId + 4 + 4 + 1;
      if (avail < fixed) return need(fixed);
      uint8_t type = p[fixed - 1];
      size_t element = value_size(type);
      if (element == 0 || type == static_cast<uint8_t>(BasicType::kObject)) {
        return fail(at, "PRIMITIVE ARRAY DUMP with element type %u", type);
      }
      unit->body = uint64_t{load_be32(p + 1 + kId + 4)} * element;
      break;
    }
    case HeapTag::kClassDump: {
      // Fixed part, then constant pool (u2 index, u1 type, value), statics (id, u1 type, value),
      // instance fields (id, u1 type): each count a u2.
      uint64_t pos = kClassDumpFixed;
      for (int list = 0; list < 3; ++list) {
        if (avail < pos + 2) return need(pos + 2);
        uint32_t count = load_be16(p + pos);
        pos += 2;
        const uint64_t head = list == 0 ? 2 : kId;  // before the type byte
        for (uint32_t i = 0; i < count; ++i) {
          if (avail < pos + head + 1) return need(pos + head + 1);
          uint8_t type = p[pos + head];
          size_t size = value_size(type);
          if (size == 0) return fail(at, "CLASS DUMP field with type %u", type);
          pos += head + 1 + (list < 2 ? size : 0);
        }
      }
      fixed = pos;
      break;
    }
    default: return fail(at, "unknown heap dump sub-record tag 0x%02x", p[0]);
  }
  if (fixed + unit->body > segment_left_) {
    return fail(at, "sub-record 0x%02x of %" PRIu64 " bytes overruns its HEAP DUMP SEGMENT (%" PRIu64 " bytes left)",
                p[0], fixed + unit->body, segment_left_);
  }
  if (avail < fixed) return need(fixed);
  unit->size = fixed;
  return true;
}

// Patches the unit at p (complete) and says whether it stays in the output; moves the state on.
bool VmDumpRewriter::apply(uint8_t* p, const Unit& unit, uint64_t at, bool* keep) {
  switch (state_) {
    case State::kFileHeader: {
      *keep = false;
      if (std::memcmp(p, kBinaryHeaderVersion, sizeof(kBinaryHeaderVersion)) != 0) {
        return fail(at, "not a \"%s\" file header", kBinaryHeaderVersion);
      }
      uint32_t id_size = load_be32(p + sizeof(kBinaryHeaderVersion));
      if (id_size != kIdSize) return fail(at, "identifier size %" PRIu32 " (only %" PRIu32 " is supported)", id_size, kIdSize);
      state_ = State::kRecords;
      return true;
    }
    case State::kRecords:
      ++stats_.records;
      return apply_record(p, at, keep);
    case State::kSubRecords:
      *keep = true;
      if (p[0] == static_cast<uint8_t>(HeapTag::kClassDump)) {
        patch_class_dump(p);
      } else {
        patch_sub_record(p);
      }
      ++stats_.sub_records;
      segment_left_ -= unit.size;
      if (unit.body != 0) {
        body_left_ = unit.body;
        state_ = State::kBody;
      } else if (segment_left_ == 0) {
        state_ = State::kRecords;
      }
      return true;
    default: return fail(at, "internal error: unit in state %d", static_cast<int>(state_));
  }
}

bool VmDumpRewriter::apply_record(uint8_t* p, uint64_t at, bool* keep) {
  const uint8_t tag = p[0];
  const uint32_t length = load_be32(p + 5);
  uint8_t* body = p + kRecordHeaderSize;
  *keep = true;
  auto expect = [&](const char* what, uint32_t expected) {
    if (length == expected) return true;
    return fail(at, "%s record of length %" PRIu32 ", expected %" PRIu32, what, length, expected);
  };
  switch (static_cast<RecordTag>(tag)) {
    case RecordTag::kUtf8: return apply_utf8(p, length, at, keep);
    case RecordTag::kLoadClass: {
      if (!expect("LOAD CLASS", 4 + kId + 4 + kId)) return false;
      uint32_t serial = load_be32(body);
      uint64_t class_id = load_be64(body + 4);
      if (serial == 0) return fail(at, "LOAD CLASS with class serial 0");
      auto [entry, inserted] = class_serials_.try_emplace(serial, Serial{0, false});
      if (!inserted && entry->defined) return fail(at, "LOAD CLASS of class serial %" PRIu32 " twice in one dump", serial);
      entry->defined = true;
      // JDK 17 loads each array class twice (with its element class and on its own): the second
      // LOAD CLASS is dropped and its serial stands for the first, so a class has one serial per dump.
      const uint32_t* loaded = class_ids_.find(class_id);
      if (loaded != nullptr && inserted) {
        entry->number = *loaded;
        *keep = false;
        ++stats_.records_dropped;
        return true;
      }
      if (inserted) entry->number = next_serial(numbering_.next_class_serial_);
      class_ids_.try_emplace(class_id, entry->number);
      set32(body, entry->number);
      set32(body + 4 + kId, trace_reference(load_be32(body + 4 + kId)));
      patch_name(body + 4 + kId + 4);
      return true;
    }
    case RecordTag::kStackFrame: {
      if (!expect("STACK FRAME", 4 * kId + 8)) return false;
      uint64_t frame = load_be64(body);
      if (frame == 0) return fail(at, "STACK FRAME with frame ID 0");
      auto [entry, inserted] = frames_.try_emplace(frame, Frame{0, false});
      if (!inserted && entry->defined) return fail(at, "STACK FRAME 0x%" PRIx64 " twice in one dump", frame);
      if (inserted) entry->id = make_id(IdSpace::kVmDumpFrame, numbering_.next_frame_index_++);
      entry->defined = true;
      set64(body, entry->id);
      patch_name(body + kId);
      patch_name(body + 2 * kId);
      patch_name(body + 3 * kId);
      set32(body + 4 * kId, output_serial(class_serials_, numbering_.next_class_serial_, load_be32(body + 4 * kId)));
      return true;
    }
    case RecordTag::kStackTrace: return apply_stack_trace(p, length, at, keep);
    case RecordTag::kHeapSummary: return true;
    case RecordTag::kUnloadClass:
    case RecordTag::kStartThread:
    case RecordTag::kEndThread:
    case RecordTag::kAllocSites:
    case RecordTag::kCpuSamples:
    case RecordTag::kControlSettings:
      *keep = false;
      ++stats_.records_dropped;
      return true;
    case RecordTag::kHeapDumpSegment:
      ++stats_.segments;
      if (length == 0) {  // nothing in it; a reader may take it for an error
        *keep = false;
        ++stats_.records_dropped;
        return true;
      }
      segment_left_ = length;
      state_ = State::kSubRecords;
      return true;
    case RecordTag::kHeapDumpEnd:
      if (!expect("HEAP DUMP END", 0)) return false;
      state_ = State::kEnded;
      return true;
    case RecordTag::kHeapDump: return fail(at, "HEAP DUMP record (a JDK dump is written in HEAP DUMP SEGMENTs)");
  }
  return fail(at, "unknown record tag 0x%02x", tag);
}

bool VmDumpRewriter::apply_utf8(uint8_t* p, uint32_t length, uint64_t at, bool* keep) {
  if (length < kId) return fail(at, "UTF8 record of length %" PRIu32 " is shorter than an ID", length);
  uint8_t* body = p + kRecordHeaderSize;
  uint64_t name = load_be64(body);
  if (name == 0 || id_space(name) != IdSpace::kNone) {
    return fail(at, "UTF8 ID 0x%" PRIx64 " is not a JDK symbol address", name);
  }
  uint64_t text_hash = XXH3_64bits(body + kId, length - kId);
  auto [written, inserted] = numbering_.name_hashes_.try_emplace(name, text_hash);
  if (inserted) {
    names_added_.push_back(name);
    *keep = true;
    return true;
  }
  if (*written == text_hash) {
    *keep = false;
    ++stats_.utf8_dropped;
    return true;
  }
  // The address holds another text than the one written under it: the text gets an ID of its own,
  // the same one each time this (address, text) pair comes back.
  uint64_t key = rename_key(name, text_hash);
  uint64_t fresh = make_id(IdSpace::kVmDumpName, numbering_.next_name_index_);
  auto [renamed, new_rename] = numbering_.renamed_.try_emplace(key, fresh);
  *renames_.try_emplace(name, *renamed).first = *renamed;
  if (!new_rename) {
    *keep = false;
    ++stats_.utf8_dropped;
    return true;
  }
  ++numbering_.next_name_index_;
  renames_added_.push_back(key);
  set64(body, fresh);
  ++stats_.utf8_renamed;
  *keep = true;
  return true;
}

bool VmDumpRewriter::apply_stack_trace(uint8_t* p, uint32_t length, uint64_t at, bool* keep) {
  if (length < 12) return fail(at, "STACK TRACE record of length %" PRIu32 " is shorter than 12", length);
  uint8_t* body = p + kRecordHeaderSize;
  uint32_t serial = load_be32(body);
  uint32_t thread = load_be32(body + 4);
  uint32_t count = load_be32(body + 8);
  if (uint64_t{length} != 12 + uint64_t{count} * kId) {
    return fail(at, "STACK TRACE of %" PRIu32 " frames has length %" PRIu32, count, length);
  }
  auto [entry, inserted] = trace_serials_.try_emplace(serial, Serial{numbering_.empty_trace_serial_, false});
  if (!inserted && entry->defined) return fail(at, "STACK TRACE serial %" PRIu32 " twice in one dump", serial);
  entry->defined = true;
  last_trace_in_ = 0;  // the cache may hold this serial's forward reference
  last_trace_out_ = 0;
  if (count == 0 && thread == 0) {
    // The JDK's dummy trace, which objects name. Its serial stays as it is where fasthprof's own
    // traces cannot have it: defined once per output, by the first dump that brings it; references
    // made before it (LOAD CLASS) keep fasthprof's empty trace. Otherwise that trace stands for it.
    if (serial != 0 && serial < kFirstTraceSerial &&
        (numbering_.dummy_trace_serial_ == 0 || numbering_.dummy_trace_serial_ == serial)) {
      entry->number = serial;
      if (numbering_.dummy_trace_serial_ == 0) {
        numbering_.dummy_trace_serial_ = serial;
        defined_dummy_ = true;
        return true;
      }
    }
    *keep = false;
    ++stats_.records_dropped;
    return true;
  }
  // A trace with frames: fresh serial (references made before it keep the empty trace).
  entry->number = next_serial(numbering_.next_trace_serial_);
  set32(body, entry->number);
  set32(body + 4, output_serial(thread_serials_, numbering_.next_thread_serial_, thread));
  for (uint32_t i = 0; i < count; ++i) {
    uint8_t* field = body + 12 + uint64_t{i} * kId;
    set64(field, frame_id(load_be64(field)));
  }
  *keep = true;
  return true;
}

// ---- patching ----

void VmDumpRewriter::patch_sub_record(uint8_t* p) {
  switch (static_cast<HeapTag>(p[0])) {
    case HeapTag::kInstanceDump:
    case HeapTag::kObjectArrayDump:
    case HeapTag::kPrimitiveArrayDump: {
      uint32_t trace = load_be32(p + 1 + kId);
      if (trace != last_trace_in_) trace_reference(trace);
      set32(p + 1 + kId, last_trace_out_);
      return;
    }
    case HeapTag::kRootThreadObject:
      set32(p + 1 + kId + 4, trace_reference(load_be32(p + 1 + kId + 4)));
      [[fallthrough]];
    case HeapTag::kRootJniLocal:
    case HeapTag::kRootJavaFrame:
    case HeapTag::kRootNativeStack:
    case HeapTag::kRootThreadBlock:
      set32(p + 1 + kId, output_serial(thread_serials_, numbering_.next_thread_serial_, load_be32(p + 1 + kId)));
      return;
    case HeapTag::kRootStickyClass:
      // HotSpot roots every boot class, one being loaded at the safepoint too, which has no CLASS
      // DUMP: the root then names a dumped class instead (a root twice changes nothing).
      if (dumped_classes_.find(load_be64(p + 1)) == nullptr && any_dumped_class_ != 0) {
        set64(p + 1, any_dumped_class_);
        ++stats_.roots_renamed;
      }
      return;
    default: return;  // roots that name only objects
  }
}

void VmDumpRewriter::patch_class_dump(uint8_t* p) {
  if (dumped_classes_.try_emplace(load_be64(p + 1), true).second && any_dumped_class_ == 0) any_dumped_class_ = load_be64(p + 1);
  set32(p + 1 + kId, trace_reference(load_be32(p + 1 + kId)));
  if (renames_.size() == 0) return;
  uint64_t pos = kClassDumpFixed;
  uint32_t constants = load_be16(p + pos);
  pos += 2;
  for (uint32_t i = 0; i < constants; ++i) pos += 3 + value_size(p[pos + 2]);
  uint32_t statics = load_be16(p + pos);
  pos += 2;
  for (uint32_t i = 0; i < statics; ++i) {
    patch_name(p + pos);
    pos += kId + 1 + value_size(p[pos + kId]);
  }
  uint32_t fields = load_be16(p + pos);
  pos += 2;
  for (uint32_t i = 0; i < fields; ++i, pos += kId + 1) patch_name(p + pos);
}

uint32_t VmDumpRewriter::next_serial(uint32_t& counter) {
  if (counter == UINT32_MAX) {
    exhausted_ = true;
    return counter;
  }
  return counter++;
}

uint32_t VmDumpRewriter::output_serial(FlatMap<uint32_t, Serial>& map, uint32_t& counter, uint32_t serial) {
  if (serial == 0) return 0;
  auto [entry, inserted] = map.try_emplace(serial, Serial{0, false});
  if (inserted) entry->number = next_serial(counter);
  return entry->number;
}

uint32_t VmDumpRewriter::trace_reference(uint32_t serial) {
  if (serial == last_trace_in_) return last_trace_out_;
  auto [entry, inserted] = trace_serials_.try_emplace(serial, Serial{numbering_.empty_trace_serial_, false});
  last_trace_in_ = serial;
  last_trace_out_ = entry->number;
  return last_trace_out_;
}

uint64_t VmDumpRewriter::frame_id(uint64_t frame) {
  if (frame == 0) return 0;
  auto [entry, inserted] = frames_.try_emplace(frame, Frame{0, false});
  if (inserted) entry->id = make_id(IdSpace::kVmDumpFrame, numbering_.next_frame_index_++);
  return entry->id;
}

void VmDumpRewriter::patch_name(uint8_t* at) {
  if (renames_.size() == 0) return;
  const uint64_t* renamed = renames_.find(load_be64(at));
  if (renamed != nullptr) set64(at, *renamed);
}

}  // namespace fasthprof
