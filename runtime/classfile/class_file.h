// The class-file reader under the class rewriter (class_rewriter.h): bounds-checked reading and
// writing of big-endian fields, the constant pool, and one checking pass over a class file that
// finds its methods and their Code attributes (JVMS chapter 4). Internal to the rewriter.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/byte_decoder.h"
#include "classfile/bytecode.h"

namespace fasthprof::class_file {

// Constant-pool tags (JVMS 4.4).
enum PoolTag : uint8_t {
  kUtf8 = 1, kInteger = 3, kFloat = 4, kLong = 5, kDouble = 6, kClass = 7, kString = 8,
  kFieldref = 9, kMethodref = 10, kInterfaceMethodref = 11, kNameAndType = 12,
  kMethodHandle = 15, kMethodType = 16, kDynamic = 17, kInvokeDynamic = 18, kModule = 19, kPackage = 20,
};

constexpr uint16_t kFirstVersion = 45;
constexpr uint16_t kLastVersion = 69;  // JDK 25

// Bounds-checked reading: a read past the end sets failed() and returns 0, so that a parse can
// check once per structure instead of before every field.
class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool has(size_t n) const { return !failed_ && n <= size_ - at_; }
  uint8_t u1() { return take(1) ? data_[at_ - 1] : 0; }
  uint16_t u2() { return take(2) ? load_be16(data_ + at_ - 2) : 0; }
  uint32_t u4() { return take(4) ? load_be32(data_ + at_ - 4) : 0; }
  const uint8_t* bytes(size_t n) { return take(n) ? data_ + at_ - n : nullptr; }
  size_t at() const { return at_; }
  const uint8_t* data() const { return data_; }
  bool failed() const { return failed_; }
  bool at_end() const { return !failed_ && at_ == size_; }

 private:
  bool take(size_t n) {
    if (!has(n)) {
      failed_ = true;
      return false;
    }
    at_ += n;
    return true;
  }
  const uint8_t* data_;
  size_t size_;
  size_t at_ = 0;
  bool failed_ = false;
};

class Writer {
 public:
  explicit Writer(std::vector<uint8_t>& out) : out_(out) {}
  void u1(uint32_t v) { out_.push_back(static_cast<uint8_t>(v)); }
  void u2(uint32_t v) { u1(v >> 8); u1(v); }
  void u4(uint32_t v) { u2(v >> 16); u2(v); }
  void bytes(const uint8_t* p, size_t n) { out_.insert(out_.end(), p, p + n); }
  void str(std::string_view s) { out_.insert(out_.end(), s.begin(), s.end()); }
  size_t size() const { return out_.size(); }
  void patch_u4(size_t at, uint32_t v) {
    out_[at] = static_cast<uint8_t>(v >> 24);
    out_[at + 1] = static_cast<uint8_t>(v >> 16);
    out_[at + 2] = static_cast<uint8_t>(v >> 8);
    out_[at + 3] = static_cast<uint8_t>(v);
  }

 private:
  std::vector<uint8_t>& out_;
};

struct ConstantPool {
  std::vector<uint32_t> offset;  // of each entry's tag byte; 0 for index 0 and the slot after a long/double
  std::vector<uint8_t> tag;
  const uint8_t* data = nullptr;

  uint16_t count() const { return static_cast<uint16_t>(tag.size()); }
  bool is(uint32_t index, uint8_t t) const { return index > 0 && index < tag.size() && tag[index] == t; }
  // The Utf8 entry's bytes (modified UTF-8, used as they are).
  bool utf8(uint32_t index, std::string_view* out) const {
    if (!is(index, kUtf8)) return false;
    const uint8_t* p = data + offset[index];
    *out = std::string_view(reinterpret_cast<const char*>(p + 3), load_be16(p + 1));
    return true;
  }
  bool class_name(uint32_t index, std::string_view* out) const {
    return is(index, kClass) && utf8(load_be16(data + offset[index] + 1), out);
  }
  // Entry `index` as a Methodref's class, name and descriptor; false when it is no Methodref.
  bool method(uint32_t index, std::string_view* cls, std::string_view* name, std::string_view* descriptor) const {
    if (!is(index, kMethodref)) return false;
    const uint8_t* p = data + offset[index];
    uint16_t nat = load_be16(p + 3);
    if (!is(nat, kNameAndType) || !class_name(load_be16(p + 1), cls)) return false;
    const uint8_t* q = data + offset[nat];
    return utf8(load_be16(q + 1), name) && utf8(load_be16(q + 3), descriptor);
  }
  // Whether entry `index` is the Methodref class.name:descriptor.
  bool is_method(uint32_t index, std::string_view cls, std::string_view name, std::string_view descriptor) const {
    std::string_view c, n, d;
    return method(index, &c, &n, &d) && c == cls && n == name && d == descriptor;
  }
  // Whether a call of Methodref `index` (by invokespecial when `special`, else invokevirtual) is
  // sure to run Object.clone's native: an array's clone(), or java/lang/Object.clone called
  // directly (a class's own clone() may be reached through any other Methodref).
  bool sure_clone(uint32_t index, bool special) const {
    std::string_view c, n, d;
    return method(index, &c, &n, &d) && n == "clone" && d == "()Ljava/lang/Object;" &&
           (special ? c == "java/lang/Object" : c.starts_with('['));
  }
};

// A method as found in the class file.
struct MethodInfo {
  size_t start = 0, end = 0;           // the whole method_info
  std::string_view name, descriptor;
  size_t code_at = 0, code_length = 0;  // the Code attribute's info (after name and length); 0 when none
};

// What rewrite_class needs of a class file: where its parts are, the pool, the methods.
struct ClassFile {
  uint16_t major = 0;
  std::string class_name;   // this_class, as the pool spells it
  std::string source_file;  // the SourceFile attribute's, "" when none
  ConstantPool pool;
  size_t pool_end = 0, methods_at = 0, methods_end = 0;
  std::vector<MethodInfo> methods;
};

// What the Methodref an invoke names is to the rewriter (and to AllocationScan, which must judge
// as it does), asked at every invokevirtual and invokespecial of a class: worked out once per entry
// (the names compared), then looked up. The pool may be filled after construction.
class InvokeKinds {
 public:
  explicit InvokeKinds(const ConstantPool& pool) : pool_(pool) {}
  // A call sure to reach Object.clone: an array's clone() by invokevirtual, or
  // java/lang/Object.clone by invokespecial (ConstantPool::sure_clone).
  bool sure_clone(uint8_t op, uint16_t index) const {
    return (op == kInvokevirtual || op == kInvokespecial) &&
           is(index, op == kInvokespecial ? kCloneSpecial : kCloneVirtual);
  }
  // Whether the invoke `op` of Methodref `index` gets a counting call: Unsafe.allocateInstance by
  // invokevirtual; with `clones`, a sure clone.
  bool counted(uint8_t op, uint16_t index, bool clones) const {
    return (op == kInvokevirtual && is(index, kAllocateInstance)) || (clones && sure_clone(op, index));
  }

 private:
  enum : uint8_t { kAllocateInstance = 1, kCloneVirtual = 2, kCloneSpecial = 4, kUnknown = 0x80 };
  bool is(uint16_t index, uint8_t kinds) const {
    if (kinds_.size() != pool_.count()) kinds_.assign(pool_.count(), kUnknown);
    if (index >= kinds_.size()) return false;
    uint8_t& k = kinds_[index];
    if (k == kUnknown) {
      k = static_cast<uint8_t>(
          (pool_.is_method(index, "jdk/internal/misc/Unsafe", "allocateInstance", "(Ljava/lang/Class;)Ljava/lang/Object;")
               ? kAllocateInstance : 0) |
          (pool_.sure_clone(index, false) ? kCloneVirtual : 0) | (pool_.sure_clone(index, true) ? kCloneSpecial : 0));
    }
    return (k & kinds) != 0;
  }

  const ConstantPool& pool_;
  mutable std::vector<uint8_t> kinds_;
};

// Entries appended after the original pool, numbered from `next`, written apart so that their
// count is known before the pool's header is.
class PoolAppender {
 public:
  explicit PoolAppender(uint32_t next) : next_(next) {}
  uint16_t utf8(std::string_view text) {
    w_.u1(kUtf8);
    w_.u2(static_cast<uint32_t>(text.size()));
    w_.str(text);
    return take();
  }
  uint16_t entry(uint8_t tag, uint16_t first) {
    w_.u1(tag);
    w_.u2(first);
    return take();
  }
  uint16_t entry(uint8_t tag, uint16_t first, uint16_t second) {
    w_.u1(tag);
    w_.u2(first);
    w_.u2(second);
    return take();
  }
  uint32_t next() const { return next_; }
  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  uint16_t take() { return static_cast<uint16_t>(next_++); }  // past 0xffff: the caller's count check fails
  uint32_t next_;
  std::vector<uint8_t> bytes_;
  Writer w_{bytes_};
};

// Skips a table of attributes, checking that each name is a Utf8 entry. False when it does not.
bool skip_attributes(Reader& in, const ConstantPool& pool);
// The source line of the instruction at `offset` as the JVM gives it: the line of the
// LineNumberTable entry with the greatest start at or before it (every such table of the Code
// attribute), -1 when none. `attributes`: the Code attribute's attributes_count, already checked
// by skip_attributes.
int32_t source_line(const uint8_t* attributes, const ConstantPool& pool, uint32_t offset);

// Skips one annotation (JVMS 4.7.16), nested at most 64 deep. False when it is malformed.
bool skip_annotation(Reader& in, int depth);

// The method_info again, with its Code attribute's body replaced by `code`.
void write_method(Writer& w, const uint8_t* data, const MethodInfo& m, const std::vector<uint8_t>& code);

// Reads a constant pool on its own: its count (u2), then its entries, nothing after. False with
// *error set (one line) when it is malformed. The pool's offsets are into `data`.
bool parse_constant_pool(const uint8_t* data, size_t size, ConstantPool& pool, std::string* error);

// Reads and checks the whole class file (magic, version, pool, fields, methods, attributes, no
// trailing bytes). False with *error set (one line) when it is malformed.
bool parse_class(const uint8_t* data, size_t size, ClassFile& cf, std::string* error);

// Names in an error come from the class file: control bytes would break the one-line message.
std::string printable(std::string text);

}  // namespace fasthprof::class_file
