#include "entry_guard.h"

#include <unistd.h>

#include <cstdio>
#include <string_view>

#include "base/stderr_line.h"

namespace fasthprof {

void report_entry_failure(const char* where, const char* cause, const char* consequence) noexcept {
  char line[512];
  int length = std::snprintf(line, sizeof line, "HPROF ERROR: fasthprof: %s in %s; %s\n", cause, where, consequence);
  if (length < 0) return;
  if (static_cast<size_t>(length) >= sizeof line) {
    length = sizeof line - 1;
    line[length - 1] = '\n';
  }
  write_stderr(std::string_view(line, static_cast<size_t>(length)));
}

}  // namespace fasthprof
