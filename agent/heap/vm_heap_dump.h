// dumper=vm: a binary heap dump written by HotSpot's own dumper (the one `jcmd GC.heap_dump`
// runs), at the JVM's speed, and inserted into fasthprof's output as the heap dump section of the
// report (docs/decisions.md "Binary format", `dumper=auto`; docs/heap-dumps.md "Who writes the dump").
//
// One dump, on the writer thread (the owner), between the sink's begin_report and end_report:
//   1. a named pipe (runtime/vm_dump/fifo_drain.h) in a private folder (mode 0700) made in the output's
//      folder (the working folder with net=), and the thread that drains it;
//   2. the JVM's attach listener (runtime/vm_dump/hotspot_attach.h): its socket if it exists, else started
//      by the trigger file and a SIGQUIT, which is sent only when the VM's own flags say attach is
//      enabled and signals are not reduced (-Xrs);
//   3. "jcmd GC.heap_dump -overwrite <pipe>" on the socket; the owner waits in read() for the
//      reply, which comes when the JVM has written the whole dump;
//   4. meanwhile the drain thread hands every chunk to the VmDumpRewriter, which writes into the
//      sink (the drain thread is then the sink's one producer, as the VM thread is during a walk),
//      or, on JDK 17-21 with net= or gz=y, to a local side file that the owner rewrites into the
//      sink after the reply: there the VM thread writes the pipe inside its safepoint, so nothing
//      slower than the page cache may stand between it and the reader.
// The drain thread never calls the VM; the owner calls nothing but read() while the VM works.
#pragma once

#include <jvmti.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "feature.h"
#include "heap/hotspot_dump_run.h"
#include "vm_dump/hotspot_attach.h"
#include "vm_dump/vm_dump_rewriter.h"

namespace fasthprof {

// Which dumper writes one dump, and why: the line verbose=y prints.
struct DumperPlan {
  bool vm = false;
  std::string why;
  bool stage = false;  // drain to a local side file first (JDK 17-21 with net= or gz=y)
  bool may_signal = false;  // the listener may be started with a SIGQUIT
  std::string folder;  // where the pipe (and the JVM's side file) go
};

class VmHeapDump {
 public:
  explicit VmHeapDump(const AgentContext& context);

  // Whether the JVM's dumper writes a dump for which `choice` was asked (dumper=fork: a dump by fork
  // that cannot be made), under format=, heap=, primfields=, primarrays=, the JDK, the VM's attach
  // flags, the collector at VM death and the free space. used_heap gives the bytes the heap holds
  // (JNI). Writer thread.
  DumperPlan plan(HeapDumperChoice choice, bool at_exit, const std::function<uint64_t()>& used_heap);

  // kFallBack: nothing was written, the caller runs the JVMTI walk (the message is printed).
  using Outcome = DumpOutcome;
  // Runs one VM dump into the sink. Writer thread, between begin_report and end_report.
  Outcome run(ReportContext& report, const DumperPlan& plan);

  // The JDK's feature version (17, 25), 0 if unknown.
  int jdk_version();
  // Serials and IDs of every dump HotSpot's dumper writes into this run's output (by attach or fork).
  VmDumpNumbering& numbering() { return numbering_; }

 private:
  bool request(ReportContext& report, const DumperPlan& plan, HotSpotDumpRun& dump, std::string* error);
  AgentContext context_;
  HotSpotAttach attach_;
  VmDumpNumbering numbering_;
  int jdk_ = -1;
  bool listener_failed_ = false;  // the listener would not start: never signal again
};

}  // namespace fasthprof
