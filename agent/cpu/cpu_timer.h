// cpu=times and cpu=old (docs/cpu_times.md): exact call counts and times by bytecode injection.
//
// At load it asks the class instrumenter (agent/instrument/class_instrumenter.h) for entry and exit
// calls; at start() it takes the tracker class (java.lang.FasthprofTracker, agent/instrument/tracker/)
// from it, starts the clock ticker and the tracker, after which the Profiler lets the instrumenter
// rewrite every class loaded from then on and retransform those already loaded: the same path at
// VMInit and under jcmd JVMTI.agent_load. The rewriter (runtime/classfile/class_rewriter.h) injects
// enter(id)/exit(id) calls; the IDs name methods in the instrumenter's table (InjectedMethods).
//
// Threads (docs/ARCHITECTURE.md):
//   - the thread loading a class: the instrumenter rewrites it and this feature adds its methods (mutex);
//   - the thread catching an exception: the instrumenter pops the tracker's shadow stack down to
//     the catching frame (ClassInstrumenter::on_exception_catch);
//   - `fasthprof-clock` (a plain pthread): writes the monotonic clock into off-heap memory;
//   - the owner (`fasthprof writer`): drain() and write_report() take the counts from the tracker
//     through one JNI call (collect) and keep them per trace in a CpuTimeTable.
#pragma once

#include <jvmti.h>
#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "feature.h"
#include "instrument/class_instrumenter.h"
#include "registries/frame_registry.h"
#include "sections/cpu_time_table.h"

namespace fasthprof {

// The bytes the tracker's traces may take over every thread: 1/16 of the maximum heap, within
// 4 MiB and 128 MiB (128 MiB when the heap is unbounded or unknown).
jlong trace_budget_bytes(jlong max_heap);
// Runtime.getRuntime().maxMemory(), or 0 when it cannot be asked.
jlong max_heap_bytes(JNIEnv* jni);

class CpuTimer final : public Feature {
 public:
  CpuTimer(const AgentContext& context, ClassInstrumenter* instrumenter);
  ~CpuTimer() override;

  const char* dump_message() const override {
    return context_.options->old_timing ? " CPU usage in old prof format ..." : " CPU usage by timing methods ...";
  }
  // CPU SAMPLES as the original: cpu=times' CPU TIME (ms) section, cpu=old's table.
  void served_commands(FeatureCommands* commands) override { commands->cpu_samples = commands->clear_cpu = true; }

  void add_capabilities(jvmtiCapabilities* wanted) override;
  void wanted_events(FeatureEvents* events) override;
  void start(JNIEnv* jni) override;
  size_t drain(JNIEnv* jni) override;
  void write_report(ReportContext& report) override;
  bool control(JNIEnv* jni, const NetCommand& command, std::string* refusal) override;
  void stop(JNIEnv* jni) override;


 private:
  bool take_tracker(JNIEnv* jni);
  void collect(JNIEnv* jni);
  void check_limits(JNIEnv* jni);
  void take_rows(JNIEnv* jni, jobjectArray result, std::vector<jobject>* ended);
  static void* ticker_main(void* arg);

  AgentContext context_;
  jvmtiEnv* jvmti_;
  ClassInstrumenter* instrumenter_;
  InjectedMethods& methods_;  // the instrumenter's
  CpuTimeTable table_;

  jclass tracker_ = nullptr;  // global reference
  jmethodID start_ = nullptr, stop_ = nullptr, collect_ = nullptr, ignore_ = nullptr, release_ = nullptr;
  bool writer_ignored_ = false;
  uint64_t last_collect_ns_ = 0;

  // The clock: 128 bytes, the ticker's word at +0, the tracker's words from +64 (FasthprofTracker).
  void* clock_memory_ = nullptr;
  jlong budget_bytes_ = 0;  // the traces' budget (trace_budget_bytes)
  bool budget_said_ = false, gave_up_said_ = false;
  pthread_t ticker_{};
  bool ticker_running_ = false;
  std::atomic<bool> ticker_stop_{false};
  // Written by the clock thread, read after it is joined (verbose=y).
  uint64_t held_off_ = 0, held_off_max_ns_ = 0;

  // verbose=y figures (the classes rewritten are the instrumenter's).
  int64_t figures_[4] = {0, 0, 0, 0};  // the tracker's: untracked threads, overflow calls, states, nodes
};

}  // namespace fasthprof
