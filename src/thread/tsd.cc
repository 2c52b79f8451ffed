// tsd.cc: per-thread state life cycle and thread events (see tsd.h).
#include "thread/tsd.h"

#include <pthread.h>

#include "arena/arenas.h"
#include "support/opt.h"
#include "support/reentrancy.h"

namespace je {

constinit thread_local Tsd t_tsd JE_TLS_IE = {};

namespace {

constinit pthread_key_t g_exit_key = 0;
constinit uint64_t g_event_interval = 0;

// Thread exit: flush the cache back to the arenas and leave the thread in purgatory, where
// later calls (other destructors) are served without a cache.
void thread_cleanup(void* arg) {
  Tsd& tsd = *static_cast<Tsd*>(arg);
  if (tsd.state == TsdState::kPurgatory) return;
  tcache_destroy(&tsd.tcache);
  if (tsd.arena != nullptr) arena_unbind(tsd.arena);
  tsd.arena = nullptr;
  tsd.state = TsdState::kPurgatory;
  tsd_recompute_fast(tsd);
}

void schedule_events(Tsd& tsd) {
  tsd.allocated_next_event = tsd.allocated + g_event_interval;
  tsd.deallocated_next_event = tsd.deallocated + g_event_interval;
}

}  // namespace

bool tsd_boot() {
  g_event_interval = g_opt.tcache_gc_incr_bytes != 0 ? g_opt.tcache_gc_incr_bytes : 65536;
  return pthread_key_create(&g_exit_key, thread_cleanup) == 0;
}

void tsd_recompute_fast(Tsd& tsd) {
  // Junk filling and opt.zero need every allocation and free to see the slow path.
  bool fast = tsd.state == TsdState::kNominal && !g_opt.junk_alloc && !g_opt.junk_free &&
              !g_opt.zero;
  tsd.allocated_next_event_fast = fast ? tsd.allocated_next_event : 0;
  tsd.deallocated_next_event_fast = fast ? tsd.deallocated_next_event : 0;
}

Tsd& tsd_fetch() {
  Tsd& tsd = t_tsd;
  if (JE_LIKELY(tsd.state != TsdState::kUninitialized)) return tsd;
  // First call on this thread. Register the exit hook (pthread_setspecific does not allocate
  // for keys created this early), then bind an arena and build the cache.
  pthread_setspecific(g_exit_key, &tsd);
  tsd.state = TsdState::kNominalSlow;
  tsd.tcache_enabled = g_opt.tcache;
  schedule_events(tsd);
  tsd.arena = g_opt.percpu_arena_mode != PercpuArenaMode::kDisabled ? nullptr : arena_choose_auto();
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
  if (JE_UNLIKELY(g_opt.percpu_arena_mode != PercpuArenaMode::kDisabled)) {
    // Follow the CPU: refills and large allocations come from its arena.
    Arena* a = arena_percpu();
    if (a != nullptr && a != tsd.arena) tsd_set_arena(tsd, a);
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
  if (tsd.state == TsdState::kNominal && !in_reentrant_call()) tcache_gc_step(&tsd.tcache);
  tsd.allocated_next_event = tsd.allocated + g_event_interval;
  tsd_recompute_fast(tsd);
}

void tsd_dalloc_event(Tsd& tsd) {
  if (tsd.deallocated < tsd.deallocated_next_event) return;
  if (tsd.state == TsdState::kNominal && !in_reentrant_call()) tcache_gc_step(&tsd.tcache);
  tsd.deallocated_next_event = tsd.deallocated + g_event_interval;
  tsd_recompute_fast(tsd);
}

}  // namespace je
