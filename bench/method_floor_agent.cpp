// The floor of exact call timing with JVMTI events (docs/performance.md): an agent whose
// MethodEntry and MethodExit callbacks do nothing. bench/cpu_times_bench.py runs it beside
// fasthprof cpu=times, whose injected calls must cost a tenth of these events or less.
#include <jvmti.h>

namespace {

void JNICALL on_entry(jvmtiEnv*, JNIEnv*, jthread, jmethodID) {}

void JNICALL on_exit(jvmtiEnv*, JNIEnv*, jthread, jmethodID, jboolean, jvalue) {}

void JNICALL on_vm_init(jvmtiEnv* jvmti, JNIEnv*, jthread) {
  jvmti->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_METHOD_ENTRY, nullptr);
  jvmti->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_METHOD_EXIT, nullptr);
}

}  // namespace

extern "C" JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM* vm, char*, void*) {
  jvmtiEnv* jvmti = nullptr;
  if (vm->GetEnv(reinterpret_cast<void**>(&jvmti), JVMTI_VERSION_11) != JNI_OK) return JNI_ERR;
  jvmtiCapabilities capabilities{};
  capabilities.can_generate_method_entry_events = 1;
  capabilities.can_generate_method_exit_events = 1;
  if (jvmti->AddCapabilities(&capabilities) != JVMTI_ERROR_NONE) return JNI_ERR;
  jvmtiEventCallbacks callbacks{};
  callbacks.MethodEntry = &on_entry;
  callbacks.MethodExit = &on_exit;
  callbacks.VMInit = &on_vm_init;
  jvmti->SetEventCallbacks(&callbacks, sizeof(callbacks));
  jvmti->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_VM_INIT, nullptr);
  return JNI_OK;
}
