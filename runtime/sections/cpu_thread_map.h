// cpu=samples: what the sampler knows of each Java thread, by the thread's tag, in one place:
// its native id (told by ThreadStart on the thread itself, forgotten at ThreadEnd) and the trace
// its stack was last counted in, with when. The last trace is where counts whose stack cannot be taken go (charge_uncounted):
// to it if it was taken in the last kRecentIntervals intervals, or at any age when the thread has
// ended; otherwise they are lost. Without the VM: the clock is injected.
//
// Threads: native ids are set by the VM's callbacks on any thread and read by the sampler thread;
// traces set by the writer thread as it interns the counted stacks, read by the stacks thread. One
// small mutex inside, never held across anything but the map itself.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "base/clock.h"

namespace fasthprof {

class CpuThreadMap {
 public:
  // A stack counted this many intervals ago still stands for what its thread is running.
  static constexpr uint64_t kRecentIntervals = 10;

  CpuThreadMap(const Clock& clock, uint64_t interval_ns);

  // Native ids. set_native_id() with 0 forgets the id (the thread ended: the OS may reuse it), and
  // the thread with it unless a trace of it was counted.
  void set_native_id(int64_t tag, pid_t tid);
  pid_t native_id(int64_t tag) const;  // 0 while unknown
  // Moves on each time a native id becomes known: a reader that found none can skip asking again
  // until it changes.
  uint64_t native_ids_version() const { return version_.load(std::memory_order_acquire); }

  // The thread's stack was counted in `trace` now.
  void stack_taken(int64_t tag, uint32_t trace);
  // Counts made due for the thread whose stack could not be taken (it stopped running or ended
  // first): the trace to add them to, or 0 when they are lost (added to lost()).
  uint32_t charge_uncounted(int64_t tag, uint64_t count, bool ended);
  uint64_t lost() const;

  // Forgets threads with no native id whose last trace is no longer recent. Call now and then.
  void prune();
  size_t size() const;

 private:
  struct Known {
    pid_t tid = 0;
    uint32_t trace = 0;     // 0: no stack counted yet
    uint64_t taken_ns = 0;  // monotonic time `trace` was counted
  };
  bool recent(const Known& known, uint64_t now_ns) const;

  const Clock& clock_;
  const uint64_t interval_ns_;
  mutable std::mutex mutex_;
  std::unordered_map<int64_t, Known> threads_;  // guarded by mutex_
  uint64_t lost_ = 0;                           // guarded by mutex_
  std::atomic<uint64_t> version_{1};
};

}  // namespace fasthprof
