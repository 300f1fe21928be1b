#include "class_tracker.h"

#include <vector>

#include "base/ids.h"
#include "jvmti_support.h"
#include "profile_owner.h"

namespace fasthprof {

void ClassTracker::drop_local(jobject reference) {
  JNIEnv* jni = nullptr;
  if (reference != nullptr && vm_->GetEnv(reinterpret_cast<void**>(&jni), JNI_VERSION_1_6) == JNI_OK) {
    jni->DeleteLocalRef(reference);
  }
}

uint64_t ClassTracker::loader_key(jclass klass) {
  jobject loader = nullptr;
  if (jvmti_->GetClassLoader(klass, &loader) != JVMTI_ERROR_NONE || loader == nullptr) return 0;
  jlong tag = 0;
  jvmti_->GetTag(loader, &tag);
  if (tag == 0) {
    tag = static_cast<jlong>(make_registry_object_id(RegistryObjectKind::kLoader, ++next_loader_index_));
    jvmti_->SetTag(loader, tag);
  }
  drop_local(loader);
  return static_cast<uint64_t>(tag);
}

uint32_t ClassTracker::serial_of(jclass klass) {
  jlong tag = 0;
  if (jvmti_->GetTag(klass, &tag) == JVMTI_ERROR_NONE && tag != 0) {
    if (const ClassInfo* known = writer_->classes().find_by_object_id(static_cast<uint64_t>(tag))) {
      if (known->loaded) return known->serial;
    }
  }
  char* signature_chars = nullptr;
  if (jvmti_->GetClassSignature(klass, &signature_chars, nullptr) != JVMTI_ERROR_NONE) return 0;
  std::string signature = jvmti::take_string(jvmti_, signature_chars);
  ClassRef ref = writer_->class_loaded(signature, loader_key(klass));
  jvmti_->SetTag(klass, static_cast<jlong>(ref.object_id));
  return ref.serial;
}

void ClassTracker::announce(JNIEnv* jni, jclass klass) {
  if (ProfileOwner::is_current_thread()) {
    serial_of(klass);
    return;
  }
  LifecycleEvent event;
  event.kind = LifecycleEvent::Kind::kClassPrepare;
  event.handle = jni->NewWeakGlobalRef(klass);
  if (event.handle != nullptr) queue_->push(std::move(event));
}

void ClassTracker::apply(JNIEnv* jni, LifecycleEvent& event) {
  auto weak = static_cast<jweak>(event.handle);
  if (weak == nullptr) return;
  if (jobject klass = jni->NewLocalRef(weak)) {
    serial_of(static_cast<jclass>(klass));
    jni->DeleteLocalRef(klass);
  }
  jni->DeleteWeakGlobalRef(weak);
  event.handle = nullptr;
}

void ClassTracker::record_loaded_classes(JNIEnv* jni) {
  jint count = 0;
  jclass* classes = nullptr;
  if (jvmti_->GetLoadedClasses(&count, &classes) != JVMTI_ERROR_NONE) return;
  jvmti::ReturnedRefs<jclass> held(jvmti_, jni, classes, count, 4);
  for (jint i = 0; i < count; ++i) serial_of(classes[i]);
}

void ClassTracker::record_unloaded_classes(JNIEnv* jni) {
  std::unordered_set<uint64_t> alive;
  {
    jint count = 0;
    jclass* classes = nullptr;
    if (jvmti_->GetLoadedClasses(&count, &classes) != JVMTI_ERROR_NONE) return;
    jvmti::ReturnedRefs<jclass> held(jvmti_, jni, classes, count, 0);
    alive.reserve(static_cast<size_t>(count));
    for (jint i = 0; i < count; ++i) {
      jlong tag = 0;
      if (jvmti_->GetTag(classes[i], &tag) == JVMTI_ERROR_NONE && tag != 0) alive.insert(static_cast<uint64_t>(tag));
    }
  }
  std::vector<uint32_t> gone;
  writer_->classes().for_each_loaded([&](const ClassInfo& info) {
    if (alive.count(info.object_id) == 0) gone.push_back(info.serial);
  });
  for (uint32_t serial : gone) writer_->class_unloaded(serial);
}

bool ClassTracker::resolve_method(uint64_t method_number, MethodInfo* out) {
  if ((method_number >> 63) != 0) {
    if (injected_ == nullptr || !injected_->resolve_method(method_number, out)) return false;
    // FRAME records name their class's serial, as for any other method.
    const ClassRegistry& registry = writer_->classes();
    if (registry.size() != indexed_classes_) {
      indexed_classes_ = registry.size();
      registry.serials_by_signature(&serial_by_signature_);
    }
    auto found = serial_by_signature_.find(out->class_signature);
    if (found != serial_by_signature_.end()) out->class_serial = found->second;
    return true;
  }
  auto method = reinterpret_cast<jmethodID>(method_number);
  char* name = nullptr;
  char* signature = nullptr;
  if (jvmti_->GetMethodName(method, &name, &signature, nullptr) != JVMTI_ERROR_NONE) return false;
  out->name = jvmti::take_string(jvmti_, name);
  out->signature = jvmti::take_string(jvmti_, signature);
  jclass klass = nullptr;
  if (jvmti_->GetMethodDeclaringClass(method, &klass) == JVMTI_ERROR_NONE && klass != nullptr) {
    char* class_signature = nullptr;
    if (jvmti_->GetClassSignature(klass, &class_signature, nullptr) == JVMTI_ERROR_NONE) {
      out->class_signature = jvmti::take_string(jvmti_, class_signature);
    }
    char* source = nullptr;
    if (jvmti_->GetSourceFileName(klass, &source) == JVMTI_ERROR_NONE) {
      out->source_file = jvmti::take_string(jvmti_, source);
    }
    out->class_serial = serial_of(klass);
    drop_local(klass);
  }
  jboolean native_method = JNI_FALSE;
  out->native_method = jvmti_->IsMethodNative(method, &native_method) == JVMTI_ERROR_NONE && native_method == JNI_TRUE;
  jint entries = 0;
  jvmtiLineNumberEntry* table = nullptr;
  if (!out->native_method && jvmti_->GetLineNumberTable(method, &entries, &table) == JVMTI_ERROR_NONE) {
    out->line_table.reserve(static_cast<size_t>(entries));
    for (jint i = 0; i < entries; ++i) {
      out->line_table.push_back({static_cast<int64_t>(table[i].start_location), table[i].line_number});
    }
    jvmti_->Deallocate(reinterpret_cast<unsigned char*>(table));
  }
  return true;
}

}  // namespace fasthprof
