// arenas.h: the arena registry -- indices, lazy creation, thread binding, defaults.
//
// Purpose: arenas 0..narenas_auto-1 are automatic (threads bind to the least loaded one,
// created on first use); index narenas_auto is reserved for the oversize ("huge") arena when
// oversize_threshold is enabled; manual arenas (arenas.create) take the indices after that.
// Also holds the process-wide defaults later arenas are created with (arenas.dirty_decay_ms,
// arenas.muzzy_decay_ms, ours arenas.bounded_coalesce) and the oversize threshold, the decay
// pass that follows a thread cache's teardown (a thread leaving its arena last purges it), and
// the sweep that lets any thread's decay tick advance decay in automatic arenas nobody else
// ticks.
// Layer: arena. Callers: thread layer (binding, cache teardown), api (MALLOCX_ARENA), ctl
// (arenas.*, arena.<i>.*).
// Concurrency: `arenas_mtx` (rank kArenas) serializes creation/destruction; lookups are
// lock-free acquire loads of the slot array; thread counts are relaxed atomics.
// Invariants: a slot, once published, points to a fully constructed arena until a manual
// arena is destroyed (its slot is cleared first; the index becomes reusable); a manual arena
// with bound threads or holds is not destroyed.
// jemalloc mapping: arenas[], narenas_auto, narenas_total, arena_choose_hard, arena_init,
// arena_choose_huge / huge_arena_ind, arena_{dirty,muzzy}_decay_ms_default_{get,set},
// arena_nthreads_{inc,dec}, the decay calls at the end of tcache_destroy (src/tcache.c).
#pragma once

#include <cstddef>
#include <cstdint>

#include "arena/arena_options.h"
#include "jemalloc/jemalloc.h"

namespace je {

class Arena;

/// Arena indices are 12 bits in MALLOCX_ARENA (0 means "automatic"), so at most 4095 arenas.
inline constexpr unsigned kMaxArenas = 4095;

/// Once, at library init: stores `opts` in g_arena_opt, computes the number of automatic arenas
/// (opts.narenas, default 4 x CPUs) and stores it in g_arena_opt.narenas, settles
/// g_arena_opt.oversize_threshold (0: no huge arena), reserves the huge arena's index and
/// creates arena 0.
bool arenas_boot(const ArenaOptions& opts);

unsigned arenas_narenas_auto();
/// Application threads bound to the automatic arenas now (the sum of their nthreads; a racy
/// snapshot). The idle return starts only once it reaches two.
unsigned arenas_threads_bound();
/// arenas.narenas: one past the highest index ever handed out (auto + huge slot + manual).
unsigned arenas_narenas_total();
/// The arena at `ind`, or nullptr. Automatic arenas are created on demand if `create`.
Arena* arena_get(unsigned ind, bool create);
/// Bind a thread: the automatic arena with the fewest bound threads (creating unused slots
/// first); increments its thread count. nullptr only on OOM.
Arena* arena_choose_auto();
/// Thread count bookkeeping for arena binding (thread.arena, thread exit). A thread's first
/// binding also picks its bin shards (bin_info.h).
void arena_bind(Arena* a);
void arena_unbind(Arena* a);
/// Internal holds (the arena's internal thread count): arena.<i>.destroy refuses a held arena.
/// An exiting thread holds its arena from the moment it unbinds until its cache has been
/// flushed into it and the arena decayed, so a concurrent destroy cannot free it under them.
void arena_hold(Arena* a);
void arena_unhold(Arena* a);

/// A thread cache whose arena was `cache_arena` has just been flushed and torn down (thread
/// exit, thread.tcache.enabled false, tcache.destroy, and tcache.flush, which 5.3.0 implements
/// as a destruction). The frees of a teardown may have ticked no decay, so, as 5.3.0 does, one
/// decay step runs on arena 0 (where cache slot arrays live) and one on `cache_arena`; when no
/// application thread is bound to `cache_arena` any more and background threads are off,
/// nobody is left to tick it, so that step purges all of its dirty and muzzy pages (what
/// arena.<i>.purge does) instead. `cache_arena` may be nullptr (only arena 0 then). Takes the
/// decay and ecache locks; call with no allocator lock held.
void arena_decay_after_cache_teardown(Arena* cache_arena);
/// opt.idle_arena_decay (ours): called from a thread's decay tick in `self`. At most once per
/// kIdleSweepIntervalNs across the process, runs a decay step (non-blocking, as a tick does) on
/// every other automatic arena, and the huge arena, that holds dirty or muzzy pages: arenas
/// whose own threads stopped allocating still give their memory back while any thread works.
/// No-op with background threads on (they purge on schedule) or with the option off. Manual
/// arenas are left to their users (they may be destroyed concurrently).
void arenas_decay_sweep(const Arena* self);
/// opt.decay_hold_peak (ours): the most dirty pages `self`'s hold may keep in a decay step at
/// now_ns. Each arena holds what its own active memory fell below its own recent peak; arenas
/// whose peaks fall at different times (a pipeline's producer and consumer arenas) would
/// together hold more than the process ever had active at once. So the automatic arenas (and
/// the huge arena) share a budget: the process-wide dip, the highest sum of their active pages
/// seen by decay steps over the same half-to-whole window minus that sum now. When their holds
/// add up to more, each gets its proportional share; otherwise, or for a manual arena, or with
/// the option off, SIZE_MAX (no cap). Lock-free; O(automatic arenas).
size_t arenas_hold_cap(const Arena* self, uint64_t now_ns);
inline constexpr uint64_t kIdleSweepIntervalNs = 1000ull * 1000 * 1000;
/// percpu_arena: the automatic arena of the CPU the thread runs on (percpu: one per CPU;
/// phycpu: hyperthread pairs share one), created on demand; nullptr when percpu is off.
Arena* arena_percpu();

/// percpu_arena: indices below this are assigned by CPU (the CPU count, or half of it with
/// phycpu, rounded up); 0 when percpu_arena is off.
unsigned arenas_percpu_limit();

/// The oversize arena (created on first use), or nullptr if oversize_threshold is disabled.
Arena* arena_huge();
/// Requests at or above this usable size go to the huge arena (kLargeMaxClass + page when off).
size_t arenas_oversize_threshold();
bool arenas_huge_enabled();
unsigned arenas_huge_ind();

/// arenas.create: a new manual arena (optionally with user extent hooks), at the most recently
/// destroyed manual index if any, else the next unused one. False on OOM or when the index
/// space is exhausted. `metadata_use_hooks` (experimental.arenas_create_ext): the arena's
/// metadata blocks come from `hooks` too.
bool arena_create_manual(extent_hooks_t* hooks, unsigned* ind_out, bool metadata_use_hooks = false);
/// arena.<i>.destroy: only manual arenas with no bound threads. False if not allowed.
bool arena_destroy_manual(unsigned ind);
/// Whether `ind` was destroyed and not reused (MALLCTL_ARENAS_DESTROYED views).
bool arena_is_destroyed(unsigned ind);

/// Defaults for arenas created from now on (arenas.{dirty,muzzy}_decay_ms).
int64_t arenas_dirty_decay_ms_default();
int64_t arenas_muzzy_decay_ms_default();
bool arenas_set_dirty_decay_ms_default(int64_t ms);
bool arenas_set_muzzy_decay_ms_default(int64_t ms);
/// Ours: whether arenas created from now on bound eager dirty coalescing
/// (arenas.bounded_coalesce; starts as opt.bounded_coalesce).
bool arenas_bounded_coalesce_default();
void arenas_set_bounded_coalesce_default(bool on);

/// Ours (opt.borrow_dirty): a cached (dirty or muzzy) extent of `size` bytes from an automatic
/// arena other than `home` -- never growth, never the huge arena or a manual one, default
/// extent hooks only -- allocated in and owned by that arena (*owner), or nullptr.
struct Edata;
Edata* arenas_borrow_large(Arena* home, size_t size, size_t alignment, bool zero, Arena** owner);
/// Ours (opt.borrow_dirty, slabs): the same search for a slab of `size` bytes for `home`, but
/// the extent changes hands -- it becomes home's (Pac::lend, Pac::adopt), since a slab's
/// regions are freed to the bin of the arena its extent names. nullptr if none fits.
Edata* arenas_borrow_slab(Arena* home, size_t size);

void arenas_prefork();
void arenas_postfork_parent();
/// In a fork child: only the forking thread exists, so every arena's thread count is reset and
/// `own` (the forking thread's arena, or nullptr) counts that one thread, as in 5.3.0.
void arenas_postfork_child(Arena* own);

}  // namespace je
