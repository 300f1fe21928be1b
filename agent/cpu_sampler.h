// cpu=samples (original-hprof.md §4.7, DECISIONS.md "cpu=samples"): an agent thread wakes every
// `interval` ms and counts, against the trace of its stack, each Java thread that is using the CPU:
// RUNNABLE, neither suspended nor interrupted, and whose CPU time advanced since the previous round.
// Threads in wait/sleep/park or blocked on a monitor are never counted, nor the agent's own threads.
// The report writes CPU SAMPLES and restarts the counts.
//
// Mechanism (measured, see bench/README.md "cpu=samples"): per round, one state and CPU-time query
// per thread, which does not stop anything, then a stack request (a handshake with that thread alone)
// only for the threads that ran. The original's one all-threads stack call per round is a global
// safepoint whose cost grows with the busy threads; it is kept, with a third variant, for the
// benchmark's comparison (FASTHPROF_CPU_SAMPLER=each|list|all, default each).
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
    kEachThread,    // CPU times first, then a stack request per thread that ran
    kListOfActive,  // CPU times first, then one GetThreadListStackTraces over the threads that ran
    kAllThreads,    // one GetThreadListStackTraces over every thread (the original's way)
  };

  explicit CpuSampler(const AgentContext& context);

  const char* dump_message() const override { return " CPU usage by sampling running threads ..."; }
  void add_capabilities(jvmtiCapabilities* wanted) override;
  void start(JNIEnv* jni) override;
  void write_report(ReportContext& report) override;
  void stop(JNIEnv* jni) override;

  // The hook for a heap dump: after pause() returns no round is running and none starts until the
  // matching resume(). Pauses nest. Call WITHOUT the output lock held (a round in progress may be
  // waiting for it). Any thread but the sampler's own.
  void pause();
  void resume();

 private:
  struct ThreadEntry {
    jlong last_cpu_ns = 0;
    uint64_t seen_round = 0;
    uint32_t serial = 0;  // 0 until the thread tracker knows it
    bool agent = false;   // "fasthprof ..." threads are never sampled
  };
  struct Candidate {
    jthread thread;
    jlong tag;
    ThreadEntry* entry;
  };
  struct Counted {
    ThreadEntry* entry;
    jlong tag;
    size_t first_frame;
    size_t frame_count;
  };

  static void JNICALL sampler_main(jvmtiEnv* jvmti, JNIEnv* jni, void* arg);
  void run(JNIEnv* jni);
  void sample_round(JNIEnv* jni);
  ThreadEntry* entry_for(JNIEnv* jni, jthread thread, jlong tag);
  bool ran_since_last_round(jthread thread, ThreadEntry* entry);
  void collect_each(const std::vector<Candidate>& active);
  void collect_list(const std::vector<Candidate>& threads, bool test_cpu);
  void add_frames(ThreadEntry* entry, jlong tag, const jvmtiFrameInfo* frames, jint count);
  void record_counted();
  void print_stats() const;

  AgentContext context_;
  jvmtiEnv* jvmti_;
  Mode mode_ = Mode::kEachThread;
  bool use_cpu_time_ = false;
  bool print_stats_ = false;
  jint depth_ = 0;

  CpuSampleTable table_;  // guarded by the output mutex

  jrawMonitorID lock_ = nullptr;  // guards the flags below
  bool running_ = false;
  bool stop_requested_ = false;
  bool in_round_ = false;
  int pauses_ = 0;

  // The sampler thread's own state, reused from round to round.
  std::unordered_map<jlong, ThreadEntry> entries_;
  uint64_t round_ = 0;
  std::vector<Candidate> candidates_;
  std::vector<Candidate> active_;
  std::vector<StackFrame> frames_;
  std::vector<Counted> counted_;

  // Figures for the benchmark (FASTHPROF_CPU_SAMPLER_STATS=1).
  uint64_t started_ns_ = 0;
  uint64_t round_ns_total_ = 0;
  uint64_t round_ns_max_ = 0;
  uint64_t samples_ = 0;
  size_t threads_max_ = 0;
};

}  // namespace fasthprof
