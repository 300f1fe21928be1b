#include "heap/heap_class_layouts.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <unordered_map>
#include <vector>

#include "base/java_names.h"
#include "base/stderr_line.h"
#include "class_tracker.h"
#include "entry_guard.h"
#include "jvmti_support.h"

namespace fasthprof {


namespace {

constexpr jint kStaticModifier = 0x0008;

BasicType type_of_signature(const char* signature) {
  return basic_type_of_signature(signature == nullptr ? 'L' : signature[0]);
}

// The local references that describing one class makes, in the frame of its own it runs in.
constexpr jint kClassFrameCapacity = 16;

class Collector {
 public:
  Collector(jvmtiEnv* jvmti, JNIEnv* jni, ProfileWriter& writer, ClassTracker& tracker, bool primfields,
            const IdSource& new_id)
      : jvmti_(jvmti), jni_(jni), writer_(writer), tracker_(tracker), primfields_(primfields), new_id_(new_id) {}

  // The ID of an object (tagging it when untagged); 0 for null.
  uint64_t object_id(jobject object) {
    if (object == nullptr) return 0;
    jlong tag = 0;
    jvmti_->GetTag(object, &tag);
    if (tag == 0) {
      tag = static_cast<jlong>(new_id_());
      jvmti_->SetTag(object, tag);
    }
    return static_cast<uint64_t>(tag);
  }

  // The ID of a class object, registering the class (LOAD CLASS) when it is new.
  uint64_t class_id(jclass klass) {
    if (klass == nullptr) return 0;
    // serial_of() also puts the registry ID back on a class mirror whose tag allocation tracking
    // set (the mirror's allocation event can come after the class was registered).
    tracker_.serial_of(klass);
    jlong tag = 0;
    jvmti_->GetTag(klass, &tag);
    return static_cast<uint64_t>(tag);
  }

  void class_instance_fields(jclass class_class) {
    jint count = 0;
    jfieldID* fields = nullptr;
    if (jvmti_->GetClassFields(class_class, &count, &fields) != JVMTI_ERROR_NONE) return;
    for (jint i = 0; i < count; ++i) {
      jint modifiers = 0;
      char* signature = nullptr;
      if (jvmti_->GetFieldModifiers(class_class, fields[i], &modifiers) != JVMTI_ERROR_NONE) continue;
      if (jvmti_->GetFieldName(class_class, fields[i], nullptr, &signature, nullptr) != JVMTI_ERROR_NONE) continue;
      bool reference = type_of_signature(signature) == BasicType::kObject;
      jvmti_->Deallocate(reinterpret_cast<unsigned char*>(signature));
      if (reference && (modifiers & kStaticModifier) == 0) class_object_fields_.push_back(fields[i]);
    }
    jvmti_->Deallocate(reinterpret_cast<unsigned char*>(fields));
  }

  bool describe(jclass klass, ClassDescription* out) {
    out->class_id = class_id(klass);
    if (out->class_id == 0) return false;
    char* signature_chars = nullptr;
    if (jvmti_->GetClassSignature(klass, &signature_chars, nullptr) != JVMTI_ERROR_NONE) return false;
    std::string signature = jvmti::take_string(jvmti_, signature_chars);
    out->name = java_name(signature);
    jint status = 0;
    jvmti_->GetClassStatus(klass, &status);
    out->is_array = (status & JVMTI_CLASS_STATUS_ARRAY) != 0;
    if (out->is_array) out->element_type = type_of_signature(signature.c_str() + 1);
    jboolean is_interface = JNI_FALSE;
    jvmti_->IsInterface(klass, &is_interface);
    out->is_interface = is_interface == JNI_TRUE;
    jclass super = jni_->GetSuperclass(klass);
    out->super_id = class_id(super);
    jobject loader = nullptr;
    if (jvmti_->GetClassLoader(klass, &loader) == JVMTI_ERROR_NONE) out->loader_id = object_id(loader);
    // GetClassFields refuses classes that are not linked yet. The dump linked every such class
    // before (class_linker.h); one that failed to link, or was loaded since, has no fields here.
    if (out->is_array || (status & JVMTI_CLASS_STATUS_PREPARED) == 0) return true;

    jint interface_count = 0;
    jclass* interfaces = nullptr;
    if (jvmti_->GetImplementedInterfaces(klass, &interface_count, &interfaces) == JVMTI_ERROR_NONE) {
      jvmti::ReturnedRefs<jclass> held(jvmti_, jni_, interfaces, interface_count, 0);
      for (jint i = 0; i < interface_count; ++i) out->interfaces.push_back(class_id(interfaces[i]));
    }
    jint field_count = 0;
    jfieldID* fields = nullptr;
    if (jvmti_->GetClassFields(klass, &field_count, &fields) != JVMTI_ERROR_NONE) return true;
    for (jint i = 0; i < field_count; ++i) {
      DeclaredField field;
      char* name = nullptr;
      char* field_signature = nullptr;
      jint modifiers = 0;
      if (jvmti_->GetFieldName(klass, fields[i], &name, &field_signature, nullptr) == JVMTI_ERROR_NONE) {
        field.type = type_of_signature(field_signature);
        field.name = jvmti::take_string(jvmti_, name);
        jvmti_->Deallocate(reinterpret_cast<unsigned char*>(field_signature));
      }
      jvmti_->GetFieldModifiers(klass, fields[i], &modifiers);
      field.is_static = (modifiers & kStaticModifier) != 0;
      field.name_id = writer_.name_id(field.name);  // 0 in a text dump
      if (field.is_static) {
        out->static_values.push_back({field.name_id, field.type, static_value(klass, fields[i], field.type)});
      }
      out->fields.push_back(std::move(field));
    }
    jvmti_->Deallocate(reinterpret_cast<unsigned char*>(fields));
    return true;
  }

  uint64_t static_value(jclass klass, jfieldID field, BasicType type) {
    if (type != BasicType::kObject && !primfields_) return 0;
    uint64_t bits = 0;
    switch (type) {
      case BasicType::kObject: {
        jobject value = jni_->GetStaticObjectField(klass, field);
        bits = object_id(value);
        if (value != nullptr) jni_->DeleteLocalRef(value);
        break;
      }
      case BasicType::kBoolean: bits = jni_->GetStaticBooleanField(klass, field) ? 1 : 0; break;
      case BasicType::kByte: bits = static_cast<uint8_t>(jni_->GetStaticByteField(klass, field)); break;
      case BasicType::kChar: bits = jni_->GetStaticCharField(klass, field); break;
      case BasicType::kShort: bits = static_cast<uint16_t>(jni_->GetStaticShortField(klass, field)); break;
      case BasicType::kInt: bits = static_cast<uint32_t>(jni_->GetStaticIntField(klass, field)); break;
      case BasicType::kLong: bits = static_cast<uint64_t>(jni_->GetStaticLongField(klass, field)); break;
      case BasicType::kFloat: {
        float value = jni_->GetStaticFloatField(klass, field);
        uint32_t raw = 0;
        std::memcpy(&raw, &value, sizeof raw);
        bits = raw;
        break;
      }
      case BasicType::kDouble: {
        double value = jni_->GetStaticDoubleField(klass, field);
        std::memcpy(&bits, &value, sizeof bits);
        break;
      }
    }
    return bits;
  }

  // Keeps what the class object's own instance fields hold, for the holder array.
  void keep_class_fields(jclass klass) {
    for (jfieldID field : class_object_fields_) {
      jobject value = jni_->GetObjectField(klass, field);
      if (value == nullptr) continue;
      jobject global = jni_->NewGlobalRef(value);
      jni_->DeleteLocalRef(value);
      if (global != nullptr) kept_.push_back(global);
    }
  }

  void make_holder(ClassCollection* collection) {
    if (kept_.empty()) return;
    jclass object_class = jni_->FindClass("java/lang/Object");
    jobjectArray holder = object_class == nullptr
        ? nullptr
        : jni_->NewObjectArray(static_cast<jsize>(kept_.size()), object_class, nullptr);
    if (jni_->ExceptionCheck()) jni_->ExceptionClear();
    if (holder != nullptr) {
      for (size_t i = 0; i < kept_.size(); ++i) jni_->SetObjectArrayElement(holder, static_cast<jsize>(i), kept_[i]);
      collection->class_field_holder = jni_->NewGlobalRef(holder);
      collection->class_field_objects = kept_.size();
      collection->class_field_holder_id = new_id_();
      jvmti_->SetTag(holder, static_cast<jlong>(collection->class_field_holder_id));
      jni_->DeleteLocalRef(holder);
    }
    if (object_class != nullptr) jni_->DeleteLocalRef(object_class);
    for (jobject global : kept_) jni_->DeleteGlobalRef(global);
    kept_.clear();
  }

 private:
  jvmtiEnv* jvmti_;
  JNIEnv* jni_;
  ProfileWriter& writer_;
  ClassTracker& tracker_;
  bool primfields_;
  const IdSource& new_id_;
  std::vector<jfieldID> class_object_fields_;
  std::vector<jobject> kept_;
};

// The references a class object holds that the CLASS DUMP names but JNI cannot read (signers,
// protection domain, resolved constants): one FollowReferences from an Object[] of every class
// object, which visits those class objects and follows nothing further. Untagged referees get new
// IDs, so that the main walk (which visits them from the class object) writes them under those IDs.
struct ClassReferenceWalk {
  uint64_t start_id = 0;
  uint64_t class_class_id = 0;
  const IdSource* new_id = nullptr;
  std::unordered_map<uint64_t, ClassReferences>* found = nullptr;
  bool failed = false;  // a callback threw: the walk was aborted
};

jint visit_class_reference(ClassReferenceWalk& walk, jvmtiHeapReferenceKind kind, const jvmtiHeapReferenceInfo* info,
                           jlong referrer_class_tag, jlong* tag_ptr, jlong* referrer_tag_ptr) {
  if (referrer_tag_ptr == nullptr) return 0;
  uint64_t referrer = static_cast<uint64_t>(*referrer_tag_ptr);
  if (referrer == walk.start_id) return kind == JVMTI_HEAP_REFERENCE_ARRAY_ELEMENT ? JVMTI_VISIT_OBJECTS : 0;
  if (referrer == 0 || static_cast<uint64_t>(referrer_class_tag) != walk.class_class_id) return 0;
  if (kind != JVMTI_HEAP_REFERENCE_SIGNERS && kind != JVMTI_HEAP_REFERENCE_PROTECTION_DOMAIN &&
      kind != JVMTI_HEAP_REFERENCE_CONSTANT_POOL) {
    return 0;
  }
  if (*tag_ptr == 0) *tag_ptr = static_cast<jlong>((*walk.new_id)());
  uint64_t id = static_cast<uint64_t>(*tag_ptr);
  ClassReferences& references = (*walk.found)[referrer];
  if (kind == JVMTI_HEAP_REFERENCE_SIGNERS) {
    references.signers_id = id;
  } else if (kind == JVMTI_HEAP_REFERENCE_PROTECTION_DOMAIN) {
    references.protection_domain_id = id;
  } else if (info != nullptr && info->constant_pool.index > 0 && info->constant_pool.index <= 0xFFFF) {
    references.constant_pool.push_back({static_cast<uint16_t>(info->constant_pool.index), BasicType::kObject, id});
  }
  return 0;
}

jint JNICALL on_class_reference(jvmtiHeapReferenceKind kind, const jvmtiHeapReferenceInfo* info,
                                jlong /*class_tag*/, jlong referrer_class_tag, jlong /*size*/, jlong* tag_ptr,
                                jlong* referrer_tag_ptr, jint /*length*/, void* user_data) {
  ClassReferenceWalk& walk = *static_cast<ClassReferenceWalk*>(user_data);
  return guard_entry<jint>(
      "the walk of the class objects", "that walk was stopped", JVMTI_VISIT_ABORT,
      [&] { return visit_class_reference(walk, kind, info, referrer_class_tag, tag_ptr, referrer_tag_ptr); },
      [&walk] { walk.failed = true; });
}

}  // namespace

bool find_class_references(jvmtiEnv* jvmti, JNIEnv* jni, const jclass* classes, size_t count,
                           uint64_t class_class_id, const IdSource& new_id,
                           std::unordered_map<uint64_t, ClassReferences>* found) {
  jclass object_class = jni->FindClass("java/lang/Object");
  jobjectArray start = object_class == nullptr
      ? nullptr
      : jni->NewObjectArray(static_cast<jsize>(count), object_class, nullptr);
  if (jni->ExceptionCheck()) jni->ExceptionClear();
  if (object_class != nullptr) jni->DeleteLocalRef(object_class);
  if (start == nullptr) return false;
  for (size_t i = 0; i < count; ++i) jni->SetObjectArrayElement(start, static_cast<jsize>(i), classes[i]);
  ClassReferenceWalk walk;
  walk.start_id = new_id();
  walk.class_class_id = class_class_id;
  walk.new_id = &new_id;
  walk.found = found;
  jvmti->SetTag(start, static_cast<jlong>(walk.start_id));
  jvmtiHeapCallbacks callbacks{};
  callbacks.heap_reference_callback = &on_class_reference;
  jvmtiError error = jvmti->FollowReferences(0, nullptr, start, &callbacks, &walk);
  jvmti->SetTag(start, 0);
  jni->DeleteLocalRef(start);
  // Constants as the original lists them: in the reverse of the order the walk reports them.
  for (auto& [id, references] : *found) {
    std::sort(references.constant_pool.begin(), references.constant_pool.end(),
              [](const ConstantPoolEntry& a, const ConstantPoolEntry& b) { return a.index > b.index; });
  }
  return error == JVMTI_ERROR_NONE && !walk.failed;
}

bool collect_classes(jvmtiEnv* jvmti, JNIEnv* jni, ProfileWriter& writer, ClassTracker& tracker,
                     bool primfields, const IdSource& new_id, ClassLayoutTable* table,
                     ClassCollection* collection) {
  Collector collector(jvmti, jni, writer, tracker, primfields, new_id);
  jclass class_class = jni->FindClass("java/lang/Class");
  jclass object_class = jni->FindClass("java/lang/Object");
  if (jni->ExceptionCheck()) jni->ExceptionClear();
  if (class_class == nullptr || object_class == nullptr) return false;
  collection->class_class_id = collector.class_id(class_class);
  collection->object_class_id = collector.class_id(object_class);
  collector.class_instance_fields(class_class);
  jni->DeleteLocalRef(class_class);
  jni->DeleteLocalRef(object_class);

  jint count = 0;
  jclass* classes = nullptr;
  if (jvmti->GetLoadedClasses(&count, &classes) != JVMTI_ERROR_NONE) return false;
  // Released (deleted, their frame popped) once the walk of the class objects is done with them.
  std::optional<jvmti::ReturnedRefs<jclass>> held;
  held.emplace(jvmti, jni, classes, count, 8);
  std::vector<ClassDescription> descriptions;
  descriptions.reserve(static_cast<size_t>(count));
  for (jint i = 0; i < count; ++i) {
    jvmti::LocalFrame class_frame(jni, kClassFrameCapacity);
    ClassDescription description;
    if (collector.describe(classes[i], &description)) descriptions.push_back(std::move(description));
    collector.keep_class_fields(classes[i]);
    if (jni->ExceptionCheck()) jni->ExceptionClear();
  }
  // Every class registered (and tagged) by now: find what only the heap walk can tell.
  std::unordered_map<uint64_t, ClassReferences> references;
  if (!find_class_references(jvmti, jni, classes, static_cast<size_t>(count), collection->class_class_id,
                             new_id, &references)) {
    write_stderr("fasthprof: warning: the heap dump's classes name no signers, protection domains or "
                 "constants (the walk of the class objects failed)\n");
  }
  held.reset();
  for (ClassDescription& description : descriptions) {
    auto found = references.find(description.class_id);
    if (found != references.end()) {
      description.signers_id = found->second.signers_id;
      description.protection_domain_id = found->second.protection_domain_id;
      description.constant_pool = std::move(found->second.constant_pool);
    }
    table->add(std::move(description));
  }
  collector.make_holder(collection);
  table->resolve();
  return true;
}

void release_class_collection(JNIEnv* jni, ClassCollection* collection) {
  if (collection->class_field_holder != nullptr) jni->DeleteGlobalRef(collection->class_field_holder);
  collection->class_field_holder = nullptr;
}

}  // namespace fasthprof
