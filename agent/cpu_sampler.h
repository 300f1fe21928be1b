// cpu=samples (docs/compatibility.md §4.7, docs/decisions.md "cpu=samples"): every `interval` ms a round
// counts each Java thread that is using the CPU: RUNNABLE, neither suspended nor interrupted, and
// whose CPU time advanced since the previous round. Threads in wait/sleep/park or blocked on a
// monitor are never counted, nor the agent's own threads ("fasthprof ..."). Each count goes to the
// trace of the thread's stack; the report writes CPU SAMPLES and restarts the counts.
//
// Mechanism (measured, see bench/README.md "cpu=samples"). Counting needs no stack: state and CPU
// time of each thread stop nothing, so "fasthprof cpu sampler" keeps the rounds at the interval and
// the stacks are taken apart from the count:
//
//   "signal" (default where the VM exports AsyncGetCallTrace, JDK 17 and 25 do): the round sends
//       each thread that ran a queued SIGPROF right after reading its state (so that it has no
//       time to fall asleep first); the thread's handler walks its own stack with AsyncGetCallTrace
//       into a preallocated slot (signal_stacks.h) when the thread next runs, so nothing waits for
//       a descheduled thread and nothing stops. "fasthprof cpu stacks" collects the slots and
//       interns their traces. Needs the thread's native id (captured by ThreadStart on the thread,
//       and for the VMInit thread) and jmethodIDs made ahead (GetClassMethods at start and at each
//       ClassPrepare, ClassLoad enabled); CompiledMethodLoad is enabled so that compiled code has
//       debug information at every pc. Threads without a known native id (those that existed
//       before an attach) and walks that fail take the deferred path below.
//   "deferred" (the fallback): the round records pending counts; the stacks thread takes one stack
//       request (a handshake with that thread alone) per pending thread, which waits until the
//       thread runs, and adds its pending count to the trace of that stack.
//
// A thread that waits for the CPU does not move, so the stack taken when it next runs is the stack it
// was counted in. Counts whose stack cannot be taken (the thread stopped running or ended first) go
// to the thread's previous trace if it was taken in the last 10 intervals (or at any age when the
// thread has ended), otherwise they are dropped (and counted as lost). A heap dump (pause()) and VM
// death cancel the signals not yet answered and wait for walks in progress: no walk runs while the
// heap is walked or after VMDeath. The variants that take the stacks inside the round stay for the
// benchmark's comparison: FASTHPROF_CPU_SAMPLER=signal (default) | deferred | each | list | all
// (all = the original's one call over every thread, a global safepoint per round) | count (no
// stacks at all: the benchmark's measure of what the rule makes due).
#pragma once

#include <jvmti.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "cpu_sample_table.h"
#include "feature.h"
#include "signal_stacks.h"

namespace fasthprof {

class CpuSampler final : public Feature {
 public:
  enum class Mode {
    kSignal,        // the round signals each thread that ran; its handler walks its own stack
    kDeferred,      // the round counts, the stack thread takes stacks per thread afterwards
    kEachThread,    // in the round: a stack request per thread that ran
    kListOfActive,  // in the round: one GetThreadListStackTraces over the threads that ran
    kAllThreads,    // in the round: one GetThreadListStackTraces over every thread (the original)
    kCountOnly,     // the benchmark's baseline: rounds count, no stack is taken, nothing recorded
  };

  explicit CpuSampler(const AgentContext& context);

  const char* dump_message() const override { return " CPU usage by sampling running threads ..."; }
  void add_capabilities(jvmtiCapabilities* wanted) override;
  void wanted_events(FeatureEvents* events) override;
  void on_thread_start(JNIEnv* jni, jthread thread) override;
  void on_thread_end(JNIEnv* jni, jthread thread) override;
  void on_class_prepare(JNIEnv* jni, jclass klass) override;
  size_t drain(JNIEnv* jni) override;
  void start(JNIEnv* jni) override;
  void write_report(ReportContext& report) override;
  void stop(JNIEnv* jni) override;

  // The hook for a heap dump: after pause() returns no round and no stack request is running, and
  // none starts until the matching resume(). Pauses nest. Any thread but the sampler's own two
  // (the writer thread, in reports).
  void pause();
  void resume();
  void settle_background() override;
  void pause_background() override { pause(); }
  void resume_background() override { resume(); }

 private:
  struct ThreadEntry {
    jlong last_cpu_ns = 0;
    uint64_t seen_round = 0;
    uint32_t serial = 0;  // 0 until the thread tracker knows it
    bool agent = false;
    pid_t tid = 0;                  // native id, 0 while unknown
    uint64_t tids_version = 0;      // tids_version_ when tid was last looked for
    SignalStacks::Ticket ticket;    // the signal mode's request for this thread's stack
    uint64_t ticket_round = 0;      // the round that requested it
    uint64_t first_round = 0;       // the round that first saw the thread
    uint64_t carried = 0;           // counts kept while the native id is about to be known
    int stat_fd = -1;               // /proc/self/task/<tid>/stat, kept open (waiting_for_cpu)
  };
  struct Candidate {
    jthread thread;
    jlong tag;
    ThreadEntry* entry;
  };
  struct Pending {
    jobject thread = nullptr;  // global reference, owned by the pending entry
    uint64_t count = 0;
  };
  struct Counted {
    jlong tag;
    size_t first_frame;
    size_t frame_count;
    uint64_t count;
    bool repeat = false;  // the thread's last stack again: its own could not be taken
  };

  static void JNICALL sampler_main(jvmtiEnv* jvmti, JNIEnv* jni, void* arg);
  static void JNICALL stacks_main(jvmtiEnv* jvmti, JNIEnv* jni, void* arg);
  // Runs body behind the entry guard (entry_guard.h): if it throws, sampling stops for the rest
  // of the run (failed_) and the reports keep the samples counted so far.
  template <typename Body>
  void guarded(const char* where, Body&& body);
  void run_rounds(JNIEnv* jni);
  void run_stacks(JNIEnv* jni);
  void sample_round(JNIEnv* jni);
  bool start_signal_mode(JNIEnv* jni, std::string* why);
  void make_method_ids(jclass klass);
  void remember_tid(jthread thread, pid_t tid);
  pid_t tid_of(jlong tag, ThreadEntry* entry);
  void signal_one(JNIEnv* jni, const Candidate& candidate);
  void stacks_pass(JNIEnv* jni, std::unordered_map<jlong, Pending>& batch);
  void harvest_signal_stacks();
  void charge_elsewhere(jlong tag, uint64_t count, bool ended);
  void take_pending_stacks(JNIEnv* jni, std::unordered_map<jlong, Pending>& batch);
  ThreadEntry* entry_for(JNIEnv* jni, jthread thread, jlong tag);
  bool ran_since_last_round(jthread thread, ThreadEntry* entry);
  // Whether the OS has the thread in its run queue or on a CPU ('R'): a busy thread that waited
  // for a core through the whole interval. False when its native id is unknown.
  bool waiting_for_cpu(jlong tag, ThreadEntry* entry);
  static void close_stat(ThreadEntry& entry);
  void collect_each(const std::vector<Candidate>& active);
  void collect_list(const std::vector<Candidate>& threads, bool test_cpu);
  void add_frames(jlong tag, const jvmtiFrameInfo* frames, jint count, uint64_t hits);
  void record_counted();
  void print_stats() const;

  AgentContext context_;
  jvmtiEnv* jvmti_;
  Mode mode_ = Mode::kSignal;

  // The signal mode.
  bool track_tids_ = false;            // native ids of threads (ThreadStart/ThreadEnd hooks)
  std::atomic<bool> make_ids_{false};  // GetClassMethods at ClassPrepare
  bool compiled_events_ = false;       // CompiledMethodLoad enabled (precise compiled frames)
  SignalStacks* signal_ = nullptr;
  std::mutex tids_mutex_;
  std::unordered_map<jlong, pid_t> tids_;  // thread tag -> native id, guarded by tids_mutex_
  std::atomic<uint64_t> tids_version_{1};
  std::vector<uint64_t> slot_counts_;      // counts per signal slot, guarded by lock_
  std::vector<jobject> slot_threads_;      // global reference to each slot's thread, guarded by lock_
  struct Harvested {
    jlong tag;
    uint64_t count;
    jint num_frames;
    size_t first;    // into harvested_frames_
    jobject thread;  // global reference, owned
  };
  std::vector<Harvested> harvested_;             // the stacks thread's
  std::vector<AsyncFrame> harvested_frames_;
  bool use_cpu_time_ = false;
  bool print_stats_ = false;
  jint depth_ = 0;

  CpuSampleTable table_;  // the writer thread's (drain(), write_report())

  jrawMonitorID lock_ = nullptr;  // guards everything down to pending_
  int threads_running_ = 0;
  bool stop_requested_ = false;
  std::atomic<bool> failed_{false};  // a guarded part threw: the threads stop, nothing is sampled
  bool in_round_ = false;
  bool taking_stacks_ = false;
  bool signal_work_ = false;  // signals went out since the stacks thread last looked
  int pauses_ = 0;
  std::unordered_map<jlong, Pending> pending_;  // by thread tag

  // The sampler thread's own state, reused from round to round.
  std::unordered_map<jlong, ThreadEntry> entries_;
  uint64_t round_ = 0;
  std::vector<Candidate> candidates_;
  std::vector<Candidate> active_;

  // Stacks waiting to be interned (the stack thread's, or the sampler's in the in-round variants).
  std::vector<StackFrame> frames_;
  std::vector<Counted> counted_;
  // The deferred variant: the stack last taken for each thread, for counts whose thread has stopped
  // running (or ended) by the time its stack is asked for.
  struct LastStack {
    std::vector<StackFrame> frames;
    uint64_t taken_ns = 0;  // monotonic time the stack was taken
  };
  bool recent(const LastStack& last, uint64_t now_ns) const;
  std::unordered_map<jlong, LastStack> last_stacks_;

  // Counted stacks handed to the writer thread (drain()): the stacks thread appends, the writer
  // swaps them out; ready_mutex_ is held for nothing else.
  std::mutex ready_mutex_;
  std::vector<StackFrame> ready_frames_;  // guarded by ready_mutex_
  std::vector<Counted> ready_counted_;    // guarded by ready_mutex_
  std::vector<StackFrame> taken_frames_;  // the writer's
  std::vector<Counted> taken_counted_;    // the writer's

  // Figures for the benchmark (FASTHPROF_CPU_SAMPLER_STATS=1).
  uint64_t started_ns_ = 0;
  uint64_t round_ns_total_ = 0;
  uint64_t round_ns_max_ = 0;
  uint64_t counted_in_rounds_ = 0;
  uint64_t samples_ = 0;        // counts that reached the table
  uint64_t lost_samples_ = 0;   // counted, but the thread had stopped running or ended by its stack
  uint64_t unfetched_samples_ = 0;  // still waiting for their stack at VM death
  uint64_t stack_passes_ = 0;
  uint64_t stack_ns_total_ = 0;
  size_t threads_max_ = 0;
  uint64_t signals_sent_ = 0;
  uint64_t walks_ok_ = 0;
  uint64_t walks_failed_ = 0;     // AsyncGetCallTrace gave no frames (or was cancelled)
  uint64_t walk_codes_[12] = {};  // by AsyncGetCallTrace's code 0..-10, [11] = ours
  uint64_t without_tid_ = 0;      // counts sent the deferred way for want of a native id
  uint64_t stopped_before_signal_ = 0;  // no longer running when its signal was due
  uint64_t walks_retried_ = 0;          // failed walks whose stack a per-thread request took
  std::atomic<uint64_t> agent_cpu_ns_{0};  // CPU time of the sampler's two threads, at their end
};

}  // namespace fasthprof
