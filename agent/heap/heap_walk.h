// The heap walk of a dump: FollowReferences with callbacks that turn each report into
// HeapDumpAssembler calls. The callbacks run on the VM thread at a safepoint: they make no JNI
// call and no JVMTI call, take no lock and never wait for another thread; their only outputs are
// the assembler (whose bytes go to the sink's buffers, drained by a plain pthread, or to a staging
// file) and stderr (progress).
#pragma once

#include <jvmti.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/ids.h"
#include "heap_dump/heap_dump_assembler.h"
#include "heap_dump/heap_dump_layout.h"

namespace fasthprof {

class AllocationTraces;
class MarkedObjectTags;

// A thread whose stack the dump took: its serial and how many frames its STACK TRACE holds.
struct DumpThread {
  uint32_t serial = 0;
  uint32_t trace_serial = 0;
  int32_t frames = 0;
};

struct HeapWalkSetup {
  const ClassLayoutTable* classes = nullptr;
  HeapDumpAssembler* assembler = nullptr;
  uint64_t class_class_id = 0;
  uint64_t holder_id = 0;  // the class-field holder array: walked through, never written
  // Thread object ID -> thread; their ROOT THREAD OBJECTs are already written.
  const std::unordered_map<uint64_t, DumpThread>* threads = nullptr;
  // heap=all: objects tagged by allocation tracking name their allocation trace (null: none do).
  const AllocationTraces* allocation_traces = nullptr;
  // heap=all counted by injection: objects tagged before the walk for their header's trace.
  const MarkedObjectTags* marked_tags = nullptr;
  bool text = false;             // text output needs every object's size
  bool primitive_fields = true;  // primfields=y
  bool primitive_arrays = true;  // primarrays=y
  bool progress = true;          // print progress on stderr for long dumps
  std::function<uint64_t()> bytes_written;  // output so far, for the progress line (may be empty)
};

struct HeapWalkResult {
  jvmtiError error = JVMTI_ERROR_NONE;
  double seconds = 0;
  uint64_t class_instances = 0;  // int.class and kin, written as java.lang.Class instances
  size_t peak_pending = 0;       // largest side table of carried lengths/sizes
  bool failed = false;           // a callback threw (reported on stderr) and the walk was aborted
};

// The next object ID of the heap-dump space (ids.h); IDs are never reused within a run.
uint64_t next_heap_dump_id();
// The highest ID handed out so far (0 if none).
uint64_t last_heap_dump_id();
// Hands out `count` IDs at once: their indexes are the returned value + 1 to + count.
uint64_t reserve_heap_dump_ids(uint64_t count);

// Runs the walk. Call on the dump's thread with no lock that a callback or a JVMTI caller could
// need. Ends with every object written (assembler.end_object()).
HeapWalkResult run_heap_walk(jvmtiEnv* jvmti, const HeapWalkSetup& setup);

// Removes the heap-dump tags (ids.h heap-dump space) from every object, or those whose ID index is
// in [first, last] only. Returns the seconds taken.
double clear_heap_dump_tags(jvmtiEnv* jvmti, uint64_t* cleared, uint64_t first = 1, uint64_t last = kIdIndexMask);

}  // namespace fasthprof
