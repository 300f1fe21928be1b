#include "thread_tracker.h"

#include <string_view>

#include "base/ids.h"
#include "jvmti_support.h"
#include "profile_owner.h"

namespace fasthprof {
namespace {

// A thread is recorded once its object carries a thread ID; any other tag (allocation tracking
// tags every new Thread with heap=all, a heap dump tags what it meets) does not count.
bool recorded(jlong tag) {
  return registry_object_index(RegistryObjectKind::kThread, static_cast<uint64_t>(tag)) != 0;
}

// "name\0group\0parent group" (Java names in modified UTF-8 never hold a zero byte).
ThreadDescription split_names(std::string_view names) {
  ThreadDescription description;
  size_t first = names.find('\0');
  size_t second = first == std::string_view::npos ? first : names.find('\0', first + 1);
  description.name = names.substr(0, first);
  if (first != std::string_view::npos) description.group = names.substr(first + 1, second - first - 1);
  if (second != std::string_view::npos) description.parent_group = names.substr(second + 1);
  return description;
}

}  // namespace

uint64_t ThreadTracker::announce(JNIEnv* jni, jthread thread) {
  jlong tag = 0;
  if (jvmti_->GetTag(thread, &tag) != JVMTI_ERROR_NONE) return 0;
  if (recorded(tag)) return static_cast<uint64_t>(tag);
  jvmti::ThreadNames names;
  if (!jvmti::describe_thread(jvmti_, jni, thread, &names)) return 0;
  std::string packed;
  packed.reserve(names.name.size() + names.group.size() + names.parent_group.size() + 2);
  packed.append(names.name).append(1, '\0').append(names.group).append(1, '\0').append(names.parent_group);
  uint64_t object_id = claims_.claim();
  jvmti_->SetTag(thread, static_cast<jlong>(object_id));
  if (ProfileOwner::is_current_thread()) {
    start(jni, thread, object_id, packed);
  } else {
    LifecycleEvent event;
    event.kind = LifecycleEvent::Kind::kThreadStart;
    event.object_id = object_id;
    event.handle = jni->NewGlobalRef(thread);
    event.text = std::move(packed);
    queue_.push(std::move(event));
  }
  return object_id;
}

void ThreadTracker::start(JNIEnv*, jthread thread, uint64_t object_id, const std::string& names) {
  // Announced twice at once (ThreadStart and the enumeration): the ID the object kept wins.
  jlong tag = 0;
  if (jvmti_->GetTag(thread, &tag) != JVMTI_ERROR_NONE || static_cast<uint64_t>(tag) != object_id) return;
  writer_.thread_started(object_id, split_names(names));
}

void ThreadTracker::ended(JNIEnv* jni, jthread thread) {
  jlong tag = 0;
  if (jvmti_->GetTag(thread, &tag) != JVMTI_ERROR_NONE || !recorded(tag)) return;
  LifecycleEvent event;
  event.kind = LifecycleEvent::Kind::kThreadEnd;
  event.object_id = static_cast<uint64_t>(tag);
  if (ProfileOwner::is_current_thread()) {
    apply(jni, event);
  } else {
    queue_.push(std::move(event));
  }
}

void ThreadTracker::announce_existing(JNIEnv* jni) {
  jint count = 0;
  jthread* threads = nullptr;
  if (jvmti_->GetAllThreads(&count, &threads) != JVMTI_ERROR_NONE) return;
  jvmti::ReturnedRefs<jthread> held(jvmti_, jni, threads, count, 4);
  for (jint i = 0; i < count; ++i) announce(jni, threads[i]);
}

void ThreadTracker::apply(JNIEnv* jni, LifecycleEvent& event) {
  if (event.kind == LifecycleEvent::Kind::kThreadEnd) {
    uint32_t serial = writer_.threads().serial_of_object_id(event.object_id);
    if (serial != 0) writer_.thread_ended(serial);
    return;
  }
  auto thread = static_cast<jthread>(event.handle);
  if (thread == nullptr) return;
  start(jni, thread, event.object_id, event.text);
  jni->DeleteGlobalRef(thread);
  event.handle = nullptr;
}

}  // namespace fasthprof
