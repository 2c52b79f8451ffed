// Unit tests of src/os/pages: the OS contract on the running kernel.
#include "os/pages.h"

#include <errno.h>
#include <gtest/gtest.h>
#include <string.h>
#include <sys/mman.h>

#include <cstdint>

#include "support/config.h"
#include "support/util.h"

namespace je {
namespace {

constexpr size_t kPage = config::kPage;

class PagesTest : public ::testing::Test {
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

TEST_F(PagesTest, BootIsIdempotentAndReadsTheSystem) {
  EXPECT_TRUE(pages::boot());
  EXPECT_TRUE(pages::boot());
  // Our page is the kernel's, or a multiple of it (--with-lg-page on a smaller kernel page).
  EXPECT_NE(pages::os_page_size(), 0u);
  EXPECT_LE(pages::os_page_size(), kPage);
  EXPECT_EQ(kPage % pages::os_page_size(), 0u);
  // The boot probe ran (trust_madvise was not set): on Linux DONTNEED zero-fills.
  EXPECT_TRUE(pages::purge_forced_zeroes());
  char buf[64] = {};
  FILE* f = fopen("/proc/sys/vm/overcommit_memory", "r");
  if (f != nullptr) {
    ASSERT_NE(fgets(buf, sizeof(buf), f), nullptr);
    fclose(f);
    EXPECT_EQ(pages::os_overcommits(), buf[0] == '0' || buf[0] == '1');
  }
  f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  if (f == nullptr) {
    EXPECT_EQ(pages::system_thp_mode(), pages::ThpMode::kNotSupported);
  } else {
    char thp[128] = {};
    ASSERT_NE(fgets(thp, sizeof(thp), f), nullptr);
    fclose(f);
    pages::ThpMode want = strstr(thp, "[always]")    ? pages::ThpMode::kAlways
                          : strstr(thp, "[madvise]") ? pages::ThpMode::kDefault
                          : strstr(thp, "[never]")   ? pages::ThpMode::kNever
                                                     : pages::ThpMode::kNotSupported;
    EXPECT_EQ(pages::system_thp_mode(), want);
  }
}

TEST_F(PagesTest, MapHonoursAlignmentAndZeroFills) {
  for (unsigned lg = config::kLgPage; lg <= 30; lg++) {
    const size_t alignment = size_t{1} << lg;
    for (size_t size : {kPage, 3 * kPage, 64 * kPage}) {
      bool commit = true;
      void* p = pages::map(nullptr, size, alignment, &commit);
      ASSERT_NE(p, nullptr) << "alignment 2^" << lg << " size " << size;
      EXPECT_EQ(addr_of(p) % alignment, 0u) << "alignment 2^" << lg;
      EXPECT_TRUE(commit);
      EXPECT_TRUE(all_zero(p, size));
      memset(p, 0x5a, size);  // writable over the whole range
      pages::unmap(p, size);
      EXPECT_EQ(pages::resident_bytes(p, size), 0u);
    }
  }
}

TEST_F(PagesTest, MapRejectsBadArguments) {
  bool commit = true;
  EXPECT_EQ(pages::map(nullptr, 0, kPage, &commit), nullptr);
  EXPECT_EQ(pages::map(nullptr, kPage + 1, kPage, &commit), nullptr);
  EXPECT_EQ(pages::map(nullptr, kPage, 3 * kPage, &commit), nullptr);
  EXPECT_EQ(pages::map(nullptr, kPage, kPage / 2, &commit), nullptr);
  // Overflowing size + alignment.
  EXPECT_EQ(pages::map(nullptr, SIZE_MAX - kPage + 1, size_t{1} << 40, &commit), nullptr);
}

TEST_F(PagesTest, MapPreservesErrno) {
  errno = 1234;
  bool commit = true;
  void* p = pages::map(nullptr, kPage, size_t{1} << 21, &commit);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(pages::map(p, kPage, kPage, &commit), nullptr);  // fails with EEXIST inside
  pages::unmap(p, kPage);
  EXPECT_EQ(errno, 1234);
}

TEST_F(PagesTest, FixedAddressMapping) {
  // Reserve a hole, free it, then ask for exactly that address.
  const size_t size = 16 * kPage;
  bool commit = true;
  void* hole = pages::map(nullptr, size, size_t{1} << 21, &commit);
  ASSERT_NE(hole, nullptr);
  pages::unmap(hole, size);

  commit = true;
  void* p = pages::map(hole, size, kPage, &commit);
  ASSERT_EQ(p, hole);
  EXPECT_TRUE(all_zero(p, size));
  memset(p, 1, size);

  // The range is taken now: the same request (or one overlapping it) must fail, not clobber it.
  commit = true;
  EXPECT_EQ(pages::map(hole, size, kPage, &commit), nullptr);
  EXPECT_EQ(pages::map(static_cast<char*>(hole) + 4 * kPage, kPage, kPage, &commit), nullptr);
  EXPECT_EQ(static_cast<unsigned char*>(p)[0], 1);
  EXPECT_EQ(static_cast<unsigned char*>(p)[size - 1], 1);

  // A fixed address that is not aligned as asked is refused.
  EXPECT_EQ(pages::map(static_cast<char*>(hole) + kPage, kPage, 2 * kPage, &commit), nullptr);
  pages::unmap(p, size);
}

TEST_F(PagesTest, PurgeForcedDropsResidency) {
  const size_t size = 64 * kPage;
  bool commit = true;
  void* p = pages::map(nullptr, size, kPage, &commit);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(pages::resident_bytes(p, size), 0u);
  memset(p, 0x77, size);
  EXPECT_EQ(pages::resident_bytes(p, size), size);
  ASSERT_TRUE(pages::purge_forced(p, size));
  EXPECT_EQ(pages::resident_bytes(p, size), 0u);
  EXPECT_TRUE(all_zero(p, size));
  // Partial purge: only the middle goes.
  memset(p, 0x77, size);
  ASSERT_TRUE(pages::purge_forced(static_cast<char*>(p) + 16 * kPage, 32 * kPage));
  EXPECT_EQ(pages::resident_bytes(p, size), 32 * kPage);
  pages::unmap(p, size);
}

TEST_F(PagesTest, PurgeLazyKeepsDataReadable) {
  const size_t size = 16 * kPage;
  bool commit = true;
  void* p = pages::map(nullptr, size, kPage, &commit);
  ASSERT_NE(p, nullptr);
  memset(p, 0x3c, size);
  // MADV_FREE exists since Linux 4.5; this kernel is newer.
  EXPECT_TRUE(pages::purge_lazy(p, size));
  // Without memory pressure the kernel has not reclaimed anything yet, and either way every byte
  // reads as the old value or zero, never as a fault.
  const unsigned char* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < size; i++) ASSERT_TRUE(b[i] == 0x3c || b[i] == 0) << i;
  // Writing again cancels the lazy free for that page.
  memset(p, 0x11, size);
  for (size_t i = 0; i < size; i++) ASSERT_EQ(b[i], 0x11);
  pages::unmap(p, size);
}

TEST_F(PagesTest, CommitDecommitFollowOvercommit) {
  const size_t size = 8 * kPage;
  const bool overcommits = pages::os_overcommits();
  bool commit = false;
  void* p = pages::map(nullptr, size, kPage, &commit);
  ASSERT_NE(p, nullptr);
  if (overcommits) {
    // Always committed; commit/decommit refuse and leave the contents alone.
    EXPECT_TRUE(commit);
    memset(p, 9, size);
    EXPECT_FALSE(pages::decommit(p, size));
    EXPECT_FALSE(pages::commit(p, size));
    EXPECT_EQ(static_cast<unsigned char*>(p)[size - 1], 9);
  } else {
    EXPECT_FALSE(commit);
    EXPECT_TRUE(pages::commit(p, size));
    memset(p, 9, size);
    EXPECT_TRUE(pages::decommit(p, size));
    EXPECT_TRUE(pages::commit(p, size));
    EXPECT_TRUE(all_zero(p, size));
  }
  pages::unmap(p, size);
}

TEST_F(PagesTest, DecommitPathWithoutOvercommit) {
  // Exercise the strict-accounting path regardless of this machine's setting.
  const bool saved = pages::os_overcommits();
  pages::set_os_overcommits_for_testing(false);
  const size_t size = 8 * kPage;
  bool commit = false;
  void* p = pages::map(nullptr, size, size_t{1} << 16, &commit);
  ASSERT_NE(p, nullptr);
  EXPECT_FALSE(commit);
  EXPECT_EQ(addr_of(p) % (size_t{1} << 16), 0u);
  // PROT_NONE until committed: mincore still works, and nothing is resident.
  EXPECT_EQ(pages::resident_bytes(p, size), 0u);
  ASSERT_TRUE(pages::commit(p, size));
  memset(p, 0x42, size);
  EXPECT_EQ(pages::resident_bytes(p, size), size);
  ASSERT_TRUE(pages::decommit(p, size));
  EXPECT_EQ(pages::resident_bytes(p, size), 0u);
  ASSERT_TRUE(pages::commit(p, size));
  EXPECT_TRUE(all_zero(p, size));
  pages::unmap(p, size);

  commit = true;
  p = pages::map(nullptr, size, kPage, &commit);
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(commit);
  memset(p, 1, size);
  pages::unmap(p, size);
  pages::set_os_overcommits_for_testing(saved);
}

TEST_F(PagesTest, AdviceCalls) {
  const size_t hp = config::kHugepage;
  bool commit = true;
  void* p = pages::map(nullptr, 2 * hp, hp, &commit);
  ASSERT_NE(p, nullptr);
  if (pages::system_thp_mode() != pages::ThpMode::kNotSupported) {
    EXPECT_TRUE(pages::huge(p, 2 * hp));
    EXPECT_TRUE(pages::nohuge(p, 2 * hp));
  } else {
    EXPECT_FALSE(pages::huge(p, 2 * hp));
  }
  pages::unmap(p, 2 * hp);
}

TEST_F(PagesTest, ResidentBytesOfPartlyUnmappedRange) {
  const size_t size = 4 * kPage;
  bool commit = true;
  void* p = pages::map(nullptr, size, kPage, &commit);
  ASSERT_NE(p, nullptr);
  memset(p, 1, size);
  pages::unmap(static_cast<char*>(p) + kPage, kPage);
  EXPECT_EQ(pages::resident_bytes(p, size), 3 * kPage);
  // Unaligned arguments count the pages they touch.
  EXPECT_EQ(pages::resident_bytes(static_cast<char*>(p) + 10, 1), kPage);
  pages::unmap(p, size);
}

}  // namespace
}  // namespace je
