// One connection's bytes on their way to its file (`fasthprof listen`). The first bytes are held
// until they name the stream's kind (at most 65 bytes decide it), which names the file; then each
// piece received is written and followed by a StreamFrame, which sees only what reached the file.
// When the stream stops in the middle of a record (the peer went away), or when the file cannot
// take more (a full disk, a file size limit), the file is cut back to the end of its last complete
// record: what remains is what the agent itself would have kept of a failed local file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "stream_frame.h"

namespace fasthprof::cli {

class StreamRecorder {
 public:
  // Opens the file for a stream of the given kind (kUnknown when the stream ended before its
  // kind was known) for reading and writing (a gzip stream's cut-back reads its last member
  // back); returns the descriptor, which the recorder closes, or -1 after saying why (the bytes
  // are then dropped).
  using FileOpener = std::function<int(StreamFrame::Kind)>;

  explicit StreamRecorder(FileOpener open_file);
  ~StreamRecorder();
  StreamRecorder(const StreamRecorder&) = delete;
  StreamRecorder& operator=(const StreamRecorder&) = delete;

  // Takes size more bytes of the stream. Returns false when the file could not take them: it was
  // cut back and closed, failure() says what happened, and the rest of the stream is dropped
  // (counted in received() only). Allocates (the held head, the gzip follower).
  bool take(const uint8_t* data, size_t size);

  // The end of the stream: the file is cut back to its last complete record when the stream
  // stopped inside one, and closed; the memory of the stream is freed. Returns what happened to
  // the file for the collector's `closed` line: "" when it was whole, else e.g. "cut back to N:
  // the stream ended inside a record" or "kept as it came: <why>". Idempotent.
  std::string finish();

  uint64_t received() const { return received_; }
  // The bytes in the file: written, less what a cut took.
  uint64_t stored() const { return stored_; }
  // After take() returned false: "<error>; cut back to N bytes, the end of its last complete
  // record" (or why it could not be), for one message.
  const std::string& failure() const { return failure_; }

 private:
  enum class State { kHolding, kWriting, kDropping, kFinished };
  bool open_with_head(StreamFrame::Kind kind);
  bool write(const uint8_t* data, size_t size);
  // Cuts the file back to its last complete record; a clause for messages ("cut back to N", "kept
  // as it came: why"), or "" when the file was whole.
  std::string cut_back();
  std::string cut_back_gzip(const GzipFollower& gzip);
  void close_file();

  FileOpener open_file_;
  State state_ = State::kHolding;
  int file_ = -1;
  std::vector<uint8_t> head_;
  StreamFrame frame_;
  uint64_t received_ = 0;
  uint64_t stored_ = 0;
  std::string failure_;
  std::string note_;
};

}  // namespace fasthprof::cli
