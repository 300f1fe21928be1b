// How many calls of native methods a program makes, which cpu=times's injection cannot count
// (docs/cpu_times.md "Native methods"): the measurement behind the decision not to wrap them with
// SetNativeMethodPrefix. MethodEntry on every call (the program runs interpreted, so this is a
// measuring tool, not a benchmark of time); at VM death one line of totals and the natives called
// most, on stderr:
//   native-calls: calls=N java=N native=N native_early=N native_late=N
//   native-calls: top <count> <early|late> <class>.<method><descriptor>
// "early": the native's class was loaded before VMInit, when cpu=times's ClassFileLoadHook is not
// enabled yet. Such a class can only be retransformed, and retransformation may not add the
// methods a wrapper needs, so its natives could never be wrapped; "late" ones could.
#include <jvmti.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace {

struct MethodInfo {
  bool native = false;
  bool early = false;
  uint64_t calls = 0;  // natives only, under g_mutex
};

std::mutex g_mutex;
std::unordered_map<jmethodID, MethodInfo> g_methods;
std::unordered_set<jmethodID> g_early;
std::atomic<uint64_t> g_calls{0};
std::atomic<uint64_t> g_native{0};
std::atomic<uint64_t> g_native_early{0};

// Per thread: the last method seen and whether it is native, so that a run of calls of one Java
// method does not take the lock each time.
thread_local jmethodID t_last = nullptr;
thread_local bool t_last_native = false;

void JNICALL on_entry(jvmtiEnv* jvmti, JNIEnv*, jthread, jmethodID method) {
  g_calls.fetch_add(1, std::memory_order_relaxed);
  if (method == t_last && !t_last_native) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  auto [it, fresh] = g_methods.try_emplace(method);
  MethodInfo& info = it->second;
  if (fresh) {
    jboolean native = JNI_FALSE;
    jvmti->IsMethodNative(method, &native);
    info.native = native == JNI_TRUE;
    info.early = g_early.count(method) != 0;
  }
  t_last = method;
  t_last_native = info.native;
  if (!info.native) return;
  ++info.calls;
  g_native.fetch_add(1, std::memory_order_relaxed);
  if (info.early) g_native_early.fetch_add(1, std::memory_order_relaxed);
}

void JNICALL on_vm_init(jvmtiEnv* jvmti, JNIEnv*, jthread) {
  jint count = 0;
  jclass* classes = nullptr;
  if (jvmti->GetLoadedClasses(&count, &classes) == JVMTI_ERROR_NONE) {
    std::lock_guard<std::mutex> lock(g_mutex);
    for (jint i = 0; i < count; ++i) {
      jint methods = 0;
      jmethodID* ids = nullptr;
      if (jvmti->GetClassMethods(classes[i], &methods, &ids) != JVMTI_ERROR_NONE) continue;
      for (jint m = 0; m < methods; ++m) g_early.insert(ids[m]);
      jvmti->Deallocate(reinterpret_cast<unsigned char*>(ids));
    }
    jvmti->Deallocate(reinterpret_cast<unsigned char*>(classes));
  }
  jvmti->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_METHOD_ENTRY, nullptr);
}

std::string describe(jvmtiEnv* jvmti, jmethodID method) {
  char* name = nullptr;
  char* descriptor = nullptr;
  char* klass_name = nullptr;
  jclass klass = nullptr;
  std::string out = "?";
  if (jvmti->GetMethodName(method, &name, &descriptor, nullptr) == JVMTI_ERROR_NONE &&
      jvmti->GetMethodDeclaringClass(method, &klass) == JVMTI_ERROR_NONE &&
      jvmti->GetClassSignature(klass, &klass_name, nullptr) == JVMTI_ERROR_NONE) {
    out = std::string(klass_name) + "." + name + descriptor;
  }
  for (char* p : {name, descriptor, klass_name}) {
    if (p != nullptr) jvmti->Deallocate(reinterpret_cast<unsigned char*>(p));
  }
  return out;
}

void JNICALL on_vm_death(jvmtiEnv* jvmti, JNIEnv*) {
  jvmti->SetEventNotificationMode(JVMTI_DISABLE, JVMTI_EVENT_METHOD_ENTRY, nullptr);
  std::lock_guard<std::mutex> lock(g_mutex);
  uint64_t calls = g_calls.load(), native = g_native.load(), early = g_native_early.load();
  std::fprintf(stderr, "native-calls: calls=%llu java=%llu native=%llu native_early=%llu native_late=%llu\n",
               static_cast<unsigned long long>(calls), static_cast<unsigned long long>(calls - native),
               static_cast<unsigned long long>(native), static_cast<unsigned long long>(early),
               static_cast<unsigned long long>(native - early));
  std::vector<std::pair<uint64_t, jmethodID>> top;
  for (const auto& [method, info] : g_methods) {
    if (info.native && info.calls > 0) top.emplace_back(info.calls, method);
  }
  std::sort(top.rbegin(), top.rend());
  for (size_t i = 0; i < top.size() && i < 15; ++i) {
    std::fprintf(stderr, "native-calls: top %llu %s %s\n", static_cast<unsigned long long>(top[i].first),
                 g_methods[top[i].second].early ? "early" : "late", describe(jvmti, top[i].second).c_str());
  }
}

}  // namespace

extern "C" JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM* vm, char*, void*) {
  jvmtiEnv* jvmti = nullptr;
  if (vm->GetEnv(reinterpret_cast<void**>(&jvmti), JVMTI_VERSION_11) != JNI_OK) return JNI_ERR;
  jvmtiCapabilities capabilities{};
  capabilities.can_generate_method_entry_events = 1;
  if (jvmti->AddCapabilities(&capabilities) != JVMTI_ERROR_NONE) return JNI_ERR;
  jvmtiEventCallbacks callbacks{};
  callbacks.MethodEntry = &on_entry;
  callbacks.VMInit = &on_vm_init;
  callbacks.VMDeath = &on_vm_death;
  jvmti->SetEventCallbacks(&callbacks, sizeof(callbacks));
  jvmti->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_VM_INIT, nullptr);
  jvmti->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_VM_DEATH, nullptr);
  return JNI_OK;
}
