// Small helpers over JVMTI/JNI that every part of the agent uses: error names, memory returned by
// JVMTI, thread descriptions, agent threads, and the agent's error lines.
#pragma once

#include <jvmti.h>

#include <string>
#include <string_view>

namespace fasthprof::jvmti {

// "JVMTI_ERROR_WRONG_PHASE(112)"-style name for messages.
std::string error_name(jvmtiError error);

// Copies a JVMTI-allocated string and gives its memory back; nullptr becomes "".
std::string take_string(jvmtiEnv* jvmti, char* text);

struct ThreadNames {
  std::string name;
  std::string group;
  std::string parent_group;
};

// Name, group and parent group of a thread (empty strings where the VM has none). Deletes the
// local references it creates. Any Java thread, live phase.
bool describe_thread(jvmtiEnv* jvmti, JNIEnv* jni, jthread thread, ThreadNames* names);

// Starts a daemon Java thread named `name` in the "system" thread group that runs body(arg), the
// way the original agent's threads ran. Returns false with *error set when it cannot.
bool start_agent_thread(jvmtiEnv* jvmti, JNIEnv* jni, const char* name, jvmtiStartFunction body,
                        void* arg, std::string* error);

// text on stderr as it is, in one write (a line stays whole among other threads' lines).
void write_stderr(std::string_view text);

// `HPROF ERROR: <message>` on stderr, in one write.
void print_error(const std::string& message);

// Whether the heap is managed by a collector that collects only on its own concurrent threads
// (ZGC, Shenandoah), told by their thread names in /proc/self/task. HotSpot stops those threads
// before it posts VMDeath, so a ForceGarbageCollection at VM death would wait forever. Call it
// while the VM is live.
bool collector_runs_on_own_threads();

// The VM's major version (17, 21, 25, ...) from java.vm.specification.version, or 0.
int vm_major_version(jvmtiEnv* jvmti);

}  // namespace fasthprof::jvmti
