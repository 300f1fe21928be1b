// Before a heap dump: every loaded class that is not linked yet gets linked (never initialized),
// so that JVMTI can describe its fields and the walk reports its statics. JVMTI refuses the fields
// of a class that is not prepared, and HotSpot's heap walk skips its statics, yet such a class
// already holds its constant statics (set when its mirror was made) and may have instances (JDK
// 25's archived heap). The JDK's own dumper lists both.
//
// Linking goes through the private native Class.getDeclaredFields0(true), whose VM side links the
// class before it lists the public fields (jvm.cpp, JVM_GetClassDeclaredFields, JDK 17 and 25).
// The JVM specification lets an implementation link any loaded class at any time, so the program
// sees no difference besides the time. Linking runs the verifier, which may load further classes
// (hence rounds), and may fail (VerifyError, NoClassDefFoundError): that class stays unlinked and
// is counted. What linking leaves in the heap is the VM's own (the constant-pool cache's
// resolved-references array of each class, the classes it loads); the Field objects made for the
// public fields are garbage at once.
//
// Threads: the writer thread, in a report (linking may post ClassLoad and ClassPrepare on this
// thread, which it applies at once as the profile's owner, and may run class loaders' Java code),
// before the application's threads are suspended (a class loader's lock may be held by one of
// them).
#pragma once

#include <jvmti.h>

#include <cstdint>
#include <string>

namespace fasthprof {

struct ClassLinkResult {
  uint64_t linked = 0;          // classes that were unlinked and are prepared now
  uint64_t failed = 0;          // classes whose linking threw; they stay unlinked
  std::string first_failure;    // "<class>: <exception class>" of the first failure
  std::string error;            // non-empty when nothing could be tried (no such method)
};

// Links every loaded class that is neither prepared, an array, a primitive type nor in error,
// in rounds until a round finds nothing new (at most a few rounds). Clears every exception it
// causes. Allocates a little Java heap (the Field arrays, garbage at once).
ClassLinkResult link_unprepared_classes(jvmtiEnv* jvmti, JNIEnv* jni);

}  // namespace fasthprof
