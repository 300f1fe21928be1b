#include "base/fd_io.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <thread>
#include <vector>

namespace fasthprof {
namespace {

// More than a pipe holds (64 KiB): the writer blocks and the reader takes what comes, piece by piece.
TEST(FdIo, WholeWritesAndReadsThroughAPipe) {
  int ends[2];
  ASSERT_EQ(0, pipe(ends));
  std::vector<char> sent(1 << 20);
  for (size_t i = 0; i < sent.size(); ++i) sent[i] = static_cast<char>(i * 7);
  std::thread writer([&] {
    EXPECT_TRUE(write_all(ends[1], sent.data(), sent.size()));
    close(ends[1]);
  });
  std::vector<char> got(sent.size());
  EXPECT_TRUE(read_all(ends[0], got.data(), got.size()));
  writer.join();
  EXPECT_EQ(sent, got);
  char more = 0;
  EXPECT_FALSE(read_all(ends[0], &more, 1)) << "the end of input";
  close(ends[0]);
}

TEST(FdIo, ReadAllFailsWhenInputEndsShort) {
  int ends[2];
  ASSERT_EQ(0, pipe(ends));
  ASSERT_TRUE(write_all(ends[1], "abc", 3));
  close(ends[1]);
  char got[5] = {};
  EXPECT_FALSE(read_all(ends[0], got, sizeof got));
  EXPECT_EQ('a', got[0]);
  close(ends[0]);
}

TEST(FdIo, WriteAllFailsOnABadDescriptor) {
  EXPECT_FALSE(write_all(-1, "x", 1));
  char byte = 0;
  EXPECT_FALSE(read_all(-1, &byte, 1));
}

}  // namespace
}  // namespace fasthprof
