#include "profile_writer.h"

#include <vector>

#include "hprof_format.h"

namespace fasthprof {
namespace {

uint32_t control_flags(const Options& options) {
  uint32_t flags = 0;
  if (options.heap_dump || options.alloc_sites) flags |= kControlAllocTraces;
  if (options.cpu_sampling) flags |= kControlCpuSampling;
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

ProfileWriter::ProfileWriter(const Options& options, OutputStream& out, MethodResolver* resolver)
    : options_(options),
      binary_(options.format == OutputFormat::kBinary),
      out_(out),
      frames_(resolver, options.lineno) {
  if (!binary_) text_ = std::make_unique<TextWriter>(out_);
}

ProfileWriter::~ProfileWriter() = default;

void ProfileWriter::write_header(std::time_t now, uint64_t wall_millis) {
  if (!binary_) {
    text_->file_header(now);
    return;
  }
  records_ = std::make_unique<RecordWriter>(out_, wall_millis);
  records_->write_file_header();
  records_->write_control_settings(control_flags(options_), static_cast<uint32_t>(options_.depth));
  // Trace 300000 is the empty trace: records without a stack of their own name it.
  write_trace(traces_.empty_trace_serial());
}

uint64_t ProfileWriter::name_id(std::string_view text) {
  if (text.empty()) return 0;
  NameRef ref = names_.intern(text);
  if (ref.is_new) records_->write_utf8(ref.id, text);
  return ref.id;
}

ThreadIdentity ProfileWriter::thread_started(uint64_t object_id, const ThreadDescription& thread) {
  ThreadRef ref = threads_.start_thread(object_id);
  if (!ref.is_new) return {ref.serial, ref.object_id};
  if (!binary_) {
    text_->thread_start(ref.object_id, ref.serial, thread.name, thread.group);
  } else {
    std::pmr::string& names = thread_names_[ref.serial];
    names.reserve(thread.name.size() + thread.group.size() + thread.parent_group.size() + 2);
    names.append(thread.name).append(1, '\0').append(thread.group).append(1, '\0').append(thread.parent_group);
    write_start_thread(ref.serial, ref.object_id, thread);
  }
  return {ref.serial, ref.object_id};
}

void ProfileWriter::write_start_thread(uint32_t serial, uint64_t object_id,
                                       const ThreadDescription& thread) {
  StartThreadRecord record;
  record.thread_serial = serial;
  record.thread_object_id = object_id;
  record.trace_serial = traces_.empty_trace_serial();
  record.name_id = thread_name_id(thread.name);
  record.group_name_id = name_id(thread.group);
  record.parent_group_name_id = name_id(thread.parent_group);
  records_->write_start_thread(record);
  uncommitted_threads_.push_back(serial);
}

// Thread names are not interned: each START THREAD writes its thread's name under a new ID, so
// that no table keeps the names of ended threads. A new one each time, not one per serial: a
// START THREAD written again after a cut that failed to truncate must not repeat a UTF8 ID.
uint64_t ProfileWriter::thread_name_id(std::string_view name) {
  if (name.empty()) return 0;
  uint64_t id = make_id(IdSpace::kThreadName, ++thread_names_written_);
  records_->write_utf8(id, name);
  return id;
}

void ProfileWriter::report_complete() {
  uncommitted_classes_.clear();
  uncommitted_threads_.clear();
}

void ProfileWriter::output_lost() {
  names_.reset();
  frames_.reset_written();
  traces_.reset_written();
  traces_.claim(traces_.empty_trace_serial());  // in the header, before any cut
  lost_classes_.insert(lost_classes_.end(), uncommitted_classes_.begin(), uncommitted_classes_.end());
  lost_threads_.insert(lost_threads_.end(), uncommitted_threads_.begin(), uncommitted_threads_.end());
  report_complete();
  reannounce_pending_ = binary_;
}

void ProfileWriter::reannounce() {
  if (!reannounce_pending_ || !records_) return;
  reannounce_pending_ = false;
  for (uint32_t serial : lost_classes_) {
    const ClassInfo* info = classes_.find_by_serial(serial);
    if (info == nullptr || !info->loaded) continue;
    records_->write_load_class(info->serial, info->object_id, traces_.empty_trace_serial(), name_id(info->name));
    uncommitted_classes_.push_back(serial);
  }
  for (uint32_t serial : lost_threads_) {
    const ThreadInfo* info = threads_.find_by_serial(serial);
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

void ProfileWriter::thread_ended(uint32_t serial) {
  if (!threads_.end_thread(serial)) return;
  thread_names_.erase(serial);
  forget_serial(uncommitted_threads_, serial);
  forget_serial(lost_threads_, serial);
  if (binary_) {
    records_->write_end_thread(serial);
  } else {
    text_->thread_end(serial);
  }
}

ClassRef ProfileWriter::class_loaded(std::string_view signature, uint64_t loader_key,
                                     uint32_t trace_serial) {
  ClassRef ref = classes_.register_class(signature, loader_key);
  if (ref.is_new && binary_) {
    const ClassInfo* info = classes_.find_by_serial(ref.serial);
    write_trace(trace_serial);
    records_->write_load_class(ref.serial, ref.object_id, trace_serial, name_id(info->name));
    uncommitted_classes_.push_back(ref.serial);
  }
  return ref;
}

void ProfileWriter::class_unloaded(uint32_t serial) {
  if (classes_.unload(serial) && binary_) records_->write_unload_class(serial);
}

uint32_t ProfileWriter::intern_trace(uint32_t thread_serial, std::span<const StackFrame> frames) {
  size_t depth = std::min(frames.size(), static_cast<size_t>(options_.depth));
  uint64_t ids_on_stack[64];
  std::vector<uint64_t> ids_on_heap;
  uint64_t* ids = ids_on_stack;
  if (depth > std::size(ids_on_stack)) {
    ids_on_heap.resize(depth);
    ids = ids_on_heap.data();
  }
  for (size_t i = 0; i < depth; ++i) ids[i] = frames_.intern(frames[i].method, frames[i].location).frame_id;
  uint32_t key_thread = options_.thread_in_traces ? thread_serial : 0;
  return traces_.intern(key_thread, std::span<const uint64_t>(ids, depth)).serial;
}

void ProfileWriter::write_trace(uint32_t serial) {
  std::optional<TraceView> view = traces_.find(serial);
  if (view && traces_.claim(serial)) write_claimed_trace(*view);
}

void ProfileWriter::write_claimed_trace(const TraceView& trace) {
  const TraceView* view = &trace;
  if (!binary_) {
    text_->trace_header(view->serial, view->thread_serial);
    if (view->frames.empty()) text_->trace_empty();
    for (uint64_t frame_id : view->frames) {
      std::optional<FrameView> frame = frames_.find(frame_id);
      if (!frame) continue;
      text_->trace_frame({frame->class_name, frame->method_info->name,
                          frame->method_info->source_file, frame->line});
    }
    return;
  }
  for (uint64_t frame_id : view->frames) {
    FrameRecord record = frames_.claim_record(frame_id, &names_);
    if (!record.needed) continue;
    for (const NameRef* name : {&record.method_name, &record.method_signature, &record.source_file}) {
      if (name->is_new && name->id != 0) records_->write_utf8(name->id, names_.text(name->id));
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
  records_->write_stack_trace(view->serial, view->thread_serial, view->frames);
}

void ProfileWriter::write_unwritten_traces() {
  traces_.claim_unwritten([this](const TraceView& view) { write_claimed_trace(view); });
}

void ProfileWriter::flush() {
  if (binary_) {
    if (records_) records_->flush();
  } else {
    text_->flush();
  }
}

}  // namespace fasthprof
