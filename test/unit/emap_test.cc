// emap_test.cc: the extent map's contract on a private Emap -- packed entries round-trip every
// field; registering maps exactly the first and last page (invariants 1 and 3), slabs map every
// page (invariant 2) and deregistering clears what was written; remap and update_state keep the
// entries equal to the descriptor (invariant 4); neighbour claiming for coalescing (state, head
// boundaries, arena, commit state, the bottom of the address space) and release; split and
// merge bookkeeping; and registration that cannot complete writing nothing.
//
// Descriptors are plain Edata objects over made-up addresses: the map reads only address bits
// and the descriptors, never the memory they describe.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "extent/emap.h"
#include "meta/base.h"
#include "os/pages.h"

namespace je {
namespace {

constexpr uintptr_t kPg = config::kPage;
constexpr uintptr_t kVaddrEnd = uintptr_t{1} << config::kLgVaddr;
constexpr uintptr_t kRegion = uintptr_t{0x3c} << 30;  // one leaf's worth of room from here
constexpr unsigned kArena = 7;

class EmapTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_TRUE(pages::boot());
    ASSERT_NE(base_global(), nullptr);
  }

  std::unique_ptr<Emap> map = std::make_unique<Emap>();
  std::vector<std::unique_ptr<Edata>> owned;

  /// A descriptor of `npages` pages at kRegion + page_index pages (not registered).
  Edata* desc(uintptr_t page_index, size_t npages, ExtentState st = ExtentState::kDirty,
              bool head = false) {
    owned.push_back(std::make_unique<Edata>());
    Edata* e = owned.back().get();
    e->init(kArena, ptr_of(kRegion + page_index * kPg), npages * kPg, /*is_slab=*/false,
            sc::kNSizes, /*serial=*/owned.size(), st, /*is_zeroed=*/false,
            /*is_committed=*/true, head);
    return e;
  }
  /// The same, registered (boundary pages).
  Edata* reg(uintptr_t page_index, size_t npages, ExtentState st = ExtentState::kDirty,
             bool head = false) {
    Edata* e = desc(page_index, npages, st, head);
    EXPECT_TRUE(map->register_boundary(e));
    return e;
  }

  /// Splits registered `e` into a lead of `pages_a` pages and a new trail, in extent.cc's
  /// order (prepare, resize the lead, commit).
  Edata* split(Edata* e, size_t pages_a) {
    const size_t pages_b = e->npages() - pages_a;
    Edata* trail = desc((e->base_addr() - kRegion) / kPg + pages_a, pages_b, e->state);
    Emap::SplitPlan plan;
    EXPECT_TRUE(map->split_prepare(&plan, e, pages_a * kPg, trail, pages_b * kPg));
    e->size = pages_a * kPg;
    map->split_commit(plan, e, trail);
    return trail;
  }

  Edata* at(uintptr_t addr) { return map->lookup(ptr_of(addr)); }
  Edata* page(uintptr_t page_index) { return at(kRegion + page_index * kPg); }

  /// Invariants 1-4 for a registered `e`: its first and last page (any byte) map to it with
  /// entries equal to its fields; interior pages map to it iff `interior`; the pages just
  /// outside map to `before` / `after`.
  void expect_mapped(const Edata* e, bool interior, const Edata* before = nullptr,
                     const Edata* after = nullptr) {
    const uintptr_t first = e->base_addr(), last = e->last_page_addr();
    for (uintptr_t a : {first, first + kPg - 1, last, last + kPg / 2}) {
      EmapEntry en = map->lookup_entry(ptr_of(a));
      EXPECT_EQ(en.edata, e) << "page at +" << (a - first) / kPg << " of the extent";
      EXPECT_EQ(en.szind, e->szind);
      EXPECT_EQ(en.state, e->state);
      EXPECT_EQ(en.is_head, e->is_head);
      EXPECT_EQ(en.slab, e->slab);
    }
    for (uintptr_t a = first + kPg; a < last; a += kPg) {
      EXPECT_EQ(at(a), interior ? e : nullptr) << "interior page +" << (a - first) / kPg;
    }
    EXPECT_EQ(at(first - kPg), before) << "page before the extent";
    EXPECT_EQ(at(e->past_addr()), after) << "page past the extent";
  }
  void expect_unmapped(uintptr_t from, uintptr_t to) {
    for (uintptr_t a = from; a < to; a += kPg) EXPECT_EQ(at(a), nullptr) << std::hex << a;
  }
};

// ---- packing ----------------------------------------------------------------------------

TEST_F(EmapTest, PackedEntriesRoundTripEveryField) {
  Edata e;
  const ExtentState states[] = {ExtentState::kActive,     ExtentState::kDirty,
                                ExtentState::kMuzzy,      ExtentState::kRetained,
                                ExtentState::kTransition, ExtentState::kMerging};
  const uintptr_t addrs[] = {kPg, kRegion, kVaddrEnd - kPg};
  for (uintptr_t a : addrs) {
    for (szind_t sz :
         {szind_t{0}, szind_t{sc::kNBins - 1}, szind_t{sc::kNSizes - 1}, szind_t{sc::kNSizes}}) {
      for (ExtentState st : states) {
        for (int bits = 0; bits < 4; bits++) {
          e.init(kArena, ptr_of(a), kPg, bits & 1, sz, 0, st, false, true, bits & 2);
          EmapEntry u = Emap::unpack(Emap::pack(&e));
          SCOPED_TRACE(testing::Message()
                       << std::hex << a << std::dec << " szind " << sz << " state "
                       << extent_state_name(st) << " bits " << bits);
          EXPECT_EQ(u.edata, &e);
          EXPECT_EQ(u.szind, sz);
          EXPECT_EQ(u.state, st);
          EXPECT_EQ(u.slab, (bits & 1) != 0);
          EXPECT_EQ(u.is_head, (bits & 2) != 0);
        }
      }
    }
  }
  EXPECT_EQ(Emap::unpack(0).edata, nullptr);
}

// ---- register / deregister ----------------------------------------------------------------

TEST_F(EmapTest, UnmappedPagesLookUpAsNothing) {
  expect_unmapped(kRegion, kRegion + 16 * kPg);
  EXPECT_EQ(map->lookup_entry(ptr_of(kRegion)).edata, nullptr);
}

TEST_F(EmapTest, RegisterBoundaryMapsOnlyFirstAndLastPage) {
  Edata* e = reg(10, 5, ExtentState::kDirty, /*head=*/true);
  expect_mapped(e, /*interior=*/false);
  map->deregister_boundary(e);
  expect_unmapped(kRegion + 9 * kPg, kRegion + 16 * kPg);
}

TEST_F(EmapTest, OnePageExtentMapsItsPage) {
  Edata* e = reg(3, 1);
  expect_mapped(e, false);
  map->deregister_boundary(e);
  EXPECT_EQ(page(3), nullptr);
}

TEST_F(EmapTest, OffsetAddressMapsByItsPages) {
  // An active large extent's addr carries the cache-oblivious offset; its pages are what count.
  Edata* e = desc(20, 3, ExtentState::kActive);
  e->addr = ptr_of(kRegion + 20 * kPg + 0x1c0);
  ASSERT_TRUE(map->register_boundary(e));
  EXPECT_EQ(page(20), e);
  EXPECT_EQ(page(22), e);
  EXPECT_EQ(page(23), nullptr);
  EXPECT_EQ(map->lookup(e->addr), e);
}

TEST_F(EmapTest, SlabMapsEveryPageAndDeregistersInTwoSteps) {
  Edata* e = reg(30, 6, ExtentState::kActive);
  map->remap(e, /*szind=*/4, /*slab=*/true);
  ASSERT_TRUE(map->register_interior(e));
  expect_mapped(e, /*interior=*/true);
  // Interior entries carry the size class and slab bit too (free() of an interior pointer).
  for (uintptr_t i = 31; i < 35; i++) {
    EmapEntry en = map->lookup_entry(ptr_of(kRegion + i * kPg + 8));
    EXPECT_EQ(en.szind, 4u) << "page " << i;
    EXPECT_TRUE(en.slab) << "page " << i;
  }
  map->deregister_interior(e);
  expect_mapped(e, /*interior=*/false);
  map->deregister_boundary(e);
  expect_unmapped(kRegion + 30 * kPg, kRegion + 36 * kPg);
}

TEST_F(EmapTest, AdjacentExtentsKeepTheirOwnPages) {
  Edata* a = reg(40, 2);
  Edata* b = reg(42, 3);
  Edata* c = reg(45, 1);
  expect_mapped(a, false, nullptr, b);
  expect_mapped(b, false, a, c);
  expect_mapped(c, false, b, nullptr);
  map->deregister_boundary(b);
  expect_mapped(a, false, nullptr, nullptr);
  expect_mapped(c, false, nullptr, nullptr);
}

// ---- remap / update_state ---------------------------------------------------------------

TEST_F(EmapTest, RemapSetsSizeClassAndSlabBitOnBothEnds) {
  Edata* e = reg(50, 4, ExtentState::kActive);
  map->remap(e, sc::kNBins + 3, false);
  EXPECT_EQ(e->szind, sc::kNBins + 3);
  EXPECT_FALSE(e->slab);
  expect_mapped(e, false);
  map->remap(e, 2, true);
  EXPECT_EQ(e->szind, 2u);
  EXPECT_TRUE(e->slab);
  expect_mapped(e, false);
}

TEST_F(EmapTest, UpdateStateKeepsEntriesEqualToTheDescriptor) {
  Edata* big = reg(60, 3, ExtentState::kActive);
  Edata* one = reg(64, 1, ExtentState::kActive);
  for (ExtentState st : {ExtentState::kDirty, ExtentState::kMuzzy, ExtentState::kRetained,
                         ExtentState::kTransition, ExtentState::kActive}) {
    map->update_state(big, st);
    map->update_state(one, st);
    EXPECT_EQ(big->state, st);
    EXPECT_EQ(one->state, st);
    expect_mapped(big, false);
    expect_mapped(one, false);
  }
}

// ---- neighbours -------------------------------------------------------------------------

TEST_F(EmapTest, ForwardNeighbourIsClaimedAndReleased) {
  Edata* e = reg(70, 2);
  Edata* nb = reg(72, 3);
  EXPECT_EQ(map->try_acquire_neighbor(e, ExtentState::kDirty, /*forward=*/true, false), nb);
  EXPECT_EQ(nb->state, ExtentState::kMerging);
  expect_mapped(nb, false, e);  // both ends of the neighbour show kMerging
  // A claimed neighbour cannot be claimed again.
  EXPECT_EQ(map->try_acquire_neighbor(e, ExtentState::kDirty, true, false), nullptr);
  map->release(nb, ExtentState::kDirty);
  EXPECT_EQ(nb->state, ExtentState::kDirty);
  expect_mapped(nb, false, e);
  EXPECT_EQ(e->state, ExtentState::kDirty) << "the claimer's own state changed";
}

TEST_F(EmapTest, BackwardNeighbourIsFoundByItsLastPage) {
  Edata* nb = reg(80, 4, ExtentState::kMuzzy);
  Edata* e = reg(84, 1, ExtentState::kMuzzy);
  EXPECT_EQ(map->try_acquire_neighbor(e, ExtentState::kMuzzy, /*forward=*/false, false), nb);
  EXPECT_EQ(nb->state, ExtentState::kMerging);
  expect_mapped(nb, false, nullptr, e);
}

TEST_F(EmapTest, NeighbourInAnotherStateOrAbsentIsNotClaimed) {
  Edata* e = reg(90, 2);
  Edata* active = reg(92, 1, ExtentState::kActive);
  EXPECT_EQ(map->try_acquire_neighbor(e, ExtentState::kDirty, true, false), nullptr);
  EXPECT_EQ(active->state, ExtentState::kActive);
  EXPECT_EQ(map->try_acquire_neighbor(e, ExtentState::kDirty, false, false), nullptr)
      << "claimed a neighbour across an unmapped page";
  Edata* gap = reg(95, 1);  // one unmapped page between `active` and `gap`
  EXPECT_EQ(map->try_acquire_neighbor(gap, ExtentState::kDirty, false, false), nullptr);
  EXPECT_EQ(gap->state, ExtentState::kDirty);
}

TEST_F(EmapTest, HeadBoundariesAreNeverCrossed) {
  // [a][b head][c]: a cannot take b forward, b cannot take a backward; c may take b backward
  // and b may take c forward (neither crosses b's start).
  Edata* a = reg(100, 1);
  Edata* b = reg(101, 2, ExtentState::kDirty, /*head=*/true);
  Edata* c = reg(103, 1);
  EXPECT_EQ(map->try_acquire_neighbor(a, ExtentState::kDirty, true, false), nullptr);
  EXPECT_EQ(map->try_acquire_neighbor(b, ExtentState::kDirty, false, false), nullptr);
  EXPECT_EQ(b->state, ExtentState::kDirty);
  EXPECT_EQ(a->state, ExtentState::kDirty);
  EXPECT_EQ(map->try_acquire_neighbor(c, ExtentState::kDirty, false, false), b);
  map->release(b, ExtentState::kDirty);
  EXPECT_EQ(map->try_acquire_neighbor(b, ExtentState::kDirty, true, false), c);
}

TEST_F(EmapTest, OtherArenaIsNeverClaimedAndCommitMustMatchUnlessExpanding) {
  Edata* e = reg(110, 1);
  Edata* foreign = desc(111, 1);
  foreign->arena_ind = kArena + 1;
  ASSERT_TRUE(map->register_boundary(foreign));
  EXPECT_EQ(map->try_acquire_neighbor(e, ExtentState::kDirty, true, false), nullptr);
  EXPECT_EQ(map->try_acquire_neighbor(e, ExtentState::kDirty, true, true), nullptr);
  EXPECT_EQ(foreign->state, ExtentState::kDirty);

  Edata* f = reg(120, 1);
  Edata* decommitted = desc(121, 2);
  decommitted->committed = false;
  ASSERT_TRUE(map->register_boundary(decommitted));
  EXPECT_EQ(map->try_acquire_neighbor(f, ExtentState::kDirty, true, false), nullptr);
  EXPECT_EQ(decommitted->state, ExtentState::kDirty);
  EXPECT_EQ(map->try_acquire_neighbor(f, ExtentState::kDirty, true, /*expanding=*/true),
            decommitted);
}

TEST_F(EmapTest, NoBackwardNeighbourBelowTheFirstPage) {
  Edata zero_page;
  zero_page.init(kArena, nullptr, kPg, false, sc::kNSizes, 0, ExtentState::kDirty, false, true,
                 false);
  Edata below;  // occupies page 0, for the probe from page 1
  below.init(kArena, nullptr, kPg, false, sc::kNSizes, 0, ExtentState::kDirty, false, true, false);
  ASSERT_TRUE(map->register_boundary(&below));
  EXPECT_EQ(map->try_acquire_neighbor(&zero_page, ExtentState::kDirty, false, false), nullptr);
  Edata one;
  one.init(kArena, ptr_of(kPg), kPg, false, sc::kNSizes, 0, ExtentState::kDirty, false, true,
           false);
  EXPECT_EQ(map->try_acquire_neighbor(&one, ExtentState::kDirty, false, false), &below);
}

// ---- split / merge ----------------------------------------------------------------------

TEST_F(EmapTest, SplitMapsBothPiecesBoundaries) {
  for (size_t pages_a : {1, 2, 5}) {
    SCOPED_TRACE(testing::Message() << "lead of " << pages_a << " pages");
    const uintptr_t at_page = 200 + 10 * pages_a;
    Edata* e = reg(at_page, 6, ExtentState::kActive);
    Edata* trail = split(e, pages_a);
    expect_mapped(e, false, nullptr, trail);
    expect_mapped(trail, false, e, nullptr);
    map->deregister_boundary(e);
    map->deregister_boundary(trail);
    expect_unmapped(kRegion + at_page * kPg, kRegion + (at_page + 6) * kPg);
  }
}

TEST_F(EmapTest, MergeClearsTheSeamAndMapsTheNewEnd) {
  const std::pair<size_t, size_t> shapes[] = {{1, 1}, {1, 3}, {3, 1}, {2, 4}};
  uintptr_t at_page = 300;
  for (auto [pa, pb] : shapes) {
    SCOPED_TRACE(testing::Message() << pa << " + " << pb << " pages");
    Edata* a = reg(at_page, pa);
    Edata* b = reg(at_page + pa, pb);
    map->merge_commit(a, b);
    a->size += b->size;
    expect_mapped(a, /*interior=*/false);  // the old seam pages are interior now: no entries
    at_page += pa + pb + 1;
  }
}

TEST_F(EmapTest, SplitThenMergeRestoresTheMap) {
  Edata* e = reg(400, 8, ExtentState::kDirty, /*head=*/true);
  Edata* trail = split(e, 3);
  EXPECT_FALSE(trail->is_head);
  map->merge_commit(e, trail);
  e->size += trail->size;
  expect_mapped(e, false);
}

// ---- registration that cannot complete ----------------------------------------------------

TEST_F(EmapTest, FailedRegistrationWritesNothing) {
  // The top of the key range is the one place a leaf cannot be had on demand: an extent whose
  // last page lies past it cannot be registered, and must leave no entry behind.
  Edata e;
  e.init(kArena, ptr_of(kVaddrEnd - kPg), 2 * kPg, false, sc::kNSizes, 0, ExtentState::kActive,
         false, true, false);
  EXPECT_FALSE(map->register_boundary(&e));
  EXPECT_EQ(at(kVaddrEnd - kPg), nullptr) << "first page written by a failed register_boundary";

  Edata slab;
  slab.init(kArena, ptr_of(kVaddrEnd - 3 * kPg), 5 * kPg, true, 1, 0, ExtentState::kActive, false,
            true, false);
  EXPECT_FALSE(map->register_interior(&slab));
  EXPECT_EQ(at(kVaddrEnd - 2 * kPg), nullptr) << "interior page left by a failed register";
  EXPECT_EQ(at(kVaddrEnd - kPg), nullptr) << "interior page left by a failed register";

  Edata lead = e;
  lead.addr = ptr_of(kVaddrEnd - 2 * kPg);
  Edata trail;
  Emap::SplitPlan plan;
  EXPECT_FALSE(map->split_prepare(&plan, &lead, kPg, &trail, 2 * kPg));
}

}  // namespace
}  // namespace je
