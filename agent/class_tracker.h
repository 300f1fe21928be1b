// Classes as the output names them: a serial (LOAD CLASS) and an object ID for the
// java.lang.Class object, which the agent tags with that ID. Also the agent's MethodResolver:
// names, declaring class, source file and line table of a jmethodID, asked once per method.
//
// Threads: every call happens with the output lock held (the caller's), because it writes
// LOAD CLASS / UNLOAD CLASS through the ProfileWriter. Never call it from a heap-walk callback.
#pragma once

#include <jvmti.h>

#include <cstdint>
#include <unordered_set>

#include "frame_registry.h"
#include "profile_writer.h"

namespace fasthprof {

class ClassTracker final : public MethodResolver {
 public:
  ClassTracker(JavaVM* vm, jvmtiEnv* jvmti) : vm_(vm), jvmti_(jvmti) {}

  // Binds the writer; resolve_method() needs it. Once, before any other call.
  void attach_writer(ProfileWriter* writer) { writer_ = writer; }

  // The serial of klass, registering it (LOAD CLASS, class object tagged with its ID) the first
  // time it is seen. 0 when the VM cannot describe it.
  uint32_t serial_of(jclass klass);

  // Registers every class the VM has loaded so far (GetLoadedClasses).
  void record_loaded_classes(JNIEnv* jni);

  // Writes UNLOAD CLASS for every registered class the VM no longer lists.
  void record_unloaded_classes(JNIEnv* jni);

  bool resolve_method(uint64_t method, MethodInfo* out) override;

 private:
  uint64_t loader_key(jclass klass);
  // Agent threads run for the life of the VM, so the local references JVMTI hands out must go.
  void drop_local(jobject reference);

  JavaVM* vm_;
  jvmtiEnv* jvmti_;
  ProfileWriter* writer_ = nullptr;
  uint64_t next_loader_index_ = 0;
};

}  // namespace fasthprof
