// THREAD START / THREAD END for every Java thread: those that exist when the agent goes live
// (enumerated once) and those that start later (ThreadStart events). A thread is known by the tag
// on its java.lang.Thread object, which is also its object ID in every record.
#pragma once

#include <jvmti.h>

#include <mutex>

#include "output_mutex.h"
#include "profile_writer.h"

namespace fasthprof {

class ThreadTracker {
 public:
  // output_mutex serializes every call on output.
  ThreadTracker(jvmtiEnv* jvmti, ProfileWriter& output, OutputMutex& output_mutex)
      : jvmti_(jvmti), output_(output), output_mutex_(output_mutex) {}

  // Records a thread the first time it is seen; later calls for it do nothing. Any Java thread.
  void thread_seen(JNIEnv* jni, jthread thread);

  // Records the end of a known thread. Called on the ending thread (ThreadEnd).
  void thread_ended(jthread thread);

  // Records every live thread (GetAllThreads). Call after enabling ThreadStart, so that no thread
  // falls between the two; duplicates are filtered by tag.
  void record_existing_threads(JNIEnv* jni);

  // Serial of a live thread's object tag, or 0.
  uint32_t serial_for_tag(jlong tag);

 private:
  jvmtiEnv* jvmti_;
  ProfileWriter& output_;
  OutputMutex& output_mutex_;
};

}  // namespace fasthprof
