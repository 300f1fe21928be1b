// A test fixture with a fresh folder of its own under /tmp, removed with everything in it after
// each test.
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <string>

namespace fasthprof {

class TempFolderTest : public testing::Test {
 protected:
  void SetUp() override {
    std::string pattern =
        std::string("/tmp/fasthprof-") + testing::UnitTest::GetInstance()->current_test_suite()->name() + "-XXXXXX";
    ASSERT_NE(nullptr, mkdtemp(pattern.data()));
    folder_ = pattern;
  }
  void TearDown() override {
    if (!folder_.empty()) std::system(("rm -rf '" + folder_ + "'").c_str());
  }

  // Whether anything, a link included, stands at path.
  static bool exists(const std::string& path) {
    struct stat st{};
    return lstat(path.c_str(), &st) == 0;
  }

  std::string folder_;  // no slash at the end
};

}  // namespace fasthprof
