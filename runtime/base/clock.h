// The agent's one place that reads clocks: monotonic time (intervals, ages, durations), wall time
// (report headers, the HPROF header's timestamp) and the calling thread's CPU time. Inline and
// allocation free; clock_gettime is async-signal-safe, so a signal handler may call these too.
//
// Logic that decides by age or schedule (runtime/sections/cpu_counting.h) takes a `const Clock&` instead,
// so that a unit test can hand it a ManualClock and move time by hand; the agent hands it
// system_clock(). Any thread.
#pragma once

#include <time.h>

#include <cstdint>

namespace fasthprof {

namespace clock_detail {
inline uint64_t read_ns(clockid_t id) {
  timespec now{};
  clock_gettime(id, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1000000000u + static_cast<uint64_t>(now.tv_nsec);
}
}  // namespace clock_detail

inline uint64_t monotonic_ns() { return clock_detail::read_ns(CLOCK_MONOTONIC); }
inline uint64_t monotonic_ms() { return monotonic_ns() / 1000000u; }
inline uint64_t wall_ns() { return clock_detail::read_ns(CLOCK_REALTIME); }
inline uint64_t wall_ms() { return wall_ns() / 1000000u; }
// Seconds of monotonic time since `started_ns` (a monotonic_ns() reading), for durations printed.
inline double seconds_since(uint64_t started_ns) { return static_cast<double>(monotonic_ns() - started_ns) / 1e9; }
// CPU time the calling thread has used.
inline uint64_t thread_cpu_ns() { return clock_detail::read_ns(CLOCK_THREAD_CPUTIME_ID); }

// The injectable view of the two clocks above.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual uint64_t monotonic_ns() const = 0;
  virtual uint64_t wall_ns() const = 0;
  uint64_t monotonic_ms() const { return monotonic_ns() / 1000000u; }
  uint64_t wall_ms() const { return wall_ns() / 1000000u; }
};

// The real clocks. Static storage; any thread.
const Clock& system_clock();

// A clock that moves only when told: for tests. Not thread safe.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(uint64_t monotonic_ns = 0, uint64_t wall_ns = 0)
      : monotonic_ns_(monotonic_ns), wall_ns_(wall_ns) {}
  uint64_t monotonic_ns() const override { return monotonic_ns_; }
  uint64_t wall_ns() const override { return wall_ns_; }
  void advance_ns(uint64_t ns) {
    monotonic_ns_ += ns;
    wall_ns_ += ns;
  }
  void advance_ms(uint64_t ms) { advance_ns(ms * 1000000u); }

 private:
  uint64_t monotonic_ns_;
  uint64_t wall_ns_;
};

}  // namespace fasthprof
