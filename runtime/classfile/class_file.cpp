#include "classfile/class_file.h"

namespace fasthprof::class_file {

namespace {

bool parse_pool(Reader& in, const uint8_t* data, ConstantPool& pool, std::string& error) {
  uint16_t count = in.u2();
  if (in.failed() || count == 0) {
    error = "constant pool count missing or zero";
    return false;
  }
  pool.data = data;
  pool.offset.assign(count, 0);
  pool.tag.assign(count, 0);
  for (uint32_t i = 1; i < count; ++i) {
    size_t at = in.at();
    uint8_t tag = in.u1();
    size_t body = 0;
    switch (tag) {
      case kUtf8: body = in.u2(); break;
      case kInteger: case kFloat: body = 4; break;
      case kLong: case kDouble: body = 8; break;
      case kClass: case kString: case kMethodType: case kModule: case kPackage: body = 2; break;
      case kFieldref: case kMethodref: case kInterfaceMethodref: case kNameAndType:
      case kDynamic: case kInvokeDynamic: body = 4; break;
      case kMethodHandle: body = 3; break;
      default:
        if (!in.failed()) {
          error = "constant pool entry " + std::to_string(i) + " has unknown tag " + std::to_string(tag);
          return false;
        }
    }
    in.bytes(body);
    if (in.failed()) {
      error = "constant pool truncated at entry " + std::to_string(i) + " of " + std::to_string(count - 1);
      return false;
    }
    pool.offset[i] = static_cast<uint32_t>(at);
    pool.tag[i] = tag;
    if (tag == kLong || tag == kDouble) {  // takes two slots; the second is unusable
      if (i + 1 >= count) {
        error = "constant pool entry " + std::to_string(i) + " (long or double) has no second slot";
        return false;
      }
      ++i;
    }
  }
  return true;
}

enum class Walk { kDone, kBadName, kStopped };

// Walks a table of attributes: for each whose body is all there, visit(name, offset of the body,
// length); visit returns false to stop (kStopped). A name that is no Utf8 entry: kBadName. A short
// read ends the walk as kDone with in.failed() set, for the caller to tell.
template <typename Visit>
Walk walk_attributes(Reader& in, const ConstantPool& pool, Visit&& visit) {
  uint16_t attributes = in.u2();
  for (uint32_t a = 0; a < attributes && !in.failed(); ++a) {
    uint16_t name_index = in.u2();
    uint32_t length = in.u4();
    std::string_view name;
    if (in.failed()) break;
    if (!pool.utf8(name_index, &name)) return Walk::kBadName;
    size_t at = in.at();
    if (in.bytes(length) == nullptr) break;
    if (!visit(name, at, length)) return Walk::kStopped;
  }
  return Walk::kDone;
}

// The methods table: each method's name, descriptor and Code attribute (at most one).
bool parse_methods(Reader& in, ClassFile& cf, std::string* error) {
  uint16_t methods = in.u2();
  for (uint32_t i = 0; i < methods; ++i) {
    MethodInfo m;
    m.start = in.at();
    in.u2();
    uint16_t name_index = in.u2(), descriptor_index = in.u2();
    if (in.failed() || !cf.pool.utf8(name_index, &m.name) || !cf.pool.utf8(descriptor_index, &m.descriptor)) {
      *error = "method " + std::to_string(i) + ": name or descriptor is not a Utf8 entry";
      return false;
    }
    auto method = [&m] { return std::string(m.name) + std::string(m.descriptor); };  // for errors only
    Walk walk = walk_attributes(in, cf.pool, [&](std::string_view attribute, size_t at, uint32_t length) {
      if (attribute != "Code") return true;
      if (m.code_at != 0) {
        *error = "method " + method() + " has two Code attributes";
        return false;
      }
      m.code_at = at;
      m.code_length = length;
      return true;
    });
    if (walk == Walk::kBadName) *error = "method " + method() + ": attribute name is not a Utf8 entry";
    if (walk != Walk::kDone) return false;
    if (in.failed()) {
      *error = "method " + method() + ": attributes truncated or malformed";
      return false;
    }
    m.end = in.at();
    cf.methods.push_back(m);
  }
  return true;
}

// The class's own attributes: only SourceFile is kept.
bool parse_class_attributes(Reader& in, ClassFile& cf, std::string* error) {
  Walk walk = walk_attributes(in, cf.pool, [&](std::string_view attribute, size_t at, uint32_t length) {
    std::string_view source;
    if (attribute == "SourceFile" && length == 2 && cf.pool.utf8(load_be16(in.data() + at), &source)) {
      cf.source_file = std::string(source);
    }
    return true;
  });
  if (walk == Walk::kBadName) *error = "class attribute name is not a Utf8 entry";
  return walk == Walk::kDone;
}

}  // namespace

bool skip_attributes(Reader& in, const ConstantPool& pool) {
  Walk walk = walk_attributes(in, pool, [](std::string_view, size_t, uint32_t) { return true; });
  return walk == Walk::kDone && !in.failed();
}

bool parse_constant_pool(const uint8_t* data, size_t size, ConstantPool& pool, std::string* error) {
  Reader in(data, size);
  if (!parse_pool(in, data, pool, *error)) return false;
  if (!in.at_end()) {
    *error = "bytes after the constant pool";
    return false;
  }
  return true;
}

bool parse_class(const uint8_t* data, size_t size, ClassFile& cf, std::string* error) {
  Reader in(data, size);
  uint32_t magic = in.u4();
  in.u2();  // minor_version: any
  cf.major = in.u2();
  if (in.failed() || magic != 0xcafebabe) {
    *error = "not a class file (no 0xCAFEBABE header)";
    return false;
  }
  if (cf.major < kFirstVersion || cf.major > kLastVersion) {
    *error = "class file version " + std::to_string(cf.major) + " outside 45..69";
    return false;
  }
  if (!parse_pool(in, data, cf.pool, *error)) return false;
  cf.pool_end = in.at();
  in.u2();  // access_flags
  uint16_t this_class = in.u2();
  in.u2();  // super_class
  std::string_view name;
  if (in.failed() || !cf.pool.class_name(this_class, &name)) {
    *error = "this_class is not a class entry";
    return false;
  }
  cf.class_name = std::string(name);
  uint16_t interfaces = in.u2();
  in.bytes(size_t{interfaces} * 2);
  uint16_t fields = in.u2();
  bool fields_read = !in.failed();
  for (uint32_t i = 0; i < fields && fields_read; ++i) {
    in.bytes(6);
    // A field attribute whose name is no Utf8 entry is malformed too, not only a short read: the
    // methods would otherwise be looked for wherever the fields were left.
    fields_read = skip_attributes(in, cf.pool);
  }
  if (!fields_read) {
    *error = "fields truncated or malformed";
    return false;
  }
  cf.methods_at = in.at();
  if (!parse_methods(in, cf, error)) return false;
  cf.methods_end = in.at();
  if (!parse_class_attributes(in, cf, error)) return false;
  if (!in.at_end()) {
    *error = in.failed() ? "class attributes truncated or malformed" : "bytes after the class file's end";
    return false;
  }
  return true;
}

std::string printable(std::string text) {
  for (char& c : text)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return text;
}

static bool skip_element_value(Reader& in, int depth);

bool skip_annotation(Reader& in, int depth) {
  if (depth > 64) return false;
  in.u2();  // type_index
  uint16_t pairs = in.u2();
  for (uint32_t i = 0; i < pairs && !in.failed(); ++i) {
    in.u2();
    if (!skip_element_value(in, depth + 1)) return false;
  }
  return !in.failed();
}

static bool skip_element_value(Reader& in, int depth) {
  if (depth > 64) return false;
  uint8_t tag = in.u1();
  switch (tag) {
    case 'B': case 'C': case 'D': case 'F': case 'I': case 'J': case 'S': case 'Z': case 's': case 'c':
      in.u2();
      break;
    case 'e': in.u2(); in.u2(); break;
    case '@': return skip_annotation(in, depth + 1);
    case '[': {
      uint16_t n = in.u2();
      for (uint32_t i = 0; i < n && !in.failed(); ++i)
        if (!skip_element_value(in, depth + 1)) return false;
      break;
    }
    default: return false;
  }
  return !in.failed();
}

void write_method(Writer& w, const uint8_t* data, const MethodInfo& m, const std::vector<uint8_t>& code) {
  Reader in(data + m.start, m.end - m.start);
  w.bytes(in.bytes(6), 6);
  uint16_t attributes = in.u2();
  w.u2(attributes);
  for (uint32_t a = 0; a < attributes; ++a) {
    size_t at = in.at();
    uint16_t name = in.u2();
    uint32_t length = in.u4();
    in.bytes(length);
    if (m.start + at + 6 == m.code_at) {
      w.u2(name);
      w.u4(static_cast<uint32_t>(code.size()));
      w.bytes(code.data(), code.size());
    } else {
      w.bytes(data + m.start + at, 6 + size_t{length});
    }
  }
}

int32_t source_line(const uint8_t* attributes, const ConstantPool& pool, uint32_t offset) {
  Reader in(attributes, SIZE_MAX);
  uint16_t count = in.u2();
  int32_t line = -1;
  uint32_t best = 0;
  for (uint32_t i = 0; i < count && !in.failed(); ++i) {
    uint16_t name_index = in.u2();
    uint32_t length = in.u4();
    const uint8_t* body = in.bytes(length);
    std::string_view name;
    if (body == nullptr || !pool.utf8(name_index, &name) || name != "LineNumberTable") continue;
    Reader table(body, length);
    uint16_t entries = table.u2();
    for (uint32_t k = 0; k < entries && !table.failed(); ++k) {
      uint16_t start = table.u2();
      uint16_t number = table.u2();
      if (!table.failed() && start <= offset && (line < 0 || start >= best)) {
        best = start;
        line = number;
      }
    }
  }
  return line;
}

}  // namespace fasthprof::class_file
