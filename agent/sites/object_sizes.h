// Object sizes without the object, for allocations counted by injected code (docs/allocation-sites.md
// "Counted by injection"): the injected call runs before the allocation, so it has no object whose
// size JVMTI could give.
//
//   arrays:    header + length x element size, rounded up to the object alignment. The header and
//              alignment are measured at start: GetObjectSize of arrays of every element size and of
//              lengths 0 to 40, which must all fit one (base, shift, alignment) per kind.
//   instances: HotSpot's own instance size of the class, Klass::_layout_helper, read the way the
//              Serviceability Agent and async-profiler read VM structures: the offsets come from the
//              tables libjvm.so exports (agent/hotspot_structs.h), never from one JDK's layout; the
//              jclass handle gives the mirror, the mirror's java_lang_Class::_klass_offset field the
//              Klass, checked against the Klass's own mirror handle (a read that raced a collection
//              moving the mirror is retried). At start the sizes read are compared with GetObjectSize
//              of real instances (Object, String, Integer, the current Thread, the system class
//              loader with its VM-injected fields); any difference, or a name the VM does not list,
//              and nothing is read from the VM at all (init() says why). Not with ZGC or
//              Shenandoah, whose references are not plain addresses to follow.
//
// Threads: init() on a Java thread; then any thread with a local reference to the class.
#pragma once

#include <jni.h>
#include <jvmti.h>

#include <cstdint>
#include <string>

namespace fasthprof {

// How an array of one element size is laid out: bytes = (base + (length << shift) + align - 1)
// & ~(align - 1).
struct ArrayLayout {
  int32_t base = 0;
  int32_t shift = 0;
};

// The kinds of allocation sites the injected code tells apart (FasthprofAllocs.java): their number
// is the low 4 bits of a site ID.
enum class SiteKind : uint8_t {
  kInstance = 0,      // new C
  kArray1 = 1,        // boolean[], byte[]
  kArray2 = 2,        // char[], short[]
  kArray4 = 3,        // int[], float[]
  kArray8 = 4,        // long[], double[]
  kReferences = 5,    // anewarray, and the levels of a multianewarray above its innermost
};

// The kind of a site from its type as the rewriter names it ("java/lang/String", "[I", "[[J", ...):
// for a multianewarray, one level's type (a level's arrays are all of one type).
SiteKind site_kind(const std::string& type);

class ObjectSizes {
 public:
  bool init(JNIEnv* jni, jvmtiEnv* jvmti, std::string* why);
  // The flag of the collector in use ("UseZGC") when its references cannot be read through (init()
  // then fails), else null. Any time after the VM's flags are parsed.
  static const char* unreadable_collector();

  // Kinds 1 to 5 (SiteKind), and the alignment in bytes.
  const ArrayLayout& array_layout(SiteKind kind) const { return arrays_[static_cast<int>(kind)]; }
  int32_t alignment() const { return alignment_; }

  // The size in bytes of an instance of klass (a local or global reference); 0 for an array class,
  // an interface or a primitive type, or when the VM's structures cannot be read.
  uint64_t instance_size(jclass klass) const;

 private:
  bool measure_arrays(JNIEnv* jni, jvmtiEnv* jvmti, std::string* why);
  bool check_instances(JNIEnv* jni, jvmtiEnv* jvmti, std::string* why);

  ArrayLayout arrays_[6];
  int32_t alignment_ = 8;
  uint64_t klass_offset_ = 0;          // of the Klass* in a mirror (java_lang_Class::_klass_offset)
  uint64_t layout_helper_offset_ = 0;  // Klass::_layout_helper
  uint64_t java_mirror_offset_ = 0;    // Klass::_java_mirror (an OopHandle: the address of a slot)
  bool ready_ = false;
};

}  // namespace fasthprof
