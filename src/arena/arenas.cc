// arenas.cc: the arena registry (see arenas.h).
#include "arena/arenas.h"

#include <algorithm>
#include <atomic>

#include "arena/arena.h"
#include "arena/background_thread.h"
#include "extent/decay.h"
#include "extent/hold.h"
#include "meta/sc.h"
#include "os/sysinfo.h"
#include "support/malloc_io.h"
#include "support/mutex.h"
#include "support/nstime.h"

namespace je {

namespace {

constinit std::atomic<Arena*> g_arenas[kMaxArenas] = {};
constinit std::atomic<unsigned> g_narenas_total{0};
constinit unsigned g_narenas_auto = 0;
constinit unsigned g_huge_ind = 0;
constinit bool g_huge_enabled = false;
constinit size_t g_oversize_threshold = 0;
constinit std::atomic<int64_t> g_dirty_default{10000};
constinit std::atomic<int64_t> g_muzzy_default{0};
constinit std::atomic<bool> g_bounded_default{true};
constinit bool g_destroyed[kMaxArenas] = {};
// Destroyed manual indices, most recent last: arenas.create reuses the most recently destroyed
// one first (5.3.0 keeps them on a list and takes its tail).
constinit unsigned g_destroyed_stack[kMaxArenas] = {};
constinit unsigned g_ndestroyed = 0;
constinit Mutex g_arenas_mtx{LockRank::kArenas, "arenas"};
constinit unsigned g_percpu_limit = 0;               // arenas assigned by CPU under percpu_arena
constinit std::atomic<uint64_t> g_next_sweep_ns{0};  // arenas_decay_sweep's next due time

// Creates the arena at `ind` unless present; caller holds g_arenas_mtx.
Arena* init_locked(unsigned ind, extent_hooks_t* hooks, bool manual,
                   bool metadata_use_hooks = false) {
  Arena* a = g_arenas[ind].load(std::memory_order_acquire);
  if (a != nullptr) return a;
  a = Arena::create(ind, hooks, manual, metadata_use_hooks);
  if (a == nullptr) return nullptr;
  g_destroyed[ind] = false;
  g_arenas[ind].store(a, std::memory_order_release);
  if (ind >= g_narenas_total.load(std::memory_order_relaxed)) {
    g_narenas_total.store(ind + 1, std::memory_order_relaxed);
  }
  return a;
}

// ncpus x narenas_ratio computed as 5.3.0 does, in 32-bit 16.16 fixed point (so the product
// wraps modulo 2^32: narenas_ratio:32768 on 2 CPUs gives 0, hence 1), rounded to nearest, at
// least 1; a single CPU gets one arena.
unsigned default_narenas(unsigned ncpus, uint32_t ratio) {
  if (ncpus <= 1) return 1;
  const uint32_t cpus = static_cast<uint32_t>(ncpus) << 16;
  const uint32_t goal = static_cast<uint32_t>((uint64_t{cpus} * ratio) >> 16);
  const unsigned rounded = (goal >> 16) + ((goal & 0xffffu) >= 0x8000u ? 1 : 0);
  return rounded == 0 ? 1 : rounded;
}

}  // namespace

constinit ArenaOptions g_arena_opt;

bool arenas_boot(const ArenaOptions& opts) {
  g_arena_opt = opts;
  ArenaOptions& o = g_arena_opt;
  g_dirty_default.store(o.dirty_decay_ms, std::memory_order_relaxed);
  g_muzzy_default.store(o.muzzy_decay_ms, std::memory_order_relaxed);
  g_bounded_default.store(o.placement.bounded_coalesce, std::memory_order_relaxed);
  kept::init(o.policy.kept_max_bytes);
  unsigned ncpus = sysinfo::ncpus();
  // percpu_arena needs an arena per CPU (or per core): at least that many, and when narenas is
  // not set, exactly that many.
  if (o.percpu != PercpuArena::kDisabled) {
    unsigned limit = o.percpu == PercpuArena::kPhycpu && ncpus > 1 ? ncpus / 2 + ncpus % 2 : ncpus;
    if (o.narenas < limit) o.narenas = limit;
    g_percpu_limit = limit;
  }
  if (o.narenas == 0) o.narenas = default_narenas(ncpus, o.narenas_ratio);
  // Only the arenas made are limited to what MALLOCX_ARENA can name; opt.narenas keeps the
  // configured (or computed) value, as in 5.3.0.
  g_narenas_auto = o.narenas;
  if (g_narenas_auto > kMaxArenas - 1) {
    g_narenas_auto = kMaxArenas - 1;
    io_printf("<jemalloc>: Reducing narenas to limit (%u)\n", kMaxArenas - 1);
  }
  g_narenas_total.store(g_narenas_auto, std::memory_order_relaxed);
  // The oversize threshold must name a large size; anything else disables the huge arena.
  if (o.oversize_threshold < sc::kLargeMinClass || o.oversize_threshold > sc::kLargeMaxClass) {
    o.oversize_threshold = 0;
    g_oversize_threshold = sc::kLargeMaxClass + config::kPage;
    g_huge_enabled = false;
  } else {
    g_oversize_threshold = o.oversize_threshold;
    g_huge_enabled = true;
    g_huge_ind = g_narenas_auto;
    g_narenas_total.store(g_narenas_auto + 1, std::memory_order_relaxed);
  }
  MutexGuard g(g_arenas_mtx);
  return init_locked(0, nullptr, false) != nullptr;
}

unsigned arenas_narenas_auto() { return g_narenas_auto; }
unsigned arenas_narenas_total() { return g_narenas_total.load(std::memory_order_acquire); }
size_t arenas_oversize_threshold() { return g_oversize_threshold; }
namespace {
/// The automatic arenas other than `home` that may lend `size` bytes, round robin from the one
/// after it (so that arenas short of pages do not all ask the same one first), until `take`
/// returns an extent. The unlocked page counts only skip arenas that cannot have a fit.
template <class Take>
Edata* borrow_from_others(Arena* home, size_t size, Take take) {
  const unsigned n = g_narenas_auto;
  const unsigned h = home->ind();
  const size_t npages = size >> config::kLgPage;
  for (unsigned k = 1; k < n; k++) {
    const unsigned i = h + k < n ? h + k : h + k - n;
    Arena* a = g_arenas[i].load(std::memory_order_acquire);
    if (a == nullptr || a->ndirty() + a->nmuzzy() < npages || !a->may_share_pages()) {
      continue;
    }
    if (Edata* e = take(a)) return e;
  }
  return nullptr;
}
}  // namespace

Edata* arenas_borrow_large(Arena* home, size_t size, size_t alignment, bool zero, Arena** owner) {
  return borrow_from_others(home, size, [&](Arena* a) {
    Edata* e = a->alloc_cached_extent(size, alignment, zero);
    if (e != nullptr) *owner = a;
    return e;
  });
}

Edata* arenas_borrow_slab(Arena* home, size_t size) {
  return borrow_from_others(home, size, [&](Arena* a) {
    ExtentState was;
    Edata* e = a->lend_cached_extent(size, &was);
    if (e != nullptr) home->adopt_extent(e, was);
    return e;
  });
}

bool arenas_huge_enabled() { return g_huge_enabled; }
unsigned arenas_huge_ind() { return g_huge_ind; }

Arena* arena_get(unsigned ind, bool create) {
  if (ind >= kMaxArenas) return nullptr;
  Arena* a = g_arenas[ind].load(std::memory_order_acquire);
  if (a != nullptr || !create || ind >= g_narenas_auto) return a;
  MutexGuard g(g_arenas_mtx);
  return init_locked(ind, nullptr, false);
}

Arena* arena_choose_auto() {
  MutexGuard g(g_arenas_mtx);
  Arena* best = nullptr;
  unsigned best_load = 0;
  unsigned first_unused = kMaxArenas;
  for (unsigned i = 0; i < g_narenas_auto; i++) {
    Arena* a = g_arenas[i].load(std::memory_order_relaxed);
    if (a == nullptr) {
      if (first_unused == kMaxArenas) first_unused = i;
      continue;
    }
    unsigned load = a->nthreads();
    if (best == nullptr || load < best_load) {
      best = a;
      best_load = load;
    }
  }
  // Prefer an idle arena; else spread threads onto arenas not created yet.
  if ((best == nullptr || best_load > 0) && first_unused != kMaxArenas) {
    Arena* fresh = init_locked(first_unused, nullptr, false);
    if (fresh != nullptr) best = fresh;
  }
  if (best != nullptr) arena_bind(best);
  return best;
}

void arena_bind(Arena* a) {
  a->thread_bound();
  if (!t_bin_shards.assigned) bin_shards_bind(a->next_binshard_ticket());
}
// Release: an exiting thread takes its hold before it unbinds, and arena_destroy_manual reads
// the bound count (acquire) before the holds, so it never sees both at zero in that window.
void arena_unbind(Arena* a) { a->thread_unbound(); }
void arena_hold(Arena* a) { a->hold(); }
void arena_unhold(Arena* a) { a->unhold(); }

unsigned arenas_threads_bound() {
  unsigned n = 0;
  const unsigned last = g_huge_enabled ? g_huge_ind : g_narenas_auto - 1;
  for (unsigned i = 0; i <= last; i++) {
    if (const Arena* a = g_arenas[i].load(std::memory_order_acquire)) n += a->nthreads();
  }
  return n;
}

void arena_decay_after_cache_teardown(Arena* cache_arena) {
  if (Arena* a0 = arena_get(0, false)) a0->decay(/*is_background_thread=*/false, /*all=*/false);
  if (cache_arena == nullptr) return;
  // Read after the caller's unbind: when two threads of one arena exit together, at least the
  // later one sees zero. A thread binding meanwhile only costs it an early purge. With
  // background threads on they own purging, and 5.3.0 leaves the arena to them; with the idle
  // return's thread running (ours), the memory goes back by time, as any other.
  const bool deserted =
      cache_arena->nthreads() == 0 && !background_thread_enabled() && !idle_return_running();
  cache_arena->decay(/*is_background_thread=*/false, /*all=*/deserted);
}

void arenas_decay_sweep(const Arena* self) {
  if (!g_arena_opt.policy.idle_arena_decay || background_thread_enabled()) return;
  uint64_t now = nstime_now_ns();
  uint64_t due = g_next_sweep_ns.load(std::memory_order_relaxed);
  // One sweeper per interval: whoever moves the due time forward sweeps.
  if (now < due || !g_next_sweep_ns.compare_exchange_strong(due, now + kIdleSweepIntervalNs,
                                                            std::memory_order_relaxed)) {
    return;
  }
  unsigned last = g_huge_enabled ? g_huge_ind : g_narenas_auto - 1;
  for (unsigned i = 0; i <= last; i++) {
    Arena* a = g_arenas[i].load(std::memory_order_acquire);
    if (a == nullptr || a == self || (a->ndirty() == 0 && a->nmuzzy() == 0)) continue;
    a->decay(/*is_background_thread=*/false, /*all=*/false);
  }
}

size_t arenas_hold_cap(const Arena* self, uint64_t now_ns) {
  if (!g_arena_opt.policy.hold_peak || self->manual()) return SIZE_MAX;
  const int64_t ms = g_dirty_default.load(std::memory_order_relaxed);
  if (ms <= 0) return SIZE_MAX;
  size_t held = 0;
  size_t holders = 0;
  const unsigned last = g_huge_enabled ? g_huge_ind : g_narenas_auto - 1;
  for (unsigned i = 0; i <= last; i++) {
    const Arena* a = g_arenas[i].load(std::memory_order_acquire);
    if (a == nullptr) continue;
    const size_t h = a->hold_estimate();
    held += h;
    holders += h != 0;
  }
  return hold_budget::share(self->hold_estimate(), held, holders, now_ns, ms);
}

Arena* arena_percpu() {
  PercpuArena mode = g_arena_opt.percpu;
  if (mode == PercpuArena::kDisabled) return nullptr;
  unsigned cpu = sysinfo::current_cpu();
  unsigned ncpus = sysinfo::ncpus();
  if (mode == PercpuArena::kPhycpu && cpu >= ncpus / 2) cpu -= ncpus / 2;
  // CPU ids can exceed the CPU count (affinity masks, hotplug): fold them into range.
  return arena_get(cpu % g_narenas_auto, /*create=*/true);
}

unsigned arenas_percpu_limit() { return g_percpu_limit; }

Arena* arena_huge() {
  if (!g_huge_enabled) return nullptr;
  Arena* a = g_arenas[g_huge_ind].load(std::memory_order_acquire);
  if (a != nullptr) return a;
  MutexGuard g(g_arenas_mtx);
  a = g_arenas[g_huge_ind].load(std::memory_order_relaxed);
  if (a != nullptr) return a;
  a = Arena::create(g_huge_ind, nullptr, false);
  if (a == nullptr) return nullptr;
  // Oversize allocations tend to be freed soon and are expensive to keep: purge them eagerly.
  uint64_t now = nstime_now_ns();
  if (arenas_dirty_decay_ms_default() > 0) a->set_decay_ms(ExtentState::kDirty, 0, now);
  if (arenas_muzzy_decay_ms_default() > 0) a->set_decay_ms(ExtentState::kMuzzy, 0, now);
  g_arenas[g_huge_ind].store(a, std::memory_order_release);
  return a;
}

bool arena_create_manual(extent_hooks_t* hooks, unsigned* ind_out, bool metadata_use_hooks) {
  MutexGuard g(g_arenas_mtx);
  unsigned first_manual = g_narenas_auto + (g_huge_enabled ? 1 : 0);
  unsigned ind = g_narenas_total.load(std::memory_order_relaxed);
  unsigned reused = kMaxArenas;
  while (g_ndestroyed > 0) {
    const unsigned i = g_destroyed_stack[--g_ndestroyed];
    if (i >= first_manual && g_destroyed[i] &&
        g_arenas[i].load(std::memory_order_relaxed) == nullptr) {
      reused = i;
      break;
    }
  }
  if (reused != kMaxArenas) ind = reused;
  if (ind >= kMaxArenas) return false;
  Arena* a = init_locked(ind, hooks, true, metadata_use_hooks);
  if (a == nullptr) {
    if (reused != kMaxArenas) g_destroyed_stack[g_ndestroyed++] = reused;  // still free
    return false;
  }
  *ind_out = ind;
  return true;
}

bool arena_destroy_manual(unsigned ind) {
  MutexGuard g(g_arenas_mtx);
  if (ind >= kMaxArenas) return false;
  Arena* a = g_arenas[ind].load(std::memory_order_relaxed);
  if (a == nullptr || !a->manual() || a->in_use()) {
    return false;
  }
  g_arenas[ind].store(nullptr, std::memory_order_release);
  g_destroyed[ind] = true;
  // Entries stay unique (an index recreated by another path may have left a stale one), so the
  // stack never outgrows kMaxArenas.
  unsigned kept = 0;
  for (unsigned k = 0; k < g_ndestroyed; k++) {
    if (g_destroyed_stack[k] != ind) g_destroyed_stack[kept++] = g_destroyed_stack[k];
  }
  g_ndestroyed = kept;
  g_destroyed_stack[g_ndestroyed++] = ind;
  a->destroy();
  return true;
}

bool arena_is_destroyed(unsigned ind) { return ind < kMaxArenas && g_destroyed[ind]; }

int64_t arenas_dirty_decay_ms_default() { return g_dirty_default.load(std::memory_order_relaxed); }
int64_t arenas_muzzy_decay_ms_default() { return g_muzzy_default.load(std::memory_order_relaxed); }
bool arenas_set_dirty_decay_ms_default(int64_t ms) {
  if (!Decay::ms_valid(ms)) return false;
  g_dirty_default.store(ms, std::memory_order_relaxed);
  return true;
}
bool arenas_set_muzzy_decay_ms_default(int64_t ms) {
  if (!Decay::ms_valid(ms)) return false;
  g_muzzy_default.store(ms, std::memory_order_relaxed);
  return true;
}

bool arenas_bounded_coalesce_default() { return g_bounded_default.load(std::memory_order_relaxed); }
void arenas_set_bounded_coalesce_default(bool on) {
  g_bounded_default.store(on, std::memory_order_relaxed);
}

void arenas_prefork() { g_arenas_mtx.prefork(); }
void arenas_postfork_parent() { g_arenas_mtx.postfork_parent(); }
void arenas_postfork_child(Arena* own) {
  g_arenas_mtx.postfork_child();
  for (auto& slot : g_arenas) {
    Arena* a = slot.load(std::memory_order_relaxed);
    if (a == nullptr) continue;
    a->reset_threads_after_fork(a == own);
  }
}

}  // namespace je
