// JVMTI thread-state bits, mirrored here because runtime/ never includes jvmti.h; the values are
// fixed by the JVMTI specification (the agent checks them against jvmti.h). Used by the text
// writer's MONITOR DUMP and by cpu=samples' counting rule.
#pragma once

#include <cstdint>

namespace fasthprof {

inline constexpr uint32_t kThreadStateAlive = 0x0001;
inline constexpr uint32_t kThreadStateTerminated = 0x0002;
inline constexpr uint32_t kThreadStateRunnable = 0x0004;
inline constexpr uint32_t kThreadStateSleeping = 0x0040;
inline constexpr uint32_t kThreadStateWaiting = 0x0080;
inline constexpr uint32_t kThreadStateBlockedOnMonitorEnter = 0x0400;
inline constexpr uint32_t kThreadStateSuspended = 0x100000;
inline constexpr uint32_t kThreadStateInterrupted = 0x200000;
inline constexpr uint32_t kThreadStateInNative = 0x400000;

}  // namespace fasthprof
