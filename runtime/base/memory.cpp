#include "base/memory.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <mutex>

namespace fasthprof::memory {
namespace {

using MallocxFunction = void* (*)(size_t, int);
using SdallocxFunction = void (*)(void*, size_t, int);
using RallocxFunction = void* (*)(void*, size_t, int);
using MallctlFunction = int (*)(const char*, void*, size_t*, void*, size_t);

MallocxFunction jemalloc_mallocx = nullptr;
SdallocxFunction jemalloc_sdallocx = nullptr;
RallocxFunction jemalloc_rallocx = nullptr;
std::atomic<uint64_t> in_use{0};
std::atomic<uint64_t> peak{0};

constexpr int kAlign16 = 4;  // MALLOCX_LG_ALIGN(4)

// jemalloc's flags for an alignment (MALLOCX_LG_ALIGN); at least 16, as allocate() promises.
int align_flags(size_t alignment) {
  return alignment <= 16 ? kAlign16 : __builtin_ctzll(alignment);
}

void note_allocated(size_t size) {
  uint64_t now = in_use.fetch_add(size, std::memory_order_relaxed) + size;
  uint64_t seen = peak.load(std::memory_order_relaxed);
  while (now > seen && !peak.compare_exchange_weak(seen, now, std::memory_order_relaxed)) {
  }
}

void note_freed(size_t size) { in_use.fetch_sub(size, std::memory_order_relaxed); }

std::string jemalloc_version(void* handle) {
  auto mallctl = reinterpret_cast<MallctlFunction>(dlsym(handle, "mallctl"));
  const char* version = nullptr;
  size_t length = sizeof(version);
  if (mallctl != nullptr && mallctl("version", &version, &length, nullptr, 0) == 0 && version) {
    return version;
  }
  return "unknown version";
}

bool bind(void* handle) {
  jemalloc_mallocx = reinterpret_cast<MallocxFunction>(dlsym(handle, "mallocx"));
  jemalloc_sdallocx = reinterpret_cast<SdallocxFunction>(dlsym(handle, "sdallocx"));
  jemalloc_rallocx = reinterpret_cast<RallocxFunction>(dlsym(handle, "rallocx"));
  if (jemalloc_mallocx == nullptr || jemalloc_sdallocx == nullptr || jemalloc_rallocx == nullptr) {
    jemalloc_mallocx = nullptr;
    jemalloc_sdallocx = nullptr;
    jemalloc_rallocx = nullptr;
    return false;
  }
  return true;
}

Status choose(const char* soname) {
  Status status;
  // Already in the process (LD_PRELOAD, or the launcher linked it): share it.
  if (void* handle = dlopen(soname, RTLD_NOW | RTLD_NOLOAD)) {
    if (bind(handle)) {
      status.backend = Backend::kJemallocPreloaded;
      status.description = "fasthprof: memory: jemalloc " + jemalloc_version(handle) +
                           " (already in the process)";
      return status;
    }
  }
  // Opening it needs room in the static TLS block; without it dlopen fails cleanly.
  if (void* handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL)) {
    if (bind(handle)) {
      status.backend = Backend::kJemallocOpened;
      status.description = "fasthprof: memory: jemalloc " + jemalloc_version(handle) +
                           " (opened at start-up)";
      return status;
    }
    dlclose(handle);
  }
  const char* why = dlerror();
  status.backend = Backend::kSystem;
  status.description = std::string("fasthprof: memory: system allocator (jemalloc not usable: ") +
                       (why != nullptr ? why : "no mallocx/sdallocx/rallocx") + ")";
  return status;
}

}  // namespace

const Status& initialize(const char* jemalloc_soname) {
  static const Status status = choose(jemalloc_soname);
  return status;
}

void* allocate(size_t size) { return allocate_aligned(size, 16); }

void deallocate(void* pointer, size_t size) { deallocate_aligned(pointer, size, 16); }

void* allocate_aligned(size_t size, size_t alignment) {
  initialize();  // a thread-safe static: memory must never change hands between allocators
  if (size == 0) size = 1;
  void* pointer = nullptr;
  if (jemalloc_mallocx != nullptr) {
    pointer = jemalloc_mallocx(size, align_flags(alignment));
  } else if (alignment <= 16) {
    pointer = std::malloc(size);
  } else if (posix_memalign(&pointer, alignment, size) != 0) {
    pointer = nullptr;
  }
  if (pointer != nullptr) note_allocated(size);
  return pointer;
}

void deallocate_aligned(void* pointer, size_t size, size_t alignment) {
  if (pointer == nullptr) return;
  if (size == 0) size = 1;
  note_freed(size);
  if (jemalloc_sdallocx != nullptr) {
    jemalloc_sdallocx(pointer, size, align_flags(alignment));
  } else {
    std::free(pointer);
  }
}

void* reallocate(void* pointer, size_t old_size, size_t new_size) {
  if (pointer == nullptr) return allocate(new_size);
  if (new_size == 0) new_size = 1;
  if (old_size == 0) old_size = 1;
  void* moved = jemalloc_rallocx != nullptr ? jemalloc_rallocx(pointer, new_size, kAlign16)
                                            : std::realloc(pointer, new_size);
  if (moved != nullptr) {
    note_freed(old_size);
    note_allocated(new_size);
  }
  return moved;
}

namespace {

class CountedResource final : public std::pmr::memory_resource {
  void* do_allocate(size_t bytes, size_t alignment) override {
    return checked(memory::allocate_aligned(bytes, alignment));
  }
  void do_deallocate(void* pointer, size_t bytes, size_t alignment) override {
    memory::deallocate_aligned(pointer, bytes, alignment);
  }
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override { return this == &other; }
  static void* checked(void* pointer) {
    if (pointer == nullptr) __builtin_trap();  // no exceptions: out of memory ends here
    return pointer;
  }
};

}  // namespace

std::pmr::memory_resource* resource() {
  static auto* counted = new CountedResource();  // never destroyed: pools may outlive static destructors
  return counted;
}

uint64_t bytes_in_use() { return in_use.load(std::memory_order_relaxed); }
uint64_t peak_bytes_in_use() { return peak.load(std::memory_order_relaxed); }

}  // namespace fasthprof::memory
