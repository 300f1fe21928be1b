// Memory headroom (runtime/base/memory_headroom.h): the text of /proc and the cgroup files, and
// read_memory_headroom on planted trees (cgroup v1 and v2, a container whose cgroup path is not
// below the mount, nested limits, vm.overcommit_memory=2), and on this machine's real files.
#include "base/memory_headroom.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace fasthprof {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

TEST(MemoryHeadroomText, MeminfoFieldsInBytes) {
  std::string meminfo = "MemTotal:       24000000 kB\nMemAvailable:   1024 kB\nCommitLimit: 77\nHugePages_Total:       0\n";
  EXPECT_EQ(meminfo_bytes(meminfo, "MemAvailable"), 1024u * 1024u);
  EXPECT_EQ(meminfo_bytes(meminfo, "CommitLimit"), 77u);
  EXPECT_EQ(meminfo_bytes(meminfo, "MemFree"), std::nullopt);
  EXPECT_EQ(meminfo_bytes(meminfo, "Mem"), std::nullopt);  // a prefix of a field is not the field
  EXPECT_EQ(meminfo_bytes("MemAvailable: lots kB\n", "MemAvailable"), std::nullopt);
  EXPECT_EQ(meminfo_bytes("MemAvailable: 5 MB\n", "MemAvailable"), std::nullopt);
}

TEST(MemoryHeadroomText, CgroupPathV1BeforeV2) {
  bool v2 = true;
  EXPECT_EQ(memory_cgroup_path("5:devices:/\n4:memory:/process_api/abc\n0::/\n", &v2), "/process_api/abc");
  EXPECT_FALSE(v2);
  EXPECT_EQ(memory_cgroup_path("3:cpu,memory,pids:/a/b\n", &v2), "/a/b");
  EXPECT_FALSE(v2);
  EXPECT_EQ(memory_cgroup_path("0::/user.slice/app.service\n", &v2), "/user.slice/app.service");
  EXPECT_TRUE(v2);
  EXPECT_EQ(memory_cgroup_path("4:memoryless:/x\n", &v2), std::nullopt);
  EXPECT_EQ(memory_cgroup_path("garbage\n::\n0::relative\n", &v2), std::nullopt);
}

TEST(MemoryHeadroomText, CgroupLimits) {
  EXPECT_EQ(cgroup_limit("max\n"), std::nullopt);
  EXPECT_EQ(cgroup_limit("9223372036854771712\n"), std::nullopt);  // v1's "no limit"
  EXPECT_EQ(cgroup_limit("536870912\n"), 536870912u);
  EXPECT_EQ(cgroup_limit(""), std::nullopt);
}

class PlantedTree : public testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/fasthprof-headroom-XXXXXX";
    ASSERT_NE(nullptr, mkdtemp(pattern));
    root_ = pattern;
    // 1000 resident pages; 8 GiB available.
    write("/proc/self/statm", "5000 1000 300 10 0 2000 0\n");
    write("/proc/meminfo", "MemTotal: 16777216 kB\nMemAvailable: 8388608 kB\nCommitLimit: 4194304 kB\n"
                           "Committed_AS: 3145728 kB\n");
    write("/proc/sys/vm/overcommit_memory", "0\n");
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  void write(const std::string& path, const std::string& text) {
    std::filesystem::create_directories(std::filesystem::path(root_ + path).parent_path());
    std::ofstream(root_ + path) << text;
  }

  MemoryHeadroom read() {
    std::string error;
    std::optional<MemoryHeadroom> headroom = read_memory_headroom(root_, &error);
    EXPECT_TRUE(headroom.has_value()) << error;
    return headroom.value_or(MemoryHeadroom{});
  }

  std::string root_;
  const uint64_t page_ = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
};

TEST_F(PlantedTree, NoCgroupIsMemAvailable) {
  MemoryHeadroom headroom = read();
  EXPECT_EQ(headroom.resident_bytes, 1000 * page_);
  EXPECT_EQ(headroom.available_bytes, 8192 * kMiB);
  EXPECT_EQ(headroom.limited_by, "MemAvailable");
  EXPECT_EQ(headroom.overcommit_policy, 0);
}

TEST_F(PlantedTree, CgroupV2NestedLimitsTheTightestCounts) {
  write("/proc/self/cgroup", "0::/kubepods/pod1/app\n");
  write("/sys/fs/cgroup/kubepods/pod1/app/memory.max", "max\n");
  write("/sys/fs/cgroup/kubepods/pod1/app/memory.current", "100\n");
  write("/sys/fs/cgroup/kubepods/pod1/memory.max", std::to_string(2048 * kMiB) + "\n");
  write("/sys/fs/cgroup/kubepods/pod1/memory.current", std::to_string(1536 * kMiB) + "\n");
  write("/sys/fs/cgroup/kubepods/memory.max", std::to_string(4096 * kMiB) + "\n");
  write("/sys/fs/cgroup/kubepods/memory.current", std::to_string(1024 * kMiB) + "\n");
  MemoryHeadroom headroom = read();
  EXPECT_EQ(headroom.available_bytes, 512 * kMiB);
  EXPECT_NE(headroom.limited_by.find("memory.max 2048 MB, 1536 MB used"), std::string::npos) << headroom.limited_by;
}

TEST_F(PlantedTree, CgroupV1InAContainerFallsBackToTheMountRoot) {
  // The container sees its own cgroup as the root: the path named is not there.
  write("/proc/self/cgroup", "4:memory:/docker/0123abcd\n0::/\n");
  write("/sys/fs/cgroup/memory/memory.limit_in_bytes", std::to_string(1024 * kMiB) + "\n");
  write("/sys/fs/cgroup/memory/memory.usage_in_bytes", std::to_string(1000 * kMiB) + "\n");
  MemoryHeadroom headroom = read();
  EXPECT_EQ(headroom.available_bytes, 24 * kMiB);
  EXPECT_NE(headroom.limited_by.find("memory.limit_in_bytes"), std::string::npos);
}

TEST_F(PlantedTree, CgroupOverItsLimitLeavesNothing) {
  write("/proc/self/cgroup", "0::/a\n");
  write("/sys/fs/cgroup/a/memory.max", "1000\n");
  write("/sys/fs/cgroup/a/memory.current", "5000\n");
  EXPECT_EQ(read().available_bytes, 0u);
}

TEST_F(PlantedTree, StrictOvercommitCountsTheCommitLimit) {
  write("/proc/sys/vm/overcommit_memory", "2\n");
  MemoryHeadroom headroom = read();
  EXPECT_EQ(headroom.overcommit_policy, 2);
  EXPECT_EQ(headroom.available_bytes, 1024 * kMiB);  // CommitLimit - Committed_AS
  EXPECT_NE(headroom.limited_by.find("overcommit_memory=2"), std::string::npos);
}

TEST_F(PlantedTree, MissingProcessFiguresAreAnError) {
  std::filesystem::remove(root_ + "/proc/self/statm");
  std::string error;
  EXPECT_FALSE(read_memory_headroom(root_, &error).has_value());
  EXPECT_NE(error.find("statm"), std::string::npos);
}

TEST(MemoryHeadroom, ForkFitsAndSaysWhatIsShort) {
  MemoryHeadroom headroom{.resident_bytes = 1000 * kMiB, .available_bytes = 800 * kMiB, .limited_by = "MemAvailable"};
  std::string reason;
  EXPECT_TRUE(fork_fits(headroom, 0.5, 100 * kMiB, &reason));
  EXPECT_FALSE(fork_fits(headroom, 1.0, 0, &reason));
  EXPECT_EQ(reason, "a child could copy 1000 MB of the 1000 MB resident, and 800 MB is left by MemAvailable "
                    "(keeping 0 MB for the program)");
  EXPECT_FALSE(fork_fits(headroom, 0.5, 400 * kMiB, &reason));
}

TEST(MemoryHeadroom, ThisMachine) {
  std::string error;
  std::optional<MemoryHeadroom> headroom = read_memory_headroom("", &error);
  ASSERT_TRUE(headroom.has_value()) << error;
  EXPECT_GT(headroom->resident_bytes, 0u);
  EXPECT_GT(headroom->available_bytes, 0u);
}

}  // namespace
}  // namespace fasthprof
