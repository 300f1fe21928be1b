// What a heap dump needs of allocation tracking (heap=all): every object that allocation tracking
// tagged names its allocation trace in the dump. The Profiler hands the allocation tracker to the
// heap dumper as this, so that neither feature looks the other up.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace fasthprof {

struct ReportContext;

// heap=all counted by injection: the allocation trace of every object of the heap, in the order the
// collector iterates them (JVMTI's IterateThroughHeap reports them in that order too), taken at
// one safepoint while the program is held. Entry: the object's class word (the narrow class
// pointer, or the low half of a full one) << 32 | its allocation trace serial (0: none).
struct ObjectTraceList {
  uint64_t* entries = nullptr;  // the caller's, capacity entries
  size_t capacity = 0;
  size_t count = 0;    // objects walked; those past capacity are counted, not written
  uint64_t named = 0;  // of them, with a trace serial
};

class AllocationTraces {
 public:
  virtual ~AllocationTraces() = default;

  // Interns every allocation queued so far and writes the TRACEs of every site interned up to
  // now, so that trace_serial_of_tag() answers for the objects allocated before this call with
  // serials already in the file. Call from a report (the owner).
  virtual void intern_pending(ReportContext& report) = 0;

  // If tag was set by allocation tracking on an object, returns true and sets *trace_serial to the
  // serial of its allocation trace (0 when its site has not been interned yet: call
  // intern_pending() first, and name the empty trace for 0). Returns false for any other tag
  // (class, thread and loader IDs, heap-dump tags, 0). Lock-free, allocates nothing: safe in
  // heap-walk callbacks. Any thread.
  virtual bool trace_serial_of_tag(uint64_t tag, uint32_t* trace_serial) const = 0;

  // Whether the objects allocated while tracking carry their site in their header instead of a
  // tag (heap=all counted by injection): the dump then asks walk_object_traces() for them.
  virtual bool marks_objects() const = 0;
  // With the program held, before the dump reads any class's statics (it calls into Java): writes
  // the TRACE of every site the objects' marks can name. The owner, in a report.
  virtual void prepare_object_traces(ReportContext& report) = 0;
  // Then, with nothing allocating until the dump's walk: walks the heap at a safepoint and fills
  // *out (ObjectTraceList) by the traces prepared. No Java code runs. False with *why when the heap
  // cannot be walked.
  virtual bool walk_object_traces(ObjectTraceList* out, std::string* why) = 0;
};

}  // namespace fasthprof
