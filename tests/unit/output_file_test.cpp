#include "output_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

namespace fasthprof {
namespace {

constexpr int kPid = 4242;

class OutputFileTest : public testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/fasthprof-output-file-XXXXXX";
    ASSERT_NE(nullptr, mkdtemp(pattern));
    dir_ = pattern;
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }

  std::string touch(const std::string& name, const std::string& content = "old") {
    std::string path = dir_ + "/" + name;
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

  std::string dir_;
};

TEST_F(OutputFileTest, MissingFileKeepsItsName) {
  EXPECT_EQ(dir_ + "/java.hprof.txt", unique_output_path(dir_ + "/java.hprof.txt", false, kPid));
  EXPECT_EQ(dir_ + "/java.hprof", unique_output_path(dir_ + "/java.hprof", true, kPid));
}

TEST_F(OutputFileTest, TextExtensionMovesAfterThePid) {
  EXPECT_EQ(dir_ + "/java.hprof.4242.txt", unique_output_path(touch("java.hprof.txt"), false, kPid));
  EXPECT_EQ(dir_ + "/x.4242.TXT", unique_output_path(touch("x.TXT"), false, kPid));
  // Longer than the original's char[5] suffix buffer.
  EXPECT_EQ(dir_ + "/a.4242.txt_archive", unique_output_path(touch("a.txt_archive"), false, kPid));
}

TEST_F(OutputFileTest, OtherExtensionsGetTxtAppended) {
  EXPECT_EQ(dir_ + "/foo.dat.4242.txt", unique_output_path(touch("foo.dat"), false, kPid));
  EXPECT_EQ(dir_ + "/java.hprof.txt.TMP.4242.txt", unique_output_path(touch("java.hprof.txt.TMP"), false, kPid));
  EXPECT_EQ(dir_ + "/plain.4242.txt", unique_output_path(touch("plain"), false, kPid));
}

TEST_F(OutputFileTest, BinaryFormatAppendsOnlyThePid) {
  EXPECT_EQ(dir_ + "/java.hprof.4242", unique_output_path(touch("java.hprof"), true, kPid));
  EXPECT_EQ(dir_ + "/dump.txt.4242", unique_output_path(touch("dump.txt"), true, kPid));
}

TEST_F(OutputFileTest, ExtensionIsLookedForInTheLastComponentOnly) {
  ASSERT_EQ(0, mkdir((dir_ + "/run.txt").c_str(), 0700));
  EXPECT_EQ(dir_ + "/run.txt/out.4242.txt", unique_output_path(touch("run.txt/out"), false, kPid));
}

TEST_F(OutputFileTest, NeverTouchesTheExistingFile) {
  std::string path = touch("java.hprof.txt", "keep me");
  unique_output_path(path, false, kPid);
  EXPECT_EQ("keep me", read(path));
}

TEST_F(OutputFileTest, DanglingSymlinkCountsAsExisting) {
  std::string link = dir_ + "/java.hprof";
  ASSERT_EQ(0, symlink((dir_ + "/nowhere").c_str(), link.c_str()));
  EXPECT_EQ(dir_ + "/java.hprof.4242", unique_output_path(link, true, kPid));
}

TEST_F(OutputFileTest, CreatesOwnerOnlyFileWhateverTheUmask) {
  mode_t saved = umask(0);
  std::string error;
  std::string path = dir_ + "/fresh.hprof";
  int fd = create_output_file(path, &error);
  umask(saved);
  ASSERT_GE(fd, 0) << error;
  EXPECT_EQ(0600u, mode_of(path));
  EXPECT_EQ(4, write(fd, "data", 4));
  EXPECT_NE(0, fcntl(fd, F_GETFD) & FD_CLOEXEC);
  close(fd);
  EXPECT_EQ("data", read(path));

  saved = umask(0277);  // would leave the new file read-only for its owner
  fd = create_output_file(dir_ + "/restricted.hprof", &error);
  umask(saved);
  ASSERT_GE(fd, 0) << error;
  close(fd);
  EXPECT_EQ(0600u, mode_of(dir_ + "/restricted.hprof"));
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
  std::string path = dir_ + "/no/such/dir/java.hprof";
  std::string error = "untouched";
  EXPECT_EQ(-1, create_output_file(path, &error));
  EXPECT_EQ("can't create profile file: " + path + ": No such file or directory", error);
}

}  // namespace
}  // namespace fasthprof
