// Big-endian decoding from memory, the reading side of byte_encoder.h: every decoder of HPROF
// records, class files, net= commands and VM dumps reads its fields through these. Unchecked: the
// caller has made sure that the bytes are there (each decoder keeps its own bounds rule).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace fasthprof {

inline uint16_t load_be16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof v);
  if constexpr (std::endian::native == std::endian::little) v = __builtin_bswap16(v);
  return v;
}

inline uint32_t load_be32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  if constexpr (std::endian::native == std::endian::little) v = __builtin_bswap32(v);
  return v;
}

inline uint64_t load_be64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  if constexpr (std::endian::native == std::endian::little) v = __builtin_bswap64(v);
  return v;
}

// A field of size 1, 2, 4 or 8 bytes (an HPROF basic type, an identifier), widened to 64 bits.
inline uint64_t load_be(const uint8_t* p, size_t size) {
  switch (size) {
    case 1: return *p;
    case 2: return load_be16(p);
    case 4: return load_be32(p);
    case 8: return load_be64(p);
    default: {
      uint64_t bits = 0;
      for (size_t i = 0; i < size; ++i) bits = (bits << 8) | p[i];
      return bits;
    }
  }
}

}  // namespace fasthprof
