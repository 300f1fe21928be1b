// Address space reserved without backing: anonymous, zero-filled, committed page by page as it is
// first written (MAP_NORESERVE), for tables sized for the most they could ever hold.
#pragma once

#include <sys/mman.h>

#include <cstddef>

namespace fasthprof {

// `bytes` of reserved memory, or null when the kernel refuses the mapping.
inline void* reserve_memory(size_t bytes) {
  void* region = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return region == MAP_FAILED ? nullptr : region;
}

// Gives back what reserve_memory(bytes) returned (null: nothing).
inline void release_memory(void* region, size_t bytes) {
  if (region != nullptr) munmap(region, bytes);
}

}  // namespace fasthprof
