// background_thread.h: purging threads -- time-driven decay for processes that go idle.
//
// Purpose: without these threads decay advances only when application threads allocate or free
// (the per-thread tick in arena.cc), so a process that stops allocating keeps its dirty pages
// forever. With `background_thread` on, up to max_background_threads threads run inside the
// library; thread k owns the arenas whose index is congruent to k modulo that number. Each
// thread runs decay on its arenas (with purging on every run, Pac eagerness kAlways), then asks
// every decaying ecache how long until at least 1024 more pages (or all of them, if fewer) would
// be purgeable, and sleeps that long (at least 100 ms; indefinitely when nothing is left to
// decay). Application threads stop purging on their ticks (eagerness kNever) but keep the decay
// epochs current; they wake the owning thread early when a burst of more than 1024 new dirty
// pages has appeared since its last run, or when pages arrive while it sleeps without a
// deadline (it then only computes the schedule, it does not purge at once).
//
// Ours, opt.idle_return: one more slot, outside the feature's switch and statistics, runs the
// same loop over every arena when background threads are off (idle_return_maybe_start below;
// doc/design/memory-return.md); it is the only thread created from an allocation path.
//
// Threads: all max_background_threads threads are created when the feature is switched on
// (from the mallctl caller or from library init: contexts where creating a thread, which
// allocates, is safe), never from inside an allocation (unlike the idle return's). A thread
// whose residue class has no arena yet sleeps without a deadline and is not counted in
// `num_threads` until one exists, so
// the statistic matches 5.3.0, which creates threads lazily, one per residue class in use.
// Threads are created with every signal blocked and are named "jemalloc_bg_thd".
//
// Layer: arena. Callers: arena.cc (the tick-side hooks below, inline and cheap when the feature
// is off: one relaxed load), ctl (background_thread, max_background_threads,
// stats.background_thread.*, stats.mutexes.{background_thread,max_per_bg_thd}, arena reset and
// destroy, decay-time changes), api (boot and start at init, fork handlers).
//
// Concurrency:
//   - Switching on/off and changing max_background_threads are serialized by a plain pthread
//     mutex (the "switch"), held across thread creation and joining. It is not a je::Mutex:
//     creating a thread allocates, which may take any allocator lock, so it must rank outside
//     all of them; it is only ever taken with nothing held but, possibly, the ctl mutex.
//   - The global mutex (LockRank::kBackgroundThreadGlobal) guards the published state (enabled,
//     the thread count, which threads are started) for statistics readers and fork.
//   - Each thread's mutex (LockRank::kBackgroundThread) guards its state and counters and is held
//     by the thread for the whole of a run, so taking it waits for a run in progress to finish
//     (fork, arena reset/destroy, stop). Decay and ecache locks nest inside it.
//   - Sleeping uses a per-thread pthread mutex + condition variable on CLOCK_MONOTONIC; that
//     mutex is a leaf (nothing is acquired under it). Application threads never take the
//     thread's je::Mutex; they read its published wake-up time (an atomic) and signal.
//
// Invariants: at most one OS thread per slot; a slot is kRunning exactly between a successful
// start and the join of its thread; when enabled, slots [0, max) are all running; the per-thread
// state array is allocated once at boot for opt.max_background_threads slots and never freed, so
// hooks may index it without locks even while the threads are being restarted.
//
// jemalloc mapping: background_thread.{h,c} (background_thread_info_t, background_threads_enable
// / _disable, background_work_sleep_once, background_thread_wakeup_early,
// background_thread_stats_read, the prefork/postfork hooks) and arena.c's
// arena_maybe_do_deferred_work / arena_background_thread_inactivity_check. Feeds
// `background_thread`, `max_background_threads`, `opt.max_background_threads` (normalized at
// boot), `stats.background_thread.{num_threads,num_runs,run_interval}` and
// `stats.mutexes.{background_thread,max_per_bg_thd}.*`.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "support/compiler.h"
#include "support/mutex.h"

namespace je {

class Arena;

/// Shortest sleep between runs (jemalloc's BACKGROUND_THREAD_MIN_INTERVAL_NS).
inline constexpr uint64_t kBackgroundThreadMinIntervalNs = 100'000'000;
/// A run is scheduled for when this many pages would be purgeable, and application threads
/// wake a sleeping thread once more new dirty pages than this appeared since its last run
/// (jemalloc's ARENA_DEFERRED_PURGE_NPAGES_THRESHOLD).
inline constexpr size_t kBackgroundThreadPurgeNpagesThreshold = 1024;
/// The idle return's (opt.idle_return) threshold: it wakes once this many pages (all of them,
/// if fewer) are purgeable, so at most this many per arena wait for a later wake-up -- the
/// floor of doc/design/memory-return.md.
inline constexpr size_t kIdleReturnFloorPages = 64;

/// stats.background_thread.* and the two global mutex entries, as of one read.
struct BackgroundThreadStats {
  size_t num_threads = 0;        // started threads whose residue class has an arena
  uint64_t num_runs = 0;         // runs (sleeps begun) of those threads since they started
  uint64_t run_interval_ns = 0;  // average time slept per run (0 without runs)
  MutexStats global_mutex;       // stats.mutexes.background_thread
  MutexStats max_per_thread;     // stats.mutexes.max_per_bg_thd (field-wise maximum)
};

namespace detail {
extern constinit std::atomic<bool> g_background_thread_enabled;
/// The idle return's thread: not started yet, running, could not be created, or the option is
/// off (set at boot).
namespace IdleReturn {
inline constexpr uint8_t kNotStarted = 0;
inline constexpr uint8_t kRunning = 1;
inline constexpr uint8_t kFailed = 2;
inline constexpr uint8_t kOff = 3;
}  // namespace IdleReturn
extern constinit std::atomic<uint8_t> g_idle_return;
void background_thread_dirty_added_slow(Arena* a);
void background_thread_epoch_advanced_slow(Arena* a);
void idle_return_start_slow(bool exiting_thread);
}  // namespace detail

/// Once, at library init, after arenas_boot (idempotent; the ctl layer calls it too).
/// Normalizes opt.max_background_threads (above 4095, i.e. unset: 4), makes it the current
/// maximum and allocates that many thread slots from the global base. False on OOM.
bool background_thread_boot();

/// Whether background threads are on (`background_thread`). Relaxed: for fast-path checks.
JE_ALWAYS_INLINE bool background_thread_enabled() {
  return detail::g_background_thread_enabled.load(std::memory_order_relaxed);
}

/// Switches the threads on (creating max_background_threads of them) or off (stopping and
/// joining all). A no-op returning true when already in that state. False when a thread could
/// not be created (or the maximum is 0): then no thread runs and the feature stays off.
/// Must not be called while holding any allocator lock other than the ctl mutex.
bool background_thread_set_enabled(bool on);

/// Current max_background_threads.
size_t background_thread_max();

enum class BackgroundThreadSetMax : uint8_t { kOk, kInvalid, kStartFailed };
/// max_background_threads write (5.3.0 semantics): n above opt.max_background_threads is
/// kInvalid; while enabled the threads are stopped and restarted with the new count
/// (kStartFailed if that fails, leaving the feature off). 0 is accepted only while disabled
/// (5.3.0 divides by it and crashes); switching on with a maximum of 0 then fails.
BackgroundThreadSetMax background_thread_set_max(size_t n);

/// Statistics as 5.3.0 reports them: all zero (but the global mutex) while disabled. A thread
/// in the middle of a run is skipped for runs and interval rather than waited for.
BackgroundThreadStats background_thread_stats();
/// stats.mutexes.reset: zero the counters of the global and per-thread mutexes.
void background_thread_mutex_stats_reset();

/// Arena reset/destroy: after pause returns, no background thread touches arena `ind` until
/// resume (a run in progress on it is waited for). Calls nest (a counter per arena).
void background_thread_pause_arena(unsigned ind);
void background_thread_resume_arena(unsigned ind);
/// Make the thread owning arena `ind` run now (its decay settings changed). No-op when off.
void background_thread_wake_arena(unsigned ind);

/// Tick-side hook: `a` just recorded pages into its dirty ecache.
JE_ALWAYS_INLINE void background_thread_dirty_added(Arena* a) {
  if (JE_UNLIKELY(background_thread_enabled() ||
                  detail::g_idle_return.load(std::memory_order_relaxed) ==
                      detail::IdleReturn::kRunning)) {
    detail::background_thread_dirty_added_slow(a);
  }
}

/// Ours, opt.idle_return: one thread of ours that runs decay steps on every arena -- as one
/// background thread would, on the decay schedule, down to kIdleReturnFloorPages -- so that
/// what a process keeps goes back by time when its own threads stop calling the allocator
/// (doc/design/memory-return.md). Application threads keep their own decay ticks. Started
/// lazily, from a decay tick (no allocator lock held) once two application threads are bound
/// to arenas, or from a thread's exit; never in a single-threaded program; with every signal
/// blocked; not while background threads are on (it then sleeps, and resumes when they stop).
/// If it cannot be created the process works as without it. It is not a background thread:
/// `background_thread` and stats.background_thread.* do not see it.
JE_ALWAYS_INLINE void idle_return_maybe_start(bool exiting_thread) {
  if (JE_UNLIKELY(detail::g_idle_return.load(std::memory_order_relaxed) ==
                  detail::IdleReturn::kNotStarted)) {
    detail::idle_return_start_slow(exiting_thread);
  }
}
/// Runs fn(arg) -- the idle return's thread creation, whose TLS is allocated through this
/// library on the calling thread -- so that the caller's counters (thread.allocated /
/// deallocated) do not count it, as they count nothing the library does for itself. Installed
/// by the thread layer, which owns the counters (core_boot); unset, fn runs as is.
using UncountedCall = void (*)(void (*fn)(void*), void* arg);
void idle_return_set_uncounted_call(UncountedCall call);
/// Whether the idle return's thread runs (the process then leaves exiting threads' memory to
/// it instead of purging at their exit).
JE_ALWAYS_INLINE bool idle_return_running() {
  return detail::g_idle_return.load(std::memory_order_acquire) == detail::IdleReturn::kRunning;
}
/// Tick-side hook: an application thread advanced `a`'s dirty decay epoch (without purging).
JE_ALWAYS_INLINE void background_thread_epoch_advanced(Arena* a) {
  if (JE_UNLIKELY(background_thread_enabled())) detail::background_thread_epoch_advanced_slow(a);
}

/// fork(): prefork0 takes the switch (call right after the ctl mutex, before any other
/// allocator lock: a thread holding the switch may be allocating); prefork1 takes the global
/// and per-thread mutexes (call after arenas_prefork, before the arenas' decay mutexes).
/// The parent releases everything; the child, where no background thread exists, marks the
/// feature off and every slot stopped, and reinitializes the locks and condition variables.
void background_thread_prefork0();
void background_thread_prefork1();
void background_thread_postfork_parent();
void background_thread_postfork_child();

}  // namespace je
