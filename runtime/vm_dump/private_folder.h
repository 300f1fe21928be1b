// A folder that only this process's user can enter, for files whose names another user could
// guess: the pipe HotSpot's dumper writes into (runtime/vm_dump/fifo_drain.h) and the side files HotSpot 22+
// opens beside it ("<pipe>.p<N>", opened with O_TRUNC and following links). In a folder others
// may write (mode 1777, /tmp), a link or a file planted at such a name would have the JVM overwrite
// the link's target or write the heap into a file the other user holds open; inside a folder of
// mode 0700 there is nothing to plant.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

namespace fasthprof {

class PrivateFolder {
 public:
  // Makes <parent>/<prefix>XXXXXX (mkdtemp: a fresh name, mode 0700), opens it without following a
  // link and checks, through the descriptor and through the path, what check_private_folder checks
  // and that both are the same folder. Returns null with *error set (one line) when it cannot:
  // nothing is left behind then. Allocates.
  static std::unique_ptr<PrivateFolder> create(const std::string& parent, const std::string& prefix,
                                               std::string* error);

  // remove().
  ~PrivateFolder();
  PrivateFolder(const PrivateFolder&) = delete;
  PrivateFolder& operator=(const PrivateFolder&) = delete;

  const std::string& path() const { return path_; }
  // The folder, opened O_DIRECTORY | O_NOFOLLOW: names below it are resolved through this
  // descriptor, never through the path again. -1 after remove().
  int fd() const { return fd_; }

  // Removes every entry of the folder (it holds files, pipes and links only: nothing is followed
  // or descended into), then the folder itself if its path still names it. Idempotent; any thread
  // that owns the object.
  void remove();

 private:
  PrivateFolder(std::string path, int fd, dev_t device, ino_t inode);

  std::string path_;
  int fd_;
  dev_t device_;
  ino_t inode_;
};

// Whether path is a folder, not a link to one, owned by the effective user, of mode 0700 exactly.
// Returns false with *error set to why not.
bool check_private_folder(const std::string& path, std::string* error);

}  // namespace fasthprof
