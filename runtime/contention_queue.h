// monitor=y: the queue between the MonitorContendedEnter/Entered callbacks and the profile's owner
// (docs/ARCHITECTURE.md).
//
//   callback thread --push()--> [ one bounded FIFO ] --drain()--> owner: interns the trace, adds
//                                                                  the time (monitor_time_table.h)
//
// A contention event is rare next to an allocation (the thread has just blocked for a lock, which
// cost it a park and an unpark at least), so one short mutex, held only to append or to swap the
// buffer, is all the queue needs; it is never held across a VM call or the owner's work. WAIT/WAITED
// lines do not come this way: they go through the LifecycleQueue so that they keep their place
// among THREAD START/END.
//
// Threads: push() from any thread, drain() from one (the owner).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "profile_writer.h"

namespace fasthprof {

// A contended monitor enter. A known thread queues two: kEnter when it is about to block (with the
// stack and the class: taken there, the work overlaps the wait instead of lengthening the time the
// thread then holds the lock) and kEntered once it got the monitor; the owner pairs them per
// thread (one FIFO keeps each thread's two in order). A thread the agent does not know (a virtual
// thread, which may come back on another carrier) queues one kComplete at the end.
struct ContentionEvent {
  enum class Kind : uint8_t { kComplete, kEnter, kEntered };
  Kind kind = Kind::kComplete;
  uint64_t thread_object_id = 0;  // the thread's tag (0: a thread the agent does not know)
  uint64_t at_ns = 0;             // kEnter, kEntered: when (monotonic)
  uint64_t waited_ns = 0;         // kComplete: from MonitorContendedEnter to MonitorContendedEntered
  std::string signature;          // kEnter, kComplete: the monitor object's class, JVM form ("Ljava/lang/Object;")
  std::vector<StackFrame> frames;  // kEnter, kComplete: the stack at the enter, top first, cut to depth=
};

struct ContentionQueueOptions {
  size_t capacity = size_t{1} << 16;
  uint32_t stall_limit_ms = 100;
};

struct ContentionQueueStats {
  uint64_t pushed = 0;
  uint64_t waits = 0;   // pushes that found the queue full
  uint64_t forced = 0;  // pushes queued past the capacity because the owner stalled
  uint64_t deepest = 0;  // most events waiting at a drain
};

// Bounded like the LifecycleQueue: while `capacity` events wait, push() waits for the owner, but
// only while the owner makes progress; after `stall_limit_ms` without a drain the event is queued
// anyway (a report may run Java code that needs a lock the waiting thread holds).
class ContentionQueue {
 public:
  explicit ContentionQueue(const ContentionQueueOptions& options = {}) : options_(options) {}
  ContentionQueue(const ContentionQueue&) = delete;
  ContentionQueue& operator=(const ContentionQueue&) = delete;

  void push(ContentionEvent event);

  // Hands every event queued so far to fn(ContentionEvent&) in push order; returns how many. One
  // thread (the owner).
  template <typename Fn>
  size_t drain(Fn&& fn) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      taken_.swap(pending_);
      if (taken_.size() > stats_.deepest) stats_.deepest = taken_.size();
    }
    size_t count = taken_.size();
    for (ContentionEvent& event : taken_) fn(event);
    taken_.clear();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++drains_;
    }
    room_.notify_all();
    return count;
  }

  ContentionQueueStats stats() const;

 private:
  ContentionQueueOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable room_;
  std::vector<ContentionEvent> pending_;  // guarded by mutex_
  std::vector<ContentionEvent> taken_;    // the owner's
  uint64_t drains_ = 0;                   // guarded by mutex_
  ContentionQueueStats stats_;            // guarded by mutex_
};

}  // namespace fasthprof
