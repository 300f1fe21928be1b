#include "records/profile_output.h"

#include <optional>

#include "base/hprof_format.h"
#include "base/java_names.h"

namespace fasthprof {
namespace {

uint32_t control_flags(const Options& options) {
  uint32_t flags = 0;
  if (options.heap_dump || options.alloc_sites) flags |= kControlAllocTraces;
  if (options.cpu_sampling) flags |= kControlCpuSampling;
  if (options.alloc_sites && !options.live) flags |= kControlNoLiveCounts;
  return flags;
}

// Removes serial from a list of serials, looking from the end: a thread that ends is most often
// one of the last started.
void forget_serial(std::pmr::vector<uint32_t>& serials, uint32_t serial) {
  for (size_t i = serials.size(); i-- > 0;) {
    if (serials[i] == serial) {
      serials.erase(serials.begin() + static_cast<ptrdiff_t>(i));
      return;
    }
  }
}

}  // namespace

std::unique_ptr<ProfileOutput> ProfileOutput::make(const Options& options, OutputStream& out,
                                                   const ProfileTables& tables) {
  if (options.format == OutputFormat::kBinary) return std::make_unique<BinaryProfileOutput>(options, out, tables);
  return std::make_unique<TextProfileOutput>(out, tables, options.old_timing, options.alloc_sites && !options.live);
}

// Text.

TextProfileOutput::TextProfileOutput(OutputStream& out, const ProfileTables& tables, bool old_prof, bool no_live)
    : text_(out), tables_(tables), old_prof_(old_prof), no_live_(no_live) {}

// cpu=old wrote the old prof table alone: no file header and no THREAD lines (§2.10).
void TextProfileOutput::file_header(std::time_t now, uint64_t) {
  if (!old_prof_) text_.file_header(now, no_live_);
}

void TextProfileOutput::thread_start(uint32_t serial, uint64_t object_id, const ThreadDescription& thread) {
  if (!old_prof_) text_.thread_start(object_id, serial, thread.name, thread.group);
}

void TextProfileOutput::thread_end(uint32_t serial) {
  if (!old_prof_) text_.thread_end(serial);
}

void TextProfileOutput::trace(const TraceView& trace) {
  text_.trace_header(trace.serial, trace.thread_serial);
  if (trace.frames.empty()) text_.trace_empty();
  for (uint64_t frame_id : trace.frames) {
    std::optional<FrameView> frame = tables_.frames.find(frame_id);
    if (!frame) continue;
    text_.trace_frame({frame->class_name, frame->method_info->name, frame->method_info->source_file, frame->line});
  }
}

void TextProfileOutput::sites(std::span<const SiteRow> rows, const SiteTotals& totals, double, uint16_t flags,
                              std::time_t when) {
  text_.sites_begin((flags & kSitesSortedByAllocation) != 0 ? "allocated bytes" : "live bytes", when);
  double accumulated = 0;
  uint32_t rank = 0;
  for (const SiteRow& row : rows) {
    double self = totals.live_bytes == 0 ? 0.0
                                         : 100.0 * static_cast<double>(row.counts.live_bytes) /
                                               static_cast<double>(totals.live_bytes);
    accumulated += self;
    const ClassInfo* info = tables_.classes.find_by_serial(row.site.class_serial);
    text_.sites_row(++rank, self, accumulated, row.counts.live_bytes, row.counts.live_objects,
                    row.counts.alloc_bytes, row.counts.alloc_objects, row.site.trace_serial,
                    info != nullptr ? std::string_view(info->name) : std::string_view("<unknown class>"));
  }
  text_.sites_end();
}

void TextProfileOutput::cpu_samples(const CpuSampleReport& report, std::time_t when) {
  cpu_section(CpuSection::kSamples, report, when);
}

void TextProfileOutput::cpu_times(const CpuSampleReport& report, CpuSection title, std::time_t when) {
  cpu_section(title, report, when);
}

// Each row with its trace's top frame.
void TextProfileOutput::cpu_section(CpuSection title, const CpuSampleReport& report, std::time_t when) {
  text_.cpu_begin(title, report.total, report.rows.size(), when);
  for (const CpuSampleReportRow& row : report.rows) {
    std::string_view class_name;
    std::string_view method_name;
    std::optional<TraceView> trace = tables_.traces.find(row.trace_serial);
    if (trace && !trace->frames.empty()) {
      std::optional<FrameView> top = tables_.frames.find(trace->frames.front());
      if (top) {
        class_name = top->class_name;
        method_name = top->method_info->name;
      }
    }
    text_.cpu_row(row.rank, row.self_percent, row.accumulated_percent, row.count, row.trace_serial, class_name,
                  method_name);
  }
  text_.cpu_end(title);
}

void TextProfileOutput::old_prof(std::span<const OldProfRow> rows) {
  text_.old_prof_header();
  for (const OldProfRow& row : rows) {
    text_.old_prof_row(row.calls, row.callee ? &*row.callee : nullptr, row.caller ? &*row.caller : nullptr,
                       row.total_ms);
  }
}

void TextProfileOutput::monitor_time(std::span<const MonitorTimeRow> rows, uint64_t total_ms, std::time_t when) {
  text_.monitor_time_begin(total_ms, when, !rows.empty());
  for (const MonitorTimeRow& row : rows) {
    text_.monitor_time_row(row.rank, row.self_percent, row.accumulated_percent, row.count, row.trace_serial,
                           java_name(row.signature));
  }
  text_.monitor_time_end();
}

void TextProfileOutput::monitor_dump(std::string_view note, std::span<const MonitorDumpThread> threads,
                                     std::span<const MonitorDumpMonitor> monitors) {
  text_.monitor_dump_begin();
  if (!note.empty()) text_.monitor_dump_note(note);
  for (const MonitorDumpThread& thread : threads) {
    text_.monitor_dump_thread(thread.serial, thread.trace_serial, thread.jvmti_state);
  }
  for (const MonitorDumpMonitor& monitor : monitors) {
    text_.monitor_dump_monitor(monitor.signature, monitor.owner, monitor.entry_count, monitor.to_enter,
                               monitor.to_be_notified);
  }
  text_.monitor_dump_end();
}

void TextProfileOutput::monitor_wait(std::string_view monitor_signature, int64_t timeout_ms, uint32_t thread_serial) {
  text_.monitor_wait(monitor_signature, timeout_ms, thread_serial);
}

void TextProfileOutput::monitor_waited(std::string_view monitor_signature, int64_t waited_ms,
                                       uint32_t thread_serial) {
  text_.monitor_waited(monitor_signature, waited_ms, thread_serial);
}

// Binary.

BinaryProfileOutput::BinaryProfileOutput(const Options& options, OutputStream& out, const ProfileTables& tables)
    : control_flags_(control_flags(options)),
      depth_(static_cast<uint32_t>(options.depth)),
      out_(out),
      tables_(tables) {}

void BinaryProfileOutput::file_header(std::time_t, uint64_t wall_millis) {
  records_ = std::make_unique<RecordWriter>(out_, wall_millis);
  records_->write_file_header();
  records_->write_control_settings(control_flags_, depth_);
  // Trace 300000 is the empty trace: records without a stack of their own name it.
  write_trace(tables_.traces.empty_trace_serial());
}

void BinaryProfileOutput::write_trace(uint32_t serial) {
  std::optional<TraceView> view = tables_.traces.find(serial);
  if (view && tables_.traces.claim(serial)) trace(*view);
}

void BinaryProfileOutput::heap_summary(const SiteTotals& totals) {
  records_->write_heap_summary(totals.live_bytes, totals.live_objects, totals.alloc_bytes, totals.alloc_objects);
}

uint64_t BinaryProfileOutput::name_id(std::string_view text) {
  if (text.empty()) return 0;
  NameRef ref = tables_.names.intern(text);
  if (ref.is_new) records_->write_utf8(ref.id, text);
  return ref.id;
}

void BinaryProfileOutput::thread_start(uint32_t serial, uint64_t object_id, const ThreadDescription& thread) {
  std::pmr::string& names = thread_names_[serial];
  names.reserve(thread.name.size() + thread.group.size() + thread.parent_group.size() + 2);
  names.append(thread.name).append(1, '\0').append(thread.group).append(1, '\0').append(thread.parent_group);
  write_start_thread(serial, object_id, thread);
}

void BinaryProfileOutput::write_start_thread(uint32_t serial, uint64_t object_id, const ThreadDescription& thread) {
  StartThreadRecord record;
  record.thread_serial = serial;
  record.thread_object_id = object_id;
  record.trace_serial = tables_.traces.empty_trace_serial();
  record.name_id = thread_name_id(thread.name);
  record.group_name_id = name_id(thread.group);
  record.parent_group_name_id = name_id(thread.parent_group);
  records_->write_start_thread(record);
  uncommitted_threads_.push_back(serial);
}

// Thread names are not interned: each START THREAD writes its thread's name under a new ID, so
// that no table keeps the names of ended threads. A new one each time, not one per serial: a
// START THREAD written again after a cut that failed to truncate must not repeat a UTF8 ID.
uint64_t BinaryProfileOutput::thread_name_id(std::string_view name) {
  if (name.empty()) return 0;
  uint64_t id = make_id(IdSpace::kThreadName, ++thread_names_written_);
  records_->write_utf8(id, name);
  return id;
}

void BinaryProfileOutput::thread_end(uint32_t serial) {
  thread_names_.erase(serial);
  forget_serial(uncommitted_threads_, serial);
  forget_serial(lost_threads_, serial);
  records_->write_end_thread(serial);
}

void BinaryProfileOutput::class_load(const ClassInfo& info, uint32_t trace_serial) {
  write_trace(trace_serial);
  records_->write_load_class(info.serial, info.object_id, trace_serial, name_id(info.name));
  uncommitted_classes_.push_back(info.serial);
}

void BinaryProfileOutput::class_unload(uint32_t serial) { records_->write_unload_class(serial); }

void BinaryProfileOutput::trace(const TraceView& trace) {
  for (uint64_t frame_id : trace.frames) {
    FrameRecord record = tables_.frames.claim_record(frame_id, &tables_.names);
    if (!record.needed) continue;
    for (const NameRef* name : {&record.method_name, &record.method_signature, &record.source_file}) {
      if (name->is_new && name->id != 0) records_->write_utf8(name->id, tables_.names.text(name->id));
    }
    StackFrameRecord frame;
    frame.frame_id = record.frame_id;
    frame.method_name_id = record.method_name.id;
    frame.method_signature_id = record.method_signature.id;
    frame.source_file_id = record.source_file.id;
    frame.class_serial = record.class_serial;
    frame.line = record.line;
    records_->write_stack_frame(frame);
  }
  records_->write_stack_trace(trace.serial, trace.thread_serial, trace.frames);
}

void BinaryProfileOutput::sites(std::span<const SiteRow> rows, const SiteTotals& totals, double cutoff,
                                uint16_t flags, std::time_t) {
  AllocSitesHeader header;
  header.flags = flags;
  header.cutoff = static_cast<float>(cutoff);
  header.total_live_bytes = totals.live_bytes;
  header.total_live_instances = totals.live_objects;
  header.total_alloc_bytes = totals.alloc_bytes;
  header.total_alloc_instances = totals.alloc_objects;
  std::vector<AllocSiteRow> records;
  records.reserve(rows.size());
  for (const SiteRow& row : rows) {
    AllocSiteRow record;
    record.array_kind = row.site.array_kind;
    record.class_serial = row.site.class_serial;
    record.trace_serial = row.site.trace_serial;
    record.live_bytes = row.counts.live_bytes;
    record.live_instances = row.counts.live_objects;
    record.alloc_bytes = row.counts.alloc_bytes;
    record.alloc_instances = row.counts.alloc_objects;
    records.push_back(record);
  }
  records_->write_alloc_sites(header, records);
  records_->write_heap_summary(totals.live_bytes, totals.live_objects, totals.alloc_bytes, totals.alloc_objects);
}

void BinaryProfileOutput::cpu_samples(const CpuSampleReport& report, std::time_t) {
  std::vector<CpuSampleRow> rows;
  rows.reserve(report.rows.size());
  for (const CpuSampleReportRow& row : report.rows) rows.push_back({row.count, row.trace_serial});
  records_->write_cpu_samples(report.total, rows);
}

void BinaryProfileOutput::flush() {
  if (records_) records_->flush();
}

void BinaryProfileOutput::report_complete() {
  uncommitted_classes_.clear();
  uncommitted_threads_.clear();
}

void BinaryProfileOutput::output_lost() {
  lost_classes_.insert(lost_classes_.end(), uncommitted_classes_.begin(), uncommitted_classes_.end());
  lost_threads_.insert(lost_threads_.end(), uncommitted_threads_.begin(), uncommitted_threads_.end());
  report_complete();
  reannounce_pending_ = true;
}

void BinaryProfileOutput::reannounce() {
  if (!reannounce_pending_ || !records_) return;
  reannounce_pending_ = false;
  for (uint32_t serial : lost_classes_) {
    const ClassInfo* info = tables_.classes.find_by_serial(serial);
    if (info == nullptr || !info->loaded) continue;
    records_->write_load_class(info->serial, info->object_id, tables_.traces.empty_trace_serial(),
                               name_id(info->name));
    uncommitted_classes_.push_back(serial);
  }
  for (uint32_t serial : lost_threads_) {
    const ThreadInfo* info = tables_.threads.find_by_serial(serial);
    auto names = thread_names_.find(serial);
    if (info == nullptr || names == thread_names_.end()) continue;
    std::string_view joined = names->second;
    size_t group_start = joined.find('\0') + 1;
    size_t parent_start = joined.find('\0', group_start) + 1;
    write_start_thread(serial, info->object_id,
                       {joined.substr(0, group_start - 1), joined.substr(group_start, parent_start - 1 - group_start),
                        joined.substr(parent_start)});
  }
  lost_classes_.clear();
  lost_threads_.clear();
}

}  // namespace fasthprof
