#include "lifecycle_queue.h"

namespace fasthprof {

uint64_t LifecycleQueue::push(LifecycleEvent event) {
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
  event.sequence = next_sequence_++;
  ++stats_.pushed;
  pending_.push_back(std::move(event));
  return pending_.back().sequence;
}

size_t LifecycleQueue::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return pending_.size();
}

LifecycleQueueStats LifecycleQueue::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace fasthprof
