#include "profiler.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "base/clock.h"
#include "base/memory.h"
#include "base/stderr_line.h"
#include "cpu/cpu_sampler.h"
#include "cpu/cpu_timer.h"
#include "entry_guard.h"
#include "exit_check.h"
#include "heap/heap_dumper.h"
#include "jvmti_support.h"
#include "monitors/monitor_tracker.h"
#include "profile_owner.h"
#include "sink/file_backend.h"
#include "sink/gzip_backend.h"
#include "sink/output_file.h"
#include "sink/socket_backend.h"
#include "sites/allocation_tracker.h"

namespace fasthprof {


namespace {

std::atomic<bool> agent_loaded{false};
Profiler* profiler = nullptr;
// While a load() that claimed agent_loaded runs: what abandon_load() may undo.
bool load_claimed = false;
Profiler* being_loaded = nullptr;

constexpr const char* kTwiceMessage =
    "Cannot load this JVM TI agent twice, check your java command line for duplicate hprof options.";

[[noreturn]] void terminate_process(int code) {
  std::fflush(stdout);
  std::exit(code);
}

// pause=y: time to attach a debugger, as the original gave.
void pause_for_debugger() {
  write_stderr("\nHPROF pause for PID " + std::to_string(getpid()) + "\n");
  std::this_thread::sleep_for(std::chrono::seconds(600));
}

}  // namespace

template <typename Body>
void Profiler::guarded(const char* where, Body&& body) {
  guard_entry(where, kProfilingStopped, std::forward<Body>(body), [] {
    if (profiler != nullptr) profiler->stop_after_failure();
  });
}

jint Profiler::load(JavaVM* vm, const char* options, bool attach) {
  if (agent_loaded.exchange(true)) {
    jvmti::print_error(kTwiceMessage);
    if (attach) return JNI_ERR;
    write_stderr("HPROF TERMINATED PROCESS\n");
    terminate_process(9);
  }
  load_claimed = true;
  // A failed attach leaves the VM as it was, so that a corrected attach can follow.
  auto refuse = [attach](int exit_code) -> jint {
    load_claimed = false;
    if (!attach) terminate_process(exit_code);
    agent_loaded.store(false);
    return JNI_ERR;
  };

  const memory::Status& memory_status = memory::initialize();
  jvmtiEnv* jvmti = nullptr;
  if (vm->GetEnv(reinterpret_cast<void**>(&jvmti), JVMTI_VERSION_1_2) != JNI_OK) {
    jvmti::print_error("This VM offers no JVMTI 1.2 environment; fasthprof needs one.");
    return refuse(1);
  }

  ParseResult parsed = parse_options(options, std::getenv("_JAVA_HPROF_OPTIONS"));
  if (parsed.kind == ParseResult::Kind::kHelp) {
    std::string usage = usage_text();
    std::fwrite(usage.data(), 1, usage.size(), stdout);
    std::fflush(stdout);
    if (attach) jvmti->DisposeEnvironment();
    return refuse(0);
  }
  if (parsed.kind == ParseResult::Kind::kError) {
    write_stderr(format_option_error(parsed));
    if (attach) jvmti->DisposeEnvironment();
    return refuse(1);
  }
  const Options& chosen = parsed.options;
  for (const std::string& warning : missing_feature_warnings(chosen)) write_stderr(warning + "\n");
  if (chosen.diagnostics()) write_stderr(memory_status.description + "\n");
  if (chosen.verbose) {
    std::string note = inert_debug_options_note(chosen);
    if (!note.empty()) write_stderr(note + "\n");
  }
  if (chosen.pause) pause_for_debugger();

  JNIEnv* live_jni = nullptr;
  if (attach && vm->GetEnv(reinterpret_cast<void**>(&live_jni), JNI_VERSION_1_6) != JNI_OK) {
    jvmti::print_error("Agent_OnAttach was called on a thread without a JNI environment.");
    jvmti->DisposeEnvironment();
    return refuse(1);
  }
  auto* created = new Profiler(vm, jvmti, chosen, attach);
  profiler = created;
  being_loaded = created;
  jint result = created->start(live_jni);
  being_loaded = nullptr;
  load_claimed = false;
  if (result != JNI_OK) {
    // Only reachable under attach: at OnLoad start() exits as the original did.
    profiler = nullptr;
    jvmti->DisposeEnvironment();
    agent_loaded.store(false);
    // The object may still be referenced by a callback that raced the failure; it is left.
  }
  return result;
}

void Profiler::abandon_load(bool attach) {
  if (!load_claimed) return;  // the throw came before this load claimed anything
  load_claimed = false;
  if (Profiler* created = being_loaded) {
    being_loaded = nullptr;
    // Left allocated and still reachable through `profiler`: a callback may be on its way in,
    // and finds live_ false.
    created->live_.store(false);
    created->failed_.store(true);
    created->jvmti_->DisposeEnvironment();
  }
  if (!attach) terminate_process(1);
  agent_loaded.store(false);
}

void Profiler::unload() {
  // Nothing is freed: a daemon thread may still be inside the agent while the process ends.
}

Profiler::Profiler(JavaVM* vm, jvmtiEnv* jvmti, Options options, bool attach)
    : vm_(vm), jvmti_(jvmti), options_(std::move(options)), attach_(attach), classes_(vm, jvmti), instrumenter_(jvmti) {}

jint Profiler::start(JNIEnv* live_jni) {
  std::string error;
  if (!open_output(&error)) {
    jvmti::print_error(error);
    if (!attach_) terminate_process(1);
    return JNI_ERR;
  }
  if (!set_up_jvmti(&error)) {
    jvmti::print_error(error);
    if (!attach_) terminate_process(1);
    sink_->close();
    return JNI_ERR;
  }
  if (attach_) go_live(live_jni);
  return JNI_OK;
}

bool Profiler::open_output(std::string* error) {
  std::unique_ptr<SinkBackend> backend;
  if (!options_.net_host.empty()) {
    std::string why;
    auto socket = SocketBackend::connect(options_.net_host, options_.net_port, &why, options_.net_timeout_seconds);
    if (!socket) {
      *error = "can't connect to " + options_.net_host + ":" + std::to_string(options_.net_port) +
               ": " + why;
      return false;
    }
    command_fd_ = fcntl(socket->fd(), F_DUPFD_CLOEXEC, 0);
    backend = std::move(socket);
  } else {
    OutputFileChoice choice{options_.output_path(), !options_.file.empty(), options_.force,
                            options_.format == OutputFormat::kBinary, getpid()};
    std::string path;
    int fd = open_output_file(choice, &path, error);
    if (fd < 0) return false;
    output_path_ = path;
    backend = std::make_unique<FileBackend>(fd, path);
  }
  if (options_.gzip) {
    backend = GzipBackend::create(std::move(backend), kGzipLevel, error);
    if (!backend) return false;
  }
  sink_ = AsyncSink::create(std::move(backend), AsyncSinkOptions{}, error);
  if (!sink_) return false;
  writer_ = std::make_unique<ProfileWriter>(options_, *sink_, &classes_);
  classes_.attach(writer_.get(), &lifecycle_);
  threads_ = std::make_unique<ThreadTracker>(jvmti_, *writer_, lifecycle_);
  context_ = {vm_, jvmti_, &options_, writer_.get(), sink_.get(), &classes_, threads_.get(), attach_,
              [this](JNIEnv* jni) { apply_lifecycle(jni); }, &lifecycle_};
  trace_depth_.store(options_.depth);
  context_.depth_capacity = depth_capacity();
  context_.trace_depth = &trace_depth_;
  create_features();
  return true;
}

template <typename F>
F* Profiler::add_feature(std::unique_ptr<F> feature) {
  FeatureSlot slot;
  feature->wanted_events(&slot.events);
  feature->served_commands(&slot.commands);
  if (slot.events.class_load) class_load_hooks_.push_back(feature.get());
  if (slot.events.compiled_method_load) compiled_method_hooks_.push_back(feature.get());
  F* added = feature.get();
  slot.feature = std::move(feature);
  features_.push_back(std::move(slot));
  return added;
}

// The features asked for, in the order their sections appear in a report (§2.5): monitors,
// heap dump, allocation sites, CPU samples, CPU times. A new feature is one line here; what it
// serves (events, net= commands) it declares itself. The hot events keep typed hooks.
void Profiler::create_features() {
  // Frames of injected code name methods by the instrumenter's IDs.
  classes_.set_injected_methods(instrumenter_.methods());
  if (options_.monitor_tracing) monitor_hook_ = add_feature(std::make_unique<MonitorTracker>(context_));
  // heap=all: the heap dumper is given the allocation tracker's traces (a section before it).
  std::unique_ptr<AllocationTracker> sites;
  if (options_.alloc_sites) sites = std::make_unique<AllocationTracker>(context_, &instrumenter_);
  if (options_.heap_dump) add_feature(std::make_unique<HeapDumper>(context_, sites.get()));
  if (sites != nullptr) allocation_hook_ = add_feature(std::move(sites));
  if (options_.cpu_sampling) add_feature(std::make_unique<CpuSampler>(context_));
  if (options_.cpu_timing) {
    cpu_timer_ = add_feature(std::make_unique<CpuTimer>(context_, &instrumenter_));
  }
}

bool Profiler::set_up_jvmti(std::string* error) {
  jvmtiCapabilities wanted{};
  wanted.can_tag_objects = 1;
  for (auto& feature : features_) feature->add_capabilities(&wanted);
  if (jvmti_->AddCapabilities(&wanted) != JVMTI_ERROR_NONE) {
    *error = "Unable to get necessary JVMTI capabilities.";
    return false;
  }
  // Names in traces: asked for when the VM offers them, never required.
  jvmtiCapabilities potential{};
  if (jvmti_->GetPotentialCapabilities(&potential) == JVMTI_ERROR_NONE) {
    jvmtiCapabilities names{};
    names.can_get_source_file_name = potential.can_get_source_file_name;
    names.can_get_line_numbers = potential.can_get_line_numbers;
    jvmti_->AddCapabilities(&names);
  }
  // The one callback table. Events are enabled where they start to matter (go_live(), features'
  // start()); an entry whose event is never enabled is never called.
  jvmtiEventCallbacks callbacks{};
  callbacks.VMInit = &on_vm_init;
  callbacks.VMDeath = &on_vm_death;
  callbacks.ThreadStart = &on_thread_start;
  callbacks.ThreadEnd = &on_thread_end;
  callbacks.ClassPrepare = &on_class_prepare;
  callbacks.DataDumpRequest = &on_data_dump_request;
  if (allocation_hook_ != nullptr) callbacks.SampledObjectAlloc = &on_sampled_object_alloc;
  // alloc=inject: what natives allocate comes as VMObjectAlloc, whose callback has the same shape.
  if (allocation_hook_ != nullptr && allocation_hook_->wants_vm_object_alloc()) {
    callbacks.VMObjectAlloc = &on_sampled_object_alloc;
  }
  if (!class_load_hooks_.empty()) callbacks.ClassLoad = &on_class_load;
  if (!compiled_method_hooks_.empty()) {
    callbacks.CompiledMethodLoad = &on_compiled_method_load;
    callbacks.CompiledMethodUnload = &on_compiled_method_unload;
  }
  if (monitor_hook_ != nullptr) {
    callbacks.MonitorContendedEnter = &on_monitor_contended_enter;
    callbacks.MonitorContendedEntered = &on_monitor_contended_entered;
    callbacks.MonitorWait = &on_monitor_wait;
    callbacks.MonitorWaited = &on_monitor_waited;
  }
  if (instrumenter_.wanted()) callbacks.ClassFileLoadHook = &on_class_file_load_hook;
  if (instrumenter_.catches()) callbacks.ExceptionCatch = &on_exception_catch;
  if (jvmti_->SetEventCallbacks(&callbacks, sizeof(callbacks)) != JVMTI_ERROR_NONE ||
      !writer_thread_.create(jvmti_)) {
    *error = "Unable to set up the JVMTI callbacks.";
    return false;
  }
  for (auto& feature : features_) feature->on_load();
  if (!attach_ &&
      jvmti_->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_VM_INIT, nullptr) != JVMTI_ERROR_NONE) {
    *error = "Unable to enable the VMInit event.";
    return false;
  }
  if (jvmti_->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_VM_DEATH, nullptr) != JVMTI_ERROR_NONE) {
    *error = "Unable to enable the VMDeath event.";
    return false;
  }
  return true;
}

void Profiler::go_live(JNIEnv* jni) {
  {
    // This thread owns the profile until the writer thread starts (not while it starts it: making
    // the thread object may prepare classes here, which must then be queued for the writer).
    ProfileOwner::Scope owner;
    sink_->begin_report();
    writer_->write_header(std::time(nullptr), wall_ms());
    writer_->flush();
    sink_->end_report();
    // Records streamed between reports form a "report" of their own, so that a write error among
    // them cuts back only to here, never into a complete report.
    sink_->begin_report();
    live_.store(true);
    jvmti_->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_THREAD_START, nullptr);
    jvmti_->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_THREAD_END, nullptr);
    threads_->announce_existing(jni);
    jvmti_->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_CLASS_PREPARE, nullptr);
    classes_.record_loaded_classes(jni);
    apply_lifecycle(jni);
    for (auto& feature : features_) feature->start(jni);
    // Every feature that injects code has set up its Java side: rewrite from now on.
    instrumenter_.begin(jni);
    apply_lifecycle(jni);
  }

  // Allocation events arrive by the million: drain them every millisecond so that the next round
  // takes a batch rather than contending with the producers for every few events. Without them
  // only thread and class events and CPU samples wait, and a slower round is enough.
  const int64_t round_ms = allocation_hook_ == nullptr ? 10 : 1;
  std::string error;
  if (!writer_thread_.start(jni, this, round_ms, &error)) {
    jvmti::print_error(error + "; nothing more is recorded and kill -QUIT produces no report");
    live_.store(false);
    return;
  }
  jvmti_->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_DATA_DUMP_REQUEST, nullptr);
  start_command_listener(jni);
}

void Profiler::before_round() {
  if (cut_pending_.load()) cut_back_after_failure();
}

size_t Profiler::drain(JNIEnv* jni) {
  size_t taken = 0;
  guarded("the writer thread", [&] { taken = drain_all(jni); });
  return taken;
}

void Profiler::report(JNIEnv* jni, bool at_exit) {
  if (!at_exit) {
    guarded("the writer thread's report", [&] { run_report(jni, /*at_exit=*/false); });
  } else if (options_.doe && !failed_.load()) {
    guarded("the report at VM death", [&] { run_report(jni, /*at_exit=*/true); });
  }
}

void Profiler::command(JNIEnv* jni, const NetCommand& command) {
  guarded("a net= command", [&] { run_command(jni, command); });
}

void Profiler::loop_failed() { stop_after_failure(); }

void Profiler::apply_lifecycle(JNIEnv* jni) {
  lifecycle_.drain([&](LifecycleEvent& event) {
    jvmti::LocalFrame frame(jni, 8);
    if (event.kind == LifecycleEvent::Kind::kClassPrepare) {
      classes_.apply(jni, event);
    } else if (event.kind == LifecycleEvent::Kind::kMonitorWait ||
               event.kind == LifecycleEvent::Kind::kMonitorWaited) {
      if (monitor_hook_ != nullptr) monitor_hook_->apply(jni, event);
    } else {
      threads_->apply(jni, event);
    }
  });
}

size_t Profiler::drain_all(JNIEnv* jni) {
  apply_lifecycle(jni);
  size_t taken = 0;
  for (FeatureSlot& slot : features_) {
    if (slot.failed) continue;
    guard_entry(
        "the writer thread", "that feature records nothing more",
        [&] { taken += slot->drain(jni); }, [&] { slot.failed = true; });
  }
  return taken;
}

void Profiler::run_report(JNIEnv* jni, bool at_exit) {
  if (failed_.load()) return;
  // Sampling goes on while a report runs, except while a heap dump holds the program's threads
  // (ReportContext::pause_background): a report's CPU samples cover the time since the previous
  // report's, however long its heap dump took. The barrier: what every producer queued up to
  // now is in the profile before any section is written.
  for (auto& feature : features_) feature->settle_background();
  drain_all(jni);
  run_report_sections(jni, at_exit);
}

void Profiler::run_report_sections(JNIEnv* jni, bool at_exit) {
  // The records streamed since the last report are a "report" of their own, so that a write
  // error among them cuts back only to the end of the last complete report.
  next_report();
  classes_.record_unloaded_classes(jni);
  ReportContext report{jni, at_exit};
  report.pause_background = [this] {
    for (auto& feature : features_) feature->pause_background();
  };
  report.resume_background = [this] {
    for (auto& feature : features_) feature->resume_background();
  };
  // The verbose line ("Dumping Java heap ... done.") is one line that users' scripts look for: it
  // is written whole, in one write, once the report is in the output, so that nothing the agent
  // says meanwhile (warnings, verbose=y figures, a full disk) nor the program's own output can land
  // inside it. Those come on lines of their own, before it.
  std::string line = "Dumping";
  for (FeatureSlot& slot : features_) {
    if (slot.failed) continue;
    Feature& feature = *slot.feature;
    line += feature.dump_message();
    // The section named in the message, e.g. "the report's allocation sites".
    std::string where = std::string("the report's") + feature.dump_message();
    if (where.size() > 4 && where.compare(where.size() - 4, 4, " ...") == 0) where.resize(where.size() - 4);
    guard_entry(
        where.c_str(), "that section is left out of this report and of later ones",
        [&] { feature.write_report(report); },
        [&] {
          slot.failed = true;
          writer_->flush();
          sink_->abandon_report("the report was left out: one of its sections failed");
        });
  }
  next_report();
  if (options_.verbose && !features_.empty()) write_stderr(line + " done.\n");
}

void Profiler::next_report() {
  writer_->flush();
  if (sink_->end_report()) {
    writer_->report_complete();
  } else {
    writer_->output_lost();
  }
  sink_->begin_report();
  writer_->reannounce();
}

void Profiler::shut_down(JNIEnv* jni) {
  jvmti_->SetEventNotificationMode(JVMTI_DISABLE, JVMTI_EVENT_DATA_DUMP_REQUEST, nullptr);
  bool writer_started = writer_thread_.stop_and_wait();

  // The writer thread is gone (it ran the final report): this thread owns the profile to the end.
  ProfileOwner::Scope owner;
  if (!writer_started && live_.load() && options_.doe && !failed_.load()) run_report(jni, /*at_exit=*/true);

  // The file ends with the last section, as the original's did: the agent's own threads that
  // stop below write no THREAD END after it.
  live_.store(false);
  jvmti_->SetEventNotificationMode(JVMTI_DISABLE, JVMTI_EVENT_THREAD_START, nullptr);
  jvmti_->SetEventNotificationMode(JVMTI_DISABLE, JVMTI_EVENT_THREAD_END, nullptr);
  jvmti_->SetEventNotificationMode(JVMTI_DISABLE, JVMTI_EVENT_CLASS_PREPARE, nullptr);
  instrumenter_.end();
  for (auto& feature : features_) feature->stop(jni);
  while (active_callbacks_.load() != 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (cut_pending_.load()) cut_back_after_failure();

  writer_->flush();
  sink_->close();
  constexpr long kLogCheckBinary = 0x4;
  if ((options_.logflags & kLogCheckBinary) != 0 && options_.format == OutputFormat::kBinary &&
      !output_path_.empty()) {
    check_binary_file(output_path_, options_.verbose);
  }
  if (options_.diagnostics()) {
    LifecycleQueueStats queued = lifecycle_.stats();
    write_stderr("fasthprof: thread and class events: " + std::to_string(queued.pushed) + " queued, deepest " +
                 std::to_string(queued.deepest) + ", " + std::to_string(queued.waits) + " waits for the writer, " +
                 std::to_string(queued.forced) + " queued past the bound\n");
    write_stderr("fasthprof: memory: " + std::to_string(memory::bytes_in_use()) + " bytes in use at exit, peak " +
                 std::to_string(memory::peak_bytes_in_use()) + "\n");
  }
}

bool Profiler::enter_callback() {
  active_callbacks_.fetch_add(1);
  if (!live_.load()) {
    active_callbacks_.fetch_sub(1);
    return false;
  }
  return true;
}

void Profiler::stop_after_failure() {
  if (failed_.exchange(true)) return;
  live_.store(false);
  if (!sink_) return;
  cut_pending_.store(true);
  if (ProfileOwner::is_current_thread()) cut_back_after_failure();
}

void Profiler::cut_back_after_failure() {
  if (!cut_pending_.exchange(false)) return;
  // Nothing after this point reaches the file: no begin_report() clears the failure again.
  sink_->abandon_report("the output ends here after an error");
}

void JNICALL Profiler::on_vm_init(jvmtiEnv*, JNIEnv* jni, jthread) {
  guarded("VMInit", [&] { profiler->go_live(jni); });
}

void JNICALL Profiler::on_vm_death(jvmtiEnv*, JNIEnv* jni) {
  guarded("VMDeath", [&] { profiler->shut_down(jni); });
}

// enter_callback() and leave_callback() stay outside the guard: shut_down() waits for the count.
void JNICALL Profiler::on_thread_start(jvmtiEnv*, JNIEnv* jni, jthread thread) {
  if (!profiler->enter_callback()) return;
  guarded("ThreadStart", [&] {
    profiler->threads_->announce(jni, thread);
    for (auto& feature : profiler->features_) feature->on_thread_start(jni, thread);
  });
  profiler->leave_callback();
}

void JNICALL Profiler::on_thread_end(jvmtiEnv*, JNIEnv* jni, jthread thread) {
  if (!profiler->enter_callback()) return;
  guarded("ThreadEnd", [&] {
    for (auto& feature : profiler->features_) feature->on_thread_end(jni, thread);
    profiler->threads_->ended(jni, thread);
  });
  profiler->leave_callback();
}

void JNICALL Profiler::on_class_prepare(jvmtiEnv*, JNIEnv* jni, jthread, jclass klass) {
  if (!profiler->enter_callback()) return;
  jvmti::plan_callback_local_refs(jni);
  guarded("ClassPrepare", [&] {
    profiler->classes_.announce(jni, klass);
    for (auto& feature : profiler->features_) feature->on_class_prepare(jni, klass);
  });
  profiler->leave_callback();
}

void JNICALL Profiler::on_class_load(jvmtiEnv*, JNIEnv* jni, jthread, jclass klass) {
  if (!profiler->enter_callback()) return;
  guarded("ClassLoad", [&] {
    for (Feature* feature : profiler->class_load_hooks_) feature->on_class_load(jni, klass);
  });
  profiler->leave_callback();
}

void JNICALL Profiler::on_compiled_method_load(jvmtiEnv*, jmethodID method, jint code_size, const void* code_addr,
                                               jint, const jvmtiAddrLocationMap*, const void*) {
  if (!profiler->enter_callback()) return;
  guarded("CompiledMethodLoad", [&] {
    for (Feature* feature : profiler->compiled_method_hooks_) feature->on_compiled_method_load(method, code_addr, code_size);
  });
  profiler->leave_callback();
}

void JNICALL Profiler::on_compiled_method_unload(jvmtiEnv*, jmethodID method, const void* code_addr) {
  if (!profiler->enter_callback()) return;
  guarded("CompiledMethodUnload", [&] {
    for (Feature* feature : profiler->compiled_method_hooks_) feature->on_compiled_method_unload(method, code_addr);
  });
  profiler->leave_callback();
}

// The hot one: no entry count (the allocation tracker keeps its own accepting flag and guard), and
// a direct call of the one feature that takes it rather than a loop of virtual hooks (measured:
// AllocLoop 8 % faster, bench/ab_compare.py).
void JNICALL Profiler::on_sampled_object_alloc(jvmtiEnv*, JNIEnv* jni, jthread thread, jobject object,
                                               jclass klass, jlong size) {
  profiler->allocation_hook_->on_sampled_object_alloc(jni, thread, object, klass, size);
}

void JNICALL Profiler::on_monitor_contended_enter(jvmtiEnv*, JNIEnv* jni, jthread thread, jobject object) {
  if (!profiler->enter_callback()) return;
  guarded("MonitorContendedEnter", [&] { profiler->monitor_hook_->contended_enter(jni, thread, object); });
  profiler->leave_callback();
}

void JNICALL Profiler::on_monitor_contended_entered(jvmtiEnv*, JNIEnv* jni, jthread thread, jobject object) {
  if (!profiler->enter_callback()) return;
  guarded("MonitorContendedEntered", [&] { profiler->monitor_hook_->contended_entered(jni, thread, object); });
  profiler->leave_callback();
}

void JNICALL Profiler::on_monitor_wait(jvmtiEnv*, JNIEnv* jni, jthread thread, jobject object, jlong timeout) {
  if (!profiler->enter_callback()) return;
  guarded("MonitorWait", [&] { profiler->monitor_hook_->wait(jni, thread, object, timeout); });
  profiler->leave_callback();
}

void JNICALL Profiler::on_monitor_waited(jvmtiEnv*, JNIEnv* jni, jthread thread, jobject object, jboolean) {
  if (!profiler->enter_callback()) return;
  guarded("MonitorWaited", [&] { profiler->monitor_hook_->waited(jni, thread, object); });
  profiler->leave_callback();
}

void JNICALL Profiler::on_class_file_load_hook(jvmtiEnv*, JNIEnv*, jclass, jobject, const char* name, jobject,
                                               jint class_data_len, const unsigned char* class_data,
                                               jint* new_class_data_len, unsigned char** new_class_data) {
  if (!profiler->enter_callback()) return;
  guarded("ClassFileLoadHook", [&] {
    profiler->instrumenter_.on_class_file_load(name, class_data_len, class_data, new_class_data_len, new_class_data);
  });
  profiler->leave_callback();
}

void JNICALL Profiler::on_exception_catch(jvmtiEnv*, JNIEnv* jni, jthread, jmethodID method, jlocation, jobject) {
  if (!profiler->enter_callback()) return;
  guarded("ExceptionCatch", [&] { profiler->instrumenter_.on_exception_catch(jni, method); });
  profiler->leave_callback();
}

void JNICALL Profiler::on_data_dump_request(jvmtiEnv*) {
  if (!profiler->enter_callback()) return;
  profiler->writer_thread_.request_report();
  profiler->leave_callback();
}

}  // namespace fasthprof
