// Unit tests of src/meta/base: the metadata bump allocator.
#include "meta/base.h"

#include <errno.h>
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

#include "jemalloc/jemalloc.h"
#include "os/pages.h"
#include "support/config.h"
#include "support/util.h"

namespace je {
namespace {

constexpr size_t kPage = config::kPage;
constexpr size_t kHugepage = config::kHugepage;

class BaseTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ASSERT_TRUE(pages::boot()); }
};

bool all_zero(const void* p, size_t n) {
  const unsigned char* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; i++) {
    if (b[i] != 0) return false;
  }
  return true;
}

void expect_consistent(const Base::Stats& s) {
  EXPECT_LE(s.allocated, s.resident);
  EXPECT_LE(s.resident, s.mapped);
  EXPECT_EQ(s.mapped % kHugepage, 0u);
  EXPECT_EQ(s.resident % kPage, 0u);
}

void expect_monotonic(const Base::Stats& before, const Base::Stats& after) {
  EXPECT_GE(after.allocated, before.allocated);
  EXPECT_GE(after.resident, before.resident);
  EXPECT_GE(after.mapped, before.mapped);
  EXPECT_GE(after.n_thp, before.n_thp);
}

// True when no page of [p, p + n) is mapped any more.
bool unmapped(const void* p, size_t n) {
  const uintptr_t begin = page_floor(addr_of(p));
  const uintptr_t end = page_ceil(addr_of(p) + n);
  for (uintptr_t a = begin; a < end; a += kPage) {
    unsigned char v;
    if (mincore(ptr_of(a), kPage, &v) == 0 || errno != ENOMEM) return false;
  }
  return true;
}

TEST_F(BaseTest, CreateLivesInItsFirstBlock) {
  Base* b = Base::create(7, MetadataThp::kDisabled);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->ind(), 7u);
  EXPECT_EQ(addr_of(b) % kHugepage, 0u);
  Base::Stats s = b->stats();
  EXPECT_EQ(s.mapped, kHugepage);
  EXPECT_GE(s.allocated, sizeof(Base));
  EXPECT_EQ(s.n_thp, 0u);
  expect_consistent(s);
  // The first allocation comes from the same block, after the Base object.
  void* p = b->alloc(64, 16);
  ASSERT_NE(p, nullptr);
  EXPECT_GE(addr_of(p), addr_of(b) + sizeof(Base));
  EXPECT_LT(addr_of(p), addr_of(b) + kHugepage);
  b->destroy();
}

TEST_F(BaseTest, AlignmentAndZeroFill) {
  Base* b = Base::create(1, MetadataThp::kDisabled);
  ASSERT_NE(b, nullptr);
  for (size_t alignment = 8; alignment <= kPage; alignment *= 2) {
    for (size_t size :
         {size_t{1}, size_t{8}, size_t{24}, size_t{100}, size_t{4096}, size_t{5000}}) {
      void* p = b->alloc(size, alignment);
      ASSERT_NE(p, nullptr);
      EXPECT_EQ(addr_of(p) % alignment, 0u) << "alignment " << alignment;
      EXPECT_EQ(addr_of(p) % config::kQuantum, 0u);
      EXPECT_TRUE(all_zero(p, size));
      memset(p, 0xee, size);
    }
  }
  // Bad alignments are refused.
  EXPECT_EQ(b->alloc(16, 3), nullptr);
  EXPECT_EQ(b->alloc(16, 0), nullptr);
  EXPECT_EQ(b->alloc(~size_t{0} - 10, 16), nullptr);
  expect_consistent(b->stats());
  b->destroy();
}

TEST_F(BaseTest, ManySmallAllocationsSpanSeveralBlocks) {
  Base* b = Base::create(2, MetadataThp::kDisabled);
  ASSERT_NE(b, nullptr);
  constexpr size_t kN = 24000;
  std::vector<std::pair<uintptr_t, size_t>> ranges;
  ranges.reserve(kN);
  Base::Stats prev = b->stats();
  size_t requested = 0;
  for (size_t i = 0; i < kN; i++) {
    const size_t size = 16 + (i * 37) % 1500;
    const size_t alignment = size_t{16} << (i % 3);
    void* p = b->alloc(size, alignment);
    ASSERT_NE(p, nullptr);
    ASSERT_EQ(addr_of(p) % alignment, 0u);
    ASSERT_TRUE(all_zero(p, size));
    memset(p, static_cast<int>(i & 0xff) | 1, size);
    ranges.emplace_back(addr_of(p), size);
    requested += size;
    if (i % 500 == 0) {
      Base::Stats s = b->stats();
      expect_monotonic(prev, s);
      expect_consistent(s);
      prev = s;
    }
  }
  Base::Stats s = b->stats();
  expect_consistent(s);
  EXPECT_GE(s.allocated, requested);
  // ~19 MiB requested: blocks of 2, 4, 6, 8 MiB... at least four blocks.
  EXPECT_GE(s.mapped, size_t{20} << 20);
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); i++) {
    ASSERT_LE(ranges[i - 1].first + ranges[i - 1].second, ranges[i].first) << "overlap at " << i;
  }
  // Tail reuse keeps waste small: everything requested fits in little more than what was mapped.
  EXPECT_GT(static_cast<double>(s.allocated) / static_cast<double>(s.mapped), 0.5);
  b->destroy();
}

TEST_F(BaseTest, BigAllocationGetsItsOwnRoom) {
  Base* b = Base::create(3, MetadataThp::kDisabled);
  ASSERT_NE(b, nullptr);
  void* small = b->alloc(100, 16);
  ASSERT_NE(small, nullptr);
  Base::Stats before = b->stats();
  const size_t big = 5 * kHugepage / 2 + 123;  // > 2 MiB, not a page multiple
  void* p = b->alloc(big, kPage);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(addr_of(p) % kPage, 0u);
  EXPECT_TRUE(all_zero(p, big));
  memset(p, 0x5c, big);
  Base::Stats after = b->stats();
  expect_monotonic(before, after);
  expect_consistent(after);
  EXPECT_GE(after.mapped - before.mapped, big);
  EXPECT_GE(after.allocated - before.allocated, big);
  // Small requests keep using the open blocks' tails: no new block.
  for (int i = 0; i < 1000; i++) ASSERT_NE(b->alloc(100, 16), nullptr);
  EXPECT_EQ(b->stats().mapped, after.mapped);
  // Best fit: once the big block's remainder (under 1 MiB) is gone, the first block's is used.
  void* tail = b->alloc(kHugepage / 2, 16);
  ASSERT_NE(tail, nullptr);
  EXPECT_GT(addr_of(tail), addr_of(small));
  EXPECT_LT(addr_of(tail), addr_of(b) + kHugepage);
  EXPECT_EQ(b->stats().mapped, after.mapped);
  // A second, bigger request maps a block larger than the last one.
  void* q = b->alloc(3 * big, kPage);
  ASSERT_NE(q, nullptr);
  EXPECT_TRUE(all_zero(q, 3 * big));
  b->destroy();
}

TEST_F(BaseTest, ResidentEstimateCoversTouchedPages) {
  Base* b = Base::create(4, MetadataThp::kDisabled);
  ASSERT_NE(b, nullptr);
  Base::Stats s0 = b->stats();
  void* p = b->alloc(10 * kPage, kPage);
  ASSERT_NE(p, nullptr);
  Base::Stats s1 = b->stats();
  EXPECT_GE(s1.resident - s0.resident, 10 * kPage);
  EXPECT_LE(s1.resident - s0.resident, 11 * kPage);
  // Without system-wide THP (which may back the whole block with one hugepage), the estimate
  // bounds what really became resident in the first block.
  memset(p, 1, 10 * kPage);
  if (pages::system_thp_mode() != pages::ThpMode::kAlways) {
    EXPECT_LE(pages::resident_bytes(b, kHugepage), s1.resident);
  }
  b->destroy();
}

TEST_F(BaseTest, DestroyUnmapsEveryBlock) {
  Base* b = Base::create(5, MetadataThp::kDisabled);
  ASSERT_NE(b, nullptr);
  void* first = b;
  void* big1 = b->alloc(3 * kHugepage, kPage);
  void* big2 = b->alloc(5 * kHugepage, kPage);
  void* small = b->alloc(64, 16);
  ASSERT_NE(big1, nullptr);
  ASSERT_NE(big2, nullptr);
  ASSERT_NE(small, nullptr);
  memset(big1, 1, 3 * kHugepage);
  EXPECT_GT(pages::resident_bytes(big1, 3 * kHugepage), 0u);
  b->destroy();
  EXPECT_TRUE(unmapped(first, kHugepage));
  EXPECT_TRUE(unmapped(big1, 3 * kHugepage));
  EXPECT_TRUE(unmapped(big2, 5 * kHugepage));
  EXPECT_TRUE(unmapped(small, 64));
  EXPECT_EQ(pages::resident_bytes(big1, 3 * kHugepage), 0u);
}

// experimental.arenas_create_ext with metadata_use_hooks: every block comes from the hooks'
// alloc (hugepage aligned, with the arena's index) and goes back through their dalloc; memory
// a hook returns not zeroed is zeroed before use; a hook that refuses to allocate fails create.
struct HookLog {
  int allocs = 0, dallocs = 0;
  unsigned last_ind = 0;
  size_t alloc_bytes = 0, dalloc_bytes = 0;
  bool give_dirty = false, refuse = false;
};
HookLog g_hook_log;

void* logging_alloc(extent_hooks_t*, void* new_addr, size_t size, size_t alignment, bool* zero,
                    bool* commit, unsigned ind) {
  if (g_hook_log.refuse) return nullptr;
  g_hook_log.allocs++;
  g_hook_log.last_ind = ind;
  g_hook_log.alloc_bytes += size;
  EXPECT_EQ(new_addr, nullptr);
  EXPECT_EQ(alignment, kHugepage);
  void* p = pages::map(nullptr, size, alignment, commit);
  if (p != nullptr && g_hook_log.give_dirty) {
    memset(p, 0xa5, size);
    *zero = false;
  } else {
    *zero = true;
  }
  return p;
}

bool logging_dalloc(extent_hooks_t*, void* addr, size_t size, bool, unsigned) {
  g_hook_log.dallocs++;
  g_hook_log.dalloc_bytes += size;
  pages::unmap(addr, size);
  return false;
}

extent_hooks_t g_logging_hooks = {logging_alloc, logging_dalloc, nullptr, nullptr, nullptr,
                                  nullptr,       nullptr,        nullptr, nullptr};

TEST_F(BaseTest, BlocksThroughUserHooks) {
  g_hook_log = HookLog{};
  g_hook_log.give_dirty = true;
  Base* b = Base::create(7, MetadataThp::kAlways, &g_logging_hooks);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(g_hook_log.allocs, 1);
  EXPECT_EQ(g_hook_log.last_ind, 7u);
  void* small = b->alloc(200, 16);
  ASSERT_NE(small, nullptr);
  EXPECT_TRUE(all_zero(small, 200));
  void* big = b->alloc(3 * kHugepage, kPage);  // a second block
  ASSERT_NE(big, nullptr);
  EXPECT_TRUE(all_zero(big, 3 * kHugepage));
  EXPECT_EQ(g_hook_log.allocs, 2);
  EXPECT_EQ(b->stats().mapped, g_hook_log.alloc_bytes);
  EXPECT_EQ(b->stats().n_thp, 0u);  // user memory is not advised
  b->destroy();
  EXPECT_EQ(g_hook_log.dallocs, 2);
  EXPECT_EQ(g_hook_log.dalloc_bytes, g_hook_log.alloc_bytes);

  g_hook_log = HookLog{};
  g_hook_log.refuse = true;
  EXPECT_EQ(Base::create(7, MetadataThp::kDisabled, &g_logging_hooks), nullptr);
}

TEST_F(BaseTest, ConcurrentAllocationsDoNotOverlap) {
  Base* b = Base::create(6, MetadataThp::kDisabled);
  ASSERT_NE(b, nullptr);
  constexpr int kThreads = 4;
  constexpr size_t kPerThread = 3000;
  std::vector<std::vector<std::pair<uintptr_t, size_t>>> got(kThreads);
  std::atomic<int> ready{0};
  std::atomic<bool> failed{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; t++) {
    threads.emplace_back([&, t] {
      got[t].reserve(kPerThread);
      ready.fetch_add(1);
      while (ready.load() < kThreads) {
      }
      for (size_t i = 0; i < kPerThread; i++) {
        const size_t size = 8 + (i * 13 + static_cast<size_t>(t) * 101) % 700;
        void* p = b->alloc(size, 16);
        if (p == nullptr || !all_zero(p, size)) {
          failed = true;
          return;
        }
        memset(p, t + 1, size);
        got[t].emplace_back(addr_of(p), size);
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_FALSE(failed.load());
  std::vector<std::pair<uintptr_t, size_t>> all;
  for (int t = 0; t < kThreads; t++) {
    for (auto [a, n] : got[t]) {
      // Each thread's bytes are still its own pattern: nobody else wrote over them.
      const unsigned char* bytes = reinterpret_cast<const unsigned char*>(a);
      for (size_t i = 0; i < n; i++) ASSERT_EQ(bytes[i], t + 1);
      all.emplace_back(a, n);
    }
  }
  std::sort(all.begin(), all.end());
  for (size_t i = 1; i < all.size(); i++) {
    ASSERT_LE(all[i - 1].first + all[i - 1].second, all[i].first);
  }
  expect_consistent(b->stats());
  b->destroy();
}

TEST_F(BaseTest, MetadataThpModes) {
  const bool madvise_mode = pages::system_thp_mode() == pages::ThpMode::kDefault;

  Base* off = Base::create(8, MetadataThp::kDisabled);
  ASSERT_NE(off, nullptr);
  ASSERT_NE(off->alloc(3 * kHugepage, kPage), nullptr);
  EXPECT_EQ(off->stats().n_thp, 0u);
  off->destroy();

  Base* always = Base::create(9, MetadataThp::kAlways);
  ASSERT_NE(always, nullptr);
  EXPECT_EQ(always->stats().n_thp, madvise_mode ? 1u : 0u);
  // The first block has less than 2 MiB left, so this maps a second, advised block (4 MiB) and
  // touches both of its hugepages: 1 + 2.
  ASSERT_NE(always->alloc(kHugepage, kPage), nullptr);
  Base::Stats s = always->stats();
  EXPECT_EQ(s.n_thp, madvise_mode ? 3u : 0u);
  expect_consistent(s);
  always->destroy();

  // auto, arena base: advised from the 2nd block on, the first block included at the switch.
  Base* automatic = Base::create(10, MetadataThp::kAuto);
  ASSERT_NE(automatic, nullptr);
  ASSERT_NE(automatic->alloc(kHugepage / 2, kPage), nullptr);
  EXPECT_EQ(automatic->stats().n_thp, 0u);
  ASSERT_NE(automatic->alloc(kHugepage, kPage), nullptr);  // second block: the switch
  EXPECT_EQ(automatic->stats().n_thp, madvise_mode ? 3u : 0u);
  automatic->destroy();

  // auto, global-style base (ind 0): waits for the 5th block.
  Base* auto0 = Base::create(0, MetadataThp::kAuto);
  ASSERT_NE(auto0, nullptr);
  // Each request is bigger than any open block's room, so each maps a block: blocks 2..4.
  for (size_t mib : {8, 16, 32}) ASSERT_NE(auto0->alloc(mib << 20, kPage), nullptr);
  EXPECT_EQ(auto0->stats().n_thp, 0u);
  ASSERT_NE(auto0->alloc(size_t{64} << 20, kPage), nullptr);  // block 5
  EXPECT_EQ(auto0->stats().n_thp > 0, madvise_mode);
  auto0->destroy();
}

TEST_F(BaseTest, GlobalBaseIsOneObjectAcrossThreads) {
  constexpr int kThreads = 8;
  Base* seen[kThreads] = {};
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; t++) {
    threads.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < kThreads) {
      }
      seen[t] = base_global();
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_NE(seen[0], nullptr);
  for (int t = 1; t < kThreads; t++) EXPECT_EQ(seen[t], seen[0]);
  EXPECT_EQ(base_global(), seen[0]);
  EXPECT_EQ(seen[0]->ind(), 0u);
  void* p = seen[0]->alloc(128, 64);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(addr_of(p) % 64, 0u);
  expect_consistent(seen[0]->stats());
}

TEST_F(BaseTest, ForkProtocolRoundTrip) {
  Base* b = Base::create(11, MetadataThp::kDisabled);
  ASSERT_NE(b, nullptr);
  b->prefork();
  b->postfork_parent();
  ASSERT_NE(b->alloc(32, 16), nullptr);
  b->prefork();
  b->postfork_child();
  ASSERT_NE(b->alloc(32, 16), nullptr);
  b->destroy();
}

}  // namespace
}  // namespace je
