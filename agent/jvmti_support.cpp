#include "jvmti_support.h"

#include <dirent.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/proc_task.h"

namespace fasthprof::jvmti {

std::string error_name(jvmtiError error) {
  // GetErrorName needs an environment; messages are built where one may already be gone.
  return "JVMTI error " + std::to_string(static_cast<int>(error));
}

std::string take_string(jvmtiEnv* jvmti, char* text) {
  if (text == nullptr) return {};
  std::string copy(text);
  jvmti->Deallocate(reinterpret_cast<unsigned char*>(text));
  return copy;
}

bool clear_exception(JNIEnv* jni) {
  if (!jni->ExceptionCheck()) return false;
  jni->ExceptionClear();
  return true;
}

LocalFrame::LocalFrame(JNIEnv* jni, jint capacity) : jni_(jni) {
  if (jni_ == nullptr) return;
  pushed_ = jni_->PushLocalFrame(capacity) == JNI_OK;
  if (!pushed_ && jni_->ExceptionCheck()) jni_->ExceptionClear();
}

LocalFrame::~LocalFrame() {
  if (pushed_) jni_->PopLocalFrame(nullptr);
}

void plan_callback_local_refs(JNIEnv* jni) {
  // The event's frame plans for 32; checked JNI raises a plan only for a larger request, and then
  // to the request plus every reference live at that moment.
  constexpr jint kAboveNewFramePlan = 64;
  if (jni->EnsureLocalCapacity(kAboveNewFramePlan) != JNI_OK && jni->ExceptionCheck()) jni->ExceptionClear();
}

bool describe_thread(jvmtiEnv* jvmti, JNIEnv* jni, jthread thread, ThreadNames* names) {
  jvmtiThreadInfo info{};
  if (jvmti->GetThreadInfo(thread, &info) != JVMTI_ERROR_NONE) return false;
  names->name = take_string(jvmti, info.name);
  names->group.clear();
  names->parent_group.clear();
  if (info.thread_group != nullptr) {
    jvmtiThreadGroupInfo group{};
    if (jvmti->GetThreadGroupInfo(info.thread_group, &group) == JVMTI_ERROR_NONE) {
      names->group = take_string(jvmti, group.name);
      if (group.parent != nullptr) {
        jvmtiThreadGroupInfo parent{};
        if (jvmti->GetThreadGroupInfo(group.parent, &parent) == JVMTI_ERROR_NONE) {
          names->parent_group = take_string(jvmti, parent.name);
        }
        jni->DeleteLocalRef(group.parent);
      }
    }
    jni->DeleteLocalRef(info.thread_group);
  }
  if (info.context_class_loader != nullptr) jni->DeleteLocalRef(info.context_class_loader);
  return true;
}

bool start_agent_thread(jvmtiEnv* jvmti, JNIEnv* jni, const char* name, jvmtiStartFunction body,
                        void* arg, std::string* error) {
  jint group_count = 0;
  jthreadGroup* groups = nullptr;
  jobject system_group = nullptr;
  if (jvmti->GetTopThreadGroups(&group_count, &groups) == JVMTI_ERROR_NONE) {
    if (group_count > 0) system_group = groups[0];
    for (jint i = 1; i < group_count; ++i) jni->DeleteLocalRef(groups[i]);
    jvmti->Deallocate(reinterpret_cast<unsigned char*>(groups));
  }
  // Each call that fails leaves an exception, which must be cleared before the next JNI call.
  auto failed = [jni] { return clear_exception(jni); };
  jclass thread_class = jni->FindClass("java/lang/Thread");
  jmethodID constructor = nullptr;
  if (!failed() && thread_class != nullptr) {
    constructor = system_group != nullptr
                      ? jni->GetMethodID(thread_class, "<init>", "(Ljava/lang/ThreadGroup;Ljava/lang/String;)V")
                      : jni->GetMethodID(thread_class, "<init>", "(Ljava/lang/String;)V");
    if (failed()) constructor = nullptr;
  }
  jstring thread_name = constructor == nullptr ? nullptr : jni->NewStringUTF(name);
  if (failed()) thread_name = nullptr;
  jthread thread = nullptr;
  if (constructor != nullptr && thread_name != nullptr) {
    thread = system_group != nullptr ? jni->NewObject(thread_class, constructor, system_group, thread_name)
                                     : jni->NewObject(thread_class, constructor, thread_name);
    if (failed()) thread = nullptr;
  }
  bool started = false;
  if (thread == nullptr) {
    *error = std::string("cannot create the Java thread object for \"") + name + "\"";
  } else {
    jvmtiError result = jvmti->RunAgentThread(thread, body, arg, JVMTI_THREAD_MAX_PRIORITY);
    started = result == JVMTI_ERROR_NONE;
    if (!started) *error = std::string("cannot start \"") + name + "\": " + error_name(result);
  }
  if (thread != nullptr) jni->DeleteLocalRef(thread);
  if (thread_name != nullptr) jni->DeleteLocalRef(thread_name);
  if (thread_class != nullptr) jni->DeleteLocalRef(thread_class);
  if (system_group != nullptr) jni->DeleteLocalRef(system_group);
  return started;
}

void print_error(const std::string& message) { write_stderr("HPROF ERROR: " + message + "\n"); }

bool collector_runs_on_own_threads() {
  DIR* tasks = opendir("/proc/self/task");
  if (tasks == nullptr) return false;
  bool found = false;
  while (dirent* entry = readdir(tasks)) {
    if (entry->d_name[0] == '.') continue;
    std::string path = std::string("/proc/self/task/") + entry->d_name + "/comm";
    FILE* file = std::fopen(path.c_str(), "re");
    if (file == nullptr) continue;
    char name[64] = {};
    if (std::fgets(name, sizeof(name), file) != nullptr) found = is_concurrent_collector_thread(name);
    std::fclose(file);
    if (found) break;
  }
  closedir(tasks);
  return found;
}

int vm_major_version(jvmtiEnv* jvmti) {
  char* value = nullptr;
  if (jvmti->GetSystemProperty("java.vm.specification.version", &value) != JVMTI_ERROR_NONE) {
    return 0;
  }
  std::string version = take_string(jvmti, value);
  // "1.8" style versions predate every VM fasthprof supports.
  if (version.rfind("1.", 0) == 0) return 8;
  return std::atoi(version.c_str());
}

namespace {

struct SafepointWork {
  void (*work)(void*);
  void* data;
  bool ran = false;
};

jint JNICALL run_on_first_reference(jvmtiHeapReferenceKind, const jvmtiHeapReferenceInfo*, jlong, jlong, jlong,
                                    jlong*, jlong*, jint, void* user_data) {
  auto* request = static_cast<SafepointWork*>(user_data);
  if (!request->ran) {
    request->ran = true;
    request->work(request->data);
  }
  return JVMTI_VISIT_ABORT;
}

}  // namespace

jvmtiError run_at_safepoint(jvmtiEnv* jvmti, void (*work)(void* data), void* data, bool* ran) {
  SafepointWork request{work, data};
  jvmtiHeapCallbacks callbacks{};
  callbacks.heap_reference_callback = &run_on_first_reference;
  jvmtiError error = jvmti->FollowReferences(0, nullptr, nullptr, &callbacks, &request);
  *ran = request.ran;
  return error;
}

}  // namespace fasthprof::jvmti
