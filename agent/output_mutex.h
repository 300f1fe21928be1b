// The mutex that serializes all output (the writer, the class and thread trackers, the sink),
// knowing which thread holds it. A report that runs Java code while holding it (a class gets
// prepared on the reporting thread itself) must not make that thread's own ClassPrepare callback
// wait for it: held_by_this_thread() lets the callback see that it already has the lock.
#pragma once

#include <atomic>
#include <mutex>
#include <thread>

namespace fasthprof {

class OutputMutex {
 public:
  void lock() {
    mutex_.lock();
    owner_.store(std::this_thread::get_id(), std::memory_order_relaxed);
  }
  bool try_lock() {
    if (!mutex_.try_lock()) return false;
    owner_.store(std::this_thread::get_id(), std::memory_order_relaxed);
    return true;
  }
  void unlock() {
    owner_.store(std::thread::id(), std::memory_order_relaxed);
    mutex_.unlock();
  }
  // True only on the thread that holds the lock (only that thread ever stores its own ID).
  bool held_by_this_thread() const {
    return owner_.load(std::memory_order_relaxed) == std::this_thread::get_id();
  }

 private:
  std::mutex mutex_;
  std::atomic<std::thread::id> owner_{};
};

}  // namespace fasthprof
