// bin_test.cc: one small size class's bin -- where regions come from (slabcur, then the oldest
// non-full slab), what happens to slabcur when a fresh slab arrives, a full slab's way back
// (into the non-full heap, or as slabcur when it is older), empty slabs leaving the bin from
// wherever they sit, manual arenas' full-slab list (one-region slabs included), the counters
// the bin keeps itself (nslabs, curslabs, reslabs, nonfull_slabs), a randomized run checked
// against the header's invariants after every step, and the counters a real arena keeps around
// the bin (nmalloc, ndalloc, nrequests, curregs, nfills, nflushes).
//
// Bin-level tests drive a Bin directly with made-up slab descriptors (slab_fixture.h), in the
// order arena.cc calls it; the last tests use a manual arena.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <set>
#include <vector>

#include "arena/arena.h"
#include "arena/arenas.h"
#include "arena/bin.h"
#include "extent/emap.h"
#include "meta/base.h"
#include "os/pages.h"
#include "slab_fixture.h"

namespace je {
namespace {

bool contains(const std::vector<Edata*>& v, const Edata* e) {
  return std::find(v.begin(), v.end(), e) != v.end();
}

/// A bin's non-full heap, oldest first (the heap is rebuilt as it was).
std::vector<Edata*> heap_of(Bin& bin) {
  std::vector<Edata*> v;
  while (Edata* e = bin.nonfull.remove_first()) v.push_back(e);
  for (Edata* e : v) bin.nonfull.insert(e);
  return v;
}

std::vector<Edata*> full_list_of(const Bin& bin) {
  std::vector<Edata*> v;
  for (Edata* e = bin.full.front(); e != nullptr; e = EdataList::next(e)) v.push_back(e);
  return v;
}

class BinTest : public ::testing::Test {
 protected:
  /// A fresh slab of `cls` with serial number `sn` (slot = its index among this test's slabs).
  Edata* slab(uint64_t sn) {
    owned.push_back(std::make_unique<Edata>());
    init_slab(owned.back().get(), cls, static_cast<unsigned>(owned.size()), sn);
    return owned.back().get();
  }
  /// A fresh slab installed as slabcur.
  Edata* fresh(uint64_t sn) {
    Edata* s = slab(sn);
    bin.install_fresh(s, track_full);
    return s;
  }
  void* alloc() { return bin.alloc_locked(cls, track_full); }
  /// Takes every free region of `s` through the bin (s must be slabcur).
  std::vector<void*> drain(Edata* s) {
    std::vector<void*> v;
    while (s->nfree > 0) {
      EXPECT_EQ(bin.slabcur, s);
      v.push_back(alloc());
    }
    return v;
  }
  bool dalloc(Edata* s, void* p) { return bin.dalloc_locked(s, cls, p, track_full); }

  std::vector<Edata*> heap() { return heap_of(bin); }
  std::vector<Edata*> full_list() { return full_list_of(bin); }

  /// The header's invariants, for the slabs in `live` (those the bin owns).
  void expect_invariants(const std::vector<Edata*>& live) {
    const std::vector<Edata*> h = heap(), f = full_list();
    EXPECT_EQ(bin.stats.nonfull_slabs, h.size()) << "nonfull_slabs disagrees with the heap";
    EXPECT_FALSE(contains(h, bin.slabcur)) << "slabcur is in the heap";
    EXPECT_FALSE(contains(f, bin.slabcur)) << "slabcur is in the full list";
    if (!track_full) {
      EXPECT_TRUE(f.empty()) << "full slabs tracked for an automatic arena";
    }
    for (Edata* e : h) EXPECT_GT(e->nfree, 0u) << "full slab sn " << e->sn << " in the heap";
    for (Edata* e : f) EXPECT_EQ(e->nfree, 0u) << "slab sn " << e->sn << " in the full list";
    for (Edata* e : live) {
      if (e == bin.slabcur) continue;
      if (e->nfree > 0) {
        EXPECT_TRUE(contains(h, e)) << "non-full slab sn " << e->sn << " is lost";
      } else if (track_full) {
        EXPECT_TRUE(contains(f, e)) << "full slab sn " << e->sn << " not in the full list";
      }
    }
    EXPECT_EQ(bin.stats.curslabs, live.size());
  }

  szind_t cls = class_with_nregs(4);
  unsigned nregs = 4;
  bool track_full = false;
  Bin bin;
  std::vector<std::unique_ptr<Edata>> owned;
};

TEST_F(BinTest, EmptyBinHasNothingToGive) {
  EXPECT_EQ(alloc(), nullptr);
  EXPECT_EQ(bin.slabcur, nullptr);
  EXPECT_EQ(bin.stats.reslabs, 0u);
  EXPECT_EQ(bin.stats.nslabs, 0u);
}

TEST_F(BinTest, FreshSlabServesRegionsInAddressOrderThenRunsOut) {
  Edata* s = fresh(1);
  EXPECT_EQ(bin.slabcur, s);
  EXPECT_EQ(bin.stats.nslabs, 1u);
  EXPECT_EQ(bin.stats.curslabs, 1u);
  std::vector<void*> p = drain(s);
  for (unsigned i = 0; i < nregs; i++) {
    EXPECT_EQ(addr_of(p[i]), s->base_addr() + i * size_t{g_bin_geo[cls].reg_size});
  }
  EXPECT_EQ(alloc(), nullptr) << "a full bin handed out a region";
  EXPECT_EQ(bin.slabcur, nullptr) << "full slabcur kept after the heap ran dry";
  expect_invariants({s});
}

TEST_F(BinTest, RefillTakesTheOldestNonfullSlab) {
  Edata* s3 = slab(3);
  Edata* s1 = slab(1);
  Edata* s2 = slab(2);
  for (Edata* s : {s3, s1, s2}) bin.insert_nonfull(s);
  EXPECT_EQ(bin.stats.nonfull_slabs, 3u);
  void* p = alloc();
  EXPECT_EQ(bin.slabcur, s1);
  EXPECT_EQ(addr_of(p), s1->base_addr());
  EXPECT_EQ(bin.stats.reslabs, 1u);
  EXPECT_EQ(bin.stats.nonfull_slabs, 2u);
  drain(s1);
  alloc();  // s1 is full: on to s2
  EXPECT_EQ(bin.slabcur, s2);
  EXPECT_EQ(bin.stats.reslabs, 2u);
  EXPECT_EQ(heap(), std::vector<Edata*>{s3});
}

TEST_F(BinTest, EqualAgeSlabsGoLowestAddressFirst) {
  Edata* high = slab(5);
  Edata* low = slab(5);
  std::swap(high->addr, low->addr);  // `low` was made second; give it the lower address
  ASSERT_LT(low->base_addr(), high->base_addr());
  bin.insert_nonfull(high);
  bin.insert_nonfull(low);
  alloc();
  EXPECT_EQ(bin.slabcur, low);
}

TEST_F(BinTest, FreshSlabParksTheOldSlabcur) {
  Edata* a = fresh(1);
  alloc();
  Edata* b = fresh(2);  // a still has free regions: into the heap
  EXPECT_EQ(bin.slabcur, b);
  EXPECT_EQ(heap(), std::vector<Edata*>{a});
  drain(b);
  Edata* c = fresh(3);  // b is full: tracked nowhere in an automatic arena
  EXPECT_EQ(bin.slabcur, c);
  EXPECT_EQ(heap(), std::vector<Edata*>{a});
  EXPECT_TRUE(full_list().empty());
  EXPECT_EQ(bin.stats.nslabs, 3u);
  expect_invariants({a, b, c});
}

TEST_F(BinTest, FullSlabYoungerThanSlabcurGoesToTheHeap) {
  Edata* old = fresh(1);
  alloc();
  Edata* young = fresh(2);  // old (3 regions free) waits in the heap
  std::vector<void*> p = drain(young);
  alloc();  // young is full: the heap gives old back as slabcur
  ASSERT_EQ(bin.slabcur, old);
  EXPECT_EQ(bin.stats.reslabs, 1u);
  EXPECT_FALSE(dalloc(young, p[2]));
  EXPECT_EQ(bin.slabcur, old) << "a younger slab displaced slabcur";
  EXPECT_EQ(heap(), std::vector<Edata*>{young});
  EXPECT_EQ(bin.stats.reslabs, 1u) << "parking a slab counted as a reslab";
  expect_invariants({old, young});
}

TEST_F(BinTest, FullSlabOlderThanSlabcurBecomesSlabcur) {
  Edata* old = fresh(1);
  std::vector<void*> p = drain(old);
  Edata* young = fresh(2);
  alloc();
  EXPECT_FALSE(dalloc(old, p[1]));
  EXPECT_EQ(bin.slabcur, old) << "an older non-full slab must become slabcur";
  EXPECT_EQ(addr_of(alloc()), addr_of(p[1])) << "the freed region is not reused first";
  EXPECT_EQ(heap(), std::vector<Edata*>{young}) << "the displaced slabcur was not parked";
  EXPECT_EQ(bin.stats.reslabs, 1u);
  expect_invariants({old, young});
}

TEST_F(BinTest, EmptySlabLeavesTheBinFromWhereverItIs) {
  Edata* a = fresh(1);
  std::vector<void*> pa = drain(a);
  Edata* b = fresh(2);
  std::vector<void*> pb{alloc()};
  Edata* c = fresh(3);  // b (one region used) goes to the heap
  std::vector<void*> pc{alloc(), alloc()};
  // From the heap:
  EXPECT_TRUE(dalloc(b, pb[0])) << "an emptied slab was not reported";
  EXPECT_TRUE(heap().empty());
  EXPECT_EQ(bin.stats.nonfull_slabs, 0u);
  EXPECT_EQ(bin.stats.curslabs, 2u);
  // As slabcur:
  EXPECT_FALSE(dalloc(c, pc[0]));
  EXPECT_TRUE(dalloc(c, pc[1]));
  EXPECT_EQ(bin.slabcur, nullptr);
  // A full one, freed region by region (the first free brings it back as non-full):
  for (unsigned i = 0; i + 1 < nregs; i++) EXPECT_FALSE(dalloc(a, pa[i]));
  EXPECT_EQ(heap(), std::vector<Edata*>{a}) << "with no slabcur a non-full slab waits in the heap";
  EXPECT_TRUE(dalloc(a, pa[nregs - 1]));
  EXPECT_EQ(bin.stats.curslabs, 0u);
  expect_invariants({});
}

TEST_F(BinTest, ManualArenaBinsTrackFullSlabs) {
  track_full = true;
  Edata* a = fresh(1);
  std::vector<void*> pa = drain(a);
  Edata* b = fresh(2);  // a is full: into the full list
  EXPECT_EQ(full_list(), std::vector<Edata*>{a});
  std::vector<void*> pb = drain(b);
  EXPECT_EQ(alloc(), nullptr);  // b is full and the heap is empty: b joins the list
  EXPECT_EQ(full_list(), (std::vector<Edata*>{a, b}));
  expect_invariants({a, b});
  EXPECT_FALSE(dalloc(b, pb[0]));
  EXPECT_EQ(full_list(), std::vector<Edata*>{a}) << "non-full slab left in the full list";
  EXPECT_EQ(heap(), std::vector<Edata*>{b});
  expect_invariants({a, b});
}

TEST_F(BinTest, OneRegionSlabsGoFromFullStraightToEmpty) {
  cls = class_with_nregs(1);
  nregs = 1;
  for (bool manual : {false, true}) {
    SCOPED_TRACE(manual ? "manual" : "automatic");
    track_full = manual;
    Edata* a = fresh(10);
    void* pa = alloc();
    Edata* b = fresh(11);  // a full
    void* pb = alloc();
    EXPECT_EQ(alloc(), nullptr);  // b full, heap empty
    EXPECT_EQ(full_list().size(), manual ? 2u : 0u);
    EXPECT_TRUE(dalloc(a, pa));
    EXPECT_TRUE(dalloc(b, pb));
    EXPECT_TRUE(full_list().empty()) << "an emptied one-region slab stayed in the full list";
    EXPECT_TRUE(heap().empty());
    expect_invariants({});
  }
}

TEST_F(BinTest, RandomizedRunKeepsTheInvariants) {
  for (bool manual : {false, true}) {
    SCOPED_TRACE(manual ? "manual" : "automatic");
    track_full = manual;
    std::mt19937 rng(manual ? 7 : 11);
    std::vector<std::pair<void*, Edata*>> used;
    std::set<void*> used_set;
    std::vector<Edata*> live;
    uint64_t next_sn = 100;
    for (int step = 0; step < 3000 && !HasFailure(); step++) {
      if (used.empty() || rng() % 100 < 55) {
        // arena.cc's malloc_small: the bin first, a fresh slab only when it has nothing.
        void* p = alloc();
        if (p == nullptr) {
          live.push_back(fresh(next_sn++));
          p = slab::reg_alloc(bin.slabcur, cls);
        }
        ASSERT_TRUE(used_set.insert(p).second) << "step " << step << ": region handed out twice";
        used.emplace_back(p, bin.slabcur);
      } else {
        size_t k = rng() % used.size();
        auto [p, s] = used[k];
        used[k] = used.back();
        used.pop_back();
        used_set.erase(p);
        const bool emptied = dalloc(s, p);
        EXPECT_EQ(emptied, s->nfree == nregs) << "step " << step;
        if (emptied) live.erase(std::find(live.begin(), live.end(), s));
      }
      expect_invariants(live);
      // Single-threaded, slabcur (when set) is the oldest slab with free regions.
      std::vector<Edata*> h = heap();
      if (bin.slabcur != nullptr && !h.empty()) {
        EXPECT_TRUE(EdataSnAddrLess{}(bin.slabcur, h.front()))
            << "step " << step << ": slabcur sn " << bin.slabcur->sn << " younger than heap sn "
            << h.front()->sn;
      }
    }
    for (auto [p, s] : used) dalloc(s, p);
    expect_invariants({});
    bin.stats = {};
  }
}

// ---- the counters a real arena keeps around its bins ---------------------------------------

class BinInArena : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_TRUE(pages::boot());
    ASSERT_NE(base_global(), nullptr);
    ASSERT_TRUE(arenas_boot(ArenaOptions{}));  // the default options
  }
  void SetUp() override {
    unsigned ind = 0;
    ASSERT_TRUE(arena_create_manual(nullptr, &ind));
    arena = arena_get(ind, false);
    ASSERT_NE(arena, nullptr);
  }
  Arena* arena = nullptr;
  const szind_t cls = class_with_nregs(4);
};

TEST_F(BinInArena, SmallAllocationsCountInTheirBin) {
  Bin& bin = arena->thread_bin(cls);
  std::vector<void*> p;
  for (int i = 0; i < 10; i++) p.push_back(arena->malloc_small(cls, false));
  std::set<void*> distinct(p.begin(), p.end());
  EXPECT_EQ(distinct.size(), 10u);
  for (void* q : p) {
    EmapEntry e = g_emap.lookup_entry(q);
    ASSERT_NE(e.edata, nullptr);
    EXPECT_TRUE(e.slab) << "small region not on a slab";
    EXPECT_EQ(e.szind, cls);
  }
  EXPECT_EQ(bin.stats.nmalloc, 10u);
  EXPECT_EQ(bin.stats.nrequests, 10u);
  EXPECT_EQ(bin.stats.curregs, 10u);
  EXPECT_EQ(bin.stats.nslabs, 3u) << "4 regions per slab";
  EXPECT_EQ(bin.stats.curslabs, 3u);
  EXPECT_EQ(full_list_of(bin).size(), 2u);  // a manual arena lists its two full slabs
  for (void* q : p) arena->dalloc_small(g_emap.lookup(q), cls, q);
  EXPECT_EQ(bin.stats.ndalloc, 10u);
  EXPECT_EQ(bin.stats.curregs, 0u);
  EXPECT_EQ(bin.stats.curslabs, 0u) << "emptied slabs stayed in the bin";
  EXPECT_EQ(bin.stats.nonfull_slabs, 0u);
  EXPECT_EQ(bin.slabcur, nullptr);
  EXPECT_TRUE(bin.full.empty());
}

TEST_F(BinInArena, FillsAndFlushesCountOnceWithTheirRequests) {
  Bin& bin = arena->thread_bin(cls);
  void* out[6];
  ASSERT_EQ(arena->fill_small(cls, out, 6, /*nrequests=*/9), 6u);
  EXPECT_EQ(bin.stats.nfills, 1u);
  EXPECT_EQ(bin.stats.nmalloc, 6u);
  EXPECT_EQ(bin.stats.nrequests, 9u);
  EXPECT_EQ(bin.stats.curregs, 6u);
  Edata* slabs[6];
  for (int i = 0; i < 6; i++) slabs[i] = g_emap.lookup(out[i]);
  arena->dalloc_small_batch(cls, out, slabs, 6, /*merge_stats=*/true, /*nrequests=*/5);
  EXPECT_EQ(bin.stats.nflushes, 1u);
  EXPECT_EQ(bin.stats.ndalloc, 6u);
  EXPECT_EQ(bin.stats.nrequests, 14u);
  EXPECT_EQ(bin.stats.curregs, 0u);
  EXPECT_EQ(bin.stats.curslabs, 0u);
}

}  // namespace
}  // namespace je
