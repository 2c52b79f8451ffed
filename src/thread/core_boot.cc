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

namespace je {

namespace {

constinit bool g_core_booted = false;

MetadataThp metadata_thp(MetadataThpMode m) {
  switch (m) {
    case MetadataThpMode::kAuto: return MetadataThp::kAuto;
    case MetadataThpMode::kAlways: return MetadataThp::kAlways;
    case MetadataThpMode::kDisabled: break;
  }
  return MetadataThp::kDisabled;
}

}  // namespace

bool core_boot(const CoreConfig& cfg) {
  if (g_core_booted) return true;
  // Spinning before blocking only pays off when another CPU can release the lock.
  mutex_set_max_spin(sysinfo::ncpus() > 1 ? cfg.mutex_max_spin : 0);
  pages::set_trust_madvise(cfg.trust_madvise);  // before the probes of pages::boot
  if (!pages::boot()) return false;
  ehooks_set_thp(cfg.thp == ThpOpt::kAlways, cfg.thp == ThpOpt::kNever);
  if (base_global(metadata_thp(cfg.metadata_thp)) == nullptr) return false;
  // The bin geometry is fixed before the first arena (arena 0, made by arenas_boot) and the
  // thread-cache geometry (tcache_boot sizes its bins from the slabs' region counts).
  bin_info_boot(cfg.slab_pages.data(), cfg.bin_shards.data());
  if (!arenas_boot()) return false;
  if (!background_thread_boot()) return false;
  tcache_boot();
  if (!tsd_boot(cfg.stats_interval_hook)) return false;
  g_core_booted = true;
  return true;
}

bool core_booted() { return g_core_booted; }

}  // namespace je
