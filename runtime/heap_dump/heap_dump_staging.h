// Where a text heap dump waits until its totals are known: `HEAP DUMP BEGIN` names the number of
// objects and bytes, which only the end of the walk knows (docs/decisions.md, "Text format").
//
// StagingFile: a temporary file in the output's folder, created 0600 and unlinked at once, so that
// it is always removed, whatever happens to the process. StagingMemory: a byte string, for the
// few lines (roots) that are kept apart from the objects.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/memory.h"
#include "sink/output_stream.h"

namespace fasthprof {

class StagingFile final : public OutputStream {
 public:
  // Creates the file in folder (the system's temporary folder when empty). Returns null with
  // *error set when it cannot. Allocates a 1 MiB buffer.
  static std::unique_ptr<StagingFile> create(const std::string& folder, std::string* error);
  ~StagingFile() override;
  StagingFile(const StagingFile&) = delete;
  StagingFile& operator=(const StagingFile&) = delete;

  // Buffered append. A failed write is remembered (failed(), error()) and later bytes dropped.
  void write(const void* data, size_t size) override;

  // Writes everything staged to out, in chunks of the buffer's size, then empties the file for the
  // next use. Returns false with *error set when the staged bytes cannot be read back (or were
  // not all written); out gets what could be read.
  bool copy_to(OutputStream& out, std::string* error);

  uint64_t size() const { return written_ + buffer_used_; }
  bool failed() const { return !error_.empty(); }
  const std::string& error() const { return error_; }

 private:
  explicit StagingFile(int fd);
  void flush_buffer();

  int fd_;
  std::vector<char, memory::Allocator<char>> buffer_;
  size_t buffer_used_ = 0;
  uint64_t written_ = 0;
  std::string error_;
};

class StagingMemory final : public OutputStream {
 public:
  void write(const void* data, size_t size) override { text_.append(static_cast<const char*>(data), size); }
  const std::string& text() const { return text_; }
  void clear() { text_.clear(); }

 private:
  std::string text_;
};

// The folder of an output path ("." for a bare file name).
std::string folder_of(const std::string& path);

}  // namespace fasthprof
