#include "sink/output_stream.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace fasthprof {

bool OutputStream::copy_file_by_reading(OutputStream& out, int fd, uint64_t offset, uint64_t size) {
  char buffer[64 << 10];
  while (size > 0) {
    const ssize_t got = ::pread(fd, buffer, std::min<uint64_t>(size, sizeof buffer), static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;  // an error, or the file is shorter than asked
    out.write(buffer, static_cast<size_t>(got));
    offset += static_cast<uint64_t>(got);
    size -= static_cast<uint64_t>(got);
  }
  return true;
}

}  // namespace fasthprof
