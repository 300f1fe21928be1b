// One heap dump written by HotSpot's own dumper into a pipe and from there into fasthprof's output:
// the pipe and its drain thread, the rewriter into fasthprof's records, the JVM's side files
// (JDK 22+) read in place, an optional local staging file. Two dumpers use it, differing only in
// who writes into the pipe: the JVM through its attach socket (dumper=vm, vm_heap_dump.h) and a
// forked child of the JVM (dumper=fork, fork_heap_dump.h).
//
//   open()            the private folder, the pipe, the drain thread (runtime/vm_dump/fifo_drain.h)
//   dump_into_pipe()  request(pipe path): returns when the writer is done; the drain is finished
//   take()            the writer's reply checked, the staged copy rewritten, the rewrite finished,
//                     the sink flushed: kDone, or kFallBack (nothing was written: reason() says why,
//                     the caller picks the next dumper) or kAbandoned (the report was cut back, said)
//
// Owner: the writer thread, between the sink's begin_report and end_report. The drain thread
// never calls the VM.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "heap_dump/heap_dump_staging.h"
#include "sink/async_sink.h"
#include "vm_dump/fifo_drain.h"
#include "vm_dump/vm_dump_pipe.h"
#include "vm_dump/vm_dump_rewriter.h"

namespace fasthprof {

// How the writer of the pipe said its dump ended.
struct DumpReply {
  bool done = false;         // the whole dump is in the pipe
  bool out_of_room = false;  // it failed for want of disk space (the report is cut back, not retried)
  std::string reason;        // why not, when not done
};

// Whether the folder has room for a dump's side file (the JVM's on JDK 22+, or a local staging
// file) beside the output, which grows by as much (net: the output is elsewhere): the used heap
// stands for both (it overstates a live dump). Empty when it has, else the reason.
std::string side_file_room(const std::string& folder, uint64_t used_heap_bytes, bool net);

enum class DumpOutcome {
  kDone,      // the dump is in the report (or the sink failed and cut it back; it said so)
  kFallBack,  // nothing was written: another dumper may write this dump
  kAbandoned  // a failure after bytes were written: the report was cut back (message printed)
};

class HotSpotDumpRun {
 public:
  // dumper: "vm" or "fork", for the stats line. folder: where the private folder goes. stage:
  // drain into a local side file first. side_files: look for the JVM's side files (JDK 22+).
  HotSpotDumpRun(VmDumpNumbering& numbering, AsyncSink& sink, const char* dumper, std::string folder, bool stage,
                 bool side_files);
  ~HotSpotDumpRun();
  HotSpotDumpRun(const HotSpotDumpRun&) = delete;
  HotSpotDumpRun& operator=(const HotSpotDumpRun&) = delete;

  bool open(std::string* error);
  // request(pipe) has the dump written into the pipe and says how it went; returns when it did
  // and the pipe is drained.
  void dump_into_pipe(const std::function<DumpReply(const std::string& pipe)>& request);
  // The drain thread is stopped without a dump.
  void abandon_drain() { drain_->finish(); }
  DumpOutcome take();
  // Why take() fell back.
  const std::string& reason() const { return fall_back_reason_; }
  // One line of key=value figures (verbose=y); extra: more " key=value" pairs of the dumper's.
  void print_stats(uint64_t started, const std::string& extra) const;

 private:
  // The drain thread's consumer: a plain pthread, so nothing may be thrown out of it.
  bool consume(const void* data, size_t size);
  DumpOutcome abandon(const std::string& why) {
    rewriter_.abandon();
    sink_.abandon_report("the heap dump was left out: " + why);
    return DumpOutcome::kAbandoned;
  }
  DumpOutcome fall_back(const std::string& why) {
    fall_back_reason_ = why;
    return DumpOutcome::kFallBack;
  }
  DumpOutcome check_reply();
  DumpOutcome copy_staged();

  AsyncSink& sink_;
  const char* dumper_;
  std::string folder_;
  bool stage_;
  std::unique_ptr<FifoDrain> drain_;
  std::unique_ptr<StagingFile> staged_;
  VmDumpRewriter rewriter_;
  bool side_files_;
  std::unique_ptr<VmDumpPipeReader> reader_;
  std::string consumer_failure_;  // set by the drain thread, read after it ended
  std::string fall_back_reason_;
  DumpReply reply_;
  uint64_t request_started_ = 0;
  double jvm_seconds_ = 0, copy_seconds_ = 0, flush_seconds_ = 0;
  uint64_t bytes_in_ = 0;
};

}  // namespace fasthprof
