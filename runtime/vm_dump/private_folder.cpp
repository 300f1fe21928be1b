#include "vm_dump/private_folder.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

namespace fasthprof {
namespace {

constexpr mode_t kOwnerOnly = 0700;

std::string octal(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "0%o", static_cast<unsigned>(mode & 07777));
  return text;
}

// Why st is not a private folder of ours, empty if it is one.
std::string why_not_private(const struct stat& st) {
  if (S_ISLNK(st.st_mode)) return "a symbolic link";
  if (!S_ISDIR(st.st_mode)) return "not a folder";
  if (st.st_uid != ::geteuid()) {
    return "owned by user " + std::to_string(st.st_uid) + ", not by " + std::to_string(::geteuid());
  }
  if ((st.st_mode & 07777) != kOwnerOnly) return "mode " + octal(st.st_mode) + ", not 0700";
  return "";
}

// The checks on the folder just made: opened without following a link, the mode set again (the
// umask may have taken bits from mkdtemp's 0700), then the descriptor and the path must both be
// private and the same folder. Empty if it is; the reason otherwise.
std::string verify_made(const std::string& path, int fd, struct stat* made) {
  if (fd < 0) return std::strerror(errno);
  ::fchmod(fd, kOwnerOnly);
  if (::fstat(fd, made) != 0) return std::strerror(errno);
  std::string why = why_not_private(*made);
  if (!why.empty()) return why;
  struct stat named{};
  if (::lstat(path.c_str(), &named) != 0) return std::strerror(errno);
  if (named.st_dev != made->st_dev || named.st_ino != made->st_ino) return "replaced while it was made";
  return why_not_private(named);
}

}  // namespace

bool check_private_folder(const std::string& path, std::string* error) {
  struct stat st{};
  std::string why = ::lstat(path.c_str(), &st) != 0 ? std::string(std::strerror(errno)) : why_not_private(st);
  if (why.empty()) return true;
  *error = path + ": " + why;
  return false;
}

std::unique_ptr<PrivateFolder> PrivateFolder::create(const std::string& parent, const std::string& prefix,
                                                     std::string* error) {
  std::string base = parent.empty() ? std::string(".") : parent;
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  std::string pattern = (base == "/" ? std::string() : base) + "/" + prefix + "XXXXXX";
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  if (::mkdtemp(name.data()) == nullptr) {
    *error = "cannot make a private folder in " + base + ": " + std::strerror(errno);
    return nullptr;
  }
  std::string path(name.data());
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat made{};
  std::string why = verify_made(path, fd, &made);
  if (!why.empty()) {
    *error = "cannot make a private folder in " + base + ": " + path + ": " + why;
    if (fd >= 0) {
      PrivateFolder(path, fd, made.st_dev, made.st_ino).remove();
    }
    return nullptr;
  }
  return std::unique_ptr<PrivateFolder>(new PrivateFolder(std::move(path), fd, made.st_dev, made.st_ino));
}

PrivateFolder::PrivateFolder(std::string path, int fd, dev_t device, ino_t inode)
    : path_(std::move(path)), fd_(fd), device_(device), inode_(inode) {}

PrivateFolder::~PrivateFolder() { remove(); }

void PrivateFolder::remove() {
  if (fd_ < 0) return;
  int listing = ::dup(fd_);
  DIR* dir = listing >= 0 ? ::fdopendir(listing) : nullptr;
  if (dir == nullptr && listing >= 0) ::close(listing);
  if (dir != nullptr) {
    while (dirent* entry = ::readdir(dir)) {
      if (std::strcmp(entry->d_name, ".") == 0 || std::strcmp(entry->d_name, "..") == 0) continue;
      ::unlinkat(fd_, entry->d_name, 0);
    }
    ::closedir(dir);
  }
  // Only the folder made here: a path that names something else now is left alone.
  struct stat named{};
  if (::lstat(path_.c_str(), &named) == 0 && named.st_dev == device_ && named.st_ino == inode_) {
    ::rmdir(path_.c_str());
  }
  ::close(fd_);
  fd_ = -1;
}

}  // namespace fasthprof
