// hold.h: the memory-return policy of the page allocators -- which freed pages decay may purge
// now, and which it must keep for the next round of work (doc/design/memory-return.md).
//
// Purpose: owns the policy's values and arithmetic in one place:
//   * ReturnPolicy: the options of ours that decide when freed pages go back (the hold, the
//     oversize arena's hold, decay of idle arenas, purging on growth), with the two presets;
//   * Hold: one arena's active page count, its recent peak and how busy it is -- the dirty
//     pages decay must spare (opt.decay_hold_peak), the rotation of the half-window peaks, the
//     oversize frees it keeps, and when a background thread needs to look again;
//   * hold_budget: the process-wide view the automatic arenas share (their summed active
//     pages and its peak), and each arena's share of it;
//   * kept: the process-wide bound on everything the policy keeps (holds, small extent caches,
//     grown thread-cache bins), sized from the memory the process may use.
// Pac owns one Hold and asks it at every decay step and free; the arena layer sums the
// arenas' holds and asks hold_budget::share for each one's cap. Nothing else decides what
// decay keeps.
// Layer: extent. Callers: pac (Hold), arena (arenas_hold_cap -> hold_budget; kept::init at
// boot), sec and thread/tcache (kept: what the caches keep), api/ctl (the presets).
// Concurrency: Hold's counters are relaxed atomics written by allocating and freeing threads
// (grown, shrunk); its rotation state changes only under the owning Pac's dirty decay mutex
// (the *_locked members). held() and estimate() read atomics only and may run unlocked (an
// estimate: the peaks may rotate meanwhile). hold_budget and kept are lock-free and
// process-wide; kept's limit is written once, at boot, before any arena exists.
// Invariants: active() == pages of extents the Pac handed out and not yet returned; the held
// pages never exceed peak + slack - active (never more than was resident at that peak); with
// the hold off, Hold keeps the active count only and holds nothing.
// jemalloc mapping: none (5.3.0 purges by age alone, decay.c); the active count is pa_shard's
// nactive (stats.arenas.<i>.pactive).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "support/config.h"

namespace je {

/// The options of ours that decide when freed pages go back to the system; built once from
/// the option table (src/api/init.cc) and handed to every arena.
struct ReturnPolicy {
  /// opt.decay_hold_peak: dirty decay spares the dip below the recent peak.
  bool hold_peak = true;
  /// opt.oversize_hold: the oversize arena (dirty decay 0) keeps its frees within the hold.
  /// Needs hold_peak.
  bool oversize_hold = true;
  /// opt.idle_arena_decay: decay ticks also advance automatic arenas nobody ticks.
  bool idle_arena_decay = true;
  /// opt.purge_on_grow: growth purges as many idle dirty pages as it took.
  bool purge_on_grow = false;
  /// opt.idle_return: one thread of ours runs decay steps while the application's threads do
  /// not (arena/background_thread.h), so a quiet process returns what it keeps by time.
  bool idle_return = true;
  /// opt.kept_max_bytes: the process-wide bound on what the holds and caches keep (kept::);
  /// 0 sizes it from the memory the process may use.
  size_t kept_max_bytes = 0;

  /// Our defaults.
  static constexpr ReturnPolicy ours() { return ReturnPolicy{}; }
  /// jemalloc 5.3.0's: purged by age alone, oversize frees at once, only ticked arenas decay.
  static constexpr ReturnPolicy jemalloc530() {
    return ReturnPolicy{.hold_peak = false,
                        .oversize_hold = false,
                        .idle_arena_decay = false,
                        .purge_on_grow = false,
                        .idle_return = false};
  }
  bool operator==(const ReturnPolicy&) const = default;
};

/// The hold's slack: a round carves its blocks from the pieces the last round freed and leaves
/// crumbs that none of its requests fits (the spare pad page when two freed 8 MiB neighbours
/// serve a 16 MiB block), resident at the peak as well. Held to the bare dip below the peak,
/// those pages pushed the dirty count over the hold, decay purged whole extents to shed them,
/// and the next round faulted in a block it had just given back. So the hold keeps up to 1/64
/// of the peak more while the arena is busy -- it allocated or freed extents within the last
/// kHoldSlackQuietHalves half windows (two whole windows): an idle arena holds nothing beyond
/// its peak from then on. A round's big blocks may sit at their peak for longer than a window
/// with no extent activity at all (a query's hash tables, full, while the query works), and
/// its crumbs must outlast that; a bound by the dip seen in the window, or by activity in the
/// last window alone, purged them there.
inline constexpr unsigned kLgHoldSlack = 6;
inline constexpr unsigned kHoldSlackQuietHalves = 4;
constexpr size_t hold_slack(size_t peak, bool busy) { return busy ? peak >> kLgHoldSlack : 0; }

/// opt.purge_on_grow. Growth comes only when nothing cached fits the request, so the dirty
/// pages an arena holds are in pieces too small for it (or, with reuse_before_grow off, beyond
/// the reuse ratio): resident, yet not serving the demand that now faults in new pages.
/// Purging as many of them as were just grown keeps the footprint from stacking the two. Only
/// pieces of at least kGrowPurgeMinPages go -- one madvise each, so the cost per page stays
/// low (purging slab-sized pieces one by one cost more time than it saved memory) -- and a
/// reserve of max(kGrowPurgeMinKeepPages, active / kGrowPurgeActiveDiv) stays dirty. The
/// oversize arena's immediate hold purges on every growth, with no reserve (the hold is its
/// reserve): its held extents were too small for the request, and keeping them beside the new
/// one would stack the two.
inline constexpr size_t kGrowPurgeMinPages = 16;  // 64 KiB with 4 KiB pages
inline constexpr size_t kGrowPurgeMinKeepPages = (size_t{1} << 20) >> config::kLgPage;  // 1 MiB
inline constexpr size_t kGrowPurgeActiveDiv = 32;
/// How many of `ndirty` dirty pages to purge after growing by `grown` with `nactive` active;
/// `immediate`: the oversize arena's immediate hold. 0: none.
constexpr size_t growth_purge_pages(size_t grown, size_t ndirty, size_t nactive, bool immediate) {
  const size_t keep = immediate ? 0
                      : nactive / kGrowPurgeActiveDiv > kGrowPurgeMinKeepPages
                          ? nactive / kGrowPurgeActiveDiv
                          : kGrowPurgeMinKeepPages;
  if (ndirty <= keep + kGrowPurgeMinPages) return 0;
  return ndirty - keep < grown ? ndirty - keep : grown;
}

/// One arena's hold (opt.decay_hold_peak). A server that runs the same work again and again
/// frees most of its memory at the end of each round and takes it back at the start of the
/// next; decay, purging by age alone, cannot tell that dip from memory never used again. The
/// hold remembers the highest active page count of the last one to two half windows of the
/// dirty decay time and keeps that many dirty pages beyond active, so a return to the peak is
/// served from the dirty cache. When the work does not come back the peak ages out within a
/// window and decay purges as 5.3.0 does (only later).
class Hold {
 public:
  struct Config {
    bool on = true;              // ReturnPolicy::hold_peak
    bool shares_budget = false;  // counted in hold_budget (automatic and oversize arenas)
    /// opt.oversize_hold: while dirty decay is 0, purge down to the hold, whose window is this
    /// many milliseconds, instead of to nothing. 0: off.
    int64_t immediate_ms = 0;
  };
  /// Settings normalized: budget sharing and the immediate hold need the hold on.
  void init(const Config& c, uint64_t now_ns);

  bool on() const { return on_; }
  /// opt.oversize_hold is in force: dirty decay is 0 and frees are held.
  bool immediate(int64_t dirty_ms) const { return immediate_ms_ > 0 && dirty_ms == 0; }
  /// The hold's window for a dirty decay time of `ms`: ms itself when timed, the immediate
  /// hold's window at 0, none (0) at -1.
  int64_t window_ms(int64_t ms) const { return ms > 0 ? ms : ms == 0 ? immediate_ms_ : 0; }

  /// Active pages (stats pactive).
  size_t active() const { return active_.load(std::memory_order_relaxed); }
  /// `npages` became active: raise the current peak, mark the arena busy, publish.
  void grown(size_t npages);
  /// `npages` went back (freed, shrunk).
  void shrunk(size_t npages);

  /// Dirty decay mutex held, window `ms` > 0: the dirty pages decay must not purge now --
  /// how far active pages are below their peak over the last half to whole window. Rotates the
  /// two half-window peaks when a half window has passed. 0 with the hold off.
  size_t rotate_locked(uint64_t now_ns, int64_t ms);
  /// Dirty decay mutex held: the dirty pages decay must keep now -- decay's own `decay_limit`
  /// or the hold (rotate_locked over window `ms`) capped by the arena's share `cap`, whichever
  /// is more.
  size_t floor_locked(uint64_t now_ns, int64_t ms, size_t decay_limit, size_t cap) {
    const size_t hold = rotate_locked(now_ns, ms);
    const size_t kept = hold < cap ? hold : cap;
    return kept > decay_limit ? kept : decay_limit;
  }
  /// The decay time changed: the windows restart now. Dirty decay mutex held.
  void restart_locked(uint64_t now_ns) { epoch_ns_ = now_ns; }
  /// Nanoseconds from now_ns until the next rotation (0 when due). Dirty decay mutex held.
  uint64_t ns_until_rotation_locked(uint64_t now_ns, int64_t ms) const;
  /// peak + slack - active as the peaks stand, without rotating (0 when active is higher).
  /// Atomics only: callable without the mutex (an estimate then).
  size_t held() const;
  /// held(), or 0 when the hold is off or dirty decay (`dirty_ms`) is not timed.
  size_t estimate(int64_t dirty_ms) const { return on_ && window_ms(dirty_ms) > 0 ? held() : 0; }
  /// Whether a freed extent of `npages` at or above the oversize threshold stays dirty with
  /// timed decay (5.3.0 purges it at once): the hold covers it together with the `ndirty`
  /// pages already dirty. Lock-free.
  bool keeps_oversize(size_t npages, size_t ndirty, int64_t dirty_ms) const {
    return on_ && dirty_ms > 0 && ndirty + npages <= held();
  }
  /// For a background thread deciding how long to sleep (dirty decay mutex held, timed decay
  /// `ms`): with `current` dirty pages, decay's own floor `decay_limit` and the arena's share
  /// `cap`, the pages the hold keeps leave fewer than `threshold` purgeable above both: wake
  /// no earlier than the next rotation (the nanoseconds returned), or the caller would wake
  /// every epoch to find nothing to do. 0: no such constraint.
  uint64_t ns_not_before_locked(uint64_t now_ns, int64_t ms, size_t current, size_t decay_limit,
                                uint64_t threshold, size_t cap) const;

 private:
  void note_busy() {
    // Read first: the line is written once per half window, not on every extent.
    if (!busy_cur_.load(std::memory_order_relaxed))
      busy_cur_.store(true, std::memory_order_relaxed);
  }

  bool on_ = true;
  bool shares_budget_ = false;
  int64_t immediate_ms_ = 0;
  std::atomic<size_t> active_{0};
  // peak_cur_ is raised by allocating threads (no lock); peak_prev_ and epoch_ns_ change only
  // under the dirty decay mutex, which rotates them (peak_prev_ is atomic for held()).
  std::atomic<size_t> peak_cur_{0};
  std::atomic<size_t> peak_prev_{0};
  uint64_t epoch_ns_ = 0;
  // Whether extents were allocated or freed in the current half window (the slack), and how
  // many half windows before it passed without (counted at rotations, mutex held).
  std::atomic<bool> busy_cur_{false};
  std::atomic<unsigned> quiet_halves_{kHoldSlackQuietHalves};
  // The immediate hold: the highest active count a free started from since the last decay
  // step (0: none since), which that step takes (rotate_locked).
  std::atomic<size_t> freed_from_{0};
};

/// The process-wide view of the holds: the active pages of the arenas that share the budget
/// (Hold::Config::shares_budget), summed in granules of kGranulePages as each arena's count
/// crosses a granule boundary (so the sum is within one granule per arena of the truth, and
/// the hot path pays an atomic only every granule), and the highest sum over the current and
/// the previous half window. Together the sharing arenas hold at most the process-wide dip.
namespace hold_budget {
inline constexpr unsigned kLgGranulePages = 6;  // 64 pages (256 KiB with 4 KiB pages)
inline constexpr size_t kGranulePages = size_t{1} << kLgGranulePages;
/// A sharing arena's active count went from `before` to `after` pages.
void publish(size_t before, size_t after);
/// Published active pages now.
size_t active_pages();
/// The highest published sum over the current and previous half window of `ms` milliseconds
/// (ms > 0); rotates the halves when due.
size_t peak_pages(uint64_t now_ns, int64_t ms);
/// An arena's cap on its hold: `own` pages of the `held` that the `holders` sharing arenas
/// (those holding anything) hold together, scaled down to their share of the process-wide dip
/// when the holds add up to more. SIZE_MAX: no cap.
size_t share(size_t own, size_t held, size_t holders, uint64_t now_ns, int64_t ms);
}  // namespace hold_budget

/// Rule 3 of the policy: what it keeps beyond the allocated -- the holds, the small extent
/// caches (Sec) and grown thread-cache bins -- stays within one process-wide limit, so that
/// hundreds of threads or arenas (a container on a host with many CPUs) cannot keep gigabytes
/// through per-thread and per-arena caps. The limit is 1/2^kLgShareOfMemory of the memory the
/// process may use (its cgroup's memory.max, else the machine's memory: sysinfo::memory_limit),
/// or opt.kept_max_bytes. The caches, which keep memory for requests of exactly their sizes,
/// may fill half of it; the holds, which keep whatever the next round needs, get the rest
/// (hold_budget::share is capped by hold_room_pages()). Caches publish their byte counts here
/// (cache_publish) and ask for room before they grow (cache_room).
namespace kept {
inline constexpr unsigned kLgShareOfMemory = 3;
/// Caches whose counts change on hot paths (Sec) publish them in granules of this many bytes,
/// as hold_budget does pages: the sum is short by less than a granule per cache.
inline constexpr unsigned kLgGranule = 16;  // 64 KiB: one of the largest extents Sec keeps
/// The limit for opt.kept_max_bytes `configured` and `memory` bytes the process may use (0:
/// unknown); SIZE_MAX: none.
constexpr size_t limit_for(size_t configured, size_t memory) {
  return configured != 0 ? configured : memory != 0 ? memory >> kLgShareOfMemory : SIZE_MAX;
}
/// At boot, before any arena: limit_for(configured, sysinfo::memory_limit()).
void init(size_t configured);
/// The limit in force, in bytes (SIZE_MAX: none).
size_t limit();
/// Sets the limit directly (tests).
void set_limit(size_t bytes);
/// A cache's byte count went from `before` to `after`; `lg_granule` 0 publishes it exactly.
void cache_publish(size_t before, size_t after, unsigned lg_granule);
/// Bytes the caches keep, as published.
size_t cache_bytes();
/// How many more bytes the caches may keep together (0 once they hold half the limit).
size_t cache_room();
/// How many pages the holds may keep together: the limit less what the caches keep.
size_t hold_room_pages();
}  // namespace kept

}  // namespace je
