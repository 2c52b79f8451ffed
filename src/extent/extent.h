// extent.h: the extent algorithms -- recycle, split, merge, record (coalesce), evict, grow.
//
// Purpose: everything that moves extents between the arena and its ecaches, and between the ecaches
// and the OS, lives here. Three coalescing regimes meet in `ecache_dalloc` (record):
//   * * muzzy and retained: full coalescing with free neighbours on insertion, no size bound;
//   * * dirty, small extents (< 16 KiB, i.e. emptied slabs): no coalescing on insertion (delayed);
//   * * dirty, large extents: eager coalescing, one merge at a time, but -- the project's fix --
//     never into an extent larger than the dirty fit search for `size` bytes can find again
//     (coalesce_bound: about `size << lg_extent_max_active_fit`, worked out from the eset's
//     bins), nor, when oversize extents are purged inline, into one at or above the oversize
//     threshold. A neighbour claimed but refused for size is released unchanged. Switchable
//     per Pac (opt.bounded_coalesce, arena.<i>.bounded_coalesce) to reproduce jemalloc 5.3's
//     unbounded behaviour.
// Under opt.prof it also keeps heap profiling's high-water mark of mapped extent pages (the
// prof_gdump trigger; see the end of this header).
// Eviction (decay/purge) coalesces the LRU extent with no reuse bound; with the bound on, only up
// to the amount the purge wants, and the merged extent never goes back into the dirty cache.
// Layer: extent. Callers: pac, which hands them its PacCore (and unit tests).
// Concurrency: see pac.h. Functions taking an Ecache lock it themselves; the caller holds nothing
// except where stated (grow_mtx for retained recycling is taken inside).
// jemalloc mapping: src/extent.c (extent_record, extent_try_coalesce_impl with the max_size bound
// of 3c14707b plus the neighbour release of 675ab079, extent_recycle, extent_grow_retained,
// ecache_evict, extent_dalloc_wrapper, extent_split_impl, extent_merge_impl).
#pragma once

#include <cstddef>
#include <cstdint>

#include "extent/edata.h"
#include "support/compiler.h"

namespace je {

class PacCore;
class Ecache;

namespace extent {

/// The largest extent eager dirty coalescing may build from a freed extent of `size` bytes:
/// the largest extent a dirty fit search for `size` bytes can find (Eset::max_fit_extent), so
/// the merged extent stays reusable by requests of the size that freed it; about
/// size << lg_max_fit, saturating at sc::kLargeMaxClass. (record() also keeps it below the
/// oversize threshold when oversize extents are purged inline.)
size_t coalesce_bound(size_t size, unsigned lg_max_fit);

/// Take an extent of `size` bytes aligned to `alignment` from `ecache` (dirty or muzzy), or,
/// with `expand`, the free extent right after `expand` (for in-place growth). nullptr if none.
/// Dirty reuse honours the lg_max_fit bound unless `bounded` is false.
Edata* ecache_alloc(PacCore& pac, Ecache& ecache, Edata* expand, size_t size, size_t alignment,
                    bool zero, bool bounded = true);
/// Take from the retained ecache, else grow new address space (retain) or map it (no retain).
/// *fresh reports that the extent comes from a new mapping.
Edata* ecache_alloc_grow(PacCore& pac, Edata* expand, size_t size, size_t alignment, bool zero,
                         bool* fresh);
/// Remove and return (active, owned, unsplit) the free extent of at least `min_size` bytes an
/// allocation of that size would pick, or nullptr (opt.purge_on_grow's victims).
Edata* ecache_take(Ecache& ecache, size_t min_size);
/// Record a free (owned, registered) extent into `ecache`, coalescing per the ecache's regime.
/// An extent of the oversize threshold or more is purged at once where the Pac purges them
/// inline (PacCore::may_force_decay) unless `keep_oversize` (opt.decay_hold_peak: the hold
/// covers it).
void ecache_dalloc(PacCore& pac, Ecache& ecache, Edata* e, bool keep_oversize = false);
/// Remove and return the least recently inserted extent if the ecache holds more than
/// `npages_min` pages. In the dirty ecache the victim first absorbs its free neighbours (the
/// delayed coalescing; no reuse bound): with the coalescing bound on, until it reaches
/// `npages_want` pages (never fewer than its own), and the merged extent is the victim; with it
/// off (5.3.0), without limit, and a merged extent goes back to the LRU tail while the search
/// starts over. Dirty/muzzy victims come back active; retained victims come back
/// deregistered. nullptr if nothing to evict.
Edata* ecache_evict(PacCore& pac, Ecache& ecache, size_t npages_min, size_t npages_want = SIZE_MAX);

/// Hand an owned extent to the OS: unmap it if the hooks allow, else decommit or purge it and
/// record it as retained.
void dalloc_wrapper(PacCore& pac, Edata* e);
/// Destroy a deregistered extent (arena destroy): hooks' destroy, descriptor recycled.
void destroy_wrapper(PacCore& pac, Edata* e);
/// MADV_FREE-style purge of part of an owned extent. True on success.
bool purge_lazy_wrapper(PacCore& pac, Edata* e, size_t offset, size_t length);
/// Split an owned extent into [0, size_a) (keeps `e`) and the returned trail. nullptr on
/// failure (metadata OOM or hooks refusal), `e` unchanged.
Edata* split_wrapper(PacCore& pac, Edata* e, size_t size_a, size_t size_b);
/// Merge the owned, adjacent extent `b` into `a`. False on hooks refusal (both unchanged).
bool merge_wrapper(PacCore& pac, Edata* a, Edata* b);

// ---- heap profiling's high-water mark (prof_gdump) ---------------------------------------------
// The pages of extents in use or cached (active, dirty, muzzy) over all arenas: counted up when
// an extent leaves the retained cache or is freshly mapped (ecache_alloc_grow), down when one is
// unmapped or goes back to retained (dalloc_wrapper) -- 5.3.0's curpages. Each time the count
// passes its largest value so far while prof.gdump is on, the thread that grew it is marked;
// the api layer writes the dump at the end of that thread's allocation (extent code runs
// under allocator locks, a dump must not). Counted only under opt.prof (gdump_boot), on the
// extent-growth and unmapping slow paths; nothing on the malloc/free fast paths.

/// At boot, with opt.prof: start counting; `on` is opt.prof_gdump.
void gdump_boot(bool on);
/// prof.gdump written.
void gdump_switch(bool on);
/// Whether this thread raised the high-water mark while prof.gdump was on since the last call;
/// clears the mark.
bool gdump_take_pending();
/// The same test without clearing, inline: every allocation slow path under opt.prof asks it,
/// and an out-of-line call there cost about as much as the rest of the test.
inline bool gdump_pending();
/// The pages counted now and the high-water mark (tests).
void gdump_pages(size_t* cur, size_t* high);

namespace gdump_detail {
// Set by the thread whose extent growth raised the mark (extent.cc); never set without opt.prof.
extern constinit thread_local bool t_pending JE_TLS_IE;
}  // namespace gdump_detail

inline bool gdump_pending() { return gdump_detail::t_pending; }

}  // namespace extent
}  // namespace je
