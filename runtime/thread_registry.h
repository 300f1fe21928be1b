// Threads as the output names them: a serial (START/END THREAD, TRACE with thread=y, roots, MONITOR
// lines) and a stable object ID for the java.lang.Thread object. kFirstThreadSerial (200000) is
// reserved for the "unknown thread", as in the original; real threads get 200001, 200002, ... in
// the order they are first seen.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <unordered_map>

#include "hprof_format.h"
#include "ids.h"
#include "memory.h"

namespace fasthprof {

inline constexpr uint32_t kUnknownThreadSerial = kFirstThreadSerial;

struct ThreadInfo {
  uint32_t serial = 0;
  uint64_t object_id = 0;  // RegistryObjectKind::kThread space
  uint64_t key = 0;        // opaque, chosen by the agent (the thread object's JVMTI tag)
  bool alive = false;      // false once end_thread() reported it
};

struct ThreadRef {
  uint32_t serial = 0;
  uint64_t object_id = 0;
  bool is_new = false;  // the caller writes the names (UTF8) + START THREAD
};

// Not thread-safe: the writer thread alone owns it. Pointers returned stay valid for the registry's
// lifetime.
class ThreadRegistry {
 public:
  ThreadRegistry() = default;
  ThreadRegistry(const ThreadRegistry&) = delete;
  ThreadRegistry& operator=(const ThreadRegistry&) = delete;

  // Finds the live thread with this key or registers it with the next serial and object ID. A key
  // seen again after end_thread() is a new thread. Key 0 is allowed like any other value.
  // Allocates only when the thread is new. Never fails.
  ThreadRef start_thread(uint64_t key);

  // Marks the thread ended. Returns true exactly once per thread, when the caller must write END
  // THREAD; false for the unknown thread, an unknown serial or a thread already ended.
  bool end_thread(uint32_t serial);

  // The live thread with this key, or nullptr. Never allocates.
  const ThreadInfo* find(uint64_t key) const;

  // Lookups over every thread ever started (ended ones included); nullptr when unknown and for
  // kUnknownThreadSerial, which has no thread object.
  const ThreadInfo* find_by_serial(uint32_t serial) const;
  const ThreadInfo* find_by_object_id(uint64_t object_id) const;

  // Calls fn(const ThreadInfo&) for every live thread in serial order.
  template <typename Fn>
  void for_each_alive(Fn&& fn) const {
    for (const ThreadInfo& info : threads_) {
      if (info.alive) fn(info);
    }
  }

  size_t size() const { return threads_.size(); }  // threads ever started, unknown thread excluded

 private:
  std::deque<ThreadInfo, memory::Allocator<ThreadInfo>> threads_;  // index = serial - kFirstThreadSerial - 1
  // key -> index, live threads only
  std::unordered_map<uint64_t, uint32_t, std::hash<uint64_t>, std::equal_to<uint64_t>,
                     memory::Allocator<std::pair<const uint64_t, uint32_t>>>
      alive_;
};

}  // namespace fasthprof
