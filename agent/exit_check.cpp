#include "exit_check.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "hprof_verifier.h"
#include "jvmti_support.h"

namespace fasthprof {

bool check_binary_file(const std::string& path, bool verbose) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat status{};
  if (fd < 0 || fstat(fd, &status) != 0) {
    jvmti::print_error("cannot read " + path + " to verify it: " + std::strerror(errno));
    if (fd >= 0) ::close(fd);
    return false;
  }
  size_t size = static_cast<size_t>(status.st_size);
  const uint8_t* data = nullptr;
  void* mapped = MAP_FAILED;
  if (size > 0) {
    mapped = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (mapped != MAP_FAILED) data = static_cast<const uint8_t*>(mapped);
  }
  ::close(fd);
  if (size > 0 && data == nullptr) {
    jvmti::print_error("cannot map " + path + " to verify it: " + std::strerror(errno));
    return false;
  }
  VerifyOptions strict;
  strict.strict = true;  // the agent's own file keeps every promise
  VerifyResult result = verify_hprof(data, size, strict);
  if (mapped != MAP_FAILED) munmap(mapped, size);
  if (!result.ok) {
    jvmti::print_error(path + " failed verification at byte " + std::to_string(result.error_offset) +
                       ": " + result.error);
    return false;
  }
  if (verbose) {
    uint64_t records = 0;
    for (uint64_t count : result.record_counts) records += count;
    std::string line = "fasthprof: verified " + path + ": " + std::to_string(records) + " records, " +
                       std::to_string(result.dumps.size()) + " heap dump(s)\n";
    write_stderr(line);
  }
  return true;
}

}  // namespace fasthprof
