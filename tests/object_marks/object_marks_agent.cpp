// A test agent for agent/sites/object_marks: the mark layout handed to Java (ObjectMarks.java, which
// writes IDs into marks by Unsafe from what it gets here, nothing hard-coded), and a forced full
// collection with a walk whose per-ID counts go back to Java to compare with what it kept. Built
// from the agent's own objects (tests/meson.build); never shipped.
//
//   ObjectMarks.layout()  -> long[] {usable, id_shift, id_bits, hash_shift, hash_mask, lock_mask,
//                                    unlocked_value, array_length_offset}; whyNot() -> the reason
//   ObjectMarks.walk(max) -> long[] {counts[0..max], lengths[0..max], over_max, objects, marked,
//                                    unreadable, walk_ns, pause_ns, stack_locked, inflated}
// (counts[0] unused; lengths[id]: the sum of the jint at the array length offset of objects with that
// ID, meaningful for IDs given to arrays only). Threads: the natives on any Java thread, one walk
// at a time. The figures also go to stdout, one line per walk.
#include <jni.h>
#include <jvmti.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "sites/object_marks.h"

namespace {

jvmtiEnv* g_jvmti = nullptr;
fasthprof::ObjectMarkLayout g_layout;
bool g_read = false;

const fasthprof::ObjectMarkLayout& layout(JNIEnv* jni) {
  if (!g_read) {
    g_layout = fasthprof::read_object_mark_layout(g_jvmti, jni);
    g_read = true;
    if (g_layout.usable) {
      std::printf("object_marks: layout JDK %d %s id_shift=%d id_bits=%d hash_shift=%d length_offset=%d "
                  "stack_lock_header=%" PRId64 " monitor_header=%" PRId64 " stack_locks_in_place=%d "
                  "monitors_in_place=%d\n",
                  g_layout.jdk, g_layout.collector, g_layout.id_shift, g_layout.id_bits, g_layout.hash_shift,
                  g_layout.array_length_offset, g_layout.stack_lock_header, g_layout.monitor_header,
                  g_layout.stack_locks_in_place ? 1 : 0, g_layout.monitors_in_place ? 1 : 0);
    } else {
      std::printf("object_marks: layout unusable: %s\n", g_layout.why_not.c_str());
    }
    std::fflush(stdout);
  }
  return g_layout;
}

// Filled on the VM thread: reserved before the walk.
struct Tally {
  uint64_t max_id = 0;
  int length_offset = 0;
  std::vector<int64_t> counts, lengths;
  int64_t over_max = 0;
};

void count(void* context, uint64_t id, uintptr_t object) {
  auto* tally = static_cast<Tally*>(context);
  if (id > tally->max_id) {
    ++tally->over_max;
    return;
  }
  ++tally->counts[id];
  tally->lengths[id] += *reinterpret_cast<const int32_t*>(object + static_cast<uintptr_t>(tally->length_offset));
}

jlongArray to_java(JNIEnv* jni, const std::vector<int64_t>& values) {
  jlongArray array = jni->NewLongArray(static_cast<jsize>(values.size()));
  if (array != nullptr) {
    jni->SetLongArrayRegion(array, 0, static_cast<jsize>(values.size()), reinterpret_cast<const jlong*>(values.data()));
  }
  return array;
}

}  // namespace

extern "C" {

JNIEXPORT jlongArray JNICALL Java_ObjectMarks_layout(JNIEnv* jni, jclass) {
  const fasthprof::ObjectMarkLayout& l = layout(jni);
  return to_java(jni, {l.usable ? 1 : 0, l.id_shift, l.id_bits, l.hash_shift, static_cast<int64_t>(l.hash_mask),
                       static_cast<int64_t>(l.lock_mask), static_cast<int64_t>(l.unlocked_value),
                       l.array_length_offset});
}

JNIEXPORT jstring JNICALL Java_ObjectMarks_whyNot(JNIEnv* jni, jclass) {
  return jni->NewStringUTF(layout(jni).why_not.c_str());
}

JNIEXPORT jlongArray JNICALL Java_ObjectMarks_walk(JNIEnv* jni, jclass, jint max_id) {
  const fasthprof::ObjectMarkLayout& l = layout(jni);
  Tally tally;
  tally.max_id = static_cast<uint64_t>(max_id);
  tally.length_offset = l.array_length_offset;
  tally.counts.assign(tally.max_id + 1, 0);
  tally.lengths.assign(tally.max_id + 1, 0);
  jvmtiError gc = g_jvmti->ForceGarbageCollection();
  fasthprof::MarkWalkFigures figures;
  std::string why;
  if (gc != JVMTI_ERROR_NONE || !fasthprof::walk_marked_objects(g_jvmti, l, &count, &tally, &figures, &why)) {
    std::printf("object_marks: no walk: %s\n", gc != JVMTI_ERROR_NONE ? "ForceGarbageCollection failed" : why.c_str());
    std::fflush(stdout);
    return nullptr;
  }
  std::printf("object_marks: walked objects=%" PRIu64 " marked=%" PRIu64 " unreadable=%" PRIu64
              " stack_locked=%" PRIu64 " inflated=%" PRIu64 " walk_ms=%.3f pause_ms=%.3f to_walk_ms=%.3f\n",
              figures.objects, figures.marked, figures.unreadable, figures.stack_locked, figures.inflated, static_cast<double>(figures.walk_ns) / 1e6,
              static_cast<double>(figures.pause_ns) / 1e6, static_cast<double>(figures.to_walk_ns) / 1e6);
  std::fflush(stdout);
  std::vector<int64_t> result = tally.counts;
  result.insert(result.end(), tally.lengths.begin(), tally.lengths.end());
  result.insert(result.end(), {tally.over_max, static_cast<int64_t>(figures.objects),
                               static_cast<int64_t>(figures.marked), static_cast<int64_t>(figures.unreadable),
                               static_cast<int64_t>(figures.walk_ns), static_cast<int64_t>(figures.pause_ns),
                               static_cast<int64_t>(figures.stack_locked), static_cast<int64_t>(figures.inflated)});
  return to_java(jni, result);
}

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM* vm, char*, void*) {
  if (vm->GetEnv(reinterpret_cast<void**>(&g_jvmti), JVMTI_VERSION_11) != JNI_OK) return JNI_ERR;
  jvmtiCapabilities capabilities{};
  capabilities.can_tag_objects = 1;
  return g_jvmti->AddCapabilities(&capabilities) == JVMTI_ERROR_NONE ? JNI_OK : JNI_ERR;
}

}  // extern "C"
