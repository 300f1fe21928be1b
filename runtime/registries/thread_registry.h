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
#include <atomic>
#include <map>
#include <memory_resource>

#include "base/hprof_format.h"
#include "base/ids.h"

namespace fasthprof {

inline constexpr uint32_t kUnknownThreadSerial = kFirstThreadSerial;

// What a thread is known by: its serial and its object's ID.
struct ThreadIdentity {
  uint32_t serial = 0;     // from 200001; 200000 is the "unknown thread"
  uint64_t object_id = 0;  // the ID of the java.lang.Thread object (the agent tags it with this)
};

struct ThreadInfo {
  uint32_t serial = 0;
  uint64_t object_id = 0;  // RegistryObjectKind::kThread space
};

struct ThreadRef {
  uint32_t serial = 0;
  uint64_t object_id = 0;
  bool is_new = false;  // the caller writes the names (UTF8) + START THREAD
};

// Thread object IDs are claimed where a thread is first seen (its own ThreadStart callback, or the
// enumeration of the threads that existed before the agent went live), on any thread, so that
// the thread object carries its ID before it allocates; the registry below, the writer's, learns
// them afterwards. The serial follows from the ID: serial = kUnknownThreadSerial + index.
class ThreadIdClaims {
 public:
  uint64_t claim() {
    return make_registry_object_id(RegistryObjectKind::kThread, next_.fetch_add(1, std::memory_order_relaxed) + 1);
  }

 private:
  std::atomic<uint64_t> next_{0};
};

// Not thread-safe: the writer thread alone owns it. Memory: one entry per live thread, taken from a
// pool that reuses the entries of ended threads.
class ThreadRegistry {
 public:
  ThreadRegistry();
  ThreadRegistry(const ThreadRegistry&) = delete;
  ThreadRegistry& operator=(const ThreadRegistry&) = delete;

  // Registers the live thread whose object carries object_id (from ThreadIdClaims), or finds it
  // when it is alive already (is_new false). An ID that is not a thread ID gives serial 0.
  // Allocates only when more threads are alive than ever before. Never fails.
  ThreadRef start_thread(uint64_t object_id);

  // Forgets the thread. Returns true exactly once per thread, when the caller must write END
  // THREAD; false for the unknown thread, an unknown serial or a thread already ended.
  bool end_thread(uint32_t serial);

  // Lookups over live threads; nullptr for an ended or unknown thread and for
  // kUnknownThreadSerial, which has no thread object. The pointer stays valid until the thread
  // ends. Never allocate.
  const ThreadInfo* find_by_serial(uint32_t serial) const;
  const ThreadInfo* find_by_object_id(uint64_t object_id) const;

  // The serial of the thread with this object ID, ended or alive; 0 for an ID above every one
  // registered, or not a thread ID. Never allocates.
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
  uint32_t started_ = 0;      // threads registered
  uint64_t highest_index_ = 0;  // of the IDs registered
};

}  // namespace fasthprof
