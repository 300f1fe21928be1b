// The threads the tracker's Java side names (agent/instrument/tracker_threads.h).
#include "instrument/tracker_threads.h"

#include "jvmti_support.h"

namespace fasthprof {

std::vector<uint32_t> tracker_thread_serials(JNIEnv* jni, jvmtiEnv* jvmti, ProfileWriter& writer,
                                             jobjectArray threads, bool serials, std::vector<jobject>* ended) {
  jsize count = jni->GetArrayLength(threads);
  std::vector<uint32_t> out(static_cast<size_t>(count), 0);
  // The ended threads stay as local references, as many as ended since the last call (thousands
  // when short threads come and go): room for all of them, whatever the caller's frame planned.
  if (ended != nullptr && jni->EnsureLocalCapacity(count + 16) != JNI_OK) jvmti::clear_exception(jni);
  for (jsize i = 0; i < count; ++i) {
    jobject thread = jni->GetObjectArrayElement(threads, i);
    if (thread == nullptr) continue;
    jlong tag = 0;
    if (serials && jvmti->GetTag(thread, &tag) == JVMTI_ERROR_NONE && tag != 0) {
      out[static_cast<size_t>(i)] = writer.threads().serial_of_object_id(static_cast<uint64_t>(tag));
    }
    jint state = 0;
    if (ended != nullptr && jvmti->GetThreadState(thread, &state) == JVMTI_ERROR_NONE &&
        (state & JVMTI_THREAD_STATE_TERMINATED) != 0) {
      ended->push_back(thread);
    } else {
      jni->DeleteLocalRef(thread);
    }
  }
  return out;
}

jobjectArray tracker_thread_array(JNIEnv* jni, std::vector<jobject>& threads) {
  jclass thread_class = jni->FindClass("java/lang/Thread");
  jobjectArray array = thread_class == nullptr
                           ? nullptr
                           : jni->NewObjectArray(static_cast<jsize>(threads.size()), thread_class, nullptr);
  if (thread_class != nullptr) jni->DeleteLocalRef(thread_class);
  if (array == nullptr) {
    jvmti::clear_exception(jni);
  } else {
    for (size_t i = 0; i < threads.size(); ++i) jni->SetObjectArrayElement(array, static_cast<jsize>(i), threads[i]);
  }
  for (jobject thread : threads) jni->DeleteLocalRef(thread);
  threads.clear();
  return array;
}

}  // namespace fasthprof
