// Threads as the output names them: a serial (START/END THREAD, TRACE with thread=y, roots, MONITOR
// lines) and a stable object ID for the java.lang.Thread object. kFirstThreadSerial (200000) is
// reserved for the "unknown thread", as in the original; real threads get 200001, 200002, ... in
// the order they are first seen.
//
// Only live threads are kept: a program that starts threads all day must not grow the agent. An
// ended thread's serial and object ID are one number apart (both count threads from 1), so records
// written after its end can still name it without the registry remembering it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory_resource>
#include <unordered_map>

#include "hprof_format.h"
#include "ids.h"

namespace fasthprof {

inline constexpr uint32_t kUnknownThreadSerial = kFirstThreadSerial;

struct ThreadInfo {
  uint32_t serial = 0;
  uint64_t object_id = 0;  // RegistryObjectKind::kThread space
  uint64_t key = 0;        // opaque, chosen by the agent
};

struct ThreadRef {
  uint32_t serial = 0;
  uint64_t object_id = 0;
  bool is_new = false;  // the caller writes the names (UTF8) + START THREAD
};

// Not thread-safe: the writer thread alone owns it. Memory: one entry per live thread, taken from a
// pool that reuses the entries of ended threads.
class ThreadRegistry {
 public:
  ThreadRegistry();
  ThreadRegistry(const ThreadRegistry&) = delete;
  ThreadRegistry& operator=(const ThreadRegistry&) = delete;

  // Finds the live thread with this key or registers it with the next serial and object ID. A key
  // seen again after end_thread() is a new thread. Key 0 is allowed like any other value.
  // Allocates only when more threads are alive than ever before. Never fails.
  ThreadRef start_thread(uint64_t key);

  // Forgets the thread. Returns true exactly once per thread, when the caller must write END
  // THREAD; false for the unknown thread, an unknown serial or a thread already ended.
  bool end_thread(uint32_t serial);

  // Lookups over live threads; nullptr for an ended or unknown thread and for
  // kUnknownThreadSerial, which has no thread object. The pointer stays valid until the thread
  // ends. Never allocate.
  const ThreadInfo* find(uint64_t key) const;
  const ThreadInfo* find_by_serial(uint32_t serial) const;
  const ThreadInfo* find_by_object_id(uint64_t object_id) const;

  // The serial of the thread with this object ID, ended or alive; 0 when no thread of this
  // registry ever had it. Never allocates.
  uint32_t serial_of_object_id(uint64_t object_id) const;

  // Calls fn(const ThreadInfo&) for every live thread in serial order.
  template <typename Fn>
  void for_each_alive(Fn&& fn) const {
    for (const auto& [serial, info] : alive_) fn(info);
  }

  size_t size() const { return started_; }              // threads ever started, unknown thread excluded
  size_t alive_count() const { return alive_.size(); }

 private:
  std::pmr::unsynchronized_pool_resource pool_;  // before the tables: they return their entries here
  std::pmr::map<uint32_t, ThreadInfo> alive_;    // serial -> thread
  std::pmr::unordered_map<uint64_t, uint32_t> serial_by_key_;
  uint32_t started_ = 0;
};

}  // namespace fasthprof
