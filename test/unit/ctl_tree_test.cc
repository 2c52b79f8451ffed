// ctl_tree_test.cc: the mallctl name tree against jemalloc 5.3.0's.
//
// The table below is the golden name list (test/integration/data/mallctl-names-5.3.0.txt,
// 395 names) with, for each name, the MIB Debian's libjemalloc2 5.3.0 returns from
// mallctlnametomib with every <i> set to 0 (empty: that library answers ENOENT, because
// prof.stats.* exist only with prof_stats enabled). The tests check that our tree has exactly
// these names plus our documented additions, that every MIB is the real library's, and which
// names answer ENOENT on purpose.
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "arena/arenas.h"
#include "ctl/ctl.h"
#include "ctl/ctl_tree.h"
#include "ctl/opt.h"
#include "extent/pac_stats.h"
#include "meta/base.h"
#include "os/pages.h"
#include "support/config.h"
#include "thread/core_boot.h"
#include "thread/tcache.h"
#include "thread/tsd.h"

namespace je {
namespace {

struct GoldenRow {
  const char* name;
  const char* mib;
};

constexpr GoldenRow kGolden[] = {
    {"arena.<i>.decay", "8.0.1"},
    {"arena.<i>.destroy", "8.0.4"},
    {"arena.<i>.dirty_decay_ms", "8.0.7"},
    {"arena.<i>.dss", "8.0.5"},
    {"arena.<i>.extent_hooks", "8.0.9"},
    {"arena.<i>.initialized", "8.0.0"},
    {"arena.<i>.muzzy_decay_ms", "8.0.8"},
    {"arena.<i>.oversize_threshold", "8.0.6"},
    {"arena.<i>.purge", "8.0.2"},
    {"arena.<i>.reset", "8.0.3"},
    {"arena.<i>.retain_grow_limit", "8.0.10"},
    {"arenas.bin.<i>.nregs", "9.8.0.1"},
    {"arenas.bin.<i>.nshards", "9.8.0.3"},
    {"arenas.bin.<i>.size", "9.8.0.0"},
    {"arenas.bin.<i>.slab_size", "9.8.0.2"},
    {"arenas.create", "9.11"},
    {"arenas.dirty_decay_ms", "9.1"},
    {"arenas.lextent.<i>.size", "9.10.0.0"},
    {"arenas.lookup", "9.12"},
    {"arenas.muzzy_decay_ms", "9.2"},
    {"arenas.narenas", "9.0"},
    {"arenas.nbins", "9.6"},
    {"arenas.nhbins", "9.7"},
    {"arenas.nlextents", "9.9"},
    {"arenas.page", "9.4"},
    {"arenas.quantum", "9.3"},
    {"arenas.tcache_max", "9.5"},
    {"background_thread", "2"},
    {"config.cache_oblivious", "5.0"},
    {"config.debug", "5.1"},
    {"config.fill", "5.2"},
    {"config.lazy_lock", "5.3"},
    {"config.malloc_conf", "5.4"},
    {"config.opt_safety_checks", "5.5"},
    {"config.prof", "5.6"},
    {"config.prof_libgcc", "5.7"},
    {"config.prof_libunwind", "5.8"},
    {"config.stats", "5.9"},
    {"config.utrace", "5.10"},
    {"config.xmalloc", "5.11"},
    {"epoch", "1"},
    {"experimental.arenas.<i>.pactivep", "12.2.0.0"},
    {"experimental.arenas_create_ext", "12.3"},
    {"experimental.batch_alloc", "12.5"},
    {"experimental.hooks.install", "12.0.0"},
    {"experimental.hooks.prof_backtrace", "12.0.2"},
    {"experimental.hooks.prof_dump", "12.0.3"},
    {"experimental.hooks.remove", "12.0.1"},
    {"experimental.hooks.safety_check_abort", "12.0.4"},
    {"experimental.prof_recent.alloc_dump", "12.4.1"},
    {"experimental.prof_recent.alloc_max", "12.4.0"},
    {"experimental.thread.activity_callback", "12.6.0"},
    {"experimental.utilization.batch_query", "12.1.1"},
    {"experimental.utilization.query", "12.1.0"},
    {"max_background_threads", "3"},
    {"opt.abort", "6.0"},
    {"opt.abort_conf", "6.1"},
    {"opt.background_thread", "6.23"},
    {"opt.cache_oblivious", "6.2"},
    {"opt.confirm_conf", "6.4"},
    {"opt.dirty_decay_ms", "6.25"},
    {"opt.dss", "6.18"},
    {"opt.experimental_infallible_new", "6.35"},
    {"opt.hpa", "6.5"},
    {"opt.hpa_dirty_mult", "6.10"},
    {"opt.hpa_hugification_threshold", "6.7"},
    {"opt.hpa_hugify_delay_ms", "6.8"},
    {"opt.hpa_min_purge_interval_ms", "6.9"},
    {"opt.hpa_sec_batch_fill_extra", "6.15"},
    {"opt.hpa_sec_bytes_after_flush", "6.14"},
    {"opt.hpa_sec_max_alloc", "6.12"},
    {"opt.hpa_sec_max_bytes", "6.13"},
    {"opt.hpa_sec_nshards", "6.11"},
    {"opt.hpa_slab_max_alloc", "6.6"},
    {"opt.junk", "6.31"},
    {"opt.lg_extent_max_active_fit", "6.47"},
    {"opt.lg_prof_interval", "6.53"},
    {"opt.lg_prof_sample", "6.52"},
    {"opt.lg_san_uaf_align", "6.63"},
    {"opt.lg_tcache_flush_large_div", "6.45"},
    {"opt.lg_tcache_flush_small_div", "6.44"},
    {"opt.lg_tcache_nslots_mul", "6.41"},
    {"opt.max_background_threads", "6.24"},
    {"opt.metadata_thp", "6.16"},
    {"opt.mutex_max_spin", "6.22"},
    {"opt.muzzy_decay_ms", "6.26"},
    {"opt.narenas", "6.19"},
    {"opt.oversize_threshold", "6.21"},
    {"opt.percpu_arena", "6.20"},
    {"opt.prof", "6.48"},
    {"opt.prof_accum", "6.58"},
    {"opt.prof_active", "6.50"},
    {"opt.prof_final", "6.55"},
    {"opt.prof_gdump", "6.54"},
    {"opt.prof_leak", "6.56"},
    {"opt.prof_leak_error", "6.57"},
    {"opt.prof_prefix", "6.49"},
    {"opt.prof_recent_alloc_max", "6.59"},
    {"opt.prof_stats", "6.60"},
    {"opt.prof_sys_thread_name", "6.61"},
    {"opt.prof_thread_active_init", "6.51"},
    {"opt.prof_time_resolution", "6.62"},
    {"opt.retain", "6.17"},
    {"opt.stats_interval", "6.29"},
    {"opt.stats_interval_opts", "6.30"},
    {"opt.stats_print", "6.27"},
    {"opt.stats_print_opts", "6.28"},
    {"opt.tcache", "6.36"},
    {"opt.tcache_gc_delay_bytes", "6.43"},
    {"opt.tcache_gc_incr_bytes", "6.42"},
    {"opt.tcache_max", "6.37"},
    {"opt.tcache_nslots_large", "6.40"},
    {"opt.tcache_nslots_small_max", "6.39"},
    {"opt.tcache_nslots_small_min", "6.38"},
    {"opt.thp", "6.46"},
    {"opt.trust_madvise", "6.3"},
    {"opt.utrace", "6.33"},
    {"opt.xmalloc", "6.34"},
    {"opt.zero", "6.32"},
    {"opt.zero_realloc", "6.64"},
    {"prof.active", "10.1"},
    {"prof.dump", "10.2"},
    {"prof.gdump", "10.3"},
    {"prof.interval", "10.6"},
    {"prof.lg_sample", "10.7"},
    {"prof.log_start", "10.8"},
    {"prof.log_stop", "10.9"},
    {"prof.prefix", "10.4"},
    {"prof.reset", "10.5"},
    {"prof.stats.bins.<i>.accum", ""},
    {"prof.stats.bins.<i>.live", ""},
    {"prof.stats.lextents.<i>.accum", ""},
    {"prof.stats.lextents.<i>.live", ""},
    {"prof.thread_active_init", "10.0"},
    {"stats.active", "11.1"},
    {"stats.allocated", "11.0"},
    {"stats.arenas.<i>.abandoned_vm", "11.9.0.23"},
    {"stats.arenas.<i>.base", "11.9.0.17"},
    {"stats.arenas.<i>.bins.<i>.curregs", "11.9.0.27.0.3"},
    {"stats.arenas.<i>.bins.<i>.curslabs", "11.9.0.27.0.8"},
    {"stats.arenas.<i>.bins.<i>.mutex.max_num_thds", "11.9.0.27.0.10.6"},
    {"stats.arenas.<i>.bins.<i>.mutex.max_wait_time", "11.9.0.27.0.10.5"},
    {"stats.arenas.<i>.bins.<i>.mutex.num_ops", "11.9.0.27.0.10.0"},
    {"stats.arenas.<i>.bins.<i>.mutex.num_owner_switch", "11.9.0.27.0.10.3"},
    {"stats.arenas.<i>.bins.<i>.mutex.num_spin_acq", "11.9.0.27.0.10.2"},
    {"stats.arenas.<i>.bins.<i>.mutex.num_wait", "11.9.0.27.0.10.1"},
    {"stats.arenas.<i>.bins.<i>.mutex.total_wait_time", "11.9.0.27.0.10.4"},
    {"stats.arenas.<i>.bins.<i>.ndalloc", "11.9.0.27.0.1"},
    {"stats.arenas.<i>.bins.<i>.nfills", "11.9.0.27.0.4"},
    {"stats.arenas.<i>.bins.<i>.nflushes", "11.9.0.27.0.5"},
    {"stats.arenas.<i>.bins.<i>.nmalloc", "11.9.0.27.0.0"},
    {"stats.arenas.<i>.bins.<i>.nonfull_slabs", "11.9.0.27.0.9"},
    {"stats.arenas.<i>.bins.<i>.nrequests", "11.9.0.27.0.2"},
    {"stats.arenas.<i>.bins.<i>.nreslabs", "11.9.0.27.0.7"},
    {"stats.arenas.<i>.bins.<i>.nslabs", "11.9.0.27.0.6"},
    {"stats.arenas.<i>.dirty_decay_ms", "11.9.0.3"},
    {"stats.arenas.<i>.dirty_nmadvise", "11.9.0.12"},
    {"stats.arenas.<i>.dirty_npurge", "11.9.0.11"},
    {"stats.arenas.<i>.dirty_purged", "11.9.0.13"},
    {"stats.arenas.<i>.dss", "11.9.0.2"},
    {"stats.arenas.<i>.extent_avail", "11.9.0.10"},
    {"stats.arenas.<i>.extents.<i>.dirty_bytes", "11.9.0.29.0.3"},
    {"stats.arenas.<i>.extents.<i>.muzzy_bytes", "11.9.0.29.0.4"},
    {"stats.arenas.<i>.extents.<i>.ndirty", "11.9.0.29.0.0"},
    {"stats.arenas.<i>.extents.<i>.nmuzzy", "11.9.0.29.0.1"},
    {"stats.arenas.<i>.extents.<i>.nretained", "11.9.0.29.0.2"},
    {"stats.arenas.<i>.extents.<i>.retained_bytes", "11.9.0.29.0.5"},
    {"stats.arenas.<i>.hpa_sec_bytes", "11.9.0.24"},
    {"stats.arenas.<i>.hpa_shard.empty_slabs.nactive_huge", "11.9.0.31.1.3"},
    {"stats.arenas.<i>.hpa_shard.empty_slabs.nactive_nonhuge", "11.9.0.31.1.2"},
    {"stats.arenas.<i>.hpa_shard.empty_slabs.ndirty_huge", "11.9.0.31.1.5"},
    {"stats.arenas.<i>.hpa_shard.empty_slabs.ndirty_nonhuge", "11.9.0.31.1.4"},
    {"stats.arenas.<i>.hpa_shard.empty_slabs.npageslabs_huge", "11.9.0.31.1.1"},
    {"stats.arenas.<i>.hpa_shard.empty_slabs.npageslabs_nonhuge", "11.9.0.31.1.0"},
    {"stats.arenas.<i>.hpa_shard.full_slabs.nactive_huge", "11.9.0.31.0.3"},
    {"stats.arenas.<i>.hpa_shard.full_slabs.nactive_nonhuge", "11.9.0.31.0.2"},
    {"stats.arenas.<i>.hpa_shard.full_slabs.ndirty_huge", "11.9.0.31.0.5"},
    {"stats.arenas.<i>.hpa_shard.full_slabs.ndirty_nonhuge", "11.9.0.31.0.4"},
    {"stats.arenas.<i>.hpa_shard.full_slabs.npageslabs_huge", "11.9.0.31.0.1"},
    {"stats.arenas.<i>.hpa_shard.full_slabs.npageslabs_nonhuge", "11.9.0.31.0.0"},
    {"stats.arenas.<i>.hpa_shard.ndehugifies", "11.9.0.31.6"},
    {"stats.arenas.<i>.hpa_shard.nhugifies", "11.9.0.31.5"},
    {"stats.arenas.<i>.hpa_shard.nonfull_slabs.<i>.nactive_huge", "11.9.0.31.2.0.3"},
    {"stats.arenas.<i>.hpa_shard.nonfull_slabs.<i>.nactive_nonhuge", "11.9.0.31.2.0.2"},
    {"stats.arenas.<i>.hpa_shard.nonfull_slabs.<i>.ndirty_huge", "11.9.0.31.2.0.5"},
    {"stats.arenas.<i>.hpa_shard.nonfull_slabs.<i>.ndirty_nonhuge", "11.9.0.31.2.0.4"},
    {"stats.arenas.<i>.hpa_shard.nonfull_slabs.<i>.npageslabs_huge", "11.9.0.31.2.0.1"},
    {"stats.arenas.<i>.hpa_shard.nonfull_slabs.<i>.npageslabs_nonhuge", "11.9.0.31.2.0.0"},
    {"stats.arenas.<i>.hpa_shard.npurge_passes", "11.9.0.31.3"},
    {"stats.arenas.<i>.hpa_shard.npurges", "11.9.0.31.4"},
    {"stats.arenas.<i>.internal", "11.9.0.18"},
    {"stats.arenas.<i>.large.allocated", "11.9.0.26.0"},
    {"stats.arenas.<i>.large.ndalloc", "11.9.0.26.2"},
    {"stats.arenas.<i>.large.nfills", "11.9.0.26.4"},
    {"stats.arenas.<i>.large.nflushes", "11.9.0.26.5"},
    {"stats.arenas.<i>.large.nmalloc", "11.9.0.26.1"},
    {"stats.arenas.<i>.large.nrequests", "11.9.0.26.3"},
    {"stats.arenas.<i>.lextents.<i>.curlextents", "11.9.0.28.0.3"},
    {"stats.arenas.<i>.lextents.<i>.ndalloc", "11.9.0.28.0.1"},
    {"stats.arenas.<i>.lextents.<i>.nmalloc", "11.9.0.28.0.0"},
    {"stats.arenas.<i>.lextents.<i>.nrequests", "11.9.0.28.0.2"},
    {"stats.arenas.<i>.mapped", "11.9.0.8"},
    {"stats.arenas.<i>.metadata_thp", "11.9.0.19"},
    {"stats.arenas.<i>.mutexes.base.max_num_thds", "11.9.0.30.7.6"},
    {"stats.arenas.<i>.mutexes.base.max_wait_time", "11.9.0.30.7.5"},
    {"stats.arenas.<i>.mutexes.base.num_ops", "11.9.0.30.7.0"},
    {"stats.arenas.<i>.mutexes.base.num_owner_switch", "11.9.0.30.7.3"},
    {"stats.arenas.<i>.mutexes.base.num_spin_acq", "11.9.0.30.7.2"},
    {"stats.arenas.<i>.mutexes.base.num_wait", "11.9.0.30.7.1"},
    {"stats.arenas.<i>.mutexes.base.total_wait_time", "11.9.0.30.7.4"},
    {"stats.arenas.<i>.mutexes.decay_dirty.max_num_thds", "11.9.0.30.5.6"},
    {"stats.arenas.<i>.mutexes.decay_dirty.max_wait_time", "11.9.0.30.5.5"},
    {"stats.arenas.<i>.mutexes.decay_dirty.num_ops", "11.9.0.30.5.0"},
    {"stats.arenas.<i>.mutexes.decay_dirty.num_owner_switch", "11.9.0.30.5.3"},
    {"stats.arenas.<i>.mutexes.decay_dirty.num_spin_acq", "11.9.0.30.5.2"},
    {"stats.arenas.<i>.mutexes.decay_dirty.num_wait", "11.9.0.30.5.1"},
    {"stats.arenas.<i>.mutexes.decay_dirty.total_wait_time", "11.9.0.30.5.4"},
    {"stats.arenas.<i>.mutexes.decay_muzzy.max_num_thds", "11.9.0.30.6.6"},
    {"stats.arenas.<i>.mutexes.decay_muzzy.max_wait_time", "11.9.0.30.6.5"},
    {"stats.arenas.<i>.mutexes.decay_muzzy.num_ops", "11.9.0.30.6.0"},
    {"stats.arenas.<i>.mutexes.decay_muzzy.num_owner_switch", "11.9.0.30.6.3"},
    {"stats.arenas.<i>.mutexes.decay_muzzy.num_spin_acq", "11.9.0.30.6.2"},
    {"stats.arenas.<i>.mutexes.decay_muzzy.num_wait", "11.9.0.30.6.1"},
    {"stats.arenas.<i>.mutexes.decay_muzzy.total_wait_time", "11.9.0.30.6.4"},
    {"stats.arenas.<i>.mutexes.extent_avail.max_num_thds", "11.9.0.30.1.6"},
    {"stats.arenas.<i>.mutexes.extent_avail.max_wait_time", "11.9.0.30.1.5"},
    {"stats.arenas.<i>.mutexes.extent_avail.num_ops", "11.9.0.30.1.0"},
    {"stats.arenas.<i>.mutexes.extent_avail.num_owner_switch", "11.9.0.30.1.3"},
    {"stats.arenas.<i>.mutexes.extent_avail.num_spin_acq", "11.9.0.30.1.2"},
    {"stats.arenas.<i>.mutexes.extent_avail.num_wait", "11.9.0.30.1.1"},
    {"stats.arenas.<i>.mutexes.extent_avail.total_wait_time", "11.9.0.30.1.4"},
    {"stats.arenas.<i>.mutexes.extents_dirty.max_num_thds", "11.9.0.30.2.6"},
    {"stats.arenas.<i>.mutexes.extents_dirty.max_wait_time", "11.9.0.30.2.5"},
    {"stats.arenas.<i>.mutexes.extents_dirty.num_ops", "11.9.0.30.2.0"},
    {"stats.arenas.<i>.mutexes.extents_dirty.num_owner_switch", "11.9.0.30.2.3"},
    {"stats.arenas.<i>.mutexes.extents_dirty.num_spin_acq", "11.9.0.30.2.2"},
    {"stats.arenas.<i>.mutexes.extents_dirty.num_wait", "11.9.0.30.2.1"},
    {"stats.arenas.<i>.mutexes.extents_dirty.total_wait_time", "11.9.0.30.2.4"},
    {"stats.arenas.<i>.mutexes.extents_muzzy.max_num_thds", "11.9.0.30.3.6"},
    {"stats.arenas.<i>.mutexes.extents_muzzy.max_wait_time", "11.9.0.30.3.5"},
    {"stats.arenas.<i>.mutexes.extents_muzzy.num_ops", "11.9.0.30.3.0"},
    {"stats.arenas.<i>.mutexes.extents_muzzy.num_owner_switch", "11.9.0.30.3.3"},
    {"stats.arenas.<i>.mutexes.extents_muzzy.num_spin_acq", "11.9.0.30.3.2"},
    {"stats.arenas.<i>.mutexes.extents_muzzy.num_wait", "11.9.0.30.3.1"},
    {"stats.arenas.<i>.mutexes.extents_muzzy.total_wait_time", "11.9.0.30.3.4"},
    {"stats.arenas.<i>.mutexes.extents_retained.max_num_thds", "11.9.0.30.4.6"},
    {"stats.arenas.<i>.mutexes.extents_retained.max_wait_time", "11.9.0.30.4.5"},
    {"stats.arenas.<i>.mutexes.extents_retained.num_ops", "11.9.0.30.4.0"},
    {"stats.arenas.<i>.mutexes.extents_retained.num_owner_switch", "11.9.0.30.4.3"},
    {"stats.arenas.<i>.mutexes.extents_retained.num_spin_acq", "11.9.0.30.4.2"},
    {"stats.arenas.<i>.mutexes.extents_retained.num_wait", "11.9.0.30.4.1"},
    {"stats.arenas.<i>.mutexes.extents_retained.total_wait_time", "11.9.0.30.4.4"},
    {"stats.arenas.<i>.mutexes.hpa_sec.max_num_thds", "11.9.0.30.11.6"},
    {"stats.arenas.<i>.mutexes.hpa_sec.max_wait_time", "11.9.0.30.11.5"},
    {"stats.arenas.<i>.mutexes.hpa_sec.num_ops", "11.9.0.30.11.0"},
    {"stats.arenas.<i>.mutexes.hpa_sec.num_owner_switch", "11.9.0.30.11.3"},
    {"stats.arenas.<i>.mutexes.hpa_sec.num_spin_acq", "11.9.0.30.11.2"},
    {"stats.arenas.<i>.mutexes.hpa_sec.num_wait", "11.9.0.30.11.1"},
    {"stats.arenas.<i>.mutexes.hpa_sec.total_wait_time", "11.9.0.30.11.4"},
    {"stats.arenas.<i>.mutexes.hpa_shard.max_num_thds", "11.9.0.30.9.6"},
    {"stats.arenas.<i>.mutexes.hpa_shard.max_wait_time", "11.9.0.30.9.5"},
    {"stats.arenas.<i>.mutexes.hpa_shard.num_ops", "11.9.0.30.9.0"},
    {"stats.arenas.<i>.mutexes.hpa_shard.num_owner_switch", "11.9.0.30.9.3"},
    {"stats.arenas.<i>.mutexes.hpa_shard.num_spin_acq", "11.9.0.30.9.2"},
    {"stats.arenas.<i>.mutexes.hpa_shard.num_wait", "11.9.0.30.9.1"},
    {"stats.arenas.<i>.mutexes.hpa_shard.total_wait_time", "11.9.0.30.9.4"},
    {"stats.arenas.<i>.mutexes.hpa_shard_grow.max_num_thds", "11.9.0.30.10.6"},
    {"stats.arenas.<i>.mutexes.hpa_shard_grow.max_wait_time", "11.9.0.30.10.5"},
    {"stats.arenas.<i>.mutexes.hpa_shard_grow.num_ops", "11.9.0.30.10.0"},
    {"stats.arenas.<i>.mutexes.hpa_shard_grow.num_owner_switch", "11.9.0.30.10.3"},
    {"stats.arenas.<i>.mutexes.hpa_shard_grow.num_spin_acq", "11.9.0.30.10.2"},
    {"stats.arenas.<i>.mutexes.hpa_shard_grow.num_wait", "11.9.0.30.10.1"},
    {"stats.arenas.<i>.mutexes.hpa_shard_grow.total_wait_time", "11.9.0.30.10.4"},
    {"stats.arenas.<i>.mutexes.large.max_num_thds", "11.9.0.30.0.6"},
    {"stats.arenas.<i>.mutexes.large.max_wait_time", "11.9.0.30.0.5"},
    {"stats.arenas.<i>.mutexes.large.num_ops", "11.9.0.30.0.0"},
    {"stats.arenas.<i>.mutexes.large.num_owner_switch", "11.9.0.30.0.3"},
    {"stats.arenas.<i>.mutexes.large.num_spin_acq", "11.9.0.30.0.2"},
    {"stats.arenas.<i>.mutexes.large.num_wait", "11.9.0.30.0.1"},
    {"stats.arenas.<i>.mutexes.large.total_wait_time", "11.9.0.30.0.4"},
    {"stats.arenas.<i>.mutexes.tcache_list.max_num_thds", "11.9.0.30.8.6"},
    {"stats.arenas.<i>.mutexes.tcache_list.max_wait_time", "11.9.0.30.8.5"},
    {"stats.arenas.<i>.mutexes.tcache_list.num_ops", "11.9.0.30.8.0"},
    {"stats.arenas.<i>.mutexes.tcache_list.num_owner_switch", "11.9.0.30.8.3"},
    {"stats.arenas.<i>.mutexes.tcache_list.num_spin_acq", "11.9.0.30.8.2"},
    {"stats.arenas.<i>.mutexes.tcache_list.num_wait", "11.9.0.30.8.1"},
    {"stats.arenas.<i>.mutexes.tcache_list.total_wait_time", "11.9.0.30.8.4"},
    {"stats.arenas.<i>.muzzy_decay_ms", "11.9.0.4"},
    {"stats.arenas.<i>.muzzy_nmadvise", "11.9.0.15"},
    {"stats.arenas.<i>.muzzy_npurge", "11.9.0.14"},
    {"stats.arenas.<i>.muzzy_purged", "11.9.0.16"},
    {"stats.arenas.<i>.nthreads", "11.9.0.0"},
    {"stats.arenas.<i>.pactive", "11.9.0.5"},
    {"stats.arenas.<i>.pdirty", "11.9.0.6"},
    {"stats.arenas.<i>.pmuzzy", "11.9.0.7"},
    {"stats.arenas.<i>.resident", "11.9.0.22"},
    {"stats.arenas.<i>.retained", "11.9.0.9"},
    {"stats.arenas.<i>.small.allocated", "11.9.0.25.0"},
    {"stats.arenas.<i>.small.ndalloc", "11.9.0.25.2"},
    {"stats.arenas.<i>.small.nfills", "11.9.0.25.4"},
    {"stats.arenas.<i>.small.nflushes", "11.9.0.25.5"},
    {"stats.arenas.<i>.small.nmalloc", "11.9.0.25.1"},
    {"stats.arenas.<i>.small.nrequests", "11.9.0.25.3"},
    {"stats.arenas.<i>.tcache_bytes", "11.9.0.20"},
    {"stats.arenas.<i>.tcache_stashed_bytes", "11.9.0.21"},
    {"stats.arenas.<i>.uptime", "11.9.0.1"},
    {"stats.background_thread.num_runs", "11.7.1"},
    {"stats.background_thread.num_threads", "11.7.0"},
    {"stats.background_thread.run_interval", "11.7.2"},
    {"stats.mapped", "11.5"},
    {"stats.metadata", "11.2"},
    {"stats.metadata_thp", "11.3"},
    {"stats.mutexes.background_thread.max_num_thds", "11.8.0.6"},
    {"stats.mutexes.background_thread.max_wait_time", "11.8.0.5"},
    {"stats.mutexes.background_thread.num_ops", "11.8.0.0"},
    {"stats.mutexes.background_thread.num_owner_switch", "11.8.0.3"},
    {"stats.mutexes.background_thread.num_spin_acq", "11.8.0.2"},
    {"stats.mutexes.background_thread.num_wait", "11.8.0.1"},
    {"stats.mutexes.background_thread.total_wait_time", "11.8.0.4"},
    {"stats.mutexes.ctl.max_num_thds", "11.8.2.6"},
    {"stats.mutexes.ctl.max_wait_time", "11.8.2.5"},
    {"stats.mutexes.ctl.num_ops", "11.8.2.0"},
    {"stats.mutexes.ctl.num_owner_switch", "11.8.2.3"},
    {"stats.mutexes.ctl.num_spin_acq", "11.8.2.2"},
    {"stats.mutexes.ctl.num_wait", "11.8.2.1"},
    {"stats.mutexes.ctl.total_wait_time", "11.8.2.4"},
    {"stats.mutexes.max_per_bg_thd.max_num_thds", "11.8.1.6"},
    {"stats.mutexes.max_per_bg_thd.max_wait_time", "11.8.1.5"},
    {"stats.mutexes.max_per_bg_thd.num_ops", "11.8.1.0"},
    {"stats.mutexes.max_per_bg_thd.num_owner_switch", "11.8.1.3"},
    {"stats.mutexes.max_per_bg_thd.num_spin_acq", "11.8.1.2"},
    {"stats.mutexes.max_per_bg_thd.num_wait", "11.8.1.1"},
    {"stats.mutexes.max_per_bg_thd.total_wait_time", "11.8.1.4"},
    {"stats.mutexes.prof.max_num_thds", "11.8.3.6"},
    {"stats.mutexes.prof.max_wait_time", "11.8.3.5"},
    {"stats.mutexes.prof.num_ops", "11.8.3.0"},
    {"stats.mutexes.prof.num_owner_switch", "11.8.3.3"},
    {"stats.mutexes.prof.num_spin_acq", "11.8.3.2"},
    {"stats.mutexes.prof.num_wait", "11.8.3.1"},
    {"stats.mutexes.prof.total_wait_time", "11.8.3.4"},
    {"stats.mutexes.prof_dump.max_num_thds", "11.8.5.6"},
    {"stats.mutexes.prof_dump.max_wait_time", "11.8.5.5"},
    {"stats.mutexes.prof_dump.num_ops", "11.8.5.0"},
    {"stats.mutexes.prof_dump.num_owner_switch", "11.8.5.3"},
    {"stats.mutexes.prof_dump.num_spin_acq", "11.8.5.2"},
    {"stats.mutexes.prof_dump.num_wait", "11.8.5.1"},
    {"stats.mutexes.prof_dump.total_wait_time", "11.8.5.4"},
    {"stats.mutexes.prof_recent_alloc.max_num_thds", "11.8.6.6"},
    {"stats.mutexes.prof_recent_alloc.max_wait_time", "11.8.6.5"},
    {"stats.mutexes.prof_recent_alloc.num_ops", "11.8.6.0"},
    {"stats.mutexes.prof_recent_alloc.num_owner_switch", "11.8.6.3"},
    {"stats.mutexes.prof_recent_alloc.num_spin_acq", "11.8.6.2"},
    {"stats.mutexes.prof_recent_alloc.num_wait", "11.8.6.1"},
    {"stats.mutexes.prof_recent_alloc.total_wait_time", "11.8.6.4"},
    {"stats.mutexes.prof_recent_dump.max_num_thds", "11.8.7.6"},
    {"stats.mutexes.prof_recent_dump.max_wait_time", "11.8.7.5"},
    {"stats.mutexes.prof_recent_dump.num_ops", "11.8.7.0"},
    {"stats.mutexes.prof_recent_dump.num_owner_switch", "11.8.7.3"},
    {"stats.mutexes.prof_recent_dump.num_spin_acq", "11.8.7.2"},
    {"stats.mutexes.prof_recent_dump.num_wait", "11.8.7.1"},
    {"stats.mutexes.prof_recent_dump.total_wait_time", "11.8.7.4"},
    {"stats.mutexes.prof_stats.max_num_thds", "11.8.8.6"},
    {"stats.mutexes.prof_stats.max_wait_time", "11.8.8.5"},
    {"stats.mutexes.prof_stats.num_ops", "11.8.8.0"},
    {"stats.mutexes.prof_stats.num_owner_switch", "11.8.8.3"},
    {"stats.mutexes.prof_stats.num_spin_acq", "11.8.8.2"},
    {"stats.mutexes.prof_stats.num_wait", "11.8.8.1"},
    {"stats.mutexes.prof_stats.total_wait_time", "11.8.8.4"},
    {"stats.mutexes.prof_thds_data.max_num_thds", "11.8.4.6"},
    {"stats.mutexes.prof_thds_data.max_wait_time", "11.8.4.5"},
    {"stats.mutexes.prof_thds_data.num_ops", "11.8.4.0"},
    {"stats.mutexes.prof_thds_data.num_owner_switch", "11.8.4.3"},
    {"stats.mutexes.prof_thds_data.num_spin_acq", "11.8.4.2"},
    {"stats.mutexes.prof_thds_data.num_wait", "11.8.4.1"},
    {"stats.mutexes.prof_thds_data.total_wait_time", "11.8.4.4"},
    {"stats.mutexes.reset", "11.8.9"},
    {"stats.resident", "11.4"},
    {"stats.retained", "11.6"},
    {"stats.zero_reallocs", "11.10"},
    {"tcache.create", "7.0"},
    {"tcache.destroy", "7.2"},
    {"tcache.flush", "7.1"},
    {"thread.allocated", "4.1"},
    {"thread.allocatedp", "4.2"},
    {"thread.arena", "4.0"},
    {"thread.deallocated", "4.3"},
    {"thread.deallocatedp", "4.4"},
    {"thread.idle", "4.8"},
    {"thread.peak.read", "4.6.0"},
    {"thread.peak.reset", "4.6.1"},
    {"thread.prof.active", "4.7.1"},
    {"thread.prof.name", "4.7.0"},
    {"thread.tcache.enabled", "4.5.0"},
    {"thread.tcache.flush", "4.5.1"},
    {"version", "0"},
};

/// Names we add to 5.3.0's tree (doc/mallctl.md).
const char* const kOurNames[] = {"opt.bounded_coalesce",
                                 "opt.idle_arena_decay",
                                 "opt.reuse_before_grow",
                                 "opt.purge_on_grow",
                                 "opt.extent_best_fit",
                                 "opt.borrow_dirty",
                                 "opt.decay_hold_peak",
                                 "opt.oversize_hold",
                                 "opt.safety_checks",
                                 "opt.extent_cache_bytes",
                                 "opt.tcache_grow_bytes",
                                 "opt.idle_return",
                                 "opt.kept_max_bytes",
                                 "arena.<i>.bounded_coalesce",
                                 "arenas.bounded_coalesce",
                                 // jemalloc 5.3.1's (doc/compat.md#jemalloc-531-api).
                                 "arenas.hugepage",
                                 "approximate_stats.active",
                                 "arena.<i>.name",
                                 "opt.prof_bt_max",
                                 "opt.process_madvise_max_batch",
#define JE_COUNTER_NAME(name, meaning) "stats.arenas.<i>." #name,
                                 JE_PAC_COUNTERS_OURS(JE_COUNTER_NAME)
#undef JE_COUNTER_NAME
};

bool starts_with(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

/// The names that exist in the tree but answer ENOENT on purpose (doc/mallctl.md): everything
/// of profiling in a --disable-prof build; in a profiling build the names that need opt.prof
/// (the unit tests boot without it, and 5.3.0 answers ENOENT then too: prof.stats.* also needs
/// prof_stats; prof.log_*, experimental.prof_recent.*, ...); no utrace/xmalloc/UAF detection;
/// of the experimental API all but hooks.install/remove, thread.activity_callback and
/// arenas.<i>.pactivep.
bool absent_on_purpose(const std::string& n) {
  const bool prof_name = starts_with(n, "prof.") || starts_with(n, "opt.prof") ||
                         starts_with(n, "thread.prof.") || starts_with(n, "opt.lg_prof_");
  if (prof_name && !config::kProf) return true;
  if (starts_with(n, "prof.stats.") || n == "prof.log_start" || n == "prof.log_stop" ||
      n == "prof.dump" || n == "prof.prefix" || n == "prof.reset" || n == "thread.prof.name") {
    return true;
  }
  // experimental.hooks.prof_* answer reads in every build (nullptr without opt.prof, as 5.3.0);
  // experimental.prof_recent.* need opt.prof, which is off here.
  if (starts_with(n, "experimental.prof_recent.") || n == "experimental.hooks.install" ||
      n == "experimental.hooks.remove" || n == "experimental.thread.activity_callback" ||
      starts_with(n, "experimental.arenas.")) {
    return true;
  }
  if (n == "opt.utrace" || n == "opt.xmalloc" || n == "opt.lg_san_uaf_align") return true;
  return false;
}

std::string concrete(const std::string& n) {
  std::string s = n;
  for (size_t p; (p = s.find("<i>")) != std::string::npos;) s.replace(p, 3, "0");
  return s;
}

std::string mib_string(const size_t* mib, size_t n) {
  std::string s;
  for (size_t i = 0; i < n; i++) s += (i ? "." : "") + std::to_string(mib[i]);
  return s;
}

class CtlTree : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ASSERT_TRUE(core_boot(CoreConfig{})); }
};

TEST_F(CtlTree, NamesAreGoldenPlusOurs) {
  std::vector<std::string> walked;
  ctl::walk_names(
      [](const char* n, void* ctx) { static_cast<std::vector<std::string>*>(ctx)->push_back(n); },
      &walked);
  std::set<std::string> ours(walked.begin(), walked.end());
  EXPECT_EQ(ours.size(), walked.size()) << "duplicate names in the tree";
  std::set<std::string> expected;
  for (const GoldenRow& g : kGolden) expected.insert(g.name);
  EXPECT_EQ(expected.size(), 395u);
  for (const char* n : kOurNames) expected.insert(n);
  for (const std::string& n : expected) EXPECT_TRUE(ours.count(n)) << "missing: " << n;
  for (const std::string& n : ours) EXPECT_TRUE(expected.count(n)) << "unexpected: " << n;
}

TEST_F(CtlTree, MibsEqualTheRealLibrary) {
  for (const GoldenRow& g : kGolden) {
    size_t mib[8];
    size_t len = 8;
    int rc = ctl_nametomib(concrete(g.name).c_str(), mib, &len);
    if (g.mib[0] == '\0') {
      EXPECT_EQ(rc, ENOENT) << g.name;
      continue;
    }
    ASSERT_EQ(rc, 0) << g.name;
    EXPECT_EQ(mib_string(mib, len), g.mib) << g.name;
  }
  // Ours come after 5.3.0's siblings.
  size_t mib[8];
  size_t len = 8;
  ASSERT_EQ(ctl_nametomib("opt.bounded_coalesce", mib, &len), 0);
  EXPECT_EQ(mib_string(mib, len), "6.65");
  len = 8;
  ASSERT_EQ(ctl_nametomib("stats.arenas.0.dirty_merges", mib, &len), 0);
  EXPECT_EQ(mib_string(mib, len), "11.9.0.32");
  len = 8;
  ASSERT_EQ(ctl_nametomib("arena.0.bounded_coalesce", mib, &len), 0);
  EXPECT_EQ(mib_string(mib, len), "8.0.11");
  len = 8;
  ASSERT_EQ(ctl_nametomib("arenas.bounded_coalesce", mib, &len), 0);
  EXPECT_EQ(mib_string(mib, len), "9.13");
}

TEST_F(CtlTree, AbsentOnPurposeAnswersEnoent) {
  if (!config::kStats) GTEST_SKIP() << "built with --disable-stats: every stats.* is ENOENT";
  std::vector<std::string> absent;
  for (const GoldenRow& g : kGolden) {
    std::string n = g.name;
    unsigned char buf[64];
    size_t len = sizeof(buf);
    // A read: harmless for every node (actions answer EPERM to it without acting).
    int rc = ctl_byname(concrete(n).c_str(), buf, &len, nullptr, 0);
    if (absent_on_purpose(n)) {
      absent.push_back(n);
      EXPECT_EQ(rc, ENOENT) << n;
    } else {
      EXPECT_NE(rc, ENOENT) << n;
    }
  }
  for (const char* n : kOurNames) {
    unsigned char buf[64];
    size_t len = sizeof(buf);
    EXPECT_NE(ctl_byname(concrete(n).c_str(), buf, &len, nullptr, 0), ENOENT) << n;
  }
  std::cout << "Names answering ENOENT on purpose (" << absent.size() << "):\n";
  for (const std::string& n : absent) std::cout << "  " << n << "\n";
}

TEST_F(CtlTree, EveryOptionOfTheTableIsReadable) {
  size_t n;
  const OptDesc* d = opt_table(&n);
  ASSERT_GT(n, 0u);
  for (size_t i = 0; i < n; i++) {
    std::string name = std::string("opt.") + d[i].name;
    unsigned char buf[16] = {};
    size_t len = d[i].size;
    ASSERT_LE(len, sizeof(buf));
    ASSERT_EQ(ctl_byname(name.c_str(), buf, &len, nullptr, 0), 0) << name;
    EXPECT_EQ(len, d[i].size);
    EXPECT_EQ(std::memcmp(buf, d[i].ptr, len), 0) << name;
  }
}

TEST(CtlParseIndex, FollowsJemallocStrtoumax) {
  EXPECT_EQ(ctl::parse_index("3"), 3u);
  EXPECT_EQ(ctl::parse_index("3x"), 3u);
  EXPECT_EQ(ctl::parse_index("+3"), 3u);
  EXPECT_EQ(ctl::parse_index(" \t3"), 3u);
  EXPECT_EQ(ctl::parse_index("4096.purge"), 4096u);
  EXPECT_EQ(ctl::parse_index("0"), 0u);
  EXPECT_EQ(ctl::parse_index("0.size"), 0u);
  EXPECT_EQ(ctl::parse_index("08"), 0u);  // the octal-prefix sniffing of 5.3.0
  EXPECT_EQ(ctl::parse_index("010"), 10u);
  EXPECT_EQ(ctl::parse_index("-0"), 0u);
  EXPECT_EQ(ctl::parse_index("-1"), UINT64_MAX);
  EXPECT_EQ(ctl::parse_index("-2"), UINT64_MAX - 1);
  EXPECT_EQ(ctl::parse_index("x"), UINT64_MAX);
  EXPECT_EQ(ctl::parse_index(""), UINT64_MAX);
  EXPECT_EQ(ctl::parse_index(".size"), UINT64_MAX);
  EXPECT_EQ(ctl::parse_index("-"), UINT64_MAX);
  EXPECT_EQ(ctl::parse_index("99999999999999999999999"), UINT64_MAX);
}

}  // namespace
}  // namespace je
