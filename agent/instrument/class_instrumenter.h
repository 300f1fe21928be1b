// Bytecode injection for every feature that counts in Java (docs/ARCHITECTURE.md "Injected code"):
// one ClassFileLoadHook, one rewriter pass per class, one set of tracker classes. A feature asks at
// load time for what it wants injected: the entry and exit calls (cpu=times and cpu=old) and the
// allocation calls (heap=sites counted by injection, docs/allocation-sites.md). When the VM is live
// the features take the tracker class (tracker()) and set up their Java side, then the Profiler
// calls begin(): the hook goes on and every modifiable class already loaded is retransformed, in
// batches, once, with everything asked for.
//
// Threads: the hook runs on the thread loading a class (any thread, concurrently); tracker(),
// begin() and end() run on the thread that brings the agent live and the one that takes it down;
// begin()'s retransformation also runs on a helper agent thread ("fasthprof retransform"), which
// then waits, idle, until the process ends.
#pragma once

#include <jni.h>
#include <jvmti.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string_view>
#include <unordered_map>

#include "classfile/class_rewriter.h"
#include "instrument/injected_methods.h"

namespace fasthprof {

class ClassInstrumenter {
 public:
  explicit ClassInstrumenter(jvmtiEnv* jvmti) : jvmti_(jvmti) { plan_.calls = false; }

  // ---- load time: what is injected (the assigners are called on the loading thread) ------------
  void inject_calls(MethodIdAssigner assign) {
    plan_.calls = true;
    plan_.assign_method_id = std::move(assign);
  }
  void inject_allocations(SiteIdAssigner assign) {
    plan_.allocations = true;
    plan_.assign_site_id = std::move(assign);
  }
  // With the allocation calls: one before every call sure to reach Object.clone too (class_rewriter.h).
  void inject_clone_calls() { plan_.clones = true; }
  // With the allocation calls: one after each allocation too, with the object once it is usable
  // (heap=sites live counts by object headers, class_rewriter.h).
  void inject_marks() { plan_.marks = true; }
  // Allocation traces (alloc=inject at depth > 1): the entry and exit calls (IDs of their own when
  // no feature asked for them) and a position call before every invoke (class_rewriter.h).
  void inject_call_positions() {
    if (!plan_.calls) {
      inject_calls([this](std::string_view class_name, std::string_view method_name, std::string_view descriptor) {
        return methods_.add(class_name, method_name, descriptor);
      });
    }
    plan_.call_positions = true;
  }
  // The tracker's shadow stack is kept: exits by exception pop it (ExceptionCatch, when the VM can).
  void catch_exceptions(jvmtiEnv* jvmti);
  bool catches() const { return catch_wanted_; }
  bool wanted() const { return plan_.calls || plan_.allocations; }
  // The methods injected code names, shared by every feature that injects (and the class tracker,
  // which resolves frames of them).
  InjectedMethods* methods() { return &methods_; }
  void add_capabilities(jvmtiCapabilities* wanted) const {
    if (this->wanted()) wanted->can_retransform_classes = 1;
    if (catch_wanted_) wanted->can_generate_exception_events = 1;
    if (plan_.allocations) {  // to leave alone the loaded classes with nothing to count (retransform_loaded)
      wanted->can_get_bytecodes = 1;
      wanted->can_get_constant_pool = 1;
    }
  }

  // ---- live ------------------------------------------------------------------------------------
  // The tracker class (a global reference), defined with the boot loader at the first call with
  // its helpers; nullptr when it cannot be (said once on stderr, naming `feature`).
  jclass tracker(JNIEnv* jni, const char* feature);
  // Every feature has set up its Java side: rewrite from now on, and retransform what is loaded.
  void begin(JNIEnv* jni);
  // heap=sites could not start counting by injection (before begin()): unless another feature
  // wants calls, nothing is rewritten, rather than every class given calls that count nothing.
  void drop_allocations() { dropped_ = !plan_.calls; }
  // No more rewriting (VM death, or a feature that gave up for good).
  void end();
  bool rewriting() const { return hooking_.load(std::memory_order_relaxed); }

  // ExceptionCatch, on the catching thread: pops the tracker's shadow stack down to the catching
  // frame (docs/cpu_times.md "Exits by exception").
  void on_exception_catch(JNIEnv* jni, jmethodID method);

  // ClassFileLoadHook, any thread.
  void on_class_file_load(const char* name, jint length, const unsigned char* data, jint* new_length,
                          unsigned char** new_data);

  // Classes never instrumented: the tracker classes, what they call (Unsafe), and Object, whose
  // constructor runs in every allocation (the original did not count Object.<init> either).
  static bool excluded(std::string_view internal_name);

  struct Figures {
    uint64_t rewritten, unchanged, malformed, excluded, retransformed, retransform_failed, retransform_skipped;
  };
  Figures figures() const {
    return {rewritten_.load(), unchanged_.load(), malformed_.load(), excluded_.load(), retransformed_,
            retransform_failed_, retransform_skipped_};
  }

 private:
  struct RetransformShare;
  // Retransforms the loaded classes worth it, on this thread and a helper thread of the agent's.
  void retransform_loaded(JNIEnv* jni);
  static void JNICALL retransform_helper(jvmtiEnv* jvmti, JNIEnv* jni, void* arg);
  void retransform_batches(RetransformShare& share) const;
  // Whether a loaded class must be retransformed: with allocation calls alone, only when one of
  // its methods that can still run has something to count (runtime/classfile/allocation_scan.h).
  bool worth_retransforming(jclass klass) const;
  uint32_t catch_id(JNIEnv* jni, jmethodID method);

  jvmtiEnv* jvmti_;
  InjectedMethods methods_;
  RewritePlan plan_;
  jclass tracker_ = nullptr;
  bool tracker_tried_ = false;
  std::atomic<bool> hooking_{false};
  bool dropped_ = false;  // drop_allocations(): begin() rewrites nothing
  bool catch_wanted_ = false;  // catch_exceptions() and the VM can
  std::atomic<bool> catching_{false};
  jmethodID caught_ = nullptr;
  std::mutex catch_mutex_;
  std::unordered_map<jmethodID, uint32_t> catch_ids_;  // jmethodID -> tracker ID (0: not instrumented)
  std::atomic<uint64_t> rewritten_{0}, unchanged_{0}, malformed_{0}, excluded_{0};
  uint64_t retransformed_ = 0, retransform_failed_ = 0, retransform_skipped_ = 0;
};

}  // namespace fasthprof
