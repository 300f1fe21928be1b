// The events that announce threads and classes (ThreadStart, ThreadEnd, ClassPrepare, on any Java
// thread) and monitor=y's WAIT/WAITED, on their way to the writer thread, which alone registers them
// and writes their records (docs/ARCHITECTURE.md). They travel one bounded, sequence-numbered FIFO
// (owner_queue.h): the sequence is the order across threads that the file keeps.
#pragma once

#include <cstdint>
#include <string>

#include "queues/owner_queue.h"

namespace fasthprof {

struct LifecycleEvent {
  // kMonitorWait/kMonitorWaited (monitor=y): the WAIT:/WAITED: lines, queued here so that they
  // keep their place among THREAD START/END in the file.
  enum class Kind : uint8_t { kThreadStart, kThreadEnd, kClassPrepare, kMonitorWait, kMonitorWaited };
  Kind kind = Kind::kThreadStart;
  uint64_t sequence = 0;   // set by push(): the order across threads, from 1
  uint64_t object_id = 0;  // kThreadStart/kThreadEnd/kMonitor*: the ID the thread object was tagged with
  int64_t value = 0;       // kMonitorWait: the timeout (ms); kMonitorWaited: the time waited (ms)
  void* handle = nullptr;  // the agent's reference to the thread or class (released by the writer)
  std::string text;        // kThreadStart: "name\0group\0parent group"; kMonitor*: the class signature
};

using LifecycleQueueOptions = OwnerQueueOptions;
using LifecycleQueueStats = OwnerQueueStats;
using LifecycleQueue = OwnerQueue<LifecycleEvent>;

}  // namespace fasthprof
