#include "output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

namespace fasthprof {
namespace {

constexpr mode_t kOwnerOnly = 0600;
constexpr std::string_view kTextSuffix = ".txt";

bool starts_with_text_suffix(std::string_view extension) {
  if (extension.size() < kTextSuffix.size()) return false;
  for (size_t i = 0; i < kTextSuffix.size(); ++i) {
    char c = extension[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != kTextSuffix[i]) return false;
  }
  return true;
}

int open_owner_only(const std::string& path, int extra_flags) {
  return ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | extra_flags, kOwnerOnly);
}

}  // namespace

std::string unique_output_path(const std::string& path, bool binary_format, int pid) {
  struct stat info;
  // lstat: a dangling symlink or an unreadable file is still "there" and must not be replaced.
  if (::lstat(path.c_str(), &info) != 0) return path;

  std::string prefix = path;
  std::string suffix;
  if (!binary_format) {
    suffix = kTextSuffix;
    size_t slash = path.rfind('/');
    size_t dot = path.rfind('.');
    bool dot_in_basename = dot != std::string::npos && (slash == std::string::npos || dot > slash);
    if (dot_in_basename && starts_with_text_suffix(std::string_view(path).substr(dot))) {
      suffix = path.substr(dot);
      prefix = path.substr(0, dot);
    }
  }
  return prefix + "." + std::to_string(pid) + suffix;
}

int create_output_file(const std::string& path, std::string* error) {
  int fd = open_owner_only(path, O_TRUNC);
  if (fd >= 0) {
    struct stat info;
    if (::fstat(fd, &info) == 0 && S_ISREG(info.st_mode) && (info.st_mode & 07777) != kOwnerOnly &&
        ::fchmod(fd, kOwnerOnly) != 0) {
      // Not our file to chmod (writable through its group): replace it by one of our own.
      ::close(fd);
      ::unlink(path.c_str());
      fd = open_owner_only(path, O_EXCL);
      if (fd >= 0) ::fchmod(fd, kOwnerOnly);  // undo a restrictive umask; the file is ours
    }
  }
  if (fd < 0) {
    int saved = errno;
    *error = "can't create profile file: " + path + ": " + std::strerror(saved);
    return -1;
  }
  return fd;
}

}  // namespace fasthprof
