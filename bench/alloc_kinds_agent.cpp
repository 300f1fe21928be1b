// What made each allocation of a program (issue 28, bench/README.md "Which allocations bytecode
// injection sees"): a JVMTI agent that takes every allocation (SampledObjectAlloc at interval 0),
// looks at the instruction its top frame stands on, and prints at VM death how many objects and
// bytes came from each kind:
//
//   new, newarray, anewarray, multianewarray   an allocation instruction: injected code before it
//                                              counts it
//   call                                       the top frame stands on an invoke: the allocation was
//                                              made by a method the compiler replaced by its own code
//                                              (Object.clone, Arrays.copyOf, Array.newInstance,
//                                              Unsafe.allocateInstance and allocateUninitializedArray
//                                              are intrinsics) or by the VM inside the call
//   native                                     the top frame is a native method (the interpreter's
//                                              path of the same calls, JNI)
//   other, no frame                            anything else; an allocation with no Java frame
//
// For the last three it lists the methods that allocated most (top 30 by objects). It also counts
// VMObjectAlloc events, the JVM's own report of the allocations bytecode cannot see.
//
// Options: none. Output: stderr, lines starting with "alloc_kinds:".
#include <jvmti.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

struct Count {
  uint64_t objects = 0;
  uint64_t bytes = 0;
};

struct MethodCode {
  std::vector<unsigned char> code;
  bool native = false;
  std::string name;
};

std::mutex mutex;
std::unordered_map<jmethodID, MethodCode> methods;
std::map<std::string, Count> kinds;
std::map<std::string, Count> unseen_by_method;  // "kind method" -> count
std::atomic<uint64_t> vm_object_allocs{0};
std::atomic<uint64_t> vm_object_bytes{0};

std::string take(jvmtiEnv* jvmti, char* text) {
  std::string out = text == nullptr ? "" : text;
  if (text != nullptr) jvmti->Deallocate(reinterpret_cast<unsigned char*>(text));
  return out;
}

const MethodCode& code_of(jvmtiEnv* jvmti, jmethodID method) {
  auto found = methods.find(method);
  if (found != methods.end()) return found->second;
  MethodCode entry;
  jboolean native = JNI_FALSE;
  jvmti->IsMethodNative(method, &native);
  entry.native = native == JNI_TRUE;
  jclass klass = nullptr;
  char* class_signature = nullptr;
  char* name = nullptr;
  if (jvmti->GetMethodDeclaringClass(method, &klass) == JVMTI_ERROR_NONE) {
    jvmti->GetClassSignature(klass, &class_signature, nullptr);
  }
  jvmti->GetMethodName(method, &name, nullptr, nullptr);
  entry.name = take(jvmti, class_signature) + "." + take(jvmti, name);
  if (!entry.native) {
    jint length = 0;
    unsigned char* bytes = nullptr;
    if (jvmti->GetBytecodes(method, &length, &bytes) == JVMTI_ERROR_NONE) {
      entry.code.assign(bytes, bytes + length);
      jvmti->Deallocate(bytes);
    }
  }
  return methods.emplace(method, std::move(entry)).first->second;
}

const char* kind_of(const MethodCode& code, jlocation location) {
  if (code.native) return "native";
  if (location < 0 || static_cast<size_t>(location) >= code.code.size()) return "other";
  switch (code.code[static_cast<size_t>(location)]) {
    case 0xbb: return "new";
    case 0xbc: return "newarray";
    case 0xbd: return "anewarray";
    case 0xc5: return "multianewarray";
    case 0xb6: case 0xb7: case 0xb8: case 0xb9: case 0xba: return "call";
    default: return "other";
  }
}

void JNICALL on_alloc(jvmtiEnv* jvmti, JNIEnv*, jthread thread, jobject, jclass, jlong size) {
  jmethodID method = nullptr;
  jlocation location = -1;
  const bool framed = jvmti->GetFrameLocation(thread, 0, &method, &location) == JVMTI_ERROR_NONE &&
                      method != nullptr;
  std::lock_guard<std::mutex> lock(mutex);
  std::string kind = "no frame";
  std::string where;
  if (framed) {
    const MethodCode& code = code_of(jvmti, method);
    kind = kind_of(code, location);
    where = code.name;
  }
  Count& count = kinds[kind];
  ++count.objects;
  count.bytes += static_cast<uint64_t>(size);
  if (kind == "call" || kind == "native" || kind == "other") {
    Count& by_method = unseen_by_method[kind + " " + where];
    ++by_method.objects;
    by_method.bytes += static_cast<uint64_t>(size);
  }
}

void JNICALL on_vm_object_alloc(jvmtiEnv*, JNIEnv*, jthread, jobject, jclass, jlong size) {
  vm_object_allocs.fetch_add(1, std::memory_order_relaxed);
  vm_object_bytes.fetch_add(static_cast<uint64_t>(size), std::memory_order_relaxed);
}

void JNICALL on_vm_init(jvmtiEnv* jvmti, JNIEnv*, jthread) {
  jvmti->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_SAMPLED_OBJECT_ALLOC, nullptr);
  jvmti->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_VM_OBJECT_ALLOC, nullptr);
}

void JNICALL on_vm_death(jvmtiEnv* jvmti, JNIEnv*) {
  jvmti->SetEventNotificationMode(JVMTI_DISABLE, JVMTI_EVENT_SAMPLED_OBJECT_ALLOC, nullptr);
  jvmti->SetEventNotificationMode(JVMTI_DISABLE, JVMTI_EVENT_VM_OBJECT_ALLOC, nullptr);
  std::lock_guard<std::mutex> lock(mutex);
  Count total;
  for (const auto& [kind, count] : kinds) {
    total.objects += count.objects;
    total.bytes += count.bytes;
  }
  auto share = [](uint64_t part, uint64_t whole) { return whole == 0 ? 0.0 : 100.0 * part / whole; };
  std::fprintf(stderr, "alloc_kinds: total %llu objects, %llu bytes\n",
               static_cast<unsigned long long>(total.objects), static_cast<unsigned long long>(total.bytes));
  for (const auto& [kind, count] : kinds) {
    std::fprintf(stderr, "alloc_kinds: %-15s %12llu objects (%6.2f %%) %14llu bytes (%6.2f %%)\n", kind.c_str(),
                 static_cast<unsigned long long>(count.objects), share(count.objects, total.objects),
                 static_cast<unsigned long long>(count.bytes), share(count.bytes, total.bytes));
  }
  std::fprintf(stderr, "alloc_kinds: VMObjectAlloc events %llu objects, %llu bytes\n",
               static_cast<unsigned long long>(vm_object_allocs.load()),
               static_cast<unsigned long long>(vm_object_bytes.load()));
  std::vector<std::pair<std::string, Count>> rows(unseen_by_method.begin(), unseen_by_method.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.objects > b.second.objects; });
  if (rows.size() > 30) rows.resize(30);
  for (const auto& [where, count] : rows) {
    std::fprintf(stderr, "alloc_kinds:   %12llu objects %14llu bytes  %s\n",
                 static_cast<unsigned long long>(count.objects), static_cast<unsigned long long>(count.bytes),
                 where.c_str());
  }
}

}  // namespace

extern "C" JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM* vm, char*, void*) {
  jvmtiEnv* jvmti = nullptr;
  if (vm->GetEnv(reinterpret_cast<void**>(&jvmti), JVMTI_VERSION_11) != JNI_OK) return JNI_ERR;
  jvmtiCapabilities capabilities{};
  capabilities.can_generate_sampled_object_alloc_events = 1;
  capabilities.can_generate_vm_object_alloc_events = 1;
  capabilities.can_get_bytecodes = 1;
  if (jvmti->AddCapabilities(&capabilities) != JVMTI_ERROR_NONE) return JNI_ERR;
  // Now, before any thread runs: a thread keeps the distance to its next sample that it drew under
  // the interval in force, so an interval set at VMInit would let the main thread's first few
  // hundred kilobytes (a random amount) go unseen.
  jvmti->SetHeapSamplingInterval(0);
  jvmtiEventCallbacks callbacks{};
  callbacks.SampledObjectAlloc = &on_alloc;
  callbacks.VMObjectAlloc = &on_vm_object_alloc;
  callbacks.VMInit = &on_vm_init;
  callbacks.VMDeath = &on_vm_death;
  jvmti->SetEventCallbacks(&callbacks, sizeof(callbacks));
  jvmti->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_VM_INIT, nullptr);
  jvmti->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_VM_DEATH, nullptr);
  return JNI_OK;
}
