// rtree_test.cc: the page-number radix tree under the extent map -- absent keys read as zero
// and have no entry until asked to create one, one entry per page (consecutive pages hold
// consecutive entries within a leaf), leaves created on demand and independently of each other,
// both ends of the 48-bit key range and what lies beyond it, stores/clears seen by reads,
// concurrent leaf creation publishing a single leaf, and the fork hooks.
//
// Each test builds its own tree; no memory at the keyed addresses is touched (the tree only
// reads address bits), and leaves come from the global base.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "extent/rtree.h"
#include "meta/base.h"
#include "os/pages.h"

namespace je {
namespace {

constexpr uintptr_t kPg = config::kPage;
constexpr uintptr_t kLeafSpan = Rtree::kLeafEntries * kPg;  // bytes one leaf covers
constexpr uintptr_t kVaddrEnd = uintptr_t{1} << config::kLgVaddr;

// A leaf-aligned region somewhere in the middle of the key space.
constexpr uintptr_t kRegion = uintptr_t{0x5a} * kLeafSpan;

class RtreeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_TRUE(pages::boot());
    ASSERT_NE(base_global(), nullptr);
  }
  // 2 MiB of root: on the heap, value-initialized (all leaves absent).
  std::unique_ptr<Rtree> tree = std::make_unique<Rtree>();

  Rtree::Entry* make(uintptr_t addr) {
    Rtree::Entry* e = tree->entry(addr, true);
    EXPECT_NE(e, nullptr) << "entry(" << std::hex << addr << ", create) failed";
    return e;
  }
};

TEST_F(RtreeTest, GeometryCoversTheWholeAddressSpace) {
  EXPECT_EQ(Rtree::kKeyBits, config::kLgVaddr - config::kLgPage);
  EXPECT_EQ(Rtree::kLeafBits + Rtree::kRootBits, Rtree::kKeyBits);
  EXPECT_EQ(Rtree::kRootEntries * Rtree::kLeafEntries * kPg, kVaddrEnd);
}

TEST_F(RtreeTest, AbsentKeysHaveNoEntryAndReadZero) {
  for (uintptr_t a : {uintptr_t{0}, kPg, kRegion, kRegion + 12345, kVaddrEnd - kPg}) {
    EXPECT_EQ(tree->entry(a, false), nullptr) << std::hex << a;
    EXPECT_EQ(tree->read(a), 0u) << std::hex << a;
  }
}

TEST_F(RtreeTest, CreatedLeafIsZeroFilledAndCoversItsWholeSpan) {
  Rtree::Entry* e = make(kRegion + 7 * kPg);
  EXPECT_EQ(e->load(), 0u);
  // The same key now resolves without creating, to the same slot.
  EXPECT_EQ(tree->entry(kRegion + 7 * kPg, false), e);
  // Every page of the leaf has a (zero) entry; sample the span including both ends.
  for (uintptr_t off : {uintptr_t{0}, kPg, 100 * kPg, kLeafSpan / 2, kLeafSpan - kPg}) {
    Rtree::Entry* other = tree->entry(kRegion + off, false);
    ASSERT_NE(other, nullptr) << "offset " << std::hex << off;
    EXPECT_EQ(other->load(), 0u) << "offset " << std::hex << off;
  }
}

TEST_F(RtreeTest, OneEntryPerPageConsecutiveWithinALeaf) {
  Rtree::Entry* first = make(kRegion);
  // Any byte of a page selects that page's entry.
  EXPECT_EQ(tree->entry(kRegion + 1, false), first);
  EXPECT_EQ(tree->entry(kRegion + kPg - 1, false), first);
  // The next pages are the next slots.
  for (uintptr_t i = 1; i < 64; i++) {
    EXPECT_EQ(tree->entry(kRegion + i * kPg, false), first + i) << "page " << i;
    EXPECT_EQ(tree->entry(kRegion + i * kPg + kPg / 2, false), first + i) << "page " << i;
  }
}

TEST_F(RtreeTest, StoresAreReadBackAndClearedIndependently) {
  const uintptr_t keys[] = {kRegion, kRegion + kPg, kRegion + 2 * kPg, kRegion + 1000 * kPg};
  uint64_t v = 0x1111;
  for (uintptr_t k : keys) make(k)->store(v++);
  v = 0x1111;
  for (uintptr_t k : keys) EXPECT_EQ(tree->read(k + 5), v++) << std::hex << k;
  // Neighbours of stored pages stay empty.
  EXPECT_EQ(tree->read(kRegion + 3 * kPg), 0u);
  EXPECT_EQ(tree->read(kRegion + 999 * kPg), 0u);
  EXPECT_EQ(tree->read(kRegion + 1001 * kPg), 0u);
  // Clearing one leaves the others.
  tree->entry(kRegion + kPg, false)->store(0);
  EXPECT_EQ(tree->read(kRegion + kPg), 0u);
  EXPECT_EQ(tree->read(kRegion), 0x1111u);
  EXPECT_EQ(tree->read(kRegion + 2 * kPg), 0x1113u);
  // A full-width value survives unchanged.
  make(kRegion + 5 * kPg)->store(~uint64_t{0});
  EXPECT_EQ(tree->read(kRegion + 5 * kPg), ~uint64_t{0});
}

TEST_F(RtreeTest, LeavesAreCreatedIndependently) {
  const uintptr_t last_of_a = kRegion + kLeafSpan - kPg;  // last page of leaf A
  const uintptr_t first_of_b = kRegion + kLeafSpan;       // first page of leaf B
  make(last_of_a)->store(1);
  EXPECT_EQ(tree->entry(first_of_b, false), nullptr) << "creating leaf A created leaf B";
  EXPECT_EQ(tree->entry(kRegion - kPg, false), nullptr)
      << "creating leaf A created its predecessor";
  make(first_of_b)->store(2);
  EXPECT_EQ(tree->read(last_of_a), 1u);
  EXPECT_EQ(tree->read(first_of_b), 2u);
  // Clearing one side of the boundary leaves the other.
  tree->entry(last_of_a, false)->store(0);
  EXPECT_EQ(tree->read(first_of_b), 2u);
}

TEST_F(RtreeTest, BothEndsOfTheKeyRangeWork) {
  make(0)->store(10);
  make(kVaddrEnd - kPg)->store(20);
  EXPECT_EQ(tree->read(0), 10u);
  EXPECT_EQ(tree->read(kPg - 1), 10u);
  EXPECT_EQ(tree->read(kVaddrEnd - kPg), 20u);
  EXPECT_EQ(tree->read(kVaddrEnd - 1), 20u);
}

TEST_F(RtreeTest, AddressesPastTheKeyRangeHaveNoEntry) {
  for (uintptr_t a : {kVaddrEnd, kVaddrEnd + kPg, kVaddrEnd * 2, ~uintptr_t{0}}) {
    EXPECT_EQ(tree->entry(a, true), nullptr) << std::hex << a;
    EXPECT_EQ(tree->read(a), 0u) << std::hex << a;
  }
  // In particular 2^48 must not alias key 0.
  make(0)->store(77);
  EXPECT_EQ(tree->read(kVaddrEnd), 0u);
}

TEST_F(RtreeTest, TreesAreIndependent) {
  auto other = std::make_unique<Rtree>();
  make(kRegion)->store(5);
  EXPECT_EQ(other->entry(kRegion, false), nullptr);
  EXPECT_EQ(other->read(kRegion), 0u);
  other->entry(kRegion, true)->store(6);
  EXPECT_EQ(tree->read(kRegion), 5u);
  EXPECT_EQ(other->read(kRegion), 6u);
}

TEST_F(RtreeTest, ConcurrentCreatorsShareOneLeaf) {
  constexpr unsigned kThreads = 8;
  const uintptr_t region = kRegion + 3 * kLeafSpan;
  std::atomic<bool> go{false};
  std::vector<Rtree::Entry*> got(kThreads, nullptr);
  std::vector<std::thread> ts;
  for (unsigned t = 0; t < kThreads; t++) {
    ts.emplace_back([&, t] {
      while (!go.load()) {
      }
      Rtree::Entry* e = tree->entry(region + t * kPg, true);
      if (e != nullptr) e->store(100 + t);
      got[t] = e;
    });
  }
  go.store(true);
  for (std::thread& t : ts) t.join();
  ASSERT_NE(got[0], nullptr);
  for (unsigned t = 0; t < kThreads; t++) {
    // A losing creator that published its own leaf would break the slot arithmetic and lose
    // the other threads' stores.
    EXPECT_EQ(got[t], got[0] + t) << "thread " << t << " got a slot in a different leaf";
    EXPECT_EQ(tree->read(region + t * kPg), 100u + t) << "thread " << t << "'s store was lost";
  }
}

TEST_F(RtreeTest, LeafCreationWorksAfterForkHooks) {
  tree->prefork();
  tree->postfork_parent();
  make(kRegion + 5 * kLeafSpan)->store(1);
  tree->prefork();
  tree->postfork_child();
  make(kRegion + 6 * kLeafSpan)->store(2);
  EXPECT_EQ(tree->read(kRegion + 5 * kLeafSpan), 1u);
  EXPECT_EQ(tree->read(kRegion + 6 * kLeafSpan), 2u);
}

}  // namespace
}  // namespace je
