// ctl.cc: the mallctl entry points and the handlers of version, epoch, background threads,
// thread.*, config.*, opt.*, tcache.* and arenas.* (see ctl.h; the tree is in ctl_tree.cc).
#include "ctl/ctl.h"

#include <atomic>
#include <cstring>

#include "arena/arena.h"
#include "arena/arenas.h"
#include "arena/background_thread.h"
#include "ctl/ctl_handlers.h"
#include "ctl/ctl_stats.h"
#include "ctl/ctl_tree.h"
#include "ctl/opt.h"
#include "extent/ehooks.h"
#include "extent/emap.h"
#include "meta/sc.h"
#include "meta/sz.h"
#include "os/sysinfo.h"
#include "support/config.h"
#include "support/malloc_io.h"
#include "thread/tcache.h"
#include "thread/tsd.h"

namespace je {

namespace ctl {

constinit Mutex g_ctl_mtx{LockRank::kCtl, "ctl"};

namespace {

constinit bool g_booted = false;
/// realloc(p, 0) calls that freed p (stats.zero_reallocs).
constinit std::atomic<size_t> g_zero_reallocs{0};

}  // namespace

bool ensure_booted() {
  if (g_booted) return true;
  // Normally done by library init; the unit tests drive ctl on a core booted without it.
  if (!background_thread_boot()) return false;
  if (!stats_boot()) return false;
  g_booted = true;
  return true;
}

int node_absent(Req&) { return ENOENT; }

// ---- version, epoch, background threads ---------------------------------------------------------

int node_version(Req& r) {
  if (int e = readonly(r)) return e;
  const char* v = config::kVersion;
  return read_out(r, v);
}

int node_epoch(Req& r) {
  MutexGuard g(g_ctl_mtx);
  uint64_t ignored;
  if (int e = write_in(r, &ignored)) return e;
  if (r.writing()) stats_refresh();
  uint64_t epoch = stats_global().epoch;
  return read_out(r, epoch);
}

// Background threads. As in 5.3.0, the old value is delivered before the change is made, and a
// failed start answers EFAULT. Unlike 5.3.0 the ctl mutex is not held: stopping joins threads
// that may be running user extent hooks, which may themselves call mallctl. The module
// serializes concurrent switches itself.
int node_background_thread(Req& r) {
  bool old = background_thread_enabled();
  bool v = old;
  if (int e = write_in(r, &v)) return e;
  if (int e = read_out(r, old)) return e;
  if (!r.writing()) return 0;
  // Any non-zero byte means true, as 5.3.0 reads it.
  unsigned char byte;
  std::memcpy(&byte, &v, 1);
  if ((byte != 0) == old) return 0;
  return background_thread_set_enabled(byte != 0) ? 0 : EFAULT;
}

int node_max_background_threads(Req& r) {
  size_t old = background_thread_max();
  size_t v = old;
  if (int e = write_in(r, &v)) return e;
  if (int e = read_out(r, old)) return e;
  if (!r.writing() || v == old) return 0;
  switch (background_thread_set_max(v)) {
    case BackgroundThreadSetMax::kOk: return 0;
    case BackgroundThreadSetMax::kInvalid: return EINVAL;
    case BackgroundThreadSetMax::kStartFailed: return EFAULT;
  }
  return EFAULT;
}

// ---- thread.* -------------------------------------------------------------------------------

int node_thread_arena(Req& r) {
  Tsd& tsd = tsd_fetch();
  Arena* old = tsd_arena(tsd);
  if (old == nullptr) return EAGAIN;
  unsigned oldind = old->ind();
  unsigned newind = oldind;
  if (int e = write_in(r, &newind)) return e;
  if (int e = read_out(r, oldind)) return e;
  if (newind == oldind) return 0;
  if (newind >= arenas_narenas_total()) return EFAULT;
  // With per-CPU arenas the automatic range is assigned by CPU, not by the thread.
  if (g_opt.percpu_arena_mode != PercpuArenaMode::kDisabled && newind < arenas_percpu_limit()) {
    return EPERM;
  }
  Arena* target = (arenas_huge_enabled() && newind == arenas_huge_ind())
                      ? arena_huge()
                      : arena_get(newind, /*create=*/true);
  if (target == nullptr) return EAGAIN;
  tsd_set_arena(tsd, target);
  return 0;
}

int node_thread_allocated(Req& r) {
  if (int e = readonly(r)) return e;
  return read_out(r, tsd_fetch().allocated);
}

int node_thread_allocatedp(Req& r) {
  if (int e = readonly(r)) return e;
  uint64_t* p = &tsd_fetch().allocated;
  return read_out(r, p);
}

int node_thread_deallocated(Req& r) {
  if (int e = readonly(r)) return e;
  return read_out(r, tsd_fetch().deallocated);
}

int node_thread_deallocatedp(Req& r) {
  if (int e = readonly(r)) return e;
  uint64_t* p = &tsd_fetch().deallocated;
  return read_out(r, p);
}

int node_thread_tcache_enabled(Req& r) {
  Tsd& tsd = tsd_fetch();
  bool old = tsd.tcache_enabled;
  if (r.writing()) {
    bool v;
    if (int e = write_in(r, &v)) return e;
    tsd_set_tcache_enabled(tsd, v);
  }
  return read_out(r, old);
}

int node_thread_tcache_flush(Req& r) {
  Tcache* t = tsd_tcache(tsd_fetch());
  if (t == nullptr) return EFAULT;  // checked before the arguments, as in 5.3.0
  if (int e = neither_read_nor_write(r)) return e;
  tcache_flush_all(t);
  return 0;
}

int node_thread_peak_read(Req& r) {
  if constexpr (!config::kStats) return ENOENT;
  if (int e = readonly(r)) return e;
  // The maximum of allocated - deallocated since the last reset, as sampled by the thread's
  // 64 KiB events (tsd.cc) and now.
  Tsd& tsd = tsd_fetch();
  tsd_peak_update(tsd);
  return read_out(r, tsd.peak_max);
}

int node_thread_peak_reset(Req& r) {
  if constexpr (!config::kStats) return ENOENT;
  if (int e = neither_read_nor_write(r)) return e;
  tsd_peak_reset(tsd_fetch());
  return 0;
}

int node_thread_idle(Req& r) {
  if (int e = neither_read_nor_write(r)) return e;
  Tsd& tsd = tsd_fetch();
  if (Tcache* t = tsd_tcache(tsd)) tcache_flush_all(t);
  // 5.3.0's heuristic: with many arenas per CPU a thread likely owns its arena, so purging it
  // is worth it; with few, the arena is shared and busy.
  if (g_opt.narenas > sysinfo::ncpus() * 2) {
    if (Arena* a = tsd_arena(tsd)) a->decay(/*is_background_thread=*/false, /*all=*/true);
  }
  return 0;
}

// ---- config.*, opt.* ------------------------------------------------------------------------

int node_config_malloc_conf(Req& r) {
  if (int e = readonly(r)) return e;
  const char* v = config::kMallocConf;
  return read_out(r, v);
}

int node_opt(Req& r) {
  const Node* node;
  if (lookup_mib(r.mib, 2, &node) != 0) return ENOENT;
  const OptDesc* d = opt_find(node->name, std::strlen(node->name));
  if (d == nullptr) return ENOENT;  // a feature this build leaves out (checked first, as 5.3.0)
  if (int e = readonly(r)) return e;
  return read_bytes(r, d->ptr, d->size);
}

// ---- tcache.* (explicit thread caches) ------------------------------------------------------

int node_tcache_create(Req& r) {
  if (int e = readonly(r)) return e;
  if (int e = verify_read<unsigned>(r)) return e;
  Arena* a = tsd_arena(tsd_fetch());
  unsigned ind;
  if (a == nullptr || !tcaches_create(a, &ind)) return EFAULT;
  return read_out(r, ind);
}

// Flushing or destroying an index that holds no cache is a no-op (5.3.0 does not check).
int node_tcache_flush(Req& r) {
  if (int e = writeonly(r)) return e;
  unsigned ind;
  if (int e = assured_write(r, &ind)) return e;
  tcaches_flush(ind);
  return 0;
}

int node_tcache_destroy(Req& r) {
  if (int e = writeonly(r)) return e;
  unsigned ind;
  if (int e = assured_write(r, &ind)) return e;
  tcaches_destroy(ind);
  return 0;
}

// ---- arenas.* -------------------------------------------------------------------------------

int node_arenas_narenas(Req& r) {
  MutexGuard g(g_ctl_mtx);
  if (int e = readonly(r)) return e;
  unsigned n = arenas_narenas_total();
  return read_out(r, n);
}

int node_approximate_stats_active(Req& r) {
  if (int e = readonly(r)) return e;
  // Each arena's count is one relaxed load, no lock and no epoch (jemalloc 5.3.1's promise: a
  // cheap figure, not consistent with stats.* at any one moment).
  size_t pages = 0;
  for (unsigned i = 0, n = arenas_narenas_total(); i < n; i++) {
    if (const Arena* a = arena_get(i, false)) pages += a->nactive();
  }
  return read_out(r, pages << config::kLgPage);
}

namespace {

template <bool kDirty>
int arenas_decay_ms(Req& r) {
  if (r.reading()) {
    ssize_t old = static_cast<ssize_t>(kDirty ? arenas_dirty_decay_ms_default()
                                              : arenas_muzzy_decay_ms_default());
    if (int e = read_out(r, old)) return e;
  }
  if (r.writing()) {
    ssize_t v;
    if (int e = write_in(r, &v)) return e;
    bool ok = kDirty ? arenas_set_dirty_decay_ms_default(v) : arenas_set_muzzy_decay_ms_default(v);
    if (!ok) return EFAULT;
  }
  return 0;
}

}  // namespace

int node_arenas_dirty_decay_ms(Req& r) { return arenas_decay_ms<true>(r); }
int node_arenas_muzzy_decay_ms(Req& r) { return arenas_decay_ms<false>(r); }

int node_arenas_bounded_coalesce(Req& r) {
  bool v = false;
  if (int e = write_in(r, &v)) return e;
  bool old = arenas_bounded_coalesce_default();
  if (int e = read_out(r, old)) return e;
  if (r.writing()) arenas_set_bounded_coalesce_default(v);
  return 0;
}

int node_arenas_tcache_max(Req& r) {
  if (int e = readonly(r)) return e;
  return read_out(r, g_tcache_geo.maxclass);
}

int node_arenas_nhbins(Req& r) {
  if (int e = readonly(r)) return e;
  unsigned v = g_tcache_geo.nhbins;
  return read_out(r, v);
}

int node_arenas_lextent_size(Req& r) {
  if (int e = readonly(r)) return e;
  size_t v = sz::index2size(static_cast<szind_t>(sc::kNBins + r.mib[2]));
  return read_out(r, v);
}

int node_arenas_create(Req& r) {
  MutexGuard g(g_ctl_mtx);
  // Nothing is created unless the index can be delivered.
  if (int e = verify_read<unsigned>(r)) return e;
  extent_hooks_t* hooks = nullptr;
  if (int e = write_in(r, &hooks)) return e;
  unsigned ind;
  if (!arena_create_manual(hooks, &ind)) return EAGAIN;
  return read_out(r, ind);
}

int node_arenas_lookup(Req& r) {
  MutexGuard g(g_ctl_mtx);
  void* ptr = nullptr;
  if (int e = write_in(r, &ptr)) return e;
  if (ptr == nullptr) return EINVAL;
  Edata* e = g_emap.lookup(ptr);
  if (e == nullptr) return EINVAL;
  Arena* a = arena_get(e->arena_ind, false);
  if (a == nullptr) return EINVAL;
  unsigned ind = a->ind();
  return read_out(r, ind);
}

// ---- experimental.arenas_create_ext, experimental.batch_alloc, experimental.hooks.* ----------

namespace {

// 5.3.0's arena_config_t (include/jemalloc/internal/arena_types.h): an ABI, not a public type.
struct ArenaConfig {
  extent_hooks_t* extent_hooks;
  bool metadata_use_hooks;
};
// 5.3.0's batch_alloc_packet_t (ctl.c): likewise.
struct BatchAllocPacket {
  void** ptrs;
  size_t num;
  size_t size;
  int flags;
};

constinit std::atomic<CtlBatchAllocFn> g_batch_alloc{nullptr};

}  // namespace

// As arenas.create, with the whole configuration written: 5.3.0's default is its default hooks
// with metadata through them; here metadata goes through the hooks only when they are a user's
// (ours would map the same pages the OS gives the Base anyway).
int node_experimental_arenas_create_ext(Req& r) {
  MutexGuard g(g_ctl_mtx);
  if (int e = verify_read<unsigned>(r)) return e;
  ArenaConfig c{nullptr, true};
  if (int e = write_in(r, &c)) return e;
  extent_hooks_t* hooks = c.extent_hooks == &kDefaultExtentHooks ? nullptr : c.extent_hooks;
  unsigned ind;
  if (!arena_create_manual(hooks, &ind, c.metadata_use_hooks && hooks != nullptr)) return EAGAIN;
  return read_out(r, ind);
}

// The count can be delivered (size_t) and the packet is written whole, or nothing is allocated.
int node_experimental_batch_alloc(Req& r) {
  if (int e = verify_read<size_t>(r)) return e;
  BatchAllocPacket pk;
  if (int e = assured_write(r, &pk)) return e;
  const CtlBatchAllocFn fn = g_batch_alloc.load(std::memory_order_acquire);
  size_t filled = fn == nullptr || pk.num == 0 ? 0 : fn(pk.ptrs, pk.num, pk.size, pk.flags);
  return read_out(r, filled);
}

// Write-only: a function that receives the report of a detected misuse instead of the process
// aborting (je_misuse_msg); NULL restores the abort.
int node_experimental_hooks_safety_check_abort(Req& r) {
  if (int e = writeonly(r)) return e;
  if (!r.writing()) return 0;
  MisuseAbortHook h = nullptr;
  if (int e = write_in(r, &h)) return e;
  misuse_abort_hook_set(h);
  return 0;
}

// ---- experimental.utilization.* ----------------------------------------------------------------
// How full the slab (or extent) holding a pointer is, so a client can decide what to move when
// it defragments. Layouts are 5.3.0's inspect_extent_util_stats(_verbose)_t.

namespace {

struct UtilStats {
  size_t nfree;
  size_t nregs;
  size_t size;
};
struct UtilStatsVerbose {
  void* slabcur_addr;
  size_t nfree;
  size_t nregs;
  size_t size;
  size_t bin_nfree;
  size_t bin_nregs;
};
static_assert(sizeof(UtilStats) == 3 * sizeof(size_t));
static_assert(sizeof(UtilStatsVerbose) == sizeof(void*) + 5 * sizeof(size_t));

/// The live extent whose page holds `ptr`; nullptr for a pointer this library does not know
/// (5.3.0 would dereference it), where every field then reads 0.
Edata* util_extent(const void* ptr) {
  if (ptr == nullptr) return nullptr;
  EmapEntry ent = g_emap.lookup_entry(ptr);
  if (ent.edata == nullptr || ent.state != ExtentState::kActive) return nullptr;
  return ent.edata;
}

/// size is the extent's (a slab, or a large block with its pad page); a large block counts as
/// one region with none free. The slab's free count is read without its bin lock, as in 5.3.0.
UtilStats util_stats(const void* ptr) {
  Edata* e = util_extent(ptr);
  if (e == nullptr) return UtilStats{};
  if (!e->slab) return UtilStats{0, 1, e->size};
  return UtilStats{e->nfree, g_bin_geo[e->szind].nregs, e->size};
}

/// Adds the slab's bin: its free and total regions over all its slabs, and where it allocates
/// next (slabcur, else the first non-full slab).
UtilStatsVerbose util_stats_verbose(const void* ptr) {
  const UtilStats u = util_stats(ptr);
  UtilStatsVerbose v{nullptr, u.nfree, u.nregs, u.size, 0, 0};
  Edata* e = util_extent(ptr);
  if (e == nullptr || !e->slab) return v;
  Arena* a = arena_get(e->arena_ind, false);
  if (a == nullptr) return v;
  Bin& bin = a->bin(e->szind, e->binshard);
  MutexGuard g(bin.mtx);
  if constexpr (config::kStats) {
    v.bin_nregs = u.nregs * bin.stats.curslabs;
    v.bin_nfree = v.bin_nregs - bin.stats.curregs;
  }
  Edata* next = bin.slabcur != nullptr ? bin.slabcur : bin.nonfull.first();
  v.slabcur_addr = next != nullptr ? next->addr : nullptr;
  return v;
}

}  // namespace

int node_experimental_utilization_query(Req& r) {
  if (r.oldp == nullptr || r.oldlenp == nullptr || *r.oldlenp != sizeof(UtilStatsVerbose) ||
      r.newp == nullptr || r.newlen != sizeof(void*)) {
    return EINVAL;
  }
  void* ptr;
  std::memcpy(&ptr, r.newp, sizeof(ptr));
  const UtilStatsVerbose v = util_stats_verbose(ptr);
  std::memcpy(r.oldp, &v, sizeof(v));
  return 0;
}

int node_experimental_utilization_batch_query(Req& r) {
  const size_t n = r.newlen / sizeof(void*);
  if (r.oldp == nullptr || r.oldlenp == nullptr || r.newp == nullptr || r.newlen == 0 ||
      r.newlen != n * sizeof(void*) || *r.oldlenp != n * sizeof(UtilStats)) {
    return EINVAL;
  }
  for (size_t i = 0; i < n; i++) {
    void* ptr;
    std::memcpy(&ptr, static_cast<const char*>(r.newp) + i * sizeof(void*), sizeof(ptr));
    const UtilStats u = util_stats(ptr);
    std::memcpy(static_cast<char*>(r.oldp) + i * sizeof(UtilStats), &u, sizeof(u));
  }
  return 0;
}

int node_stats_zero_reallocs(Req& r) {
  if constexpr (!config::kStats) return ENOENT;
  if (int e = readonly(r)) return e;
  size_t v = g_zero_reallocs.load(std::memory_order_relaxed);
  return read_out(r, v);
}

}  // namespace ctl

// ---- entry points -----------------------------------------------------------------------------

int ctl_byname(const char* name, void* oldp, size_t* oldlenp, void* newp, size_t newlen) {
  if (name == nullptr) return ENOENT;
  size_t mib[ctl::kMaxDepth];
  size_t depth = ctl::kMaxDepth;
  const ctl::Node* node;
  {
    MutexGuard g(ctl::g_ctl_mtx);
    if (!ctl::ensure_booted()) return EAGAIN;
    if (int e = ctl::lookup_name(name, &node, mib, &depth)) return e;
  }
  if (node->handler == nullptr) return ENOENT;  // an interior node
  ctl::Req r{mib, depth, oldp, oldlenp, newp, newlen};
  return node->handler(r);
}

int ctl_nametomib(const char* name, size_t* mibp, size_t* miblenp) {
  if (name == nullptr || mibp == nullptr || miblenp == nullptr) return EINVAL;
  MutexGuard g(ctl::g_ctl_mtx);
  if (!ctl::ensure_booted()) return EAGAIN;
  const ctl::Node* node;
  return ctl::lookup_name(name, &node, mibp, miblenp);
}

int ctl_bymib(const size_t* mib, size_t miblen, void* oldp, size_t* oldlenp, void* newp,
              size_t newlen) {
  if (mib == nullptr && miblen != 0) return EINVAL;
  const ctl::Node* node;
  {
    MutexGuard g(ctl::g_ctl_mtx);
    if (!ctl::ensure_booted()) return EAGAIN;
    if (int e = ctl::lookup_mib(mib, miblen, &node)) return e;
  }
  if (node->handler == nullptr) return ENOENT;  // a partial MIB
  ctl::Req r{mib, miblen, oldp, oldlenp, newp, newlen};
  return node->handler(r);
}

void ctl_set_batch_alloc(CtlBatchAllocFn fn) {
  ctl::g_batch_alloc.store(fn, std::memory_order_release);
}

void ctl_count_zero_realloc() { ctl::g_zero_reallocs.fetch_add(1, std::memory_order_relaxed); }

void ctl_prefork() { ctl::g_ctl_mtx.prefork(); }
void ctl_postfork_parent() { ctl::g_ctl_mtx.postfork_parent(); }
void ctl_postfork_child() { ctl::g_ctl_mtx.postfork_child(); }

}  // namespace je
