// For tests of the report sections (CPU SAMPLES, CPU TIME, MONITOR TIME, SITES): a MethodResolver
// over a fixed list of methods, a ProfileWriter into memory that uses it, and the sections' BEGIN
// lines with a fixed date.
#pragma once

#include <cstddef>
#include <cstdint>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "memory_stream.h"
#include "records/profile_writer.h"

namespace fasthprof {

struct FakeMethod {
  const char* class_signature;  // JVM form, "LHot;"
  const char* name;
  const char* source_file;
};

// Method n (counted from 1) is methods[n - 1], with signature ()V; any other method is unknown.
class ListResolver final : public MethodResolver {
 public:
  explicit ListResolver(std::vector<FakeMethod> methods) : methods_(std::move(methods)) {}

  bool resolve_method(uint64_t method, MethodInfo* out) override {
    if (method == 0 || method > methods_.size()) return false;
    const FakeMethod& found = methods_[method - 1];
    out->class_signature = found.class_signature;
    out->name = found.name;
    out->signature = "()V";
    out->source_file = found.source_file;
    return true;
  }

 private:
  std::vector<FakeMethod> methods_;
};

// A section's BEGIN line ends in the local ctime date: it becomes Thu Jan  1 00:00:00 1970.
inline std::string without_dates(const std::string& text) {
  return std::regex_replace(text, std::regex(R"((BEGIN \([^)\n]*\)) [^\n]*\n)"), "$1 Thu Jan  1 00:00:00 1970\n");
}

// A ProfileWriter with the given options into a MemoryStream, its file header written.
struct SectionWriter {
  SectionWriter(const char* options, std::vector<FakeMethod> methods)
      : resolver(std::move(methods)), writer(parse(options), stream, &resolver) {
    writer.write_header(0, 0);
  }

  // Flushes the writer: how many bytes the stream holds.
  size_t mark() {
    writer.flush();
    return stream.bytes.size();
  }

  // Flushes the writer: the text written since mark `from`, dates fixed.
  std::string text_since(size_t from) {
    writer.flush();
    return without_dates(stream.text().substr(from));
  }

  ListResolver resolver;
  MemoryStream stream;
  ProfileWriter writer;
};

}  // namespace fasthprof
