// The queue between the JVMTI callbacks that announce threads and classes (ThreadStart, ThreadEnd,
// ClassPrepare, on any Java thread) and the writer thread, which alone registers them and writes
// their records (docs/ARCHITECTURE.md).
//
//   callback thread --push()--> [ one FIFO, sequence-numbered ] --drain()--> writer thread
//
// One FIFO for all threads: these events are few (a thread's start and end, a class's preparation),
// so a short mutex held only to append or to swap the buffer costs nothing, and it gives every
// event a global sequence number (the order across threads, which the text format will show for
// monitor events). The mutex is never held across I/O, a VM call or the writer's work.
//
// Bounded: while `capacity` events wait, push() waits for the writer, but only while the writer
// makes progress: if no drain completes for `stall_limit_ms` the event is queued anyway, so that a
// writer busy in a report (running Java code that may need a lock the waiting thread holds) can
// never deadlock with it.
//
// Threads: push() from any thread; drain() from one thread (the writer).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace fasthprof {

struct LifecycleEvent {
  // kMonitorWait/kMonitorWaited (monitor=y): the WAIT:/WAITED: lines, queued here so that they
  // keep their place among THREAD START/END in the file.
  enum class Kind : uint8_t { kThreadStart, kThreadEnd, kClassPrepare, kMonitorWait, kMonitorWaited };
  Kind kind = Kind::kThreadStart;
  uint64_t sequence = 0;   // set by push(): the order across threads, from 1
  uint64_t object_id = 0;  // kThreadStart/kThreadEnd/kMonitor*: the ID the thread object was tagged with
  int64_t value = 0;       // kMonitorWait: the timeout (ms); kMonitorWaited: the time waited (ms)
  void* handle = nullptr;  // the agent's reference to the thread or class (released by the writer)
  std::string text;        // kThreadStart: "name\0group\0parent group"; kMonitor*: the class signature
};

struct LifecycleQueueOptions {
  size_t capacity = size_t{1} << 16;
  uint32_t stall_limit_ms = 100;
};

struct LifecycleQueueStats {
  uint64_t pushed = 0;
  uint64_t waits = 0;          // pushes that found the queue full
  uint64_t forced = 0;         // pushes queued past the capacity because the writer stalled
  uint64_t deepest = 0;        // most events waiting at a drain
};

class LifecycleQueue {
 public:
  explicit LifecycleQueue(const LifecycleQueueOptions& options = {}) : options_(options) {}
  LifecycleQueue(const LifecycleQueue&) = delete;
  LifecycleQueue& operator=(const LifecycleQueue&) = delete;

  // Queues the event (see the bound above) and returns its sequence number. Any thread.
  uint64_t push(LifecycleEvent event);

  // Hands every event queued so far to fn(LifecycleEvent&) in push order; returns how many. Events
  // pushed meanwhile wait for the next call. The writer thread only.
  template <typename Fn>
  size_t drain(Fn&& fn) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      taken_.swap(pending_);
      if (taken_.size() > stats_.deepest) stats_.deepest = taken_.size();
    }
    size_t count = taken_.size();
    for (LifecycleEvent& event : taken_) fn(event);
    taken_.clear();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++drains_;
    }
    room_.notify_all();
    return count;
  }

  size_t size() const;
  LifecycleQueueStats stats() const;

 private:
  LifecycleQueueOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable room_;
  std::vector<LifecycleEvent> pending_;  // guarded by mutex_
  std::vector<LifecycleEvent> taken_;    // the writer's
  uint64_t next_sequence_ = 1;           // guarded by mutex_
  uint64_t drains_ = 0;                  // guarded by mutex_
  LifecycleQueueStats stats_;            // guarded by mutex_
};

}  // namespace fasthprof
