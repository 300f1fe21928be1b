// The floor of exact allocation tracking on this JVM (docs/performance.md §2): a JVMTI agent whose
// SampledObjectAlloc callback (interval 0, every allocation) takes the stack trace at `depth` and
// sets a tag on the object, and does nothing else. bench/alloc_overhead_bench.py runs it beside
// fasthprof heap=sites to print fasthprof / floor.
//
// Options (comma separated): depth=N (default 4), stack=n (no GetStackTrace), tag=n (no SetTag),
// classtag=y (also GetTag on the object's class, what fasthprof pays to identify the class),
// sample=N (SetHeapSamplingInterval(N) instead of 0), event=n (no SampledObjectAlloc at all: the
// object is tagged by TagCost's native call instead, what a tag from injected code would cost;
// bench/tag_cost_bench.py).
#include <jvmti.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

jint depth = 4;
bool take_stack = true;
bool set_tag = true;
bool class_tag = false;
jint interval = 0;
bool events = true;
jvmtiEnv* agent_jvmti = nullptr;
std::atomic<jlong> next_tag{1};

bool option(const std::string& all, const char* key, std::string* value) {
  std::string wanted = std::string(key) + "=";
  size_t at = 0;
  while (at <= all.size()) {
    size_t end = all.find(',', at);
    if (end == std::string::npos) end = all.size();
    std::string item = all.substr(at, end - at);
    if (item.rfind(wanted, 0) == 0) {
      *value = item.substr(wanted.size());
      return true;
    }
    at = end + 1;
  }
  return false;
}

void JNICALL on_alloc(jvmtiEnv* jvmti, JNIEnv*, jthread, jobject object, jclass klass, jlong) {
  if (take_stack) {
    jvmtiFrameInfo frames[64];
    jint count = 0;
    jvmti->GetStackTrace(nullptr, 0, depth, frames, &count);
  }
  if (class_tag) {
    jlong tag = 0;
    jvmti->GetTag(klass, &tag);
  }
  if (set_tag) jvmti->SetTag(object, next_tag.fetch_add(1, std::memory_order_relaxed));
}

void JNICALL on_vm_init(jvmtiEnv* jvmti, JNIEnv*, jthread) {
  if (events) jvmti->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_SAMPLED_OBJECT_ALLOC, nullptr);
}

}  // namespace

// TagCost.tag(Object): one JNI call per object, tagging it when tag= is on (the JVM finds a native
// method in an agent's library too).
extern "C" JNIEXPORT void JNICALL Java_TagCost_tag(JNIEnv*, jclass, jobject object) {
  if (set_tag) agent_jvmti->SetTag(object, next_tag.fetch_add(1, std::memory_order_relaxed));
}

extern "C" JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM* vm, char* options, void*) {
  std::string all = options != nullptr ? options : "";
  std::string value;
  if (option(all, "depth", &value)) depth = std::min(64, std::max(0, std::atoi(value.c_str())));
  if (option(all, "stack", &value)) take_stack = value != "n";
  if (option(all, "tag", &value)) set_tag = value != "n";
  if (option(all, "classtag", &value)) class_tag = value == "y";
  if (option(all, "sample", &value)) interval = std::atoi(value.c_str());
  if (option(all, "event", &value)) events = value != "n";
  jvmtiEnv* jvmti = nullptr;
  if (vm->GetEnv(reinterpret_cast<void**>(&jvmti), JVMTI_VERSION_11) != JNI_OK) return JNI_ERR;
  agent_jvmti = jvmti;
  jvmtiCapabilities capabilities{};
  capabilities.can_generate_sampled_object_alloc_events = 1;
  capabilities.can_tag_objects = 1;
  if (jvmti->AddCapabilities(&capabilities) != JVMTI_ERROR_NONE) return JNI_ERR;
  // At load, as fasthprof does: a thread keeps the distance to its next sample drawn under the
  // interval in force, so an interval set at VMInit would let the main thread's first few hundred
  // kilobytes go unseen.
  jvmti->SetHeapSamplingInterval(interval);
  jvmtiEventCallbacks callbacks{};
  callbacks.SampledObjectAlloc = &on_alloc;
  callbacks.VMInit = &on_vm_init;
  jvmti->SetEventCallbacks(&callbacks, sizeof(callbacks));
  jvmti->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_VM_INIT, nullptr);
  return JNI_OK;
}
