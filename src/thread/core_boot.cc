// core_boot.cc: the core's boot sequence (see core_boot.h).
#include "thread/core_boot.h"

#include "arena/arenas.h"
#include "arena/background_thread.h"
#include "arena/bin_info.h"
#include "extent/ehooks.h"
#include "meta/base.h"
#include "os/pages.h"
#include "os/sysinfo.h"
#include "support/mutex.h"
#include "thread/tcache.h"
#include "thread/tsd.h"

namespace je {

namespace {

constinit bool g_core_booted = false;

}  // namespace

constinit ThreadOptions g_thread_opt;

bool core_boot(const CoreConfig& cfg) {
  if (g_core_booted) return true;
  // Spinning before blocking only pays off when another CPU can release the lock.
  mutex_set_max_spin(sysinfo::ncpus() > 1 ? cfg.mutex_max_spin : 0);
  pages::set_abort_on_error(cfg.abort);
  pages::set_trust_madvise(cfg.trust_madvise);  // before the probes of pages::boot
  if (!pages::boot()) return false;
  ehooks_set_thp(cfg.thp == CoreThp::kAlways, cfg.thp == CoreThp::kNever);
  dss_boot(cfg.dss);  // before the first arena, which takes the precedence
  if (base_global(cfg.arena.metadata_thp) == nullptr) return false;
  // The bin geometry is fixed before the first arena (arena 0, made by arenas_boot) and the
  // thread-cache geometry (tcache_boot sizes its bins from the slabs' region counts).
  bin_info_boot(cfg.slab_pages.data(), cfg.bin_shards.data());
  if (!arenas_boot(cfg.arena)) return false;  // stores g_arena_opt
  if (!background_thread_boot()) return false;
  g_thread_opt = cfg.thread;  // before its readers, tcache_boot and tsd_boot
  tcache_boot();
  if (!tsd_boot(cfg.stats_interval_hook)) return false;
  idle_return_set_uncounted_call(&tsd_call_uncounted);
  g_core_booted = true;
  return true;
}

bool core_booted() { return g_core_booted; }

}  // namespace je
