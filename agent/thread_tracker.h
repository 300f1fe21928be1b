// THREAD START / THREAD END for every Java thread: those that exist when the agent goes live
// (enumerated once) and those that start later (ThreadStart events). A thread is known by the tag
// on its java.lang.Thread object, which is also its object ID in every record.
//
// Two halves (docs/ARCHITECTURE.md): the thread of the event gives the thread object its ID at
// once (ThreadStart runs on the new thread before it runs Java code, so every allocation or
// sample it makes names it) and queues the event; the profile's owner registers it and writes the
// record. On the owner itself both happen at once.
#pragma once

#include <jvmti.h>

#include "queues/lifecycle_queue.h"
#include "records/profile_writer.h"
#include "registries/thread_registry.h"

namespace fasthprof {

class ThreadTracker {
 public:
  ThreadTracker(jvmtiEnv* jvmti, ProfileWriter& writer, LifecycleQueue& queue)
      : jvmti_(jvmti), writer_(writer), queue_(queue) {}

  // The thread's object ID, giving it one and announcing the thread the first time it is seen.
  // 0 when the VM cannot describe it. Any Java thread.
  uint64_t announce(JNIEnv* jni, jthread thread);

  // The end of a known thread (ThreadEnd, on the ending thread).
  void ended(JNIEnv* jni, jthread thread);

  // Announces every live thread (GetAllThreads). Call after enabling ThreadStart, so that no
  // thread falls between the two; a thread announced twice at once (its ThreadStart and the
  // enumeration) is registered once, under the ID its object kept.
  void announce_existing(JNIEnv* jni);

  // The owner: registers a queued thread event and writes its record.
  void apply(JNIEnv* jni, LifecycleEvent& event);

 private:
  void start(JNIEnv* jni, jthread thread, uint64_t object_id, const std::string& names);

  jvmtiEnv* jvmti_;
  ProfileWriter& writer_;  // the owner's
  LifecycleQueue& queue_;
  ThreadIdClaims claims_;
};

}  // namespace fasthprof
