#include "base/java_names.h"

namespace fasthprof {
namespace {

std::string_view primitive_name(char letter) {
  switch (letter) {
    case 'B': return "byte";
    case 'C': return "char";
    case 'D': return "double";
    case 'F': return "float";
    case 'I': return "int";
    case 'J': return "long";
    case 'S': return "short";
    case 'Z': return "boolean";
    case 'V': return "void";
    default: return {};
  }
}

}  // namespace

void append_java_name(std::string& out, std::string_view signature) {
  size_t dimensions = signature.find_first_not_of('[');
  if (dimensions == std::string_view::npos) {
    out += "Unknown_class";
    return;
  }
  std::string_view element = signature.substr(dimensions);
  if (element.front() == 'L') {
    size_t end = element.find(';');
    if (end == std::string_view::npos) {
      out += "Unknown_class";
    } else {
      size_t start = out.size();
      out.append(element.data() + 1, end - 1);
      // A '.' in a signature's class name only ever comes before a hidden class's address
      // (JVMTI's "Lp/Foo$$Lambda.0x...;"): it takes the '+' of HotSpot's own name, which its
      // heap dumper writes, so that a file holding both spells a class one way.
      for (size_t i = start; i < out.size(); ++i) {
        if (out[i] == '.') out[i] = '+';
        if (out[i] == '/') out[i] = '.';
      }
    }
  } else if (element.front() == '(') {
    out += element.find(')') == std::string_view::npos ? "Unknown_method" : "()";
  } else if (std::string_view name = primitive_name(element.front()); !name.empty()) {
    out += name;
  } else {
    out += "Unknown_class";
  }
  for (size_t i = 0; i < dimensions; ++i) out += "[]";
}

std::string java_name(std::string_view signature) {
  std::string out;
  out.reserve(signature.size() + 8);
  append_java_name(out, signature);
  return out;
}

}  // namespace fasthprof
