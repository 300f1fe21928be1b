// cpu=samples (docs/compatibility.md §4.7, docs/decisions.md "cpu=samples"): every `interval` ms a round
// counts each Java thread that is using the CPU: RUNNABLE, neither suspended nor interrupted, and
// whose CPU time advanced since the previous round (the rule itself, without the VM, is
// runtime/sections/cpu_counting.h). Threads in wait/sleep/park or blocked on a monitor are never counted,
// nor the agent's own threads ("fasthprof ..."). Each count goes to the trace of the thread's
// stack; the report writes CPU SAMPLES and restarts the counts.
//
// Mechanism (measured, see docs/cpu.md "How the stacks are taken"). Counting needs no stack: state and CPU
// time of each thread stop nothing, so "fasthprof cpu sampler" keeps the rounds at the interval and
// the stacks are taken apart from the count, one of two ways (the debug option
// cpustacks=signal|deferred chooses; signal is the default):
//
//   "signal" (where the VM exports AsyncGetCallTrace, JDK 17 and 25 do): the round sends each
//       thread that ran a queued SIGPROF right after reading its state (so that it has no time to
//       fall asleep first); the thread's handler walks its own stack with AsyncGetCallTrace into a
//       preallocated slot (signal_stacks.h) when the thread next runs, so nothing waits for a
//       descheduled thread and nothing stops. "fasthprof cpu stacks" collects the slots. Needs the
//       thread's native id (captured by ThreadStart on the thread, and for the VMInit thread) and
//       jmethodIDs made ahead (GetClassMethods at start and at each ClassPrepare, ClassLoad
//       enabled); CompiledMethodLoad is enabled so that compiled code has debug information at
//       every pc. Threads without a known native id (those that existed before an attach) and
//       walks that fail take the deferred path below.
//   "deferred" (the fallback): the round records pending counts; the stacks thread takes one stack
//       request (a handshake with that thread alone) per pending thread, which waits until the
//       thread runs, and adds its pending count to the trace of that stack.
//
// A thread that waits for the CPU does not move, so the stack taken when it next runs is the stack it
// was counted in. Counts whose stack cannot be taken go where runtime/sections/cpu_thread_map.h says. A heap
// dump (pause()) and VM death cancel the signals not yet answered and wait for walks in progress:
// no walk runs while the heap is walked or after VMDeath.
//
// The class is split by concern over these files (each says which thread runs it):
//   cpu_sampler.cpp        lifecycle (start, stop, pause), the rounds and the counting, the figures
//   cpu_sampler_hooks.cpp  the VM events the sampler needs (hooks of the profiler's callback table)
//   cpu_signal_path.cpp    the signal path: requests, signals, harvest of the walked slots
//   cpu_deferred_path.cpp  the stacks thread: per-thread stack requests, counts whose stack could
//                          not be taken, and the counted stacks handed to drain_counted()
#pragma once

#include <jvmti.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "cpu/signal_stacks.h"
#include "entry_guard.h"
#include "feature.h"
#include "sections/cpu_counting.h"
#include "sections/cpu_sample_table.h"
#include "sections/cpu_thread_map.h"

namespace fasthprof {

class CpuSampler final : public Feature {
 public:
  explicit CpuSampler(const AgentContext& context);

  const char* dump_message() const override { return " CPU usage by sampling running threads ..."; }
  void served_commands(FeatureCommands* commands) override {
    commands->cpu_samples = commands->sampling_control = commands->clear_cpu = true;
  }
  void add_capabilities(jvmtiCapabilities* wanted) override;
  void wanted_events(FeatureEvents* events) override;
  void on_thread_start(JNIEnv* jni, jthread thread) override;
  void on_thread_end(JNIEnv* jni, jthread thread) override;
  void on_class_prepare(JNIEnv* jni, jclass klass) override;
  size_t drain(JNIEnv* jni) override { return drain_counted(jni); }
  void start(JNIEnv* jni) override;
  void write_report(ReportContext& report) override;
  // net= CONTROL: sampling on/off for every thread or one (by its object ID, the thread's tag),
  // clear CPU costs.
  bool control(JNIEnv* jni, const NetCommand& command, std::string* refusal) override;
  void stop(JNIEnv* jni) override;

  // The hook for a heap dump: after pause() returns no round and no stack request is running, and
  // none starts until the matching resume(). Pauses nest. Any thread but the sampler's own two
  // (the writer thread, in reports).
  void pause();
  void resume();
  void settle_background() override;
  void pause_background() override { pause(); }
  void resume_background() override { resume(); }

  // Interns the traces of the stacks counted so far (taken from the buffer the stacks thread fills
  // under counted_mutex_, which is never held across anything else) and adds their counts to the
  // CPU SAMPLES table; returns how many stacks. The writer thread (drain()). Allocates.
  size_t drain_counted(JNIEnv* jni);

 private:
  enum class Mode {
    kSignal,    // the round signals each thread that ran; its handler walks its own stack
    kDeferred,  // the round counts, the stacks thread takes stacks per thread afterwards
  };
  // The sampler thread's view of one thread from round to round (unlocked: that thread alone uses
  // it). What the other threads know of it is in threads_ (CpuThreadMap).
  struct RoundState {
    int64_t last_cpu_ns = 0;
    uint64_t seen_round = 0;
    bool agent = false;
    pid_t tid = 0;                  // native id, 0 while unknown (cached from threads_)
    uint64_t tids_version = 0;      // threads_.native_ids_version() when tid was last looked for
    SignalStacks::Ticket ticket;    // the signal path's request for this thread's stack
    uint64_t ticket_round = 0;      // the round that requested it
    uint64_t first_round = 0;       // the round that first saw the thread
    uint64_t carried = 0;           // counts kept while the native id is about to be known
    int stat_fd = -1;               // /proc/self/task/<tid>/stat, kept open (waiting_for_cpu)
  };
  struct Candidate {
    jthread thread;
    jlong tag;
    RoundState* state;
  };
  struct Counted {  // one stack counted, its frames in CountedStacks::frames
    jlong tag;
    size_t first_frame;
    size_t frame_count;
    uint64_t count;
  };
  // What the stacks thread hands to drain_counted().
  struct CountedStacks {
    std::vector<StackFrame> frames;
    std::vector<Counted> stacks;
    std::vector<std::pair<uint32_t, uint64_t>> direct;  // (trace, count): no stack needed
    bool empty() const { return stacks.empty() && direct.empty(); }
    void clear() {
      frames.clear();
      stacks.clear();
      direct.clear();
    }
  };
  struct Harvested {  // a walked signal slot, copied out
    jlong tag;
    uint64_t count;
    jint num_frames;
    size_t first;    // into harvested_frames_
    jobject thread;  // global reference, owned
  };

  // cpu_sampler_hooks.cpp.
  void make_method_ids(jclass klass);
  void remember_tid(jthread thread, pid_t tid);

  // Runs body behind the entry guard (entry_guard.h): if it throws, sampling stops for the rest
  // of the run (failed_) and the reports keep the samples counted so far.
  template <typename Body>
  void guarded(const char* where, Body&& body) {
    guard_entry(where, "cpu=samples stops; reports keep the samples counted so far", std::forward<Body>(body),
                [this] { failed_.store(true); });
  }

  // cpu_sampler.cpp: the rounds (sampler thread).
  static void JNICALL sampler_main(jvmtiEnv* jvmti, JNIEnv* jni, void* arg);
  void run_rounds(JNIEnv* jni);
  void sample_round(JNIEnv* jni);
  void prune_round_states();
  RoundState* state_for(JNIEnv* jni, jthread thread, jlong tag);
  pid_t tid_of(jlong tag, RoundState* state);
  bool ran_since_last_round(jthread thread, RoundState* state);
  // Whether the OS has the thread in its run queue or on a CPU ('R'): a busy thread that waited
  // for a core through the whole interval. False when its native id is unknown.
  bool waiting_for_cpu(jlong tag, RoundState* state);
  static void close_stat(RoundState& state);
  void print_stats() const;

  // cpu_signal_path.cpp.
  bool start_signal_mode(JNIEnv* jni, std::string* why);
  void signal_one(JNIEnv* jni, const Candidate& candidate);  // sampler thread
  void harvest_signal_stacks();                               // lock_ held
  void count_harvested(JNIEnv* jni, PendingCounts& retries);  // stacks thread

  // cpu_deferred_path.cpp (the stacks thread, or pause()).
  static void JNICALL stacks_main(jvmtiEnv* jvmti, JNIEnv* jni, void* arg);
  void run_stacks(JNIEnv* jni);
  void stacks_pass(JNIEnv* jni, PendingCounts& batch);
  void take_pending_stacks(JNIEnv* jni, PendingCounts& batch);
  void charge_uncounted(jlong tag, uint64_t count, bool ended);
  void add_frames(jlong tag, const jvmtiFrameInfo* frames, jint count, uint64_t hits);
  void publish_counted();

  AgentContext context_;
  jvmtiEnv* jvmti_;
  Mode mode_ = Mode::kSignal;
  bool use_cpu_time_ = false;
  jint depth_ = 0;

  // The one place that knows each thread: native id, last trace (its own lock).
  CpuThreadMap threads_;

  // The hooks' state (cpu_sampler_hooks.cpp).
  bool track_tids_ = false;            // native ids at ThreadStart/ThreadEnd
  std::atomic<bool> make_ids_{false};  // GetClassMethods at ClassPrepare

  // The signal path.
  bool compiled_events_ = false;  // CompiledMethodLoad enabled (precise compiled frames)
  SignalStacks* signal_ = nullptr;
  std::vector<uint64_t> slot_counts_;  // counts per signal slot, guarded by lock_
  std::vector<jobject> slot_threads_;  // global reference to each slot's thread, guarded by lock_
  std::vector<Harvested> harvested_;   // guarded by lock_ while filled, then the stacks thread's
  std::vector<AsyncFrame> harvested_frames_;

  CpuSampleTable table_;  // the writer thread's (drain(), write_report())

  jrawMonitorID lock_ = nullptr;  // guards everything down to pending_
  int threads_running_ = 0;
  bool stop_requested_ = false;
  std::atomic<bool> failed_{false};  // a guarded part threw: the threads stop, nothing is sampled
  bool in_round_ = false;
  bool taking_stacks_ = false;
  bool signal_work_ = false;  // signals went out since the stacks thread last looked
  int pauses_ = 0;
  PendingCounts pending_;  // handles are global references to the threads

  // The sampler thread's own state, reused from round to round.
  std::unordered_map<jlong, RoundState> round_states_;
  uint64_t round_ = 0;
  std::vector<Candidate> candidates_;

  // net= sampling on/off (control()): a thread is sampled when sampled_by_default_ differs from
  // its being in sampling_exceptions_ (thread tags). The owner sets them, the sampler reads them
  // once per round; a leaf lock.
  std::mutex sampling_filter_mutex_;
  bool sampled_by_default_ = true;
  std::unordered_set<jlong> sampling_exceptions_;

  // The stacks thread's pass (taking_stacks_ keeps pause() and the stacks thread apart).
  CountedStacks pass_;
  // Counted stacks waiting for drain_counted(); counted_mutex_ guards only this.
  std::mutex counted_mutex_;
  CountedStacks counted_;
  CountedStacks draining_;  // drain_counted()'s (the writer thread)

  // Figures, printed at VM death under verbose=y.
  uint64_t started_ns_ = 0;
  uint64_t round_ns_total_ = 0;
  uint64_t round_ns_max_ = 0;
  uint64_t counted_in_rounds_ = 0;
  uint64_t samples_ = 0;            // counts that reached the table (the writer thread)
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
