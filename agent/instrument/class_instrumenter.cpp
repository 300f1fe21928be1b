// One ClassFileLoadHook and one rewriter pass for every feature that injects code
// (agent/instrument/class_instrumenter.h).
#include "instrument/class_instrumenter.h"

#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "classfile/allocation_scan.h"
#include "instrument/tracker_classes.h"
#include "jvmti_support.h"

namespace fasthprof {

namespace {

// Classes per RetransformClasses call: an eighth of them, within these bounds. Each call is one VM
// operation, a safepoint that also visits every loaded class, so one call per class would cost a
// safepoint each; but what comes before that operation (the hook's rewriting, HotSpot parsing,
// verifying and merging constant pools: most of the time) runs on the calling thread, and two
// threads share the batches: small batches keep both busy to the end.
constexpr size_t kRetransformBatchMin = 32, kRetransformBatchMax = 256;

}  // namespace

// The loaded classes to retransform (global references) and the batches taken so far, shared by
// the thread that brings the agent live and one helper thread (retransform_loaded).
struct ClassInstrumenter::RetransformShare {
  ClassInstrumenter* self = nullptr;
  std::vector<jclass> classes;
  size_t batch = kRetransformBatchMin;
  std::atomic<size_t> next{0};
  std::atomic<uint64_t> retransformed{0}, failed{0}, skipped{0};
  std::mutex mutex;
  std::condition_variable helper_done;
  bool helper_running = false;
};

bool ClassInstrumenter::excluded(std::string_view name) {
  return name.starts_with("java/lang/Fasthprof") || name == "jdk/internal/misc/Unsafe" || name == "java/lang/Object";
}

jclass ClassInstrumenter::tracker(JNIEnv* jni, const char* feature) {
  if (tracker_tried_) return tracker_;
  tracker_tried_ = true;
  jclass last = nullptr;
  for (size_t i = 0; i < kTrackerClassCount; ++i) {
    const TrackerClass& tracker = kTrackerClasses[i];
    jclass defined = jni->DefineClass(tracker.name, nullptr, reinterpret_cast<const jbyte*>(tracker.bytes),
                                      static_cast<jsize>(tracker.size));
    if (defined == nullptr) {
      jvmti::clear_exception(jni);
      jvmti::print_error(std::string(feature) + ": cannot define " + tracker.name + "; nothing is counted");
      if (last != nullptr) jni->DeleteLocalRef(last);
      return nullptr;
    }
    if (last != nullptr) jni->DeleteLocalRef(last);
    last = defined;
  }
  tracker_ = static_cast<jclass>(jni->NewGlobalRef(last));
  jni->DeleteLocalRef(last);
  return tracker_;
}

void ClassInstrumenter::catch_exceptions(jvmtiEnv* jvmti) {
  jvmtiCapabilities potential{};
  catch_wanted_ = jvmti->GetPotentialCapabilities(&potential) == JVMTI_ERROR_NONE && potential.can_generate_exception_events;
}

void ClassInstrumenter::begin(JNIEnv* jni) {
  if (!wanted() || tracker_ == nullptr || dropped_ || hooking_.load()) return;
  hooking_.store(true);
  if (catch_wanted_) {
    caught_ = jni->GetStaticMethodID(tracker_, "caught", "(II)I");
    if (jvmti::clear_exception(jni)) caught_ = nullptr;
    if (caught_ != nullptr &&
        jvmti_->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_EXCEPTION_CATCH, nullptr) == JVMTI_ERROR_NONE) {
      catching_.store(true);
    }
  }
  jvmti_->SetEventNotificationMode(JVMTI_ENABLE, JVMTI_EVENT_CLASS_FILE_LOAD_HOOK, nullptr);
  retransform_loaded(jni);
}

void ClassInstrumenter::end() {
  if (catching_.exchange(false)) jvmti_->SetEventNotificationMode(JVMTI_DISABLE, JVMTI_EVENT_EXCEPTION_CATCH, nullptr);
  if (!hooking_.exchange(false)) return;
  jvmti_->SetEventNotificationMode(JVMTI_DISABLE, JVMTI_EVENT_CLASS_FILE_LOAD_HOOK, nullptr);
}

void ClassInstrumenter::retransform_loaded(JNIEnv* jni) {
  jint count = 0;
  jclass* classes = nullptr;
  if (jvmti_->GetLoadedClasses(&count, &classes) != JVMTI_ERROR_NONE) return;
  RetransformShare share;
  share.self = this;
  {
    jvmti::ReturnedRefs<jclass> refs(jvmti_, jni, classes, count, 16);
    share.classes.reserve(static_cast<size_t>(count));
    for (jint i = 0; i < count; ++i) {
      jboolean can = JNI_FALSE;
      if (jvmti_->IsModifiableClass(classes[i], &can) != JVMTI_ERROR_NONE || !can) continue;
      char* signature = nullptr;
      if (jvmti_->GetClassSignature(classes[i], &signature, nullptr) != JVMTI_ERROR_NONE) continue;
      std::string name = jvmti::take_string(jvmti_, signature);
      if (name.size() < 3 || name.front() != 'L') continue;
      if (excluded(std::string_view(name).substr(1, name.size() - 2))) continue;
      jclass global = static_cast<jclass>(jni->NewGlobalRef(classes[i]));
      if (global != nullptr) share.classes.push_back(global);
    }
  }
  // A second thread takes batches too when there are several: each thread's RetransformClasses
  // does its batch's work before the VM operation on that thread.
  share.batch = std::clamp(share.classes.size() / 8, kRetransformBatchMin, kRetransformBatchMax);
  if (share.classes.size() > share.batch) {
    share.helper_running = true;
    std::string error;  // not said: this thread then takes every batch, as before there was a helper
    if (!jvmti::start_agent_thread(jvmti_, jni, "fasthprof retransform", &retransform_helper, &share, &error)) {
      share.helper_running = false;
    }
  }
  retransform_batches(share);
  {
    std::unique_lock<std::mutex> lock(share.mutex);
    share.helper_done.wait(lock, [&share] { return !share.helper_running; });
  }
  for (jclass klass : share.classes) jni->DeleteGlobalRef(klass);
  retransformed_ += share.retransformed.load();
  retransform_failed_ += share.failed.load();
  retransform_skipped_ += share.skipped.load();
}

void JNICALL ClassInstrumenter::retransform_helper(jvmtiEnv* jvmti, JNIEnv*, void* arg) {
  auto* share = static_cast<RetransformShare*>(arg);
  share->self->retransform_batches(*share);
  {
    std::lock_guard<std::mutex> lock(share->mutex);
    share->helper_running = false;
    share->helper_done.notify_all();  // the last touch of *share: its owner returns once it sees this
  }
  // Then idle until the process ends, never back in Java: ended, the thread would run Thread.exit,
  // whose counted allocations would give it a state of the counts, handed back at their next
  // collection as a terminated thread's in a Thread[] made for it (whether that class is in a heap
  // dump would vary from run to run). Idle in a raw monitor's wait, which the VM sees as blocked:
  // at exit it waits up to 300 ms for threads still running native code.
  jrawMonitorID idle = nullptr;
  if (jvmti->CreateRawMonitor("fasthprof retransform idle", &idle) == JVMTI_ERROR_NONE &&
      jvmti->RawMonitorEnter(idle) == JVMTI_ERROR_NONE) {
    for (;;) {
      jvmtiError error = jvmti->RawMonitorWait(idle, 0);
      if (error != JVMTI_ERROR_NONE && error != JVMTI_ERROR_INTERRUPT) break;
    }
  }
  for (;;) pause();
}

void ClassInstrumenter::retransform_batches(RetransformShare& share) const {
  std::vector<jclass> batch;
  batch.reserve(share.batch);
  for (;;) {
    size_t at = share.next.fetch_add(share.batch);
    if (at >= share.classes.size()) return;
    size_t end = std::min(at + share.batch, share.classes.size());
    batch.clear();
    for (size_t i = at; i < end; ++i) {
      if (worth_retransforming(share.classes[i])) {
        batch.push_back(share.classes[i]);
      } else {
        share.skipped.fetch_add(1);
      }
    }
    if (batch.empty()) continue;
    if (jvmti_->RetransformClasses(static_cast<jint>(batch.size()), batch.data()) == JVMTI_ERROR_NONE) {
      share.retransformed.fetch_add(batch.size());
      continue;
    }
    // One class refused fails its whole batch: retry them one by one.
    for (jclass klass : batch) {
      if (jvmti_->RetransformClasses(1, &klass) == JVMTI_ERROR_NONE) {
        share.retransformed.fetch_add(1);
      } else {
        share.failed.fetch_add(1);
      }
    }
  }
}

bool ClassInstrumenter::worth_retransforming(jclass klass) const {
  // Entry, exit or position calls go into every method: every class is worth it.
  if (plan_.calls || plan_.call_positions || !plan_.allocations) return true;
  jint pool_count = 0, pool_size = 0;
  unsigned char* pool = nullptr;
  if (jvmti_->GetConstantPool(klass, &pool_count, &pool_size, &pool) != JVMTI_ERROR_NONE) return true;
  AllocationScan scan(static_cast<uint16_t>(pool_count), pool, static_cast<size_t>(pool_size), plan_);
  jvmti_->Deallocate(pool);
  jint method_count = 0;
  jmethodID* methods = nullptr;
  if (jvmti_->GetClassMethods(klass, &method_count, &methods) != JVMTI_ERROR_NONE) return true;
  jint status = 0;
  bool initialized = jvmti_->GetClassStatus(klass, &status) == JVMTI_ERROR_NONE &&
                     (status & JVMTI_CLASS_STATUS_INITIALIZED) != 0;
  bool worth = false;
  for (jint i = 0; i < method_count && !worth; ++i) {
    jint length = 0;
    unsigned char* code = nullptr;
    jvmtiError error = jvmti_->GetBytecodes(methods[i], &length, &code);
    if (error == JVMTI_ERROR_NATIVE_METHOD) continue;
    if (error != JVMTI_ERROR_NONE) {
      worth = true;
      break;
    }
    bool counts = scan.needs_calls({code, static_cast<size_t>(length)});
    jvmti_->Deallocate(code);
    if (!counts) continue;
    // A static initializer that has run never runs again.
    char* name = nullptr;
    bool ran_clinit = initialized && jvmti_->GetMethodName(methods[i], &name, nullptr, nullptr) == JVMTI_ERROR_NONE &&
                      jvmti::take_string(jvmti_, name) == "<clinit>";
    worth = !ran_clinit;
  }
  jvmti_->Deallocate(reinterpret_cast<unsigned char*>(methods));
  return worth;
}

void ClassInstrumenter::on_class_file_load(const char* name, jint length, const unsigned char* data,
                                           jint* new_length, unsigned char** new_data) {
  if (!hooking_.load(std::memory_order_relaxed) || data == nullptr || length <= 0) return;
  if (name != nullptr && excluded(name)) {
    excluded_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  RewriteResult result = rewrite_class(data, static_cast<size_t>(length), plan_);
  if (result.outcome == RewriteOutcome::kMalformed) {
    malformed_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (result.outcome != RewriteOutcome::kRewritten || excluded(result.class_name)) {
    unchanged_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  for (const InjectedMethod& method : result.methods) {
    if (!method.call_lines.empty()) methods_.add_lines(method.id, method.call_lines);
  }
  if (!result.source_file.empty()) {
    for (const InjectedMethod& method : result.methods) methods_.set_source_file(method.id, result.source_file);
    for (const InjectedSite& site : result.sites) {
      uint32_t id = methods_.find(result.class_name, site.method_name, site.descriptor);
      if (id != 0) methods_.set_source_file(id, result.source_file);
    }
  }
  unsigned char* out = nullptr;
  if (jvmti_->Allocate(static_cast<jlong>(result.bytes.size()), &out) != JVMTI_ERROR_NONE) return;
  std::memcpy(out, result.bytes.data(), result.bytes.size());
  *new_length = static_cast<jint>(result.bytes.size());
  *new_data = out;
  rewritten_.fetch_add(1, std::memory_order_relaxed);
}

// The tracker ID of a jmethodID (0: not instrumented), asked of JVMTI once per method.
uint32_t ClassInstrumenter::catch_id(JNIEnv* jni, jmethodID method) {
  {
    std::lock_guard<std::mutex> lock(catch_mutex_);
    auto it = catch_ids_.find(method);
    if (it != catch_ids_.end()) return it->second;
  }
  char* name = nullptr;
  char* descriptor = nullptr;
  jclass klass = nullptr;
  if (jvmti_->GetMethodName(method, &name, &descriptor, nullptr) != JVMTI_ERROR_NONE) return 0;
  std::string method_name = jvmti::take_string(jvmti_, name);
  std::string method_descriptor = jvmti::take_string(jvmti_, descriptor);
  if (jvmti_->GetMethodDeclaringClass(method, &klass) != JVMTI_ERROR_NONE || klass == nullptr) return 0;
  char* signature = nullptr;
  jvmtiError error = jvmti_->GetClassSignature(klass, &signature, nullptr);
  jni->DeleteLocalRef(klass);
  if (error != JVMTI_ERROR_NONE) return 0;
  std::string class_signature = jvmti::take_string(jvmti_, signature);
  uint32_t id = 0;
  if (class_signature.size() > 2 && class_signature.front() == 'L') {
    id = methods_.find(class_signature.substr(1, class_signature.size() - 2), method_name, method_descriptor);
  }
  std::lock_guard<std::mutex> lock(catch_mutex_);
  catch_ids_[method] = id;
  return id;
}

void ClassInstrumenter::on_exception_catch(JNIEnv* jni, jmethodID method) {
  if (!catching_.load(std::memory_order_relaxed)) return;
  uint32_t id = catch_id(jni, method);
  if (id == 0) return;
  jint found = jni->CallStaticIntMethod(tracker_, caught_, static_cast<jint>(id), 0);
  jvmti::clear_exception(jni);
  if (found <= 1) return;
  // A recursion: the shadow stack holds several activations of the method, and the exception may
  // have left some of them. The catching frame is the topmost live one; the live ones are those
  // on the real stack (frames still running code from before the retransformation are other
  // method versions with jmethodIDs of their own, as they are not on the shadow stack either).
  jint frames = 0;
  if (jvmti_->GetFrameCount(nullptr, &frames) != JVMTI_ERROR_NONE || frames <= 0) return;
  std::vector<jvmtiFrameInfo> stack(static_cast<size_t>(frames));
  jint filled = 0;
  if (jvmti_->GetStackTrace(nullptr, 0, frames, stack.data(), &filled) != JVMTI_ERROR_NONE) return;
  jint live = 0;
  for (jint i = 0; i < filled; ++i) {
    if (stack[static_cast<size_t>(i)].method == method) ++live;
  }
  if (live <= 0) return;
  jni->CallStaticIntMethod(tracker_, caught_, static_cast<jint>(id), live);
  jvmti::clear_exception(jni);
}

}  // namespace fasthprof
