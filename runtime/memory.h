// The agent's own memory: jemalloc when the process allows it, the system allocator otherwise.
//
// jemalloc uses initial-exec TLS, so an agent linked against it fails to load into a JVM
// ("cannot allocate memory in static TLS block"). The agent therefore never links it: at start-up
// it looks for a jemalloc already in the process (LD_PRELOAD) and otherwise tries to open one
// (which works when GLIBC_TUNABLES=glibc.rtld.optional_static_tls leaves room), and uses it through
// its non-standard API (mallocx/sdallocx), so the JVM's own malloc is never replaced.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory_resource>
#include <string>

namespace fasthprof::memory {

enum class Backend { kSystem, kJemallocPreloaded, kJemallocOpened };

struct Status {
  Backend backend = Backend::kSystem;
  std::string description;  // one line for verbose output
};

// Chooses the allocator. Call once at start-up, before the first allocate(); later calls return
// the first result. Allocates only the description string. Any thread.
const Status& initialize(const char* jemalloc_soname = "libjemalloc.so.2");

// Allocates size bytes (aligned to 16), or returns nullptr. Calls initialize() with the default
// name if nobody did. Thread-safe, any thread.
void* allocate(size_t size);

// Frees memory from allocate(); size must be the size that was requested. Thread-safe.
void deallocate(void* pointer, size_t size);

// Bytes currently handed out through allocate() and their high-water mark.
uint64_t bytes_in_use();
uint64_t peak_bytes_in_use();

// The same memory as a std::pmr::memory_resource (any alignment), the upstream of the agent's
// pools. Out of memory traps, as Allocator does. Thread-safe.
std::pmr::memory_resource* resource();

// A standard-library allocator over allocate()/deallocate(), for the agent's large tables.
template <typename T>
struct Allocator {
  using value_type = T;
  Allocator() = default;
  template <typename U>
  Allocator(const Allocator<U>&) {}
  T* allocate(size_t count) {
    void* pointer = memory::allocate(count * sizeof(T));
    if (pointer == nullptr) __builtin_trap();  // no exceptions: out of memory ends here
    return static_cast<T*>(pointer);
  }
  void deallocate(T* pointer, size_t count) { memory::deallocate(pointer, count * sizeof(T)); }
  template <typename U>
  bool operator==(const Allocator<U>&) const { return true; }
};

}  // namespace fasthprof::memory
