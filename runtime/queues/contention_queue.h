// monitor=y: the queue between the MonitorContendedEnter/Entered callbacks and the profile's owner
// (docs/ARCHITECTURE.md).
//
//   callback thread --push()--> [ one bounded FIFO ] --drain()--> owner: interns the trace, adds
//                                                                  the time (monitor_time_table.h)
//
// A contention event is rare next to an allocation (the thread has just blocked for a lock, which
// cost it a park and an unpark at least), so the one bounded FIFO of owner_queue.h is all it
// needs. WAIT/WAITED lines do not come this way: they go through the LifecycleQueue so that they
// keep their place among THREAD START/END.
//
// Threads: push() from any thread, drain() from one (the owner).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/stack_frame.h"
#include "queues/owner_queue.h"

namespace fasthprof {

// A contended monitor enter. A known thread queues two: kEnter when it is about to block (with the
// stack and the class: taken there, the work overlaps the wait instead of lengthening the time the
// thread then holds the lock) and kEntered once it got the monitor; the owner pairs them per
// thread (one FIFO keeps each thread's two in order). A thread the agent does not know (a virtual
// thread, which may come back on another carrier) queues one kComplete at the end.
struct ContentionEvent {
  enum class Kind : uint8_t { kComplete, kEnter, kEntered };
  Kind kind = Kind::kComplete;
  uint64_t thread_object_id = 0;  // the thread's tag (0: a thread the agent does not know)
  uint64_t at_ns = 0;             // kEnter, kEntered: when (monotonic)
  uint64_t waited_ns = 0;         // kComplete: from MonitorContendedEnter to MonitorContendedEntered
  std::string signature;          // kEnter, kComplete: the monitor object's class, JVM form ("Ljava/lang/Object;")
  std::vector<StackFrame> frames;  // kEnter, kComplete: the stack at the enter, top first, cut to depth=
};

// Bounded like the LifecycleQueue (owner_queue.h): a report may run Java code that needs a lock
// the waiting thread holds.
using ContentionQueueOptions = OwnerQueueOptions;
using ContentionQueueStats = OwnerQueueStats;
using ContentionQueue = OwnerQueue<ContentionEvent>;

}  // namespace fasthprof
