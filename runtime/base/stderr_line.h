// The agent's one way to stderr, for its messages and diagnostics from any code: runtime/ and the
// JVMTI glue alike.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <string_view>

namespace fasthprof {

// Writes text to stderr as it is (the caller ends its lines). One write() call when the descriptor
// takes it whole, so that a line stays whole among other threads' lines; after a partial write or
// an interrupted call, the rest. Gives up silently when stderr is closed or failing: there is no
// one left to tell. Never allocates; safe in signal handlers and on any thread.
inline void write_stderr(std::string_view text) noexcept {
  const char* bytes = text.data();
  size_t left = text.size();
  while (left > 0) {
    ssize_t written = ::write(STDERR_FILENO, bytes, left);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return;
    bytes += written;
    left -= static_cast<size_t>(written);
  }
}

}  // namespace fasthprof
