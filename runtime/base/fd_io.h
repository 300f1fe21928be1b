// Whole writes to (and reads from) a file descriptor with plain system calls: no allocation, no lock, so that the
// child of a fork (fork_dump/fork_child.h) may use them as well as any thread.
//
// Threads: any; async-signal-safe.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <cstddef>

namespace fasthprof {

// Writes all size bytes of data, again after EINTR and short writes; false on an error or a
// descriptor that takes nothing (errno says which).
inline bool write_all(int fd, const void* data, size_t size) {
  const auto* next = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t written = ::write(fd, next, size);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return false;
    next += written;
    size -= static_cast<size_t>(written);
  }
  return true;
}

// Reads exactly size bytes into data, again after EINTR and short reads; false on an error or an
// end of input before size bytes.
inline bool read_all(int fd, void* data, size_t size) {
  auto* next = static_cast<char*>(data);
  while (size > 0) {
    ssize_t got = ::read(fd, next, size);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    next += got;
    size -= static_cast<size_t>(got);
  }
  return true;
}

}  // namespace fasthprof
