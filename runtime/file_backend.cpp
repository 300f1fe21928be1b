#include "file_backend.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
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
