#include "contention_queue.h"

namespace fasthprof {

void ContentionQueue::push(ContentionEvent event) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (pending_.size() >= options_.capacity) {
    ++stats_.waits;
    const auto stall = std::chrono::milliseconds(options_.stall_limit_ms);
    for (;;) {
      uint64_t seen = drains_;
      if (!room_.wait_for(lock, stall, [&] { return drains_ != seen; })) {
        if (pending_.size() >= options_.capacity) ++stats_.forced;
        break;
      }
      if (pending_.size() < options_.capacity) break;
    }
  }
  ++stats_.pushed;
  pending_.push_back(std::move(event));
}

ContentionQueueStats ContentionQueue::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace fasthprof
