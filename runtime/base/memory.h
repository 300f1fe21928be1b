// The agent's own memory: jemalloc when the process allows it, the system allocator otherwise.
//
// jemalloc uses initial-exec TLS, so an agent linked against it fails to load into a JVM
// ("cannot allocate memory in static TLS block"). The agent therefore never links it: at start-up
// it looks for a jemalloc already in the process (LD_PRELOAD) and otherwise tries to open one
// (which works when GLIBC_TUNABLES=glibc.rtld.optional_static_tls leaves room), and uses it through
// its non-standard API (mallocx/sdallocx/rallocx), so the JVM's own malloc is never replaced.
//
// What comes from here, and so counts in bytes_in_use() / peak_bytes_in_use() (the line that
// verbose=y prints at exit), is the memory that grows with the program profiled:
//   - the writer's tables: trace table (slots, serial index, bodies), name table (index, entries,
//     text), frame registry (frame and method indexes, frames), class registry (index), thread
//     registry (live threads), site table (index, rows, slot map), CPU sample counts, the profile
//     output's thread names and class lists;
//   - allocation tracking: the event queue's blocks, block indexes and producers (through its
//     traits), the drain batch, the per-slot tallies and the per-thread state blocks;
//   - output: the sink's buffers (buffer_count x buffer_size, whole pages), the ByteBuffers that
//     binary records and heap-dump segments are encoded into, and a heap dump's class layouts, field
//     and element scratch and staging buffer.
// Not from here: what the registries keep per class and per method as std::string (names,
// signatures, line tables), the text writer's line buffer, options and messages, the agent/ side's
// own objects and maps (JVMTI glue, heap walk, CPU sampler; runtime/'s CPU counting and thread
// maps), memory the JVM hands out through JVMTI, the SiteSlotTable's mmap'd regions (address space
// reserved at start, touched as sites are claimed), thread stacks and the C++ runtime's own.
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

// allocate() with a larger alignment (a power of two; 16 or less is allocate()), for buffers that
// must start on a page. Free it with deallocate_aligned() and the same size and alignment.
void* allocate_aligned(size_t size, size_t alignment);
void deallocate_aligned(void* pointer, size_t size, size_t alignment);

// Resizes memory from allocate() (pointer may be nullptr, old_size its requested size), keeping the
// first min(old, new) bytes. Returns nullptr and leaves the block as it was when memory is
// exhausted. Thread-safe.
void* reallocate(void* pointer, size_t old_size, size_t new_size);

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
