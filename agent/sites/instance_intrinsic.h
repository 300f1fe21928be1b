// Unsafe.allocateInstance compiled inline again while VMObjectAlloc is on (alloc=inject).
//
// Since JDK 23 HotSpot's JIT makes Unsafe.allocateInstance's object inline only while no agent
// wants VMObjectAlloc events: the compiled intrinsic reads a word the VM keeps beside the event's
// own flag (JvmtiExport::_should_notify_object_alloc, a copy of "VMObjectAlloc is enabled" made
// whenever the enabled events change) and, when it is set, calls the native, which allocates and
// posts the event. alloc=inject wants the event for the other natives, but counts
// Unsafe.allocateInstance at its calls and leaves its events out: so each of javac's 2.3 million
// lambda objects paid a native call and a posted event for nothing (JDK 17's intrinsic never looked).
//
// This clears that word once the event is on, so that compiled code makes these objects inline
// again; the event's own flag, which the natives read, stays set. The word is found by its name in
// libjvm.so's full symbol table (runtime/fork_dump/elf_symbols.h), on JDK 23+, and taken only when
// it behaves as that copy: 0 before the agent enables the event, 1 right after. When another agent
// had the event on already, the word is left alone (its events stay whole). The VM sets the word
// again whenever the enabled events change; the owner clears it again at each collect().
#pragma once

#include <jvmti.h>

#include <atomic>
#include <string>

namespace fasthprof {

class InstanceIntrinsic {
 public:
  // Before the agent enables VMObjectAlloc (a Java thread, live), once: finds the word and reads
  // it (JDK before 23 needs nothing).
  void prepare(jvmtiEnv* jvmti);
  // Right after the event is enabled (start, net= CONTROL allocation on): the first time, checks
  // that the word followed it and clears it (never touched again if it did not); later, as
  // keep_released().
  void release();
  // The owner, from time to time: clears the word again if the VM set it since (enabled events
  // changed). Nothing once release() failed or was never called.
  void keep_released();
  // For verbose=y: how compiled code makes Unsafe.allocateInstance's objects, one line.
  std::string describe() const;

 private:
  bool tried_ = false;   // prepare() ran
  int* word_ = nullptr;  // found by prepare(), not yet released
  bool released_ = false;
  std::string why_;      // why compiled code calls the native; "" when it does not
  std::atomic<uint64_t> resets_{0};
};

}  // namespace fasthprof
