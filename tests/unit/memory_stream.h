// An OutputStream that keeps everything in memory, for tests of the writers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "output_stream.h"

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

}  // namespace fasthprof
