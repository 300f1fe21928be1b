#include "sink/output_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "temp_folder.h"

namespace fasthprof {
namespace {

constexpr int kPid = 4242;

class OutputFileTest : public TempFolderTest {
 protected:
  std::string touch(const std::string& name, const std::string& content = "old") {
    std::string path = folder_ + "/" + name;
    std::ofstream(path) << content;
    return path;
  }
  static std::string read(const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  static mode_t mode_of(const std::string& path) {
    struct stat info;
    EXPECT_EQ(0, stat(path.c_str(), &info)) << path;
    return info.st_mode & 07777;
  }
};

TEST_F(OutputFileTest, MissingFileKeepsItsName) {
  EXPECT_EQ(folder_ + "/java.hprof.txt", unique_output_path(folder_ + "/java.hprof.txt", false, kPid));
  EXPECT_EQ(folder_ + "/java.hprof", unique_output_path(folder_ + "/java.hprof", true, kPid));
}

TEST_F(OutputFileTest, TextExtensionMovesAfterThePid) {
  EXPECT_EQ(folder_ + "/java.hprof.4242.txt", unique_output_path(touch("java.hprof.txt"), false, kPid));
  EXPECT_EQ(folder_ + "/x.4242.TXT", unique_output_path(touch("x.TXT"), false, kPid));
  // Longer than the original's char[5] suffix buffer.
  EXPECT_EQ(folder_ + "/a.4242.txt_archive", unique_output_path(touch("a.txt_archive"), false, kPid));
}

TEST_F(OutputFileTest, OtherExtensionsGetTxtAppended) {
  EXPECT_EQ(folder_ + "/foo.dat.4242.txt", unique_output_path(touch("foo.dat"), false, kPid));
  EXPECT_EQ(folder_ + "/java.hprof.txt.TMP.4242.txt", unique_output_path(touch("java.hprof.txt.TMP"), false, kPid));
  EXPECT_EQ(folder_ + "/plain.4242.txt", unique_output_path(touch("plain"), false, kPid));
}

TEST_F(OutputFileTest, BinaryFormatAppendsOnlyThePid) {
  EXPECT_EQ(folder_ + "/java.hprof.4242", unique_output_path(touch("java.hprof"), true, kPid));
  EXPECT_EQ(folder_ + "/dump.txt.4242", unique_output_path(touch("dump.txt"), true, kPid));
}

TEST_F(OutputFileTest, ExtensionIsLookedForInTheLastComponentOnly) {
  ASSERT_EQ(0, mkdir((folder_ + "/run.txt").c_str(), 0700));
  EXPECT_EQ(folder_ + "/run.txt/out.4242.txt", unique_output_path(touch("run.txt/out"), false, kPid));
}

TEST_F(OutputFileTest, NeverTouchesTheExistingFile) {
  std::string path = touch("java.hprof.txt", "keep me");
  unique_output_path(path, false, kPid);
  EXPECT_EQ("keep me", read(path));
}

TEST_F(OutputFileTest, DanglingSymlinkCountsAsExisting) {
  std::string link = folder_ + "/java.hprof";
  ASSERT_EQ(0, symlink((folder_ + "/nowhere").c_str(), link.c_str()));
  EXPECT_EQ(folder_ + "/java.hprof.4242", unique_output_path(link, true, kPid));
}

TEST_F(OutputFileTest, CreatesOwnerOnlyFileWhateverTheUmask) {
  mode_t saved = umask(0);
  std::string error;
  std::string path = folder_ + "/fresh.hprof";
  int fd = create_output_file(path, &error);
  umask(saved);
  ASSERT_GE(fd, 0) << error;
  EXPECT_EQ(0600u, mode_of(path));
  EXPECT_EQ(4, write(fd, "data", 4));
  EXPECT_NE(0, fcntl(fd, F_GETFD) & FD_CLOEXEC);
  close(fd);
  EXPECT_EQ("data", read(path));

  saved = umask(0277);  // would leave the new file read-only for its owner
  fd = create_output_file(folder_ + "/restricted.hprof", &error);
  umask(saved);
  ASSERT_GE(fd, 0) << error;
  close(fd);
  EXPECT_EQ(0600u, mode_of(folder_ + "/restricted.hprof"));
}

TEST_F(OutputFileTest, ExistingFileIsTruncatedAndMadeOwnerOnly) {
  std::string path = touch("java.hprof.txt", "old contents");
  ASSERT_EQ(0, chmod(path.c_str(), 0644));
  std::string error;
  int fd = create_output_file(path, &error);
  ASSERT_GE(fd, 0) << error;
  close(fd);
  EXPECT_EQ(0600u, mode_of(path));
  EXPECT_EQ("", read(path));
}

TEST_F(OutputFileTest, DevicesAreOpenedAsTheyAre) {
  mode_t before = mode_of("/dev/null");
  std::string error;
  int fd = create_output_file("/dev/null", &error);
  ASSERT_GE(fd, 0) << error;
  close(fd);
  EXPECT_EQ(before, mode_of("/dev/null"));
}

TEST_F(OutputFileTest, UncreatablePathReportsTheReason) {
  std::string path = folder_ + "/no/such/dir/java.hprof";
  std::string error = "untouched";
  EXPECT_EQ(-1, create_output_file(path, &error));
  EXPECT_EQ("can't create profile file: " + path + ": No such file or directory", error);
}


OutputFileChoice choice(const std::string& path, bool user_named, bool force) {
  return {path, user_named, force, /*binary_format=*/false, kPid};
}

TEST_F(OutputFileTest, UniqueCandidatesNumberAfterThePid) {
  EXPECT_EQ("d/java.hprof.4242.txt", unique_output_candidate("d/java.hprof.txt", false, kPid, 0));
  EXPECT_EQ("d/java.hprof.4242.3.txt", unique_output_candidate("d/java.hprof.txt", false, kPid, 3));
  EXPECT_EQ("java.hprof.4242.1", unique_output_candidate("java.hprof", true, kPid, 1));
}

TEST_F(OutputFileTest, DefaultNameLinkIsReplacedNeverFollowed) {
  std::string target = touch("target", "secret");
  ASSERT_EQ(0, chmod(target.c_str(), 0644));
  std::string path = folder_ + "/java.hprof.txt";
  ASSERT_EQ(0, symlink(target.c_str(), path.c_str()));
  std::string opened, error;
  int fd = open_output_file(choice(path, false, true), &opened, &error);
  ASSERT_GE(fd, 0) << error;
  EXPECT_EQ(4, write(fd, "data", 4));
  close(fd);
  EXPECT_EQ(path, opened);
  EXPECT_EQ("secret", read(target));
  EXPECT_EQ(0644u, mode_of(target));
  struct stat info;
  ASSERT_EQ(0, lstat(path.c_str(), &info));
  EXPECT_TRUE(S_ISREG(info.st_mode));
  EXPECT_EQ(0600u, info.st_mode & 07777);
  EXPECT_EQ("data", read(path));
}

TEST_F(OutputFileTest, DefaultNameDanglingLinkCreatesNothingWhereItPoints) {
  std::string path = folder_ + "/java.hprof";
  ASSERT_EQ(0, symlink((folder_ + "/elsewhere").c_str(), path.c_str()));
  std::string opened, error;
  int fd = open_output_file(choice(path, false, true), &opened, &error);
  ASSERT_GE(fd, 0) << error;
  close(fd);
  EXPECT_NE(0, access((folder_ + "/elsewhere").c_str(), F_OK));
}

TEST_F(OutputFileTest, DefaultNameExistingFileIsReplacedOwnerOnly) {
  std::string path = touch("java.hprof.txt", "old contents");
  ASSERT_EQ(0, chmod(path.c_str(), 0644));
  std::string opened, error;
  int fd = open_output_file(choice(path, false, true), &opened, &error);
  ASSERT_GE(fd, 0) << error;
  close(fd);
  EXPECT_EQ("", read(path));
  EXPECT_EQ(0600u, mode_of(path));
}

TEST_F(OutputFileTest, DefaultNameThatIsAFolderIsAnError) {
  std::string path = folder_ + "/java.hprof.txt";
  ASSERT_EQ(0, mkdir(path.c_str(), 0700));
  std::string opened, error;
  EXPECT_EQ(-1, open_output_file(choice(path, false, true), &opened, &error));
  EXPECT_EQ(0u, error.find("can't create profile file: " + path + ": ")) << error;
}

TEST_F(OutputFileTest, ForceNoCreatesAMissingNameAsIs) {
  std::string path = folder_ + "/java.hprof.txt";
  std::string opened, error;
  int fd = open_output_file(choice(path, false, false), &opened, &error);
  ASSERT_GE(fd, 0) << error;
  close(fd);
  EXPECT_EQ(path, opened);
  EXPECT_EQ(0600u, mode_of(path));
}

TEST_F(OutputFileTest, ForceNoSkipsAPlantedLinkAtTheUniqueName) {
  std::string existing = touch("java.hprof.txt", "earlier run");
  std::string target = touch("target", "secret");
  ASSERT_EQ(0, symlink(target.c_str(), (folder_ + "/java.hprof.4242.txt").c_str()));
  std::string opened, error;
  int fd = open_output_file(choice(existing, false, false), &opened, &error);
  ASSERT_GE(fd, 0) << error;
  EXPECT_EQ(4, write(fd, "data", 4));
  close(fd);
  EXPECT_EQ(folder_ + "/java.hprof.4242.1.txt", opened);
  EXPECT_EQ("secret", read(target));
  EXPECT_EQ("earlier run", read(existing));
  EXPECT_EQ("data", read(opened));
}

TEST_F(OutputFileTest, ForceNoNeverOpensALinkTheUserNamed) {
  std::string target = touch("target", "secret");
  std::string named = folder_ + "/mine.txt";
  ASSERT_EQ(0, symlink(target.c_str(), named.c_str()));
  std::string opened, error;
  int fd = open_output_file(choice(named, true, false), &opened, &error);
  ASSERT_GE(fd, 0) << error;
  close(fd);
  EXPECT_EQ(folder_ + "/mine.4242.txt", opened);
  EXPECT_EQ("secret", read(target));
}

TEST_F(OutputFileTest, ForceYesFollowsALinkTheUserNamed) {
  std::string target = touch("target", "old");
  std::string named = folder_ + "/mine.txt";
  ASSERT_EQ(0, symlink(target.c_str(), named.c_str()));
  std::string opened, error;
  int fd = open_output_file(choice(named, true, true), &opened, &error);
  ASSERT_GE(fd, 0) << error;
  EXPECT_EQ(3, write(fd, "new", 3));
  close(fd);
  EXPECT_EQ(named, opened);
  EXPECT_EQ("new", read(target));
}

}  // namespace
}  // namespace fasthprof
