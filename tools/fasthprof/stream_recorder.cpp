#include "stream_recorder.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace fasthprof::cli {

StreamRecorder::StreamRecorder(FileOpener open_file) : open_file_(std::move(open_file)) {}

StreamRecorder::~StreamRecorder() { close_file(); }

bool StreamRecorder::take(const uint8_t* data, size_t size) {
  received_ += size;
  if (state_ == State::kWriting) return write(data, size);
  if (state_ != State::kHolding) return true;
  head_.insert(head_.end(), data, data + size);
  StreamFrame::Kind kind = StreamFrame::kind_of(head_.data(), head_.size());
  if (kind == StreamFrame::Kind::kUnknown) return true;
  return open_with_head(kind);
}

bool StreamRecorder::open_with_head(StreamFrame::Kind kind) {
  file_ = open_file_(kind);
  std::vector<uint8_t> head;
  head.swap(head_);
  if (file_ < 0) {
    state_ = State::kDropping;
    return true;
  }
  state_ = State::kWriting;
  return write(head.data(), head.size());
}

bool StreamRecorder::write(const uint8_t* data, size_t size) {
  size_t written = 0;
  int error = 0;
  while (written < size) {
    ssize_t n = ::write(file_, data + written, size - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error = n < 0 ? errno : ENOSPC;
      break;
    }
    written += static_cast<size_t>(n);
  }
  stored_ += written;
  frame_.feed(data, written);
  if (written == size) return true;
  std::string cut = cut_back();
  const bool cut_short = cut.rfind("cut back", 0) == 0;
  failure_ = std::string(std::strerror(error)) + "; " +
             (cut.empty() ? "the file ends on a complete record" : cut) +
             (cut_short ? " bytes, the end of its last complete record" : "") + "; the rest of the stream is dropped";
  note_ = (cut.empty() ? std::string("the rest was dropped") : cut) + ": the file could not be written (" +
          std::strerror(error) + ")";
  close_file();
  state_ = State::kDropping;
  return false;
}

std::string StreamRecorder::finish() {
  if (state_ == State::kFinished) return note_;
  if (state_ == State::kHolding && !head_.empty()) {
    open_with_head(StreamFrame::kind_of(head_.data(), head_.size()));
  }
  if (state_ == State::kWriting) {
    std::string cut = cut_back();
    if (cut.rfind("cut back", 0) == 0) cut += ": the stream ended inside a record";
    note_ = cut;
  }
  close_file();
  state_ = State::kFinished;
  frame_.release_gzip();
  std::vector<uint8_t>().swap(head_);
  return note_;
}

std::string StreamRecorder::cut_back() {
  const StreamFrame::Kind kind = frame_.kind();
  if (kind == StreamFrame::Kind::kGzip && frame_.gzip() != nullptr) return cut_back_gzip(*frame_.gzip());
  if (kind != StreamFrame::Kind::kBinary && kind != StreamFrame::Kind::kText) return "";
  const uint64_t safe = frame_.safe_end();
  if (safe == frame_.total()) return "";
  if (ftruncate(file_, static_cast<off_t>(safe)) != 0) {
    return std::string("kept as it came: cannot cut it back: ") + std::strerror(errno);
  }
  stored_ = safe;
  return "cut back to " + std::to_string(safe);
}

std::string StreamRecorder::cut_back_gzip(const GzipFollower& gzip) {
  if (gzip.broken() != nullptr) return std::string("kept as it came: ") + gzip.broken();
  const StreamFrame::Kind content = gzip.content_kind();
  if (content != StreamFrame::Kind::kBinary && content != StreamFrame::Kind::kText) {
    return "kept as it came: its content is not an HPROF stream";
  }
  if (gzip.whole()) return "";
  std::string why;
  GzipFollower::Cut cut = gzip.cut_back(file_, &why);
  if (cut.size < 0) return "kept as it came: " + why;
  stored_ = static_cast<uint64_t>(cut.size);
  std::string text = "cut back to " + std::to_string(cut.size) + " (" + std::to_string(cut.plain) + " uncompressed)";
  if (!why.empty()) text += " at the last member that ended on a record (" + why + ")";
  return text;
}

void StreamRecorder::close_file() {
  if (file_ >= 0) close(file_);
  file_ = -1;
}

}  // namespace fasthprof::cli
