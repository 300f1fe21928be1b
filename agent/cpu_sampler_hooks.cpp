// cpu=samples: the VM events the sampler needs, and nothing else. ThreadStart tells a thread's
// native id (known only on the thread itself), ThreadEnd forgets it; with the signal path
// ClassPrepare makes the class's jmethodIDs ahead of any walk, and ClassLoad and
// CompiledMethodLoad are enabled for AsyncGetCallTrace's sake. The callbacks run on the thread the
// VM posts them on (ThreadStart on the new thread, ClassPrepare on the preparing thread).
//
// CHAINING: the profiler owns the one callback table; this feature replaces its ThreadStart,
// ThreadEnd and ClassPrepare by its own, which call the profiler's first (previous_*) and then do
// the sampler's work through hooked_. Everything that chains is in the block below, so that it
// can be replaced by hooks the profiler calls (on_thread_start / on_thread_end / on_class_prepare /
// on_class_load / on_compiled_method_load) without touching the rest of the sampler.
#include <dlfcn.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cpu_sampler.h"

namespace fasthprof {

// ---- BEGIN chaining of the profiler's callbacks ----------------------------------------------

CpuSampler* CpuSampler::hooked_ = nullptr;

// The profiler's callbacks keep running first and unchanged.
void CpuSampler::add_callbacks(jvmtiEventCallbacks* callbacks) {
  if (depth_ <= 0 || hooked_ != nullptr) return;
  // Native ids in both modes: the rounds read the OS's run state by them (waiting_for_cpu).
  hooked_ = this;
  previous_thread_start_ = callbacks->ThreadStart;
  previous_thread_end_ = callbacks->ThreadEnd;
  callbacks->ThreadStart = &on_thread_start;
  callbacks->ThreadEnd = &on_thread_end;
  if (mode_ != Mode::kSignal) return;
  if (dlsym(RTLD_DEFAULT, "AsyncGetCallTrace") == nullptr) {
    mode_ = Mode::kDeferred;
    return;
  }
  previous_class_prepare_ = callbacks->ClassPrepare;
  callbacks->ClassPrepare = &on_class_prepare;
  callbacks->ClassLoad = &on_class_load;
  callbacks->CompiledMethodLoad = &on_compiled_method_load;
  make_ids_.store(true);
}

void JNICALL CpuSampler::on_thread_start(jvmtiEnv* jvmti, JNIEnv* jni, jthread thread) {
  if (hooked_->previous_thread_start_ != nullptr) hooked_->previous_thread_start_(jvmti, jni, thread);
  hooked_->guarded("ThreadStart", [&] {
    hooked_->remember_tid(thread, static_cast<pid_t>(syscall(SYS_gettid)));  // on the new thread
  });
}

void JNICALL CpuSampler::on_thread_end(jvmtiEnv* jvmti, JNIEnv* jni, jthread thread) {
  if (hooked_->previous_thread_end_ != nullptr) hooked_->previous_thread_end_(jvmti, jni, thread);
  hooked_->guarded("ThreadEnd", [&] { hooked_->remember_tid(thread, 0); });
}

void JNICALL CpuSampler::on_class_prepare(jvmtiEnv* jvmti, JNIEnv* jni, jthread thread, jclass klass) {
  if (hooked_->previous_class_prepare_ != nullptr) hooked_->previous_class_prepare_(jvmti, jni, thread, klass);
  if (hooked_->make_ids_.load(std::memory_order_relaxed)) hooked_->make_method_ids(klass);
}

// ---- END chaining ----------------------------------------------------------------------------

// Enabled only because AsyncGetCallTrace refuses to walk unless ClassLoad events are on.
void JNICALL CpuSampler::on_class_load(jvmtiEnv*, JNIEnv*, jthread, jclass) {}

// Enabled only for the debug information it makes the compilers record (add_capabilities).
void JNICALL CpuSampler::on_compiled_method_load(jvmtiEnv*, jmethodID, jint, const void*, jint,
                                                 const jvmtiAddrLocationMap*, const void*) {}

void CpuSampler::make_method_ids(jclass klass) {
  jint count = 0;
  jmethodID* methods = nullptr;
  if (jvmti_->GetClassMethods(klass, &count, &methods) == JVMTI_ERROR_NONE) {
    jvmti_->Deallocate(reinterpret_cast<unsigned char*>(methods));
  }
}

// tid 0: the thread ended.
void CpuSampler::remember_tid(jthread thread, pid_t tid) {
  jlong tag = 0;
  if (jvmti_->GetTag(thread, &tag) != JVMTI_ERROR_NONE || tag == 0) return;
  threads_.set_native_id(tag, tid);
}

}  // namespace fasthprof
