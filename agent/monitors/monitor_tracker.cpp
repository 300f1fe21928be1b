#include "monitors/monitor_tracker.h"

#include <algorithm>
#include <ctime>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/ids.h"
#include "base/stderr_line.h"
#include "jvmti_support.h"
#include "thread_tracker.h"

namespace fasthprof {
namespace {

constexpr jvmtiEvent kEvents[] = {JVMTI_EVENT_MONITOR_CONTENDED_ENTER, JVMTI_EVENT_MONITOR_CONTENDED_ENTERED,
                                  JVMTI_EVENT_MONITOR_WAIT, JVMTI_EVENT_MONITOR_WAITED};

// The two stamps in one word (see the header): bit 31 of each half says it is set.
constexpr uint64_t kStampSet = 0x80000000u;
constexpr uint64_t kStampMask = 0x7fffffffu;
constexpr uint64_t kEnterHalf = 0xffffffffu;

// Where a thread that has no JVMTI thread-local storage keeps its stamps (the VM refused the
// call); such a thread does not move between carriers.
thread_local uint64_t fallback_stamps = 0;

bool is_thread_id(jlong tag) {
  return registry_object_index(RegistryObjectKind::kThread, static_cast<uint64_t>(tag)) != 0;
}

// The dump's first line when it cannot list monitors, and why.
constexpr const char* kNoMonitorsAttachedNote =
    "monitors not listed: this JVM grants an agent loaded into it while it runs no owned-monitor "
    "information; start the JVM with the agent to see them";
constexpr const char* kNoMonitorsNote = "monitors not listed: this JVM grants no owned-monitor information";

}  // namespace

void MonitorTracker::add_capabilities(jvmtiCapabilities* wanted) {
  // At start-up HotSpot grants all four. A JVM attached to at run time grants the events and
  // GetObjectMonitorUsage but neither owned-monitor query (measured on 17 and 25): ask for what it
  // can give, and let the dump say what is missing.
  jvmtiCapabilities potential{};
  bool known = jvmti_->GetPotentialCapabilities(&potential) == JVMTI_ERROR_NONE;
  wanted->can_generate_monitor_events = 1;
  wanted->can_get_monitor_info = !known || potential.can_get_monitor_info ? 1 : 0;
  wanted->can_get_owned_monitor_info = !known || potential.can_get_owned_monitor_info ? 1 : 0;
  wanted->can_get_current_contended_monitor = !known || potential.can_get_current_contended_monitor ? 1 : 0;
}

void MonitorTracker::start(JNIEnv*) {
  jvmtiCapabilities granted{};
  if (jvmti_->GetCapabilities(&granted) == JVMTI_ERROR_NONE) {
    owned_info_ = granted.can_get_owned_monitor_info != 0;
    contended_info_ = granted.can_get_current_contended_monitor != 0;
    usage_info_ = granted.can_get_monitor_info != 0;
  }
  events_ = true;
  for (jvmtiEvent event : kEvents) {
    jvmtiError error = jvmti_->SetEventNotificationMode(JVMTI_ENABLE, event, nullptr);
    if (error != JVMTI_ERROR_NONE) {
      jvmti::print_error("cannot enable the monitor events (" + jvmti::error_name(error) +
                         "); no WAIT lines or MONITOR TIME will be written");
      for (jvmtiEvent enabled : kEvents) jvmti_->SetEventNotificationMode(JVMTI_DISABLE, enabled, nullptr);
      events_ = false;
      break;
    }
  }
  if (context_.options->diagnostics()) {
    write_stderr(std::string("fasthprof: monitor capabilities: owned monitors ") + (owned_info_ ? "yes" : "no") +
                 ", contended monitor " + (contended_info_ ? "yes" : "no") + ", monitor usage " +
                 (usage_info_ ? "yes" : "no") + ", events " + (events_ ? "yes" : "no") + "\n");
  }
  if (context_.attached && !(owned_info_ && contended_info_)) {
    write_stderr(std::string("fasthprof: monitor=y in a running JVM: ") + kNoMonitorsAttachedNote + "\n");
  }
}

uint64_t MonitorTracker::load_stamps() {
  void* stored = nullptr;
  if (jvmti_->GetThreadLocalStorage(nullptr, &stored) != JVMTI_ERROR_NONE) return fallback_stamps;
  return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(stored));
}

void MonitorTracker::store_stamps(uint64_t stamps) {
  if (jvmti_->SetThreadLocalStorage(nullptr, reinterpret_cast<void*>(static_cast<uintptr_t>(stamps))) !=
      JVMTI_ERROR_NONE) {
    fallback_stamps = stamps;
  }
}

std::string MonitorTracker::signature_of(JNIEnv* jni, jobject object) {
  if (object == nullptr) return {};
  jclass klass = jni->GetObjectClass(object);
  if (klass == nullptr) return {};
  char* signature = nullptr;
  jvmtiError error = jvmti_->GetClassSignature(klass, &signature, nullptr);
  jni->DeleteLocalRef(klass);
  return error == JVMTI_ERROR_NONE ? jvmti::take_string(jvmti_, signature) : std::string();
}

// The thread's object ID when the agent announced it; 0 otherwise (a virtual thread, a thread
// that started before its ThreadStart was enabled and was not enumerated yet).
uint64_t MonitorTracker::thread_id(jthread thread) {
  jlong tag = 0;
  if (thread == nullptr || jvmti_->GetTag(thread, &tag) != JVMTI_ERROR_NONE || !is_thread_id(tag)) return 0;
  return static_cast<uint64_t>(tag);
}

void MonitorTracker::take_stack(ContentionEvent* event) {
  int depth = context_.current_depth();
  if (depth <= 0) return;
  std::vector<jvmtiFrameInfo> frames(static_cast<size_t>(depth));
  jint count = 0;
  if (jvmti_->GetStackTrace(nullptr, 0, depth, frames.data(), &count) != JVMTI_ERROR_NONE) return;
  event->frames.reserve(static_cast<size_t>(count));
  for (jint i = 0; i < count; ++i) {
    event->frames.push_back(
        StackFrame{reinterpret_cast<uint64_t>(frames[i].method), static_cast<int64_t>(frames[i].location)});
  }
}

void MonitorTracker::contended_enter(JNIEnv* jni, jthread thread, jobject object) {
  uint64_t now_ns = monotonic_ns();
  uint64_t id = thread_id(thread);
  if (id == 0) {
    uint64_t stamps = load_stamps();
    store_stamps((stamps & ~kEnterHalf) | kStampSet | ((now_ns / 1000u) & kStampMask));
    return;
  }
  ContentionEvent event;
  event.kind = ContentionEvent::Kind::kEnter;
  event.thread_object_id = id;
  event.at_ns = now_ns;
  event.signature = signature_of(jni, object);
  take_stack(&event);
  contention_.push(std::move(event));
}

void MonitorTracker::contended_entered(JNIEnv* jni, jthread thread, jobject object) {
  uint64_t now_ns = monotonic_ns();
  uint64_t id = thread_id(thread);
  ContentionEvent event;
  if (id != 0) {
    // The thread holds the lock now: as little as possible before it goes on.
    event.kind = ContentionEvent::Kind::kEntered;
    event.thread_object_id = id;
    event.at_ns = now_ns;
    contention_.push(std::move(event));
    return;
  }
  uint64_t stamps = load_stamps();
  if ((stamps & kStampSet) == 0) return;  // the enter came before the events were enabled
  store_stamps(stamps & ~kEnterHalf);
  event.waited_ns = ((now_ns / 1000u - stamps) & kStampMask) * 1000u;
  event.signature = signature_of(jni, object);
  take_stack(&event);
  contention_.push(std::move(event));
}

void MonitorTracker::wait(JNIEnv* jni, jthread thread, jobject object, jlong timeout_ms) {
  uint64_t now_ms = monotonic_ms();
  uint64_t stamps = load_stamps();
  store_stamps((stamps & kEnterHalf) | ((kStampSet | (now_ms & kStampMask)) << 32));
  LifecycleEvent event;
  event.kind = LifecycleEvent::Kind::kMonitorWait;
  event.object_id = thread_id(thread);
  event.value = timeout_ms;
  event.text = signature_of(jni, object);
  if (event.object_id != 0 && object != nullptr) event.handle = jni->NewWeakGlobalRef(object);
  context_.lifecycle->push(std::move(event));
}

void MonitorTracker::waited(JNIEnv* jni, jthread thread, jobject object) {
  uint64_t now_ms = monotonic_ms();
  uint64_t stamps = load_stamps();
  uint64_t started = stamps >> 32;
  store_stamps(stamps & kEnterHalf);
  LifecycleEvent event;
  event.kind = LifecycleEvent::Kind::kMonitorWaited;
  event.object_id = thread_id(thread);
  // A wait that began before the events were enabled has no stamp: its time is unknown, 0.
  event.value = (started & kStampSet) != 0 ? static_cast<int64_t>((now_ms - started) & kStampMask) : 0;
  event.text = signature_of(jni, object);
  context_.lifecycle->push(std::move(event));
}

void MonitorTracker::apply(JNIEnv* jni, LifecycleEvent& event) {
  ProfileWriter& writer = *context_.writer;
  uint32_t serial = event.object_id == 0 ? 0 : writer.threads().serial_of_object_id(event.object_id);
  ++wait_events_;
  if (event.object_id != 0) {
    auto found = waiting_on_.find(event.object_id);
    if (found != waiting_on_.end()) {
      jni->DeleteWeakGlobalRef(found->second);
      waiting_on_.erase(found);
    }
  }
  if (event.kind == LifecycleEvent::Kind::kMonitorWait) {
    if (event.handle != nullptr) waiting_on_[event.object_id] = static_cast<jweak>(event.handle);
    event.handle = nullptr;
    writer.output().monitor_wait(event.text, event.value, serial);
  } else {
    writer.output().monitor_waited(event.text, event.value, serial);
  }
}

size_t MonitorTracker::drain(JNIEnv*) {
  ProfileWriter& writer = *context_.writer;
  auto add = [&](const ContentionEvent& enter, uint64_t waited_ns) {
    uint32_t serial = enter.thread_object_id == 0 ? 0 : writer.threads().serial_of_object_id(enter.thread_object_id);
    uint32_t trace = writer.intern_trace(serial, enter.frames);
    times_.add(trace, enter.signature, waited_ns);
    ++contended_events_;
  };
  return contention_.drain([&](ContentionEvent& event) {
    switch (event.kind) {
      case ContentionEvent::Kind::kComplete:
        add(event, event.waited_ns);
        break;
      case ContentionEvent::Kind::kEnter:
        entering_[event.thread_object_id] = std::move(event);
        break;
      case ContentionEvent::Kind::kEntered: {
        // Without its kEnter (the thread blocked before the events were enabled) it is not counted.
        auto found = entering_.find(event.thread_object_id);
        if (found == entering_.end()) break;
        add(found->second, event.at_ns - found->second.at_ns);
        entering_.erase(found);
        break;
      }
    }
  });
}

void MonitorTracker::write_report(ReportContext& report) {
  write_monitor_dump(report.jni);
  write_monitor_time_section(*context_.writer, times_.take_report(context_.options->cutoff), std::time(nullptr));
}

void MonitorTracker::write_monitor_dump(JNIEnv* jni) {
  ProfileWriter& writer = *context_.writer;
  jint count = 0;
  jthread* threads = nullptr;
  if (jvmti_->GetAllThreads(&count, &threads) != JVMTI_ERROR_NONE) count = 0;
  jvmti::ReturnedRefs<jthread> held(jvmti_, jni, threads, count, 16);
  std::vector<DumpThreadRow> rows = dump_threads(jni, threads, count);
  std::vector<MonitorDumpMonitor> monitor_rows;
  for (jobject monitor : dump_monitors(jni, rows)) {
    monitor_rows.push_back(describe_monitor(jni, monitor));
    jni->DeleteGlobalRef(monitor);
  }

  std::vector<MonitorDumpThread> dump_rows;
  dump_rows.reserve(rows.size());
  for (const DumpThreadRow& row : rows) {
    writer.write_trace(row.trace);
    dump_rows.push_back({row.serial, row.trace, static_cast<uint32_t>(row.state)});
  }
  std::string_view note;
  if (!(owned_info_ && contended_info_)) note = context_.attached ? kNoMonitorsAttachedNote : kNoMonitorsNote;
  writer.output().monitor_dump(note, dump_rows, monitor_rows);
}

// Threads first: a thread not announced yet is announced now, before the section begins, so that
// its THREAD START precedes the dump that names it. In serial order.
std::vector<MonitorTracker::DumpThreadRow> MonitorTracker::dump_threads(JNIEnv* jni, jthread* threads, jint count) {
  ProfileWriter& writer = *context_.writer;
  std::vector<DumpThreadRow> rows;
  int depth = context_.current_depth();
  std::vector<jvmtiFrameInfo> frames(static_cast<size_t>(std::max(depth, 1)));
  std::vector<StackFrame> stack;
  for (jint i = 0; i < count; ++i) {
    uint64_t id = context_.threads->announce(jni, threads[i]);
    uint32_t serial = id == 0 ? 0 : writer.threads().serial_of_object_id(id);
    if (serial == 0) continue;
    DumpThreadRow row;
    row.serial = serial;
    row.thread = threads[i];
    if (jvmti_->GetThreadState(threads[i], &row.state) != JVMTI_ERROR_NONE) row.state = 0;
    stack.clear();
    jint taken = 0;
    if (depth > 0 && jvmti_->GetStackTrace(threads[i], 0, depth, frames.data(), &taken) == JVMTI_ERROR_NONE) {
      for (jint f = 0; f < taken; ++f) {
        stack.push_back(StackFrame{reinterpret_cast<uint64_t>(frames[f].method),
                                   static_cast<int64_t>(frames[f].location)});
      }
    }
    row.trace = writer.intern_trace(serial, stack);
    rows.push_back(row);
  }
  std::sort(rows.begin(), rows.end(), [](const DumpThreadRow& a, const DumpThreadRow& b) { return a.serial < b.serial; });
  return rows;
}

// Then the monitors (global references, the caller deletes them): those the threads own, in
// thread order, then those they wait for that nobody listed yet (a monitor only waited on is owned
// by nobody).
std::vector<jobject> MonitorTracker::dump_monitors(JNIEnv* jni, const std::vector<DumpThreadRow>& rows) {
  std::vector<jobject> monitors;
  auto add_monitor = [&](jobject object) {
    if (object == nullptr) return;
    for (jobject known : monitors) {
      if (jni->IsSameObject(known, object)) {
        jni->DeleteLocalRef(object);
        return;
      }
    }
    jobject global = jni->NewGlobalRef(object);
    jni->DeleteLocalRef(object);
    if (global != nullptr) monitors.push_back(global);
  };
  if (owned_info_) {
    for (const DumpThreadRow& row : rows) {
      jint owned = 0;
      jobject* objects = nullptr;
      if (jvmti_->GetOwnedMonitorInfo(row.thread, &owned, &objects) != JVMTI_ERROR_NONE) continue;
      jvmti::LocalFrame planned(jni, owned + 8);  // for the references the call made (jvmti_support.h)
      for (jint m = 0; m < owned; ++m) add_monitor(objects[m]);
      jvmti_->Deallocate(reinterpret_cast<unsigned char*>(objects));
    }
  }
  if (contended_info_) {
    for (const DumpThreadRow& row : rows) {
      jobject object = nullptr;
      if (jvmti_->GetCurrentContendedMonitor(row.thread, &object) == JVMTI_ERROR_NONE) add_monitor(object);
      if ((row.state & JVMTI_THREAD_STATE_IN_OBJECT_WAIT) == 0) continue;
      auto waited = waiting_on_.find(thread_id(row.thread));
      if (waited != waiting_on_.end()) add_monitor(jni->NewLocalRef(waited->second));
    }
  }
  return monitors;
}

// One monitor's row: its class, owner, entry count, and the threads waiting to enter it and to be
// notified.
MonitorDumpMonitor MonitorTracker::describe_monitor(JNIEnv* jni, jobject monitor) {
  ProfileWriter& writer = *context_.writer;
  MonitorDumpMonitor row;
  row.signature = signature_of(jni, monitor);
  auto serial_of = [&](jthread thread) {
    uint64_t id = thread_id(thread);
    return id == 0 ? 0u : writer.threads().serial_of_object_id(id);
  };
  jvmtiMonitorUsage usage{};
  if (!usage_info_ || jvmti_->GetObjectMonitorUsage(monitor, &usage) != JVMTI_ERROR_NONE) return row;
  jvmti::LocalFrame planned(jni, usage.waiter_count + usage.notify_waiter_count + 8);
  row.owner = serial_of(usage.owner);
  row.entry_count = static_cast<uint32_t>(usage.entry_count);
  for (jint w = 0; w < usage.notify_waiter_count; ++w) row.to_be_notified.push_back(serial_of(usage.notify_waiters[w]));
  // JDK 17-22 list the threads in Object.wait among `waiters` too (fixed in 23): a thread waiting
  // to be notified is not waiting to enter.
  for (jint w = 0; w < usage.waiter_count; ++w) {
    bool notified_list = false;
    for (jint n = 0; n < usage.notify_waiter_count && !notified_list; ++n) {
      notified_list = jni->IsSameObject(usage.waiters[w], usage.notify_waiters[n]);
    }
    if (!notified_list) row.to_enter.push_back(serial_of(usage.waiters[w]));
  }
  if (usage.owner != nullptr) jni->DeleteLocalRef(usage.owner);
  for (jint w = 0; w < usage.waiter_count; ++w) jni->DeleteLocalRef(usage.waiters[w]);
  for (jint w = 0; w < usage.notify_waiter_count; ++w) jni->DeleteLocalRef(usage.notify_waiters[w]);
  jvmti_->Deallocate(reinterpret_cast<unsigned char*>(usage.waiters));
  jvmti_->Deallocate(reinterpret_cast<unsigned char*>(usage.notify_waiters));
  return row;
}

void MonitorTracker::stop(JNIEnv*) {
  if (events_) {
    for (jvmtiEvent event : kEvents) jvmti_->SetEventNotificationMode(JVMTI_DISABLE, event, nullptr);
  }
  if (context_.options->diagnostics()) {
    ContentionQueueStats queued = contention_.stats();
    write_stderr("fasthprof: monitors: " + std::to_string(contended_events_) + " contended enters, " +
                 std::to_string(wait_events_) + " WAIT/WAITED lines; contention queue deepest " +
                 std::to_string(queued.deepest) + ", " + std::to_string(queued.waits) + " waits for the writer, " +
                 std::to_string(queued.forced) + " queued past the bound\n");
  }
}

}  // namespace fasthprof
