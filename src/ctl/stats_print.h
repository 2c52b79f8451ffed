// stats_print.h: malloc_stats_print -- the human-readable and JSON statistics report.
//
// Purpose: jemalloc 5.3.0's report, section for section: general information (version,
// config.*, opt.*, arenas.*), global statistics and mutexes, then the merged view of all
// arenas, the destroyed-arenas view and every initialized arena (decay, small/large counts,
// memory, mutexes, bins, large classes, free extents, HPA shard). The text form has 5.3.0's
// headings, labels and column layout; the JSON form (`J`) has its key paths. Features this
// build leaves out appear as in a 5.3.0 build without them: no profiling settings and no
// opt.prof* lines (config.prof false), background-thread and HPA figures all 0.
// Ours, added after 5.3.0's content of each arena section in both forms: the dirty-path
// counters (stats.arenas.<i>.dirty_merges, dirty_merges_refused, evict_merges,
// {dirty,muzzy,retained,fresh}_allocs and _alloc_pages), and opt.bounded_coalesce,
// opt.idle_arena_decay, opt.reuse_before_grow, opt.extent_best_fit, opt.purge_on_grow,
// opt.borrow_dirty, opt.decay_hold_peak and opt.oversize_hold after the other options.
// Option letters: J JSON; g general, m merged, d destroyed, a per-arena, b bins, l large,
// x mutexes, e extents, h HPA (each omits its section); other characters are ignored.
// Output reaches the callback in chunks from a buffer on the stack: the callback is called
// many times and nothing is allocated, so a client may call this while its own buffers are
// reserved or from a context where malloc must not be re-entered.
// Layer: ctl. Callers: src/api (malloc_stats_print, the stats_print option at exit).
// Concurrency: thread-safe; each value is read through ctl (ctl mutex, LockRank::kCtl). The
// callback runs with no allocator lock held and may itself call mallctl or allocate.
// Invariants: writes `epoch` first, so the report is one consistent snapshot.
// jemalloc mapping: stats.c (stats_print, stats_general_print, stats_print_helper,
// stats_arena_print and its bins/lextents/extents/hpa/mutex tables).
#pragma once

namespace je {

/// Prints the statistics report through write_cb(cbopaque, chunk), or through io_write (the
/// public malloc_message, else stderr) when write_cb is null. `opts` may be null.
void stats_print(void (*write_cb)(void*, const char*), void* cbopaque, const char* opts);

}  // namespace je
