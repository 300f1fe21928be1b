// cpu=samples (original-hprof.md §4.7, DECISIONS.md "cpu=samples"): every `interval` ms a round
// counts each Java thread that is using the CPU: RUNNABLE, neither suspended nor interrupted, and
// whose CPU time advanced since the previous round. Threads in wait/sleep/park or blocked on a
// monitor are never counted, nor the agent's own threads ("fasthprof ..."). Each count goes to the
// trace of the thread's stack; the report writes CPU SAMPLES and restarts the counts.
//
// Mechanism (measured, see bench/README.md "cpu=samples"). Any JVMTI stack request waits until its
// thread reaches a safepoint poll, and a busy thread that the OS has descheduled gets there only
// when it runs again: with more busy threads than CPUs one round of stack requests takes a
// scheduler period, far longer than the interval. So counting and stack taking are split:
//
//   "fasthprof cpu sampler"  every interval: state + CPU time of each thread (stops nothing)
//        |  pending_[thread tag] += 1 for each thread that ran
//        v
//   "fasthprof cpu stacks"   takes pending_, one stack request per thread (a handshake with that
//                            thread alone), adds its pending count to the trace of that stack
//
// A thread that waits for the CPU does not move, so the stack taken when it next runs is the stack it
// was counted in. The rounds keep their rate however long the stack requests take. Counts of a thread
// that has stopped running (or ended) by the time its stack is asked for go to the trace taken for it
// in the previous or current pass; without one they are dropped (and counted as lost). The variants that
// take the stacks inside the round stay for the benchmark's comparison:
// FASTHPROF_CPU_SAMPLER=deferred (default) | each | list | all (all = the original's one call over
// every thread, a global safepoint per round).
#pragma once

#include <jvmti.h>

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "cpu_sample_table.h"
#include "feature.h"

namespace fasthprof {

class CpuSampler final : public Feature {
 public:
  enum class Mode {
    kDeferred,      // the round counts, the stack thread takes stacks per thread afterwards
    kEachThread,    // in the round: a stack request per thread that ran
    kListOfActive,  // in the round: one GetThreadListStackTraces over the threads that ran
    kAllThreads,    // in the round: one GetThreadListStackTraces over every thread (the original)
  };

  explicit CpuSampler(const AgentContext& context);

  const char* dump_message() const override { return " CPU usage by sampling running threads ..."; }
  void add_capabilities(jvmtiCapabilities* wanted) override;
  void start(JNIEnv* jni) override;
  void write_report(ReportContext& report) override;
  void stop(JNIEnv* jni) override;

  // The hook for a heap dump: after pause() returns no round and no stack request is running, and
  // none starts until the matching resume(). Pauses nest. Call WITHOUT the output lock held (the
  // stack thread may be waiting for it). Any thread but the sampler's own two.
  void pause();
  void resume();
  void pause_background() override { pause(); }
  void resume_background() override { resume(); }

 private:
  struct ThreadEntry {
    jlong last_cpu_ns = 0;
    uint64_t seen_round = 0;
    uint32_t serial = 0;  // 0 until the thread tracker knows it
    bool agent = false;
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
  };

  static void JNICALL sampler_main(jvmtiEnv* jvmti, JNIEnv* jni, void* arg);
  static void JNICALL stacks_main(jvmtiEnv* jvmti, JNIEnv* jni, void* arg);
  void run_rounds(JNIEnv* jni);
  void run_stacks(JNIEnv* jni);
  void sample_round(JNIEnv* jni);
  void take_pending_stacks(JNIEnv* jni, std::unordered_map<jlong, Pending>& batch);
  ThreadEntry* entry_for(JNIEnv* jni, jthread thread, jlong tag);
  bool ran_since_last_round(jthread thread, ThreadEntry* entry);
  void collect_each(const std::vector<Candidate>& active);
  void collect_list(const std::vector<Candidate>& threads, bool test_cpu);
  void add_frames(jlong tag, const jvmtiFrameInfo* frames, jint count, uint64_t hits);
  void record_counted();
  void print_stats() const;

  AgentContext context_;
  jvmtiEnv* jvmti_;
  Mode mode_ = Mode::kDeferred;
  bool use_cpu_time_ = false;
  bool print_stats_ = false;
  jint depth_ = 0;

  CpuSampleTable table_;  // guarded by the output mutex

  jrawMonitorID lock_ = nullptr;  // guards everything down to pending_
  int threads_running_ = 0;
  bool stop_requested_ = false;
  bool in_round_ = false;
  bool taking_stacks_ = false;
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
  std::unordered_map<jlong, uint32_t> serials_;  // thread tag -> serial, for record_counted()
  // The deferred variant: the trace last taken for each thread, for counts whose thread has stopped
  // running (or ended) by the time its stack is asked for.
  struct LastTrace {
    uint32_t trace = 0;
    uint64_t pass = 0;
  };
  std::unordered_map<jlong, LastTrace> last_traces_;
  std::vector<std::pair<uint32_t, uint64_t>> direct_counts_;  // (trace, count), no stack needed

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
};

}  // namespace fasthprof
