// Before a heap walk: every loaded class described for its CLASS DUMP (names, superclass, loader,
// fields, static values read through JNI) and the objects that only a java.lang.Class object's own
// instance fields hold (HotSpot's FollowReferences does not follow them), gathered into one array
// that the walk then starts from like any JNI global.
//
// Threads: the writer thread (the profile's owner), with the application's threads suspended;
// never from a heap-walk callback.
#pragma once

#include <jvmti.h>

#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

#include "heap_dump/heap_dump_layout.h"
#include "records/profile_writer.h"

namespace fasthprof {

class ClassTracker;

struct ClassCollection {
  uint64_t object_class_id = 0;  // java.lang.Object
  uint64_t class_class_id = 0;   // java.lang.Class
  jobject class_field_holder = nullptr;  // global reference to an Object[] (may be null)
  uint64_t class_field_holder_id = 0;
  uint64_t class_field_objects = 0;
};

// Returns a new object ID for an untagged object (ids.h heap-dump space).
using IdSource = std::function<uint64_t()>;

// Describes every loaded class into *table (then resolve()s it). Field names get UTF8 IDs when
// the output is binary. Objects named by static fields (and class loaders) are tagged with new
// IDs when untagged. primfields=false leaves primitive statics 0.
bool collect_classes(jvmtiEnv* jvmti, JNIEnv* jni, ProfileWriter& writer, ClassTracker& tracker,
                     bool primfields, const IdSource& new_id, ClassLayoutTable* table,
                     ClassCollection* collection);

// What a class object refers to beyond what JNI reads: its CLASS DUMP's signers, protection
// domain and constant-pool entries (object IDs; constants highest index first).
struct ClassReferences {
  uint64_t signers_id = 0;
  uint64_t protection_domain_id = 0;
  std::vector<ConstantPoolEntry> constant_pool;
};

// Walks from the given class objects (already tagged with their class IDs) one step, recording
// by class ID what each refers to; untagged referees get IDs from new_id. One FollowReferences
// call (a safepoint). Returns false when the walk failed (*found then holds what it reported).
bool find_class_references(jvmtiEnv* jvmti, JNIEnv* jni, const jclass* classes, size_t count,
                           uint64_t class_class_id, const IdSource& new_id,
                           std::unordered_map<uint64_t, ClassReferences>* found);

// Releases the holder's global reference.
void release_class_collection(JNIEnv* jni, ClassCollection* collection);

}  // namespace fasthprof
