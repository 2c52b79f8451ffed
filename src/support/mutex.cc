// mutex.cc: spin-then-block acquisition, contention counters and the debug witness (see
// mutex.h).
#include "support/mutex.h"

#include <cstring>

#include "support/compiler.h"
#include "support/config.h"
#include "support/malloc_io.h"
#include "support/nstime.h"

namespace je {

namespace {

constinit std::atomic<int64_t> g_max_spin{600};

// Per-thread identity token: the address of a thread-local byte is unique among live threads
// and costs one TLS address computation (no syscall, unlike gettid).
JE_TLS_IE constinit thread_local char tls_token = 0;

// Debug witness: the mutexes this thread holds, indexed by rank (ranks of held mutexes are
// strictly increasing, so at most one per rank), plus a bit mask of the occupied ranks so the
// "highest held rank" check is a single shift.
JE_TLS_IE constinit thread_local const Mutex* tls_held[kNumLockRanks] = {};
JE_TLS_IE constinit thread_local uint32_t tls_held_mask = 0;

static_assert(kNumLockRanks <= 32, "witness mask is 32 bits");

const void* self_token() { return &tls_token; }

JE_ALWAYS_INLINE void cpu_pause() {
#if defined(__x86_64__) || defined(__i386__)
  __asm__ __volatile__("pause");
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

uint32_t rank_bit(LockRank r) { return uint32_t{1} << static_cast<unsigned>(r); }

}  // namespace

void mutex_set_max_spin(int64_t n) { g_max_spin.store(n, std::memory_order_relaxed); }

int64_t mutex_max_spin() { return g_max_spin.load(std::memory_order_relaxed); }

void mutex_stats_merge(MutexStats* dst, const MutexStats& src) {
  dst->num_ops += src.num_ops;
  dst->num_wait += src.num_wait;
  dst->num_spin_acq += src.num_spin_acq;
  dst->num_owner_switch += src.num_owner_switch;
  dst->total_wait_time_ns += src.total_wait_time_ns;
  if (src.max_wait_time_ns > dst->max_wait_time_ns) dst->max_wait_time_ns = src.max_wait_time_ns;
  if (src.max_num_thds > dst->max_num_thds) dst->max_num_thds = src.max_num_thds;
}

// ---- witness (debug builds) ----

void Mutex::witness_before_lock() const {
  if constexpr (config::kDebug) {
    if (owner_.load(std::memory_order_relaxed) == self_token()) {
      je_abort_msg("recursive lock of mutex \"%s\" (rank %s)", name_, lock_rank_name(rank_));
    }
    // Any held rank >= ours is an order violation (equal ranks included).
    uint32_t bad = tls_held_mask >> static_cast<unsigned>(rank_);
    if (bad != 0) {
      unsigned top = 31u - static_cast<unsigned>(__builtin_clz(tls_held_mask));
      const Mutex* held = tls_held[top];
      je_abort_msg("lock order reversal: acquiring \"%s\" (rank %s) while holding \"%s\" (rank %s)",
                   name_, lock_rank_name(rank_), held->name_, lock_rank_name(held->rank_));
    }
  }
}

void Mutex::witness_acquired() {
  if constexpr (config::kDebug) {
    owner_.store(self_token(), std::memory_order_relaxed);
    tls_held[static_cast<unsigned>(rank_)] = this;
    tls_held_mask |= rank_bit(rank_);
  }
}

void Mutex::witness_release() {
  if constexpr (config::kDebug) {
    unsigned r = static_cast<unsigned>(rank_);
    if (owner_.load(std::memory_order_relaxed) != self_token() || tls_held[r] != this) {
      je_abort_msg("unlock of mutex \"%s\" (rank %s) not held by this thread", name_,
                   lock_rank_name(rank_));
    }
    tls_held[r] = nullptr;
    tls_held_mask &= ~rank_bit(rank_);
    owner_.store(nullptr, std::memory_order_relaxed);
  }
}

void Mutex::assert_owner() const {
  if constexpr (config::kDebug) {
    if (owner_.load(std::memory_order_relaxed) != self_token()) {
      je_abort_msg("mutex \"%s\" (rank %s) not owned by this thread", name_, lock_rank_name(rank_));
    }
  }
}

void Mutex::assert_not_owner() const {
  if constexpr (config::kDebug) {
    if (owner_.load(std::memory_order_relaxed) == self_token()) {
      je_abort_msg("mutex \"%s\" (rank %s) unexpectedly owned by this thread", name_,
                   lock_rank_name(rank_));
    }
  }
}

// ---- acquisition ----

// Bookkeeping common to every successful acquisition; runs with the mutex held.
JE_ALWAYS_INLINE void Mutex::on_acquired() {
  locked_.store(true, std::memory_order_relaxed);
  if constexpr (config::kStats) {
    stats_.num_ops++;
    const void* self = self_token();
    // Like jemalloc, the first acquisition (no previous owner) counts as a switch too.
    if (prev_owner_ != self) {
      stats_.num_owner_switch++;
      prev_owner_ = self;
    }
  }
}

void Mutex::lock() {
  witness_before_lock();
  if (JE_UNLIKELY(pthread_mutex_trylock(&lock_) != 0)) lock_slow();
  on_acquired();
  witness_acquired();
}

JE_NOINLINE void Mutex::lock_slow() {
  int64_t max_spin = g_max_spin.load(std::memory_order_relaxed);
  for (int64_t i = 0; i < max_spin; i++) {
    cpu_pause();
    if (!locked_.load(std::memory_order_relaxed) && pthread_mutex_trylock(&lock_) == 0) {
      if constexpr (config::kStats) stats_.num_spin_acq++;
      return;
    }
  }
  uint64_t before = 0;
  if constexpr (config::kStats) before = nstime_now_ns();
  uint32_t n_thds = n_waiting_.fetch_add(1, std::memory_order_relaxed) + 1;
  // Reading the clock and bumping the counter take a while; the holder may be gone by now.
  if (pthread_mutex_trylock(&lock_) == 0) {
    n_waiting_.fetch_sub(1, std::memory_order_relaxed);
    if constexpr (config::kStats) stats_.num_spin_acq++;
    return;
  }
  pthread_mutex_lock(&lock_);
  n_waiting_.fetch_sub(1, std::memory_order_relaxed);
  if constexpr (config::kStats) {
    uint64_t waited = nstime_now_ns() - before;
    stats_.num_wait++;
    stats_.total_wait_time_ns += waited;
    if (waited > stats_.max_wait_time_ns) stats_.max_wait_time_ns = waited;
    if (n_thds > stats_.max_num_thds) stats_.max_num_thds = n_thds;
  }
}

bool Mutex::try_lock() {
  witness_before_lock();
  if (pthread_mutex_trylock(&lock_) != 0) return false;
  on_acquired();
  witness_acquired();
  return true;
}

void Mutex::unlock() {
  witness_release();
  locked_.store(false, std::memory_order_relaxed);
  pthread_mutex_unlock(&lock_);
}

// ---- fork ----

void Mutex::prefork() {
  // Not recorded in the witness (many mutexes of one rank are taken here), but still checked:
  // the forking thread must not hold, through lock(), anything ranked at or above this mutex.
  witness_before_lock();
  if (pthread_mutex_trylock(&lock_) != 0) lock_slow();
  on_acquired();
  if constexpr (config::kDebug) owner_.store(self_token(), std::memory_order_relaxed);
}

void Mutex::postfork_parent() {
  if constexpr (config::kDebug) {
    if (owner_.load(std::memory_order_relaxed) != self_token()) {
      je_abort_msg("postfork_parent of mutex \"%s\" (rank %s) not locked by prefork", name_,
                   lock_rank_name(rank_));
    }
    owner_.store(nullptr, std::memory_order_relaxed);
  }
  locked_.store(false, std::memory_order_relaxed);
  pthread_mutex_unlock(&lock_);
}

void Mutex::postfork_child() {
  // Re-initialize in place: the child's only thread may not be the pthread owner, so unlocking
  // is not an option.
  const pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
  memcpy(&lock_, &fresh, sizeof(lock_));
  locked_.store(false, std::memory_order_relaxed);
  n_waiting_.store(0, std::memory_order_relaxed);
  owner_.store(nullptr, std::memory_order_relaxed);
  prev_owner_ = nullptr;
  stats_ = MutexStats{};
  if constexpr (config::kDebug) {
    unsigned r = static_cast<unsigned>(rank_);
    if (tls_held[r] == this) {
      tls_held[r] = nullptr;
      tls_held_mask &= ~rank_bit(rank_);
    }
  }
}

// ---- stats ----

MutexStats Mutex::stats() const { return stats_; }

void Mutex::reset_stats() {
  stats_ = MutexStats{};
  // Forget the owner as well, so counting restarts exactly as for a fresh mutex.
  prev_owner_ = nullptr;
}

}  // namespace je
