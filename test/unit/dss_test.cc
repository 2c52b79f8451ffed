// Unit tests of src/extent/dss: sbrk extents, the precedence table, and what the default extent
// hooks do with sbrk memory (never unmapped, never merged with mmap memory).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

#include "extent/dss.h"
#include "extent/ehooks.h"
#include "support/config.h"

namespace {

using je::DssPrec;

class Dss : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { je::dss_boot(DssPrec::kSecondary); }
};

TEST_F(Dss, AllocExtendsTheBreakAlignedAndZeroed) {
  const size_t kPage = je::config::kPage;
  bool zero = false, commit = false;
  void* p = je::dss_alloc(nullptr, 4 * kPage, 16 * kPage, &zero, &commit);
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(zero);
  EXPECT_TRUE(commit);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % (16 * kPage), 0u);
  EXPECT_LE(reinterpret_cast<uintptr_t>(p) + 4 * kPage, reinterpret_cast<uintptr_t>(sbrk(0)));
  EXPECT_TRUE(je::dss_contains(p));
  EXPECT_TRUE(je::dss_contains(static_cast<char*>(p) + 4 * kPage - 1));
  EXPECT_EQ(je::dss_max(), sbrk(0));
  unsigned char* c = static_cast<unsigned char*>(p);
  for (size_t i = 0; i < 4 * kPage; i++) ASSERT_EQ(c[i], 0) << i;
  std::memset(p, 1, 4 * kPage);
}

TEST_F(Dss, NewAddrMustBeTheBreak) {
  const size_t kPage = je::config::kPage;
  bool zero, commit;
  void* p = je::dss_alloc(nullptr, kPage, kPage, &zero, &commit);
  ASSERT_NE(p, nullptr);
  void* end = static_cast<char*>(p) + kPage;
  // Exactly at the break: grows in place. Anywhere else: refused.
  void* q = je::dss_alloc(end, kPage, kPage, &zero, &commit);
  EXPECT_EQ(q, end);
  EXPECT_EQ(je::dss_alloc(p, kPage, kPage, &zero, &commit), nullptr);
}

TEST_F(Dss, ApplicationSbrkIsSkipped) {
  const size_t kPage = je::config::kPage;
  bool zero, commit;
  char* mine = static_cast<char*>(sbrk(100));
  ASSERT_NE(mine, reinterpret_cast<char*>(-1));
  std::memset(mine, 7, 100);
  void* p = je::dss_alloc(nullptr, kPage, kPage, &zero, &commit);
  ASSERT_NE(p, nullptr);
  EXPECT_GE(static_cast<char*>(p), mine + 100);
  std::memset(p, 9, kPage);
  for (int i = 0; i < 100; i++) ASSERT_EQ(mine[i], 7);
}

TEST_F(Dss, MmapMemoryIsNotDss) {
  int x = 0;
  EXPECT_FALSE(je::dss_contains(&x));
  EXPECT_FALSE(je::dss_contains(nullptr));
  bool zero, commit;
  void* d = je::dss_alloc(nullptr, je::config::kPage, je::config::kPage, &zero, &commit);
  ASSERT_NE(d, nullptr);
  EXPECT_TRUE(je::dss_mergeable(d, d));
  EXPECT_FALSE(je::dss_mergeable(d, &x));
  EXPECT_TRUE(je::dss_mergeable(&x, &x));
}

TEST_F(Dss, PrecedenceTable) {
  EXPECT_EQ(je::dss_prec_default(), DssPrec::kSecondary);
  EXPECT_EQ(je::dss_prec_get(4000), DssPrec::kSecondary);  // never set: the default
  je::dss_prec_set(4000, DssPrec::kDisabled);
  EXPECT_EQ(je::dss_prec_get(4000), DssPrec::kDisabled);
  je::dss_prec_set(4000, DssPrec::kSecondary);
  EXPECT_EQ(je::dss_prec_get(1u << 20), DssPrec::kSecondary);  // out of range: the default
  je::dss_prec_set(1u << 20, DssPrec::kPrimary);               // ignored
  EXPECT_EQ(je::dss_prec_get(1u << 20), DssPrec::kSecondary);
}

// The default hooks: primary takes sbrk memory, which dalloc declines (retained) and destroy
// leaves alone; merging it with mmap memory is refused.
TEST_F(Dss, DefaultHooksKeepSbrkMemory) {
  const size_t kPage = je::config::kPage;
  extent_hooks_t* h = const_cast<extent_hooks_t*>(&je::kDefaultExtentHooks);
  const unsigned ind = 4001;
  je::dss_prec_set(ind, DssPrec::kPrimary);
  bool zero = false, commit = true;
  void* d = h->alloc(h, nullptr, 8 * kPage, kPage, &zero, &commit, ind);
  ASSERT_NE(d, nullptr);
  EXPECT_TRUE(je::dss_contains(d));
  EXPECT_TRUE(h->dalloc(h, d, 8 * kPage, true, ind));  // true: declined
  h->destroy(h, d, 8 * kPage, true, ind);              // no-op: still usable
  std::memset(d, 3, 8 * kPage);
  je::dss_prec_set(ind, DssPrec::kDisabled);
  void* m = h->alloc(h, nullptr, 8 * kPage, kPage, &zero, &commit, ind);
  ASSERT_NE(m, nullptr);
  EXPECT_FALSE(je::dss_contains(m));
  EXPECT_TRUE(h->merge(h, d, 8 * kPage, m, 8 * kPage, true, ind));  // true: refused
  EXPECT_FALSE(h->dalloc(h, m, 8 * kPage, true, ind));              // unmapped
  je::dss_prec_set(ind, DssPrec::kSecondary);
}

}  // namespace
