// Allocation sites carried in objects' mark words, for exact live counts at a report (heap=sites):
// instead of a JVMTI tag per object (10-40x an allocation's cost), injected Java code writes the
// site's ID into the unused upper bits of the new object's mark word, and an identity hash into its
// hash bits when it has none (a full collection resets an unhashed mark to the class's prototype;
// a hashed one keeps all its bits). At a report every object of the heap is walked at a safepoint
// and each one carrying an ID is given to a visitor.
//
//   unlocked 64-bit mark, JDK 17:  id:25 | hash:31 | gap:1 age:4 biased:1 lock:2   (hash_shift 8)
//   JDK 25, no compact headers:    id:22 | hash:31 | gap:4 age:4 self-fwd:1 lock:2  (hash_shift 11)
//   id_shift = hash_shift + hash_bits; the ID is mark >> id_shift, 0 for an object without one.
//
// A locked object's mark holds something else; the ID is then read where HotSpot keeps the
// displaced header: a stack lock (lock bits 00, JDK 17 and LockingMode=1) points at a BasicLock
// on the owner's stack whose first field holds it; an inflated monitor (10) points at an
// ObjectMonitor whose header field (_header, JDK 25 _metadata) holds it; JDK 25's lightweight
// locking (LockingMode=2: 00) and its monitor table (UseObjectMonitorTable: 10) leave the rest of
// the mark in place. An offset the VM does not list makes such objects unreadable (counted), never
// guessed.
//
// HotSpot-internal, and how each piece is checked before use (ObjectMarkLayout::why_not says what
// failed; nothing is read from the VM then):
//   - markWord's shifts, masks and lock values, the BasicLock and ObjectMonitor header offsets and
//     Universe::_collectedHeap: from the tables libjvm.so exports for the Serviceability Agent
//     (agent/hotspot_structs.h), never from one JDK's layout;
//   - the flags that change the mark (UseCompactObjectHeaders: the class in the upper bits;
//     UseBiasedLocking: a thread there; LockingMode, UseObjectMonitorTable) and the collector;
//   - the collector's own CollectedHeap::object_iterate(ObjectClosure*), by mangled name in
//     libjvm.so's full symbol table (runtime/fork_dump/elf_symbols.h), checked to be the one slot
//     of that name in the vtable of the heap object the VM runs (its first word is that vtable);
//   - CollectedHeap::ensure_parsability(bool) (the heap class's own where it overrides it), the
//     one such slot in the same vtable;
//   - ObjectClosure's ABI: one virtual function, do_object(oop) (memory/iterator.hpp, JDK 17 and
//     25), checked on libjvm.so's own IterateThroughHeapObjectClosure vtable (3 words: one slot);
//   - only the feature releases tested (17, 25), a 64-bit VM, Serial, Parallel or G1.
// The walk is entered the way agent/heap/fork_heap_dump.cpp forks: JVMTI's FollowReferences runs
// on the VM thread at a safepoint; its first callback (a root: JDK 17's walk has marked no object
// yet, JDK 25's marks in a bitmap of its own) makes the heap parsable as HotSpot's own iterations
// do first (JDK 17's FollowReferences has done it already: it is idempotent), runs the collector's
// object_iterate over the whole heap (stateless for these three collectors: G1 iterates its
// regions, Parallel and Serial their generations' spaces) and aborts JVMTI's walk, which then
// ends at once (IterateThroughHeap would run its own iteration on to the heap's end: as long again).
//
// Threads: read_object_mark_layout() on a Java thread (it makes arrays through JNI) after VMInit;
// walk_marked_objects() on any live thread with a JNIEnv (the writer thread), one at a time; the
// visitor runs on the VM thread at the safepoint.
#pragma once

#include <jni.h>
#include <jvmti.h>

#include <cstdint>
#include <string>

namespace fasthprof {

struct ObjectMarkLayout {
  bool usable = false;
  std::string why_not;  // one line when not usable

  int jdk = 0;
  int id_shift = 0;        // the ID is mark >> id_shift
  int id_bits = 0;         // 64 - id_shift
  int hash_shift = 0;      // the identity hash is (mark >> hash_shift) & hash_mask
  uint64_t hash_mask = 0;  // not shifted
  uint64_t lock_mask = 0;  // in place
  uint64_t unlocked_value = 0, locked_value = 0, monitor_value = 0, marked_value = 0;

  // Where a locked object's header is; -1 when the VM does not say (such objects are unreadable).
  int64_t stack_lock_header = -1;  // in the BasicLock a stack-locked mark points at
  int64_t monitor_header = -1;     // in the ObjectMonitor an inflated mark points at
  bool stack_locks_in_place = false;    // lightweight locking: 00 keeps the rest of the mark
  bool monitors_in_place = false;       // UseObjectMonitorTable: 10 keeps the rest of the mark

  // Where an array's length (a jint) is, from the object's address: 12 with compressed class
  // pointers, else 16; checked against GetObjectSize of byte arrays.
  int array_length_offset = 0;

  // Resolved in libjvm.so: the heap object and its object_iterate.
  void* heap = nullptr;
  void (*object_iterate)(void* heap, void* closure) = nullptr;
  void (*ensure_parsability)(void* heap, bool retire_tlabs) = nullptr;
  const char* collector = "";  // "G1", "Parallel", "Serial"
};

// Learns and checks the layout of this VM's marks (the header says what is checked). Never fails:
// an unusable layout says why in why_not.
ObjectMarkLayout read_object_mark_layout(jvmtiEnv* jvmti, JNIEnv* jni);

// Called for each object whose mark carries an ID, on the VM thread at a safepoint: no JNI, no
// JVMTI, no locks, no allocation (what it fills must be reserved before the walk). `object` is the
// object's address, valid only during the call's safepoint.
using MarkVisitor = void (*)(void* context, uint64_t id, uintptr_t object);

struct MarkWalkFigures {
  uint64_t objects = 0;     // every object the collector iterated
  uint64_t marked = 0;      // those with an ID, given to the visitor
  uint64_t unreadable = 0;  // locked, or in a state, whose header could not be read
  uint64_t stack_locked = 0;  // of the marked: locked on a stack (lock bits 00), header read as above
  uint64_t inflated = 0;      // of the marked: with an inflated monitor (10)
  uint64_t walk_ns = 0;     // the collector's iteration, at the safepoint
  uint64_t pause_ns = 0;    // the JVMTI call around it (the safepoint and its way in and out)
  uint64_t to_walk_ns = 0;  // of which from the call to the walk's start (the safepoint reached)

};

// Walks the whole heap at one safepoint: visit(context, id, object) for every object with an ID,
// or with every_object for every object in the collector's order (id 0: none, or unreadable).
// Dead objects the collector has not freed yet are walked too: force a full collection first for
// live counts. False with *why when it could not walk (the layout not usable, JVMTI refused).
// Needs can_tag_objects (FollowReferences).
bool walk_marked_objects(jvmtiEnv* jvmti, const ObjectMarkLayout& layout, MarkVisitor visit, void* context,
                         MarkWalkFigures* figures, std::string* why, bool every_object = false);

}  // namespace fasthprof
