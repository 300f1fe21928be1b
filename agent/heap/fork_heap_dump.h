// dumper=fork (and auto where its guards pass): a binary heap dump whose contents are the heap at
// the moment of the request, for which the program stops only as long as a fork() takes
// (docs/heap-dumps.md "Dumps by fork").
//
//   writer thread                     VM thread (safepoint)              child (a copy of the VM
//   FollowReferences(callback) ---->  first callback: arena lock held,    thread alone, heap frozen)
//                                     fork(), lock let go, ABORT  ----->  lock let go, made safe,
//   <---- returns: the program runs on                                    HotSpot's dumper into
//   ChildReaper waits; the drain                                          the pipe; status line;
//   thread rewrites the pipe's bytes  <----------- pipe ---------------   _exit
//   into the report (hotspot_dump_run.h)
//
// The child is runtime/fork_dump/ (hotspot_dumper.h: HotSpot's symbols and what the child sets
// right; fork_child.h: OOM score, watchdog, reaper). Guards, each with its reason under verbose=y
// (and said when dumper=fork was asked for): a binary dump HotSpot's dumper can write (as
// dumper=vm), JDK 17 or 25 with libjvm.so's symbols, the Serial, Parallel or G1 collector, memory
// for the child's copies (runtime/base/memory_headroom.h), disk for JDK 25's side file. A fork dump
// that fails before writing anything falls back to the JVM's dumper through attach, then the walk.
//
// Owner: the writer thread, between the sink's begin_report and end_report.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "feature.h"
#include "fork_dump/hotspot_dumper.h"
#include "heap/hotspot_dump_run.h"
#include "options/options.h"

namespace fasthprof {

struct ForkPlan {
  bool fork = false;
  std::string why;  // "dumper=auto: by fork (...)" or the reason it is not
  std::string folder;
  uint64_t watchdog_ms = 0;
};

class ForkHeapDump {
 public:
  ForkHeapDump(const AgentContext& context, VmDumpNumbering& numbering) : context_(context), numbering_(numbering) {}

  // Whether this dump goes by fork. jdk: the feature version (17, 25; 0 unknown). used_heap: the
  // bytes the heap holds (for the side file's room).
  ForkPlan plan(HeapDumperChoice choice, int jdk, const std::function<uint64_t()>& used_heap);

  // One dump by fork. kFallBack: nothing was written and the message is printed; the caller tries
  // the next dumper.
  DumpOutcome run(ReportContext& report, const ForkPlan& plan);

 private:
  // The figures of one fork, for verbose=y.
  struct ForkFigures {
    double pause_seconds = 0;  // FollowReferences, from the call to its return
    double fork_seconds = 0;   // fork() alone
    double child_seconds = 0;  // from the fork to the child's end
    int64_t child_private_bytes = -1;
    int child_pid = 0;
  };
  DumpReply fork_and_wait(ReportContext& report, const std::string& pipe, const ForkPlan& plan, ForkFigures* figures);
  const HotSpotDumper* dumper(int jdk, std::string* why);

  AgentContext context_;
  VmDumpNumbering& numbering_;
  std::optional<HotSpotDumper> dumper_;
  bool resolved_ = false;
  std::string unresolved_why_;
};

}  // namespace fasthprof
