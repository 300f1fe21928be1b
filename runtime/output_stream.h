// The byte seam between the writers (records, text lines) and where the bytes go (the sink).
#pragma once

#include <cstddef>

namespace fasthprof {

// A destination for encoded output. Writers append whole chunks; the implementation decides when
// bytes reach the file or socket.
class OutputStream {
 public:
  virtual ~OutputStream() = default;

  // Appends size bytes. Never fails visibly: an implementation that cannot deliver keeps a sticky
  // error and reports it once. Called from one thread at a time.
  virtual void write(const void* data, size_t size) = 0;
};

}  // namespace fasthprof
