// Object sizes without the object (agent/sites/object_sizes.h).
#include "sites/object_sizes.h"

#include <cstring>
#include <vector>

#include "hotspot_structs.h"
#include "jvmti_support.h"

namespace fasthprof {

namespace {

// Array lengths measured at start; a layout must fit every one of them.
constexpr jsize kLongestMeasured = 40;

// The JNI array maker of one element size, and the site kind it stands for.
struct ArrayMaker {
  SiteKind kind;
  jarray (*make)(JNIEnv* jni, jsize length);
  int32_t element_shift;  // log2 of the element size; -1: a reference (measured)
};

jarray make_bytes(JNIEnv* jni, jsize n) { return jni->NewByteArray(n); }
jarray make_chars(JNIEnv* jni, jsize n) { return jni->NewCharArray(n); }
jarray make_ints(JNIEnv* jni, jsize n) { return jni->NewIntArray(n); }
jarray make_longs(JNIEnv* jni, jsize n) { return jni->NewLongArray(n); }
jarray make_objects(JNIEnv* jni, jsize n) {
  jclass object = jni->FindClass("java/lang/Object");
  if (object == nullptr) return nullptr;
  jarray array = jni->NewObjectArray(n, object, nullptr);
  jni->DeleteLocalRef(object);
  return array;
}

uint64_t aligned(uint64_t bytes, uint64_t alignment) { return (bytes + alignment - 1) & ~(alignment - 1); }

// A JNI reference's address, its tag bits cleared (HotSpot tags weak and global handles in them).
const uintptr_t* handle_slot(jobject reference) {
  return reinterpret_cast<const uintptr_t*>(reinterpret_cast<uintptr_t>(reference) & ~uintptr_t{3});
}

}  // namespace

SiteKind site_kind(const std::string& type) {
  if (type.empty() || type[0] != '[') return SiteKind::kInstance;
  switch (type.size() > 1 ? type[1] : 'L') {
    case 'Z': case 'B': return SiteKind::kArray1;
    case 'C': case 'S': return SiteKind::kArray2;
    case 'I': case 'F': return SiteKind::kArray4;
    case 'J': case 'D': return SiteKind::kArray8;
    default: return SiteKind::kReferences;
  }
}

const char* ObjectSizes::unreadable_collector() {
  // ZGC's references carry color bits (generational ZGC's cannot be followed without its load
  // barrier) and Shenandoah's may name a copy being evacuated: only collectors whose references
  // are plain addresses are read through.
  for (const char* collector : {"UseZGC", "UseShenandoahGC"}) {
    if (hotspot_bool_flag(collector).value_or(false)) return collector;
  }
  return nullptr;
}

bool ObjectSizes::init(JNIEnv* jni, jvmtiEnv* jvmti, std::string* why) {
  if (!measure_arrays(jni, jvmti, why)) return false;
  if (const char* collector = unreadable_collector()) {
    *why = std::string("instance sizes are not read with -XX:+") + collector;
    return false;
  }
  auto klass = hotspot_static_address("java_lang_Class", "_klass_offset");
  auto helper = hotspot_field_offset("Klass", "_layout_helper");
  auto mirror = hotspot_field_offset("Klass", "_java_mirror");
  if (!klass || !helper || !mirror) {
    *why = "the VM does not describe java_lang_Class::_klass_offset, Klass::_layout_helper and Klass::_java_mirror "
           "(not HotSpot, or a HotSpot without its Serviceability Agent tables)";
    return false;
  }
  klass_offset_ = static_cast<uint64_t>(*reinterpret_cast<const int32_t*>(*klass));
  layout_helper_offset_ = *helper;
  java_mirror_offset_ = *mirror;
  if (klass_offset_ == 0) {
    *why = "java_lang_Class::_klass_offset is not set";
    return false;
  }
  ready_ = true;
  if (!check_instances(jni, jvmti, why)) {
    ready_ = false;
    return false;
  }
  return true;
}

bool ObjectSizes::measure_arrays(JNIEnv* jni, jvmtiEnv* jvmti, std::string* why) {
  static const ArrayMaker kMakers[] = {{SiteKind::kArray1, &make_bytes, 0},
                                       {SiteKind::kArray2, &make_chars, 1},
                                       {SiteKind::kArray4, &make_ints, 2},
                                       {SiteKind::kArray8, &make_longs, 3},
                                       {SiteKind::kReferences, &make_objects, -1}};
  jvmti::LocalFrame frame(jni, 8);
  // The alignment: the largest power of two dividing every measured size (at most 256, HotSpot's
  // largest ObjectAlignmentInBytes).
  std::vector<std::vector<uint64_t>> sizes;
  uint64_t alignment = 256;
  for (const ArrayMaker& maker : kMakers) {
    std::vector<uint64_t> measured;
    for (jsize length = 0; length <= kLongestMeasured; ++length) {
      jarray array = maker.make(jni, length);
      jlong size = 0;
      if (array == nullptr || jvmti->GetObjectSize(array, &size) != JVMTI_ERROR_NONE || size <= 0) {
        jvmti::clear_exception(jni);
        *why = "cannot measure arrays (GetObjectSize)";
        return false;
      }
      jni->DeleteLocalRef(array);
      measured.push_back(static_cast<uint64_t>(size));
      while (alignment > 8 && static_cast<uint64_t>(size) % alignment != 0) alignment /= 2;
    }
    sizes.push_back(std::move(measured));
  }
  alignment_ = static_cast<int32_t>(alignment);
  for (size_t m = 0; m < sizeof(kMakers) / sizeof(kMakers[0]); ++m) {
    const ArrayMaker& maker = kMakers[m];
    bool found = false;
    for (int32_t shift : {0, 1, 2, 3}) {
      if (maker.element_shift >= 0 && shift != maker.element_shift) continue;
      if (maker.element_shift < 0 && shift != 2 && shift != 3) continue;  // narrow or wide references
      for (int32_t base = 8; base <= 48 && !found; ++base) {
        bool fits = true;
        for (jsize length = 0; length <= kLongestMeasured && fits; ++length) {
          uint64_t expected = aligned(static_cast<uint64_t>(base) + (static_cast<uint64_t>(length) << shift), alignment);
          fits = expected == sizes[m][static_cast<size_t>(length)];
        }
        if (fits) {
          arrays_[static_cast<int>(maker.kind)] = {base, shift};
          found = true;
        }
      }
      if (found) break;
    }
    if (!found) {
      *why = "the JVM's array sizes fit no header + elements layout";
      return false;
    }
  }
  return true;
}

uint64_t ObjectSizes::instance_size(jclass klass) const {
  if (!ready_ || klass == nullptr) return 0;
  const uintptr_t* slot = handle_slot(klass);
  // A collection may move the mirror while this reads it: the Klass read is trusted only when the
  // Klass names the same mirror and the handle still holds it afterwards.
  for (int attempt = 0; attempt < 8; ++attempt) {
    uintptr_t mirror = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (mirror == 0) return 0;
    uintptr_t klass_pointer = *reinterpret_cast<const uintptr_t*>(mirror + klass_offset_);
    if (klass_pointer == 0) return 0;  // a primitive type's mirror
    int32_t helper = *reinterpret_cast<const int32_t*>(klass_pointer + layout_helper_offset_);
    uintptr_t mirror_slot = *reinterpret_cast<const uintptr_t*>(klass_pointer + java_mirror_offset_);
    if (mirror_slot == 0) return 0;
    uintptr_t named = __atomic_load_n(reinterpret_cast<const uintptr_t*>(mirror_slot), __ATOMIC_ACQUIRE);
    if (named == mirror && __atomic_load_n(slot, __ATOMIC_ACQUIRE) == mirror) {
      // An instance class: the size in bytes, its lowest bit a slow-path flag. Arrays are negative.
      return helper > 0 ? static_cast<uint64_t>(helper & ~1) : 0;
    }
  }
  return 0;
}

bool ObjectSizes::check_instances(JNIEnv* jni, jvmtiEnv* jvmti, std::string* why) {
  jvmti::LocalFrame frame(jni, 16);
  std::vector<jobject> instances;
  if (jclass object = jni->FindClass("java/lang/Object")) instances.push_back(jni->AllocObject(object));
  if (jclass integer = jni->FindClass("java/lang/Integer")) instances.push_back(jni->AllocObject(integer));
  instances.push_back(jni->NewStringUTF("fasthprof"));
  jthread thread = nullptr;
  if (jvmti->GetCurrentThread(&thread) == JVMTI_ERROR_NONE) instances.push_back(thread);
  if (jclass loaders = jni->FindClass("java/lang/ClassLoader")) {
    jmethodID system = jni->GetStaticMethodID(loaders, "getSystemClassLoader", "()Ljava/lang/ClassLoader;");
    if (system != nullptr) instances.push_back(jni->CallStaticObjectMethod(loaders, system));
  }
  if (jvmti::clear_exception(jni) || instances.size() != 5) {
    *why = "cannot make the instances to check sizes with";
    return false;
  }
  for (jobject instance : instances) {
    jlong size = 0;
    jclass klass = instance == nullptr ? nullptr : jni->GetObjectClass(instance);
    if (klass == nullptr || jvmti->GetObjectSize(instance, &size) != JVMTI_ERROR_NONE) {
      *why = "cannot measure an instance (GetObjectSize)";
      return false;
    }
    uint64_t read = instance_size(klass);
    if (read != static_cast<uint64_t>(size)) {
      char* signature = nullptr;
      jvmti->GetClassSignature(klass, &signature, nullptr);
      *why = "the VM's instance size of " + jvmti::take_string(jvmti, signature) + " reads " + std::to_string(read) +
             " bytes, GetObjectSize says " + std::to_string(size);
      return false;
    }
  }
  return true;
}

}  // namespace fasthprof
