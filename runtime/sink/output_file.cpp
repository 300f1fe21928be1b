#include "sink/output_file.h"

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

// Removing a link planted again and again at the default name is given up after this many tries;
// force=n tries this many numbered names after prefix.<pid>suffix.
constexpr int kReplaceAttempts = 8;
constexpr int kUniqueAttempts = 1000;

int open_owner_only(const std::string& path, int extra_flags) {
  return ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | extra_flags, kOwnerOnly);
}

// A file that did not exist: never an existing file, never through a link. 0600 whatever the umask.
int create_new(const std::string& path) {
  int fd;
  do {
    fd = open_owner_only(path, O_EXCL | O_NOFOLLOW);
  } while (fd < 0 && errno == EINTR);
  if (fd >= 0) ::fchmod(fd, kOwnerOnly);
  return fd;
}

int fail(const std::string& path, std::string* error) {
  int saved = errno;
  *error = "can't create profile file: " + path + ": " + std::strerror(saved);
  return -1;
}

}  // namespace

std::string unique_output_candidate(const std::string& path, bool binary_format, int pid, int attempt) {
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
  std::string unique = prefix + "." + std::to_string(pid);
  if (attempt > 0) unique += "." + std::to_string(attempt);
  return unique + suffix;
}

std::string unique_output_path(const std::string& path, bool binary_format, int pid) {
  struct stat info;
  // lstat: a dangling symlink or an unreadable file is still "there" and must not be replaced.
  if (::lstat(path.c_str(), &info) != 0) return path;
  return unique_output_candidate(path, binary_format, pid, 0);
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
  if (fd < 0) return fail(path, error);
  return fd;
}

int open_output_file(const OutputFileChoice& choice, std::string* opened_path, std::string* error) {
  const std::string& path = choice.path;
  if (choice.force && choice.user_named) {
    *opened_path = path;
    return create_output_file(path, error);
  }
  if (choice.force) {
    // The default name: whatever is there goes, but only the entry itself (unlink never follows).
    for (int attempt = 0; attempt < kReplaceAttempts; ++attempt) {
      int fd = create_new(path);
      if (fd >= 0) {
        *opened_path = path;
        return fd;
      }
      if (errno != EEXIST) return fail(path, error);
      if (::unlink(path.c_str()) != 0 && errno != ENOENT) return fail(path, error);
    }
    errno = EEXIST;
    return fail(path, error);
  }
  std::string candidate = path;
  for (int attempt = -1; attempt < kUniqueAttempts; ++attempt) {
    if (attempt >= 0) candidate = unique_output_candidate(path, choice.binary_format, choice.pid, attempt);
    int fd = create_new(candidate);
    if (fd >= 0) {
      *opened_path = candidate;
      return fd;
    }
    if (errno != EEXIST) return fail(candidate, error);
  }
  errno = EEXIST;
  return fail(candidate, error);
}

}  // namespace fasthprof
