// The writer thread and its mailbox. One JVMTI agent thread, "fasthprof writer", owns the profile
// (docs/ARCHITECTURE.md "Threads"): round after round it drains the queues, and between rounds it
// takes what other threads posted in its mailbox, in this order:
//
//   Signal Dispatcher --request_report()--+
//   fasthprof commands --queue_command()--+--> [ mailbox: stop | reports | commands ] --> loop:
//   VMDeath thread -----stop_and_wait()---+                                               stop?  final report, end
//                                                                                         report? run it
//                                                                                         command? run it, count it done
//                                                                                         else   one drain round
//
// The mailbox is one raw monitor (lock_), held only to read or change its counters: no work runs
// under it. What the rounds do is the owner's (WriterJobs, implemented by the Profiler).
#pragma once

#include <jvmti.h>

#include <cstdint>
#include <deque>
#include <string>

#include "options/net_command.h"

namespace fasthprof {

// What the writer thread runs, all on itself (the owner).
class WriterJobs {
 public:
  virtual ~WriterJobs() = default;
  // Before each round: e.g. cutting back a report a failed callback left unfinished.
  virtual void before_round() = 0;
  // One drain of every queue; returns how many events it took (a full batch: no wait next round).
  virtual size_t drain(JNIEnv* jni) = 0;
  virtual void report(JNIEnv* jni, bool at_exit) = 0;
  virtual void command(JNIEnv* jni, const NetCommand& command) = 0;
  // The loop itself threw (the jobs guard their own work): profiling stops.
  virtual void loop_failed() = 0;
};

class WriterThread {
 public:
  // A flooding net= peer is held back here (by TCP, once the listener stops reading).
  static constexpr size_t kMaxQueuedCommands = 1024;
  // A drain round that took this many events is followed by the next one at once.
  static constexpr size_t kFullBatch = 4096;

  // Creates the mailbox's monitor; false when JVMTI refuses. At load.
  bool create(jvmtiEnv* jvmti);

  // Starts the thread; round_ms is the wait between idle rounds. False (error set) when it could
  // not start: then nothing is ever run and stop_and_wait() returns false at once.
  bool start(JNIEnv* jni, WriterJobs* jobs, int64_t round_ms, std::string* error);

  // A report (kill -QUIT, DataDumpRequest). Signal Dispatcher; never waits but for the monitor.
  void request_report();

  // A net= command for the writer, after the ones queued before it. Waits while 1024 are queued.
  // False when the writer has ended or is stopping (nothing more is run). Listener thread.
  bool queue_command(const NetCommand& command);

  // Waits until every command queued so far has run. False when the VM is dying meanwhile.
  bool wait_for_queued_commands();

  // VM death: asks the writer to stop (it runs the final report first) and waits until it has
  // ended. Returns whether the writer thread had started at all.
  bool stop_and_wait();

 private:
  static void JNICALL thread_main(jvmtiEnv* jvmti, JNIEnv* jni, void* arg);
  void loop(JNIEnv* jni);

  struct Work {
    enum class Kind { kDrain, kReport, kCommand, kStop } kind = Kind::kDrain;
    NetCommand command;
  };
  // Waits up to round_ms_ unless there is work (or the last round was a full batch).
  Work next_work(bool busy);
  void command_done();

  jvmtiEnv* jvmti_ = nullptr;
  WriterJobs* jobs_ = nullptr;
  int64_t round_ms_ = 10;
  jrawMonitorID lock_ = nullptr;
  int pending_reports_ = 0;                   // guarded by lock_
  bool stop_requested_ = false;               // guarded by lock_
  bool running_ = false;                      // guarded by lock_
  std::deque<NetCommand> pending_commands_;   // guarded by lock_; run after pending reports
  uint64_t commands_queued_ = 0;              // guarded by lock_
  uint64_t commands_done_ = 0;                // guarded by lock_
};

}  // namespace fasthprof
