// The reading layer of HPROF binary files: the header, the framing of top-level records, the
// framing and decoding of heap-dump sub-records, and big-endian fields of the file's identifier
// size (4 or 8). It checks only what it needs to find the next record or sub-record: lengths within
// the input, known tags, and the basic types that decide a size. What the fields mean (do names,
// serials and references resolve?) is left to its callers: the verifier (hprof_verifier.h) and
// programs that summarize or convert files.
//
// Like the verifier, it shares only the tag and type constants (and their names) of
// runtime/base/hprof_format.h with the writers, never their code. It never allocates except for error messages, never throws, and keeps
// every offset 64-bit and bounds-checked, so any input (truncated, hostile, several GiB) is safe.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/byte_decoder.h"

namespace fasthprof {

// "JAVA PROFILE 1.0.1" or "JAVA PROFILE 1.0.2" NUL, u4 identifier size, u8 time stamp.
inline constexpr uint64_t kHprofHeaderSize = 18 + 1 + 4 + 8;

struct HprofHeader {
  std::string_view version;  // without its NUL; empty until a header was read
  uint32_t id_size = 0;      // 4 or 8
  uint64_t timestamp_millis = 0;
};

// The first thing wrong with the input, and the byte offset where it sits.
struct ReadError {
  std::string message;  // empty: no error
  uint64_t offset = 0;
};

// The bytes of a file with its identifier size. Reads are unchecked: callers read only inside a
// record or sub-record that HprofReader or SubRecordReader has framed.
class HprofBytes {
 public:
  HprofBytes() = default;
  HprofBytes(const uint8_t* data, uint64_t size, uint32_t id_size) : data_(data), size_(size), id_size_(id_size) {}

  uint8_t u1(uint64_t at) const { return data_[at]; }
  uint16_t u2(uint64_t at) const { return load_be16(data_ + at); }
  uint32_t u4(uint64_t at) const { return load_be32(data_ + at); }
  uint64_t u8(uint64_t at) const { return load_be64(data_ + at); }
  uint64_t id(uint64_t at) const { return id_size_ == 4 ? u4(at) : u8(at); }
  // Bytes of a value of the given basic type (IDs: id_size); 0 for a code that is no basic type.
  uint64_t value_size(uint8_t type) const;
  // A value of the given basic type at `at`, widened: an ID, or a primitive's big-endian bits.
  uint64_t value(uint8_t type, uint64_t at) const;

  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }
  uint32_t id_size() const { return id_size_; }

 private:
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  uint32_t id_size_ = 0;
};

// Whether code is a basic type of fields and arrays (object, boolean ... long).
bool is_valid_basic_type(uint8_t code);
// Whether code is a basic type other than object.
bool is_primitive_basic_type(uint8_t code);


// One top-level record as framed: offsets are into the file.
struct RecordView {
  uint8_t tag = 0;
  uint32_t time_micros = 0;  // since the header's time stamp
  uint64_t offset = 0;       // of the record header (the tag byte)
  uint64_t body = 0;         // of the first body byte
  uint32_t length = 0;       // of the body
  uint64_t end() const { return body + length; }
};

// Walks the top-level records of a file held in memory: read_header(), then next_record() until it
// returns false. One owner at a time; holds no copy of the input, which must outlive it.
class HprofReader {
 public:
  HprofReader(const uint8_t* data, size_t size) : bytes_(data, size, 0) {}

  // Reads and checks the header (version string, identifier size 4 or 8). False with error() set
  // when the input does not start with one.
  bool read_header();

  // Frames the next record. Returns false at the end of the input (error() empty) or when the next
  // record cannot be framed (error() set: a truncated record header, a body running past the end,
  // an unknown tag). After false, every further call returns false.
  bool next_record(RecordView* record);

  // Makes the record at offset the next to frame: a record boundary an earlier pass found (where
  // one heap dump of several starts), for a later pass over part of the file. After read_header().
  void seek(uint64_t offset) {
    position_ = offset;
    done_ = false;
    error_ = ReadError{};
  }

  const HprofHeader& header() const { return header_; }
  // The input with the header's identifier size (0 before read_header()).
  const HprofBytes& bytes() const { return bytes_; }
  const ReadError& error() const { return error_; }
  // Offset of the next record to frame.
  uint64_t position() const { return position_; }

 private:
  bool fail(uint64_t at, std::string message);

  HprofBytes bytes_;
  HprofHeader header_;
  ReadError error_;
  uint64_t position_ = 0;
  bool done_ = false;
};

// One heap-dump sub-record as framed: [offset, offset + size) is within its record's body.
struct SubRecordView {
  uint8_t tag = 0;
  uint64_t offset = 0;  // of its tag byte
  uint64_t size = 0;    // tag byte included
  uint64_t end() const { return offset + size; }
};

// Walks the sub-records of one HEAP DUMP or HEAP DUMP SEGMENT body. A sub-record must end inside
// the body it starts in (the HPROF readers in the JDK's tools do not join segments). Unknown
// sub-record tags and invalid basic types are errors: without them the size is unknowable.
class SubRecordReader {
 public:
  // bytes with the file's identifier size (HprofReader::bytes()); record a HEAP DUMP or HEAP DUMP
  // SEGMENT that HprofReader framed.
  SubRecordReader(const HprofBytes& bytes, const RecordView& record)
      : bytes_(bytes), position_(record.body), end_(record.end()) {}

  // Frames the next sub-record. Returns false at the end of the body (error() empty) or when the
  // next one cannot be framed (error() set). After false, every further call returns false.
  bool next(SubRecordView* sub) {
    // Instances and arrays, nearly every sub-record of a dump, are framed here, inline in the
    // caller's loop, with no call and no switch on the tag. Anything else, and anything that does
    // not fit, goes to next_slow(), which frames it or says what is wrong.
    const uint64_t at = position_;
    if (!done_ && at < end_) {
      // Each sub-record's place depends on the one before's length, so the hardware cannot run
      // ahead by itself: a prefetch a few lines on hid most of the misses and the new pages'
      // table walks (the model's pass over a 260 MB JDK dump: 339 -> 246 ms of CPU, medians of 12).
      __builtin_prefetch(bytes_.data() + std::min(at + kPrefetchDistance, end_));
      const uint64_t n = bytes_.id_size();
      const uint64_t left = end_ - at;
      const uint8_t tag = bytes_.u1(at);
      uint64_t need = 0;
      if (tag == kInstanceDumpTag && left >= 2 * n + 9) {
        need = 2 * n + 9 + uint64_t{bytes_.u4(at + 2 * n + 5)};
      } else if (tag == kObjectArrayDumpTag && left >= 2 * n + 9) {
        need = 2 * n + 9 + uint64_t{bytes_.u4(at + n + 5)} * n;
      } else if (tag == kPrimitiveArrayDumpTag && left >= n + 10) {
        const uint64_t element = primitive_size(bytes_.u1(at + n + 9));
        if (element != 0) need = n + 10 + uint64_t{bytes_.u4(at + n + 5)} * element;
      }
      if (need != 0 && need <= left) {
        sub->tag = tag;
        sub->offset = at;
        sub->size = need;
        position_ = at + need;
        return true;
      }
    }
    return next_slow(sub);
  }

  const ReadError& error() const { return error_; }

 private:
  // The codes of runtime/base/hprof_format.h's HeapTag, which this header does not include.
  static constexpr uint8_t kInstanceDumpTag = 0x21;
  static constexpr uint8_t kObjectArrayDumpTag = 0x22;
  static constexpr uint8_t kPrimitiveArrayDumpTag = 0x23;
  // Bytes ahead of the sub-record being framed that next() asks the cache for (of 512 to 8192,
  // 2048 measured best).
  static constexpr uint64_t kPrefetchDistance = 2048;
  // Bytes of a primitive basic type (boolean 4, char, float, double, byte, short, int, long 11:
  // 1, 2, 4, 8 twice over); 0 for any other code.
  static uint64_t primitive_size(uint8_t type) { return type >= 4 && type <= 11 ? uint64_t{1} << ((type - 4) & 3) : 0; }

  bool next_slow(SubRecordView* sub);
  bool fail(uint64_t at, std::string message);
  bool class_dump_size(uint64_t at, uint64_t* size);

  HprofBytes bytes_;
  uint64_t position_;
  uint64_t end_;
  ReadError error_;
  bool done_ = false;
};

// ---- decoded sub-records: fields and offsets of a sub-record SubRecordReader framed ----

// ROOT ...: every root names an object; the rest depends on the kind.
struct RootView {
  uint64_t object_id = 0;
  uint64_t jni_global_ref_id = 0;  // ROOT JNI GLOBAL
  uint32_t thread_serial = 0;      // ROOT JNI LOCAL, JAVA FRAME, NATIVE STACK, THREAD BLOCK, THREAD OBJECT
  int32_t frame = -1;              // ROOT JNI LOCAL, JAVA FRAME: frame number, -1 none
  uint32_t trace_serial = 0;       // ROOT THREAD OBJECT
};

// CLASS DUMP. The three variable parts are given by their count and the offset of their first entry:
//   constants: u2 index, u1 type, value      statics: id name, u1 type, value      fields: id name, u1 type
struct ClassDumpView {
  uint64_t class_id = 0;
  uint32_t trace_serial = 0;
  uint64_t super_id = 0;
  uint64_t loader_id = 0;
  uint64_t signers_id = 0;
  uint64_t protection_domain_id = 0;
  uint32_t instance_size = 0;
  uint16_t constant_count = 0;
  uint64_t constants_at = 0;
  uint16_t static_count = 0;
  uint64_t statics_at = 0;
  uint16_t field_count = 0;
  uint64_t fields_at = 0;
};

// INSTANCE DUMP; OBJECT ARRAY DUMP (class_id the array class, element_type object); PRIMITIVE ARRAY
// DUMP (class_id 0). values_at: the field values or the packed elements.
struct ObjectDumpView {
  uint64_t object_id = 0;
  uint32_t trace_serial = 0;
  uint64_t class_id = 0;
  uint32_t count = 0;          // INSTANCE DUMP: bytes of values; arrays: elements
  uint8_t element_type = 0;    // arrays: basic type of the elements; INSTANCE DUMP: 0
  uint64_t values_at = 0;
};

// Decoders of a sub-record SubRecordReader framed, of the kind their name says (roots: any ROOT tag).
RootView decode_root(const HprofBytes& bytes, const SubRecordView& sub);
ClassDumpView decode_class_dump(const HprofBytes& bytes, const SubRecordView& sub);
ObjectDumpView decode_object_dump(const HprofBytes& bytes, const SubRecordView& sub);

// Whether a sub-record tag is one of the roots.
bool is_root_tag(uint8_t tag);

}  // namespace fasthprof
