#include "profile_output.h"

#include "hprof_format.h"
#include "name_table.h"
#include "record_writer.h"
#include "text_writer.h"
#include "thread_registry.h"
#include "trace_table.h"

namespace fasthprof {
namespace {

uint32_t control_flags(const Options& options) {
  uint32_t flags = 0;
  if (options.heap_dump || options.alloc_sites) flags |= kControlAllocTraces;
  if (options.cpu_sampling) flags |= kControlCpuSampling;
  return flags;
}

// format=a: the text records of original-hprof.md §2.
class TextProfileOutput final : public ProfileOutput {
 public:
  explicit TextProfileOutput(OutputStream& out) : writer_(out) {}

  void write_header(std::time_t now, uint64_t) override { writer_.file_header(now); }

  ThreadIdentity thread_started(const ThreadDescription& thread) override {
    ThreadRef ref = threads_.start_thread(++next_thread_key_);
    writer_.thread_start(ref.object_id, ref.serial, thread.name, thread.group);
    return {ref.serial, ref.object_id};
  }

  void thread_ended(uint32_t serial) override {
    if (threads_.end_thread(serial)) writer_.thread_end(serial);
  }

  void flush() override { writer_.flush(); }

 private:
  TextWriter writer_;
  ThreadRegistry threads_;
  uint64_t next_thread_key_ = 0;
};

// format=b: JAVA PROFILE 1.0.2 records.
class BinaryProfileOutput final : public ProfileOutput {
 public:
  BinaryProfileOutput(const Options& options, OutputStream& out)
      : out_(out), flags_(control_flags(options)), depth_(static_cast<uint32_t>(options.depth)) {}

  void write_header(std::time_t, uint64_t wall_millis) override {
    writer_ = std::make_unique<RecordWriter>(out_, wall_millis);
    writer_->write_file_header();
    writer_->write_control_settings(flags_, depth_);
    // Trace 300000 is the empty trace: records that have no stack of their own name it.
    uint32_t empty = traces_.empty_trace_serial();
    if (traces_.claim(empty)) writer_->write_stack_trace(empty, 0, {});
  }

  ThreadIdentity thread_started(const ThreadDescription& thread) override {
    ThreadRef ref = threads_.start_thread(++next_thread_key_);
    StartThreadRecord record;
    record.thread_serial = ref.serial;
    record.thread_object_id = ref.object_id;
    record.trace_serial = traces_.empty_trace_serial();
    record.name_id = name_id(thread.name);
    record.group_name_id = name_id(thread.group);
    record.parent_group_name_id = name_id(thread.parent_group);
    writer_->write_start_thread(record);
    return {ref.serial, ref.object_id};
  }

  void thread_ended(uint32_t serial) override {
    if (threads_.end_thread(serial)) writer_->write_end_thread(serial);
  }

  void flush() override {
    if (writer_) writer_->flush();
  }

 private:
  // The UTF8 ID of a name, writing its UTF8 record the first time; 0 for "no name".
  uint64_t name_id(std::string_view text) {
    if (text.empty()) return 0;
    NameRef ref = names_.intern(text);
    if (ref.is_new) writer_->write_utf8(ref.id, text);
    return ref.id;
  }

  OutputStream& out_;
  uint32_t flags_;
  uint32_t depth_;
  std::unique_ptr<RecordWriter> writer_;
  NameTable names_;
  ThreadRegistry threads_;
  TraceTable traces_;
  uint64_t next_thread_key_ = 0;
};

}  // namespace

std::unique_ptr<ProfileOutput> ProfileOutput::create(const Options& options, OutputStream& out) {
  if (options.format == OutputFormat::kBinary) {
    return std::make_unique<BinaryProfileOutput>(options, out);
  }
  return std::make_unique<TextProfileOutput>(out);
}

}  // namespace fasthprof
