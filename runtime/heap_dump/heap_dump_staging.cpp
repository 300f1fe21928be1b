#include "heap_dump/heap_dump_staging.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fasthprof {
namespace {

constexpr size_t kBufferSize = size_t{1} << 20;

std::string errno_text(const std::string& what) { return what + ": " + strerror(errno); }

}  // namespace

std::string folder_of(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::unique_ptr<StagingFile> StagingFile::create(const std::string& folder, std::string* error) {
  std::string dir = folder;
  if (dir.empty()) {
    const char* tmp = getenv("TMPDIR");
    dir = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  }
  std::string pattern = dir + "/.fasthprof-heap-XXXXXX";
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  mode_t old_mask = umask(077);
  int fd = mkstemp(name.data());
  umask(old_mask);
  if (fd < 0) {
    *error = errno_text("cannot create a staging file in " + dir);
    return nullptr;
  }
  fchmod(fd, 0600);
  unlink(name.data());  // removed whatever happens next; the descriptor keeps the data
  return std::unique_ptr<StagingFile>(new StagingFile(fd));
}

StagingFile::StagingFile(int fd) : fd_(fd), buffer_(kBufferSize) {}

StagingFile::~StagingFile() { close(fd_); }

void StagingFile::flush_buffer() {
  size_t done = 0;
  while (done < buffer_used_ && error_.empty()) {
    ssize_t n = ::write(fd_, buffer_.data() + done, buffer_used_ - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error_ = errno_text("cannot write the heap dump's staging file");
      break;
    }
    done += static_cast<size_t>(n);
  }
  written_ += done;
  buffer_used_ = 0;
}

void StagingFile::write(const void* data, size_t size) {
  if (!error_.empty()) return;
  const char* bytes = static_cast<const char*>(data);
  while (size > 0) {
    size_t room = buffer_.size() - buffer_used_;
    size_t take = size < room ? size : room;
    memcpy(buffer_.data() + buffer_used_, bytes, take);
    buffer_used_ += take;
    bytes += take;
    size -= take;
    if (buffer_used_ == buffer_.size()) flush_buffer();
  }
}

bool StagingFile::copy_to(OutputStream& out, std::string* error) {
  flush_buffer();
  bool ok = error_.empty();
  if (!ok) *error = error_;
  uint64_t offset = 0;
  while (ok && offset < written_) {
    ssize_t n = pread(fd_, buffer_.data(), buffer_.size(), static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      *error = errno_text("cannot read the heap dump's staging file back");
      ok = false;
      break;
    }
    out.write(buffer_.data(), static_cast<size_t>(n));
    offset += static_cast<uint64_t>(n);
  }
  if ((ftruncate(fd_, 0) != 0 || lseek(fd_, 0, SEEK_SET) != 0) && ok) {
    *error = errno_text("cannot empty the heap dump's staging file");
    ok = false;
  }
  written_ = 0;
  buffer_used_ = 0;
  error_.clear();
  return ok;
}

}  // namespace fasthprof
