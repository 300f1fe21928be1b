#include "sections/cpu_thread_map.h"

namespace fasthprof {

CpuThreadMap::CpuThreadMap(const Clock& clock, uint64_t interval_ns)
    : clock_(clock), interval_ns_(interval_ns == 0 ? 1 : interval_ns) {}

void CpuThreadMap::set_native_id(int64_t tag, pid_t tid) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (tid != 0) {
    threads_[tag].tid = tid;
    version_.fetch_add(1, std::memory_order_acq_rel);
    return;
  }
  // An ended thread is kept only for its last trace (charge_uncounted at any age), until prune().
  auto found = threads_.find(tag);
  if (found == threads_.end()) return;
  if (found->second.trace == 0) {
    threads_.erase(found);
  } else {
    found->second.tid = 0;
  }
}

pid_t CpuThreadMap::native_id(int64_t tag) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = threads_.find(tag);
  return found == threads_.end() ? 0 : found->second.tid;
}

void CpuThreadMap::stack_taken(int64_t tag, uint32_t trace) {
  uint64_t now = clock_.monotonic_ns();
  std::lock_guard<std::mutex> lock(mutex_);
  Known& known = threads_[tag];
  known.trace = trace;
  known.taken_ns = now;
}

bool CpuThreadMap::recent(const Known& known, uint64_t now_ns) const {
  return known.trace != 0 && now_ns - known.taken_ns <= kRecentIntervals * interval_ns_;
}

uint32_t CpuThreadMap::charge_uncounted(int64_t tag, uint64_t count, bool ended) {
  uint64_t now = clock_.monotonic_ns();
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = threads_.find(tag);
  if (found != threads_.end() && found->second.trace != 0 && (ended || recent(found->second, now))) {
    return found->second.trace;
  }
  lost_ += count;
  return 0;
}

uint64_t CpuThreadMap::lost() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return lost_;
}

void CpuThreadMap::prune() {
  uint64_t now = clock_.monotonic_ns();
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = threads_.begin(); it != threads_.end();) {
    it = it->second.tid == 0 && !recent(it->second, now) ? threads_.erase(it) : std::next(it);
  }
}

size_t CpuThreadMap::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return threads_.size();
}

}  // namespace fasthprof
