// heap=dump (and heap=all): a complete heap dump in every report (kill -QUIT, and VM death with
// doe=y), binary (HEAP DUMP SEGMENTs closed by HEAP DUMP END) or text (HEAP DUMP BEGIN ... END).
//
// One dump, on the writer thread (the profile's owner, docs/ARCHITECTURE.md):
//   0. before any thread is suspended: the classes that are loaded but not linked yet are linked
//      (class_linker.h), so that every class has its fields;
//   1. threads: every live thread registered, the application's suspended (the agent's own
//      "fasthprof ..." threads excepted), the queues drained once more (heap=all: every
//      allocation's TRACE; counted by injection, every TRACE a header mark can name), each
//      thread's full stack interned and its STACK TRACE written;
//   2. classes: every loaded class described (heap_class_layouts.h), statics read through JNI;
//      heap=all counted by injection: the objects named by their header marks tagged
//      (marked_object_tags.h), with nothing run in Java from here to the walk;
//   3. records: CLASS DUMPs (superclass first), then a ROOT THREAD OBJECT per thread, then the
//      walk (heap_walk.h) writes the other roots and every object;
//   4. threads resumed, the dump closed, and the tags the dump set removed.
// Binary dumps therefore need no staging: every CLASS DUMP precedes every instance, and every
// ROOT JAVA FRAME follows its thread's ROOT THREAD OBJECT.
//
// A binary dump that needs nothing only the walk gives is written by HotSpot's own dumper instead
// (dumper=, vm_heap_dump.h); the walk stays the fallback for every case it cannot serve. A text dump stages its objects in a
// temporary file (heap_dump_staging.h) so that HEAP DUMP BEGIN carries the true totals.
#pragma once

#include <jvmti.h>

#include "feature.h"
#include "heap/fork_heap_dump.h"
#include "heap/vm_heap_dump.h"
#include "sites/allocation_traces.h"

namespace fasthprof {

class HeapDumper final : public Feature {
 public:
  // allocation_traces: heap=all's allocation tracker (null with heap=dump alone).
  HeapDumper(const AgentContext& context, AllocationTraces* allocation_traces)
      : context_(context), allocation_traces_(allocation_traces), vm_dump_(context),
        fork_dump_(context, vm_dump_.numbering()) {}

  const char* dump_message() const override { return " Java heap ..."; }
  void served_commands(FeatureCommands* commands) override { commands->dump_heap = true; }
  void add_capabilities(jvmtiCapabilities* wanted) override;
  void write_report(ReportContext& report) override;

 private:
  // HotSpot's dumper by fork or attach, as dumper= and the guards say; false: the walk is next.
  bool dump_by_hotspot(ReportContext& report);

  AgentContext context_;
  AllocationTraces* allocation_traces_;
  // dumper=vm|auto: HotSpot's own dumper (vm_heap_dump.h); reports so far pick the turn of a
  // dumper=a+b list.
  VmHeapDump vm_dump_;
  // dumper=fork|auto: the same dumper in a child forked at a safepoint (fork_heap_dump.h).
  ForkHeapDump fork_dump_;
  uint64_t reports_ = 0;
};

}  // namespace fasthprof
