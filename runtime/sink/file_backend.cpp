#include "sink/file_backend.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include <new>

namespace fasthprof {

FileBackend::FileBackend(int fd, std::string path) : fd_(fd), path_(std::move(path)) {
  struct stat st;
  if (fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) return;
  // With O_APPEND every write lands at the end, whatever the position says.
  const int flags = fcntl(fd_, F_GETFL);
  const off_t position = lseek(fd_, 0, (flags >= 0 && (flags & O_APPEND)) ? SEEK_END : SEEK_CUR);
  if (position < 0) return;
  base_ = static_cast<uint64_t>(position);
  can_truncate_ = true;
}

FileBackend::~FileBackend() { close(); }

std::unique_ptr<FileBackend> FileBackend::open(const std::string& path, std::string* error) {
  int fd;
  do {
    fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    if (error != nullptr) *error = path + ": " + strerror(errno);
    return nullptr;
  }
  return std::unique_ptr<FileBackend>(new (std::nothrow) FileBackend(fd, path));
}

WriteResult FileBackend::write_all(const void* data, size_t size) {
  if (fd_ < 0) return {EBADF};
  return write_fully(data, size, &offset_, [this](const char* bytes, size_t count) {
    return ::write(fd_, bytes, count);
  });
}

WriteResult FileBackend::copy_range(int fd, uint64_t offset, uint64_t size, uint8_t* bounce, size_t bounce_size) {
  if (fd_ < 0) return {EBADF};
  // Each call moves at most this much, so that a signal or an error is seen in good time.
  constexpr uint64_t kStep = uint64_t{1} << 30;
  bool kernel_copy = true;
  bool use_sendfile = false;
  while (size > 0 && kernel_copy) {
    const size_t want = static_cast<size_t>(size < kStep ? size : kStep);
    loff_t from = static_cast<loff_t>(offset);
    ssize_t n;
    if (!use_sendfile) {
      n = ::copy_file_range(fd, &from, fd_, nullptr, want, 0);
    } else {
      off_t at = static_cast<off_t>(offset);
      n = ::sendfile(fd_, fd, &at, want);
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      // Not between these two files (another file system on an older kernel, O_APPEND, a kernel
      // without the call): the next way, with nothing written yet by this call.
      if (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP || errno == EBADF) {
        if (!use_sendfile) {
          use_sendfile = true;
        } else {
          kernel_copy = false;
        }
        continue;
      }
      return {errno};
    }
    if (n == 0) return {EIO};  // the source ended early
    offset += static_cast<uint64_t>(n);
    size -= static_cast<uint64_t>(n);
    offset_ += static_cast<uint64_t>(n);
  }
  if (size == 0) return {};
  return SinkBackend::copy_range(fd, offset, size, bounce, bounce_size);
}

WriteResult FileBackend::truncate_to(uint64_t offset) {
  if (!can_truncate_ || fd_ < 0) return {EINVAL};
  const off_t position = static_cast<off_t>(base_ + offset);
  int result;
  do {
    result = ftruncate(fd_, position);
  } while (result != 0 && errno == EINTR);
  if (result != 0) return {errno};
  if (lseek(fd_, position, SEEK_SET) < 0) return {errno};
  offset_ = offset;
  return {};
}

WriteResult FileBackend::close() {
  if (fd_ < 0) return {};
  // Linux releases the descriptor even when close() fails, so it is never retried.
  const int result = ::close(fd_);
  fd_ = -1;
  if (result != 0 && errno != EINTR) return {errno};
  return {};
}

}  // namespace fasthprof
