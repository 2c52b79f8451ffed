// placement.h: where a page allocator carves extents and which freed pages it reuses first --
// one value, built once from the options and handed whole to the arena's Pac, its ecaches'
// esets and its small extent cache.
//
// Purpose: the options of ours that change where extents land (never what a call returns),
// with the two presets: ours, and jemalloc 5.3.0's placement (doc/compat.md#placement-530).
// When pages go back to the system is the memory-return policy's (hold.h: ReturnPolicy).
// Layer: extent. Writers: src/api/init.cc (from the option table), the `preset` option's
// application in src/ctl/conf. Readers: Pac (reuse order, the bound's initial value, the
// cache's size, Eset's fit order), the arena layer (borrowing).
// Concurrency: a value; copies are read-only after boot. The coalescing bound alone can be
// switched at run time per arena (arena.<i>.bounded_coalesce): this is its initial value.
// jemalloc mapping: none; each field is an option of ours (doc/compat.md).
#pragma once

#include <cstddef>

namespace je {

struct Placement {
  /// opt.bounded_coalesce: eager dirty merges stop where the result would leave the reach of
  /// a request of the freed size (doc/design/coalescing.md). Initial value per arena.
  bool bounded_coalesce = true;
  /// opt.extent_best_fit: smallest fitting size class first (then oldest) for searches of up to
  /// Eset::kBestFitMaxSize, instead of 5.3.0's first fit by address.
  bool best_fit = true;
  /// opt.reuse_before_grow: split a dirty extent beyond the lg_extent_max_active_fit reach
  /// before taking retained or new pages; and, when no dirty extent is big enough, extend one
  /// in place by the retained pages after it (Pac::extend_dirty_head).
  bool reuse_before_grow = true;
  /// opt.borrow_dirty: large requests and new slabs may take another automatic arena's cached
  /// pages before growing.
  bool borrow_dirty = true;
  /// opt.extent_cache_bytes: each arena's small extent cache (Sec) capacity; 0 = none.
  size_t extent_cache_bytes = size_t{8} << 20;

  /// Our defaults.
  static constexpr Placement ours() { return Placement{}; }
  /// jemalloc 5.3.0's placement: unbounded merges, first fit, reuse within the reach only, no
  /// borrowing, no small extent cache.
  static constexpr Placement jemalloc530() {
    return Placement{.bounded_coalesce = false,
                     .best_fit = false,
                     .reuse_before_grow = false,
                     .borrow_dirty = false,
                     .extent_cache_bytes = 0};
  }
  bool operator==(const Placement&) const = default;
};

}  // namespace je
