// init.cc: library initialization (see init.h).
#include "api/init.h"

#include <pthread.h>

#include <array>
#include <cstdlib>

#include "api/alloc_path.h"
#include "api/fork.h"
#include "api/globals.h"
#include "arena/arena_options.h"
#include "arena/background_thread.h"
#include "ctl/conf.h"
#include "ctl/ctl.h"
#include "ctl/opt.h"
#include "ctl/stats_print.h"
#include "meta/sc.h"
#include "prof/prof.h"
#include "support/config.h"
#include "support/malloc_io.h"
#include "thread/core_boot.h"
#include "thread/tcache.h"
#include "thread/thread_options.h"
#include "thread/tsd.h"

namespace je::api {

std::atomic<bool> g_initialized{false};

namespace {

constinit pthread_mutex_t g_init_mtx = PTHREAD_MUTEX_INITIALIZER;
constinit bool g_init_running = false;
constinit pthread_t g_init_thread = {};

// opt.stats_print: the report at exit, with opt.stats_print_opts.
void print_stats_at_exit() { stats_print(nullptr, nullptr, g_opt.stats_print_opts); }
// opt.stats_interval: a report every stats_interval bytes allocated.
void print_stats_interval() { stats_print(nullptr, nullptr, g_opt.stats_interval_opts); }

static_assert(kOptNBins == sc::kNBins, "per-bin options must cover every small bin");
static_assert(kOptMaxBackgroundThreadsLimit == kMaxBackgroundThreadsLimit);
static_assert(kOptMaxBackgroundThreadsDefault == kMaxBackgroundThreadsDefault);
static_assert(kOptTcacheMaxLimit == kTcacheMaxClassLimit);

// The core's enumeration for each choice option, indexed by the table's enum (whose values are
// the indexes of the option's name list, src/ctl/opt.h).
constexpr PercpuArena kPercpuOf[] = {PercpuArena::kPercpu, PercpuArena::kPhycpu,
                                     PercpuArena::kDisabled};
constexpr MetadataThp kMetadataThpOf[] = {MetadataThp::kDisabled, MetadataThp::kAuto,
                                          MetadataThp::kAlways};
constexpr CoreThp kThpOf[] = {CoreThp::kDefault, CoreThp::kAlways, CoreThp::kNever};
static_assert(std::size(kPercpuOf) == std::size(kPercpuArenaNames));
static_assert(std::size(kMetadataThpOf) == std::size(kMetadataThpNames));
static_assert(std::size(kThpOf) == std::size(kThpNames));

template <class To, size_t N, class From>
constexpr To core_enum(const To (&map)[N], From v) {
  return map[static_cast<size_t>(v)];
}

// The core's configuration from the option table: the only place the option values go down
// the layer stack (src/README.md, "Where options live").
constexpr CoreConfig core_config(const Options& o) {
  CoreConfig c;
  c.abort = o.abort;
  c.trust_madvise = o.trust_madvise;
  c.thp = core_enum(kThpOf, o.thp_mode);
  c.slab_pages = o.slab_sizes;
  c.bin_shards = o.bin_shards;
  c.mutex_max_spin = o.mutex_max_spin;
  c.dss = o.dss_prec;
  ArenaOptions& a = c.arena;
  a.narenas = o.narenas;
  a.narenas_ratio = o.narenas_ratio;
  a.percpu = core_enum(kPercpuOf, o.percpu_arena_mode);
  a.oversize_threshold = o.oversize_threshold;
  a.dirty_decay_ms = o.dirty_decay_ms;
  a.muzzy_decay_ms = o.muzzy_decay_ms;
  a.placement = Placement{.bounded_coalesce = o.bounded_coalesce,
                          .best_fit = o.extent_best_fit,
                          .reuse_before_grow = o.reuse_before_grow,
                          .borrow_dirty = o.borrow_dirty,
                          .extent_cache_bytes = o.extent_cache_bytes};
  a.policy = ReturnPolicy{.hold_peak = o.decay_hold_peak,
                          .oversize_hold = o.oversize_hold,
                          .idle_arena_decay = o.idle_arena_decay,
                          .purge_on_grow = o.purge_on_grow,
                          .idle_return = o.idle_return,
                          .kept_max_bytes = o.kept_max_bytes};
  a.retain = o.retain;
  a.lg_extent_max_active_fit = o.lg_extent_max_active_fit;
  a.metadata_thp = core_enum(kMetadataThpOf, o.metadata_thp_mode);
  a.max_background_threads = o.max_background_threads;
  a.zero = o.zero;
  a.junk_alloc = o.junk_alloc;
  a.junk_free = o.junk_free;
  a.safety_checks = o.safety_checks || config::kDebug;
  ThreadOptions& t = c.thread;
  t.tcache = o.tcache;
  t.tcache_max = o.tcache_max;
  t.tcache_nslots_small_min = o.tcache_nslots_small_min;
  t.tcache_nslots_small_max = o.tcache_nslots_small_max;
  t.lg_tcache_nslots_mul = o.lg_tcache_nslots_mul;
  t.tcache_nslots_large = o.tcache_nslots_large;
  t.tcache_gc_incr_bytes = o.tcache_gc_incr_bytes;
  t.tcache_gc_delay_bytes = o.tcache_gc_delay_bytes;
  t.lg_tcache_flush_small_div = o.lg_tcache_flush_small_div;
  t.lg_tcache_flush_large_div = o.lg_tcache_flush_large_div;
  t.tcache_grow_bytes = o.tcache_grow_bytes;
  t.stats_interval = o.stats_interval;
  return c;
}

// CoreConfig's member defaults are the option table's defaults, so unit tests that boot with
// CoreConfig{} run the library's default configuration.
constexpr Options kDefaultOptions{};
static_assert(core_config(kDefaultOptions) == CoreConfig{},
              "CoreConfig / ArenaOptions / ThreadOptions defaults differ from the option table");

// The profiler's options from the table (prof_prefix points into g_opt; prof_boot copies it).
ProfOptions prof_config(const Options& o) {
  ProfOptions p;
  p.prof = o.prof;
  p.prefix = o.prof_prefix;
  p.active = o.prof_active;
  p.thread_active_init = o.prof_thread_active_init;
  p.lg_sample = o.lg_prof_sample;
  p.lg_interval = o.lg_prof_interval;
  p.gdump = o.prof_gdump;
  p.final_dump = o.prof_final;
  p.leak = o.prof_leak;
  p.leak_error = o.prof_leak_error;
  p.accum = o.prof_accum;
  p.unbias = o.prof_unbias;
  p.sys_thread_name = o.prof_sys_thread_name;
  p.stats = o.prof_stats;
  p.recent_alloc_max = o.prof_recent_alloc_max;
  p.log = o.prof_log;
  p.time_high = o.prof_time_res == ProfTimeRes::kHigh;
  p.bt_max = o.prof_bt_max;
  return p;
}

bool init_hard() {
  io_set_writer(&forward_message);
  ctl_set_batch_alloc(&api::batch_allocate);
  ConfSources sources;
  sources.built_in = config::kMallocConf;
  sources.global_malloc_conf = global_malloc_conf();
  sources.conf_2_conf_harder = global_conf_harder();
  conf_init(sources);
  CoreConfig core = core_config(g_opt);
  core.stats_interval_hook = &print_stats_interval;
  if (!core_boot(core)) return false;
  if (!prof_boot(prof_config(g_opt))) return false;
  conf_adopt_boot_values();  // narenas, oversize_threshold, max_background_threads for opt.*
  return true;
}

}  // namespace

bool malloc_init() {
  if (g_initialized.load(std::memory_order_acquire)) return true;
  // A call from inside initialization itself (nothing in init allocates, but be safe) fails
  // instead of deadlocking.
  if (g_init_running && pthread_equal(g_init_thread, pthread_self())) return false;
  pthread_mutex_lock(&g_init_mtx);
  if (g_initialized.load(std::memory_order_relaxed)) {
    pthread_mutex_unlock(&g_init_mtx);
    return true;
  }
  g_init_thread = pthread_self();
  g_init_running = true;
  bool ok = init_hard();
  g_init_running = false;
  if (ok) g_initialized.store(true, std::memory_order_release);
  pthread_mutex_unlock(&g_init_mtx);
  // Registered last, with the allocator usable: these may allocate.
  if (ok) {
    fork_register();
    // The unwinder's first walk may allocate: only now that allocation works.
    if (!prof_boot_late()) io_printf("<jemalloc>: cannot set up heap profiling\n");
    if (prof_enabled()) {
      tsd_set_exit_hook(prof_thread_exit);
      // Sampled blocks are page aligned: sized frees must not push them into a bin.
      api::g_sized_free_mask = config::kPage - 1;
    }
    if (g_opt.stats_print) atexit(print_stats_at_exit);
    // Creating threads allocates, so only now; the allocator keeps working without them.
    if (g_opt.background_thread && !background_thread_set_enabled(true)) {
      io_printf("<jemalloc>: cannot start background threads\n");
    }
  }
  return ok;
}

}  // namespace je::api
