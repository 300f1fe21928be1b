// BigVector: std::vector for the arrays of the heap-graph code (heap_graph.h, dominators.h,
// retained_sizes.h), which hold an entry or a few per object of a dump: hundreds of MiB for a dump
// of tens of millions of objects. Such an array is mapped apart and marked for transparent huge
// pages: the ID lookups and the dominator sweeps read these arrays at random, and with 4 KiB pages
// the TLB misses and the page faults (one per 4 KiB instead of one per 2 MiB) made `fasthprof
// dominators` six times slower on a 10-million-object dump (8.9 s instead of 1.5). Small arrays
// come from operator new as usual. Pages never written stay unbacked either way, so a generous
// reserve() costs address space only. (Keeping freed mappings for the next arrays saved 0.04 s
// there and raised the peak by 7 %: not done.)
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <vector>

namespace fasthprof {

template <typename T> struct HugePageAllocator {
  using value_type = T;
  static constexpr size_t kHugePage = size_t{2} << 20;
  // Below this an array is not worth a mapping of its own.
  static constexpr size_t kThreshold = size_t{4} << 20;

  HugePageAllocator() = default;
  template <typename U> HugePageAllocator(const HugePageAllocator<U>&) {}

  static size_t mapped_size(size_t bytes) { return (bytes + kHugePage - 1) & ~(kHugePage - 1); }

  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes < kThreshold) return static_cast<T*>(::operator new(bytes));
    const size_t size = mapped_size(bytes);
    // A huge page must start on a 2 MiB boundary: map one more, then give back the ends.
    void* raw = mmap(nullptr, size + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) std::abort();  // out of memory aborts, as for any std::vector
    const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
    const uintptr_t aligned = (start + kHugePage - 1) & ~uintptr_t{kHugePage - 1};
    if (aligned > start) munmap(raw, aligned - start);
    const uintptr_t end = start + size + kHugePage;
    if (end > aligned + size) munmap(reinterpret_cast<void*>(aligned + size), end - (aligned + size));
    madvise(reinterpret_cast<void*>(aligned), size, MADV_HUGEPAGE);
    return reinterpret_cast<T*>(aligned);
  }

  void deallocate(T* p, size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes < kThreshold) {
      ::operator delete(p);
    } else {
      munmap(p, mapped_size(bytes));
    }
  }

  template <typename U> bool operator==(const HugePageAllocator<U>&) const { return true; }
};

template <typename T> using BigVector = std::vector<T, HugePageAllocator<T>>;

}  // namespace fasthprof
