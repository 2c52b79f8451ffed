// ctl_arena.cc: the `arena.<i>.*` nodes -- per-arena settings and actions.
//
// <i> is an arena index below arenas.narenas, MALLCTL_ARENAS_ALL (4096), its deprecated alias
// arenas.narenas itself, or MALLCTL_ARENAS_DESTROYED (4097). Only purge, decay, dss and
// initialized give ALL a meaning; the settings answer EFAULT there, as in 5.3.0 (Doris relies on
// arena.4096.dirty_decay_ms failing).
// Locking: actions that may call user extent hooks (purge, decay, reset, decay-time changes) run
// without the ctl mutex, so a hook may itself use mallctl. Destroying an arena is the exception:
// it runs under the ctl mutex, after waiting for any "all arenas" purge in flight to finish, so
// neither such a purge nor a stats refresh can touch an arena while it is being unmapped (jemalloc
// leaves both races to the caller). Using an arena from another thread while destroying it stays
// the caller's bug, as in jemalloc.
#include <sched.h>

#include <atomic>
#include <cstring>

#include "arena/arena.h"
#include "arena/arenas.h"
#include "arena/background_thread.h"
#include "ctl/ctl_handlers.h"
#include "ctl/ctl_stats.h"
#include "ctl/opt.h"
#include "extent/dss.h"
#include "extent/ehooks.h"
#include "meta/sz.h"
#include "support/nstime.h"
#include "thread/tcache.h"
#include "thread/tsd.h"

namespace je::ctl {

namespace {

/// The live arena at `ind` (any index, including the special ones), or nullptr.
Arena* arena_at(unsigned ind) { return ind < kMaxArenas ? arena_get(ind, false) : nullptr; }

/// ALL, or its deprecated alias: the current arenas.narenas.
bool means_all(unsigned ind) { return ind == kArenasAll || ind == arenas_narenas_total(); }

/// "All arenas" purges/decays in flight: they walk the registry without the ctl mutex, so
/// arena.<i>.destroy waits for them (new ones cannot start while it holds the mutex).
constinit std::atomic<unsigned> g_all_walkers{0};

int node_initialized(Req& r) {
  if (int e = readonly(r)) return e;
  unsigned ind;
  if (int e = mib_unsigned(r, 1, &ind)) return e;
  bool v;
  {
    MutexGuard g(g_ctl_mtx);
    v = stats_arena_initialized(ind);
  }
  return read_out(r, v);
}

/// arena.<i>.decay (advance decay, purge what is due) and arena.<i>.purge (purge everything).
template <bool kAll>
int node_decay_or_purge(Req& r) {
  if (int e = neither_read_nor_write(r)) return e;
  unsigned ind;
  if (int e = mib_unsigned(r, 1, &ind)) return e;
  // Ours: a purge also returns what thread caches keep beyond 5.3.0's capacities (grown bins,
  // opt.tcache_grow_bytes) -- the caller's at once, before its blocks' pages are purged below,
  // other threads' at their next GC step (doc/design/memory-return.md).
  if constexpr (kAll) tcache_release_grown(tsd_tcache(tsd_fetch()));
  if (means_all(ind)) {
    unsigned n;
    {
      MutexGuard g(g_ctl_mtx);
      g_all_walkers.fetch_add(1, std::memory_order_relaxed);
      n = arenas_narenas_total();
    }
    for (unsigned i = 0; i < n; i++) {
      if (Arena* a = arena_at(i)) a->decay(/*is_background_thread=*/false, kAll);
    }
    g_all_walkers.fetch_sub(1, std::memory_order_release);
  } else if (Arena* a = arena_at(ind)) {
    a->decay(/*is_background_thread=*/false, kAll);
  }
  // An index without an arena (not created yet, destroyed, or MALLCTL_ARENAS_DESTROYED) has
  // nothing to purge.
  return 0;
}

/// Common checks of reset and destroy: a void node on a manual arena.
int manual_target(Req& r, unsigned* ind, Arena** a) {
  if (int e = neither_read_nor_write(r)) return e;
  if (int e = mib_unsigned(r, 1, ind)) return e;
  *a = arena_at(*ind);
  if (*a == nullptr || !(*a)->manual()) return EFAULT;
  return 0;
}

int node_reset(Req& r) {
  unsigned ind;
  Arena* a;
  if (int e = manual_target(r, &ind, &a)) return e;
  // Background threads keep off the arena while it is emptied (5.3.0 pauses them too).
  background_thread_pause_arena(ind);
  a->reset();
  background_thread_resume_arena(ind);
  return 0;
}

int node_destroy(Req& r) {
  MutexGuard g(g_ctl_mtx);
  unsigned ind;
  Arena* a;
  if (int e = manual_target(r, &ind, &a)) return e;
  if (a->in_use()) return EFAULT;
  while (g_all_walkers.load(std::memory_order_acquire) != 0) sched_yield();
  background_thread_pause_arena(ind);
  // Reset first so that the destroyed view gets the final event counters of an empty arena.
  a->reset();
  stats_arena_destroying(ind, a);
  bool ok = arena_destroy_manual(ind);
  background_thread_resume_arena(ind);
  return ok ? 0 : EFAULT;
}

/// dss precedence (5.3.0's arena_i_dss_ctl): a name other than the three exact ones is EINVAL;
/// arena.4096.dss (or narenas) is the default that new arenas take; an index without an arena
/// is EFAULT. The value read back is the one in force after the write, as in 5.3.0.
int node_dss(Req& r) {
  MutexGuard g(g_ctl_mtx);
  const char* dss = nullptr;
  if (int e = write_in(r, &dss)) return e;
  unsigned ind;
  if (int e = mib_unsigned(r, 1, &ind)) return e;
  unsigned prec = kDssNPrec;
  if (dss != nullptr) {
    for (unsigned i = 0; i < kDssNPrec; i++) {
      if (std::strcmp(dss, kDssNames[i]) == 0) prec = i;
    }
    if (prec == kDssNPrec) return EINVAL;
  }
  DssPrec now;
  if (means_all(ind)) {
    if (prec != kDssNPrec) dss_prec_default_set(static_cast<DssPrec>(prec));
    now = dss_prec_default();
  } else {
    if (arena_at(ind) == nullptr) return EFAULT;
    if (prec != kDssNPrec) dss_prec_set(ind, static_cast<DssPrec>(prec));
    now = dss_prec_get(ind);
  }
  const char* out = kDssNames[static_cast<unsigned>(now)];
  return read_out(r, out);
}

int node_oversize_threshold(Req& r) {
  unsigned ind;
  if (int e = mib_unsigned(r, 1, &ind)) return e;
  Arena* a = arena_at(ind);
  if (a == nullptr) return EFAULT;
  if (r.reading()) {
    size_t old = a->oversize_threshold();
    if (int e = read_out(r, old)) return e;
  }
  if (r.writing()) {
    size_t v;
    if (int e = write_in(r, &v)) return e;
    a->set_oversize_threshold(v);
  }
  return 0;
}

template <ExtentState kWhich>
int node_decay_ms(Req& r) {
  unsigned ind;
  if (int e = mib_unsigned(r, 1, &ind)) return e;
  Arena* a = arena_at(ind);
  if (a == nullptr) return EFAULT;  // includes MALLCTL_ARENAS_ALL: no "all arenas" setting
  if (r.reading()) {
    ssize_t old = static_cast<ssize_t>(a->decay_ms(kWhich));
    if (int e = read_out(r, old)) return e;
  }
  if (r.writing()) {
    ssize_t v;
    if (int e = write_in(r, &v)) return e;
    if (!a->set_decay_ms(kWhich, v, nstime_now_ns())) return EFAULT;
    // The arena's background thread may be asleep on a schedule computed for the old time.
    background_thread_wake_arena(ind);
  }
  return 0;
}

int node_extent_hooks(Req& r) {
  MutexGuard g(g_ctl_mtx);
  unsigned ind;
  if (int e = mib_unsigned(r, 1, &ind)) return e;
  if (ind >= arenas_narenas_total()) return EFAULT;
  Arena* a = arena_at(ind);
  if (a == nullptr) {
    // An automatic arena not created yet reads the defaults; writing creates it with the
    // given hooks. Other missing indices (huge arena not used yet, destroyed) cannot.
    if (ind >= arenas_narenas_auto()) return EFAULT;
    extent_hooks_t* old = const_cast<extent_hooks_t*>(&kDefaultExtentHooks);
    if (int e = read_out(r, old)) return e;
    if (r.writing()) {
      extent_hooks_t* hooks;
      if (int e = write_in(r, &hooks)) return e;
      a = arena_get(ind, /*create=*/true);
      if (a == nullptr) return EFAULT;
      a->exchange_extent_hooks(hooks);
    }
    return 0;
  }
  if (r.writing()) {
    extent_hooks_t* hooks;
    if (int e = write_in(r, &hooks)) return e;
    extent_hooks_t* old = a->exchange_extent_hooks(hooks);
    return read_out(r, old);
  }
  extent_hooks_t* cur = a->extent_hooks();
  return read_out(r, cur);
}

int node_retain_grow_limit(Req& r) {
  // Only meaningful when address space is retained.
  if (!g_opt.retain) return ENOENT;
  MutexGuard g(g_ctl_mtx);
  unsigned ind;
  if (mib_unsigned(r, 1, &ind) != 0) return EFAULT;
  Arena* a = ind < arenas_narenas_total() ? arena_at(ind) : nullptr;
  if (a == nullptr) return EFAULT;
  size_t old;
  if (r.writing()) {
    size_t limit;
    if (int e = write_in(r, &limit)) return e;
    if (!a->set_retain_grow_limit(limit, &old)) return EFAULT;
  } else {
    old = a->retain_grow_limit();
  }
  return read_out(r, old);
}

/// Ours: arena.<i>.bounded_coalesce, the coalescing bound of one arena, switchable at run time
/// so that both policies can be compared inside one process. No "all arenas" form (EFAULT),
/// like the other settings; arenas.bounded_coalesce sets it for arenas created later.
int node_bounded_coalesce(Req& r) {
  unsigned ind;
  if (int e = mib_unsigned(r, 1, &ind)) return e;
  Arena* a = arena_at(ind);
  if (a == nullptr) return EFAULT;
  bool v = false;
  if (int e = write_in(r, &v)) return e;
  bool old = a->bounded_coalesce();
  if (int e = read_out(r, old)) return e;
  if (r.writing()) a->set_bounded_coalesce(v);
  return 0;
}

/// arena.<i>.name (jemalloc 5.3.1; char*, read and write in one call allowed, the read first).
/// Both directions pass a `char*`: a read copies the name, NUL included (at most
/// Arena::kNameLen bytes), into the buffer *(char**)oldp points at; a write takes the string
/// newp points at, cut to kNameLen - 1 characters. 5.3.1's errors: <i> = ALL or not below
/// arenas.narenas, *oldlenp or newlen other than sizeof(char*), a NULL name: EINVAL; no arena
/// at <i> (not created yet, destroyed): EFAULT.
int node_name(Req& r) {
  MutexGuard g(g_ctl_mtx);
  unsigned ind;
  if (int e = mib_unsigned(r, 1, &ind)) return e;
  if (ind == kArenasAll || ind >= arenas_narenas_total()) return EINVAL;
  Arena* a = arena_at(ind);
  if (a == nullptr) return EFAULT;
  if (r.oldp != nullptr && r.oldlenp != nullptr) {
    if (*r.oldlenp != sizeof(char*)) return EINVAL;
    char* out = *static_cast<char**>(r.oldp);
    const char* cur = a->name();
    size_t n = std::strlen(cur) + 1;
    std::memcpy(out, cur, n);
  }
  if (r.newp != nullptr) {
    const char* in = nullptr;
    if (r.newlen != sizeof(char*)) return EINVAL;
    std::memcpy(&in, r.newp, sizeof(in));
    if (in == nullptr) return EINVAL;
    a->set_name(in);
  }
  return 0;
}

}  // namespace

bool index_arena(const size_t*, size_t, size_t i) {
  return i == kArenasAll || i == kArenasDestroyed || i <= arenas_narenas_total();
}

constexpr Node kArenaChildren[kNArenaChildren] = {
    leaf("initialized", &node_initialized),
    leaf("decay", &node_decay_or_purge<false>),
    leaf("purge", &node_decay_or_purge<true>),
    leaf("reset", &node_reset),
    leaf("destroy", &node_destroy),
    leaf("dss", &node_dss),
    leaf("oversize_threshold", &node_oversize_threshold),
    leaf("dirty_decay_ms", &node_decay_ms<ExtentState::kDirty>),
    leaf("muzzy_decay_ms", &node_decay_ms<ExtentState::kMuzzy>),
    leaf("extent_hooks", &node_extent_hooks),
    leaf("retain_grow_limit", &node_retain_grow_limit),
    // Ours, after 5.3.0's names so that their MIBs stay the same.
    leaf("bounded_coalesce", &node_bounded_coalesce),
    // jemalloc 5.3.1's, likewise after 5.3.0's (5.3.1 has it last too, after retain_grow_limit).
    leaf("name", &node_name),
};

}  // namespace je::ctl
