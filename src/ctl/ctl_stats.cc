// ctl_stats.cc: the statistics snapshot and the `stats.*` subtree (see ctl_stats.h).
#include "ctl/ctl_stats.h"

#include <array>
#include <cstring>

#include "arena/arena.h"
#include "arena/arenas.h"
#include "arena/background_thread.h"
#include "ctl/ctl_handlers.h"
#include "extent/dss.h"
#include "meta/base.h"
#include "meta/sz.h"
#include "support/config.h"
#include "support/nstime.h"
#include "thread/tcache.h"

namespace je::ctl {

namespace {

constexpr const char* kDssNone = "N/A";  // merged / destroyed views

// Slot per arena index; the two merged views apart. Allocated from the global base (zeroed,
// never freed), like jemalloc's ctl_arena_t from b0.
constinit ArenaSnap* g_slots[kMaxArenas] = {};
constinit ArenaSnap* g_all = nullptr;
constinit ArenaSnap* g_destroyed = nullptr;
constinit GlobalSnap g_global = {};

ArenaSnap* snap_alloc() {
  Base* b = base_global();
  if (b == nullptr) return nullptr;
  return static_cast<ArenaSnap*>(b->alloc(sizeof(ArenaSnap), alignof(ArenaSnap)));
}

ArenaSnap* slot(unsigned ind) {
  if (g_slots[ind] == nullptr) g_slots[ind] = snap_alloc();
  return g_slots[ind];
}

/// Empties a view; merged views report "N/A" and -1 for the per-arena settings.
void clear(ArenaSnap* s, bool merged) {
  bool initialized = s->initialized;
  std::memset(static_cast<void*>(s), 0, sizeof(*s));
  s->initialized = initialized;
  s->dss = kDssNone;  // fill() sets an arena's own precedence
  if (merged) {
    s->dirty_decay_ms = -1;
    s->muzzy_decay_ms = -1;
  }
}

template <class T>
T load(const std::atomic<T>& a) {
  return a.load(std::memory_order_relaxed);
}

// What Arena::read_stats fills before fill() turns it into 5.3.0's view (ctl mutex held:
// one at a time).
constinit ArenaStatsSnap g_read = {};

/// Reads one arena into its snapshot slot.
void fill(ArenaSnap* s, Arena* a, uint64_t now) {
  clear(s, false);
  s->dss = kDssNames[static_cast<unsigned>(dss_prec_get(a->ind()))];
  ArenaStatsSnap& r = g_read;
  a->read_stats(&r);
  const PacStatsSnap& pac = r.pac;
  s->nthreads = r.nthreads;
  s->uptime_ns = now > r.create_ns ? now - r.create_ns : 0;
  s->dirty_decay_ms = static_cast<ssize_t>(pac.dirty_decay_ms);
  s->muzzy_decay_ms = static_cast<ssize_t>(pac.muzzy_decay_ms);
  s->pactive = pac.nactive;
  s->pdirty = pac.ndirty;
  s->pmuzzy = pac.nmuzzy;

  Base::Stats bs = r.base;
  MutexStats base_mutex = r.mutex_base;
  // The global base (radix tree, this snapshot) counts with arena 0's, as jemalloc's b0 does.
  Base* global = base_global();
  if (a->ind() == 0 && global != nullptr && global != a->base()) {
    Base::Stats gs = global->stats();
    bs.allocated += gs.allocated;
    bs.resident += gs.resident;
    bs.mapped += gs.mapped;
    bs.n_thp += gs.n_thp;
    mutex_stats_merge(&base_mutex, global->mutex_stats());
  }
  s->base = bs.allocated;
  s->internal = r.internal;
  s->metadata_thp = bs.n_thp * config::kHugepage;
  s->mapped = bs.mapped + pac.mapped;
  s->resident = bs.resident + ((s->pactive + s->pdirty) << config::kLgPage);
  s->retained = pac.nretained << config::kLgPage;
  s->extent_avail = pac.extent_avail;
  s->abandoned_vm = pac.abandoned_vm;
  std::memcpy(s->counters, pac.counters, sizeof(s->counters));

  s->mutexes[kMtxLarge] = r.mutex_large;
  s->mutexes[kMtxExtentAvail] = pac.mutexes[kPacMtxExtentAvail];
  s->mutexes[kMtxExtentsDirty] = pac.mutexes[kPacMtxExtentsDirty];
  s->mutexes[kMtxExtentsMuzzy] = pac.mutexes[kPacMtxExtentsMuzzy];
  s->mutexes[kMtxExtentsRetained] = pac.mutexes[kPacMtxExtentsRetained];
  s->mutexes[kMtxDecayDirty] = pac.mutexes[kPacMtxDecayDirty];
  s->mutexes[kMtxDecayMuzzy] = pac.mutexes[kPacMtxDecayMuzzy];
  s->mutexes[kMtxBase] = base_mutex;
  s->mutexes[kMtxTcacheList] = tcaches_mutex_stats();

  // Blocks a grown thread-cache bin holds beyond 5.3.0's capacity count as 5.3.0 counts the
  // blocks its cache flushed when the bin overflowed: not allocated, not in curregs /
  // curlextents (doc/compat.md#tcache-grow). Attributed to the cache's arena, as tcache_bytes.
  size_t grown[kTcacheMaxBins] = {};
  tcache_grown_items(a, grown);
  for (unsigned i = 0; i < sc::kNBins; i++) {
    BinSnap& b = s->bins[i] = r.bins[i];
    b.curregs -= grown[i] < b.curregs ? grown[i] : b.curregs;
    s->small_allocated += b.curregs * sz::index2size(i);
    s->small_nmalloc += b.nmalloc;
    s->small_ndalloc += b.ndalloc;
    s->small_nrequests += b.nrequests;
    s->small_nfills += b.nfills;
    s->small_nflushes += b.nflushes;
  }
  for (unsigned i = 0; i < sc::kNLExtents; i++) {
    LextentSnap& l = s->lextents[i] = r.lextents[i];
    if (sc::kNBins + i < kTcacheMaxBins) {
      const size_t g = grown[sc::kNBins + i];
      l.curlextents -= g < l.curlextents ? g : l.curlextents;
    }
    s->large_allocated += l.curlextents * sz::index2size(sc::kNBins + i);
    s->large_nmalloc += l.nmalloc;
    s->large_ndalloc += l.ndalloc;
    s->large_nrequests += l.nrequests;
    s->large_nflushes += l.nflushes;
  }
  s->large_nfills = s->large_nmalloc;
  std::memcpy(s->extents, pac.extents, sizeof(s->extents));

  s->tcache_bytes = tcache_bytes(a);
}

/// Folds `src` into a merged view. A destroyed arena adds its event counters only: it holds no
/// memory, threads or metadata any more.
void merge(ArenaSnap* d, const ArenaSnap* s, bool destroyed) {
  if (!destroyed) {
    d->nthreads += s->nthreads;
    d->pactive += s->pactive;
    d->pdirty += s->pdirty;
    d->pmuzzy += s->pmuzzy;
    d->mapped += s->mapped;
    d->retained += s->retained;
    d->extent_avail += s->extent_avail;
    d->base += s->base;
    d->internal += s->internal;
    d->resident += s->resident;
    d->metadata_thp += s->metadata_thp;
    d->small_allocated += s->small_allocated;
    d->large_allocated += s->large_allocated;
    d->tcache_bytes += s->tcache_bytes;
    d->tcache_stashed_bytes += s->tcache_stashed_bytes;
  }
  for (unsigned k = 0; k < kNPacCounters; k++) d->counters[k] += s->counters[k];
  d->abandoned_vm += s->abandoned_vm;
  d->hpa_sec_bytes += s->hpa_sec_bytes;

  d->small_nmalloc += s->small_nmalloc;
  d->small_ndalloc += s->small_ndalloc;
  d->small_nrequests += s->small_nrequests;
  d->small_nfills += s->small_nfills;
  d->small_nflushes += s->small_nflushes;
  d->large_nmalloc += s->large_nmalloc;
  d->large_ndalloc += s->large_ndalloc;
  d->large_nrequests += s->large_nrequests;
  d->large_nfills += s->large_nfills;
  d->large_nflushes += s->large_nflushes;

  for (unsigned m = 0; m < kNArenaMutexes; m++) {
    // One global mutex behind every arena's tcache_list: the merged view reports it once.
    if (m == kMtxTcacheList) continue;
    mutex_stats_merge(&d->mutexes[m], s->mutexes[m]);
  }

  for (unsigned i = 0; i < sc::kNBins; i++) d->bins[i].add(s->bins[i], !destroyed);
  for (unsigned i = 0; i < sc::kNLExtents; i++) {
    LextentSnap& dl = d->lextents[i];
    const LextentSnap& sl = s->lextents[i];
    dl.nmalloc += sl.nmalloc;
    dl.ndalloc += sl.ndalloc;
    dl.nrequests += sl.nrequests;
    dl.nflushes += sl.nflushes;
    if (!destroyed) dl.curlextents += sl.curlextents;
  }
  if (!destroyed) {
    for (pszind_t j = 0; j < sc::kNPSizes; j++) {
      ExtentSnap& de = d->extents[j];
      const ExtentSnap& se = s->extents[j];
      de.ndirty += se.ndirty;
      de.nmuzzy += se.nmuzzy;
      de.nretained += se.nretained;
      de.dirty_bytes += se.dirty_bytes;
      de.muzzy_bytes += se.muzzy_bytes;
      de.retained_bytes += se.retained_bytes;
    }
  }
}

/// Maps a stats.arenas index to its view (no validity check beyond existence).
ArenaSnap* view(size_t i) {
  if (i == kArenasAll || i == arenas_narenas_total()) return g_all;
  if (i == kArenasDestroyed) return g_destroyed;
  if (i < kMaxArenas) return g_slots[i];
  return nullptr;
}

}  // namespace

bool stats_boot() {
  if (g_all != nullptr) return true;
  ArenaSnap* all = snap_alloc();
  ArenaSnap* destroyed = snap_alloc();
  if (all == nullptr || destroyed == nullptr) return false;
  clear(destroyed, true);
  all->initialized = true;
  g_destroyed = destroyed;
  g_all = all;
  stats_refresh();
  return true;
}

void stats_refresh() {
  clear(g_all, true);
  uint64_t now = nstime_now_ns();
  unsigned n = arenas_narenas_total();
  for (unsigned i = 0; i < n && i < kMaxArenas; i++) {
    Arena* a = arena_get(i, false);
    if (a == nullptr) {
      if (g_slots[i] != nullptr) g_slots[i]->initialized = false;
      continue;
    }
    ArenaSnap* s = slot(i);
    if (s == nullptr) continue;  // no metadata for it: reported as not initialized
    fill(s, a, now);
    s->initialized = true;
    merge(g_all, s, false);
    if (i == 0) g_all->uptime_ns = s->uptime_ns;
  }
  g_all->mutexes[kMtxTcacheList] = tcaches_mutex_stats();

  GlobalSnap& g = g_global;
  g.allocated = g_all->small_allocated + g_all->large_allocated;
  g.active = g_all->pactive << config::kLgPage;
  g.metadata = g_all->base + g_all->internal;  // 5.3.0: base allocated + internal
  g.metadata_thp = g_all->metadata_thp;
  g.resident = g_all->resident;
  g.mapped = g_all->mapped;
  g.retained = g_all->retained;
  BackgroundThreadStats bg = background_thread_stats();
  g.bg_num_threads = bg.num_threads;
  g.bg_num_runs = bg.num_runs;
  g.bg_run_interval = bg.run_interval_ns;
  g.mutexes[kMtxBackgroundThread] = bg.global_mutex;
  g.mutexes[kMtxMaxPerBgThd] = bg.max_per_thread;
  // The caller holds the ctl mutex; the profiling mutexes do not exist in this build.
  g.mutexes[kMtxCtl] = g_ctl_mtx.stats();
  g.epoch++;
}

const ArenaSnap* stats_arena(size_t i) { return view(i); }

bool stats_arena_valid(size_t i) {
  if (i != kArenasAll && i != kArenasDestroyed && i > arenas_narenas_total()) return false;
  const ArenaSnap* s = view(i);
  return s != nullptr && s->initialized;
}

bool stats_arena_initialized(size_t i) { return stats_arena_valid(i); }

const GlobalSnap& stats_global() { return g_global; }

void stats_arena_destroying(unsigned ind, Arena* a) {
  ArenaSnap* s = ind < kMaxArenas ? slot(ind) : nullptr;
  if (s == nullptr) return;
  fill(s, a, nstime_now_ns());
  merge(g_destroyed, s, true);
  g_destroyed->initialized = true;
  s->initialized = false;
}

void stats_mutexes_reset() {
  g_ctl_mtx.reset_stats();
  background_thread_mutex_stats_reset();
  tcaches_reset_mutex_stats();
  if (Base* global = base_global()) global->reset_mutex_stats();
  unsigned n = arenas_narenas_total();
  for (unsigned i = 0; i < n; i++) {
    Arena* a = arena_get(i, false);
    if (a == nullptr) continue;
    a->reset_mutex_stats();
  }
}

// ---- handlers ----------------------------------------------------------------------------------

namespace {

/// Common prologue of every stats leaf: built with stats, read-only, ctl mutex held.
template <class F>
int stats_leaf(Req& r, F read) {
  if constexpr (!config::kStats) return ENOENT;
  MutexGuard g(g_ctl_mtx);
  if (int e = readonly(r)) return e;
  return read();
}

template <auto M>
int global_field(Req& r) {
  return stats_leaf(r, [&] { return read_out(r, stats_global().*M); });
}

template <auto M>
int arena_field(Req& r) {
  return stats_leaf(r, [&] {
    const ArenaSnap* s = stats_arena(r.mib[2]);
    return s == nullptr ? ENOENT : read_out(r, s->*M);
  });
}

/// A page-allocator event counter (extent/pac_stats.h's table).
template <PacCounter C>
int counter_field(Req& r) {
  return stats_leaf(r, [&] {
    const ArenaSnap* s = stats_arena(r.mib[2]);
    return s == nullptr ? ENOENT : read_out(r, s->counters[pac_counter_index(C)]);
  });
}

template <auto M>
int bin_field(Req& r) {
  return stats_leaf(r, [&] {
    const ArenaSnap* s = stats_arena(r.mib[2]);
    return s == nullptr ? ENOENT : read_out(r, s->bins[r.mib[4]].*M);
  });
}

template <auto M>
int lextent_field(Req& r) {
  return stats_leaf(r, [&] {
    const ArenaSnap* s = stats_arena(r.mib[2]);
    return s == nullptr ? ENOENT : read_out(r, s->lextents[r.mib[4]].*M);
  });
}

template <auto M>
int extent_field(Req& r) {
  return stats_leaf(r, [&] {
    const ArenaSnap* s = stats_arena(r.mib[2]);
    return s == nullptr ? ENOENT : read_out(r, s->extents[r.mib[4]].*M);
  });
}

/// Where a mutex counter leaf finds its mutex: stats.mutexes.<m> (m = mib[2]),
/// stats.arenas.<i>.mutexes.<m> (m = mib[4]) or stats.arenas.<i>.bins.<j>.mutex (j = mib[4]).
enum class MutexSite : uint8_t { kGlobal, kArena, kBin };

template <MutexSite S, auto M>
int mutex_field(Req& r) {
  return stats_leaf(r, [&] {
    if constexpr (S == MutexSite::kGlobal) {
      return read_out(r, stats_global().mutexes[r.mib[2]].*M);
    } else {
      const ArenaSnap* s = stats_arena(r.mib[2]);
      if (s == nullptr) return ENOENT;
      if constexpr (S == MutexSite::kBin) {
        return read_out(r, s->bins[r.mib[4]].mutex.*M);
      } else {
        return read_out(r, s->mutexes[r.mib[4]].*M);
      }
    }
  });
}

/// A statistic of a feature that is off in this build (HPA): it counts
/// nothing, as in 5.3.0 with the feature disabled.
template <class T>
int zero_field(Req& r) {
  return stats_leaf(r, [&] { return read_out(r, T{0}); });
}

int node_stats_mutexes_reset(Req&) {
  if constexpr (!config::kStats) return ENOENT;
  MutexGuard g(g_ctl_mtx);
  stats_mutexes_reset();
  return 0;
}

bool index_stats_arena(const size_t*, size_t, size_t i) { return stats_arena_valid(i); }
bool index_bin(const size_t*, size_t, size_t j) { return j < sc::kNBins; }
bool index_lextent(const size_t*, size_t, size_t j) { return j < sc::kNLExtents; }
bool index_extent(const size_t*, size_t, size_t j) { return j < sc::kNPSizes; }
// The HPA's page-slab set has 64 size bins (PSSET_NPSIZES in 5.3.0).
bool index_hpa_nonfull(const size_t*, size_t, size_t j) { return j < 64; }

// ---- the subtree -------------------------------------------------------------------------------

template <MutexSite S>
constexpr std::array<Node, 7> mutex_counters() {
  return {
      leaf("num_ops", &mutex_field<S, &MutexStats::num_ops>),
      leaf("num_wait", &mutex_field<S, &MutexStats::num_wait>),
      leaf("num_spin_acq", &mutex_field<S, &MutexStats::num_spin_acq>),
      leaf("num_owner_switch", &mutex_field<S, &MutexStats::num_owner_switch>),
      leaf("total_wait_time", &mutex_field<S, &MutexStats::total_wait_time_ns>),
      leaf("max_wait_time", &mutex_field<S, &MutexStats::max_wait_time_ns>),
      leaf("max_num_thds", &mutex_field<S, &MutexStats::max_num_thds>),
  };
}
constexpr std::array<Node, 7> kGlobalMutexCounters = mutex_counters<MutexSite::kGlobal>();
constexpr std::array<Node, 7> kArenaMutexCounters = mutex_counters<MutexSite::kArena>();
constexpr std::array<Node, 7> kBinMutexCounters = mutex_counters<MutexSite::kBin>();

constexpr Node kBackgroundThread[] = {
    leaf("num_threads", &global_field<&GlobalSnap::bg_num_threads>),
    leaf("num_runs", &global_field<&GlobalSnap::bg_num_runs>),
    leaf("run_interval", &global_field<&GlobalSnap::bg_run_interval>),
};

constexpr Node kGlobalMutexes[] = {
    named("background_thread", kGlobalMutexCounters),
    named("max_per_bg_thd", kGlobalMutexCounters),
    named("ctl", kGlobalMutexCounters),
    named("prof", kGlobalMutexCounters),
    named("prof_thds_data", kGlobalMutexCounters),
    named("prof_dump", kGlobalMutexCounters),
    named("prof_recent_alloc", kGlobalMutexCounters),
    named("prof_recent_dump", kGlobalMutexCounters),
    named("prof_stats", kGlobalMutexCounters),
    leaf("reset", &node_stats_mutexes_reset),
};

constexpr Node kSmall[] = {
    leaf("allocated", &arena_field<&ArenaSnap::small_allocated>),
    leaf("nmalloc", &arena_field<&ArenaSnap::small_nmalloc>),
    leaf("ndalloc", &arena_field<&ArenaSnap::small_ndalloc>),
    leaf("nrequests", &arena_field<&ArenaSnap::small_nrequests>),
    leaf("nfills", &arena_field<&ArenaSnap::small_nfills>),
    leaf("nflushes", &arena_field<&ArenaSnap::small_nflushes>),
};
constexpr Node kLarge[] = {
    leaf("allocated", &arena_field<&ArenaSnap::large_allocated>),
    leaf("nmalloc", &arena_field<&ArenaSnap::large_nmalloc>),
    leaf("ndalloc", &arena_field<&ArenaSnap::large_ndalloc>),
    leaf("nrequests", &arena_field<&ArenaSnap::large_nrequests>),
    leaf("nfills", &arena_field<&ArenaSnap::large_nfills>),
    leaf("nflushes", &arena_field<&ArenaSnap::large_nflushes>),
};
constexpr Node kBinElem[] = {
    leaf("nmalloc", &bin_field<&BinSnap::nmalloc>),
    leaf("ndalloc", &bin_field<&BinSnap::ndalloc>),
    leaf("nrequests", &bin_field<&BinSnap::nrequests>),
    leaf("curregs", &bin_field<&BinSnap::curregs>),
    leaf("nfills", &bin_field<&BinSnap::nfills>),
    leaf("nflushes", &bin_field<&BinSnap::nflushes>),
    leaf("nslabs", &bin_field<&BinSnap::nslabs>),
    leaf("nreslabs", &bin_field<&BinSnap::nreslabs>),
    leaf("curslabs", &bin_field<&BinSnap::curslabs>),
    leaf("nonfull_slabs", &bin_field<&BinSnap::nonfull_slabs>),
    named("mutex", kBinMutexCounters),
};
constexpr Node kBinI = named("", kBinElem);
constexpr Node kLextentElem[] = {
    leaf("nmalloc", &lextent_field<&LextentSnap::nmalloc>),
    leaf("ndalloc", &lextent_field<&LextentSnap::ndalloc>),
    leaf("nrequests", &lextent_field<&LextentSnap::nrequests>),
    leaf("curlextents", &lextent_field<&LextentSnap::curlextents>),
};
constexpr Node kLextentI = named("", kLextentElem);
constexpr Node kExtentElem[] = {
    leaf("ndirty", &extent_field<&ExtentSnap::ndirty>),
    leaf("nmuzzy", &extent_field<&ExtentSnap::nmuzzy>),
    leaf("nretained", &extent_field<&ExtentSnap::nretained>),
    leaf("dirty_bytes", &extent_field<&ExtentSnap::dirty_bytes>),
    leaf("muzzy_bytes", &extent_field<&ExtentSnap::muzzy_bytes>),
    leaf("retained_bytes", &extent_field<&ExtentSnap::retained_bytes>),
};
constexpr Node kExtentI = named("", kExtentElem);
constexpr Node kArenaMutexes[] = {
    named("large", kArenaMutexCounters),
    named("extent_avail", kArenaMutexCounters),
    named("extents_dirty", kArenaMutexCounters),
    named("extents_muzzy", kArenaMutexCounters),
    named("extents_retained", kArenaMutexCounters),
    named("decay_dirty", kArenaMutexCounters),
    named("decay_muzzy", kArenaMutexCounters),
    named("base", kArenaMutexCounters),
    named("tcache_list", kArenaMutexCounters),
    named("hpa_shard", kArenaMutexCounters),
    named("hpa_shard_grow", kArenaMutexCounters),
    named("hpa_sec", kArenaMutexCounters),
};
constexpr Node kHpaSlabs[] = {
    leaf("npageslabs_nonhuge", &zero_field<size_t>), leaf("npageslabs_huge", &zero_field<size_t>),
    leaf("nactive_nonhuge", &zero_field<size_t>),    leaf("nactive_huge", &zero_field<size_t>),
    leaf("ndirty_nonhuge", &zero_field<size_t>),     leaf("ndirty_huge", &zero_field<size_t>),
};
constexpr Node kHpaNonfullI = named("", kHpaSlabs);
constexpr Node kHpaShard[] = {
    named("full_slabs", kHpaSlabs),
    named("empty_slabs", kHpaSlabs),
    indexed("nonfull_slabs", &index_hpa_nonfull, kHpaNonfullI),
    leaf("npurge_passes", &zero_field<uint64_t>),
    leaf("npurges", &zero_field<uint64_t>),
    leaf("nhugifies", &zero_field<uint64_t>),
    leaf("ndehugifies", &zero_field<uint64_t>),
};

constexpr Node kStatsArenaElem[] = {
    leaf("nthreads", &arena_field<&ArenaSnap::nthreads>),
    leaf("uptime", &arena_field<&ArenaSnap::uptime_ns>), leaf("dss", &arena_field<&ArenaSnap::dss>),
    leaf("dirty_decay_ms", &arena_field<&ArenaSnap::dirty_decay_ms>),
    leaf("muzzy_decay_ms", &arena_field<&ArenaSnap::muzzy_decay_ms>),
    leaf("pactive", &arena_field<&ArenaSnap::pactive>),
    leaf("pdirty", &arena_field<&ArenaSnap::pdirty>),
    leaf("pmuzzy", &arena_field<&ArenaSnap::pmuzzy>),
    leaf("mapped", &arena_field<&ArenaSnap::mapped>),
    leaf("retained", &arena_field<&ArenaSnap::retained>),
    leaf("extent_avail", &arena_field<&ArenaSnap::extent_avail>),
#define JE_COUNTER_LEAF(name, meaning) leaf(#name, &counter_field<PacCounter::name>),
    JE_PAC_COUNTERS_530(JE_COUNTER_LEAF) leaf("base", &arena_field<&ArenaSnap::base>),
    leaf("internal", &arena_field<&ArenaSnap::internal>),
    leaf("metadata_thp", &arena_field<&ArenaSnap::metadata_thp>),
    leaf("tcache_bytes", &arena_field<&ArenaSnap::tcache_bytes>),
    leaf("tcache_stashed_bytes", &arena_field<&ArenaSnap::tcache_stashed_bytes>),
    leaf("resident", &arena_field<&ArenaSnap::resident>),
    leaf("abandoned_vm", &arena_field<&ArenaSnap::abandoned_vm>),
    leaf("hpa_sec_bytes", &arena_field<&ArenaSnap::hpa_sec_bytes>), named("small", kSmall),
    named("large", kLarge), indexed("bins", &index_bin, kBinI),
    indexed("lextents", &index_lextent, kLextentI), indexed("extents", &index_extent, kExtentI),
    named("mutexes", kArenaMutexes), named("hpa_shard", kHpaShard),
    // Ours (after 5.3.0's names so that its MIBs stay the same).
    JE_PAC_COUNTERS_OURS(JE_COUNTER_LEAF)
#undef JE_COUNTER_LEAF
};
constexpr Node kStatsArenaI = named("", kStatsArenaElem);

}  // namespace

constexpr Node kStatsChildren[kNStatsChildren] = {
    leaf("allocated", &global_field<&GlobalSnap::allocated>),
    leaf("active", &global_field<&GlobalSnap::active>),
    leaf("metadata", &global_field<&GlobalSnap::metadata>),
    leaf("metadata_thp", &global_field<&GlobalSnap::metadata_thp>),
    leaf("resident", &global_field<&GlobalSnap::resident>),
    leaf("mapped", &global_field<&GlobalSnap::mapped>),
    leaf("retained", &global_field<&GlobalSnap::retained>),
    named("background_thread", kBackgroundThread),
    named("mutexes", kGlobalMutexes),
    indexed("arenas", &index_stats_arena, kStatsArenaI),
    leaf("zero_reallocs", &node_stats_zero_reallocs),
};

}  // namespace je::ctl
