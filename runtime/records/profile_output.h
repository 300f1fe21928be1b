// The records of a profile file other than the heap dump, once per kind of record: text lines
// through a TextWriter (format=a) or binary records through a RecordWriter (format=b). The format
// is chosen once, when ProfileWriter makes its output; ProfileWriter and the sections
// (cpu_sample_table.h, sites_section.h) decide what to write and in which order and never ask
// which format they write.
//
// An output reads the registries ProfileWriter owns (ProfileTables): the binary output interns
// the names its records point to, claims the frames it writes, and keeps what a cut of the file
// makes it write again (LOAD CLASS, START THREAD); the text output looks names up to print them.
//
// Threads: as ProfileWriter (the caller serializes every call).
#pragma once

#include <cstdint>
#include <ctime>
#include <memory>
#include <memory_resource>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/memory.h"
#include "options/options.h"
#include "records/record_writer.h"
#include "records/report_rows.h"
#include "records/text_writer.h"
#include "registries/class_registry.h"
#include "registries/frame_registry.h"
#include "registries/name_table.h"
#include "registries/thread_registry.h"
#include "registries/trace_table.h"
#include "sink/output_stream.h"

namespace fasthprof {

struct ThreadDescription {
  std::string_view name;
  std::string_view group;
  std::string_view parent_group;  // empty: no parent group
};

// The registries of one profile file, owned by its ProfileWriter.
struct ProfileTables {
  NameTable& names;
  ClassRegistry& classes;
  ThreadRegistry& threads;
  FrameRegistry& frames;
  TraceTable& traces;
};

class ProfileOutput {
 public:
  // The output of options.format, writing to out. out and tables must outlive it. Allocates.
  static std::unique_ptr<ProfileOutput> make(const Options& options, OutputStream& out, const ProfileTables& tables);

  virtual ~ProfileOutput() = default;

  // Text `JAVA PROFILE 1.0.1, created <date>` plus the explanation of the record kinds; binary
  // `JAVA PROFILE 1.0.2` (wall_millis its time stamp) plus CONTROL SETTINGS and the empty TRACE
  // 300000. Once, first.
  virtual void file_header(std::time_t now, uint64_t wall_millis) = 0;

  // THREAD START (text), or its UTF8 names plus START THREAD (binary) of a thread just registered.
  virtual void thread_start(uint32_t serial, uint64_t object_id, const ThreadDescription& thread) = 0;
  // THREAD END / END THREAD of a thread that has just ended.
  virtual void thread_end(uint32_t serial) = 0;

  // A class just registered: binary writes the TRACE of its load (when not in the file yet), its
  // UTF8 name and LOAD CLASS; text has no class records.
  virtual void class_load(const ClassInfo& info, uint32_t trace_serial) = 0;
  // UNLOAD CLASS (binary); nothing in text.
  virtual void class_unload(uint32_t serial) = 0;

  // TRACE (text), or the FRAME records not in the file yet, their UTF8 names and TRACE (binary),
  // of a trace just claimed.
  virtual void trace(const TraceView& trace) = 0;

  // SITES (text: rows ranked by live or, with flag 0x2, allocated bytes, with their percentages,
  // `when` the section's date), or ALLOC SITES plus HEAP SUMMARY (binary: flags and cutoff in the
  // record). rows come as SiteTable::report_rows() gives them; totals cover every site; flags are
  // the ALLOC SITES record's (0 in a report, a net= command's otherwise).
  virtual void sites(std::span<const SiteRow> rows, const SiteTotals& totals, double cutoff, uint16_t flags,
                     std::time_t when) = 0;

  // CPU SAMPLES (text: with each row's top frame, `when` the section's date), or one binary CPU
  // SAMPLES record.
  virtual void cpu_samples(const CpuSampleReport& report, std::time_t when) = 0;

  // The text-only sections (format=b refuses cpu=times|old and monitor=y, options.cpp: binary
  // HPROF has no record for them, and the binary output writes nothing). CPU TIME (ms), or under
  // the title CPU SAMPLES when cpu=samples is on too (the original's), rows ranked by calls, the
  // total in milliseconds, with each row's top frame:
  virtual void cpu_times(const CpuSampleReport& report, CpuSection title, std::time_t when) = 0;
  // The cpu=old table: "count callee caller time", then the rows.
  virtual void old_prof(std::span<const OldProfRow> rows) = 0;
  // MONITOR TIME: rows ranked by time (total_ms over every contended enter, cut rows included).
  virtual void monitor_time(std::span<const MonitorTimeRow> rows, uint64_t total_ms, std::time_t when) = 0;
  // MONITOR DUMP: note (what the dump cannot show, or empty), the live threads, the monitors.
  virtual void monitor_dump(std::string_view note, std::span<const MonitorDumpThread> threads,
                            std::span<const MonitorDumpMonitor> monitors) = 0;
  // WAIT and WAITED of monitor=y, as they happen (times in milliseconds).
  virtual void monitor_wait(std::string_view monitor_signature, int64_t timeout_ms, uint32_t thread_serial) = 0;
  virtual void monitor_waited(std::string_view monitor_signature, int64_t waited_ms, uint32_t thread_serial) = 0;

  // HEAP SUMMARY (binary), the answer to a net= heap-summary command; text has no such record.
  virtual void heap_summary(const SiteTotals& totals) = 0;

  // Binary: the UTF8 ID of text, writing its UTF8 record the first time; 0 for "". Text names
  // nothing by ID: 0.
  virtual uint64_t name_id(std::string_view text) = 0;

  virtual void flush() = 0;

  // ProfileWriter's report_complete(), output_lost() and reannounce() (profile_writer.h), for
  // what the output keeps: binary the LOAD CLASS and START THREAD records a cut removed.
  virtual void report_complete() = 0;
  virtual void output_lost() = 0;
  virtual void reannounce() = 0;

  // The encoder underneath, for a section with a flow of its own (heap_dump/heap_dump_section.h,
  // which chooses its format by which of the two it gets): the text one or null, the binary one
  // (once the header is written) or null.
  virtual TextWriter* text_writer() = 0;
  virtual RecordWriter* record_writer() = 0;
};

class TextProfileOutput final : public ProfileOutput {
 public:
  // old_prof: cpu=old, whose file has neither header nor THREAD lines.
  // no_live: heap=sites with live=n (the file header says the live columns repeat the allocated ones).
  TextProfileOutput(OutputStream& out, const ProfileTables& tables, bool old_prof = false, bool no_live = false);

  void file_header(std::time_t now, uint64_t wall_millis) override;
  void thread_start(uint32_t serial, uint64_t object_id, const ThreadDescription& thread) override;
  void thread_end(uint32_t serial) override;
  void class_load(const ClassInfo&, uint32_t) override {}
  void class_unload(uint32_t) override {}
  void trace(const TraceView& trace) override;
  void sites(std::span<const SiteRow> rows, const SiteTotals& totals, double cutoff, uint16_t flags,
             std::time_t when) override;
  void cpu_samples(const CpuSampleReport& report, std::time_t when) override;
  void cpu_times(const CpuSampleReport& report, CpuSection title, std::time_t when) override;
  void old_prof(std::span<const OldProfRow> rows) override;
  void monitor_time(std::span<const MonitorTimeRow> rows, uint64_t total_ms, std::time_t when) override;
  void monitor_dump(std::string_view note, std::span<const MonitorDumpThread> threads,
                    std::span<const MonitorDumpMonitor> monitors) override;
  void monitor_wait(std::string_view monitor_signature, int64_t timeout_ms, uint32_t thread_serial) override;
  void monitor_waited(std::string_view monitor_signature, int64_t waited_ms, uint32_t thread_serial) override;
  void heap_summary(const SiteTotals&) override {}
  uint64_t name_id(std::string_view) override { return 0; }
  void flush() override { text_.flush(); }
  // A text report cut off loses only lines that no later line depends on.
  void report_complete() override {}
  void output_lost() override {}
  void reannounce() override {}
  TextWriter* text_writer() override { return &text_; }
  RecordWriter* record_writer() override { return nullptr; }

 private:
  void cpu_section(CpuSection title, const CpuSampleReport& report, std::time_t when);

  TextWriter text_;
  ProfileTables tables_;
  bool old_prof_ = false;
  bool no_live_ = false;
};

class BinaryProfileOutput final : public ProfileOutput {
 public:
  BinaryProfileOutput(const Options& options, OutputStream& out, const ProfileTables& tables);

  void file_header(std::time_t now, uint64_t wall_millis) override;
  void thread_start(uint32_t serial, uint64_t object_id, const ThreadDescription& thread) override;
  void thread_end(uint32_t serial) override;
  void class_load(const ClassInfo& info, uint32_t trace_serial) override;
  void class_unload(uint32_t serial) override;
  void trace(const TraceView& trace) override;
  void sites(std::span<const SiteRow> rows, const SiteTotals& totals, double cutoff, uint16_t flags,
             std::time_t when) override;
  void cpu_samples(const CpuSampleReport& report, std::time_t when) override;
  // The text-only sections: nothing (see ProfileOutput).
  void cpu_times(const CpuSampleReport&, CpuSection, std::time_t) override {}
  void old_prof(std::span<const OldProfRow>) override {}
  void monitor_time(std::span<const MonitorTimeRow>, uint64_t, std::time_t) override {}
  void monitor_dump(std::string_view, std::span<const MonitorDumpThread>, std::span<const MonitorDumpMonitor>) override {}
  void monitor_wait(std::string_view, int64_t, uint32_t) override {}
  void monitor_waited(std::string_view, int64_t, uint32_t) override {}
  void heap_summary(const SiteTotals& totals) override;
  uint64_t name_id(std::string_view text) override;
  void flush() override;
  void report_complete() override;
  void output_lost() override;
  void reannounce() override;
  TextWriter* text_writer() override { return nullptr; }
  RecordWriter* record_writer() override { return records_.get(); }

 private:
  void write_trace(uint32_t serial);
  void write_start_thread(uint32_t serial, uint64_t object_id, const ThreadDescription& thread);
  uint64_t thread_name_id(std::string_view name);

  uint32_t control_flags_;
  uint32_t depth_;
  OutputStream& out_;
  ProfileTables tables_;
  std::unique_ptr<RecordWriter> records_;  // made by file_header(), which has the time stamp
  uint64_t thread_names_written_ = 0;      // IdSpace::kThreadName
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
