// Classes as the output names them: a serial (LOAD CLASS) and an object ID for the
// java.lang.Class object, which the agent tags with that ID. Also the agent's MethodResolver:
// names, declaring class, source file and line table of a jmethodID, asked once per method.
//
// Threads: announce() from any Java thread (ClassPrepare); everything else on the profile's owner
// (profile_owner.h), which alone tags classes and loaders and writes LOAD CLASS / UNLOAD CLASS
// through the ProfileWriter. Never from a heap-walk callback.
#pragma once

#include <jvmti.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "queues/lifecycle_queue.h"
#include "records/profile_writer.h"
#include "registries/frame_registry.h"

namespace fasthprof {

class ClassTracker final : public MethodResolver {
 public:
  ClassTracker(JavaVM* vm, jvmtiEnv* jvmti) : vm_(vm), jvmti_(jvmti) {}

  // Binds the writer and the owner's queue. Once, before any other call.
  void attach(ProfileWriter* writer, LifecycleQueue* queue) {
    writer_ = writer;
    queue_ = queue;
  }

  // A class was prepared (ClassPrepare, any Java thread): registered at once on the owner,
  // otherwise queued for it (a weak reference: a class unloaded before the owner sees it is
  // never announced). Until then allocations of it are keyed by signature (allocation_tracker.h).
  void announce(JNIEnv* jni, jclass klass);

  // The owner: registers a queued class.
  void apply(JNIEnv* jni, LifecycleEvent& event);

  // The serial of klass, registering it (LOAD CLASS, class object tagged with its ID) the first
  // time it is seen. 0 when the VM cannot describe it.
  uint32_t serial_of(jclass klass);

  // Registers every class the VM has loaded so far (GetLoadedClasses).
  void record_loaded_classes(JNIEnv* jni);

  // Writes UNLOAD CLASS for every registered class the VM no longer lists.
  void record_unloaded_classes(JNIEnv* jni);

  // Methods numbered with the high bit set are cpu=times tracker IDs, resolved by `injected`
  // (agent/cpu/cpu_timer.h) rather than through JVMTI. Once, before any resolve_method().
  void set_injected_methods(MethodResolver* injected) { injected_ = injected; }

  bool resolve_method(uint64_t method, MethodInfo* out) override;

 private:
  uint64_t loader_key(jclass klass);
  // Agent threads run for the life of the VM, so the local references JVMTI hands out must go.
  void drop_local(jobject reference);

  JavaVM* vm_;
  jvmtiEnv* jvmti_;
  ProfileWriter* writer_ = nullptr;
  LifecycleQueue* queue_ = nullptr;
  uint64_t next_loader_index_ = 0;
  MethodResolver* injected_ = nullptr;
  // Injected methods name their class by signature alone: its serial (the boot loader's, else the
  // first registered), indexed again when classes were registered since (the writer's).
  std::unordered_map<std::string, uint32_t> serial_by_signature_;
  size_t indexed_classes_ = 0;
};

}  // namespace fasthprof
