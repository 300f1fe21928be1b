#include "base/unload_epochs.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace fasthprof {
namespace {

constexpr uintptr_t kLow = 0x7f0000000000;
constexpr uintptr_t kHigh = kLow + 64 * 1024;

TEST(UnloadEpochs, NothingFreedKeepsEveryAddress) {
  UnloadEpochs epochs;
  ASSERT_TRUE(epochs.start(kLow, kHigh));
  EXPECT_TRUE(epochs.unchanged_since(kLow, 1));
  EXPECT_TRUE(epochs.unchanged_since(kHigh - 1, 1));
  // Outside the range nothing is known, so nothing is kept.
  EXPECT_FALSE(epochs.unchanged_since(kLow - 1, 1));
  EXPECT_FALSE(epochs.unchanged_since(kHigh, 1));
}

TEST(UnloadEpochs, FreedCodeIsStaleForOlderAnswersOnly) {
  UnloadEpochs epochs;
  ASSERT_TRUE(epochs.start(kLow, kHigh));
  epochs.record(kLow + 1024, 256, 5);  // freed at epoch 5
  for (uintptr_t pc = kLow + 1024; pc < kLow + 1024 + 256; pc += 8) {
    EXPECT_FALSE(epochs.unchanged_since(pc, 4)) << pc - kLow;  // made before the unload
    EXPECT_TRUE(epochs.unchanged_since(pc, 5)) << pc - kLow;   // made after it: the new code's
  }
  // The neighbours, in granules of their own, are untouched.
  EXPECT_TRUE(epochs.unchanged_since(kLow + 1023, 1));
  EXPECT_TRUE(epochs.unchanged_since(kLow + 1024 + 256, 1));
}

TEST(UnloadEpochs, AGranuleSharedWithFreedCodeCountsAsFreed) {
  UnloadEpochs epochs;
  ASSERT_TRUE(epochs.start(kLow, kHigh));
  epochs.record(kLow + 100, 40, 3);  // [100, 140): granules 64..127 and 128..191
  EXPECT_FALSE(epochs.unchanged_since(kLow + 64, 2));
  EXPECT_FALSE(epochs.unchanged_since(kLow + 191, 2));
  EXPECT_TRUE(epochs.unchanged_since(kLow + 63, 2));
  EXPECT_TRUE(epochs.unchanged_since(kLow + 192, 2));
}

TEST(UnloadEpochs, TheLatestUnloadCounts) {
  UnloadEpochs epochs;
  ASSERT_TRUE(epochs.start(kLow, kHigh));
  epochs.record(kLow, 64, 2);
  epochs.record(kLow, 64, 7);  // code compiled there after the first unload, unloaded in turn
  EXPECT_FALSE(epochs.unchanged_since(kLow, 6));
  EXPECT_TRUE(epochs.unchanged_since(kLow, 7));
}

TEST(UnloadEpochs, RangesPastTheEndsAreClipped) {
  UnloadEpochs epochs;
  ASSERT_TRUE(epochs.start(kLow, kHigh));
  epochs.record(kLow - 128, 192, 4);   // ends in the first granule
  epochs.record(kHigh - 32, 4096, 4);  // starts in the last one
  epochs.record(kHigh + 64, 64, 4);    // wholly outside: nothing
  EXPECT_FALSE(epochs.unchanged_since(kLow, 3));
  EXPECT_TRUE(epochs.unchanged_since(kLow + 64, 3));
  EXPECT_FALSE(epochs.unchanged_since(kHigh - 1, 3));
  EXPECT_TRUE(epochs.unchanged_since(kHigh - 65, 3));
}

TEST(UnloadEpochs, NotStartedKeepsNothing) {
  UnloadEpochs epochs;
  epochs.record(kLow, 64, 2);
  EXPECT_FALSE(epochs.unchanged_since(kLow, 9));
  UnloadEpochs empty;
  EXPECT_FALSE(empty.start(kHigh, kLow));
  EXPECT_FALSE(empty.unchanged_since(kLow, 9));
}

}  // namespace
}  // namespace fasthprof
