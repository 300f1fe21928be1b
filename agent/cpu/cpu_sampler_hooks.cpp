// cpu=samples: the VM events the sampler needs, and nothing else. ThreadStart tells a thread's
// native id (known only on the thread itself), ThreadEnd forgets it; with the signal path
// ClassPrepare makes the class's jmethodIDs ahead of any walk, and ClassLoad and
// CompiledMethodLoad are enabled for AsyncGetCallTrace's sake. The callbacks run on the thread the
// VM posts them on (ThreadStart on the new thread, ClassPrepare on the preparing thread).
//
// The profiler's one callback table calls these hooks after its own work (the thread's ID is set
// by then); wanted_events() says which of the optional events the sampler needs.
#include <dlfcn.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cpu/cpu_sampler.h"

namespace fasthprof {

void CpuSampler::wanted_events(FeatureEvents* events) {
  if (depth_ <= 0) return;
  // Native ids in both modes: the rounds read the OS's run state by them (waiting_for_cpu).
  track_tids_ = true;
  if (mode_ != Mode::kSignal) return;
  if (dlsym(RTLD_DEFAULT, "AsyncGetCallTrace") == nullptr) {
    mode_ = Mode::kDeferred;
    return;
  }
  // ClassLoad: AsyncGetCallTrace refuses to walk unless ClassLoad events are on. CompiledMethodLoad:
  // for the debug information it makes the compilers record (add_capabilities). Both hooks stay
  // empty.
  events->class_load = true;
  events->compiled_method_load = true;
  make_ids_.store(true);
}

void CpuSampler::on_thread_start(JNIEnv*, jthread thread) {
  if (!track_tids_) return;
  guarded("ThreadStart", [&] { remember_tid(thread, static_cast<pid_t>(syscall(SYS_gettid))); });  // on the new thread
}

void CpuSampler::on_thread_end(JNIEnv*, jthread thread) {
  if (!track_tids_) return;
  guarded("ThreadEnd", [&] { remember_tid(thread, 0); });
}

void CpuSampler::on_class_prepare(JNIEnv*, jclass klass) {
  if (make_ids_.load(std::memory_order_relaxed)) make_method_ids(klass);
}

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
