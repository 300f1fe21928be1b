// The one writer of a profile file: it owns the registries (names, classes, threads, frames,
// traces) and the output of the chosen format (profile_output.h, chosen once here), and gives every
// feature the same building blocks (header, threads, classes, traces), so that no feature writes
// those records itself. A feature writes its own section through output() after asking for the
// traces it names.
//
// Threads: not thread-safe. The agent's writer thread alone calls it (docs/ARCHITECTURE.md).
#pragma once

#include <cstdint>
#include <ctime>
#include <memory>
#include <span>
#include <string_view>

#include "base/stack_frame.h"
#include "options/options.h"
#include "records/profile_output.h"
#include "records/record_writer.h"
#include "records/text_writer.h"
#include "registries/class_registry.h"
#include "registries/frame_registry.h"
#include "registries/name_table.h"
#include "registries/thread_registry.h"
#include "registries/trace_table.h"
#include "sink/output_stream.h"

namespace fasthprof {

class ProfileWriter {
 public:
  // resolver answers method names, classes and line tables for frames (may be null: every
  // method unknown); it must outlive the writer. Allocates. Never fails.
  ProfileWriter(const Options& options, OutputStream& out, MethodResolver* resolver);
  ~ProfileWriter();

  ProfileWriter(const ProfileWriter&) = delete;
  ProfileWriter& operator=(const ProfileWriter&) = delete;

  bool binary() const { return options_.format == OutputFormat::kBinary; }
  const Options& options() const { return options_; }

  // File header: text `JAVA PROFILE 1.0.1, created <date>` plus the explanation of the record
  // kinds; binary `JAVA PROFILE 1.0.2` plus CONTROL SETTINGS and the empty TRACE 300000.
  // wall_millis is the binary header's time stamp; record times count from it. Once, first.
  void write_header(std::time_t now, uint64_t wall_millis);

  // A Java thread seen for the first time, whose object carries object_id (ThreadIdClaims):
  // registers it and writes THREAD START (text) or its UTF8 names plus START THREAD (binary).
  // Nothing is written for a thread alive already; serial 0 for an ID that is not a thread's.
  ThreadIdentity thread_started(uint64_t object_id, const ThreadDescription& thread);

  // THREAD END / END THREAD for a serial from thread_started(); unknown or ended serials are
  // ignored.
  void thread_ended(uint32_t serial);

  // A class (JVM signature, loader key chosen by the agent): its serial and class object ID,
  // writing UTF8 + LOAD CLASS (binary) the first time. trace_serial names the trace of the load
  // (the empty trace when unknown); it must be a trace already written or about to be.
  ClassRef class_loaded(std::string_view signature, uint64_t loader_key,
                        uint32_t trace_serial = kFirstTraceSerial);

  // UNLOAD CLASS for a loaded serial (binary); nothing for unknown or unloaded serials.
  void class_unloaded(uint32_t serial);

  // The serial of the trace of these frames (top frame first), cut to `depth`; thread_serial is
  // part of the key only with thread=y. Interns frames (resolving new methods through the
  // resolver). Writes nothing: call write_trace() before a record names the serial.
  uint32_t intern_trace(uint32_t thread_serial, std::span<const StackFrame> frames);
  // The depth traces are cut to from now on (depth= at start; a net= CONTROL may change it).
  void set_trace_depth(int depth) { trace_depth_ = static_cast<size_t>(depth < 0 ? 0 : depth); }
  size_t trace_depth() const { return trace_depth_; }

  // Writes the TRACE (text) or FRAME/UTF8/TRACE records (binary) of serial if this file does not
  // have them yet. Unknown serials are ignored.
  void write_trace(uint32_t serial);

  // write_trace() for every trace not yet in the file, in serial order.
  void write_unwritten_traces();

  // Where a feature writes its own section, in the file's format.
  ProfileOutput& output() { return *output_; }

  NameTable& names() { return names_; }
  ClassRegistry& classes() { return classes_; }
  ThreadRegistry& threads() { return threads_; }
  FrameRegistry& frames() { return frames_; }
  TraceTable& traces() { return traces_; }

  // Binary: the UTF8 ID of text, writing its UTF8 record the first time; 0 for "".
  uint64_t name_id(std::string_view text);

  // Pushes what is buffered towards the stream.
  void flush();

  // The report that began at the sink's last begin_report() reached the file completely: the
  // LOAD CLASS and START THREAD records written in it are there for good.
  void report_complete();

  // The sink cut the file back to where the current report began, so the records written since
  // the last report_complete() are gone. Forgets which names, frames and traces the file holds
  // (they are written again when named), and makes the next reannounce() write LOAD CLASS and
  // START THREAD again for the classes and threads whose records were cut and that are still
  // loaded or alive: so that later records name records that are in the file, and no class or
  // thread is in the file twice however many reports fail.
  void output_lost();

  // After output_lost(): UTF8 + LOAD CLASS and START THREAD of what the cut removed (binary only;
  // text has nothing to repeat). Call right after the sink began the next report. Does nothing
  // otherwise.
  void reannounce();

 private:
  Options options_;
  size_t trace_depth_ = static_cast<size_t>(options_.depth < 0 ? 0 : options_.depth);
  NameTable names_;
  ClassRegistry classes_;
  ThreadRegistry threads_;
  FrameRegistry frames_;
  TraceTable traces_;
  std::unique_ptr<ProfileOutput> output_;  // reads the registries above: made after them
};

}  // namespace fasthprof
