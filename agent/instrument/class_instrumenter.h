// Bytecode injection for every feature that counts in Java (docs/ARCHITECTURE.md "Injected code"):
// one ClassFileLoadHook, one rewriter pass per class, one set of tracker classes. A feature asks at
// load time for what it wants injected: the entry and exit calls (cpu=times and cpu=old) and the
// allocation calls (heap=sites counted by injection, docs/allocation-sites.md). When the VM is live
// the features take the tracker class (tracker()) and set up their Java side, then the Profiler
// calls begin(): the hook goes on and every modifiable class already loaded is retransformed, in
// batches, once, with everything asked for.
//
// Threads: the hook runs on the thread loading a class (any thread, concurrently); tracker(),
// begin() and end() run on the thread that brings the agent live and the one that takes it down.
#pragma once

#include <jni.h>
#include <jvmti.h>

#include <atomic>
#include <cstdint>
#include <string_view>

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
  bool wanted() const { return plan_.calls || plan_.allocations; }
  // The methods injected code names, shared by every feature that injects (and the class tracker,
  // which resolves frames of them).
  InjectedMethods* methods() { return &methods_; }
  void add_capabilities(jvmtiCapabilities* wanted) const {
    if (this->wanted()) wanted->can_retransform_classes = 1;
  }

  // ---- live ------------------------------------------------------------------------------------
  // The tracker class (a global reference), defined with the boot loader at the first call with
  // its helpers; nullptr when it cannot be (said once on stderr, naming `feature`).
  jclass tracker(JNIEnv* jni, const char* feature);
  // Every feature has set up its Java side: rewrite from now on, and retransform what is loaded.
  void begin(JNIEnv* jni);
  // No more rewriting (VM death, or a feature that gave up for good).
  void end();
  bool rewriting() const { return hooking_.load(std::memory_order_relaxed); }

  // ClassFileLoadHook, any thread.
  void on_class_file_load(const char* name, jint length, const unsigned char* data, jint* new_length,
                          unsigned char** new_data);

  // Classes never instrumented: the tracker classes, what they call (Unsafe), and Object, whose
  // constructor runs in every allocation (the original did not count Object.<init> either).
  static bool excluded(std::string_view internal_name);

  struct Figures {
    uint64_t rewritten, unchanged, malformed, excluded, retransformed, retransform_failed;
  };
  Figures figures() const {
    return {rewritten_.load(), unchanged_.load(), malformed_.load(), excluded_.load(), retransformed_,
            retransform_failed_};
  }

 private:
  void retransform_loaded(JNIEnv* jni);

  jvmtiEnv* jvmti_;
  InjectedMethods methods_;
  RewritePlan plan_;
  jclass tracker_ = nullptr;
  bool tracker_tried_ = false;
  std::atomic<bool> hooking_{false};
  std::atomic<uint64_t> rewritten_{0}, unchanged_{0}, malformed_{0}, excluded_{0};
  uint64_t retransformed_ = 0, retransform_failed_ = 0;
};

}  // namespace fasthprof
