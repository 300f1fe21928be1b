// The one writer of a profile file: it owns the registries (names, classes, threads, frames,
// traces) and the encoder of the chosen format, and gives every feature the same building blocks
// (header, threads, classes, traces), so that no feature writes those records itself. A feature
// writes its own section with text() or records() after asking for the traces it names.
//
// Threads: not thread-safe. The agent's writer thread alone calls it (docs/ARCHITECTURE.md).
#pragma once

#include <array>
#include <cstdint>
#include <ctime>
#include <memory>
#include <memory_resource>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "class_registry.h"
#include "frame_registry.h"
#include "memory.h"
#include "name_table.h"
#include "options.h"
#include "output_stream.h"
#include "record_writer.h"
#include "text_writer.h"
#include "thread_registry.h"
#include "trace_table.h"

namespace fasthprof {

struct ThreadIdentity {
  uint32_t serial = 0;     // from 200001; 200000 is the "unknown thread"
  uint64_t object_id = 0;  // the ID of the java.lang.Thread object (the agent tags it with this)
};

struct ThreadDescription {
  std::string_view name;
  std::string_view group;
  std::string_view parent_group;  // empty: no parent group
};

// One stack frame as the JVM names it: a method (jmethodID as a number) and a bytecode location.
struct StackFrame {
  uint64_t method = 0;
  int64_t location = -1;
};

class ProfileWriter {
 public:
  // resolver answers method names, classes and line tables for frames (may be null: every
  // method unknown); it must outlive the writer. Allocates. Never fails.
  ProfileWriter(const Options& options, OutputStream& out, MethodResolver* resolver);
  ~ProfileWriter();

  ProfileWriter(const ProfileWriter&) = delete;
  ProfileWriter& operator=(const ProfileWriter&) = delete;

  bool binary() const { return binary_; }
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

  // Writes the TRACE (text) or FRAME/UTF8/TRACE records (binary) of serial if this file does not
  // have them yet. Unknown serials are ignored.
  void write_trace(uint32_t serial);

  // write_trace() for every trace not yet in the file, in serial order.
  void write_unwritten_traces();

  // The encoders, for a feature's own section. text() only when !binary(), records() only when
  // binary().
  TextWriter& text() { return *text_; }
  RecordWriter& records() { return *records_; }

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
  void write_claimed_trace(const TraceView& trace);
  void write_start_thread(uint32_t serial, uint64_t object_id, const ThreadDescription& thread);
  uint64_t thread_name_id(std::string_view name);

  Options options_;
  bool binary_;
  OutputStream& out_;
  std::unique_ptr<TextWriter> text_;
  std::unique_ptr<RecordWriter> records_;
  NameTable names_;
  ClassRegistry classes_;
  ThreadRegistry threads_;
  FrameRegistry frames_;
  TraceTable traces_;
  uint64_t thread_names_written_ = 0;  // IdSpace::kThreadName
  // What is kept per live thread comes from this pool, which reuses what ended threads gave back.
  std::pmr::unsynchronized_pool_resource thread_pool_{memory::resource()};
  // Names of live threads, kept for reannounce(): serial -> "name\0group\0parent group" (Java
  // names in modified UTF-8 never hold a zero byte).
  std::pmr::unordered_map<uint32_t, std::pmr::string> thread_names_{&thread_pool_};
  bool reannounce_pending_ = false;
  // Serials whose LOAD CLASS / START THREAD went out since the last report_complete(), and those
  // a cut removed, waiting for reannounce(). A thread leaves both when it ends: it is never
  // announced again.
  std::vector<uint32_t, memory::Allocator<uint32_t>> uncommitted_classes_, lost_classes_;
  std::pmr::vector<uint32_t> uncommitted_threads_{&thread_pool_}, lost_threads_{&thread_pool_};
};

}  // namespace fasthprof
