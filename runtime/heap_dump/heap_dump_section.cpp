#include "heap_dump/heap_dump_section.h"

#include <ctime>
#include <utility>

#include "heap_dump/heap_dump_staging.h"
#include "heap_dump/heap_dump_writer.h"

namespace fasthprof {

namespace {

constexpr const char* kWalkStopped = "the heap dump was left out: its walk was stopped";

class BinaryHeapDumpSection final : public HeapDumpSection {
 public:
  BinaryHeapDumpSection(RecordWriter& records, AsyncSink& sink)
      : records_(records), sink_(sink), segments_(records), out_(segments_) {}

  HeapDumpOutput& output() override { return out_; }
  uint64_t bytes_written() const override { return records_.position(); }
  bool needs_sizes() const override { return false; }
  // CLASS DUMPs first: readers that resolve an instance by its class as they go find it.
  void begin(HeapDumpAssembler& assembler) override { assembler.write_classes(); }
  void end(HeapDumpAssembler&) override { segments_.finish(); }
  void finish(const HeapDumpCounts&, bool walk_failed) override {
    if (walk_failed) sink_.abandon_report(kWalkStopped);
  }

 private:
  RecordWriter& records_;
  AsyncSink& sink_;
  HeapDumpWriter segments_;
  BinaryHeapDumpOutput out_;
};

class TextHeapDumpSection final : public HeapDumpSection {
 public:
  TextHeapDumpSection(TextWriter& text, AsyncSink& sink, std::unique_ptr<StagingFile> staged)
      : text_(text),
        sink_(sink),
        staged_(std::move(staged)),
        root_lines_(roots_),
        object_lines_(*staged_),
        out_(root_lines_, object_lines_) {}

  HeapDumpOutput& output() override { return out_; }
  uint64_t bytes_written() const override { return staged_->size(); }
  bool needs_sizes() const override { return true; }
  void begin(HeapDumpAssembler&) override {}
  // The CLS blocks after the objects, as the original's text dump had them.
  void end(HeapDumpAssembler& assembler) override {
    assembler.write_classes();
    root_lines_.flush();
    object_lines_.flush();
  }
  void finish(const HeapDumpCounts& counts, bool walk_failed) override;

 private:
  TextWriter& text_;
  AsyncSink& sink_;
  std::unique_ptr<StagingFile> staged_;
  StagingMemory roots_;
  TextWriter root_lines_;
  TextWriter object_lines_;
  TextHeapDumpOutput out_;
};

// A dump without its objects would look complete (BEGIN, roots, END): the report is cut back as a
// failed write would cut it.
void TextHeapDumpSection::finish(const HeapDumpCounts& counts, bool walk_failed) {
  text_.flush();
  if (walk_failed) {
    sink_.abandon_report(kWalkStopped);
    return;
  }
  if (staged_->failed()) {
    sink_.abandon_report("the heap dump was left out: " + staged_->error());
    return;
  }
  text_.heap_dump_begin(counts.objects(), counts.bytes, std::time(nullptr));
  text_.raw(roots_.text());
  text_.flush();
  std::string error;
  if (staged_->copy_to(sink_, &error)) {
    text_.heap_dump_end();
  } else {
    sink_.abandon_report("the heap dump was left out: " + error);
  }
}

}  // namespace

std::unique_ptr<HeapDumpSection> HeapDumpSection::make(ProfileOutput& output, AsyncSink& sink,
                                                       const std::string& staging_folder, std::string* error) {
  if (RecordWriter* records = output.record_writer()) return std::make_unique<BinaryHeapDumpSection>(*records, sink);
  std::unique_ptr<StagingFile> staged = StagingFile::create(staging_folder, error);
  if (!staged) return nullptr;
  return std::make_unique<TextHeapDumpSection>(*output.text_writer(), sink, std::move(staged));
}

}  // namespace fasthprof
