// The floor of a JVMTI heap dump (docs/performance.md §1): on kill -QUIT (DataDumpRequest) one
// FollowReferences with a heap-reference, a primitive-field and an array-primitive-value callback
// that sets a new tag on every object it meets for the first time and does nothing else, timed
// around that one call. Then the tags are removed (IterateThroughHeap), timed on its own line.
// bench/heap_dump_bench.py runs it beside fasthprof heap=dump.
//
// Prints on stderr: "heapfloor: walk_seconds=S objects=N clear_seconds=C".
#include <jvmti.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>

namespace {

jlong next_tag = 0;  // the callbacks run on the VM thread, one at a time

jint JNICALL on_reference(jvmtiHeapReferenceKind, const jvmtiHeapReferenceInfo*, jlong, jlong, jlong,
                          jlong* tag_ptr, jlong*, jint, void*) {
  if (*tag_ptr == 0) *tag_ptr = ++next_tag;
  return JVMTI_VISIT_OBJECTS;
}

jint JNICALL on_primitive_field(jvmtiHeapReferenceKind, const jvmtiHeapReferenceInfo*, jlong, jlong*, jvalue,
                                jvmtiPrimitiveType, void*) {
  return 0;
}

jint JNICALL on_array_values(jlong, jlong, jlong*, jint, jvmtiPrimitiveType, const void*, void*) { return 0; }

jint JNICALL on_clear(jlong, jlong, jlong* tag_ptr, jint, void*) {
  *tag_ptr = 0;
  return 0;
}

void JNICALL on_data_dump_request(jvmtiEnv* jvmti) {
  jvmtiHeapCallbacks callbacks{};
  callbacks.heap_reference_callback = &on_reference;
  callbacks.primitive_field_callback = &on_primitive_field;
  callbacks.array_primitive_value_callback = &on_array_values;
  next_tag = 0;
  auto started = std::chrono::steady_clock::now();
  jvmti->FollowReferences(0, nullptr, nullptr, &callbacks, nullptr);
  auto walked = std::chrono::steady_clock::now();
  jvmtiHeapCallbacks clear{};
  clear.heap_iteration_callback = &on_clear;
  jvmti->IterateThroughHeap(JVMTI_HEAP_FILTER_UNTAGGED, nullptr, &clear, nullptr);
  auto cleared = std::chrono::steady_clock::now();
  char line[200];
  int n = std::snprintf(line, sizeof line, "heapfloor: walk_seconds=%.3f objects=%lld clear_seconds=%.3f\n",
                        std::chrono::duration<double>(walked - started).count(), static_cast<long long>(next_tag),
                        std::chrono::duration<double>(cleared - walked).count());
  ssize_t ignored = ::write(STDERR_FILENO, line, static_cast<size_t>(n));
  (void)ignored;
}

}  // namespace

extern "C" JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM* vm, char*, void*) {
  jvmtiEnv* jvmti = nullptr;
  if (vm->GetEnv(reinterpret_cast<void**>(&jvmti), JVMTI_VERSION_1_2) != JNI_OK) return JNI_ERR;
  jvmtiCapabilities capabilities{};
  capabilities.can_tag_objects = 1;
  if (jvmti->AddCapabilities(&capabilities) != JVMTI_ERROR_NONE) return JNI_ERR;
  jvmtiEventCallbacks callbacks{};
  callbacks.DataDumpRequest = &on_data_dump_request;
  jvmti->SetEventCallbacks(&callbacks, sizeof callbacks);
  jvmti->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_DATA_DUMP_REQUEST, nullptr);
  return JNI_OK;
}
