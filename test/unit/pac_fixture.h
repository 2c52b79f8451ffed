// pac_fixture.h: helpers to run a real page allocator (Pac) in unit tests.
//
// Each fixture gets its own Base and Pac with a distinct arena index, on our default extent
// hooks (real mmap/madvise) unless a test supplies its own. Extents carved from one growth
// region are address-adjacent, which is what the coalescing tests need.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <new>
#include <vector>

#include "extent/emap.h"
#include "extent/extent.h"
#include "extent/pac.h"
#include "meta/base.h"
#include "os/pages.h"
#include "support/nstime.h"

namespace je {

inline constexpr size_t kKiB = 1024;
inline constexpr size_t kPg = config::kPage;

inline unsigned next_test_arena_ind() {
  static unsigned ind = 100;
  return ind++;
}

/// White-box access for tests (a friend of Pac and PacCore): the extent algorithms' state.
class PacTestAccess {
 public:
  static PacCore& core(Pac* p) { return p->core_; }
  static Ecache& ecache(Pac* p, ExtentState which) { return p->core_.ecache(which); }
  static pszind_t grow_next(Pac* p) { return p->core_.exp_grow_.next; }
};
inline PacCore& core(Pac* p) { return PacTestAccess::core(p); }
inline Ecache& dirty_ecache(Pac* p) { return PacTestAccess::ecache(p, ExtentState::kDirty); }

/// Builds a Pac with the given options (base, ind and now_ns are filled in).
inline Pac* make_pac(PacOptions o) {
  EXPECT_TRUE(pages::boot());
  o.ind = next_test_arena_ind();
  Base* base = Base::create(o.ind, MetadataThp::kDisabled);
  EXPECT_NE(base, nullptr);
  o.base = base;
  o.now_ns = nstime_now_ns();
  Pac* pac = new (base->alloc(sizeof(Pac), alignof(Pac))) Pac();
  EXPECT_TRUE(pac->init(o));
  return pac;
}

/// Sizes of the extents in an ecache, in LRU order.
inline std::vector<size_t> ecache_sizes(Ecache& ec) {
  std::vector<size_t> out;
  MutexGuard g(ec.mtx);
  for (Edata* e = ec.eset.lru_first(); e != nullptr; e = EdataList::next(e)) out.push_back(e->size);
  return out;
}

inline std::vector<size_t> sorted(std::vector<size_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

inline ExtentState state_at(const void* p) { return g_emap.lookup_entry(p).state; }

}  // namespace je
