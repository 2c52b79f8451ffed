// ecache.h: a locked cache of free extents in one state.
//
// Purpose: an arena's page allocator keeps three: dirty (freed, resident; delayed coalescing),
// muzzy (lazily purged) and retained (purged, address space only; both coalesce immediately).
// Layer: extent. Callers: extent.cc (recycle/record/evict), pac, stats.
// Concurrency: `mtx` (rank kEcache) guards the eset and the states of its extents. No two
// ecache locks are ever held at once.
// Invariants: every extent in `eset` has state == `state` and arena == `ind`.
// jemalloc mapping: ecache_t (src/ecache.c); mutex stats name "extents_{dirty,muzzy,retained}".
#pragma once

#include "extent/edata.h"
#include "extent/eset.h"
#include "support/mutex.h"

namespace je {

class Ecache {
 public:
  constexpr Ecache() = default;

  void init(ExtentState st, unsigned arena_ind, bool delay) {
    state = st;
    ind = arena_ind;
    delay_coalesce = delay;
  }
  size_t npages() const { return eset.npages(); }

  Mutex mtx{LockRank::kEcache, "extents"};
  Eset eset;
  ExtentState state = ExtentState::kDirty;
  unsigned ind = 0;
  /// Dirty only: small extents are not coalesced when they arrive, only when evicted.
  bool delay_coalesce = false;
};

}  // namespace je
