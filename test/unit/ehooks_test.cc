// ehooks_test.cc: the extent-hook wrapper -- our default hooks on real memory (aligned zeroed
// mappings, placement at a requested address, unmapping, forced purge zeroing exactly the asked
// range, lazy purge keeping memory usable, commit/decommit both where the OS overcommits and on
// the strict-accounting path, split/merge, zero()), and user hook tables: every operation reaches
// the user's function with the caller's arguments, the table itself and the arena index, inside
// a reentrant section; the public "true = failure" convention is translated; missing members
// mean "not supported"; hooks can be swapped at run time.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "extent/ehooks.h"
#include "os/pages.h"
#include "support/reentrancy.h"
#include "support/util.h"

namespace je {
namespace {

constexpr size_t kPg = config::kPage;
constexpr unsigned kInd = 42;

extent_hooks_t* default_hooks() { return const_cast<extent_hooks_t*>(&kDefaultExtentHooks); }

bool all_bytes(const void* p, size_t n, unsigned char v) {
  const unsigned char* c = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; i++) {
    if (c[i] != v) return false;
  }
  return true;
}

/// Whether [p, p + size) is free address space: a placed mapping there succeeds (and is undone).
bool range_is_free(void* p, size_t size) {
  bool commit = true;
  void* q = pages::map(p, size, kPg, &commit);
  if (q != nullptr) pages::unmap(q, size);
  return q == p;
}

// ---- default hooks ----------------------------------------------------------------------

class DefaultHooks : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ASSERT_TRUE(pages::boot()); }
  void SetUp() override { hooks.init(kInd, default_hooks()); }

  /// `npages` committed pages from the default alloc hook, filled with `fill`.
  char* mapped(size_t npages, unsigned char fill) {
    bool zero = false, commit = true;
    char* p = static_cast<char*>(hooks.alloc(nullptr, npages * kPg, kPg, &zero, &commit));
    EXPECT_NE(p, nullptr);
    if (p != nullptr) std::memset(p, fill, npages * kPg);
    return p;
  }

  Ehooks hooks;
};

TEST_F(DefaultHooks, InstalledHooksCanBeExchanged) {
  EXPECT_TRUE(hooks.is_default());
  EXPECT_EQ(hooks.get(), &kDefaultExtentHooks);
  EXPECT_EQ(hooks.ind(), kInd);
  extent_hooks_t copy = kDefaultExtentHooks;
  EXPECT_EQ(hooks.exchange(&copy), &kDefaultExtentHooks);
  EXPECT_FALSE(hooks.is_default()) << "a copy of the defaults is a user table";
  EXPECT_EQ(hooks.get(), &copy);
  EXPECT_EQ(hooks.exchange(default_hooks()), &copy);
  EXPECT_TRUE(hooks.is_default());
}

TEST_F(DefaultHooks, AllocMapsZeroedAlignedCommittedMemory) {
  for (size_t align : {size_t{64}, kPg, size_t{1} << 16, config::kHugepage}) {
    bool zero = false, commit = true;
    const size_t size = 5 * kPg;
    void* p = hooks.alloc(nullptr, size, align, &zero, &commit);
    ASSERT_NE(p, nullptr) << "alignment " << align;
    EXPECT_EQ(addr_of(p) % std::max(align, kPg), 0u) << "alignment " << align;
    EXPECT_TRUE(zero) << "fresh mapping not reported zeroed";
    EXPECT_TRUE(commit);
    EXPECT_TRUE(all_bytes(p, size, 0));
    std::memset(p, 0x5a, size);  // writable
    EXPECT_TRUE(hooks.dalloc(p, size, true));
    EXPECT_TRUE(range_is_free(p, size)) << "dalloc left the range mapped";
  }
}

TEST_F(DefaultHooks, AllocAtAnAddressIsExactOrFails) {
  char* p = mapped(4, 1);
  ASSERT_NE(p, nullptr);
  bool zero = false, commit = true;
  EXPECT_EQ(hooks.alloc(p, 4 * kPg, kPg, &zero, &commit), nullptr) << "mapped over a live range";
  EXPECT_TRUE(all_bytes(p, 4 * kPg, 1)) << "a refused placement changed the memory";
  // Free the upper half, then ask for exactly it.
  EXPECT_TRUE(hooks.dalloc(p + 2 * kPg, 2 * kPg, true));
  zero = false;
  EXPECT_EQ(hooks.alloc(p + 2 * kPg, 2 * kPg, kPg, &zero, &commit), p + 2 * kPg);
  EXPECT_TRUE(zero);
  EXPECT_TRUE(all_bytes(p + 2 * kPg, 2 * kPg, 0));
  hooks.destroy(p, 4 * kPg, true);
  EXPECT_TRUE(range_is_free(p, 4 * kPg)) << "destroy left the range mapped";
}

TEST_F(DefaultHooks, ForcedPurgeZeroesExactlyTheRange) {
  char* p = mapped(8, 0xab);
  ASSERT_NE(p, nullptr);
  const bool ok = hooks.purge_forced(p, 8 * kPg, 2 * kPg, 3 * kPg);
  EXPECT_EQ(ok, pages::purge_forced_zeroes()) << "success must mean 'reads as zeros'";
  if (ok) {
    // Residency first: reading the pages back maps them again.
    EXPECT_EQ(pages::resident_bytes(p + 2 * kPg, 3 * kPg), 0u) << "purged pages still resident";
    EXPECT_TRUE(all_bytes(p + 2 * kPg, 3 * kPg, 0)) << "purged pages not zero";
  }
  EXPECT_TRUE(all_bytes(p, 2 * kPg, 0xab)) << "pages before the range were purged";
  EXPECT_TRUE(all_bytes(p + 5 * kPg, 3 * kPg, 0xab)) << "pages after the range were purged";
  EXPECT_TRUE(hooks.dalloc(p, 8 * kPg, true));
}

TEST_F(DefaultHooks, LazyPurgeLeavesTheRestAndTheRangeUsable) {
  char* p = mapped(6, 0x77);
  ASSERT_NE(p, nullptr);
  // Whether MADV_FREE is available is the kernel's business; either way nothing outside the
  // range changes and the range stays mapped and writable.
  hooks.purge_lazy(p, 6 * kPg, kPg, 2 * kPg);
  EXPECT_TRUE(all_bytes(p, kPg, 0x77));
  EXPECT_TRUE(all_bytes(p + 3 * kPg, 3 * kPg, 0x77));
  std::memset(p + kPg, 0x11, 2 * kPg);
  EXPECT_TRUE(all_bytes(p + kPg, 2 * kPg, 0x11));
  EXPECT_TRUE(hooks.dalloc(p, 6 * kPg, true));
}

TEST_F(DefaultHooks, CommitAndDecommitFollowTheOvercommitMode) {
  const bool saved = pages::os_overcommits();
  if (saved) {
    // Overcommitting systems: not supported, memory untouched (callers purge instead).
    char* p = mapped(2, 0x33);
    ASSERT_NE(p, nullptr);
    EXPECT_FALSE(hooks.decommit(p, 2 * kPg, 0, 2 * kPg));
    EXPECT_FALSE(hooks.commit(p, 2 * kPg, 0, 2 * kPg));
    EXPECT_TRUE(all_bytes(p, 2 * kPg, 0x33));
    EXPECT_TRUE(hooks.dalloc(p, 2 * kPg, true));
  }
  // The strict-accounting path, whatever this machine does.
  pages::set_os_overcommits_for_testing(false);
  bool zero = false, commit = false;
  const size_t size = 6 * kPg;
  char* p = static_cast<char*>(hooks.alloc(nullptr, size, kPg, &zero, &commit));
  ASSERT_NE(p, nullptr);
  EXPECT_FALSE(commit) << "asked for an uncommitted range";
  EXPECT_TRUE(hooks.commit(p, size, 0, size));
  std::memset(p, 0x44, size);
  EXPECT_TRUE(hooks.decommit(p, size, 2 * kPg, 2 * kPg));
  EXPECT_EQ(pages::resident_bytes(p + 2 * kPg, 2 * kPg), 0u);
  EXPECT_TRUE(hooks.commit(p, size, 2 * kPg, 2 * kPg));
  EXPECT_TRUE(all_bytes(p + 2 * kPg, 2 * kPg, 0)) << "recommitted pages not zero";
  EXPECT_TRUE(all_bytes(p, 2 * kPg, 0x44));
  EXPECT_TRUE(all_bytes(p + 4 * kPg, 2 * kPg, 0x44));
  EXPECT_TRUE(hooks.dalloc(p, size, true));
  pages::set_os_overcommits_for_testing(saved);
}

TEST_F(DefaultHooks, SplitAndMergeAreAlwaysSupported) {
  EXPECT_FALSE(hooks.split_will_fail());
  EXPECT_FALSE(hooks.merge_will_fail());
  char* p = mapped(4, 0x21);
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(hooks.split(p, 4 * kPg, kPg, 3 * kPg, true));
  EXPECT_TRUE(hooks.merge(p, kPg, p + kPg, 3 * kPg, true));
  EXPECT_TRUE(all_bytes(p, 4 * kPg, 0x21)) << "split/merge touched the memory";
  // After a split the pieces are independent mappings to the caller.
  EXPECT_TRUE(hooks.split(p, 4 * kPg, kPg, 3 * kPg, true));
  EXPECT_TRUE(hooks.dalloc(p, kPg, true));
  EXPECT_TRUE(all_bytes(p + kPg, 3 * kPg, 0x21));
  EXPECT_TRUE(hooks.dalloc(p + kPg, 3 * kPg, true));
}

TEST_F(DefaultHooks, ZeroClearsExactlyTheRange) {
  char* p = mapped(5, 0x99);
  ASSERT_NE(p, nullptr);
  hooks.zero(p + kPg, 3 * kPg);
  EXPECT_TRUE(all_bytes(p + kPg, 3 * kPg, 0));
  EXPECT_TRUE(all_bytes(p, kPg, 0x99));
  EXPECT_TRUE(all_bytes(p + 4 * kPg, kPg, 0x99));
  EXPECT_TRUE(hooks.dalloc(p, 5 * kPg, true));
}

TEST_F(DefaultHooks, DallocDeclinesOnlyWhenRetaining) {
  EXPECT_TRUE(hooks.dalloc_will_fail(/*retain=*/true));
  EXPECT_FALSE(hooks.dalloc_will_fail(/*retain=*/false));
}

// ---- user hooks ---------------------------------------------------------------------------

/// One call as a user hook saw it.
struct Call {
  const char* op = "";
  extent_hooks_t* self = nullptr;
  void* addr = nullptr;
  size_t size = 0;
  size_t x = 0;  // alignment / offset / size_a / size_b's partner (see each hook)
  size_t y = 0;  // length / size_b
  void* addr_b = nullptr;
  bool committed = false;
  unsigned ind = 0;
  bool reentrant = false;
};

std::vector<Call> g_calls;
bool g_fail = false;  // what the bool hooks answer (public convention: true = failure)
alignas(4096) char g_arena_mem[8 * 4096];

Call& record(const char* op, extent_hooks_t* self, void* addr, size_t size, unsigned ind) {
  g_calls.push_back(Call{op, self, addr, size, 0, 0, nullptr, false, ind, in_reentrant_call()});
  return g_calls.back();
}

void* rec_alloc(extent_hooks_t* h, void* new_addr, size_t size, size_t align, bool* zero,
                bool* commit, unsigned ind) {
  record("alloc", h, new_addr, size, ind).x = align;
  *zero = false;
  *commit = true;
  return g_fail ? nullptr : g_arena_mem;
}
bool rec_dalloc(extent_hooks_t* h, void* addr, size_t size, bool committed, unsigned ind) {
  record("dalloc", h, addr, size, ind).committed = committed;
  return g_fail;
}
void rec_destroy(extent_hooks_t* h, void* addr, size_t size, bool committed, unsigned ind) {
  record("destroy", h, addr, size, ind).committed = committed;
}
template <const char* kOp>
bool rec_range(extent_hooks_t* h, void* addr, size_t size, size_t off, size_t len, unsigned ind) {
  Call& c = record(kOp, h, addr, size, ind);
  c.x = off;
  c.y = len;
  return g_fail;
}
constexpr char kCommit[] = "commit", kDecommit[] = "decommit", kLazy[] = "purge_lazy",
               kForced[] = "purge_forced";
bool rec_split(extent_hooks_t* h, void* addr, size_t size, size_t a, size_t b, bool committed,
               unsigned ind) {
  Call& c = record("split", h, addr, size, ind);
  c.x = a;
  c.y = b;
  c.committed = committed;
  return g_fail;
}
bool rec_merge(extent_hooks_t* h, void* addr_a, size_t size_a, void* addr_b, size_t size_b,
               bool committed, unsigned ind) {
  Call& c = record("merge", h, addr_a, size_a, ind);
  c.addr_b = addr_b;
  c.y = size_b;
  c.committed = committed;
  return g_fail;
}

extent_hooks_t g_recording = {
    rec_alloc,        rec_dalloc,         rec_destroy, rec_range<kCommit>, rec_range<kDecommit>,
    rec_range<kLazy>, rec_range<kForced>, rec_split,   rec_merge};

class UserHooks : public ::testing::Test {
 protected:
  void SetUp() override {
    g_calls.clear();
    g_fail = false;
    hooks.init(kInd, &g_recording);
  }
  /// The one call made since the last check, with the common fields verified.
  Call only_call(const char* op) {
    EXPECT_EQ(g_calls.size(), 1u) << op;
    Call c = g_calls.empty() ? Call{} : g_calls.back();
    EXPECT_STREQ(c.op, op);
    EXPECT_EQ(c.self, &g_recording) << op << ": hook not given its own table";
    EXPECT_EQ(c.ind, kInd) << op << ": wrong arena index";
    EXPECT_TRUE(c.reentrant) << op << ": user hook not run as a reentrant call";
    EXPECT_FALSE(in_reentrant_call()) << op << ": reentrancy not restored";
    g_calls.clear();
    return c;
  }

  /// Calls every operation that reports a result; the names of those reporting success.
  std::vector<std::string> succeeded() {
    std::vector<std::string> ok;
    if (hooks.dalloc(a, kPg, true)) ok.push_back("dalloc");
    if (hooks.commit(a, kPg, 0, kPg)) ok.push_back(kCommit);
    if (hooks.decommit(a, kPg, 0, kPg)) ok.push_back(kDecommit);
    if (hooks.purge_lazy(a, kPg, 0, kPg)) ok.push_back(kLazy);
    if (hooks.purge_forced(a, kPg, 0, kPg)) ok.push_back(kForced);
    if (hooks.split(a, 2 * kPg, kPg, kPg, true)) ok.push_back("split");
    if (hooks.merge(a, kPg, a + kPg, kPg, true)) ok.push_back("merge");
    return ok;
  }

  Ehooks hooks;
  char* const a = g_arena_mem;
};

TEST_F(UserHooks, AllocGetsItsArgumentsAndReportsTheHooksFlags) {
  bool zero = true, commit = false;
  EXPECT_EQ(hooks.alloc(a + kPg, 3 * kPg, 2 * kPg, &zero, &commit), a);
  Call c = only_call("alloc");
  EXPECT_EQ(c.addr, a + kPg);
  EXPECT_EQ(c.size, 3 * kPg);
  EXPECT_EQ(c.x, 2 * kPg);
  EXPECT_FALSE(zero) << "the hook's *zero was not passed back";
  EXPECT_TRUE(commit) << "the hook's *commit was not passed back";
  g_fail = true;
  EXPECT_EQ(hooks.alloc(nullptr, kPg, kPg, &zero, &commit), nullptr);
  only_call("alloc");
}

TEST_F(UserHooks, RangeOperationsGetOffsetAndLength) {
  using Op = bool (Ehooks::*)(void*, size_t, size_t, size_t);
  const std::pair<Op, const char*> ops[] = {{&Ehooks::commit, kCommit},
                                            {&Ehooks::decommit, kDecommit},
                                            {&Ehooks::purge_lazy, kLazy},
                                            {&Ehooks::purge_forced, kForced}};
  for (auto [op, name] : ops) {
    EXPECT_TRUE((hooks.*op)(a, 8 * kPg, 3 * kPg, 2 * kPg)) << name;
    Call c = only_call(name);
    EXPECT_EQ(c.addr, a) << name;
    EXPECT_EQ(c.size, 8 * kPg) << name;
    EXPECT_EQ(c.x, 3 * kPg) << name << ": offset";
    EXPECT_EQ(c.y, 2 * kPg) << name << ": length";
  }
}

TEST_F(UserHooks, DallocDestroySplitMergeGetTheirArguments) {
  EXPECT_TRUE(hooks.dalloc(a, 2 * kPg, false));
  Call c = only_call("dalloc");
  EXPECT_EQ(c.addr, a);
  EXPECT_EQ(c.size, 2 * kPg);
  EXPECT_FALSE(c.committed);

  hooks.destroy(a + kPg, kPg, true);
  c = only_call("destroy");
  EXPECT_EQ(c.addr, a + kPg);
  EXPECT_TRUE(c.committed);

  EXPECT_TRUE(hooks.split(a, 5 * kPg, 2 * kPg, 3 * kPg, true));
  c = only_call("split");
  EXPECT_EQ(c.size, 5 * kPg);
  EXPECT_EQ(c.x, 2 * kPg) << "size_a";
  EXPECT_EQ(c.y, 3 * kPg) << "size_b";
  EXPECT_TRUE(c.committed);

  EXPECT_TRUE(hooks.merge(a, 2 * kPg, a + 2 * kPg, 4 * kPg, false));
  c = only_call("merge");
  EXPECT_EQ(c.addr, a);
  EXPECT_EQ(c.size, 2 * kPg);
  EXPECT_EQ(c.addr_b, a + 2 * kPg);
  EXPECT_EQ(c.y, 4 * kPg);
  EXPECT_FALSE(c.committed);
}

TEST_F(UserHooks, PublicFailureMeansOurFalse) {
  g_fail = true;
  EXPECT_EQ(succeeded(), std::vector<std::string>{}) << "these reported success";
  EXPECT_EQ(g_calls.size(), 7u) << "a declining hook was not called";
  // A table with a dalloc member may still decline at run time; only a missing one is certain.
  EXPECT_FALSE(hooks.dalloc_will_fail(true));
  EXPECT_FALSE(hooks.dalloc_will_fail(false));
  EXPECT_FALSE(hooks.split_will_fail());
  EXPECT_FALSE(hooks.merge_will_fail());
}

TEST_F(UserHooks, MissingMembersAreUnsupported) {
  extent_hooks_t sparse = {};
  sparse.alloc = rec_alloc;
  hooks.exchange(&sparse);
  EXPECT_EQ(succeeded(), std::vector<std::string>{}) << "these reported success";
  hooks.destroy(a, kPg, true);
  EXPECT_TRUE(hooks.dalloc_will_fail(false));
  EXPECT_TRUE(hooks.split_will_fail());
  EXPECT_TRUE(hooks.merge_will_fail());
  EXPECT_TRUE(g_calls.empty());
  EXPECT_FALSE(in_reentrant_call());
}

TEST_F(UserHooks, SwappedHooksTakeEffectOnTheNextCall) {
  extent_hooks_t other = g_recording;
  EXPECT_EQ(hooks.exchange(&other), &g_recording);
  EXPECT_TRUE(hooks.split(a, 2 * kPg, kPg, kPg, true));
  ASSERT_EQ(g_calls.size(), 1u);
  EXPECT_EQ(g_calls[0].self, &other) << "the old table was called after the swap";
}

TEST_F(UserHooks, ZeroWritesZerosWithoutCallingTheHooks) {
  std::memset(a, 0x66, 4 * kPg);
  hooks.zero(a + kPg, 2 * kPg);
  EXPECT_TRUE(all_bytes(a + kPg, 2 * kPg, 0));
  EXPECT_TRUE(all_bytes(a, kPg, 0x66));
  EXPECT_TRUE(all_bytes(a + 3 * kPg, kPg, 0x66));
  EXPECT_TRUE(g_calls.empty()) << "zero() purged through user hooks";
}

}  // namespace
}  // namespace je
