// The stream HotSpot's dumper writes into fasthprof's pipe (runtime/vm_dump/fifo_drain.h), handed to the
// VmDumpRewriter. On JDK 22+ HotSpot writes the heap segments into side files beside the path it
// is given ("<pipe>.p0", ".p1" with parallel dumpers) inside its safepoint, and after it copies
// them into the path: the stream is
//
//   file header, UTF8, LOAD CLASS, STACK FRAME/TRACE   written to the pipe itself
//   [HEAP DUMP SEGMENT]*                               a copy of <pipe>.p0, then .p1 ...
//   HEAP DUMP END
//
// Reading those copies from the pipe would move every byte through this process three times
// (pipe, rewriter, sink). Instead, where a side file's first bytes arrive, the reader opens that
// file (the JVM is still copying it into the pipe, so it is there and complete), checks that the
// bytes read from the pipe so far are the file's first bytes, has the rewriter read the file
// (VmDumpRewriter::feed_file: the unchanged runs are copied by the kernel into a file output), and
// lets the drain skip the file's copy in the pipe unread. A side file that is gone (a small one
// may be copied and removed before its first bytes are read) or differs means the pipe's bytes are
// used, as on JDK 17 where there is no side file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "vm_dump/vm_dump_rewriter.h"

namespace fasthprof {

class VmDumpPipeReader {
 public:
  // skip(n): the drain drops the next n bytes of the pipe unread (FifoDrain::skip). side_files:
  // whether to look for the JVM's side files at all (JDK 22+).
  VmDumpPipeReader(VmDumpRewriter& rewriter, std::string pipe_path, bool side_files,
                   std::function<void(uint64_t)> skip);
  // Closes the side files: the output must have been flushed first (the sink copies from them).
  ~VmDumpPipeReader();
  VmDumpPipeReader(const VmDumpPipeReader&) = delete;
  VmDumpPipeReader& operator=(const VmDumpPipeReader&) = delete;

  // The drain's consumer: the next chunk of the pipe. False when the rewriter failed.
  bool take(uint8_t* data, size_t size);

  // Hands over the descriptors of the side files read (the caller closes them; the destructor no
  // longer does). The JVM has removed the files by then: the last close frees their pages, which
  // for a large dump is a quarter of a second of kernel work that need not delay the report.
  std::vector<int> release_files() {
    released_ = static_cast<uint32_t>(files_.size());
    return std::move(files_);
  }

  // Side files read in place of their copy in the pipe, and their bytes.
  uint32_t side_files() const { return released_ + static_cast<uint32_t>(files_.size()); }
  uint64_t side_file_bytes() const { return side_file_bytes_; }
  // Monotonic times: the first byte of the pipe, the first side file opened, the last one read
  // (0 if none), for the stats line.
  uint64_t first_byte_ns() const { return first_byte_ns_; }
  uint64_t side_file_opened_ns() const { return side_opened_ns_; }
  uint64_t side_file_read_ns() const { return side_read_ns_; }
  // Why the pipe's bytes were used where a side file was looked for (empty if it never was).
  const std::string& note() const { return note_; }

 private:
  // Bytes of [data, size) before the first top-level record that is a HEAP DUMP SEGMENT; the
  // scanner then stands at that record, not past it.
  size_t scan(const uint8_t* data, size_t size);
  // A segment begins at data (avail bytes of the pipe from there): reads the next side file
  // instead if it can; *used = the pipe's bytes it stands for.
  bool use_side_file(const uint8_t* data, size_t avail, size_t* used);

  VmDumpRewriter& rewriter_;
  std::string pipe_path_;
  bool looking_;  // scanning for segments that start a side file's copy
  std::function<void(uint64_t)> skip_;
  std::vector<int> files_;
  uint32_t released_ = 0;
  uint64_t side_file_bytes_ = 0;
  uint64_t first_byte_ns_ = 0;
  uint64_t side_opened_ns_ = 0;
  uint64_t side_read_ns_ = 0;
  std::string note_;
  bool failed_ = false;
  // scanner
  bool in_title_ = true;        // the header's NUL-terminated title
  uint32_t header_left_ = 12;   // then its identifier size and time stamp
  uint8_t head_[kRecordHeaderSize] = {};
  size_t head_have_ = 0;
  uint64_t body_left_ = 0;
};

}  // namespace fasthprof
