// tsd.cc: per-thread state life cycle and thread events (see tsd.h).
#include "thread/tsd.h"

#include <pthread.h>

#include <atomic>

#include "arena/arenas.h"
#include "arena/background_thread.h"
#include "support/config.h"
#include "support/reentrancy.h"
#include "thread/thread_options.h"

namespace je {

constinit thread_local Tsd t_tsd JE_TLS_IE = {};

namespace {

constinit pthread_key_t g_exit_key = 0;
constinit uint64_t g_event_interval = 0;
// opt.stats_interval: bytes allocated (all threads) between reports; threads add their bytes
// to g_stats_accum in batches of g_stats_batch.
constinit StatsIntervalHook g_stats_hook = nullptr;
constinit uint64_t g_stats_interval = 0;
constinit uint64_t g_stats_batch = 0;
constinit std::atomic<uint64_t> g_stats_accum{0};
// Set by tsd_boot from the arena options: every call of every thread takes the slow path.
constinit bool g_always_slow = false;
// Run first on thread exit (the heap profiler marks the thread's data as exited).
using ExitHook = void (*)();
constinit ExitHook g_exit_hook = nullptr;

// Thread exit: leave the arena, flush the cache back to the arenas (tcache_destroy then runs
// the decay pass: a thread that was its arena's last purges it), and stay in purgatory, where
// later calls (other destructors) are served without a cache.
void thread_cleanup(void* arg) {
  Tsd& tsd = *static_cast<Tsd*>(arg);
  if (tsd.state == TsdState::kPurgatory) return;
  // Purgatory first: a user extent hook called from the flush or the purge below, or anything
  // else allocating on this thread from now on, gets arena 0 without a cache.
  tsd.state = TsdState::kPurgatory;
  tsd_recompute_fast(tsd);
  if (g_exit_hook != nullptr) g_exit_hook();
  Arena* arena = tsd.arena;
  tsd.arena = nullptr;
  // Unbind before the teardown, as 5.3.0 orders it, so the decay pass sees whether any thread
  // is left; the hold keeps a manual arena from being destroyed while this thread still flushes
  // into it and purges it.
  if (arena != nullptr) {
    arena_hold(arena);
    arena_unbind(arena);
    // Ours (opt.idle_return): a thread that exits was one of at least two, so the idle
    // return's thread may start now; the memory this thread leaves then goes back by time
    // (doc/design/memory-return.md) rather than in the teardown's decay pass below.
    idle_return_maybe_start(/*exiting_thread=*/true);
  }
  tcache_destroy(&tsd.tcache);
  if (arena != nullptr) arena_unhold(arena);
}

void schedule_alloc_event(Tsd& tsd) {
  uint64_t next = tsd.gc_next_alloc;
  if (config::kStats && tsd.peak_next_alloc < next) next = tsd.peak_next_alloc;
  if (config::kProf && tsd.prof_next_sample < next) next = tsd.prof_next_sample;
  if (g_stats_hook != nullptr && tsd.stats_last + g_stats_batch < next) {
    next = tsd.stats_last + g_stats_batch;
  }
  tsd.allocated_next_event = next;
}

void schedule_dalloc_event(Tsd& tsd) {
  uint64_t next = tsd.gc_next_dalloc;
  if (config::kStats && tsd.peak_next_dalloc < next) next = tsd.peak_next_dalloc;
  tsd.deallocated_next_event = next;
}

void schedule_events(Tsd& tsd) {
  tsd.gc_next_alloc = tsd.allocated + g_event_interval;
  tsd.peak_next_alloc = tsd.allocated + kPeakEventBytes;
  tsd.stats_last = tsd.allocated;
  schedule_alloc_event(tsd);
  tsd.gc_next_dalloc = tsd.deallocated + g_event_interval;
  tsd.peak_next_dalloc = tsd.deallocated + kPeakEventBytes;
  schedule_dalloc_event(tsd);
}

// Adds this thread's bytes since its last report to the global count; prints when it reaches
// the interval (one thread wins each interval).
void stats_interval_event(Tsd& tsd) {
  uint64_t delta = tsd.allocated - tsd.stats_last;
  tsd.stats_last = tsd.allocated;
  uint64_t cur = g_stats_accum.fetch_add(delta, std::memory_order_relaxed) + delta;
  while (cur >= g_stats_interval) {
    if (g_stats_accum.compare_exchange_weak(cur, cur - g_stats_interval,
                                            std::memory_order_relaxed)) {
      g_stats_hook();
      return;
    }
  }
}

}  // namespace

bool tsd_boot(StatsIntervalHook stats_hook) {
  const ThreadOptions& o = g_thread_opt;
  // Junk filling, opt.zero and opt.safety_checks need every allocation and free to see the
  // slow path: the fast paths' one threshold compare then always fails, at no cost to them.
  g_always_slow = g_arena_opt.junk_alloc || g_arena_opt.junk_free || g_arena_opt.zero ||
                  g_arena_opt.safety_checks;
  g_event_interval = o.tcache_gc_incr_bytes != 0 ? o.tcache_gc_incr_bytes : 65536;
  if (o.stats_interval >= 0 && stats_hook != nullptr) {
    g_stats_hook = stats_hook;
    g_stats_interval = o.stats_interval > 0 ? static_cast<uint64_t>(o.stats_interval) : 1;
    // Batches of 1/64 of the interval keep the shared counter cold, capped at 4 MiB.
    g_stats_batch = g_stats_interval >> 6;
    if (g_stats_batch == 0) g_stats_batch = 1;
    if (g_stats_batch > (uint64_t{4} << 20)) g_stats_batch = uint64_t{4} << 20;
  }
  return pthread_key_create(&g_exit_key, thread_cleanup) == 0;
}

void tsd_recompute_fast(Tsd& tsd) {
  bool fast = tsd.state == TsdState::kNominal && !g_always_slow;
  tsd.allocated_next_event_fast = fast ? tsd.allocated_next_event : 0;
  tsd.deallocated_next_event_fast = fast ? tsd.deallocated_next_event : 0;
}

void tsd_call_uncounted(void (*fn)(void*), void* arg) {
  Tsd& t = t_tsd;
  const uint64_t allocated = t.allocated;
  const uint64_t deallocated = t.deallocated;
  fn(arg);
  t.allocated = allocated;
  t.deallocated = deallocated;
}

Tsd& tsd_fetch() {
  Tsd& tsd = t_tsd;
  if (JE_LIKELY(tsd.state != TsdState::kUninitialized)) return tsd;
  // First call on this thread. Register the exit hook (pthread_setspecific does not allocate
  // for keys created this early), then bind an arena and build the cache.
  pthread_setspecific(g_exit_key, &tsd);
  tsd.state = TsdState::kNominalSlow;
  tsd.tcache_enabled = g_thread_opt.tcache;
  tsd.prof_next_sample = UINT64_MAX;
  tsd.prof_epoch = kTsdProfUnarmed;
  schedule_events(tsd);
  tsd.arena = g_arena_opt.percpu != PercpuArena::kDisabled ? nullptr : arena_choose_auto();
  if (tsd.arena == nullptr && (tsd.arena = arena_percpu()) != nullptr) arena_bind(tsd.arena);
  if (tsd.tcache_enabled && tsd.arena != nullptr && tcache_init(&tsd.tcache, tsd.arena)) {
    tsd.state = TsdState::kNominal;
  } else {
    tsd.tcache_enabled = false;
  }
  tsd_recompute_fast(tsd);
  return tsd;
}

Tcache* tsd_tcache(Tsd& tsd) {
  if (tsd.state != TsdState::kNominal || in_reentrant_call()) return nullptr;
  return &tsd.tcache;
}

Arena* tsd_arena(Tsd& tsd) {
  if (JE_UNLIKELY(tsd.state == TsdState::kPurgatory || in_reentrant_call())) {
    return arena_get(0, false);
  }
  if (JE_UNLIKELY(g_arena_opt.percpu != PercpuArena::kDisabled)) {
    // Follow the CPU, as 5.3.0 does: a thread on a per-CPU arena re-checks its CPU only when
    // another thread used that arena since its own last check (a lone thread never migrates),
    // and a thread moved beyond the per-CPU range (thread.arena) stays where it was put.
    Arena* cur = tsd.arena;
    if (cur == nullptr) {
      if ((cur = arena_percpu()) == nullptr) return nullptr;
      tsd_set_arena(tsd, cur);
    }
    if (cur->ind() < arenas_percpu_limit() && cur->last_thread() != &tsd) {
      Arena* a = arena_percpu();
      if (a != nullptr && a != cur) tsd_set_arena(tsd, a);
      tsd.arena->set_last_thread(&tsd);
    }
    return tsd.arena;
  }
  if (JE_UNLIKELY(tsd.arena == nullptr)) tsd.arena = arena_choose_auto();
  return tsd.arena;
}

void tsd_set_arena(Tsd& tsd, Arena* arena) {
  if (tsd.arena == arena) return;
  if (tsd.arena != nullptr) arena_unbind(tsd.arena);
  arena_bind(arena);
  tsd.arena = arena;
  if (tsd.state == TsdState::kNominal) tcache_set_arena(&tsd.tcache, arena);
}

void tsd_set_tcache_enabled(Tsd& tsd, bool enabled) {
  if (tsd.state == TsdState::kPurgatory || tsd.state == TsdState::kUninitialized) return;
  if (enabled == (tsd.state == TsdState::kNominal)) {
    tsd.tcache_enabled = enabled;
    return;
  }
  if (enabled) {
    Arena* a = tsd_arena(tsd);
    if (a != nullptr && tcache_init(&tsd.tcache, a)) {
      tsd.state = TsdState::kNominal;
      tsd.tcache_enabled = true;
    }
  } else {
    tcache_destroy(&tsd.tcache);
    tsd.state = TsdState::kNominalSlow;
    tsd.tcache_enabled = false;
  }
  tsd_recompute_fast(tsd);
}

void tsd_alloc_event(Tsd& tsd) {
  if (tsd.allocated < tsd.allocated_next_event) return;
  if (config::kStats && tsd.allocated >= tsd.peak_next_alloc) {
    tsd_peak_update(tsd);
    tsd.peak_next_alloc = tsd.allocated + kPeakEventBytes;
  }
  if (tsd.allocated >= tsd.gc_next_alloc) {
    if (tsd.state == TsdState::kNominal && !in_reentrant_call()) tcache_gc_step(&tsd.tcache);
    tsd.gc_next_alloc = tsd.allocated + g_event_interval;
  }
  if (g_stats_hook != nullptr && tsd.allocated >= tsd.stats_last + g_stats_batch &&
      !in_reentrant_call()) {
    stats_interval_event(tsd);
  }
  schedule_alloc_event(tsd);
  tsd_recompute_fast(tsd);
}

void tsd_dalloc_event(Tsd& tsd) {
  if (tsd.deallocated < tsd.deallocated_next_event) return;
  // A sample here sees the net allocation after frees that followed the last allocation-side
  // sample; with both sides sampled, a burst freed before a read still shows in the peak.
  if (config::kStats && tsd.deallocated >= tsd.peak_next_dalloc) {
    tsd_peak_update(tsd);
    tsd.peak_next_dalloc = tsd.deallocated + kPeakEventBytes;
  }
  if (tsd.deallocated >= tsd.gc_next_dalloc) {
    if (tsd.state == TsdState::kNominal && !in_reentrant_call()) tcache_gc_step(&tsd.tcache);
    tsd.gc_next_dalloc = tsd.deallocated + g_event_interval;
  }
  schedule_dalloc_event(tsd);
  tsd_recompute_fast(tsd);
}

void tsd_set_exit_hook(void (*hook)()) { g_exit_hook = hook; }

void tsd_set_prof_next_sample(Tsd& tsd, uint64_t next) {
  tsd.prof_next_sample = next;
  tsd.prof_armed = true;
  schedule_alloc_event(tsd);
  tsd_recompute_fast(tsd);
}

void tsd_peak_update(Tsd& tsd) {
  // Signed: more may have been freed than allocated since the reset (memory allocated before).
  int64_t net = static_cast<int64_t>(tsd.allocated - tsd.deallocated - tsd.peak_alloc_base);
  if (net > static_cast<int64_t>(tsd.peak_max)) tsd.peak_max = static_cast<uint64_t>(net);
}

void tsd_peak_reset(Tsd& tsd) {
  tsd.peak_max = 0;
  tsd.peak_alloc_base = tsd.allocated - tsd.deallocated;
}

}  // namespace je
