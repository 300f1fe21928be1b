#include "vm_dump/vm_dump_pipe.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/byte_decoder.h"
#include "base/clock.h"

namespace fasthprof {

namespace {

// Why a side file is not one the JVM made for this dump, empty if it is one.
std::string unexpected_side_file(const struct stat& st) {
  if (!S_ISREG(st.st_mode)) return "not a regular file";
  if (st.st_uid != ::geteuid()) return "owned by user " + std::to_string(st.st_uid);
  if (st.st_nlink != 1) return std::to_string(st.st_nlink) + " links to it";
  if (st.st_size <= 0) return "empty";
  return "";
}

}  // namespace

VmDumpPipeReader::VmDumpPipeReader(VmDumpRewriter& rewriter, std::string pipe_path, bool side_files,
                                   std::function<void(uint64_t)> skip)
    : rewriter_(rewriter), pipe_path_(std::move(pipe_path)), looking_(side_files), skip_(std::move(skip)) {}

VmDumpPipeReader::~VmDumpPipeReader() {
  for (int fd : files_) ::close(fd);
}

bool VmDumpPipeReader::take(uint8_t* data, size_t size) {
  if (failed_) return false;
  if (first_byte_ns_ == 0) first_byte_ns_ = monotonic_ns();
  size_t pos = 0;
  while (pos < size) {
    if (!looking_) {
      failed_ = !rewriter_.feed_in_place(data + pos, size - pos);
      return !failed_;
    }
    size_t before = scan(data + pos, size - pos);
    if (before > 0 && !rewriter_.feed_in_place(data + pos, before)) {
      failed_ = true;
      return false;
    }
    pos += before;
    if (pos == size) break;
    size_t used = 0;
    if (!use_side_file(data + pos, size - pos, &used)) {
      if (failed_) return false;
      looking_ = false;  // the pipe's bytes from here on
      continue;
    }
    pos += used;
  }
  return true;
}

size_t VmDumpPipeReader::scan(const uint8_t* data, size_t size) {
  size_t i = 0;
  while (i < size) {
    if (in_title_) {
      const void* nul = std::memchr(data + i, 0, size - i);
      if (nul == nullptr) return size;
      i = static_cast<size_t>(static_cast<const uint8_t*>(nul) - data) + 1;
      in_title_ = false;
      continue;
    }
    if (header_left_ > 0) {
      size_t take = std::min<size_t>(header_left_, size - i);
      i += take;
      header_left_ -= static_cast<uint32_t>(take);
      continue;
    }
    if (body_left_ > 0) {
      uint64_t take = std::min<uint64_t>(body_left_, size - i);
      i += static_cast<size_t>(take);
      body_left_ -= take;
      continue;
    }
    if (head_have_ == 0 && data[i] == static_cast<uint8_t>(RecordTag::kHeapDumpSegment)) return i;
    head_[head_have_++] = data[i++];
    if (head_have_ == kRecordHeaderSize) {
      body_left_ = load_be32(head_ + 5);
      head_have_ = 0;
    }
  }
  return size;
}

bool VmDumpPipeReader::use_side_file(const uint8_t* data, size_t avail, size_t* used) {
  std::string path = pipe_path_ + ".p" + std::to_string(files_.size());
  // Never through a link, never waiting on a pipe put there; and only a file the JVM made (our
  // user's, one name, not empty).
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) {
    note_ = "no side file " + path + " (" + std::strerror(errno) + ")";
    return false;
  }
  struct stat st {};
  std::string why = ::fstat(fd, &st) != 0 ? std::string(std::strerror(errno)) : unexpected_side_file(st);
  if (!why.empty()) {
    note_ = "the side file " + path + " is refused: " + why;
    ::close(fd);
    return false;
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  // The pipe's bytes from here must be the file's first bytes: then the rest of its copy in the
  // pipe is the rest of the file.
  const size_t check = static_cast<size_t>(std::min<uint64_t>(avail, size));
  std::vector<uint8_t> first(check);
  size_t have = 0;
  while (have < check) {
    ssize_t got = ::pread(fd, first.data() + have, check - have, static_cast<off_t>(have));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    have += static_cast<size_t>(got);
  }
  if (have != check || std::memcmp(first.data(), data, check) != 0) {
    note_ = "the side file " + path + " is not what the JVM sends";
    ::close(fd);
    return false;
  }
  files_.push_back(fd);
  if (side_opened_ns_ == 0) side_opened_ns_ = monotonic_ns();
  if (!rewriter_.feed_file(fd, size)) {
    failed_ = true;
    return false;
  }
  side_read_ns_ = monotonic_ns();
  side_file_bytes_ += size;
  if (size > check) skip_(size - check);
  *used = check;
  return true;  // the scanner stands at the record after the file: the file holds whole records
}

}  // namespace fasthprof
