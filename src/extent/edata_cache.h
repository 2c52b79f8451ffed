// edata_cache.h: recycled extent descriptors.
//
// Purpose: Edata structs are metadata; they come from the arena's base and are recycled here
// instead of being freed (base memory is never returned while the arena lives).
// Layer: extent. Callers: extent.cc (split, grow, merge), arena (slab/large bookkeeping).
// Concurrency: `mtx_` (rank kEdataCache), taken while an ecache lock may be held.
// jemalloc mapping: edata_cache (src/edata_cache.c); stats.arenas.<i>.extent_avail and
// stats.arenas.<i>.mutexes.extent_avail.*.
#pragma once

#include <atomic>
#include <cstddef>

#include "extent/edata.h"
#include "meta/base.h"
#include "support/mutex.h"

namespace je {

class EdataCache {
 public:
  constexpr EdataCache() = default;
  void init(Base* base) { base_ = base; }

  /// A descriptor (fields unspecified: callers `init()` it), or nullptr on metadata OOM.
  Edata* get();
  void put(Edata* e);
  /// Descriptors available for reuse (stats "extent_avail").
  size_t available() const { return count_.load(std::memory_order_relaxed); }
  /// Counters of the cache's mutex (stats.arenas.<i>.mutexes.extent_avail), read under it;
  /// reset_mutex_stats zeroes them (stats.mutexes.reset).
  MutexStats mutex_stats() {
    MutexGuard guard(mtx_);
    return mtx_.stats();
  }
  void reset_mutex_stats() {
    MutexGuard guard(mtx_);
    mtx_.reset_stats();
  }

  void prefork() { mtx_.prefork(); }
  void postfork_parent() { mtx_.postfork_parent(); }
  void postfork_child() { mtx_.postfork_child(); }

 private:
  Mutex mtx_{LockRank::kEdataCache, "edata_cache"};
  EdataList free_;
  std::atomic<size_t> count_{0};
  Base* base_ = nullptr;
};

}  // namespace je
