// The gate's planted regression (bench/README.md "The regression gate"): with the Meson option
// planted_alloc_regression=N (default 0, which compiles to nothing), every allocation event the
// recorder takes runs N extra dependent multiply-rotate steps, so that the allocation path does
// measurably more work per event. Only the gate's proof builds it; no release build sets it.
#pragma once

#include <cstdint>

#ifndef FASTHPROF_PLANTED_ALLOC_WORK
#define FASTHPROF_PLANTED_ALLOC_WORK 0
#endif

namespace fasthprof {

// Each step depends on the one before (a multiply's latency plus a rotate), so the cost grows with
// N and the compiler can neither vectorise nor fold it; the empty asm keeps the result alive.
inline void planted_alloc_work(uint64_t key) {
  if constexpr (FASTHPROF_PLANTED_ALLOC_WORK > 0) {
    uint64_t x = key | 1;
    for (int i = 0; i < FASTHPROF_PLANTED_ALLOC_WORK; ++i) {
      x *= 0x9e3779b97f4a7c15ULL;
      x = (x << 31) | (x >> 33);
      x ^= static_cast<uint64_t>(i);
    }
    asm volatile("" : : "r"(x));
  } else {
    (void)key;
  }
}

}  // namespace fasthprof
