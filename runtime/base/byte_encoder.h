// Big-endian encoding into memory: the one place where HPROF bytes are formed.
//
//   ByteBuffer   growable byte array; append(n) reserves n bytes and hands back an EncodeCursor
//   EncodeCursor raw pointer that writes u1/u2/u4/u8/id/bytes without bounds checks in release
//                builds; debug builds assert that exactly the declared size is written (finish()).
//
// Every emitter computes its size first, reserves it once and then writes field after field with no
// per-field branch, call or capacity check: reserve-then-write.
#pragma once

#include <bit>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "base/hprof_format.h"
#include "base/memory.h"

namespace fasthprof {

// The largest value of a u4 field; 64-bit counters are clamped to it (docs/decisions.md).
inline constexpr uint64_t kMaxU4 = 0xFFFFFFFFu;

constexpr uint32_t clamp_u4(uint64_t value) {
  return value > kMaxU4 ? static_cast<uint32_t>(kMaxU4) : static_cast<uint32_t>(value);
}

constexpr uint16_t to_big_endian16(uint16_t v) {
  if constexpr (std::endian::native == std::endian::little) return __builtin_bswap16(v);
  return v;
}
constexpr uint32_t to_big_endian32(uint32_t v) {
  if constexpr (std::endian::native == std::endian::little) return __builtin_bswap32(v);
  return v;
}
constexpr uint64_t to_big_endian64(uint64_t v) {
  if constexpr (std::endian::native == std::endian::little) return __builtin_bswap64(v);
  return v;
}

// One field stored big-endian at p (no bounds check): for code that patches bytes in place.
inline void store_be16(uint8_t* p, uint16_t v) {
  v = to_big_endian16(v);
  std::memcpy(p, &v, sizeof v);
}
inline void store_be32(uint8_t* p, uint32_t v) {
  v = to_big_endian32(v);
  std::memcpy(p, &v, sizeof v);
}
inline void store_be64(uint8_t* p, uint64_t v) {
  v = to_big_endian64(v);
  std::memcpy(p, &v, sizeof v);
}

namespace detail {
template <typename T, T (*swap)(T)>
inline void copy_swapped(uint8_t* dst, const uint8_t* src, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    T value;
    std::memcpy(&value, src + i * sizeof(T), sizeof(T));
    value = swap(value);
    std::memcpy(dst + i * sizeof(T), &value, sizeof(T));
  }
}
}  // namespace detail

// Copies count elements of element_size bytes (1, 2, 4 or 8) from host order at src to big-endian
// order at dst. The ranges must not overlap. Does not allocate; any thread.
inline void copy_host_to_big_endian(uint8_t* dst, const void* src, size_t count, size_t element_size) {
  const auto* from = static_cast<const uint8_t*>(src);
  switch (element_size) {
    case 2: detail::copy_swapped<uint16_t, to_big_endian16>(dst, from, count); break;
    case 4: detail::copy_swapped<uint32_t, to_big_endian32>(dst, from, count); break;
    case 8: detail::copy_swapped<uint64_t, to_big_endian64>(dst, from, count); break;
    default:
      assert(element_size == 1);
      if (count != 0) std::memcpy(dst, from, count);
      break;
  }
}

// Writes big-endian fields into memory reserved beforehand. Cheap to copy; holds no ownership.
class EncodeCursor {
 public:
  EncodeCursor(uint8_t* begin, size_t declared_size) : position_(begin) {
#ifndef NDEBUG
    end_ = begin + declared_size;
#else
    (void)declared_size;
#endif
  }

  void u1(uint8_t value) {
    check(1);
    *position_++ = value;
  }
  void u2(uint16_t value) { store(to_big_endian16(value)); }
  void u4(uint32_t value) { store(to_big_endian32(value)); }
  void u8(uint64_t value) { store(to_big_endian64(value)); }
  void id(uint64_t value) { store(to_big_endian64(value)); }
  void tag(RecordTag tag) { u1(static_cast<uint8_t>(tag)); }
  void tag(HeapTag tag) { u1(static_cast<uint8_t>(tag)); }
  void type(BasicType type) { u1(static_cast<uint8_t>(type)); }

  void bytes(const void* data, size_t size) {
    check(size);
    if (size != 0) std::memcpy(position_, data, size);
    position_ += size;
  }

  // Writes the low basic_type_size(type) bytes of bits (an ID, or a primitive's bit pattern).
  void value(BasicType type, uint64_t bits) {
    switch (basic_type_size(type)) {
      case 1: u1(static_cast<uint8_t>(bits)); break;
      case 2: u2(static_cast<uint16_t>(bits)); break;
      case 4: u4(static_cast<uint32_t>(bits)); break;
      default: u8(bits); break;
    }
  }

  // Copies count host-order elements of element_size bytes, converting them to big-endian.
  void host_elements(const void* data, size_t count, size_t element_size) {
    check(count * element_size);
    copy_host_to_big_endian(position_, data, count, element_size);
    position_ += count * element_size;
  }

  // Hands out the next size bytes for the caller to fill directly.
  uint8_t* skip(size_t size) {
    check(size);
    uint8_t* start = position_;
    position_ += size;
    return start;
  }

  uint8_t* position() const { return position_; }

  // Debug builds: asserts that exactly the declared number of bytes was written.
  void finish() const {
#ifndef NDEBUG
    assert(position_ == end_ && "emitter wrote a different number of bytes than it declared");
#endif
  }

 private:
  template <typename T>
  void store(T big_endian_value) {
    check(sizeof(T));
    std::memcpy(position_, &big_endian_value, sizeof(T));
    position_ += sizeof(T);
  }
  void check([[maybe_unused]] size_t size) const {
#ifndef NDEBUG
    assert(position_ + size <= end_ && "emitter wrote past its declared size");
#endif
  }

  uint8_t* position_;
#ifndef NDEBUG
  uint8_t* end_;
#endif
};

// A growable byte array. Its memory comes from memory:: (counted in the agent's figures). Not
// thread-safe: one owner.
class ByteBuffer {
 public:
  ByteBuffer() = default;
  explicit ByteBuffer(size_t initial_capacity) { reserve(initial_capacity); }
  ~ByteBuffer() {
    if (data_ != nullptr) memory::deallocate(data_, capacity_ == 0 ? 1 : capacity_);
  }
  ByteBuffer(const ByteBuffer&) = delete;
  ByteBuffer& operator=(const ByteBuffer&) = delete;

  // Appends size uninitialized bytes and returns a cursor over them. Allocates only when the
  // capacity is exceeded (doubling); aborts the process if memory is exhausted. The cursor is valid
  // until the next call that changes the buffer.
  EncodeCursor append(size_t size) {
    if (capacity_ - size_ < size) grow(size);
    uint8_t* start = data_ + size_;
    size_ += size;
    return EncodeCursor(start, size);
  }

  // Ensures room for capacity bytes in total. May allocate.
  void reserve(size_t capacity) {
    if (capacity > capacity_) grow(capacity - size_);
  }

  // Drops the contents after the first size bytes; keeps the capacity.
  void truncate(size_t size) {
    assert(size <= size_);
    size_ = size;
  }
  void clear() { size_ = 0; }

  // Gives back memory when the capacity exceeds max(size, capacity) bytes. May allocate.
  void shrink_to(size_t capacity) {
    if (capacity < size_) capacity = size_;
    if (capacity_ > capacity) reallocate(capacity);
  }

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }

 private:
  void grow(size_t extra) {
    size_t wanted = size_ + extra;
    size_t doubled = capacity_ < 4096 ? 4096 : capacity_ * 2;
    reallocate(wanted > doubled ? wanted : doubled);
  }
  void reallocate(size_t capacity) {
    void* moved = memory::reallocate(data_, capacity_ == 0 ? 1 : capacity_, capacity == 0 ? 1 : capacity);
    if (moved == nullptr) std::abort();  // no error path can write a partial record correctly
    data_ = static_cast<uint8_t*>(moved);
    capacity_ = capacity;
  }

  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

}  // namespace fasthprof
