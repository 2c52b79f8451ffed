// ctl_handlers.h: the leaf handlers and index checks the mallctl tree points at.
//
// Purpose: the tree (ctl_tree.cc) is pure data; the code behind each leaf lives in the module
// that owns the data it reports: ctl.cc (version, epoch, thread.*, config.*, opt.*, tcache.*,
// arenas.*, background threads), ctl_arena.cc (arena.<i>.*), ctl_stats.cc (stats.*, which also
// defines that subtree because its leaves are generated from the snapshot's fields). This header
// declares what crosses those files.
// Layer: ctl (internal to src/ctl).
// Concurrency: `g_ctl_mtx` (LockRank::kCtl) guards the snapshot, arena creation/destruction
// through ctl and the ctl-owned settings; lookups hold it while index checks run. Handlers take
// it themselves where jemalloc does, and not while calling code that may run user extent hooks
// (purge, decay, reset, decay-time changes), so such a hook may itself call mallctl; the one
// exception is arena.<i>.destroy (see ctl_arena.cc).
// Invariants: a handler touches the request only through the ctl_io.h helpers, and reads MIB
// components only at positions the tree has validated for its leaf.
// jemalloc mapping: the *_ctl functions and ctl_mtx of ctl.c.
#pragma once

#include <cstddef>

#include "ctl/ctl_io.h"
#include "ctl/ctl_tree.h"
#include "support/mutex.h"

namespace je::ctl {

/// The ctl mutex (jemalloc's ctl_mtx).
extern Mutex g_ctl_mtx;

/// Lazily builds the ctl state (first snapshot). Call with g_ctl_mtx held; false on OOM.
bool ensure_booted();

/// A name that exists in 5.3.0's tree but has no data or feature here: always ENOENT (prof.*
/// in a build without profiling, experimental.*, counters nobody keeps; see doc/mallctl.md).
int node_absent(Req& r);

// ---- subtrees defined outside ctl_tree.cc ---------------------------------------------------

/// Children of `stats` (ctl_stats.cc).
inline constexpr size_t kNStatsChildren = 11;
extern const Node kStatsChildren[kNStatsChildren];

/// Children of `arena.<i>` (ctl_arena.cc), and the check of <i>.
inline constexpr size_t kNArenaChildren = 13;
extern const Node kArenaChildren[kNArenaChildren];
bool index_arena(const size_t* mib, size_t pos, size_t index);

// ---- ctl.cc -----------------------------------------------------------------------------------

int node_version(Req& r);
int node_epoch(Req& r);
int node_background_thread(Req& r);
int node_max_background_threads(Req& r);

int node_thread_arena(Req& r);
int node_thread_allocated(Req& r);
int node_thread_allocatedp(Req& r);
int node_thread_deallocated(Req& r);
int node_thread_deallocatedp(Req& r);
int node_thread_tcache_enabled(Req& r);
int node_thread_tcache_flush(Req& r);
int node_thread_peak_read(Req& r);
int node_thread_peak_reset(Req& r);
int node_thread_idle(Req& r);

int node_config_malloc_conf(Req& r);
/// opt.<name>: the option at position mib[1] of the opt node, read from the option table.
int node_opt(Req& r);

int node_tcache_create(Req& r);
int node_tcache_flush(Req& r);
int node_tcache_destroy(Req& r);

int node_arenas_narenas(Req& r);
int node_arenas_dirty_decay_ms(Req& r);
int node_arenas_muzzy_decay_ms(Req& r);
int node_arenas_bounded_coalesce(Req& r);  // ours
int node_arenas_tcache_max(Req& r);
int node_arenas_nhbins(Req& r);
int node_arenas_lextent_size(Req& r);
int node_arenas_create(Req& r);
int node_arenas_lookup(Req& r);
/// approximate_stats.active (5.3.1): the arenas' active pages in bytes, read without an epoch.
int node_approximate_stats_active(Req& r);
int node_experimental_utilization_query(Req& r);
int node_experimental_utilization_batch_query(Req& r);
int node_experimental_arenas_create_ext(Req& r);
int node_experimental_batch_alloc(Req& r);
int node_experimental_hooks_safety_check_abort(Req& r);

// ---- ctl_prof.cc --------------------------------------------------------------------------------

int node_prof_thread_active_init(Req& r);
int node_prof_active(Req& r);
int node_prof_dump(Req& r);
int node_prof_gdump(Req& r);
int node_prof_prefix(Req& r);
int node_prof_reset(Req& r);
int node_prof_interval(Req& r);
int node_prof_lg_sample(Req& r);
int node_thread_prof_name(Req& r);
int node_prof_stats_bins_live(Req& r);
int node_prof_stats_bins_accum(Req& r);
int node_prof_stats_lextents_live(Req& r);
int node_prof_stats_lextents_accum(Req& r);
bool index_prof_stats_bin(const size_t* mib, size_t miblen, size_t i);
bool index_prof_stats_lextent(const size_t* mib, size_t miblen, size_t i);
int node_thread_prof_active(Req& r);
int node_experimental_hooks_prof_backtrace(Req& r);
int node_experimental_hooks_prof_dump(Req& r);
int node_experimental_prof_recent_alloc_max(Req& r);
int node_experimental_prof_recent_alloc_dump(Req& r);
int node_prof_log_start(Req& r);
int node_prof_log_stop(Req& r);

/// stats.zero_reallocs (live, not part of the snapshot -- as in 5.3.0).
int node_stats_zero_reallocs(Req& r);

}  // namespace je::ctl
