#include "base/memory.h"

#include "base/byte_encoder.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <memory_resource>
#include <vector>

namespace fasthprof::memory {
namespace {

// Aligned blocks and resizing keep their contents and the counts, whichever allocator serves them.
bool aligned_and_resized_blocks_work() {
  uint64_t before = bytes_in_use();
  for (size_t alignment : {size_t{16}, size_t{64}, size_t{4096}}) {
    void* block = allocate_aligned(10000, alignment);
    if (block == nullptr || reinterpret_cast<uintptr_t>(block) % alignment != 0) return false;
    std::memset(block, 0x5a, 10000);
    if (bytes_in_use() != before + 10000) return false;
    deallocate_aligned(block, 10000, alignment);
    if (bytes_in_use() != before) return false;
  }
  auto* bytes = static_cast<unsigned char*>(reallocate(nullptr, 0, 100));
  if (bytes == nullptr) return false;
  for (int i = 0; i < 100; ++i) bytes[i] = static_cast<unsigned char>(i);
  bytes = static_cast<unsigned char*>(reallocate(bytes, 100, 1 << 20));
  if (bytes == nullptr || bytes_in_use() != before + (1 << 20)) return false;
  for (int i = 0; i < 100; ++i) {
    if (bytes[i] != i) return false;
  }
  bytes = static_cast<unsigned char*>(reallocate(bytes, 1 << 20, 50));
  if (bytes == nullptr || bytes_in_use() != before + 50 || bytes[49] != 49) return false;
  deallocate(bytes, 50);
  return bytes_in_use() == before;
}

// initialize() decides once per process, so each choice is checked in a child of its own.
template <typename Check>
int in_child(Check check) {
  pid_t pid = fork();
  if (pid == 0) _exit(check() ? 0 : 1);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
}

TEST(Memory, FallsBackToSystemAllocatorWhenJemallocIsMissing) {
  EXPECT_EQ(0, in_child([] {
    const Status& status = initialize("libfasthprof-no-such-allocator.so.9");
    if (status.backend != Backend::kSystem) return false;
    if (status.description.find("system allocator") == std::string::npos) return false;
    void* block = allocate(100);
    std::memset(block, 1, 100);
    deallocate(block, 100);
    return aligned_and_resized_blocks_work();
  }));
}

// Runs this test binary again with one test selected and one extra environment variable, because
// both ways of getting jemalloc act when the process starts.
int rerun_with(const char* test_name, const char* variable, const char* value) {
  pid_t pid = fork();
  if (pid == 0) {
    setenv(variable, value, 1);
    setenv("FASTHPROF_MEMORY_CHILD", "1", 1);
    std::string filter = std::string("--gtest_filter=Memory.") + test_name;
    char self[4096];
    ssize_t length = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (length <= 0) _exit(101);
    self[length] = '\0';
    execl(self, self, filter.c_str(), static_cast<char*>(nullptr));
    _exit(102);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
}

bool is_child() { return getenv("FASTHPROF_MEMORY_CHILD") != nullptr; }

TEST(Memory, WithoutRoomForStaticTlsUsesSystemAllocator) {
  if (is_child()) GTEST_SKIP() << "parent-only check";
  EXPECT_EQ(0, in_child([] {
    const Status& status = initialize();
    return status.backend == Backend::kSystem &&
           status.description.find("static TLS") != std::string::npos;
  }));
}

TEST(Memory, OpensJemallocWhenTheTunableLeavesRoom) {
  if (!is_child()) {
    EXPECT_EQ(0, rerun_with("OpensJemallocWhenTheTunableLeavesRoom", "GLIBC_TUNABLES",
                            "glibc.rtld.optional_static_tls=8192"));
    return;
  }
  const Status& status = initialize();
  EXPECT_EQ(status.backend, Backend::kJemallocOpened) << status.description;
  void* block = allocate(1 << 20);
  ASSERT_NE(block, nullptr);
  deallocate(block, 1 << 20);
  EXPECT_TRUE(aligned_and_resized_blocks_work());
}

TEST(Memory, SharesAPreloadedJemalloc) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer must be the first library loaded: LD_PRELOAD of jemalloc makes it exit";
#endif
  if (!is_child()) {
    EXPECT_EQ(0, rerun_with("SharesAPreloadedJemalloc", "LD_PRELOAD", "libjemalloc.so.2"));
    return;
  }
  const Status& status = initialize();
  EXPECT_EQ(status.backend, Backend::kJemallocPreloaded) << status.description;
  EXPECT_NE(status.description.find("already in the process"), std::string::npos);
  EXPECT_TRUE(aligned_and_resized_blocks_work());
}

TEST(Memory, CountsBytesInUseAndPeak) {
  uint64_t before = bytes_in_use();
  void* a = allocate(1000);
  void* b = allocate(3000);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(bytes_in_use(), before + 4000);
  EXPECT_GE(peak_bytes_in_use(), before + 4000);
  deallocate(a, 1000);
  deallocate(b, 3000);
  EXPECT_EQ(bytes_in_use(), before);
}

TEST(Memory, ByteBuffersAreCounted) {
  uint64_t before = bytes_in_use();
  {
    ByteBuffer buffer;
    buffer.append(8).u8(1);
    EXPECT_EQ(bytes_in_use(), before + buffer.capacity());
    for (int i = 0; i < 10000; ++i) buffer.append(8).u8(static_cast<uint64_t>(i));
    EXPECT_EQ(bytes_in_use(), before + buffer.capacity());
    buffer.shrink_to(0);
    EXPECT_EQ(bytes_in_use(), before + buffer.capacity());
  }
  EXPECT_EQ(bytes_in_use(), before);
}

TEST(Memory, AllocatorServesStandardContainers) {
  std::vector<uint64_t, Allocator<uint64_t>> values;
  for (uint64_t i = 0; i < 100000; ++i) values.push_back(i * 3);
  uint64_t sum = 0;
  for (uint64_t v : values) sum += v;
  EXPECT_EQ(sum, 3ull * (100000ull * 99999ull / 2));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(values.data()) % 16, 0u);
}

TEST(Memory, ResourceAlignsAndCountsEveryBlock) {
  uint64_t before = bytes_in_use();
  std::pmr::memory_resource* counted = resource();
  for (size_t alignment : {size_t{8}, size_t{16}, size_t{64}, size_t{4096}}) {
    void* block = counted->allocate(100, alignment);
    ASSERT_NE(block, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(block) % alignment, 0u) << alignment;
    std::memset(block, 0xab, 100);
    EXPECT_GE(bytes_in_use(), before + 100);
    counted->deallocate(block, 100, alignment);
    EXPECT_EQ(bytes_in_use(), before) << alignment;
  }
}

TEST(Memory, PoolOverResourceReusesFreedBlocks) {
  std::pmr::unsynchronized_pool_resource pool(resource());
  std::pmr::vector<void*> held(&pool);
  held.reserve(64);
  for (int i = 0; i < 64; ++i) held.push_back(pool.allocate(48));
  for (void* block : held) pool.deallocate(block, 48);
  uint64_t warmed = bytes_in_use();
  for (int round = 0; round < 10000; ++round) pool.deallocate(pool.allocate(48), 48);
  EXPECT_EQ(bytes_in_use(), warmed);
}

}  // namespace
}  // namespace fasthprof::memory
