#include "heap/class_linker.h"

#include <vector>

#include "base/java_names.h"
#include "jvmti_support.h"

namespace fasthprof {

namespace {

// The verifier of one class loads the classes it checks against, which are then unlinked in
// turn; measured on JDK 17 and 25, the second round finds nothing left.
constexpr int kMaxRounds = 8;

constexpr jint kNotLinkable =
    JVMTI_CLASS_STATUS_PREPARED | JVMTI_CLASS_STATUS_ARRAY | JVMTI_CLASS_STATUS_PRIMITIVE | JVMTI_CLASS_STATUS_ERROR;

std::string class_name(jvmtiEnv* jvmti, jclass klass) {
  char* signature = nullptr;
  if (klass == nullptr || jvmti->GetClassSignature(klass, &signature, nullptr) != JVMTI_ERROR_NONE) return "?";
  return java_name(jvmti::take_string(jvmti, signature));
}

// Clears the pending exception and names its class.
std::string take_exception(jvmtiEnv* jvmti, JNIEnv* jni) {
  jthrowable thrown = jni->ExceptionOccurred();
  jni->ExceptionClear();
  if (thrown == nullptr) return "?";
  jclass thrown_class = jni->GetObjectClass(thrown);
  std::string name = class_name(jvmti, thrown_class);
  if (thrown_class != nullptr) jni->DeleteLocalRef(thrown_class);
  jni->DeleteLocalRef(thrown);
  return name;
}

class Linker {
 public:
  Linker(jvmtiEnv* jvmti, JNIEnv* jni, jmethodID declared_fields)
      : jvmti_(jvmti), jni_(jni), declared_fields_(declared_fields) {}
  ~Linker() {
    for (jobject failed : failed_) jni_->DeleteGlobalRef(failed);
  }

  // One pass over the loaded classes; returns how many it linked.
  uint64_t round(ClassLinkResult* result) {
    jint count = 0;
    jclass* classes = nullptr;
    if (jvmti_->GetLoadedClasses(&count, &classes) != JVMTI_ERROR_NONE) return 0;
    // Room for the classes' references and the few that linking one class makes at a time.
    jvmti::ReturnedRefs<jclass> held(jvmti_, jni_, classes, count, 8);
    uint64_t linked = 0;
    for (jint i = 0; i < count; ++i) {
      jclass klass = classes[i];
      jint status = 0;
      if (jvmti_->GetClassStatus(klass, &status) == JVMTI_ERROR_NONE && (status & kNotLinkable) == 0 &&
          !failed_before(klass)) {
        if (link(klass, result)) ++linked;
      }
    }
    return linked;
  }

 private:
  bool link(jclass klass, ClassLinkResult* result) {
    jobject fields = jni_->CallObjectMethod(klass, declared_fields_, JNI_TRUE);
    if (!jni_->ExceptionCheck()) {
      if (fields != nullptr) jni_->DeleteLocalRef(fields);
      return true;
    }
    std::string thrown = take_exception(jvmti_, jni_);
    if (result->failed++ == 0) result->first_failure = class_name(jvmti_, klass) + ": " + thrown;
    jobject global = jni_->NewGlobalRef(klass);
    if (global != nullptr) failed_.push_back(global);
    return false;
  }

  bool failed_before(jclass klass) {
    for (jobject failed : failed_) {
      if (jni_->IsSameObject(failed, klass)) return true;
    }
    return false;
  }

  jvmtiEnv* jvmti_;
  JNIEnv* jni_;
  jmethodID declared_fields_;
  std::vector<jobject> failed_;
};

}  // namespace

ClassLinkResult link_unprepared_classes(jvmtiEnv* jvmti, JNIEnv* jni) {
  ClassLinkResult result;
  jclass class_class = jni->FindClass("java/lang/Class");
  jmethodID declared_fields = class_class == nullptr
      ? nullptr
      : jni->GetMethodID(class_class, "getDeclaredFields0", "(Z)[Ljava/lang/reflect/Field;");
  if (jni->ExceptionCheck()) jni->ExceptionClear();
  if (class_class != nullptr) jni->DeleteLocalRef(class_class);
  if (declared_fields == nullptr) {
    result.error = "this VM has no java.lang.Class.getDeclaredFields0(boolean)";
    return result;
  }
  Linker linker(jvmti, jni, declared_fields);
  for (int round = 0; round < kMaxRounds; ++round) {
    uint64_t linked = linker.round(&result);
    result.linked += linked;
    if (linked == 0) break;
  }
  return result;
}

}  // namespace fasthprof
