// PrivateFolder (runtime/vm_dump/private_folder.h): a fresh folder of mode 0700 whatever the umask, removed
// with what it holds, and check_private_folder refusing what another user could have planted: a
// link, a folder of another mode or owner, a file.
#include "vm_dump/private_folder.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "temp_folder.h"

namespace fasthprof {
namespace {

// The user `nobody` on Debian, for a folder of another owner (only root can give one away).
constexpr uid_t kOtherUser = 65534;

// Each test has a folder of its own (folder_), the parent of the folders it makes.
class PrivateFolderTest : public TempFolderTest {};

TEST_F(PrivateFolderTest, MakesAFreshFolderOfMode0700WhateverTheUmask) {
  mode_t old_mask = umask(0277);  // would leave mkdtemp's folder 0500
  std::string error;
  auto folder = PrivateFolder::create(folder_ + "/", ".fasthprof-1-", &error);
  umask(old_mask);
  ASSERT_TRUE(folder) << error;
  EXPECT_EQ(0u, folder->path().find(folder_ + "/.fasthprof-1-")) << folder->path();
  EXPECT_EQ(folder_.size() + 20, folder->path().size()) << folder->path();
  struct stat st{};
  ASSERT_EQ(0, lstat(folder->path().c_str(), &st));
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(0700u, st.st_mode & 07777);
  EXPECT_EQ(geteuid(), st.st_uid);
  EXPECT_TRUE(check_private_folder(folder->path(), &error)) << error;
  auto second = PrivateFolder::create(folder_, ".fasthprof-1-", &error);
  ASSERT_TRUE(second) << error;
  EXPECT_NE(folder->path(), second->path());
}

TEST_F(PrivateFolderTest, RemoveTakesEverythingInsideAndIsIdempotent) {
  std::string error;
  auto folder = PrivateFolder::create(folder_, "x-", &error);
  ASSERT_TRUE(folder) << error;
  std::string path = folder->path();
  ASSERT_EQ(0, mkfifoat(folder->fd(), "heap.fifo", 0600));
  close(openat(folder->fd(), "heap.fifo.p0", O_WRONLY | O_CREAT, 0600));
  ASSERT_EQ(0, symlinkat("/etc/passwd", folder->fd(), "link"));
  std::string outside = folder_ + "/kept";
  close(open(outside.c_str(), O_WRONLY | O_CREAT, 0600));
  folder->remove();
  EXPECT_EQ(-1, folder->fd());
  EXPECT_FALSE(exists(path));
  EXPECT_TRUE(exists(outside));
  EXPECT_TRUE(exists("/etc/passwd"));
  folder->remove();
}

// A folder whose path was taken over after it was made (a parent others may write without the
// sticky bit): what the path names now is not removed.
TEST_F(PrivateFolderTest, RemoveLeavesAFolderThatReplacedItsPath) {
  std::string error;
  auto folder = PrivateFolder::create(folder_, "x-", &error);
  ASSERT_TRUE(folder) << error;
  std::string path = folder->path();
  ASSERT_EQ(0, rename(path.c_str(), (folder_ + "/moved").c_str()));
  ASSERT_EQ(0, mkdir(path.c_str(), 0700));
  close(open((path + "/theirs").c_str(), O_WRONLY | O_CREAT, 0600));
  folder->remove();
  EXPECT_TRUE(exists(path + "/theirs"));
}

TEST_F(PrivateFolderTest, CheckRefusesALinkToAPrivateFolder) {
  std::string target = folder_ + "/target";
  std::string link = folder_ + "/link";
  ASSERT_EQ(0, mkdir(target.c_str(), 0700));
  ASSERT_EQ(0, symlink(target.c_str(), link.c_str()));
  std::string error;
  EXPECT_TRUE(check_private_folder(target, &error)) << error;
  EXPECT_FALSE(check_private_folder(link, &error));
  EXPECT_EQ(link + ": a symbolic link", error);
}

TEST_F(PrivateFolderTest, CheckRefusesAnotherModeAFileAndNothing) {
  std::string open_folder = folder_ + "/open";
  ASSERT_EQ(0, mkdir(open_folder.c_str(), 0700));
  ASSERT_EQ(0, chmod(open_folder.c_str(), 01777));
  std::string error;
  EXPECT_FALSE(check_private_folder(open_folder, &error));
  EXPECT_EQ(open_folder + ": mode 01777, not 0700", error);
  ASSERT_EQ(0, chmod(open_folder.c_str(), 0750));
  EXPECT_FALSE(check_private_folder(open_folder, &error));
  EXPECT_EQ(open_folder + ": mode 0750, not 0700", error);
  std::string file = folder_ + "/file";
  close(open(file.c_str(), O_WRONLY | O_CREAT, 0700));
  EXPECT_FALSE(check_private_folder(file, &error));
  EXPECT_EQ(file + ": not a folder", error);
  EXPECT_FALSE(check_private_folder(folder_ + "/missing", &error));
  EXPECT_NE(std::string::npos, error.find("No such file")) << error;
}

TEST_F(PrivateFolderTest, CheckRefusesAFolderOfAnotherUser) {
  if (geteuid() != 0) GTEST_SKIP() << "only root can make a folder of another user";
  std::string theirs = folder_ + "/theirs";
  ASSERT_EQ(0, mkdir(theirs.c_str(), 0700));
  ASSERT_EQ(0, chown(theirs.c_str(), kOtherUser, kOtherUser));
  std::string error;
  EXPECT_FALSE(check_private_folder(theirs, &error));
  EXPECT_EQ(theirs + ": owned by user 65534, not by 0", error);
}

TEST_F(PrivateFolderTest, AParentThatIsNotThereIsOneLineAndLeavesNothing) {
  std::string error;
  EXPECT_FALSE(PrivateFolder::create(folder_ + "/missing", "x-", &error));
  EXPECT_EQ("cannot make a private folder in " + folder_ + "/missing: No such file or directory", error);
  EXPECT_FALSE(exists(folder_ + "/missing"));
}

}  // namespace
}  // namespace fasthprof
