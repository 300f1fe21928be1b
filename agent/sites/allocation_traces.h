// What a heap dump needs of allocation tracking (heap=all): every object that allocation tracking
// tagged names its allocation trace in the dump. The Profiler hands the allocation tracker to the
// heap dumper as this, so that neither feature looks the other up.
#pragma once

#include <cstdint>

namespace fasthprof {

struct ReportContext;

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
};

}  // namespace fasthprof
