// A profiling feature (MONITOR, HEAP DUMP, SITES, CPU SAMPLES, CPU TIME) plugged into the agent.
// The Profiler owns the JVMTI wiring (the one callback table, agent/profiler.cpp) and the writer
// thread that owns the profile (docs/ARCHITECTURE.md); a feature says what it needs and does its
// own work through hooks:
//
//   load:    add_capabilities(), wanted_events(), on_load()     (Agent_OnLoad / Agent_OnAttach)
//   live:    start()                                            (VMInit, or at once under attach)
//   events:  on_thread_start() ... on_compiled_method_load()    (on the Java thread of the event)
//   writer:  drain()                                            (the writer thread, between reports)
//   report:  write_report()  in docs/compatibility.md §2.5 order (the writer thread)
//   death:   stop()                                             (VMDeath, after the final report)
#pragma once

#include <jvmti.h>

#include <cstddef>
#include <atomic>
#include <functional>
#include <memory>

#include "options/net_command.h"
#include "options/options.h"
#include "queues/lifecycle_queue.h"
#include "records/profile_writer.h"
#include "sink/async_sink.h"

namespace fasthprof {

class ClassTracker;
class ThreadTracker;

// What every feature may use. The writer, the class tracker's registration side and the sink
// belong to the writer thread: touch them only from drain() and write_report().
struct AgentContext {
  JavaVM* vm = nullptr;
  jvmtiEnv* jvmti = nullptr;
  const Options* options = nullptr;
  ProfileWriter* writer = nullptr;
  AsyncSink* sink = nullptr;
  ClassTracker* classes = nullptr;
  ThreadTracker* threads = nullptr;
  bool attached = false;  // loaded into a running VM (Agent_OnAttach)
  // Owner only: applies every thread and class event queued so far, for a feature that meets a
  // thread or class ID before its event was applied.
  std::function<void(JNIEnv*)> apply_lifecycle;
  // Where a callback queues an event that must keep its place among THREAD START/END in the file
  // (monitor=y's WAIT/WAITED lines). Any thread.
  LifecycleQueue* lifecycle = nullptr;
  // Stack depth: the agent's stack buffers hold depth_capacity frames (depth= at start, more when
  // net= commands may raise it, Profiler::depth_capacity()); *trace_depth is the depth asked for
  // now, read by any thread (a net= CONTROL changes it on the owner).
  int depth_capacity = 0;
  const std::atomic<int>* trace_depth = nullptr;
  int current_depth() const {
    int depth = trace_depth == nullptr ? depth_capacity : trace_depth->load(std::memory_order_relaxed);
    return depth < depth_capacity ? depth : depth_capacity;
  }
};

// Events beyond those every agent gets (thread start/end, class prepare) that a feature handles.
struct FeatureEvents {
  bool class_load = false;            // enabled by the feature itself; the hook may be empty
  bool compiled_method_load = false;  // the same; CompiledMethodUnload goes to the same hooks
  // cpu=times (agent/cpu/cpu_timer.h) alone: ExceptionCatch goes straight to it. (ClassFileLoadHook
  // goes to the class instrumenter, agent/instrument/class_instrumenter.h, which the Profiler owns.)
  bool exception_catch = false;
};

// The net= commands (docs/net.md) a feature serves, declared as its events are: the writer routes
// a command to the first feature in report order that declares it (agent/net_commands.cpp), and
// refuses it, saying which option it needs, when none does.
struct FeatureCommands {
  bool dump_heap = false;         // DUMP HEAP: the feature's section
  bool alloc_sites = false;       // ALLOC SITES, HEAP SUMMARY; CONTROL alloc on/off, reset sites
  bool cpu_samples = false;       // CPU SAMPLES (the first declaring feature's section)
  bool sampling_control = false;  // CONTROL sampling on/off
  bool clear_cpu = false;         // CONTROL clear CPU (every declaring feature)
};

struct ReportContext {
  JNIEnv* jni = nullptr;  // the writer thread's
  bool at_exit = false;   // VM death (doe=y) rather than a DataDumpRequest
  // Hold every feature's background work (CPU sampling) still, and let it go again: a heap dump
  // calls these around the time it keeps the application's threads suspended, which use no CPU
  // then and whose stacks must not be walked meanwhile.
  std::function<void()> pause_background;
  std::function<void()> resume_background;
  // A net= command's report (agent/net_commands.cpp) rather than a whole one: its cutoff (negative:
  // the cutoff= option's) and, for ALLOC SITES, whether to force a GC before the live counts.
  double cutoff = -1;
  bool force_gc = true;
  // ALLOC SITES: the command's flags (kSitesIncremental, kSitesSortedByAllocation, kSitesForceGc),
  // written in the record as the original did; 0 in a report.
  uint16_t sites_flags = 0;
  bool heap_summary_only = false;  // HEAP SUMMARY: the allocation sites' totals record alone (binary)
};

class Feature {
 public:
  virtual ~Feature() = default;

  // The " <what> ..." part of the verbose line, e.g. " allocation sites ...".
  virtual const char* dump_message() const = 0;

  // Capabilities the feature needs; a missing one fails the load with a message naming it.
  virtual void add_capabilities(jvmtiCapabilities* /*wanted*/) {}

  // The events whose hooks below the profiler's callback table must call for this feature.
  virtual void wanted_events(FeatureEvents* /*events*/) {}
  // The net= commands the feature serves (FeatureCommands).
  virtual void served_commands(FeatureCommands* /*commands*/) {}

  // Capabilities granted and the callback table set, still at load time: settings that must
  // precede the VM's threads (the heap sampling interval).
  virtual void on_load() {}

  // The VM is live: enable events, start threads. Called on a Java thread.
  virtual void start(JNIEnv* /*jni*/) {}

  // ---- event hooks: called on the thread of the event, after the profiler's own work (the
  // thread's or class's ID is set by then). They may wait for queue space, never for the writer.
  virtual void on_thread_start(JNIEnv* /*jni*/, jthread /*thread*/) {}
  virtual void on_thread_end(JNIEnv* /*jni*/, jthread /*thread*/) {}
  virtual void on_class_prepare(JNIEnv* /*jni*/, jclass /*klass*/) {}
  virtual void on_class_load(JNIEnv* /*jni*/, jclass /*klass*/) {}
  // The instructions of a compiled method (`code`, `size` bytes), loaded or unloaded.
  virtual void on_compiled_method_load(jmethodID /*method*/, const void* /*code*/, jint /*size*/) {}
  virtual void on_compiled_method_unload(jmethodID /*method*/, const void* /*code*/) {}
  // SampledObjectAlloc, the hot event, is no hook: the callback table calls the allocation tracker
  // (heap=sites|all) directly.

  // ---- writer thread ------------------------------------------------------------------------

  // Takes what the feature's producers have queued (allocation events, counted stacks) into the
  // profile: interns sites and traces, counts. Called on the writer thread, between reports and
  // as every report's barrier (before any section is written). May call JNI and JVMTI. Returns
  // how many events it took (the writer drains again at once after a full batch).
  virtual size_t drain(JNIEnv* /*jni*/) { return 0; }

  // Writes the feature's section(s) of one report, TRACEs first. Writer thread.
  virtual void write_report(ReportContext& /*report*/) {}

  // A report is about to run: background work in flight (stacks being taken for CPU samples) is
  // finished and queued, so that the report's drain() has it. Writer thread.
  virtual void settle_background() {}

  // A heap dump is about to suspend the application's threads (ReportContext::pause_background):
  // background work such as sampling holds still until resume_background(). Writer thread.
  virtual void pause_background() {}
  virtual void resume_background() {}

  // A net= CONTROL command the feature owns (allocation tracking, sampling, clearing its counts).
  // Returns false with a one-line reason in *refusal when it does not do that one. Writer thread.
  virtual bool control(JNIEnv* /*jni*/, const NetCommand& /*command*/, std::string* refusal) {
    *refusal = "not handled by this feature";
    return false;
  }

  // VM death, after the final report and after the writer thread stopped: disable events, stop
  // threads.
  virtual void stop(JNIEnv* /*jni*/) {}
};

// One feature as the Profiler holds it: the feature, what it declared at load, and whether it has
// failed (it threw: no more drains, reports or commands; the rest of the profile goes on).
struct FeatureSlot {
  std::unique_ptr<Feature> feature;
  FeatureEvents events;
  FeatureCommands commands;
  bool failed = false;

  Feature* operator->() const { return feature.get(); }
};

}  // namespace fasthprof
