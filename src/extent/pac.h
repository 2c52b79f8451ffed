// pac.h: the page allocator of one arena -- dirty, muzzy and retained ecaches, decay, growth.
//
// Purpose: serves page-multiple extents to the arena (slabs and large allocations) from, in
// order: the dirty ecache (recently freed, resident), the muzzy ecache (lazily purged; skipped
// when muzzy decay is 0), the dirty ecache again without the lg_max_fit bound (ours,
// opt.reuse_before_grow: resident pages beat faulting in new ones), the retained ecache (purged
// address space) and finally new address space grown in a geometric series; growth then purges
// as many idle dirty pages (ours, opt.purge_on_grow). Frees go to the dirty ecache; decay moves pages on to muzzy
// or retained. This is where the project's coalescing bound lives (extent.cc, record path).
// Layer: extent. Callers: arena (alloc/dalloc/expand/shrink, decay ticks, purge), ctl (stats).
// Concurrency: ecache mutexes (kEcache), `grow_mtx` (kExtentGrow, held around recycling from
// retained and growing), one decay mutex per decaying ecache (kDecay; held only to advance the
// epoch -- purging itself runs unlocked, serialized by Decay::purging), the edata cache
// (kEdataCache). Counters are relaxed atomics.
// Invariants: nactive == pages of extents handed out and not yet returned; `stats.mapped`
// counts active + dirty + muzzy bytes (not retained); every free extent is in exactly one ecache.
// jemalloc mapping: pac_t (src/pac.c) with pa_shard's nactive; stats.arenas.<i>.{pactive,
// pdirty, pmuzzy, mapped, retained, dirty_*, muzzy_*, abandoned_vm, extent_avail} and
// stats.arenas.<i>.mutexes.{extents_*, decay_dirty, decay_muzzy, extent_avail}.*.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "extent/decay.h"
#include "extent/ecache.h"
#include "extent/edata_cache.h"
#include "extent/ehooks.h"
#include "meta/base.h"
#include "support/mutex.h"

namespace je {

/// Counters of one decay (purge) pipeline.
struct PacDecayStats {
  std::atomic<uint64_t> npurge{0};    // purge runs
  std::atomic<uint64_t> nmadvise{0};  // madvise calls (one per purged extent)
  std::atomic<uint64_t> purged{0};    // pages purged
};

/// Where an allocation's pages came from; the last two cost a page fault per touched page.
enum class PacSource : uint8_t { kDirty = 0, kMuzzy = 1, kRetained = 2, kFresh = 3 };
inline constexpr unsigned kPacNSources = 4;

struct PacStats {
  PacDecayStats decay_dirty;
  PacDecayStats decay_muzzy;
  std::atomic<size_t> mapped{0};        // bytes: active + dirty + muzzy
  std::atomic<size_t> abandoned_vm{0};  // bytes leaked after a failed split (OOM only)
  // Beyond jemalloc: the dirty path made observable.
  std::atomic<uint64_t> dirty_merges{0};          // eager merges when recording into dirty
  std::atomic<uint64_t> dirty_merges_refused{0};  // merges refused by the coalescing bound
  std::atomic<uint64_t> evict_merges{0};          // delayed merges done at eviction time
  std::atomic<uint64_t> alloc_count[kPacNSources] = {};  // extents served per source
  std::atomic<uint64_t> alloc_pages[kPacNSources] = {};  // pages served per source
};

/// Construction-time settings (opt.* values for automatic arenas, or per-arena overrides).
struct PacOptions {
  unsigned ind = 0;
  Base* base = nullptr;
  extent_hooks_t* hooks = nullptr;  // nullptr = our defaults
  bool retain = true;               // opt.retain
  unsigned lg_max_fit = 6;          // opt.lg_extent_max_active_fit
  bool bounded_coalesce = true;     // opt.bounded_coalesce (ours): bound eager dirty merges
  bool reuse_before_grow = true;    // opt.reuse_before_grow (ours): unbounded dirty fit last
  bool best_fit = true;             // opt.extent_best_fit (ours): smallest class first
  bool purge_on_grow = false;       // opt.purge_on_grow (ours): growth purges idle dirty pages
  bool decay_hold_peak = true;      // opt.decay_hold_peak (ours): dirty decay spares the dip
  size_t oversize_threshold = size_t{8} << 20;  // opt.oversize_threshold
  int64_t dirty_decay_ms = 10000;   // opt.dirty_decay_ms
  int64_t muzzy_decay_ms = 0;       // opt.muzzy_decay_ms
  uint64_t now_ns = 0;              // decay epoch origin
};

/// Growth series of retained address space (jemalloc exp_grow): page-size classes starting at
/// 2 MiB, one class further per growth, capped by `limit` (arena.<i>.retain_grow_limit).
struct ExpGrow {
  pszind_t next = 0;
  pszind_t limit = 0;
};

class Pac {
 public:
  enum class Eagerness : uint8_t { kAlways, kOnEpochAdvance, kNever };

  bool init(const PacOptions& o);

  /// An active extent of `size` bytes (page multiple), aligned to `alignment`, zeroed if
  /// asked. nullptr on OOM -- or, without `may_grow`, when no cached (dirty/muzzy) extent fits.
  /// The caller sets szind/slab via the emap.
  Edata* alloc(size_t size, size_t alignment, bool zero, bool may_grow = true);
  /// The growth half of alloc(): retained address space, else a new mapping; then, with
  /// opt.purge_on_grow, up to as many dirty pages purged as were grown (purge_for_growth).
  Edata* grow(size_t size, size_t alignment, bool zero);
  /// Grow `e` in place to new_size by absorbing the free extent that follows it.
  bool expand(Edata* e, size_t old_size, size_t new_size, bool zero);
  /// Shrink `e` to new_size, recording the tail as dirty.
  bool shrink(Edata* e, size_t old_size, size_t new_size);
  /// Return an active extent (recorded dirty).
  void dalloc(Edata* e);

  /// Decay times (dirty or muzzy). Setting restarts the backlog and may purge immediately.
  bool decay_ms_set(ExtentState which, int64_t ms, uint64_t now_ns);
  int64_t decay_ms_get(ExtentState which) const;
  /// Purge everything in the dirty (or muzzy) ecache now (arena.<i>.purge; fully = skip muzzy).
  void decay_all(ExtentState which, bool fully);
  /// Advance decay and purge down to its limit. Returns false when another thread holds the
  /// decay lock (nothing done); *epoch_advanced reports an epoch change.
  bool try_decay(ExtentState which, uint64_t now_ns, Eagerness eagerness, bool* epoch_advanced);
  /// For background threads: nanoseconds from now_ns until at least npages_threshold pages of
  /// `which` (all of them, if fewer) are purgeable, assuming nothing changes meanwhile. 0 when
  /// due now, or when the decay lock is busy (ask again soon); UINT64_MAX when decay will never
  /// purge here on a schedule (no pages; decay_ms -1, or 0, which purges inline).
  uint64_t decay_ns_until_purge(ExtentState which, uint64_t now_ns, uint64_t npages_threshold);

  /// Destroy everything retained (arena destroy); the address space goes back to the OS.
  void destroy_retained();

  /// Counters of the dirty or muzzy decay mutex (stats.arenas.<i>.mutexes.decay_dirty /
  /// decay_muzzy), read under it; reset_decay_mutex_stats zeroes them (stats.mutexes.reset).
  MutexStats decay_mutex_stats(ExtentState which);
  void reset_decay_mutex_stats(ExtentState which);

  size_t nactive() const { return nactive_.load(std::memory_order_relaxed); }
  size_t ndirty() const { return ecache_dirty.npages(); }
  size_t nmuzzy() const { return ecache_muzzy.npages(); }
  size_t nretained() const { return ecache_retained.npages(); }

  /// The coalescing bound (opt.bounded_coalesce, ours arena.<i>.bounded_coalesce). Each free
  /// and each eviction reads it once, so a switch takes effect with the next one.
  void set_bounded_coalesce(bool on) { bounded_coalesce_.store(on, std::memory_order_relaxed); }
  bool bounded_coalesce() const { return bounded_coalesce_.load(std::memory_order_relaxed); }
  unsigned lg_max_fit() const { return lg_max_fit_; }
  bool reuse_before_grow() const { return reuse_before_grow_; }
  bool retain() const { return retain_; }
  size_t oversize_threshold() const { return oversize_threshold_.load(std::memory_order_relaxed); }
  void set_oversize_threshold(size_t v) { oversize_threshold_.store(v, std::memory_order_relaxed); }
  /// Cap the retained growth series (arena.<i>.retain_grow_limit); false if below one page.
  bool set_retain_grow_limit(size_t limit, size_t* old_limit);
  unsigned ind() const { return ind_; }
  /// Serial number for a new mapping.
  uint64_t next_sn() { return sn_next_.fetch_add(1, std::memory_order_relaxed); }

  void prefork_grow();
  void prefork_decay();
  void prefork_ecaches();
  void postfork_parent();
  void postfork_child();

  // The state below is used directly by extent.cc, the algorithms over these structures.
  Ecache ecache_dirty;
  Ecache ecache_muzzy;
  Ecache ecache_retained;
  EdataCache edata_cache;
  Ehooks ehooks;
  Base* base = nullptr;
  Mutex grow_mtx{LockRank::kExtentGrow, "extent_grow"};
  ExpGrow exp_grow;
  PacStats stats;

 private:
  struct DecayPipeline {
    Mutex mtx{LockRank::kDecay, "decay"};
    Decay decay;
  };
  DecayPipeline& pipeline(ExtentState which) {
    return which == ExtentState::kDirty ? decay_dirty_ : decay_muzzy_;
  }
  const DecayPipeline& pipeline(ExtentState which) const {
    return which == ExtentState::kDirty ? decay_dirty_ : decay_muzzy_;
  }
  Ecache& ecache_of(ExtentState which) {
    return which == ExtentState::kDirty ? ecache_dirty : ecache_muzzy;
  }
  PacDecayStats& decay_stats(ExtentState which) {
    return which == ExtentState::kDirty ? stats.decay_dirty : stats.decay_muzzy;
  }
  bool may_have_muzzy() const { return decay_ms_get(ExtentState::kMuzzy) != 0; }
  void maybe_decay_purge_locked(ExtentState which, uint64_t now_ns, Eagerness eagerness,
                                bool* epoch_advanced);
  void decay_to_limit(ExtentState which, bool fully, size_t npages_limit, size_t npages_max);
  size_t decay_stashed(ExtentState which, bool fully, EdataList* stash);
  void count_alloc(PacSource src, size_t size);
  /// dirty (bounded), muzzy, then dirty without the bound (reuse_before_grow); no accounting.
  Edata* take_cached(size_t size, size_t alignment, bool zero, PacSource* src);
  /// opt.purge_on_grow: after growing by `npages`, purge up to that many dirty pages, taking
  /// only extents of at least kGrowPurgeMinPages and keeping max(kGrowPurgeMinKeepPages,
  /// nactive / kGrowPurgeActiveDiv) dirty.
  void purge_for_growth(size_t npages);
  /// opt.decay_hold_peak: active pages grew by `npages`; raise the current peak.
  void note_active_grown(size_t npages);
  /// opt.decay_hold_peak, dirty decay mutex held, decay_ms > 0: the dirty pages decay must not
  /// purge now -- how far active pages are below their peak over the last half to whole
  /// window of decay_ms. Rotates the two half-window peaks when a half window has passed.
  size_t hold_pages_locked(uint64_t now_ns, int64_t ms);
  /// The same without rotating: peak - active as the peaks stand (0 when active is higher).
  size_t held_pages_locked() const;
  /// Nanoseconds from now_ns until the hold's next rotation (0 when due); mutex held.
  uint64_t hold_ns_until_rotation_locked(uint64_t now_ns, int64_t ms) const;
  static constexpr size_t kGrowPurgeMinPages = 16;  // 64 KiB: one madvise per >= 16 pages
  static constexpr size_t kGrowPurgeMinKeepPages = (size_t{1} << 20) >> config::kLgPage;
  static constexpr size_t kGrowPurgeActiveDiv = 32;

  DecayPipeline decay_dirty_;
  DecayPipeline decay_muzzy_;
  std::atomic<size_t> nactive_{0};
  std::atomic<size_t> oversize_threshold_{0};
  std::atomic<uint64_t> sn_next_{0};
  std::atomic<bool> bounded_coalesce_{true};
  unsigned lg_max_fit_ = 6;
  bool reuse_before_grow_ = true;
  bool purge_on_grow_ = false;
  // opt.decay_hold_peak. peak_cur_ is raised by allocating threads (no lock); peak_prev_ and
  // peak_epoch_ns_ change only under the dirty decay mutex, which rotates them.
  bool decay_hold_peak_ = true;
  std::atomic<size_t> peak_cur_{0};
  size_t peak_prev_ = 0;
  uint64_t peak_epoch_ns_ = 0;
  bool retain_ = true;
  unsigned ind_ = 0;

  friend class PacTestAccess;
};

}  // namespace je
