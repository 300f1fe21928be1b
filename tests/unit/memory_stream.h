// For tests of the writers: an OutputStream that keeps everything in memory, big-endian readers
// of what it holds, and options from an option string.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "options/options.h"
#include "sink/output_stream.h"

namespace fasthprof {

class MemoryStream final : public OutputStream {
 public:
  void write(const void* data, size_t size) override {
    const auto* begin = static_cast<const uint8_t*>(data);
    bytes.insert(bytes.end(), begin, begin + size);
    ++writes;
  }
  std::string text() const { return std::string(bytes.begin(), bytes.end()); }

  std::vector<uint8_t> bytes;
  int writes = 0;  // calls of write(): how often the writer flushed
};

inline uint32_t u4_at(const std::vector<uint8_t>& bytes, size_t at) {
  return (uint32_t{bytes[at]} << 24) | (uint32_t{bytes[at + 1]} << 16) | (uint32_t{bytes[at + 2]} << 8) |
         bytes[at + 3];
}

inline uint64_t u8_at(const std::vector<uint8_t>& bytes, size_t at) {
  return (uint64_t{u4_at(bytes, at)} << 32) | u4_at(bytes, at + 4);
}

// The options of a valid option string (the test fails if it is not).
inline Options parse(const char* text) {
  ParseResult parsed = parse_options(text, nullptr);
  EXPECT_EQ(parsed.kind, ParseResult::Kind::kOk);
  return parsed.options;
}

}  // namespace fasthprof
