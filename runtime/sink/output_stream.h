// The byte seam between the writers (records, text lines) and where the bytes go (the sink).
#pragma once

#include <cstddef>
#include <cstdint>

namespace fasthprof {

// A destination for encoded output. Writers append whole chunks; the implementation decides when
// bytes reach the file or socket.
class OutputStream {
 public:
  virtual ~OutputStream() = default;

  // Appends size bytes. Never fails visibly: an implementation that cannot deliver keeps a sticky
  // error and reports it once. Called from one thread at a time.
  virtual void write(const void* data, size_t size) = 0;

  // Appends size bytes of the file fd, from its offset (a side file the JVM wrote). This default
  // reads them with pread and write()s them; the sink overrides it so that a file output has them
  // copied by the kernel. Returns false when fd could not be read (the bytes written before stay);
  // errors of the destination stay the implementation's, as for write. fd must stay open until the
  // implementation has flushed (the sink copies later, on its own thread).
  // (Inline: a class without an out-of-line virtual has its vtable and type information in every
  // user, which the runtime, built without RTTI, and the tests, built with it, both need.)
  virtual bool write_file_range(int fd, uint64_t offset, uint64_t size) {
    return copy_file_by_reading(*this, fd, offset, size);
  }

 private:
  static bool copy_file_by_reading(OutputStream& out, int fd, uint64_t offset, uint64_t size);
};

}  // namespace fasthprof
