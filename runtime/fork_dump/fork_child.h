// The process side of a heap dump by fork: what the child does to keep the service safe, and how
// the parent learns how it ended, without the JVM (the dumper that forks is agent/heap/).
//
//   parent (VM thread, at a safepoint)        child (a copy of the VM thread only)
//   fork() ------------------------------>    prepare_fork_child(): oom_score_adj 1000, a
//   returns at once                            watchdog timer that SIGKILLs it after its limit
//                                              ... writes the dump ...
//   ChildReaper (a plain thread): waitpid      private_memory_bytes(): what the program's
//   -> ChildExit, never inside a safepoint     writes made the kernel copy; _exit()
//
// The child of a multithreaded process may run only async-signal-safe code until it execs or
// exits: another thread may have held the allocator's lock at the fork. So everything the child
// calls here is raw system calls on stack buffers: no allocation, no lock, no stdio.
//
// Threads: prepare_fork_child and private_memory_bytes in the child; ChildReaper from any thread
// of the parent (its own thread waits).
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace fasthprof {

// In the child, first thing after fork(): makes it the process the kernel's OOM killer picks first
// (oom_score_adj 1000, never the service) and arms a timer that kills it (SIGKILL, which no handler
// of the JVM's can catch) after watchdog_ms. False, with *failure naming the step (a static
// string), when either cannot be done: the child should then _exit at once.
bool prepare_fork_child(uint64_t watchdog_ms, const char** failure);

// The memory private to process pid (0: this process), from /proc/<pid>/smaps_rollup:
// Private_Clean + Private_Dirty in bytes, or -1 when it cannot be read. In a forked child, whose
// pages start shared with the parent, it grows by every page either side writes: the copy-on-write
// cost of the child. Async-signal-safe.
int64_t private_memory_bytes(pid_t pid);

// How a child ended.
struct ChildExit {
  bool exited = false;   // by _exit: status is its code
  int status = 0;
  int signal = 0;        // killed by this signal (SIGKILL: the watchdog, the OOM killer or the agent)
  std::string describe() const;  // "exited with status 3", "killed by signal 9 (Killed)"
};

// Waits for one child on a thread of its own, so that no zombie is left and nothing that holds
// the VM waits for it. The destructor kills a child still running and reaps it.
class ChildReaper {
 public:
  explicit ChildReaper(pid_t child);
  ~ChildReaper();
  ChildReaper(const ChildReaper&) = delete;
  ChildReaper& operator=(const ChildReaper&) = delete;

  pid_t pid() const { return child_; }
  // Up to timeout_ms for the child to end; true with *exit once it has.
  bool wait_for(uint64_t timeout_ms, ChildExit* exit);
  // SIGKILL to a child still running (the reaper then reports it).
  void kill();

 private:
  void run();

  const pid_t child_;
  std::mutex mutex_;
  std::condition_variable ended_;
  bool done_ = false;  // guarded by mutex_
  ChildExit exit_;     // guarded by mutex_
  std::thread thread_;
};

}  // namespace fasthprof
