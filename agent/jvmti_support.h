// Small helpers over JVMTI/JNI that every part of the agent uses: error names, memory returned by
// JVMTI, thread descriptions, agent threads, and the agent's error lines.
#pragma once

#include <jvmti.h>

#include <string>
#include <string_view>

#include "base/stderr_line.h"

namespace fasthprof::jvmti {

// "JVMTI_ERROR_WRONG_PHASE(112)"-style name for messages.
std::string error_name(jvmtiError error);

// Copies a JVMTI-allocated string and gives its memory back; nullptr becomes "".
std::string take_string(jvmtiEnv* jvmti, char* text);

// Clears the thread's pending exception, if any; true when there was one. A JNI call that fails
// leaves one, which must be cleared before the next JNI call. Any Java thread.
bool clear_exception(JNIEnv* jni);

struct ThreadNames {
  std::string name;
  std::string group;
  std::string parent_group;
};

// Name, group and parent group of a thread (empty strings where the VM has none). Deletes the
// local references it creates. Any Java thread, live phase.
bool describe_thread(jvmtiEnv* jvmti, JNIEnv* jni, jthread thread, ThreadNames* names);

// Local references and -Xcheck:jni. Checked JNI warns ("JNI local refs: 441, exceeds capacity:
// 32") when, after a JNI call, the thread's live local references (every frame's, counted
// together) outnumber what its current frame planned for: 32 for a new frame, or what
// PushLocalFrame / EnsureLocalCapacity asked for plus the references already live then.

// A JNI local frame with room for `capacity` references, for one step of the agent: popping it
// deletes every reference made in it. If the VM refuses (out of memory) the references stay in the
// enclosing frame and the step runs all the same. Does nothing with a null JNIEnv. Any Java thread.
class LocalFrame {
 public:
  LocalFrame(JNIEnv* jni, jint capacity);
  ~LocalFrame();
  LocalFrame(const LocalFrame&) = delete;
  LocalFrame& operator=(const LocalFrame&) = delete;

 private:
  JNIEnv* jni_;
  bool pushed_ = false;
};

// The array of local references that a JVMTI call returned (GetLoadedClasses, GetAllThreads: one
// per element, made in the current frame before anyone could plan for them). Taking it pushes a
// frame planned for them plus `capacity` references of the caller's own; dropping it deletes
// them, pops that frame (and so the caller's references made in it) and deallocates the array.
// The caller must not delete the elements itself. Does nothing with a null JNIEnv but deallocate.
template <typename Ref>
class ReturnedRefs {
 public:
  ReturnedRefs(jvmtiEnv* jvmti, JNIEnv* jni, Ref* refs, jint count, jint capacity)
      : jvmti_(jvmti), jni_(jni), refs_(refs), count_(count), frame_(jni, count + capacity) {}
  ~ReturnedRefs() {
    // Deleted while the planned frame is on top, so that no JNI call sees them unplanned.
    if (jni_ != nullptr) {
      for (jint i = 0; i < count_; ++i) {
        if (refs_[i] != nullptr) jni_->DeleteLocalRef(refs_[i]);
      }
    }
    if (refs_ != nullptr) jvmti_->Deallocate(reinterpret_cast<unsigned char*>(refs_));
  }
  ReturnedRefs(const ReturnedRefs&) = delete;
  ReturnedRefs& operator=(const ReturnedRefs&) = delete;

 private:
  jvmtiEnv* jvmti_;
  JNIEnv* jni_;
  Ref* refs_;
  jint count_;
  LocalFrame frame_;  // popped after the loop above, being the last member
};

// Plans for a JVMTI callback's JNI calls. An event can come from inside a JNI call of the agent's
// own (an allocation while a heap dump builds its array of classes), with hundreds of references
// live in the frames below, which checked JNI counts against the event's new frame too. Call it
// before the callback's first JNI call; it costs one JNI call.
void plan_callback_local_refs(JNIEnv* jni);

// Starts a daemon Java thread named `name` in the "system" thread group that runs body(arg), the
// way the original agent's threads ran. Returns false with *error set when it cannot.
bool start_agent_thread(jvmtiEnv* jvmti, JNIEnv* jni, const char* name, jvmtiStartFunction body,
                        void* arg, std::string* error);

// `HPROF ERROR: <message>` on stderr, in one write.
void print_error(const std::string& message);

// Whether the heap is managed by a collector that collects only on its own concurrent threads
// (ZGC, Shenandoah), told by their thread names in /proc/self/task. HotSpot stops those threads
// before it posts VMDeath, so a ForceGarbageCollection at VM death would wait forever. Call it
// while the VM is live.
bool collector_runs_on_own_threads();

// The VM's major version (17, 21, 25, ...) from java.vm.specification.version, or 0.
int vm_major_version(jvmtiEnv* jvmti);

// Runs work(data) once on the VM thread at a safepoint, every Java thread held: in the first
// callback of a JVMTI FollowReferences (a root, before the walk marked any object), which is then
// aborted. `work` may use no JNI, no JVMTI and no lock a Java thread may hold. *ran says whether it
// ran; the error is FollowReferences' (needs can_tag_objects).
jvmtiError run_at_safepoint(jvmtiEnv* jvmti, void (*work)(void* data), void* data, bool* ran);

}  // namespace fasthprof::jvmti
