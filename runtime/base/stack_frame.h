// One stack frame as the JVM names it, a plain value that the agent's callbacks, the queues and the
// profile writer pass between them without knowing each other.
//
// Threads: a plain value.
#pragma once

#include <cstdint>

namespace fasthprof {

// A method (jmethodID as a number) and a bytecode location.
struct StackFrame {
  uint64_t method = 0;
  int64_t location = -1;
};

}  // namespace fasthprof
