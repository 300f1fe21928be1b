// A profiling feature (MONITOR, HEAP DUMP, SITES, CPU SAMPLES, CPU TIME) plugged into the agent.
// The Profiler owns the JVMTI wiring; a feature says what it needs and does its own work:
//
//   load:   add_capabilities() -> add_callbacks()         (Agent_OnLoad / Agent_OnAttach)
//   live:   start()                                        (VMInit, or at once under attach)
//   report: write_report()  in docs/compatibility.md §2.5 order (kill -QUIT, and VM death with doe=y)
//   death:  stop()                                         (VMDeath, after the final report)
#pragma once

#include <jvmti.h>

#include <functional>
#include <mutex>

#include "async_sink.h"
#include "options.h"
#include "output_mutex.h"
#include "profile_writer.h"

namespace fasthprof {

class ClassTracker;
class ThreadTracker;

// What every feature may use. The writer, the class tracker and the thread tracker are shared:
// touch them only with output_mutex held.
struct AgentContext {
  JavaVM* vm = nullptr;
  jvmtiEnv* jvmti = nullptr;
  const Options* options = nullptr;
  ProfileWriter* writer = nullptr;
  AsyncSink* sink = nullptr;
  OutputMutex* output_mutex = nullptr;
  ClassTracker* classes = nullptr;
  ThreadTracker* threads = nullptr;
  bool attached = false;  // loaded into a running VM (Agent_OnAttach)
};

struct ReportContext {
  JNIEnv* jni = nullptr;
  // Held when write_report() is called. A feature may unlock it around a long call into the VM
  // (a heap walk) and must hold it again when it returns.
  std::unique_lock<OutputMutex>* output_lock = nullptr;
  bool at_exit = false;  // VM death (doe=y) rather than a DataDumpRequest
  // Hold every feature's background work (CPU sampling) still, and let it go again: a heap dump
  // calls these around the time it keeps the application's threads suspended, which use no CPU
  // then and whose stacks must not be walked meanwhile. Call without the output lock.
  std::function<void()> pause_background;
  std::function<void()> resume_background;
};

class Feature {
 public:
  virtual ~Feature() = default;

  // The " <what> ..." part of the verbose line, e.g. " allocation sites ...".
  virtual const char* dump_message() const = 0;

  // Capabilities the feature needs; a missing one fails the load with a message naming it.
  virtual void add_capabilities(jvmtiCapabilities* /*wanted*/) {}

  // Fills the feature's entries of the one callback table (static trampolines).
  virtual void add_callbacks(jvmtiEventCallbacks* /*callbacks*/) {}

  // The VM is live: enable events, start threads. Called on a Java thread, output lock not held.
  virtual void start(JNIEnv* /*jni*/) {}

  // Writes the feature's section(s) of one report, TRACEs first.
  virtual void write_report(ReportContext& /*report*/) {}

  // A report is about to run: background work in flight (stacks being taken for CPU samples) is
  // finished and counted, so that the report has it. Called without the output lock.
  virtual void settle_background() {}

  // A heap dump is about to suspend the application's threads (ReportContext::pause_background):
  // background work such as sampling holds still until resume_background(). Called without the
  // output lock.
  virtual void pause_background() {}
  virtual void resume_background() {}

  // VM death, after the final report: disable events, stop threads. Output lock not held.
  virtual void stop(JNIEnv* /*jni*/) {}
};

}  // namespace fasthprof
