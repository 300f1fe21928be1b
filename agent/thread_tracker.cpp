#include "thread_tracker.h"

#include "ids.h"
#include "jvmti_support.h"

namespace fasthprof {
namespace {

// A thread is recorded once its object carries a thread ID; any other tag (allocation tracking
// tags every new Thread with heap=all, a heap dump tags what it meets) does not count.
bool recorded(jlong tag) {
  return registry_object_index(RegistryObjectKind::kThread, static_cast<uint64_t>(tag)) != 0;
}

}  // namespace

void ThreadTracker::thread_seen(JNIEnv* jni, jthread thread) {
  jlong tag = 0;
  if (jvmti_->GetTag(thread, &tag) != JVMTI_ERROR_NONE || recorded(tag)) return;
  jvmti::ThreadNames names;
  if (!jvmti::describe_thread(jvmti_, jni, thread, &names)) return;

  std::lock_guard<OutputMutex> lock(output_mutex_);
  // Another path (event or enumeration) may have recorded it while we asked for its names.
  if (jvmti_->GetTag(thread, &tag) != JVMTI_ERROR_NONE || recorded(tag)) return;
  ThreadIdentity identity = output_.thread_started({names.name, names.group, names.parent_group});
  jvmti_->SetTag(thread, static_cast<jlong>(identity.object_id));
}

void ThreadTracker::thread_ended(jthread thread) {
  jlong tag = 0;
  if (jvmti_->GetTag(thread, &tag) != JVMTI_ERROR_NONE || tag == 0) return;
  std::lock_guard<OutputMutex> lock(output_mutex_);
  const ThreadInfo* info = output_.threads().find_by_object_id(static_cast<uint64_t>(tag));
  if (info != nullptr) output_.thread_ended(info->serial);
}

void ThreadTracker::record_existing_threads(JNIEnv* jni) {
  jint count = 0;
  jthread* threads = nullptr;
  if (jvmti_->GetAllThreads(&count, &threads) != JVMTI_ERROR_NONE) return;
  jvmti::ReturnedRefs<jthread> held(jvmti_, jni, threads, count, 4);
  for (jint i = 0; i < count; ++i) thread_seen(jni, threads[i]);
}

uint32_t ThreadTracker::serial_for_tag(jlong tag) {
  std::lock_guard<OutputMutex> lock(output_mutex_);
  const ThreadInfo* info = output_.threads().find_by_object_id(static_cast<uint64_t>(tag));
  return info == nullptr ? 0 : info->serial;
}

}  // namespace fasthprof
