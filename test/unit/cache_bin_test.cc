// cache_bin_test.cc: the thread-cache bin (src/thread/cache_bin.h) on its own -- a zeroed bin
// reads as empty and full at once, init() gives an empty stack of n slots, push/pop order,
// the full and empty limits, the low-water mark (pop_fast stops there, pop_slow moves it,
// reset_low_water sets it), push_batch putting its first item on top, remove_oldest keeping the
// newest items in place, and the 16-bit position encoding on a stack that crosses a 64 KiB
// address boundary and on the largest stack the encoding allows.
//
// No allocator state is involved: the slot arrays are plain buffers of this program.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <vector>

#include "thread/cache_bin.h"

namespace je {
namespace {

/// Distinct fake items (never dereferenced).
void* item(uintptr_t i) { return reinterpret_cast<void*>((i + 1) * 16); }

class CacheBinTest : public ::testing::Test {
 protected:
  static constexpr unsigned kSlots = 16;
  void* slots_[kSlots] = {};
  CacheBin bin_;

  void SetUp() override { bin_.init(slots_, kSlots); }

  void push_items(unsigned n, uintptr_t first = 0) {
    for (unsigned i = 0; i < n; i++) ASSERT_TRUE(bin_.push_fast(item(first + i))) << i;
  }
};

TEST(CacheBinZeroed, ReadsAsEmptyAndFull) {
  CacheBin b{};
  EXPECT_FALSE(b.can_pop_fast());
  EXPECT_EQ(b.pop_fast(), nullptr);
  EXPECT_EQ(b.pop_slow(), nullptr);  // empty: the slow path must set the bin up first
  EXPECT_FALSE(b.push_fast(item(0)));
  EXPECT_EQ(b.ncached(), 0u);
  EXPECT_EQ(b.ncached_max(), 0u);
  EXPECT_EQ(b.nlow_water(), 0u);
}

TEST_F(CacheBinTest, InitGivesAnEmptyStackOfNSlots) {
  bin_.nrequests = 42;
  bin_.init(slots_, kSlots);
  EXPECT_EQ(bin_.ncached(), 0u);
  EXPECT_EQ(bin_.ncached_max(), kSlots);
  EXPECT_EQ(bin_.nlow_water(), 0u);
  EXPECT_EQ(bin_.nrequests, 0u);
  EXPECT_EQ(bin_.bottom(), slots_ + kSlots);
  EXPECT_FALSE(bin_.can_pop_fast());
  EXPECT_EQ(bin_.pop_fast(), nullptr);
  EXPECT_EQ(bin_.pop_slow(), nullptr);
}

TEST_F(CacheBinTest, PopReturnsTheMostRecentPushFirst) {
  push_items(5);
  EXPECT_EQ(bin_.ncached(), 5u);
  for (int i = 4; i >= 0; i--) {
    ASSERT_TRUE(bin_.can_pop_fast());
    EXPECT_EQ(bin_.pop_fast(), item(i));
  }
  EXPECT_EQ(bin_.ncached(), 0u);
  EXPECT_EQ(bin_.pop_fast(), nullptr);
}

TEST_F(CacheBinTest, PushFailsOnceFullAndLeavesTheBinUnchanged) {
  push_items(kSlots);
  EXPECT_EQ(bin_.ncached(), kSlots);
  EXPECT_FALSE(bin_.push_fast(item(99)));
  EXPECT_EQ(bin_.ncached(), kSlots);
  EXPECT_EQ(bin_.pop_fast(), item(kSlots - 1));
  EXPECT_TRUE(bin_.push_fast(item(99)));  // one slot free again
  EXPECT_EQ(bin_.pop_fast(), item(99));
}

TEST_F(CacheBinTest, PopFastStopsAtTheLowWaterMark) {
  push_items(6);
  bin_.reset_low_water();  // a GC visit: everything cached now counts as unused so far
  EXPECT_EQ(bin_.nlow_water(), 6u);
  EXPECT_FALSE(bin_.can_pop_fast());
  EXPECT_EQ(bin_.pop_fast(), nullptr);
  EXPECT_EQ(bin_.ncached(), 6u);
  // The slow pop goes below the mark and moves it.
  EXPECT_EQ(bin_.pop_slow(), item(5));
  EXPECT_EQ(bin_.nlow_water(), 5u);
  EXPECT_EQ(bin_.pop_slow(), item(4));
  EXPECT_EQ(bin_.nlow_water(), 4u);
  // Pushing back does not raise the mark: it records the emptiest point since the visit.
  push_items(3, 100);
  EXPECT_EQ(bin_.ncached(), 7u);
  EXPECT_EQ(bin_.nlow_water(), 4u);
  // The items above the mark pop on the fast path, then it stops again.
  for (int i = 2; i >= 0; i--) EXPECT_EQ(bin_.pop_fast(), item(100 + i));
  EXPECT_EQ(bin_.pop_fast(), nullptr);
}

TEST_F(CacheBinTest, PopSlowDrainsToEmptyThenFails) {
  push_items(3);
  bin_.reset_low_water();
  for (int i = 2; i >= 0; i--) EXPECT_EQ(bin_.pop_slow(), item(i));
  EXPECT_EQ(bin_.ncached(), 0u);
  EXPECT_EQ(bin_.nlow_water(), 0u);
  EXPECT_EQ(bin_.pop_slow(), nullptr);
}

TEST_F(CacheBinTest, PushBatchPutsTheFirstItemOnTop) {
  void* batch[4] = {item(10), item(11), item(12), item(13)};
  push_items(2);  // older items stay below the batch
  bin_.push_batch(batch, 4);
  EXPECT_EQ(bin_.ncached(), 6u);
  for (int i = 0; i < 4; i++) EXPECT_EQ(bin_.pop_fast(), batch[i]);
  EXPECT_EQ(bin_.pop_fast(), item(1));
  EXPECT_EQ(bin_.pop_fast(), item(0));
}

TEST_F(CacheBinTest, RemoveOldestKeepsTheNewestItemsInOrder) {
  push_items(10);  // item(9) on top, item(0) oldest
  bin_.remove_oldest(6);
  EXPECT_EQ(bin_.ncached(), 4u);
  EXPECT_EQ(bin_.bottom(), slots_ + kSlots);  // the stack stays anchored at its bottom
  for (int i = 9; i >= 6; i--) EXPECT_EQ(bin_.pop_fast(), item(i));
  EXPECT_EQ(bin_.ncached(), 0u);
}

TEST_F(CacheBinTest, RemoveOldestClampsTheLowWaterMark) {
  // A mark above what is left is brought down to the new count ...
  push_items(8);
  bin_.reset_low_water();
  bin_.remove_oldest(5);
  EXPECT_EQ(bin_.nlow_water(), 3u);
  EXPECT_EQ(bin_.ncached(), 3u);
  // ... one already below it stays where it was.
  bin_.init(slots_, kSlots);
  push_items(2);
  bin_.reset_low_water();  // mark: 2 items
  push_items(6, 50);       // 8 cached, mark still 2
  bin_.remove_oldest(4);   // 4 left, more than the mark
  EXPECT_EQ(bin_.ncached(), 4u);
  EXPECT_EQ(bin_.nlow_water(), 2u);
  for (int i = 5; i >= 4; i--) EXPECT_EQ(bin_.pop_fast(), item(50 + i));
}

TEST_F(CacheBinTest, RemoveOldestOfEverythingEmptiesTheBin) {
  push_items(5);
  bin_.remove_oldest(5);
  EXPECT_EQ(bin_.ncached(), 0u);
  EXPECT_EQ(bin_.pop_fast(), nullptr);
  EXPECT_TRUE(bin_.push_fast(item(7)));
  EXPECT_EQ(bin_.pop_fast(), item(7));
}

// The positions are the low 16 bits of addresses; a stack whose slots straddle a 64 KiB
// boundary wraps in those bits and must still count correctly.
TEST(CacheBinEncoding, StackAcrossA64KiBBoundary) {
  constexpr size_t kRegion = size_t{128} << 10;
  void* mem = std::aligned_alloc(size_t{64} << 10, kRegion);
  ASSERT_NE(mem, nullptr);
  constexpr unsigned kN = 32;
  // Half the slots below the boundary at 64 KiB, half above.
  void** slots = reinterpret_cast<void**>(static_cast<char*>(mem) + (size_t{64} << 10)) - kN / 2;
  CacheBin b;
  b.init(slots, kN);
  EXPECT_EQ(b.ncached_max(), kN);
  for (unsigned i = 0; i < kN; i++) ASSERT_TRUE(b.push_fast(item(i))) << i;
  EXPECT_FALSE(b.push_fast(item(kN)));
  EXPECT_EQ(b.ncached(), kN);
  b.reset_low_water();
  EXPECT_EQ(b.nlow_water(), kN);
  for (unsigned i = kN; i-- > 0;) ASSERT_EQ(b.pop_slow(), item(i)) << i;
  EXPECT_EQ(b.ncached(), 0u);
  EXPECT_EQ(b.pop_slow(), nullptr);
  std::free(mem);
}

// The largest stack the encoding can describe: just under 64 KiB of slots.
TEST(CacheBinEncoding, LargestStackCountsEverySlot) {
  constexpr unsigned kN = (1u << 16) / sizeof(void*) - 1;
  std::vector<void*> slots(kN);
  CacheBin b;
  b.init(slots.data(), kN);
  EXPECT_EQ(b.ncached_max(), kN);
  for (unsigned i = 0; i < kN; i++) ASSERT_TRUE(b.push_fast(item(i))) << i;
  EXPECT_FALSE(b.push_fast(item(kN)));
  EXPECT_EQ(b.ncached(), kN);
  b.remove_oldest(kN - 1);
  EXPECT_EQ(b.ncached(), 1u);
  EXPECT_EQ(b.pop_fast(), item(kN - 1));
}

}  // namespace
}  // namespace je
