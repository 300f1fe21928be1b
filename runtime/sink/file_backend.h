// SinkBackend over a file descriptor: a regular file (which can be cut back after a write error),
// or a device or pipe (which cannot).
#pragma once

#include <memory>
#include <string>

#include "sink/sink_backend.h"

namespace fasthprof {

class FileBackend final : public SinkBackend {
 public:
  // Takes ownership of fd (closed by close() or the destructor). path names it in messages.
  // Whether it can be truncated is decided here, once, from fstat: regular files only.
  // Does not allocate beyond the copy of path. Any thread; the backend then belongs to its user.
  FileBackend(int fd, std::string path);
  ~FileBackend() override;

  FileBackend(const FileBackend&) = delete;
  FileBackend& operator=(const FileBackend&) = delete;

  // Opens path for writing, creating it with mode 0600 (dumps hold secrets) or emptying an
  // existing one (whose mode is kept). Allocates the backend. Returns null and sets *error
  // ("<path>: <strerror>") when the file cannot be opened. Naming rules (force=, unique names) are the caller's.
  static std::unique_ptr<FileBackend> open(const std::string& path, std::string* error);

  WriteResult write_all(const void* data, size_t size) override;
  // copy_file_range (the kernel copies, as for jcmd's own merge), else sendfile, else the default.
  WriteResult copy_range(int fd, uint64_t offset, uint64_t size, uint8_t* bounce, size_t bounce_size) override;
  uint64_t offset() const override { return offset_; }
  bool can_truncate() const override { return can_truncate_; }
  WriteResult truncate_to(uint64_t offset) override;
  bool error_ends_output() const override { return false; }
  const std::string& name() const override { return path_; }
  WriteResult close() override;

  int fd() const { return fd_; }

 private:
  int fd_;
  std::string path_;
  uint64_t offset_ = 0;
  // File position where offset 0 lies (an fd handed over mid-file, e.g. opened for append).
  uint64_t base_ = 0;
  bool can_truncate_ = false;
};

}  // namespace fasthprof
