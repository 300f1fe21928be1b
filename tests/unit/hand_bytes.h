// Bytes written out by hand, for the tests that hold a writer's output against them.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

namespace fasthprof {

using Bytes = std::vector<uint8_t>;

// Bytes from a list of small integers: hex({0x1C, 0, 0, 0, 7}).
inline Bytes hex(std::initializer_list<int> values) { return Bytes(values.begin(), values.end()); }

// The parts one after another.
inline Bytes concat(std::initializer_list<Bytes> parts) {
  Bytes all;
  for (const Bytes& part : parts) all.insert(all.end(), part.begin(), part.end());
  return all;
}

}  // namespace fasthprof
