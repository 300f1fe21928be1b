// monitor=y (docs/compatibility.md "monitor=y", docs/decisions.md): contended monitor enters,
// Object.wait calls, and at each report MONITOR DUMP and MONITOR TIME.
//
// Events (enabled only with monitor=y; they fire only on contention and waits, so code that locks
// without contending pays nothing):
//   MonitorContendedEnter    takes the stack and the monitor's class while the thread is about to
//                            block, and queues them with the time (runtime/queues/contention_queue.h)
//   MonitorContendedEntered  queues the time; the owner pairs the two, interns the trace and adds
//                            the time to MONITOR TIME's table (monitor_time_table.h)
//   MonitorWait / Waited     queue the WAIT: / WAITED: line into the LifecycleQueue, so that the
//                            owner writes it in the file's order among THREAD START/END
// No callback takes a lock another thread holds across a VM call: the queues' mutexes are held to
// append only.
//
// Times that a callback keeps for the next one (the wait's start; a contended enter's start for a
// thread the agent does not know, whose enter is queued whole at the end) live in JVMTI
// thread-local storage, not in a C++ thread_local: on JDK 24+ a virtual thread blocked on a monitor
// leaves its carrier and may come back on another one. They need no memory of their own: one
// 64-bit word holds both, the wait's start in ms and the enter's in µs, each in 31 bits compared
// modulo their width (24 days and 35 minutes).
//
// MONITOR DUMP (owner, in a report): every live platform thread with its trace and state, then
// every monitor owned by one of them (GetOwnedMonitorInfo) or that one of them waits for
// (GetCurrentContendedMonitor, and on JDK 23+ the object of the thread's last WAIT: a monitor only
// waited on, owned by nobody, is found this way),
// with GetObjectMonitorUsage's owner, entry count and waiters. A JVM that the agent was attached to
// while running grants neither query (measured on 17 and 25): the dump then lists the threads only,
// and its first line says why.
#pragma once

#include <jvmti.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "feature.h"
#include "queues/contention_queue.h"
#include "queues/lifecycle_queue.h"
#include "sections/monitor_time_table.h"

namespace fasthprof {

class MonitorTracker final : public Feature {
 public:
  explicit MonitorTracker(const AgentContext& context) : context_(context), jvmti_(context.jvmti) {}

  const char* dump_message() const override { return " contended monitor usage ..."; }
  void add_capabilities(jvmtiCapabilities* wanted) override;
  void start(JNIEnv* jni) override;
  size_t drain(JNIEnv* jni) override;
  void write_report(ReportContext& report) override;
  void stop(JNIEnv* jni) override;

  // ---- the profiler's callback table calls these, on the thread of the event ----------------
  void contended_enter(JNIEnv* jni, jthread thread, jobject object);
  void contended_entered(JNIEnv* jni, jthread thread, jobject object);
  void wait(JNIEnv* jni, jthread thread, jobject object, jlong timeout_ms);
  void waited(JNIEnv* jni, jthread thread, jobject object);

  // The owner, applying a kMonitorWait / kMonitorWaited event from the LifecycleQueue.
  void apply(JNIEnv* jni, LifecycleEvent& event);

 private:
  uint64_t load_stamps();
  void store_stamps(uint64_t stamps);
  std::string signature_of(JNIEnv* jni, jobject object);
  // The calling thread's stack, cut to depth=, into event->frames.
  void take_stack(ContentionEvent* event);
  uint64_t thread_id(jthread thread);
  // MONITOR DUMP: every thread (state, stack), then every monitor they own or wait for.
  struct DumpThreadRow {
    uint32_t serial = 0;
    uint32_t trace = 0;
    jint state = 0;
    jthread thread = nullptr;
  };
  void write_monitor_dump(JNIEnv* jni);
  std::vector<DumpThreadRow> dump_threads(JNIEnv* jni, jthread* threads, jint count);
  std::vector<jobject> dump_monitors(JNIEnv* jni, const std::vector<DumpThreadRow>& rows);
  MonitorDumpMonitor describe_monitor(JNIEnv* jni, jobject monitor);

  AgentContext context_;
  jvmtiEnv* jvmti_;
  bool owned_info_ = false;      // can_get_owned_monitor_info granted
  bool contended_info_ = false;  // can_get_current_contended_monitor granted
  bool usage_info_ = false;      // can_get_monitor_info granted
  bool events_ = false;          // the four events enabled
  ContentionQueue contention_;
  MonitorTimeTable times_;       // the owner's
  // The owner's: thread object ID -> weak reference to the object that thread is in Object.wait
  // on, from the WAIT/WAITED events. JDK 23+ no longer answers GetCurrentContendedMonitor for a
  // thread in Object.wait (JDK-8256314), so a monitor only waited on is found through this.
  std::unordered_map<uint64_t, jweak> waiting_on_;
  // The owner's: thread object ID -> its kEnter, until its kEntered arrives.
  std::unordered_map<uint64_t, ContentionEvent> entering_;
  uint64_t contended_events_ = 0, wait_events_ = 0;  // the owner's, for verbose figures
};

}  // namespace fasthprof
