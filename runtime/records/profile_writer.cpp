#include "records/profile_writer.h"

#include <vector>

namespace fasthprof {

ProfileWriter::ProfileWriter(const Options& options, OutputStream& out, MethodResolver* resolver)
    : options_(options),
      frames_(resolver, options.lineno),
      output_(ProfileOutput::make(options_, out, {names_, classes_, threads_, frames_, traces_})) {}

ProfileWriter::~ProfileWriter() = default;

void ProfileWriter::write_header(std::time_t now, uint64_t wall_millis) { output_->file_header(now, wall_millis); }

uint64_t ProfileWriter::name_id(std::string_view text) { return output_->name_id(text); }

ThreadIdentity ProfileWriter::thread_started(uint64_t object_id, const ThreadDescription& thread) {
  ThreadRef ref = threads_.start_thread(object_id);
  if (!ref.is_new) return {ref.serial, ref.object_id};
  output_->thread_start(ref.serial, ref.object_id, thread);
  return {ref.serial, ref.object_id};
}

void ProfileWriter::report_complete() { output_->report_complete(); }

void ProfileWriter::output_lost() {
  names_.reset();
  frames_.reset_written();
  traces_.reset_written();
  traces_.claim(traces_.empty_trace_serial());  // in the header, before any cut
  output_->output_lost();
}

void ProfileWriter::reannounce() { output_->reannounce(); }

void ProfileWriter::thread_ended(uint32_t serial) {
  if (!threads_.end_thread(serial)) return;
  output_->thread_end(serial);
}

ClassRef ProfileWriter::class_loaded(std::string_view signature, uint64_t loader_key,
                                     uint32_t trace_serial) {
  ClassRef ref = classes_.register_class(signature, loader_key);
  if (ref.is_new) output_->class_load(*classes_.find_by_serial(ref.serial), trace_serial);
  return ref;
}

void ProfileWriter::class_unloaded(uint32_t serial) {
  if (classes_.unload(serial)) output_->class_unload(serial);
}

uint32_t ProfileWriter::intern_trace(uint32_t thread_serial, std::span<const StackFrame> frames) {
  size_t depth = std::min(frames.size(), trace_depth_);
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
  if (view && traces_.claim(serial)) output_->trace(*view);
}

void ProfileWriter::write_unwritten_traces() {
  traces_.claim_unwritten([this](const TraceView& view) { output_->trace(view); });
}

void ProfileWriter::flush() { output_->flush(); }

}  // namespace fasthprof
