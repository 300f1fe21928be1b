// heap=all counted by injection (docs/allocation-sites.md "Heap dumps with heap=all"): the objects
// allocated while tracking carry their site in their header, which the dump's JVMTI walk cannot
// read (its callbacks give no object's address). So, before the walk, with the program held:
//
//   0. before the classes' statics are read (prepare()): a full collection (the dead objects the
//      collector has not freed yet would be listed and tagged too), the heap's size, and the
//      TRACE of every site a mark can name written (the tracker calls into Java for the marks'
//      pairs, which must not change a static after the dump read it);
//   1. the allocation tracker walks the heap at a safepoint with the collector's own iteration
//      (AllocationTraces::walk_object_traces): each object's allocation trace and class word, in
//      the collector's order (ObjectTraceList, in memory reserved here for the most objects the
//      heap can hold);
//   2. JVMTI's IterateThroughHeap runs the same iteration over the same heap: its n-th object is
//      the list's n-th; each one with a trace and no tag gets the next heap-dump ID (ids.h) as its
//      tag, and that ID keeps the trace here; one tagged already (a static field's value, which
//      the dump tagged for its CLASS DUMP; a thread; a class loader) keeps its tag, kept here too;
//   3. the dump's walk meets those objects tagged, as it meets the objects the event path tags at
//      allocation, and names their traces (trace_serial()); the dump's tags are cleared after it.
//
// Step 2 is checked as it goes: each class tag must meet one class word and each class word one
// class tag, and both iterations the same number of objects. Anything else (an allocation or a
// collection between the two) takes the tags back, and the dump names no allocation trace for
// those objects: said on stderr.
//
// Owner: the dump's thread (the writer), with the program's threads held. The IterateThroughHeap
// callback runs on the VM thread at a safepoint: no JNI, no JVMTI, no lock.
#pragma once

#include <jvmti.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "sites/allocation_traces.h"

namespace fasthprof {

struct ReportContext;

class MarkedObjectTags {
 public:
  // Step 0. heap_bytes: the heap's committed size (Runtime.totalMemory()).
  void prepare(jvmtiEnv* jvmti, ReportContext& report, AllocationTraces& traces, uint64_t heap_bytes);
  // Steps 1 and 2, last before the dump's walk. False with *why when the objects could not be
  // named (nothing is left tagged then).
  bool tag(jvmtiEnv* jvmti, AllocationTraces& traces, std::string* why);

  // The allocation trace serial of an object whose tag is `tag`, 0 when tag() did not set it.
  // Lock-free, allocates nothing: safe in heap-walk callbacks.
  uint32_t trace_serial(uint64_t tag) const;

  // For verbose=y.
  uint64_t objects() const { return objects_; }  // walked by both iterations
  uint64_t tagged() const { return serials_.size(); }
  double seconds() const { return seconds_; }

 private:
  uint64_t first_index_ = 0;       // heap-dump ID indexes (first_index_, first_index_ + n] are ours
  std::vector<uint32_t> serials_;  // by ID index - first_index_ - 1
  std::unordered_map<uint64_t, uint32_t> tagged_;  // objects that had a tag already: tag -> serial
  uint64_t heap_bytes_ = 0;
  uint64_t objects_ = 0;
  double seconds_ = 0;
};

}  // namespace fasthprof
