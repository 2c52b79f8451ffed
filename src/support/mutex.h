// mutex.h: the allocator's mutex, with jemalloc's contention counters and lock-rank checking.
//
// Purpose: every lock in the allocator is a je::Mutex. It is a pthread mutex (so blocked threads
// sleep in the kernel rather than burn CPU) fronted by a bounded spin, because allocator critical
// sections are short and a spinning acquirer usually wins within a few hundred pauses. It keeps
// the counters behind `stats.mutexes.*` and `stats.arenas.<i>.mutexes.*`, and in debug builds a
// per-thread witness enforces the global order in lock_rank.h.
// Layer: support. Callers: every module with shared state; src/api's fork handlers call
// prefork/postfork_* on all mutexes in rank order.
// Concurrency: stats are written only by the thread holding the mutex; read them (stats()) while
// holding it for a consistent snapshot. The waiter count is atomic. The witness state is
// thread-local.
// Invariants: constant-initialized (usable as a `constinit` global, no constructor runs) and
// trivially destructible; in debug builds, a thread holds at most one mutex per rank and
// acquires ranks in strictly increasing order (violations print one line and abort).
// jemalloc mapping: mutex.h/mutex.c (malloc_mutex_t, malloc_mutex_lock_slow, mutex_prof_data_t)
// and witness.h/witness.c; counters map to the mallctl leaves num_ops, num_wait, num_spin_acq,
// num_owner_switch, total_wait_time, max_wait_time, max_num_thds; `opt.mutex_max_spin`.
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <type_traits>

#include "support/lock_rank.h"

namespace je {

/// Contention counters of one mutex (jemalloc's mutex_prof_data_t). Times are nanoseconds
/// (the mallctl interface reports total_wait_time/max_wait_time in nanoseconds too).
struct MutexStats {
  uint64_t num_ops = 0;             // acquisitions (lock + successful try_lock)
  uint64_t num_wait = 0;            // acquisitions that had to block in the kernel
  uint64_t num_spin_acq = 0;        // acquisitions that succeeded while spinning
  uint64_t num_owner_switch = 0;    // acquisitions by a thread other than the previous owner
  uint64_t total_wait_time_ns = 0;  // time spent blocked, summed over num_wait
  uint64_t max_wait_time_ns = 0;    // longest single blocked wait
  uint32_t max_num_thds = 0;        // most threads observed blocked at once (including itself)
};

/// Folds `src` into `dst` the way merged (all-arena) mutex stats are built: counts and times
/// are summed, the maxima take the maximum.
void mutex_stats_merge(MutexStats* dst, const MutexStats& src);

class Mutex {
 public:
  /// `name` must be a string literal (or otherwise outlive the mutex); used in witness messages.
  constexpr explicit Mutex(LockRank rank, const char* name = "") : name_(name), rank_(rank) {}
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  /// Acquires: trylock, then up to opt.mutex_max_spin pause+trylock rounds, then blocks.
  void lock();
  /// Acquires only if free; never blocks. Rank-checked like lock() in debug builds.
  bool try_lock();
  void unlock();

  /// Debug builds: aborts unless the calling thread holds this mutex. No-op otherwise.
  void assert_owner() const;
  /// Debug builds: aborts if the calling thread holds this mutex. No-op otherwise.
  void assert_not_owner() const;

  /// Fork protocol, called by the atfork handlers for every mutex in increasing rank order:
  /// prefork acquires (outside the witness, since many mutexes share a rank), postfork_parent
  /// releases, postfork_child re-initializes (the child has a single thread, and the previous
  /// owner thread may not exist there) and clears the stats, as jemalloc's child does.
  void prefork();
  void postfork_parent();
  void postfork_child();

  /// Snapshot of the counters; hold the mutex for a consistent view.
  MutexStats stats() const;
  /// Zeroes the counters (`stats.mutexes.reset`); hold the mutex.
  void reset_stats();

  LockRank rank() const { return rank_; }
  const char* name() const { return name_; }

 private:
  void lock_slow();
  void on_acquired();
  void witness_before_lock() const;
  void witness_acquired();
  void witness_release();

  pthread_mutex_t lock_ = PTHREAD_MUTEX_INITIALIZER;
  // Mirrors "held" so spinners poll a shared cache line instead of issuing trylock's atomic RMW.
  std::atomic<bool> locked_{false};
  // Threads currently blocked in pthread_mutex_lock (feeds max_num_thds).
  std::atomic<uint32_t> n_waiting_{0};
  // Debug builds: the holding thread's token, read by assert_(not_)owner on any thread.
  std::atomic<const void*> owner_{nullptr};
  // Token of the last thread that acquired the mutex (for num_owner_switch); written under lock.
  const void* prev_owner_ = nullptr;
  MutexStats stats_{};
  const char* name_;
  LockRank rank_;
};

static_assert(std::is_trivially_destructible_v<Mutex>, "Mutex must not need a static destructor");

/// Scoped lock: acquires in the constructor, releases in the destructor.
class MutexGuard {
 public:
  explicit MutexGuard(Mutex& m) : m_(m) { m_.lock(); }
  ~MutexGuard() { m_.unlock(); }
  MutexGuard(const MutexGuard&) = delete;
  MutexGuard& operator=(const MutexGuard&) = delete;

 private:
  Mutex& m_;
};

/// Sets `opt.mutex_max_spin` (default 600): how many pause+trylock rounds lock() makes before
/// blocking. 0 or negative blocks right after the first failed trylock (set 0 on single-CPU
/// machines, where spinning cannot help). Called by the option layer during initialization.
void mutex_set_max_spin(int64_t n);

/// Current `opt.mutex_max_spin`.
int64_t mutex_max_spin();

}  // namespace je
