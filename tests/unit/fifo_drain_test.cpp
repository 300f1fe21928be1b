// FifoDrain (runtime/vm_dump/fifo_drain.h): every byte a writer puts into the pipe reaches the consumer in
// order; a writer that comes only after another opened and closed the pipe empty (JDK 22+ opens the
// path after its safepoint) is still read; finish() never waits for a writer that never comes; the
// pipe lives in a private folder, which is gone afterwards with any "<pipe>.p<N>" side file.
#include "vm_dump/fifo_drain.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <thread>

#include "temp_folder.h"

namespace fasthprof {
namespace {

// Each test has a folder of its own (folder_) for its FIFOs and side files.
class FifoDrainTest : public TempFolderTest {};

void write_all(const std::string& path, const std::string& bytes, size_t chunk) {
  int fd = open(path.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  for (size_t at = 0; at < bytes.size(); at += chunk) {
    size_t size = std::min(chunk, bytes.size() - at);
    ASSERT_EQ(static_cast<ssize_t>(size), write(fd, bytes.data() + at, size));
  }
  close(fd);
}

TEST_F(FifoDrainTest, ReadsEverythingInOrderAndRemovesThePipe) {
  std::string error;
  auto drain = FifoDrain::create(folder_, &error);
  ASSERT_TRUE(drain) << error;
  std::string path = drain->path();
  EXPECT_EQ(0u, path.find(folder_ + "/.fasthprof-"));
  std::string got;
  ASSERT_TRUE(drain->start([&](const void* data, size_t size) {
    got.append(static_cast<const char*>(data), size);
    return true;
  }, &error)) << error;
  std::string bytes;
  for (int i = 0; i < 3000000; ++i) bytes.push_back(static_cast<char>(i * 7 + i / 251));
  std::thread writer([&] { write_all(path, bytes, 70000); });
  writer.join();
  EXPECT_EQ(bytes.size(), drain->finish());
  EXPECT_EQ(bytes, got);
  EXPECT_TRUE(drain->opened());
  EXPECT_TRUE(drain->error().empty());
  EXPECT_FALSE(exists(path));
}

// skip(): bytes the consumer asks to skip never reach it, whatever the writer's chunks, and the
// rest follows in order (JDK 22+: the copy of a side file the consumer read from the file itself).
TEST_F(FifoDrainTest, SkippedBytesNeverReachTheConsumer) {
  std::string bytes;
  for (int i = 0; i < 3000000; ++i) bytes.push_back(static_cast<char>(i * 7 + i / 251));
  for (size_t first : {size_t{10}, size_t{65536}}) {
    std::string error;
    auto drain = FifoDrain::create(folder_, &error);
    ASSERT_TRUE(drain) << error;
    FifoDrain* pipe = drain.get();
    const uint64_t skipped = 2500000 - first;
    std::string got;
    bool asked = false;
    ASSERT_TRUE(drain->start([&](const void* data, size_t size) {
      got.append(static_cast<const char*>(data), size);
      if (!asked && got.size() >= first) {
        // The chunk may hold more than `first` bytes: skip from where it ends.
        asked = true;
        pipe->skip(skipped - (got.size() - first));
        got.resize(first);
      }
      return true;
    }, &error)) << error;
    std::thread writer([&] { write_all(drain->path(), bytes, 70000); });
    writer.join();
    EXPECT_EQ(bytes.size(), drain->finish());
    EXPECT_EQ(bytes.substr(0, first) + bytes.substr(first + skipped), got) << first;
  }
}

TEST_F(FifoDrainTest, WaitsForALaterWriterAfterAnEmptyOne) {
  std::string error;
  auto drain = FifoDrain::create(folder_, &error);
  ASSERT_TRUE(drain) << error;
  std::string got;
  ASSERT_TRUE(drain->start([&](const void* data, size_t size) {
    got.append(static_cast<const char*>(data), size);
    return true;
  }, &error)) << error;
  write_all(drain->path(), "", 1);  // opened and closed without a byte
  usleep(50000);
  write_all(drain->path(), "the dump", 3);
  usleep(50000);
  EXPECT_EQ(8u, drain->finish());
  EXPECT_EQ("the dump", got);
}

TEST_F(FifoDrainTest, FinishDoesNotWaitForAWriterThatNeverComes) {
  std::string error;
  auto drain = FifoDrain::create(folder_, &error);
  ASSERT_TRUE(drain) << error;
  std::string path = drain->path();
  ASSERT_TRUE(drain->start([](const void*, size_t) { return true; }, &error)) << error;
  // A side file the JVM left after a failure.
  std::string side = path + ".p0";
  close(open(side.c_str(), O_WRONLY | O_CREAT, 0600));
  EXPECT_EQ(0u, drain->finish());
  EXPECT_FALSE(drain->opened());
  EXPECT_FALSE(exists(path));
  EXPECT_FALSE(exists(side));
  EXPECT_FALSE(exists(path.substr(0, path.rfind('/'))));
}

// The pipe and the JVM's side files beside it are in a folder of their own that only this user
// can enter (another user cannot plant a link at "<pipe>.p0"), gone after finish().
TEST_F(FifoDrainTest, ThePipeIsInAPrivateFolderRemovedAfterwards) {
  ASSERT_EQ(0, chmod(folder_.c_str(), 01777));
  std::string error;
  auto drain = FifoDrain::create(folder_, &error);
  ASSERT_TRUE(drain) << error;
  std::string private_folder = drain->path().substr(0, drain->path().rfind('/'));
  EXPECT_EQ(folder_, private_folder.substr(0, private_folder.rfind('/')));
  EXPECT_TRUE(check_private_folder(private_folder, &error)) << error;
  struct stat st{};
  ASSERT_EQ(0, lstat(drain->path().c_str(), &st));
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  ASSERT_TRUE(drain->start([](const void*, size_t) { return true; }, &error)) << error;
  write_all(drain->path(), "the dump", 3);
  EXPECT_EQ(8u, drain->finish());
  EXPECT_FALSE(exists(private_folder));
}

TEST_F(FifoDrainTest, AConsumerThatStopsStillLetsTheWriterFinish) {
  std::string error;
  auto drain = FifoDrain::create(folder_, &error);
  ASSERT_TRUE(drain) << error;
  size_t taken = 0;
  ASSERT_TRUE(drain->start([&](const void*, size_t size) {
    taken += size;
    return false;
  }, &error)) << error;
  std::string bytes(4 << 20, 'x');
  std::thread writer([&] { write_all(drain->path(), bytes, 1 << 20); });
  writer.join();
  EXPECT_EQ(bytes.size(), drain->finish());
  EXPECT_GT(taken, 0u);
  EXPECT_LT(taken, bytes.size());
}

TEST_F(FifoDrainTest, AFolderThatIsNotThereIsAnError) {
  std::string error;
  EXPECT_FALSE(FifoDrain::create(folder_ + "/missing", &error));
  EXPECT_NE(std::string::npos, error.find("cannot make a private folder in " + folder_ + "/missing")) << error;
}

}  // namespace
}  // namespace fasthprof
