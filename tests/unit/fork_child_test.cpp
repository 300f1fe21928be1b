// The process side of a heap dump by fork (runtime/fork_dump/fork_child.h), on real children:
// the OOM score and the watchdog that prepare_fork_child gives a child, the copy-on-write memory
// private_memory_bytes sees grow as the parent writes, and the reaper's report of each ending.
#include "fork_dump/fork_child.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace fasthprof {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

// The child's side of a pipe, written with write(2) only (the child of a threaded test process).
void child_report(int fd, int64_t value) {
  ssize_t ignored = ::write(fd, &value, sizeof(value));
  (void)ignored;
}

int64_t parent_read(int fd) {
  int64_t value = -2;
  EXPECT_EQ(::read(fd, &value, sizeof(value)), static_cast<ssize_t>(sizeof(value)));
  return value;
}

TEST(ForkChild, ExitStatusIsReported) {
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(3);
  ChildReaper reaper(child);
  ChildExit exit;
  ASSERT_TRUE(reaper.wait_for(10000, &exit));
  EXPECT_TRUE(exit.exited);
  EXPECT_EQ(exit.status, 3);
  EXPECT_EQ(exit.describe(), "exited with status 3");
}

TEST(ForkChild, PreparedChildHasTheHighestOomScoreAndItsWatchdogKillsIt) {
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  auto started = std::chrono::steady_clock::now();
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const char* failure = nullptr;
    if (!prepare_fork_child(300, &failure)) ::_exit(2);
    char text[16] = {};
    int fd = ::open("/proc/self/oom_score_adj", O_RDONLY);
    ssize_t got = fd >= 0 ? ::read(fd, text, sizeof(text) - 1) : -1;
    child_report(pipe_fds[1], got > 0 ? std::atoll(text) : -1);
    ::sleep(30);  // overruns: the watchdog ends it
    ::_exit(0);
  }
  ::close(pipe_fds[1]);
  ChildReaper reaper(child);
  EXPECT_EQ(parent_read(pipe_fds[0]), 1000);
  ::close(pipe_fds[0]);
  ChildExit exit;
  ASSERT_TRUE(reaper.wait_for(20000, &exit));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_FALSE(exit.exited);
  EXPECT_EQ(exit.signal, SIGKILL);
  EXPECT_NE(exit.describe().find("killed by signal 9"), std::string::npos) << exit.describe();
  EXPECT_GE(seconds, 0.3);
  EXPECT_LT(seconds, 10.0);
}

TEST(ForkChild, PrivateMemoryGrowsByWhatTheParentWrites) {
  // 64 MiB touched before the fork: shared with the child afterwards.
  size_t size = 64 * kMiB;
  auto* block = static_cast<char*>(::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(block, MAP_FAILED);
  std::memset(block, 1, size);
  int to_child[2], to_parent[2];
  ASSERT_EQ(::pipe(to_child), 0);
  ASSERT_EQ(::pipe(to_parent), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    child_report(to_parent[1], private_memory_bytes(0));
    char go = 0;
    ssize_t got = ::read(to_child[0], &go, 1);
    (void)got;
    child_report(to_parent[1], private_memory_bytes(0));
    ::_exit(0);
  }
  ChildReaper reaper(child);
  int64_t before = parent_read(to_parent[0]);
  // The parent (the program) writes 32 MiB of the shared pages: each is copied.
  std::memset(block, 2, 32 * kMiB);
  ASSERT_EQ(::write(to_child[1], "g", 1), 1);
  int64_t after = parent_read(to_parent[0]);
  ChildExit exit;
  ASSERT_TRUE(reaper.wait_for(10000, &exit));
  EXPECT_TRUE(exit.exited);
  ASSERT_GE(before, 0);
  EXPECT_GE(after - before, static_cast<int64_t>(30 * kMiB)) << before << " -> " << after;
  EXPECT_LT(after - before, static_cast<int64_t>(48 * kMiB)) << before << " -> " << after;
  // The parent can read the child's figure too (while it lives); a pid that is gone reads -1.
  EXPECT_EQ(private_memory_bytes(child), -1);
  for (int fd : {to_child[0], to_child[1], to_parent[0], to_parent[1]}) ::close(fd);
  ::munmap(block, size);
}

TEST(ForkChild, ReaperKillsAChildStillRunningWhenItGoes) {
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::sleep(30);
    ::_exit(0);
  }
  {
    ChildReaper reaper(child);
    ChildExit exit;
    EXPECT_FALSE(reaper.wait_for(50, &exit));
  }
  // Reaped by the destructor: no zombie left.
  EXPECT_EQ(::kill(child, 0), -1);
}

}  // namespace
}  // namespace fasthprof
