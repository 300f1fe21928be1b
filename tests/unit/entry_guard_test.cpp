#include "entry_guard.h"

#include <gtest/gtest.h>

#include <new>
#include <stdexcept>
#include <string>
#include <vector>

namespace fasthprof {
namespace {

TEST(EntryGuard, PassesTheResultThroughWhenNothingThrows) {
  bool failed = false;
  testing::internal::CaptureStderr();
  int result = guard_entry<int>("ThreadStart", "unused", -1, [] { return 7; }, [&] { failed = true; });
  EXPECT_EQ(7, result);
  EXPECT_FALSE(failed);
  EXPECT_EQ("", testing::internal::GetCapturedStderr());
}

TEST(EntryGuard, TurnsBadAllocIntoOneLineAndTheFallback) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer's operator new reports a huge allocation and aborts instead of throwing";
#endif
  bool failed = false;
  testing::internal::CaptureStderr();
  int result = guard_entry<int>(
      "SampledObjectAlloc", "heap=sites stops", -1,
      []() -> int {
        // What an option-sized buffer did with depth=2147483647: a real allocation failure.
        std::vector<char> huge;
        huge.reserve(huge.max_size() / 2);
        return 0;
      },
      [&] { failed = true; });
  EXPECT_EQ(-1, result);
  EXPECT_TRUE(failed);
  EXPECT_EQ("HPROF ERROR: fasthprof: out of memory in SampledObjectAlloc; heap=sites stops\n",
            testing::internal::GetCapturedStderr());
}

TEST(EntryGuard, NamesWhatOtherExceptionsSay) {
  testing::internal::CaptureStderr();
  guard_entry("VMInit", "profiling stopped", [] { throw std::runtime_error("broken table"); }, [] {});
  guard_entry("VMDeath", "profiling stopped", [] { throw 42; }, [] {});
  EXPECT_EQ("HPROF ERROR: fasthprof: broken table in VMInit; profiling stopped\n"
            "HPROF ERROR: fasthprof: an unknown exception in VMDeath; profiling stopped\n",
            testing::internal::GetCapturedStderr());
}

TEST(EntryGuard, SwallowsWhatTheFailureHandlerThrows) {
  testing::internal::CaptureStderr();
  int result = guard_entry<int>("ClassPrepare", "stopped", 3, []() -> int { throw std::bad_alloc(); },
                                [] { throw std::bad_alloc(); });
  testing::internal::GetCapturedStderr();
  EXPECT_EQ(3, result);
}

TEST(EntryGuard, CutsAnOverlongMessageToOneLine) {
  std::string long_cause(2000, 'x');
  testing::internal::CaptureStderr();
  guard_entry("here", "stopped", [&] { throw std::runtime_error(long_cause); }, [] {});
  std::string written = testing::internal::GetCapturedStderr();
  EXPECT_EQ(511u, written.size());
  EXPECT_EQ('\n', written.back());
  EXPECT_EQ(written.find('\n'), written.size() - 1);
}

}  // namespace
}  // namespace fasthprof
