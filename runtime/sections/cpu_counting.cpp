#include "sections/cpu_counting.h"

namespace fasthprof {

bool counts_as_running(int32_t state) {
  constexpr uint32_t kCounted = kThreadStateAlive | kThreadStateRunnable;
  constexpr uint32_t kExcluded = kThreadStateSuspended | kThreadStateInterrupted;
  auto bits = static_cast<uint32_t>(state);
  return (bits & kCounted) == kCounted && (bits & kExcluded) == 0;
}

bool cpu_time_advanced(int64_t* last_cpu_ns, int64_t now_cpu_ns) {
  bool advanced = now_cpu_ns > *last_cpu_ns;
  *last_cpu_ns = now_cpu_ns;
  return advanced;
}

void* PendingCounts::add_with_handle(int64_t tag, uint64_t count, void* handle) {
  Entry& entry = entries_[tag];
  entry.count += count;
  if (entry.handle == nullptr) {
    entry.handle = handle;
    return nullptr;
  }
  return handle;
}

uint64_t PendingCounts::total() const {
  uint64_t total = 0;
  for (const auto& [tag, entry] : entries_) total += entry.count;
  return total;
}

void PendingCounts::take(PendingCounts* out) {
  out->entries_.clear();
  out->entries_.swap(entries_);
}

}  // namespace fasthprof
