// init.cc: library initialization (see init.h).
#include "api/init.h"

#include <pthread.h>

#include <cstdlib>

#include "api/fork.h"
#include "api/globals.h"
#include "arena/background_thread.h"
#include "ctl/conf.h"
#include "ctl/stats_print.h"
#include "support/config.h"
#include "support/malloc_io.h"
#include "support/opt.h"
#include "thread/core_boot.h"

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

bool init_hard() {
  io_set_writer(&forward_message);
  ConfSources sources;
  sources.built_in = config::kMallocConf;
  sources.global_malloc_conf = global_malloc_conf();
  sources.conf_2_conf_harder = global_conf_harder();
  conf_init(sources);
  CoreConfig core;
  core.trust_madvise = g_opt.trust_madvise;
  core.thp = g_opt.thp_mode;
  core.metadata_thp = g_opt.metadata_thp_mode;
  core.slab_pages = g_opt.slab_sizes;
  core.bin_shards = g_opt.bin_shards;
  core.mutex_max_spin = g_opt.mutex_max_spin;
  core.stats_interval_hook = &print_stats_interval;
  return core_boot(core);
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
    if (g_opt.stats_print) atexit(print_stats_at_exit);
    // Creating threads allocates, so only now; the allocator keeps working without them.
    if (g_opt.background_thread && !background_thread_set_enabled(true)) {
      io_printf("<jemalloc>: cannot start background threads\n");
    }
  }
  return ok;
}

}  // namespace je::api
