// The agent's one global object: options, output, the JVMTI wiring (capabilities, the one callback
// table, enabled events), the features, and what the writer thread (writer_thread.h), the owner of
// the profile, runs: drains, reports, net= commands (docs/ARCHITECTURE.md). Each JVMTI callback is a short trampoline into the part that owns
// the work.
#pragma once

#include <jvmti.h>

#include <atomic>
#include <memory>
#include <vector>

#include "class_tracker.h"
#include "feature.h"
#include "instrument/class_instrumenter.h"
#include "options/net_command.h"
#include "options/options.h"
#include "queues/lifecycle_queue.h"
#include "records/profile_writer.h"
#include "sink/async_sink.h"
#include "thread_tracker.h"
#include "writer_thread.h"

namespace fasthprof {

class AllocationTracker;
class MonitorTracker;
class CpuTimer;

class Profiler : private WriterJobs {
 public:
  // Agent_OnLoad (attach=false) and Agent_OnAttach (attach=true). Returns JNI_OK, or JNI_ERR
  // after printing why; at OnLoad the original's exits (help, option errors, files) are kept,
  // under attach nothing exits the VM.
  static jint load(JavaVM* vm, const char* options, bool attach);

  // Agent_OnUnload.
  static void unload();

  // After load() threw: the agent gives up (its JVMTI environment is disposed, so that no
  // callback reaches it again), at OnLoad the process exits 1 as after any start-up error, under
  // attach the attach fails and the VM runs on. Allocates nothing.
  static void abandon_load(bool attach);

 private:
  Profiler(JavaVM* vm, jvmtiEnv* jvmti, Options options, bool attach);

  jint start(JNIEnv* live_jni);
  bool open_output(std::string* error);
  void create_features();
  bool set_up_jvmti(std::string* error);
  void go_live(JNIEnv* jni);
  // What the writer thread (writer_thread.h) runs: drains, reports (the final one at VM death),
  // net= commands, each behind the entry guard.
  void before_round() override;
  size_t drain(JNIEnv* jni) override;
  void report(JNIEnv* jni, bool at_exit) override;
  void command(JNIEnv* jni, const NetCommand& command) override;
  void loop_failed() override;
  // Applies every thread and class event queued so far. Owner only.
  void apply_lifecycle(JNIEnv* jni);
  // apply_lifecycle(), then every feature's drain(); returns the events taken. Owner only.
  size_t drain_all(JNIEnv* jni);
  void run_report(JNIEnv* jni, bool at_exit);
  void run_report_sections(JNIEnv* jni, bool at_exit);
  // Ends the sink's current report (what the writer buffers flushed into it first), telling the
  // writer whether it reached the file, and begins the next. Owner only.
  void next_report();
  void shut_down(JNIEnv* jni);
  // net= commands (agent/net_commands.cpp): the listener thread reads them from its own dup() of
  // the socket and queues them in the writer's mailbox; the writer runs each like a small report.
  void start_command_listener(JNIEnv* jni);
  static void JNICALL listener_main(jvmtiEnv* jvmti, JNIEnv* jni, void* arg);
  void listen(JNIEnv* jni);
  void run_command(JNIEnv* jni, const NetCommand& command);
  // The CONTROL commands, and the one section a reporting command writes (net_commands.cpp).
  void run_control(JNIEnv* jni, const NetCommand& command);
  void clear_cpu(JNIEnv* jni, const NetCommand& command);
  void set_depth(JNIEnv* jni, const NetCommand& command);
  void write_command_section(JNIEnv* jni, FeatureSlot* slot, ReportContext& report);
  // The first feature in report order that serves a command (FeatureCommands), or null.
  FeatureSlot* serving(bool FeatureCommands::*command);
  // Adds a feature in report order with what it declares; returns it, for the typed hooks.
  template <typename F>
  F* add_feature(std::unique_ptr<F> feature);
  void exit_on_command(JNIEnv* jni);
  // A callback threw: records and reports stop for the rest of the run, the unfinished report is
  // cut back (by the owner: at once on it, otherwise at its next round), and the file keeps every
  // complete report. Any thread.
  void stop_after_failure();
  void cut_back_after_failure();
  // Runs one of the profiler's own callbacks behind the entry guard (entry_guard.h).
  template <typename Body>
  static void guarded(const char* where, Body&& body);

  // The one callback table: each entry does the profiler's own part, then calls the features'
  // hooks.
  static void JNICALL on_vm_init(jvmtiEnv* jvmti, JNIEnv* jni, jthread thread);
  static void JNICALL on_vm_death(jvmtiEnv* jvmti, JNIEnv* jni);
  static void JNICALL on_thread_start(jvmtiEnv* jvmti, JNIEnv* jni, jthread thread);
  static void JNICALL on_thread_end(jvmtiEnv* jvmti, JNIEnv* jni, jthread thread);
  static void JNICALL on_class_prepare(jvmtiEnv* jvmti, JNIEnv* jni, jthread thread, jclass klass);
  static void JNICALL on_class_load(jvmtiEnv* jvmti, JNIEnv* jni, jthread thread, jclass klass);
  static void JNICALL on_compiled_method_load(jvmtiEnv* jvmti, jmethodID method, jint code_size,
                                              const void* code_addr, jint map_length,
                                              const jvmtiAddrLocationMap* map, const void* compile_info);
  static void JNICALL on_compiled_method_unload(jvmtiEnv* jvmti, jmethodID method, const void* code_addr);
  static void JNICALL on_sampled_object_alloc(jvmtiEnv* jvmti, JNIEnv* jni, jthread thread, jobject object,
                                              jclass klass, jlong size);
  static void JNICALL on_data_dump_request(jvmtiEnv* jvmti);
  // monitor=y: the monitor tracker alone takes these.
  static void JNICALL on_monitor_contended_enter(jvmtiEnv* jvmti, JNIEnv* jni, jthread thread, jobject object);
  static void JNICALL on_monitor_contended_entered(jvmtiEnv* jvmti, JNIEnv* jni, jthread thread, jobject object);
  static void JNICALL on_monitor_wait(jvmtiEnv* jvmti, JNIEnv* jni, jthread thread, jobject object, jlong timeout);
  static void JNICALL on_monitor_waited(jvmtiEnv* jvmti, JNIEnv* jni, jthread thread, jobject object,
                                        jboolean timed_out);
  static void JNICALL on_class_file_load_hook(jvmtiEnv* jvmti, JNIEnv* jni, jclass class_being_redefined,
                                              jobject loader, const char* name, jobject protection_domain,
                                              jint class_data_len, const unsigned char* class_data,
                                              jint* new_class_data_len, unsigned char** new_class_data);
  static void JNICALL on_exception_catch(jvmtiEnv* jvmti, JNIEnv* jni, jthread thread, jmethodID method,
                                         jlocation location, jobject exception);

  // Callbacks run only between go_live() and shut_down(); shut_down() waits for those in flight.
  bool enter_callback();
  void leave_callback() { active_callbacks_.fetch_sub(1); }

  JavaVM* vm_;
  jvmtiEnv* jvmti_;
  Options options_;
  bool attach_;

  std::string output_path_;  // empty for net=
  std::unique_ptr<AsyncSink> sink_;
  LifecycleQueue lifecycle_;  // thread and class events for the owner
  ClassTracker classes_;
  std::unique_ptr<ProfileWriter> writer_;
  std::unique_ptr<ThreadTracker> threads_;
  AgentContext context_;
  // The stack depth now (depth=, then a net= CONTROL's), and the most the buffers hold.
  std::atomic<int> trace_depth_{0};
  int depth_capacity() const;
  std::vector<FeatureSlot> features_;  // in report order (docs/compatibility.md §2.5)
  std::vector<Feature*> class_load_hooks_, compiled_method_hooks_;  // wanted_events()
  // SampledObjectAlloc, the hot event, goes to the allocation tracker alone (heap=sites|all).
  AllocationTracker* allocation_hook_ = nullptr;
  // The monitor events and the WAIT/WAITED events of the lifecycle queue go to it (monitor=y).
  MonitorTracker* monitor_hook_ = nullptr;
  // cpu=times|old: exits by exception go to the CPU timer alone.
  CpuTimer* cpu_timer_ = nullptr;
  // Class rewriting for every feature that injects code (ClassFileLoadHook goes here).
  ClassInstrumenter instrumenter_;

  std::atomic<bool> live_{false};
  std::atomic<bool> failed_{false};  // stop_after_failure() ran
  std::atomic<bool> cut_pending_{false};  // the owner has yet to cut the unfinished report back
  std::atomic<int> active_callbacks_{0};

  // The writer thread and its mailbox: report requests, net= commands, the stop at VM death.
  WriterThread writer_thread_;
  int command_fd_ = -1;  // net=: the listener's dup() of the socket, -1 without one
};

}  // namespace fasthprof
