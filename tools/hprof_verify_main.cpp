// hprof-verify: checks HPROF binary files with the verifier library and prints what they hold.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "hprof_verifier.h"

namespace {

constexpr char kUsage[] =
    "usage: hprof-verify [--strict] [--classes] [--quiet] FILE...\n"
    "Checks HPROF binary files (JAVA PROFILE 1.0.1 / 1.0.2) and prints a summary of each.\n"
    "Every file the JDK's own dumper writes passes; --strict adds what fasthprof's files promise.\n"
    "  --strict   also require every trace serial to be defined before a record names it\n"
    "  --classes  also print, per heap dump, the number of objects of each class\n"
    "  --quiet    print nothing for files that pass\n"
    "  --help     print this text\n"
    "Exit status: 0 if every file passes, 1 if one fails (first error and its byte offset on stderr),\n"
    "2 on a usage error or an unreadable file.\n";

// The bytes of a file, mapped read-only; empty files map to nothing.
class MappedFile {
 public:
  ~MappedFile() {
    if (data_ != nullptr) munmap(data_, size_);
  }

  // Maps path; on failure returns false with an errno message in error.
  bool open(const char* path, std::string* error) {
    int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      *error = std::strerror(errno);
      return false;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
      *error = std::strerror(errno);
      close(fd);
      return false;
    }
    size_ = static_cast<size_t>(st.st_size);
    if (size_ > 0) {
      void* mapped = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
      if (mapped == MAP_FAILED) {
        *error = std::strerror(errno);
        close(fd);
        return false;
      }
      data_ = static_cast<uint8_t*>(mapped);
      madvise(data_, size_, MADV_SEQUENTIAL);
    }
    close(fd);
    return true;
  }

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  bool classes = false;
  bool quiet = false;
  bool strict = false;
  std::vector<const char*> files;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--classes") == 0) {
      classes = true;
    } else if (std::strcmp(argv[i], "--strict") == 0) {
      strict = true;
    } else if (std::strcmp(argv[i], "--quiet") == 0) {
      quiet = true;
    } else if (std::strcmp(argv[i], "--help") == 0) {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
      std::fprintf(stderr, "hprof-verify: unknown option %s\n%s", argv[i], kUsage);
      return 2;
    } else {
      files.push_back(argv[i]);
    }
  }
  if (files.empty()) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  fasthprof::VerifyOptions options;
  options.count_classes = classes;
  options.strict = strict;
  int status = 0;
  for (const char* path : files) {
    MappedFile file;
    std::string error;
    if (!file.open(path, &error)) {
      std::fprintf(stderr, "hprof-verify: %s: cannot read: %s\n", path, error.c_str());
      return 2;
    }
    fasthprof::VerifyResult result = fasthprof::verify_hprof(file.data(), file.size(), options);
    if (!result.ok) {
      std::fprintf(stderr, "hprof-verify: %s: error at byte %" PRIu64 ": %s\n", path, result.error_offset,
                   result.error.c_str());
      status = 1;
      continue;
    }
    if (!quiet) {
      std::printf("%s: ok\n%s", path, fasthprof::format_verify_summary(result, classes).c_str());
    }
  }
  return status;
}
