// Where the async sink's bytes finally go: a file, a device, a pipe or a socket. The sink owns
// the error policy (what to cut back, what to report, when to stop); a backend only says what it
// can do.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace fasthprof {

// Outcome of a backend call: 0 or the errno value that stopped it.
struct WriteResult {
  int error = 0;

  bool ok() const { return error == 0; }
};

// A destination for whole byte ranges. All calls come from one thread at a time (the sink's io
// thread while it runs, the owner before and after).
class SinkBackend {
 public:
  virtual ~SinkBackend() = default;

  // Writes all size bytes, retrying interrupted and short writes. Does not allocate. On failure
  // returns the errno; some of the bytes may have reached the destination.
  virtual WriteResult write_all(const void* data, size_t size) = 0;

  // Bytes successfully written so far, counted from where this backend started; after a
  // truncate_to(n) it is n. The sink remembers report starts in this unit.
  virtual uint64_t offset() const = 0;

  // Whether truncate_to() can cut the output back (a regular file can; devices, pipes and sockets
  // cannot).
  virtual bool can_truncate() const = 0;

  // Cuts the output back to offset (<= offset()) so that the next write lands there. Does not
  // allocate. On failure returns the errno and leaves offset() unchanged.
  virtual WriteResult truncate_to(uint64_t offset) = 0;

  // Writes size bytes of the file fd from its offset, as write_all would write them (the sink's
  // AsyncSink::write_file_range). bounce is scratch memory of bounce_size bytes for a backend
  // that has to read them itself, as this default does (pread, then write_all); a file backend has
  // the kernel copy them. Does not allocate. A failure to read fd is EIO.
  virtual WriteResult copy_range(int fd, uint64_t offset, uint64_t size, uint8_t* bounce, size_t bounce_size) {
    while (size > 0) {
      const size_t want = size < bounce_size ? static_cast<size_t>(size) : bounce_size;
      const ssize_t got = ::pread(fd, bounce, want, static_cast<off_t>(offset));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) return {EIO};
      const WriteResult written = write_all(bounce, static_cast<size_t>(got));
      if (!written.ok()) return written;
      offset += static_cast<uint64_t>(got);
      size -= static_cast<uint64_t>(got);
    }
    return {};
  }

  // Makes what was written so far readable on its own at the destination: a compressing backend
  // ends its current compressed unit here. The sink calls it at the start and end of every report
  // and on flush. Other backends have nothing to do.
  virtual WriteResult seal() { return {}; }

  // Where the destination's own bytes end: offset() unless the backend transforms them (a
  // compressing backend's compressed size). For messages only.
  virtual uint64_t stored_offset() const { return offset(); }

  // Whether a write error makes every later write pointless (a broken connection), so that the
  // sink closes the backend and ends output for the rest of the run.
  virtual bool error_ends_output() const = 0;

  // How messages name the destination: a path, or host:port.
  virtual const std::string& name() const = 0;

  // The reason an errno from this backend gives in messages (strerror unless the backend knows
  // better, e.g. what its own timeout means). Allocates.
  virtual std::string describe_error(int error) const {
    char buffer[128];
    return strerror_r(error, buffer, sizeof buffer);  // GNU: returns the text, in buffer or not
  }

  // Releases the destination. Idempotent. Returns the errno of a failed close (a file system may
  // report a deferred write error only here).
  virtual WriteResult close() = 0;
};

// Feeds size bytes to write_once(bytes, count) -> ssize_t (write(2) or send(2) on one
// descriptor) until all are taken, retrying EINTR and short writes, and counts them in *offset.
// A call that takes nothing for a non-empty request would make no progress: it is EIO.
template <typename WriteOnce>
WriteResult write_fully(const void* data, size_t size, uint64_t* offset, WriteOnce write_once) {
  const char* bytes = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = write_once(bytes, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return {errno};
    }
    if (n == 0) return {EIO};
    bytes += n;
    size -= static_cast<size_t>(n);
    *offset += static_cast<uint64_t>(n);
  }
  return {};
}

}  // namespace fasthprof
