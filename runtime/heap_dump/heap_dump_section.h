// One heap dump's section of a profile file, in the file's format, chosen once when it is made
// (from the encoder the profile output has), so that the dumper never asks which format it writes:
//
//   binary: CLASS DUMPs, then the roots and objects as the walk gives them, straight into
//           HEAP DUMP SEGMENT records of the file;
//   text:   the objects staged in a file beside the output during the walk (the section's first
//           line gives their totals), the roots in memory, the CLS blocks after the walk; at the
//           end HEAP DUMP BEGIN, the roots, the staged objects, HEAP DUMP END.
//
// The dumper's order: make(), root threads and walk into output() between begin() and end(),
// then finish(). A section that cannot be completed is cut out of the report (the sink's
// abandon_report), so that the file holds only complete reports.
//
// Threads: one thread at a time (the VM thread during the walk, the writer thread otherwise).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "heap_dump/heap_dump_assembler.h"
#include "heap_dump/heap_dump_output.h"
#include "records/profile_output.h"
#include "sink/async_sink.h"

namespace fasthprof {

class HeapDumpSection {
 public:
  // The section of output's format. staging_folder: where a text dump stages its objects (empty:
  // the temporary folder). Null, with *error set, when a text dump cannot make its staging file.
  static std::unique_ptr<HeapDumpSection> make(ProfileOutput& output, AsyncSink& sink,
                                               const std::string& staging_folder, std::string* error);

  virtual ~HeapDumpSection() = default;

  // Where the assembler writes the dump's sub-records or lines.
  virtual HeapDumpOutput& output() = 0;
  // Bytes written so far (into the file, or the staging file): the walk's progress.
  virtual uint64_t bytes_written() const = 0;
  // Every object's size is needed (the text dump prints it).
  virtual bool needs_sizes() const = 0;

  // Before the roots and the walk; after the walk.
  virtual void begin(HeapDumpAssembler& assembler) = 0;
  virtual void end(HeapDumpAssembler& assembler) = 0;

  // Completes the section with the assembler's counts, or cuts it out of the report: when the walk
  // was stopped (walk_failed) or what was staged could not be read back.
  virtual void finish(const HeapDumpCounts& counts, bool walk_failed) = 0;
};

}  // namespace fasthprof
