#include "base/clock.h"

namespace fasthprof {
namespace {

class SystemClock final : public Clock {
 public:
  uint64_t monotonic_ns() const override { return fasthprof::monotonic_ns(); }
  uint64_t wall_ns() const override { return fasthprof::wall_ns(); }
};

}  // namespace

const Clock& system_clock() {
  static const SystemClock clock;
  return clock;
}

}  // namespace fasthprof
