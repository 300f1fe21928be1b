// The bounded FIFO that carries rare events from the JVMTI callbacks (any Java thread) to the
// profile's owner (docs/ARCHITECTURE.md): thread and class events (lifecycle_queue.h) and contended
// monitor enters (contention_queue.h).
//
//   callback thread --push()--> [ one FIFO, sequence-numbered ] --drain()--> owner
//
// One FIFO for all threads: the events are few next to allocations, so one short mutex, held only
// to append or to swap the buffer, costs nothing, and it gives every event a global sequence
// number (the order across threads). The mutex is never held across I/O, a VM call or the owner's
// work.
//
// Bounded: while `capacity` events wait, push() waits for the owner, but only while the owner
// makes progress: if no drain completes for `stall_limit_ms` the event is queued anyway, so that an
// owner busy in a report (running Java code that may need a lock the waiting thread holds) can
// never deadlock with it.
//
// Threads: push() from any thread; drain() from one thread (the owner).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

namespace fasthprof {

struct OwnerQueueOptions {
  size_t capacity = size_t{1} << 16;
  uint32_t stall_limit_ms = 100;
};

struct OwnerQueueStats {
  uint64_t pushed = 0;
  uint64_t waits = 0;    // pushes that found the queue full
  uint64_t forced = 0;   // pushes queued past the capacity because the owner stalled
  uint64_t deepest = 0;  // most events waiting at a drain
};

template <typename Event>
class OwnerQueue {
 public:
  explicit OwnerQueue(const OwnerQueueOptions& options = {}) : options_(options) {}
  OwnerQueue(const OwnerQueue&) = delete;
  OwnerQueue& operator=(const OwnerQueue&) = delete;

  // Queues the event (see the bound above) and returns its sequence number, from 1; an Event with
  // a `sequence` member gets it there too. Any thread.
  uint64_t push(Event event) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (pending_.size() >= options_.capacity) {
      ++stats_.waits;
      const auto stall = std::chrono::milliseconds(options_.stall_limit_ms);
      for (;;) {
        uint64_t seen = drains_;
        // Wakes when a drain completes; gives up waiting when none did for the stall limit.
        if (!room_.wait_for(lock, stall, [&] { return drains_ != seen; })) {
          if (pending_.size() >= options_.capacity) ++stats_.forced;
          break;
        }
        if (pending_.size() < options_.capacity) break;
      }
    }
    const uint64_t sequence = next_sequence_++;
    if constexpr (requires { event.sequence = sequence; }) event.sequence = sequence;
    ++stats_.pushed;
    pending_.push_back(std::move(event));
    return sequence;
  }

  // Hands every event queued so far to fn(Event&) in push order; returns how many. Events pushed
  // meanwhile wait for the next call. The owner only.
  template <typename Fn>
  size_t drain(Fn&& fn) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      taken_.swap(pending_);
      if (taken_.size() > stats_.deepest) stats_.deepest = taken_.size();
    }
    size_t count = taken_.size();
    for (Event& event : taken_) fn(event);
    taken_.clear();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++drains_;
    }
    room_.notify_all();
    return count;
  }

  size_t size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return pending_.size();
  }

  OwnerQueueStats stats() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }

 private:
  OwnerQueueOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable room_;
  std::vector<Event> pending_;  // guarded by mutex_
  std::vector<Event> taken_;    // the owner's
  uint64_t next_sequence_ = 1;  // guarded by mutex_
  uint64_t drains_ = 0;         // guarded by mutex_
  OwnerQueueStats stats_;       // guarded by mutex_
};

}  // namespace fasthprof
