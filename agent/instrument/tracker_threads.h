// The threads the tracker's Java side names when the owner collects its counts (FasthprofTracker
// and FasthprofAllocs both answer collect() with the Thread objects their rows belong to, and
// drop the states of the threads the owner hands back as ended).
#pragma once

#include <jni.h>
#include <jvmti.h>

#include <cstdint>
#include <vector>

#include "records/profile_writer.h"

namespace fasthprof {

// Each thread of `threads` (a Thread[]; null entries give 0): its serial when `serials` (thread=y),
// else 0. With `ended`, the threads that have terminated are kept there as local references (the
// others' references are deleted).
std::vector<uint32_t> tracker_thread_serials(JNIEnv* jni, jvmtiEnv* jvmti, ProfileWriter& writer,
                                             jobjectArray threads, bool serials, std::vector<jobject>* ended);

// A Thread[] holding `threads` (local references, deleted here), or nullptr (an exception cleared).
jobjectArray tracker_thread_array(JNIEnv* jni, std::vector<jobject>& threads);

}  // namespace fasthprof
