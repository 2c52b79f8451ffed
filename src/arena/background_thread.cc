// background_thread.cc: purging threads (see background_thread.h).
#include "arena/background_thread.h"

#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <cerrno>
#include <cstring>
#include <new>

#include "arena/arena.h"
#include "arena/arena_options.h"
#include "arena/arenas.h"
#include "meta/base.h"
#include "support/nstime.h"
#include "support/reentrancy.h"

namespace je {

namespace detail {
constinit std::atomic<bool> g_background_thread_enabled{false};
constinit std::atomic<uint8_t> g_idle_return{0};
}  // namespace detail

namespace {

using detail::g_background_thread_enabled;
using detail::g_idle_return;
namespace IdleReturn = detail::IdleReturn;

// Published wake-up time of a slot: the thread is running (or about to), it sleeps without a
// deadline, or the monotonic time it will wake at.
constexpr uint64_t kAwake = 0;
constexpr uint64_t kIndefinite = UINT64_MAX;

enum class State : uint8_t { kStopped, kRunning, kStopping };

// Cache-line aligned: application threads poll wakeup_ns of one slot while another thread
// updates its neighbour's counters.
struct JE_CACHELINE_ALIGNED Slot {
  Mutex mtx{LockRank::kBackgroundThread, "background_thread_info"};
  State state = State::kStopped;  // mtx
  uint64_t nruns = 0;             // mtx: runs since the thread started
  uint64_t slept_ns = 0;          // mtx: time slept after those runs
  bool started = false;           // g_mtx: between a successful start and the join
  pthread_t thread{};             // the switch
  // Lock-free side, read by application threads.
  std::atomic<uint64_t> wakeup_ns{kAwake};
  // Set by an application thread that added dirty pages while the thread was awake: the run
  // may have looked at that arena already, so an indefinite sleep must be reconsidered.
  std::atomic<bool> recheck{false};
  // Sleep channel; sleep_mtx is a leaf.
  pthread_mutex_t sleep_mtx = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t cond{};      // CLOCK_MONOTONIC, initialized at boot
  bool wake_pending = false;  // sleep_mtx
};

constinit pthread_mutex_t g_switch = PTHREAD_MUTEX_INITIALIZER;
constinit Mutex g_mtx{LockRank::kBackgroundThreadGlobal, "background_thread"};
constinit std::atomic<Slot*> g_slots{nullptr};
constinit unsigned g_nslots = 0;  // opt.max_background_threads after boot; fixed from then on
constinit std::atomic<unsigned> g_max{0};
// Per arena index: pause nesting count (reset/destroy) and dirty pages at the last run.
constinit std::atomic<uint8_t> g_paused[kMaxArenas] = {};
constinit std::atomic<size_t> g_dirty_mark[kMaxArenas] = {};

// The idle return's thread (opt.idle_return): one more slot, serving every arena, outside the
// background threads' statistics and switch.
constinit Slot g_ret;
constinit std::atomic<UncountedCall> g_uncounted{nullptr};

Slot* slots() { return g_slots.load(std::memory_order_acquire); }

Slot* slot_of(unsigned arena_ind) {
  Slot* s = slots();
  unsigned max = g_max.load(std::memory_order_relaxed);
  if (s == nullptr || max == 0) return nullptr;
  return &s[arena_ind % max];
}

void init_cond(pthread_cond_t* cond) {
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(cond, &attr);
  pthread_condattr_destroy(&attr);
}

void wake(Slot& s) {
  pthread_mutex_lock(&s.sleep_mtx);
  s.wake_pending = true;
  pthread_cond_signal(&s.cond);
  pthread_mutex_unlock(&s.sleep_mtx);
}

// One run over the arenas first, first + stride, ...; returns how long to sleep: until
// `threshold` pages (all, if fewer) are purgeable somewhere. `do_work` is false right after an
// indefinite sleep: whatever woke the thread (new dirty pages) is not due yet, only the schedule
// needs computing. *handled is set when the thread owns at least one arena. `mark`: keep the
// dirty marks the epoch hook compares with (background threads).
uint64_t run_once(unsigned first, unsigned stride, size_t threshold, bool mark, bool do_work,
                  bool* handled) {
  const unsigned n = arenas_narenas_total();
  uint64_t until = kIndefinite;
  for (unsigned i = first; i < n && i < kMaxArenas; i += stride) {
    if (g_paused[i].load(std::memory_order_acquire) != 0) continue;
    Arena* a = arena_get(i, /*create=*/false);
    if (a == nullptr) continue;
    *handled = true;
    if (do_work) a->decay(/*is_background_thread=*/true, /*all=*/false);
    if (mark) g_dirty_mark[i].store(a->ndirty(), std::memory_order_relaxed);
    if (until <= kBackgroundThreadMinIntervalNs) continue;  // the minimum applies anyway
    const uint64_t now = nstime_now_ns();
    for (ExtentState which : {ExtentState::kDirty, ExtentState::kMuzzy}) {
      uint64_t ns = a->decay_ns_until_purge(which, now, threshold);
      if (ns < until) until = ns;
    }
  }
  if (until == kIndefinite) return kIndefinite;
  return until < kBackgroundThreadMinIntervalNs ? kBackgroundThreadMinIntervalNs : until;
}

// Called with s.mtx held (released while asleep, held again on return). Returns true when the
// next run should only compute the schedule (the sleep had no deadline).
bool sleep_after_run(Slot& s, uint64_t interval, bool counted) {
  if (counted) s.nruns++;
  const uint64_t before = nstime_now_ns();
  const bool indefinite = interval == kIndefinite;
  uint64_t deadline = kIndefinite;
  if (!indefinite) {
    deadline = before > kIndefinite - 1 - interval ? kIndefinite - 1 : before + interval;
  }
  s.mtx.unlock();

  bool compute_only = false;
  pthread_mutex_lock(&s.sleep_mtx);
  if (!s.wake_pending) {
    s.wakeup_ns.store(deadline, std::memory_order_seq_cst);
    compute_only = indefinite;
    // Pairs with the dirty-pages hook: either it sees kIndefinite and signals, or we see its
    // recheck flag here and reconsider instead of sleeping.
    if (!(indefinite && s.recheck.exchange(false, std::memory_order_seq_cst))) {
      struct timespec ts;
      ts.tv_sec = static_cast<time_t>(deadline / kNsPerSec);
      ts.tv_nsec = static_cast<long>(deadline % kNsPerSec);
      while (!s.wake_pending) {
        if (indefinite) {
          pthread_cond_wait(&s.cond, &s.sleep_mtx);
        } else if (pthread_cond_timedwait(&s.cond, &s.sleep_mtx, &ts) == ETIMEDOUT) {
          break;
        }
      }
    }
  }
  s.wake_pending = false;
  // The run about to start sees everything added before it; notes left before that are moot.
  // (Cleared before kAwake is published, so a note left after it is never lost.)
  s.recheck.store(false, std::memory_order_seq_cst);
  s.wakeup_ns.store(kAwake, std::memory_order_seq_cst);
  pthread_mutex_unlock(&s.sleep_mtx);
  // Pairs with the fence in the dirty-pages hook: either it sees kAwake, or the run that
  // follows sees the pages it added.
  std::atomic_thread_fence(std::memory_order_seq_cst);

  s.mtx.lock();
  if (counted) s.slept_ns += nstime_now_ns() - before;
  return compute_only;
}

void* thread_main(void* arg) {
  const unsigned k = static_cast<unsigned>(reinterpret_cast<uintptr_t>(arg));
  Slot& s = slots()[k];
  pthread_setname_np(pthread_self(), "jemalloc_bg_thd");
  bool compute_only = false;
  s.mtx.lock();
  while (s.state == State::kRunning) {
    bool handled = false;
    const unsigned max = g_max.load(std::memory_order_relaxed);  // stable while we run
    uint64_t interval = run_once(k, max, kBackgroundThreadPurgeNpagesThreshold, /*mark=*/true,
                                 !compute_only, &handled);
    compute_only = sleep_after_run(s, interval, handled);
  }
  s.mtx.unlock();
  return nullptr;
}

// The idle return's thread: every arena, on the decay schedule, down to the floor; idle (an
// indefinite sleep) while background threads are on, which then do this work. It lives as long
// as the process (a fork child starts without it).
void* returner_main(void*) {
  pthread_setname_np(pthread_self(), "jemalloc_return");
  bool compute_only = false;
  g_ret.mtx.lock();
  for (;;) {
    bool handled = false;
    uint64_t interval = kIndefinite;
    if (!background_thread_enabled()) {
      interval = run_once(0, 1, kIdleReturnFloorPages, /*mark=*/false, !compute_only, &handled);
    }
    compute_only = sleep_after_run(g_ret, interval, /*counted=*/false);
  }
  return nullptr;
}

// Creates a thread with every signal blocked (application handlers must not run on it).
int create_masked(pthread_t* t, void* (*fn)(void*), void* arg) {
  sigset_t all;
  sigset_t old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int err = pthread_create(t, nullptr, fn, arg);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return err;
}

// Sleeping `s` without a deadline learns that pages were added (see the sleep's pairing).
void poke(Slot& s) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  uint64_t w = s.wakeup_ns.load(std::memory_order_seq_cst);
  if (w == kAwake) {
    // Running: it may have passed this arena already. Leave a note for its next sleep.
    s.recheck.store(true, std::memory_order_seq_cst);
    w = s.wakeup_ns.load(std::memory_order_seq_cst);
  }
  // A finite deadline: the thread looks at this arena by then anyway.
  if (w != kIndefinite) return;
  // One waker is enough; the others see kAwake.
  if (!s.wakeup_ns.compare_exchange_strong(w, kAwake, std::memory_order_seq_cst)) return;
  wake(s);
}

// The switch is held by the callers of everything below.

bool start_slot(unsigned k) {
  Slot& s = slots()[k];
  {
    MutexGuard g(s.mtx);
    s.state = State::kRunning;
    s.nruns = 0;
    s.slept_ns = 0;
  }
  s.wakeup_ns.store(kAwake, std::memory_order_relaxed);
  s.recheck.store(false, std::memory_order_relaxed);
  pthread_mutex_lock(&s.sleep_mtx);
  s.wake_pending = false;
  pthread_mutex_unlock(&s.sleep_mtx);
  int err = create_masked(&s.thread, &thread_main, reinterpret_cast<void*>(uintptr_t{k}));
  if (err != 0) {
    MutexGuard g(s.mtx);
    s.state = State::kStopped;
    return false;
  }
  MutexGuard g(g_mtx);
  s.started = true;
  return true;
}

void stop_slot(unsigned k) {
  Slot& s = slots()[k];
  {
    // Waits for a run in progress; the thread checks the state when it next wakes.
    MutexGuard g(s.mtx);
    if (s.state != State::kRunning) return;
    s.state = State::kStopping;
  }
  wake(s);
  pthread_join(s.thread, nullptr);
  {
    MutexGuard g(s.mtx);
    s.state = State::kStopped;
  }
  MutexGuard g(g_mtx);
  s.started = false;
}

void disable_locked() {
  {
    MutexGuard g(g_mtx);
    g_background_thread_enabled.store(false, std::memory_order_relaxed);
  }
  for (unsigned k = 0; k < g_nslots; k++) stop_slot(k);
  // The idle return's thread sat idle while they ran: its turn again.
  if (g_idle_return.load(std::memory_order_acquire) == IdleReturn::kRunning) wake(g_ret);
}

bool enable_locked() {
  const unsigned max = g_max.load(std::memory_order_relaxed);
  if (slots() == nullptr || max == 0) return false;
  for (unsigned k = 0; k < max; k++) {
    if (!start_slot(k)) {
      for (unsigned j = 0; j < k; j++) stop_slot(j);
      return false;
    }
  }
  MutexGuard g(g_mtx);
  g_background_thread_enabled.store(true, std::memory_order_relaxed);
  return true;
}

bool owns_an_arena(unsigned k, unsigned max, unsigned narenas) {
  for (unsigned i = k; i < narenas && i < kMaxArenas; i += max) {
    if (arena_get(i, /*create=*/false) != nullptr) return true;
  }
  return false;
}

void mutex_stats_max(MutexStats* dst, const MutexStats& src) {
  auto up = [](auto& d, auto v) {
    if (v > d) d = v;
  };
  up(dst->num_ops, src.num_ops);
  up(dst->num_wait, src.num_wait);
  up(dst->num_spin_acq, src.num_spin_acq);
  up(dst->num_owner_switch, src.num_owner_switch);
  up(dst->total_wait_time_ns, src.total_wait_time_ns);
  up(dst->max_wait_time_ns, src.max_wait_time_ns);
  up(dst->max_num_thds, src.max_num_thds);
}

}  // namespace

// ---- boot and switching -------------------------------------------------------------------

bool background_thread_boot() {
  MutexGuard g(g_mtx);
  if (slots() != nullptr) return true;
  if (g_arena_opt.max_background_threads > kMaxBackgroundThreadsLimit) {
    g_arena_opt.max_background_threads = kMaxBackgroundThreadsDefault;
  }
  const unsigned n = static_cast<unsigned>(g_arena_opt.max_background_threads);
  const unsigned nalloc = n == 0 ? 1 : n;  // the option's minimum is 1; be safe anyway
  void* mem = base_global()->alloc(sizeof(Slot) * nalloc, alignof(Slot));
  if (mem == nullptr) return false;
  Slot* s = static_cast<Slot*>(mem);
  for (unsigned k = 0; k < nalloc; k++) {
    new (&s[k]) Slot();
    init_cond(&s[k].cond);
  }
  g_nslots = n;
  g_max.store(n, std::memory_order_relaxed);
  init_cond(&g_ret.cond);
  g_slots.store(s, std::memory_order_release);
  if (!g_arena_opt.policy.idle_return)
    g_idle_return.store(IdleReturn::kOff, std::memory_order_relaxed);
  return true;
}

void idle_return_set_uncounted_call(UncountedCall call) {
  g_uncounted.store(call, std::memory_order_release);
}

void detail::idle_return_start_slow(bool exiting_thread) {
  // A single-threaded program never gets a thread (it may unshare(CLONE_NEWUSER), which a
  // multi-threaded process may not): only a second application thread -- bound to an arena,
  // or exiting now -- shows that the process has threads of its own.
  if (!exiting_thread && arenas_threads_bound() < 2) return;
  if (slots() == nullptr || background_thread_enabled()) return;
  // Never wait: the switch's holder may be creating threads, which allocate (maybe this call).
  if (pthread_mutex_trylock(&g_switch) != 0) return;
  if (g_idle_return.load(std::memory_order_relaxed) == IdleReturn::kNotStarted &&
      !background_thread_enabled()) {
    g_ret.state = State::kRunning;
    g_ret.wakeup_ns.store(kAwake, std::memory_order_relaxed);
    // Creating a thread allocates (its TLS): those calls must not use this thread's cache,
    // which may be in the middle of a flush, as user extent hooks' calls do not.
    ReentrancyGuard reentrant;
    int err = 0;
    auto create = [](void* e) {
      *static_cast<int*>(e) = create_masked(&g_ret.thread, &returner_main, nullptr);
    };
    if (UncountedCall call = g_uncounted.load(std::memory_order_acquire)) {
      call(create, &err);
    } else {
      create(&err);
    }
    // A refusal (pids limit, seccomp) leaves the process as without the option, for good.
    g_idle_return.store(err == 0 ? IdleReturn::kRunning : IdleReturn::kFailed,
                        std::memory_order_release);
  }
  pthread_mutex_unlock(&g_switch);
}

bool background_thread_set_enabled(bool on) {
  if (slots() == nullptr) return !on;
  pthread_mutex_lock(&g_switch);
  bool ok = true;
  if (on != background_thread_enabled()) {
    if (on) {
      ok = enable_locked();
    } else {
      disable_locked();
    }
  }
  pthread_mutex_unlock(&g_switch);
  return ok;
}

size_t background_thread_max() { return g_max.load(std::memory_order_relaxed); }

BackgroundThreadSetMax background_thread_set_max(size_t n) {
  if (slots() == nullptr || n > g_nslots) return BackgroundThreadSetMax::kInvalid;
  BackgroundThreadSetMax ret = BackgroundThreadSetMax::kOk;
  pthread_mutex_lock(&g_switch);
  if (n != g_max.load(std::memory_order_relaxed)) {
    if (!background_thread_enabled()) {
      MutexGuard g(g_mtx);
      g_max.store(static_cast<unsigned>(n), std::memory_order_relaxed);
    } else if (n == 0) {
      ret = BackgroundThreadSetMax::kInvalid;
    } else {
      // The arena-to-thread mapping changes: restart everything, as 5.3.0 does.
      disable_locked();
      {
        MutexGuard g(g_mtx);
        g_max.store(static_cast<unsigned>(n), std::memory_order_relaxed);
      }
      if (!enable_locked()) ret = BackgroundThreadSetMax::kStartFailed;
    }
  }
  pthread_mutex_unlock(&g_switch);
  return ret;
}

// ---- statistics ---------------------------------------------------------------------------

BackgroundThreadStats background_thread_stats() {
  BackgroundThreadStats st;
  MutexGuard g(g_mtx);
  st.global_mutex = g_mtx.stats();
  Slot* s = slots();
  if (s == nullptr || !background_thread_enabled()) return st;
  const unsigned max = g_max.load(std::memory_order_relaxed);
  const unsigned narenas = arenas_narenas_total();
  uint64_t runs = 0;
  uint64_t slept = 0;
  for (unsigned k = 0; k < max; k++) {
    if (!s[k].started) continue;
    if (owns_an_arena(k, max, narenas)) st.num_threads++;
    // A run can take long (purging); report without it rather than wait.
    if (!s[k].mtx.try_lock()) continue;
    runs += s[k].nruns;
    slept += s[k].slept_ns;
    mutex_stats_max(&st.max_per_thread, s[k].mtx.stats());
    s[k].mtx.unlock();
  }
  st.num_runs = runs;
  st.run_interval_ns = runs == 0 ? 0 : slept / runs;
  return st;
}

void background_thread_mutex_stats_reset() {
  MutexGuard g(g_mtx);
  g_mtx.reset_stats();
  Slot* s = slots();
  if (s == nullptr) return;
  for (unsigned k = 0; k < g_nslots; k++) {
    MutexGuard gs(s[k].mtx);
    s[k].mtx.reset_stats();
  }
}

// ---- arena coordination -------------------------------------------------------------------

void background_thread_pause_arena(unsigned ind) {
  if (ind >= kMaxArenas) return;
  g_paused[ind].fetch_add(1, std::memory_order_seq_cst);
  Slot* s = slots();
  if (s == nullptr) return;
  // A run holds its slot's mutex throughout: passing through every slot's mutex waits for any
  // run that might have picked the arena before the flag was set.
  for (unsigned k = 0; k < g_nslots; k++) {
    s[k].mtx.lock();
    s[k].mtx.unlock();
  }
  g_ret.mtx.lock();
  g_ret.mtx.unlock();
}

void background_thread_resume_arena(unsigned ind) {
  if (ind >= kMaxArenas) return;
  g_dirty_mark[ind].store(0, std::memory_order_relaxed);
  g_paused[ind].fetch_sub(1, std::memory_order_release);
  // Runs during the pause skipped the arena and may have settled on a long sleep.
  background_thread_wake_arena(ind);
}

void background_thread_wake_arena(unsigned ind) {
  if (!background_thread_enabled()) {
    if (g_idle_return.load(std::memory_order_acquire) == IdleReturn::kRunning) wake(g_ret);
    return;
  }
  if (Slot* s = slot_of(ind)) wake(*s);
}

void detail::background_thread_dirty_added_slow(Arena* a) {
  // Immediate (0) and disabled (-1) decay never schedule anything -- unless the immediate
  // frees are held (opt.oversize_hold): the hold's pages go when its peak ages out.
  if (a->decay_ms(ExtentState::kDirty) <= 0 && !a->immediate_hold()) return;
  if (!background_thread_enabled()) {
    if (g_idle_return.load(std::memory_order_acquire) == IdleReturn::kRunning) poke(g_ret);
    return;
  }
  if (Slot* s = slot_of(a->ind())) poke(*s);
}

void detail::background_thread_epoch_advanced_slow(Arena* a) {
  const unsigned ind = a->ind();
  if (ind >= kMaxArenas) return;
  Slot* s = slot_of(ind);
  if (s == nullptr) return;
  const size_t ndirty = a->ndirty();
  const size_t mark = g_dirty_mark[ind].load(std::memory_order_relaxed);
  if (ndirty <= mark || ndirty - mark <= kBackgroundThreadPurgeNpagesThreshold) return;
  uint64_t w = s->wakeup_ns.load(std::memory_order_relaxed);
  if (w == kAwake) return;  // running, or already woken
  if (w != kIndefinite && w <= nstime_now_ns() + kBackgroundThreadMinIntervalNs) return;
  if (!s->wakeup_ns.compare_exchange_strong(w, kAwake, std::memory_order_seq_cst)) return;
  wake(*s);
}

// ---- fork ---------------------------------------------------------------------------------

void background_thread_prefork0() { pthread_mutex_lock(&g_switch); }

void background_thread_prefork1() {
  g_mtx.prefork();
  Slot* s = slots();
  if (s == nullptr) return;
  for (unsigned k = 0; k < g_nslots; k++) s[k].mtx.prefork();
  g_ret.mtx.prefork();
}

void background_thread_postfork_parent() {
  Slot* s = slots();
  if (s != nullptr) {
    g_ret.mtx.postfork_parent();
    for (unsigned k = 0; k < g_nslots; k++) s[k].mtx.postfork_parent();
  }
  g_mtx.postfork_parent();
  pthread_mutex_unlock(&g_switch);
}

void background_thread_postfork_child() {
  // The threads do not exist in the child; their slots are simply declared stopped. The idle
  // return's may start again once the child has threads of its own.
  g_background_thread_enabled.store(false, std::memory_order_relaxed);
  Slot* s = slots();
  if (s != nullptr) {
    const pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    auto reset = [&](Slot& sl) {
      sl.mtx.postfork_child();
      sl.state = State::kStopped;
      sl.nruns = 0;
      sl.slept_ns = 0;
      sl.started = false;
      sl.wakeup_ns.store(kAwake, std::memory_order_relaxed);
      sl.recheck.store(false, std::memory_order_relaxed);
      std::memcpy(&sl.sleep_mtx, &fresh, sizeof(fresh));
      init_cond(&sl.cond);
      sl.wake_pending = false;
    };
    for (unsigned k = 0; k < g_nslots; k++) reset(s[k]);
    reset(g_ret);
    if (g_idle_return.load(std::memory_order_relaxed) != IdleReturn::kOff) {
      g_idle_return.store(IdleReturn::kNotStarted, std::memory_order_relaxed);
    }
  }
  g_mtx.postfork_child();
  const pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
  std::memcpy(&g_switch, &fresh, sizeof(fresh));
}

}  // namespace je
