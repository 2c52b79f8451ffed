// options_test: every run-time option has the effect jemalloc 5.3.0 gives it (doc/options.md).
// How the configuration sources override each other, and what the library reports about its
// configuration (confirm_conf, abort_conf, stats_print...), is conf_sources_test's part.
//
// Options are read once per process, so each test starts CHILD processes: this binary again
// (`options_test --child MODE [ARG]`, see child.h) with an environment built from scratch (only
// MALLOC_CONF as the test chooses, plus LD_PRELOAD and JT_REFERENCE passed through so the child
// runs the same library as the parent).  The MALLOC_CONF that run.sh gives the parent does not
// reach the children.  A child mode does some work and prints what it observed as `key=value`
// lines on stdout; its stdout and stderr go to memfds the parent reads after the child ended.
// The parent then checks the EFFECT of the option through public interfaces only: mallctl and
// stats, malloc_usable_size, memory contents, /proc/self/maps and /proc/self/smaps, getrusage,
// exit status and output.
//
// Tests that need something the machine may not offer (the THP mode [madvise], a deterministic
// CPU count) skip with the reason.
#include <sched.h>

#include "child.h"

using namespace jt::subproc;

namespace {

// ===========================================================================
// Child side: helpers of the modes below (the generic ones are in child.h).

// Blocks the tcache of this thread holds for class `size` after it freed n blocks into an
// emptied cache: flush, allocate n, flush (so the allocations left nothing cached), free n.
long long cached_after_frees(size_t size, int n) {
  static void* blocks[512];
  if (n > 512) n = 512;
  tcache_flush();
  for (int i = 0; i < n; i++) blocks[i] = malloc(size);
  tcache_flush();
  for (int i = 0; i < n; i++) free(blocks[i]);
  jt::refresh_stats();
  size_t usize = nallocx(size, 0);
  return (long long)(arena_stat(thread_arena(), "tcache_bytes") / usize);
}

// --- modes ---------------------------------------------------------------

// narenas: threads alive at the same time spread over the automatic arenas.
constexpr int kSpreadThreads = 8;
std::atomic<int> g_spread_ready{0};
unsigned g_spread_arena[kSpreadThreads];

void* spread_thread(void* arg) {
  int i = (int)(intptr_t)arg;
  void* p = malloc(64);
  g_spread_arena[i] = lookup_arena(p);
  if (thread_arena() != g_spread_arena[i]) g_spread_arena[i] = UINT_MAX - 1;
  g_spread_ready.fetch_add(1);
  // Stay alive (and bound to the arena) until every thread has chosen one.
  while (g_spread_ready.load() < kSpreadThreads) sched_yield();
  free(p);
  return nullptr;
}

void mode_arenas(const char*) {
  mode_noop(nullptr);
  unsigned opt = 0, n = 0;
  jt::ctl_get("opt.narenas", &opt);
  jt::ctl_get("arenas.narenas", &n);
  emit("opt_narenas", opt);
  emit("arenas_narenas", n);
  pthread_t t[kSpreadThreads];
  for (int i = 0; i < kSpreadThreads; i++) {
    if (pthread_create(&t[i], nullptr, spread_thread, (void*)(intptr_t)i) != 0) {
      FAIL_MSG("pthread_create failed");
      return;
    }
  }
  for (auto& th : t) pthread_join(th, nullptr);
  unsigned seen[kSpreadThreads];
  int distinct = 0;
  unsigned max = 0;
  for (unsigned a : g_spread_arena) {
    bool dup = false;
    for (int j = 0; j < distinct; j++) dup = dup || seen[j] == a;
    if (!dup) seen[distinct++] = a;
    if (a > max) max = a;
  }
  emit("threads_distinct_arenas", distinct);
  emit("threads_max_arena", max);
}

// tcache: whether this thread (and a new one) caches freed blocks.
std::atomic<long long> g_thread_cached{-1};

void* tcache_thread(void*) {
  g_thread_cached.store(cached_after_frees(64, 10));
  return nullptr;
}

void mode_tcache(const char*) {
  mode_noop(nullptr);
  bool enabled = false;
  jt::ctl_get("thread.tcache.enabled", &enabled);
  emit("tcache_enabled", enabled);
  emit("cached_64", cached_after_frees(64, 10));
  emit("cached_20480", cached_after_frees(20480, 3));
  jt::run_in_thread(tcache_thread, nullptr);
  emit("thread_cached_64", g_thread_cached.load());
}

// tcache_max: the largest class a thread cache keeps.
void mode_tcache_max(const char*) {
  mode_noop(nullptr);
  size_t max = 0;
  unsigned nhbins = 0;
  jt::ctl_get("arenas.tcache_max", &max);
  jt::ctl_get("arenas.nhbins", &nhbins);
  emit("tcache_max", (long long)max);
  emit("nhbins", nhbins);
  emit("cached_32768", cached_after_frees(32768, 1));
  emit("cached_40960", cached_after_frees(40960, 1));
  emit("cached_65536", cached_after_frees(65536, 1));
  emit("cached_131072", cached_after_frees(131072, 1));
  emit("cached_262144", cached_after_frees(262144, 1));
}

// tcache_nslots_*: a full bin flushes half of its slots, so freeing capacity + 1 blocks into an
// empty bin leaves capacity / 2 + 1 of them; freeing `capacity` leaves all.
void mode_nslots(const char*) {
  mode_noop(nullptr);
  emit("cached_8_x50", cached_after_frees(8, 50));
  emit("cached_8_x51", cached_after_frees(8, 51));
  emit("cached_8_x201", cached_after_frees(8, 201));
  emit("cached_14336_x11", cached_after_frees(14336, 11));
  emit("cached_14336_x21", cached_after_frees(14336, 21));
  emit("cached_20480_x7", cached_after_frees(20480, 7));
  emit("cached_20480_x21", cached_after_frees(20480, 21));
}

// Decay: 32 large blocks (outside the tcache) freed, then arena.<i>.decay, then .purge.
void mode_decay(const char* arg) {
  mode_noop(nullptr);
  constexpr int kBlocks = 32;
  constexpr size_t kSize = 256 << 10;
  void* blocks[kBlocks];
  unsigned arena = thread_arena();
  for (auto& b : blocks) {
    b = mallocx(kSize, MALLOCX_TCACHE_NONE);
    touch(b, kSize);
  }
  for (auto b : blocks) dallocx(b, MALLOCX_TCACHE_NONE);
  emit("freed_pages", (long long)(kBlocks * kSize / 4096));
  jt::refresh_stats();
  emit("pdirty_free", (long long)arena_stat(arena, "pdirty"));
  emit("pmuzzy_free", (long long)arena_stat(arena, "pmuzzy"));
  // With a sleep: arena.<i>.decay only acts when a decay epoch passes, and the freed pages
  // join the backlog at the first one, so it is called a few times, the decay time apart.
  long long sleep_ms = arg ? std::atoll(arg) : 0;
  for (int i = 0; sleep_ms > 0 && i < 3; i++) {
    arena_action(arena, "decay");
    timespec ts{(time_t)(sleep_ms / 1000), (long)(sleep_ms % 1000) * 1000000L};
    nanosleep(&ts, nullptr);
  }
  arena_action(arena, "decay");
  jt::refresh_stats();
  emit("pdirty_decay", (long long)arena_stat(arena, "pdirty"));
  emit("pmuzzy_decay", (long long)arena_stat(arena, "pmuzzy"));
  arena_action(arena, "purge");
  jt::refresh_stats();
  emit("pdirty_purge", (long long)arena_stat(arena, "pdirty"));
  emit("pmuzzy_purge", (long long)arena_stat(arena, "pmuzzy"));
}

// lg_extent_max_active_fit: is a request of `arg` KiB carved out of a freed 1 MiB dirty extent?
void mode_fit(const char* arg) {
  mode_noop(nullptr);
  unsigned arena = thread_arena();
  constexpr size_t kBig = 1 << 20;
  size_t req = (size_t)(arg ? std::atoll(arg) : 64) << 10;
  char* big = static_cast<char*>(mallocx(kBig, MALLOCX_TCACHE_NONE));
  touch(big, kBig);
  dallocx(big, MALLOCX_TCACHE_NONE);
  jt::refresh_stats();
  size_t before = arena_stat(arena, "pdirty");
  char* small = static_cast<char*>(mallocx(req, MALLOCX_TCACHE_NONE));
  jt::refresh_stats();
  size_t after = arena_stat(arena, "pdirty");
  emit("pdirty_before", (long long)before);
  emit("pdirty_after", (long long)after);
  // The extent starts up to a page below the block (the cache-oblivious offset).
  emit("reused", small + 4096 > big && small < big + kBig);
  dallocx(small, MALLOCX_TCACHE_NONE);
}

// One burst of 256 16 KiB blocks allocated (with `flags`, in `arena`), touched and freed, then
// the same requests again: the second round's faults, and the arena's eager merges done and
// refused meanwhile.
struct BurstRound {
  long long faults, merges, refused;
};

BurstRound coalesce_round(unsigned arena, int flags) {
  constexpr int kBlocks = 256;
  constexpr size_t kSize = 16 << 10;
  static void* blocks[kBlocks];
  jt::refresh_stats();
  uint64_t merges0 = arena_stat64(arena, "dirty_merges");
  uint64_t refused0 = arena_stat64(arena, "dirty_merges_refused");
  for (auto& b : blocks) {
    b = mallocx(kSize, flags);
    touch(b, kSize);
  }
  for (auto b : blocks) dallocx(b, flags);
  rusage r0, r1;
  getrusage(RUSAGE_SELF, &r0);
  for (auto& b : blocks) {
    b = mallocx(kSize, flags);
    touch(b, kSize);
  }
  getrusage(RUSAGE_SELF, &r1);
  for (auto b : blocks) dallocx(b, flags);
  jt::refresh_stats();
  return {r1.ru_minflt - r0.ru_minflt, (long long)(arena_stat64(arena, "dirty_merges") - merges0),
          (long long)(arena_stat64(arena, "dirty_merges_refused") - refused0)};
}
constexpr long long kPagesPerRound = 256 * (16 << 10) / 4096;

// bounded_coalesce: a burst of same-sized large frees, then the same requests again.  Where
// the freed blocks merged into an extent too large to be reused for them, the second round
// faults in fresh pages.
void mode_coalesce(const char*) {
  mode_noop(nullptr);
  BurstRound r = coalesce_round(thread_arena(), MALLOCX_TCACHE_NONE);
  emit("faults", r.faults);
  emit("pages_per_round", kPagesPerRound);
  emit("dirty_merges_refused", r.refused);
  emit("dirty_merges", r.merges);
}

// arena.<i>.bounded_coalesce / arenas.bounded_coalesce (ours): the coalescing bound switched at
// run time inside one process.  Each phase is coalesce_round on a manual arena.  Phases: bound
// on, switched off (unbounded merges: the second round faults), switched back on.  Then
// arenas.bounded_coalesce decides what a new arena starts with.
/// Writes `on` to a bool mallctl; emits the old value under `key` (-1 when the call failed).
void switch_bound(const char* name, bool on, const char* key) {
  bool old = false;
  size_t len = sizeof(old);
  int rc = mallctl(name, &old, &len, &on, sizeof(on));
  emit(key, rc == 0 ? (long long)old : -1);
}

void mode_coalesce_switch(const char*) {
  mode_noop(nullptr);
  unsigned a = 0;
  size_t len = sizeof(a);
  if (mallctl("arenas.create", &a, &len, nullptr, 0) != 0) return;
  char name[64];
  std::snprintf(name, sizeof(name), "arena.%u.bounded_coalesce", a);
  emit("pages_per_round", kPagesPerRound);
  const char* phases[] = {"on", "off", "back"};
  for (int p = 0; p < 3; p++) {
    if (p > 0) {
      char key[32];
      std::snprintf(key, sizeof(key), "old_before_%s", phases[p]);
      switch_bound(name, p == 2, key);
    }
    BurstRound r = coalesce_round(a, MALLOCX_ARENA(a) | MALLOCX_TCACHE_NONE);
    char key[32];
    std::snprintf(key, sizeof(key), "faults_%s", phases[p]);
    emit(key, r.faults);
    std::snprintf(key, sizeof(key), "merges_%s", phases[p]);
    emit(key, r.merges);
    std::snprintf(key, sizeof(key), "refused_%s", phases[p]);
    emit(key, r.refused);
  }
  // No "all arenas" form, as for the other per-arena settings.
  bool v = true;
  emit("all_rc", mallctl("arena.4096.bounded_coalesce", nullptr, nullptr, &v, sizeof(v)));
  emit("badlen_rc", mallctl(name, nullptr, nullptr, &v, sizeof(int)));
  // The default for new arenas.
  switch_bound("arenas.bounded_coalesce", false, "default_old");
  unsigned b = 0;
  len = sizeof(b);
  if (mallctl("arenas.create", &b, &len, nullptr, 0) != 0) return;
  std::snprintf(name, sizeof(name), "arena.%u.bounded_coalesce", b);
  bool now = true;
  len = sizeof(now);
  emit("new_arena_bound", mallctl(name, &now, &len, nullptr, 0) == 0 ? now : -1);
  emit("new_arena_refused", coalesce_round(b, MALLOCX_ARENA(b) | MALLOCX_TCACHE_NONE).refused);
  len = sizeof(now);
  emit("old_arena_bound",
       mallctl("arena.0.bounded_coalesce", &now, &len, nullptr, 0) == 0 ? now : -1);
}

// idle_arena_decay: a thread frees 40 MiB into its arena and goes idle; another thread, on
// another arena, allocates for up to 3 s.  With the sweep, decay runs in the idle arena too
// (at most once a second, from the busy thread's ticks); without it, nothing ticks there.
std::atomic<int> g_idle_phase{0};
unsigned g_idle_arena = UINT_MAX;

void* idle_worker(void*) {
  g_idle_arena = thread_arena();
  constexpr int kBlocks = 400;
  static void* blocks[kBlocks];
  for (auto& b : blocks) {
    b = mallocx(100000, MALLOCX_TCACHE_NONE);
    touch(b, 100000);
  }
  for (auto b : blocks) dallocx(b, MALLOCX_TCACHE_NONE);
  g_idle_phase.store(1);
  while (g_idle_phase.load() != 2) usleep(10000);
  return nullptr;
}

void mode_idle_sweep(const char*) {
  mode_noop(nullptr);
  pthread_t t;
  pthread_create(&t, nullptr, idle_worker, nullptr);
  while (g_idle_phase.load() != 1) usleep(1000);
  unsigned busy = (g_idle_arena + 1) % 2;
  mallctl("thread.arena", nullptr, nullptr, &busy, sizeof(busy));
  jt::refresh_stats();
  size_t before = arena_stat(g_idle_arena, "pdirty"), after = before;
  timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    for (int i = 0; i < 20000; i++) {  // arena-level calls: each one is a decay tick
      void* p = mallocx(64 << 10, MALLOCX_TCACHE_NONE);
      jt::escape(p);
      dallocx(p, MALLOCX_TCACHE_NONE);
    }
    jt::refresh_stats();
    after = arena_stat(g_idle_arena, "pdirty");
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (after == 0 || t1.tv_sec - t0.tv_sec >= 3) break;
  }
  g_idle_phase.store(2);
  pthread_join(t, nullptr);
  emit("pdirty_before", (long long)before);
  emit("pdirty_after", (long long)after);
}

// decay_hold_peak: 16 MiB of blocks freed at once in a 4 s decay window, then the arena
// ticked with one 64 KiB block at a time. pdirty is read at 40% of the window (decay alone has
// purged about a third by then; the hold keeps the dip below the peak whole for at least half a
// window) and again at 160% (the peak has aged out: decay purged them either way). "late"
// says whether the first read came after half a window (a stalled machine): then the
// first comparison proves nothing.
void mode_hold(const char*) {
  mode_noop(nullptr);
  constexpr int kBlocks = 64;
  constexpr size_t kSize = 256 << 10;
  constexpr double kWindowS = 4.0;
  unsigned arena = thread_arena();
  void* blocks[kBlocks];
  for (auto& b : blocks) {
    b = mallocx(kSize, MALLOCX_TCACHE_NONE);
    touch(b, kSize);
  }
  timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (auto b : blocks) dallocx(b, MALLOCX_TCACHE_NONE);
  auto elapsed = [&] {
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9;
  };
  auto tick_until = [&](double s) {
    while (elapsed() < s) {
      for (int i = 0; i < 2000; i++) {  // arena-level calls: each one is a decay tick
        void* p = mallocx(64 << 10, MALLOCX_TCACHE_NONE);
        jt::escape(p);
        dallocx(p, MALLOCX_TCACHE_NONE);
      }
      usleep(2000);
    }
  };
  jt::refresh_stats();
  emit("pdirty_freed", (long long)arena_stat(arena, "pdirty"));
  tick_until(0.4 * kWindowS);
  jt::refresh_stats();
  emit("pdirty_mid", (long long)arena_stat(arena, "pdirty"));
  emit("late", elapsed() > 0.5 * kWindowS ? 1 : 0);
  tick_until(1.6 * kWindowS);
  jt::refresh_stats();
  emit("pdirty_end", (long long)arena_stat(arena, "pdirty"));
}

// oversize_hold: blocks of oversize_threshold and more (the huge arena, whose decay is 0) are
// allocated, touched and freed twice; the second round's minor faults show whether the first
// round's pages were kept. Then the thread's own arena is ticked (or, `idle`, nothing runs: a
// background thread's job) for 1.6 decay windows and the huge arena's dirty pages are read
// again: once its peak has aged out, the idle-arena sweep (or the background thread) purges
// what it held.
void oversize_hold_case(bool idle) {
  mode_noop(nullptr);
  constexpr size_t kSizes[] = {16 << 20, 24 << 20, 12 << 20};
  constexpr double kWindowS = 2.0;
  unsigned huge = 0;
  jt::ctl_get("opt.narenas", &huge);  // the huge arena comes right after the automatic ones
  long long faults[2];
  for (long long& f : faults) {
    rusage r0, r1;
    getrusage(RUSAGE_SELF, &r0);
    void* blocks[3];
    for (int i = 0; i < 3; i++) {
      blocks[i] = mallocx(kSizes[i], MALLOCX_TCACHE_NONE);
      touch(blocks[i], kSizes[i]);
    }
    for (void* b : blocks) dallocx(b, MALLOCX_TCACHE_NONE);
    getrusage(RUSAGE_SELF, &r1);
    f = r1.ru_minflt - r0.ru_minflt;
  }
  jt::refresh_stats();
  emit("faults_first", faults[0]);
  emit("faults_again", faults[1]);
  emit("huge_pdirty_freed", (long long)arena_stat(huge, "pdirty"));
  timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do {
    for (int i = 0; i < (idle ? 0 : 2000); i++) {  // arena-level calls: ticks, and the sweep
      void* p = mallocx(64 << 10, MALLOCX_TCACHE_NONE);
      jt::escape(p);
      dallocx(p, MALLOCX_TCACHE_NONE);
    }
    usleep(idle ? 100000 : 2000);
    clock_gettime(CLOCK_MONOTONIC, &t);
  } while ((double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < 1.6 * kWindowS);
  jt::refresh_stats();
  emit("huge_pdirty_end", (long long)arena_stat(huge, "pdirty"));
}
// Ours (kept_max_bytes): 52 MiB of huge blocks written and freed; how much of it the huge
// arena's immediate hold keeps.
void mode_kept_huge(const char*) {
  mode_noop(nullptr);
  constexpr size_t kSizes[] = {16 << 20, 24 << 20, 12 << 20};
  unsigned huge = 0;
  jt::ctl_get("opt.narenas", &huge);
  void* blocks[3];
  for (int i = 0; i < 3; i++) {
    blocks[i] = mallocx(kSizes[i], MALLOCX_TCACHE_NONE);
    touch(blocks[i], kSizes[i]);
  }
  for (void* b : blocks) dallocx(b, MALLOCX_TCACHE_NONE);
  jt::refresh_stats();
  emit("huge_pdirty_freed", (long long)arena_stat(huge, "pdirty"));
}

void mode_oversize_hold(const char*) { oversize_hold_case(false); }
void mode_oversize_hold_idle(const char*) { oversize_hold_case(true); }

// Four bursts of kBurstBlocks blocks of 16 KiB, each written and then freed (a thread-cache
// bin that runs dry and overflows grows, tcache_grow_bytes); how many of the last burst's
// allocations reached `arena`.
constexpr int kBurstBlocks = 256;
constexpr size_t kBurstSize = 16384;
long long burst_16k_blocks(unsigned arena) {
  static void* blocks[kBurstBlocks];
  long long arena_allocs = 0;
  for (int round = 0; round < 4; round++) {
    jt::refresh_stats();
    const long long n0 = (long long)arena_stat(arena, "lextents.0.nmalloc");
    for (auto& b : blocks) {
      b = malloc(kBurstSize);
      touch(b, kBurstSize);
    }
    for (auto b : blocks) free(b);
    jt::refresh_stats();
    arena_allocs = (long long)arena_stat(arena, "lextents.0.nmalloc") - n0;
  }
  return arena_allocs;
}

// Ours (tcache_grow_bytes): the bursts; how many of the last one's allocations reached the
// arena, how many blocks the thread cache holds after it, and after a thread.tcache.flush.
void mode_tcache_grow(const char*) {
  mode_noop(nullptr);
  const unsigned arena = thread_arena();
  const size_t usize = nallocx(kBurstSize, 0);
  const long long arena_allocs = burst_16k_blocks(arena);
  emit("arena_allocs_last_round", arena_allocs);
  emit("cached_blocks", (long long)(arena_stat(arena, "tcache_bytes") / usize));
  tcache_flush();
  jt::refresh_stats();
  emit("cached_after_flush", (long long)(arena_stat(arena, "tcache_bytes") / usize));
}

// Ours: what the memory-return policy keeps -- a grown thread-cache bin (the tcache_grow
// bursts), a 48 KiB block in the small extent cache, 16 MiB of 1 MiB blocks within the hold --
// and what arena.4096.purge leaves of it: the calling thread's bins back at 5.3.0's capacity,
// no dirty page in its arena.
void mode_purge_all(const char*) {
  mode_noop(nullptr);
  static void* blocks[16];
  const unsigned arena = thread_arena();
  const size_t usize = nallocx(kBurstSize, 0);
  // The 1 MiB blocks first: their growth would give the grown bins back (tcache-grow).
  for (int i = 0; i < 16; i++) {
    blocks[i] = malloc(1 << 20);
    touch(blocks[i], 1 << 20);
  }
  for (int i = 0; i < 16; i++) free(blocks[i]);
  void* cached = malloc(48 << 10);
  touch(cached, 48 << 10);
  burst_16k_blocks(arena);
  free(cached);
  jt::refresh_stats();
  emit("cached_blocks", (long long)(arena_stat(arena, "tcache_bytes") / usize));
  emit("pdirty_kept", (long long)arena_stat(arena, "pdirty"));
  emit("purge_rc", mallctl("arena.4096.purge", nullptr, nullptr, nullptr, 0));
  jt::refresh_stats();
  emit("cached_after_purge", (long long)(arena_stat(arena, "tcache_bytes") / usize));
  emit("pdirty_after_purge", (long long)arena_stat(arena, "pdirty"));
}

// Two automatic arenas dip one after the other: 16 MiB allocated and freed in arena 0, then
// 16 MiB in arena 1. Each arena alone would hold its whole dip (its own peak), 32 MiB in all,
// though the process never had more than 16 MiB active at once; the shared budget keeps the
// holds to that. pdirty of both arenas is read at 45% of the window, where decay alone keeps
// about 59% of what was freed (1 - smootherstep(0.45)) and two full holds would keep all of it.
void mode_hold_budget(const char*) {
  mode_noop(nullptr);
  constexpr int kBlocks = 64;
  constexpr size_t kSize = 256 << 10;
  constexpr double kWindowS = 4.0;
  void* blocks[kBlocks];
  timespec t0, t;
  for (unsigned arena : {0u, 1u}) {
    const int flags = MALLOCX_ARENA(arena) | MALLOCX_TCACHE_NONE;
    for (auto& b : blocks) {
      b = mallocx(kSize, flags);
      touch(b, kSize);
    }
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (auto b : blocks) dallocx(b, MALLOCX_TCACHE_NONE);
  }
  auto elapsed = [&] {
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9;
  };
  auto pdirty = [] {
    jt::refresh_stats();
    return (long long)(arena_stat(0, "pdirty") + arena_stat(1, "pdirty"));
  };
  emit("pdirty_freed", pdirty());
  while (elapsed() < 0.45 * kWindowS) {
    for (int i = 0; i < 2000; i++) {  // arena-level calls in both arenas: decay ticks
      void* p = mallocx(64 << 10, MALLOCX_ARENA(i & 1) | MALLOCX_TCACHE_NONE);
      jt::escape(p);
      dallocx(p, MALLOCX_TCACHE_NONE);
    }
    usleep(2000);
  }
  emit("pdirty_mid", pdirty());
  emit("late", elapsed() > 0.5 * kWindowS ? 1 : 0);
}

// oversize_threshold: which arena large allocations land in.
void mode_oversize(const char*) {
  mode_noop(nullptr);
  unsigned opt = 0, n = 0;
  size_t thr = 0;
  jt::ctl_get("opt.narenas", &opt);
  jt::ctl_get("opt.oversize_threshold", &thr);
  emit("opt_narenas", opt);
  emit("opt_oversize_threshold", (long long)thr);
  void* huge = mallocx(8 << 20, MALLOCX_TCACHE_NONE);
  void* mid = mallocx(1 << 20, MALLOCX_TCACHE_NONE);
  void* small = malloc(64);
  jt::ctl_get("arenas.narenas", &n);
  emit("arenas_narenas", n);
  emit("thread_arena", thread_arena());
  emit("arena_8m", lookup_arena(huge));
  emit("arena_1m", lookup_arena(mid));
  emit("arena_small", lookup_arena(small));
  free(small);
  dallocx(mid, MALLOCX_TCACHE_NONE);
  dallocx(huge, MALLOCX_TCACHE_NONE);
}

// retain: after a purge, is the freed range still part of the address space?
void mode_retain(const char*) {
  mode_noop(nullptr);
  unsigned arena = thread_arena();
  constexpr size_t kBig = 4 << 20;
  char* big = static_cast<char*>(mallocx(kBig, MALLOCX_TCACHE_NONE));
  touch(big, kBig);
  emit("mapped_live", is_mapped(big));
  dallocx(big, MALLOCX_TCACHE_NONE);
  arena_action(arena, "purge");
  arena_action(kAllArenas, "purge");
  jt::refresh_stats();
  size_t retained = 0;
  jt::ctl_get("stats.retained", &retained);
  emit("mapped_after_purge", is_mapped(big) || is_mapped(big + kBig / 2));
  emit("retained", (long long)retained);
  emit("arena_retained", (long long)arena_stat(arena, "retained"));
}

// percpu_arena: a thread pinned to CPU c allocates from arena c.
struct PinResult {
  int cpu;
  unsigned small_arena, large_arena, thread_arena;
  int cpu_after;
};
PinResult g_pin;

void* pinned_thread(void*) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(g_pin.cpu, &set);
  if (sched_setaffinity(0, sizeof(set), &set) != 0) {
    g_pin.cpu_after = -2;
    return nullptr;
  }
  sched_yield();
  void* s = malloc(64);
  void* l = mallocx(1 << 20, MALLOCX_TCACHE_NONE);
  g_pin.small_arena = lookup_arena(s);
  g_pin.large_arena = lookup_arena(l);
  g_pin.thread_arena = thread_arena();
  g_pin.cpu_after = sched_getcpu();
  free(s);
  dallocx(l, MALLOCX_TCACHE_NONE);
  return nullptr;
}

void mode_percpu(const char*) {
  mode_noop(nullptr);
  const char* mode = nullptr;
  unsigned opt = 0;
  jt::ctl_get("opt.percpu_arena", &mode);
  jt::ctl_get("opt.narenas", &opt);
  emit_str("opt_percpu_arena", mode);
  emit("opt_narenas", opt);
  cpu_set_t set;
  CPU_ZERO(&set);
  sched_getaffinity(0, sizeof(set), &set);
  int checked = 0, mismatched = 0;
  for (int c = 0; c < CPU_SETSIZE; c++) {
    if (!CPU_ISSET(c, &set)) continue;
    g_pin = PinResult{c, UINT_MAX, UINT_MAX, UINT_MAX, -1};
    jt::run_in_thread(pinned_thread, nullptr);
    checked++;
    if (g_pin.cpu_after != c || g_pin.small_arena != (unsigned)c ||
        g_pin.large_arena != (unsigned)c || g_pin.thread_arena != (unsigned)c) {
      mismatched++;
      std::printf("pin cpu=%d after=%d small=%u large=%u thread=%u\n", c, g_pin.cpu_after,
                  g_pin.small_arena, g_pin.large_arena, g_pin.thread_arena);
    }
  }
  emit("cpus_checked", checked);
  emit("cpus_mismatched", mismatched);
}

// zero_realloc: what realloc(p, 0) does.
void mode_zero_realloc(const char*) {
  mode_noop(nullptr);
  void* p = malloc(100);
  uint64_t d0 = 0, d1 = 0;
  jt::ctl_get("thread.deallocated", &d0);
  std::fprintf(stderr, "child: calling realloc(p, 0)\n");
  void* q = realloc(p, 0);
  jt::ctl_get("thread.deallocated", &d1);
  size_t zero_reallocs = 0;
  jt::refresh_stats();
  jt::ctl_get("stats.zero_reallocs", &zero_reallocs);
  emit("zero_reallocs", (long long)zero_reallocs);
  emit("result_null", q == nullptr);
  emit("result_usable", q ? (long long)malloc_usable_size(q) : -1);
  emit("freed_bytes", (long long)(d1 - d0));
  free(q);
}

// experimental_infallible_new: an operator new that cannot be served aborts instead of throwing.
void mode_infallible_new(const char*) {
  mode_noop(nullptr);
  std::fprintf(stderr, "child: calling operator new(1 << 60)\n");
  try {
    void* p = ::operator new (size_t{1} << 60);
    emit("returned", p != nullptr);
  } catch (...) {
    emit("threw", 1);
  }
}

// junk: fill bytes on allocation (0xa5) and on free (0x5a).  Freed contents are read only from
// a large block whose pages stay mapped (the conf keeps dirty pages: dirty_decay_ms:-1).
void mode_junk(const char*) {
  mode_noop(nullptr);
  unsigned char* s = static_cast<unsigned char*>(malloc(100));
  size_t su = malloc_usable_size(s);
  emit("small_not_a5", (long long)count_not(s, su, 0xa5));
  free(s);
  constexpr size_t kBig = 1 << 20;
  unsigned char* b = static_cast<unsigned char*>(malloc(kBig));
  size_t bu = malloc_usable_size(b);
  emit("large_usable", (long long)bu);
  emit("large_not_a5", (long long)count_not(b, bu, 0xa5));
  emit("large_not_0", (long long)count_not(b, bu, 0));
  std::memset(b, 0x11, bu);
  free(b);
  jt::escape(b);
  emit("freed_not_5a", (long long)count_not(b, bu, 0x5a));
  emit("freed_not_11", (long long)count_not(b, bu, 0x11));
}

// zero: recycled memory comes back zeroed.
void mode_zero(const char*) {
  mode_noop(nullptr);
  for (size_t size : {size_t{100}, size_t{20480}, size_t{1} << 20}) {
    void* p = malloc(size);
    size_t u = malloc_usable_size(p);
    std::memset(p, 0xcc, u);
    free(p);
    void* q = malloc(size);
    char key[64];
    std::snprintf(key, sizeof(key), "same_%zu", size);
    emit(key, p == q);
    std::snprintf(key, sizeof(key), "nonzero_%zu", size);
    emit(key, (long long)count_not(q, malloc_usable_size(q), 0));
    free(q);
  }
}

// thp: the huge-page flags of the mapping holding a large block.
void mode_thp(const char*) {
  mode_noop(nullptr);
  constexpr size_t kBig = 4 << 20;
  void* b = mallocx(kBig, MALLOCX_TCACHE_NONE);
  touch(b, kBig);
  int hg = 0, nh = 0;
  emit("vmas", smaps_flags((uintptr_t)b, &hg, &nh));
  emit("block_hg", hg);
  emit("block_nh", nh);
  emit("all_vmas", smaps_flags(0, &hg, &nh));
  emit("all_hg", hg);
  emit("all_nh", nh);
  dallocx(b, MALLOCX_TCACHE_NONE);
}

// borrow_dirty (ours): a thread bound to arena 1 frees a 1 MiB block there; the thread then
// binds to arena 2, which holds nothing, and asks for the same size twice: automatically (the
// block may come from arena 1's dirty pages) and with MALLOCX_ARENA(2) (never borrowed).
void mode_borrow(const char*) {
  mode_noop(nullptr);
  constexpr size_t kBig = 1 << 20;
  unsigned one = 1, two = 2;
  jt::ctl_set("thread.arena", one);
  void* p = mallocx(kBig, MALLOCX_TCACHE_NONE);
  touch(p, kBig);
  dallocx(p, MALLOCX_TCACHE_NONE);
  jt::ctl_set("thread.arena", two);
  void* q = mallocx(kBig, MALLOCX_TCACHE_NONE);
  void* r = mallocx(kBig, MALLOCX_TCACHE_NONE | MALLOCX_ARENA(2));
  emit("thread_arena", thread_arena());
  emit("auto_arena", lookup_arena(q));
  emit("explicit_arena", lookup_arena(r));
  emit("same_pages", q < (char*)p + kBig + 4096 && (char*)q + kBig > (char*)p);
  dallocx(q, MALLOCX_TCACHE_NONE);
  dallocx(r, MALLOCX_TCACHE_NONE);
  // Slabs: arena 1 fills and empties 64 slabs of the 2 KiB class (kept dirty: decay off); a
  // thread of arena 3, which holds no free pages, then asks for as many regions.
  constexpr int kRegions = 256;
  static void* small[kRegions];
  jt::ctl_set("thread.arena", one);
  for (auto& x : small) touch(x = mallocx(2048, MALLOCX_TCACHE_NONE), 2048);
  char *lo = static_cast<char*>(small[0]), *hi = lo;
  for (void* x : small) {
    lo = std::min(lo, static_cast<char*>(x));
    hi = std::max(hi, static_cast<char*>(x) + 2048);
  }
  for (void* x : small) dallocx(x, MALLOCX_TCACHE_NONE);
  jt::refresh_stats();
  const size_t dirty_before = arena_stat(1, "pdirty"), mapped3_before = arena_stat(3, "mapped");
  unsigned three = 3;
  jt::ctl_set("thread.arena", three);
  int inside = 0, in_arena3 = 0;
  for (auto& x : small) {
    x = mallocx(2048, MALLOCX_TCACHE_NONE);
    inside += static_cast<char*>(x) >= lo && static_cast<char*>(x) < hi;
    in_arena3 += lookup_arena(x) == 3;
  }
  jt::refresh_stats();
  emit("slab_regions_in_arena3", in_arena3);
  emit("slab_regions_on_freed_pages", inside);
  emit("slab_pages_lent", (long long)dirty_before - (long long)arena_stat(1, "pdirty"));
  emit("slab_arena3_mapped_grew", arena_stat(3, "mapped") > mapped3_before);
  for (void* x : small) dallocx(x, MALLOCX_TCACHE_NONE);
}

// borrow_dirty (ours), a large block's own pages first: arena 1 holds a free 1 MiB block; a
// thread of arena 2 frees two adjacent 16 KiB blocks of its own (into its small extent cache, which keeps
// them apart) and asks for 32 KiB. The cache's two extents, recorded dirty, coalesce into a fit:
// the block comes from arena 2's own pages, not borrowed from arena 1.
void mode_borrow_own_first(const char*) {
  mode_noop(nullptr);
  unsigned one = 1, two = 2;
  jt::ctl_set("thread.arena", one);
  void* p = mallocx(1 << 20, MALLOCX_TCACHE_NONE);
  touch(p, 1 << 20);
  // Arena 2's blocks first, on its own pages (arena 1 has nothing to lend yet).
  jt::ctl_set("thread.arena", two);
  char* a = static_cast<char*>(mallocx(16384, MALLOCX_TCACHE_NONE));
  char* b = static_cast<char*>(mallocx(16384, MALLOCX_TCACHE_NONE));
  emit("own_blocks", lookup_arena(a) == 2 && lookup_arena(b) == 2);
  jt::ctl_set("thread.arena", one);
  dallocx(p, MALLOCX_TCACHE_NONE);
  jt::ctl_set("thread.arena", two);
  // Adjacent extents: the blocks' pages (each block at its cache-oblivious offset) touch.
  bool pad = true;
  jt::ctl_get("config.cache_oblivious", &pad);
  const size_t extent = 16384 + (pad ? 4096 : 0);
  const uintptr_t pa = reinterpret_cast<uintptr_t>(a) & ~uintptr_t{4095};
  const uintptr_t pb = reinterpret_cast<uintptr_t>(b) & ~uintptr_t{4095};
  emit("adjacent", pa + extent == pb || pb + extent == pa);
  dallocx(a, MALLOCX_TCACHE_NONE);
  dallocx(b, MALLOCX_TCACHE_NONE);
  void* q = mallocx(32768, MALLOCX_TCACHE_NONE);
  emit("arena", lookup_arena(q));
  const uintptr_t pq = reinterpret_cast<uintptr_t>(q) & ~uintptr_t{4095};
  emit("on_freed_pages", pq == std::min(pa, pb));
  dallocx(q, MALLOCX_TCACHE_NONE);
}

constexpr Mode kModes[] = {
    {"noop", mode_noop},
    {"arenas", mode_arenas},
    {"tcache", mode_tcache},
    {"tcache_max", mode_tcache_max},
    {"nslots", mode_nslots},
    {"decay", mode_decay},
    {"fit", mode_fit},
    {"coalesce", mode_coalesce},
    {"coalesce_switch", mode_coalesce_switch},
    {"idle_sweep", mode_idle_sweep},
    {"borrow", mode_borrow},
    {"borrow_own_first", mode_borrow_own_first},
    {"hold", mode_hold},
    {"hold_budget", mode_hold_budget},
    {"oversize_hold", mode_oversize_hold},
    {"oversize_hold_idle", mode_oversize_hold_idle},
    {"tcache_grow", mode_tcache_grow},
    {"kept_huge", mode_kept_huge},
    {"purge_all", mode_purge_all},
    {"oversize", mode_oversize},
    {"retain", mode_retain},
    {"percpu", mode_percpu},
    {"zero_realloc", mode_zero_realloc},
    {"infallible_new", mode_infallible_new},
    {"junk", mode_junk},
    {"zero", mode_zero},
    {"thp", mode_thp},
};

// ===========================================================================
// Parent side (child.h has the rest, thp_mode_is_madvise included).

unsigned affinity_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 0;
  return (unsigned)CPU_COUNT(&set);
}

}  // namespace

// ---------------------------------------------------------------------------
// Arenas.

TEST(narenas_sets_arena_count_and_threads_spread) {
  Child c;
  if (!child(&c, "arenas", "narenas:3")) return;
  EXPECT_CHILD(c, "opt_narenas", kEq, 3);
  // The 3 automatic arenas plus the huge arena (oversize_threshold is on by default).
  EXPECT_CHILD(c, "arenas_narenas", kEq, 4);
  EXPECT_CHILD(c, "threads_distinct_arenas", kEq, 3);
  EXPECT_CHILD(c, "threads_max_arena", kEq, 2);

  if (!child(&c, "arenas", "narenas:1")) return;
  EXPECT_CHILD(c, "opt_narenas", kEq, 1);
  EXPECT_CHILD(c, "arenas_narenas", kEq, 2);
  EXPECT_CHILD(c, "threads_distinct_arenas", kEq, 1);
  EXPECT_CHILD(c, "threads_max_arena", kEq, 0);

  if (!child(&c, "arenas", "narenas:12,oversize_threshold:0")) return;
  EXPECT_CHILD(c, "arenas_narenas", kEq, 12);
  // Eight threads plus the main thread, each on the least loaded arena: all different.
  EXPECT_CHILD(c, "threads_distinct_arenas", kEq, 8);
  EXPECT_CHILD(c, "threads_max_arena", kLe, 11);
}

TEST(oversize_threshold_routes_to_huge_arena) {
  Child c;
  if (!child(&c, "oversize", "narenas:2")) return;
  EXPECT_CHILD(c, "opt_oversize_threshold", kEq, 8 << 20);
  EXPECT_CHILD(c, "arenas_narenas", kEq, 3);
  // The huge arena is the last one, index arenas.narenas - 1.
  EXPECT_CHILD(c, "arena_8m", kEq, 2);
  EXPECT_CHILD(c, "arena_1m", kEq, value(c, "thread_arena"));
  EXPECT_CHILD(c, "arena_small", kEq, value(c, "thread_arena"));

  if (!child(&c, "oversize", "narenas:2,oversize_threshold:1048576")) return;
  EXPECT_CHILD(c, "opt_oversize_threshold", kEq, 1 << 20);
  EXPECT_CHILD(c, "arena_8m", kEq, 2);
  EXPECT_CHILD(c, "arena_1m", kEq, 2);
  EXPECT_CHILD(c, "arena_small", kEq, value(c, "thread_arena"));

  // 0 turns the huge arena off: no extra arena, everything stays in the thread's arena.
  if (!child(&c, "oversize", "narenas:2,oversize_threshold:0")) return;
  EXPECT_CHILD(c, "opt_oversize_threshold", kEq, 0);
  EXPECT_CHILD(c, "arenas_narenas", kEq, 2);
  EXPECT_CHILD(c, "arena_8m", kEq, value(c, "thread_arena"));
  EXPECT_CHILD(c, "arena_1m", kEq, value(c, "thread_arena"));

  // Below the smallest large class: also off.
  if (!child(&c, "oversize", "narenas:2,oversize_threshold:4096")) return;
  EXPECT_CHILD(c, "opt_oversize_threshold", kEq, 0);
  EXPECT_CHILD(c, "arenas_narenas", kEq, 2);
  EXPECT_CHILD(c, "arena_8m", kEq, value(c, "thread_arena"));
}

TEST(percpu_arena_binds_arena_to_cpu) {
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  unsigned aff = affinity_cpus();
  if (online <= 0 || (unsigned)online != aff) {
    SKIP_TEST("CPU affinity (%u) differs from online CPUs (%ld): percpu_arena is disabled then",
              aff, online);
  }
  Child c;
  if (!child(&c, "percpu", "percpu_arena:percpu")) return;
  char mode[64];
  EXPECT_STREQ(text_value(c, "opt_percpu_arena", mode, sizeof(mode)), "percpu");
  EXPECT_CHILD(c, "opt_narenas", kEq, online);
  EXPECT_CHILD(c, "cpus_checked", kEq, online);
  EXPECT_CHILD(c, "cpus_mismatched", kEq, 0);
}

// ---------------------------------------------------------------------------
// Thread caches.

TEST(tcache_false_disables_thread_caches) {
  Child c;
  if (!child(&c, "tcache", nullptr)) return;
  EXPECT_CHILD(c, "tcache_enabled", kEq, 1);
  EXPECT_CHILD(c, "cached_64", kEq, 10);
  EXPECT_CHILD(c, "cached_20480", kEq, 3);
  EXPECT_CHILD(c, "thread_cached_64", kEq, 10);

  if (!child(&c, "tcache", "tcache:false")) return;
  EXPECT_CHILD(c, "tcache_enabled", kEq, 0);
  EXPECT_CHILD(c, "cached_64", kEq, 0);
  EXPECT_CHILD(c, "cached_20480", kEq, 0);
  EXPECT_CHILD(c, "thread_cached_64", kEq, 0);
}

TEST(tcache_max_bounds_cached_classes) {
  Child c;
  // Default: 32 KiB; 36 small bins + 16, 20, 24, 28, 32 KiB.
  if (!child(&c, "tcache_max", nullptr)) return;
  EXPECT_CHILD(c, "tcache_max", kEq, 32768);
  EXPECT_CHILD(c, "nhbins", kEq, 41);
  EXPECT_CHILD(c, "cached_32768", kEq, 1);
  EXPECT_CHILD(c, "cached_40960", kEq, 0);
  EXPECT_CHILD(c, "cached_65536", kEq, 0);

  if (!child(&c, "tcache_max", "tcache_max:65536")) return;
  EXPECT_CHILD(c, "tcache_max", kEq, 65536);
  EXPECT_CHILD(c, "nhbins", kEq, 45);
  EXPECT_CHILD(c, "cached_40960", kEq, 1);
  EXPECT_CHILD(c, "cached_65536", kEq, 1);
  EXPECT_CHILD(c, "cached_131072", kEq, 0);

  // lg_tcache_max:N means tcache_max:2^N.
  if (!child(&c, "tcache_max", "lg_tcache_max:17")) return;
  EXPECT_CHILD(c, "tcache_max", kEq, 131072);
  EXPECT_CHILD(c, "nhbins", kEq, 49);
  EXPECT_CHILD(c, "cached_131072", kEq, 1);
  EXPECT_CHILD(c, "cached_262144", kEq, 0);

  // A size between classes is rounded up to its class.
  if (!child(&c, "tcache_max", "tcache_max:100000")) return;
  EXPECT_CHILD(c, "tcache_max", kEq, 114688);
  EXPECT_CHILD(c, "cached_65536", kEq, 1);
  EXPECT_CHILD(c, "cached_131072", kEq, 0);

  // Small classes are always cached.
  if (!child(&c, "tcache_max", "tcache_max:0")) return;
  EXPECT_CHILD(c, "cached_32768", kEq, 0);
}

TEST(tcache_nslots_set_bin_capacity) {
  // Defaults: the 8-byte bin holds 200 (nregs 512, clipped to small_max), the 14336-byte bin
  // 20 (its few regions, raised to small_min), each large bin 20.
  Child c;
  if (!child(&c, "nslots", nullptr)) return;
  EXPECT_CHILD(c, "cached_8_x50", kEq, 50);
  EXPECT_CHILD(c, "cached_8_x51", kEq, 51);
  EXPECT_CHILD(c, "cached_8_x201", kEq, 101);
  EXPECT_CHILD(c, "cached_14336_x11", kEq, 11);
  EXPECT_CHILD(c, "cached_14336_x21", kEq, 11);
  EXPECT_CHILD(c, "cached_20480_x7", kEq, 7);
  EXPECT_CHILD(c, "cached_20480_x21", kEq, 11);

  if (!child(&c, "nslots",
             "tcache_nslots_small_max:50,tcache_nslots_small_min:10,tcache_nslots_large:6")) {
    return;
  }
  EXPECT_CHILD(c, "cached_8_x50", kEq, 50);
  EXPECT_CHILD(c, "cached_8_x51", kEq, 26);
  EXPECT_CHILD(c, "cached_14336_x11", kEq, 6);
  EXPECT_CHILD(c, "cached_20480_x7", kEq, 4);
}

// ---------------------------------------------------------------------------
// Decay, purging, extent reuse.

TEST(dirty_decay_ms_zero_purges_at_once) {
  Child c;
  if (!child(&c, "decay", "dirty_decay_ms:0")) return;
  EXPECT_CHILD(c, "pdirty_free", kEq, 0);
  EXPECT_CHILD(c, "pmuzzy_free", kEq, 0);  // muzzy_decay_ms is 0 by default: no muzzy stage
  // Control: the default 10 s keeps them.
  if (!child(&c, "decay", nullptr)) return;
  EXPECT_CHILD(c, "pdirty_free", kGe, value(c, "freed_pages"));
  EXPECT_CHILD(c, "pdirty_purge", kEq, 0);
}

TEST(dirty_decay_ms_minus_one_never_decays) {
  Child c;
  if (!child(&c, "decay", "dirty_decay_ms:-1", "50")) return;
  long long freed = value(c, "freed_pages");
  EXPECT_CHILD(c, "pdirty_free", kGe, freed);
  EXPECT_CHILD(c, "pdirty_decay", kGe, freed);
  // An explicit purge still empties the cache.
  EXPECT_CHILD(c, "pdirty_purge", kEq, 0);
}

TEST(muzzy_decay_ms_keeps_lazily_purged_pages) {
  Child c;
  // A short dirty decay: once it elapsed, arena.<i>.decay moves the dirty pages, by MADV_FREE,
  // to the muzzy state, where the long muzzy decay keeps them.
  if (!child(&c, "decay", "dirty_decay_ms:50,muzzy_decay_ms:100000", "100")) return;
  long long freed = value(c, "freed_pages");
  EXPECT_CHILD(c, "pdirty_free", kGe, freed);
  EXPECT_CHILD(c, "pdirty_decay", kEq, 0);
  EXPECT_CHILD(c, "pmuzzy_decay", kGe, freed);
  EXPECT_CHILD(c, "pmuzzy_purge", kEq, 0);  // a purge empties both
  EXPECT_CHILD(c, "pdirty_purge", kEq, 0);
  // Control: with the default muzzy_decay_ms:0 the same decay purges for good.
  if (!child(&c, "decay", "dirty_decay_ms:50", "100")) return;
  EXPECT_CHILD(c, "pdirty_decay", kEq, 0);
  EXPECT_CHILD(c, "pmuzzy_decay", kEq, 0);
  // dirty_decay_ms:0 purges on free, fully: the muzzy stage is skipped as well (5.3.0).
  if (!child(&c, "decay", "dirty_decay_ms:0,muzzy_decay_ms:10000")) return;
  EXPECT_CHILD(c, "pdirty_free", kEq, 0);
  EXPECT_CHILD(c, "pmuzzy_free", kEq, 0);
}

TEST(lg_extent_max_active_fit_bounds_reuse) {
  Child c;
  // Our fallback (doc/compat.md#reuse-before-grow) would split the extent anyway rather than
  // grow; off, the ratio decides alone, as in 5.3.0 (which does not know the key).
  const bool ref = jt::is_reference();
  // (1 MiB + a page) >> 6 is below a 64 KiB request: the freed extent is split for it.
  if (!child(&c, "fit", "dirty_decay_ms:-1", "64")) return;
  EXPECT_CHILD(c, "reused", kEq, 1);
  EXPECT_CHILD(c, "pdirty_after", kLt, value(c, "pdirty_before"));
  // With 0, a dirty extent serves only requests of (about) its own size.
  if (!child(&c, "fit",
             ref ? "dirty_decay_ms:-1,lg_extent_max_active_fit:0"
                 : "dirty_decay_ms:-1,lg_extent_max_active_fit:0,reuse_before_grow:false",
             "64")) {
    return;
  }
  EXPECT_CHILD(c, "reused", kEq, 0);
  EXPECT_CHILD(c, "pdirty_after", kEq, value(c, "pdirty_before"));
  // With 2: requests down to about a quarter of the extent. With the cache-oblivious pad the
  // size-class steps of the free-extent lists make 256 KiB too small already (the 1 MiB + page
  // extent is filed under the 1.25 MiB class), 320 KiB large enough; without it (configure
  // --disable-cache-oblivious) the 1 MiB extent serves 256 KiB, exactly a quarter.
  bool pad = true;
  EXPECT_EQ(jt::ctl_get("config.cache_oblivious", &pad), 0);
  if (!child(&c, "fit",
             ref ? "dirty_decay_ms:-1,lg_extent_max_active_fit:2"
                 : "dirty_decay_ms:-1,lg_extent_max_active_fit:2,reuse_before_grow:false",
             "256")) {
    return;
  }
  EXPECT_CHILD(c, "reused", kEq, pad ? 0 : 1);
  if (!child(&c, "fit", "dirty_decay_ms:-1,lg_extent_max_active_fit:2", "320")) return;
  EXPECT_CHILD(c, "reused", kEq, 1);
}

// The coalescing tests below look at the bound alone: freed extents go straight to the dirty
// ecache, without the small extent cache (opt.extent_cache_bytes, ours) in front of it.
#define kNoCache "extent_cache_bytes:0"

TEST_COMPAT(reuse_before_grow_splits_beyond_the_ratio, "reuse-before-grow") {
  Child c;
  // By default the request too small for the ratio still takes the resident dirty extent
  // instead of new pages.
  if (!child(&c, "fit", "dirty_decay_ms:-1,lg_extent_max_active_fit:0", "64")) return;
  EXPECT_CHILD(c, "reused", kEq, 1);
  EXPECT_CHILD(c, "pdirty_after", kLt, value(c, "pdirty_before"));
  // With 5.3.0's unbounded merging the burst merges beyond the ratio, and the second round is
  // served from it without page faults.
  if (!child(&c, "coalesce", "dirty_decay_ms:-1,bounded_coalesce:false," kNoCache)) return;
  EXPECT_CHILD(c, "dirty_merges", kGt, 0);
  EXPECT_CHILD(c, "faults", kLt, value(c, "pages_per_round") / 8);
}

TEST_COMPAT(bounded_coalesce_false_merges_without_bound, "bounded-coalesce") {
  Child c;
  // The bound alone: our other fallback (reuse_before_grow) and the small extent cache off in
  // both runs.
  if (!child(&c, "coalesce", "dirty_decay_ms:-1,reuse_before_grow:false," kNoCache)) return;
  long long pages = value(c, "pages_per_round");
  EXPECT_CHILD(c, "dirty_merges_refused", kGt, 0);
  EXPECT_CHILD(c, "faults", kLt, pages / 8);
  if (!child(&c, "coalesce",
             "dirty_decay_ms:-1,bounded_coalesce:false,reuse_before_grow:false," kNoCache)) {
    return;
  }
  EXPECT_CHILD(c, "dirty_merges_refused", kEq, 0);
  EXPECT_CHILD(c, "dirty_merges", kGt, 0);
  // 5.3.0's behaviour: the merged extent is too large for the requests; fresh pages fault.
  EXPECT_CHILD(c, "faults", kGe, pages / 2);
}

TEST_COMPAT(bounded_coalesce_switches_at_run_time, "bounded-coalesce") {
  Child c;
  // The bound alone (reuse_before_grow and the small extent cache off), and nothing purged
  // between the rounds.
  if (!child(&c, "coalesce_switch", "dirty_decay_ms:-1,reuse_before_grow:false," kNoCache)) {
    return;
  }
  long long pages = value(c, "pages_per_round");
  EXPECT_CHILD(c, "refused_on", kGt, 0);
  EXPECT_CHILD(c, "faults_on", kLt, pages / 8);
  // Switched off: the frees merge without bound and the second round faults in fresh pages.
  EXPECT_CHILD(c, "old_before_off", kEq, 1);
  EXPECT_CHILD(c, "refused_off", kEq, 0);
  EXPECT_CHILD(c, "merges_off", kGt, 0);
  EXPECT_CHILD(c, "faults_off", kGe, pages / 2);
  // Switched back on: bounded again, and reused again.
  EXPECT_CHILD(c, "old_before_back", kEq, 0);
  EXPECT_CHILD(c, "refused_back", kGt, 0);
  EXPECT_CHILD(c, "faults_back", kLt, pages / 8);
  EXPECT_CHILD(c, "all_rc", kEq, EFAULT);
  EXPECT_CHILD(c, "badlen_rc", kEq, EINVAL);
  // arenas.bounded_coalesce: new arenas only.
  EXPECT_CHILD(c, "default_old", kEq, 1);
  EXPECT_CHILD(c, "new_arena_bound", kEq, 0);
  EXPECT_CHILD(c, "new_arena_refused", kEq, 0);
  EXPECT_CHILD(c, "old_arena_bound", kEq, 1);
}

TEST_COMPAT(idle_arena_decay_reaches_idle_arenas, "idle-arena-decay") {
  Child c;
  // borrow_dirty off: otherwise the busy thread's requests would be served from (and tick) the
  // quiet arena itself.
  // idle_return off: the sweep alone (that thread would purge the quiet arena too).
  if (!child(&c, "idle_sweep",
             "narenas:2,dirty_decay_ms:500,borrow_dirty:false,idle_return:false")) {
    return;
  }
  long long before = value(c, "pdirty_before");
  EXPECT_GT(before, 9000);  // ~39 MiB freed
  EXPECT_CHILD(c, "pdirty_after", kLt, before / 10);
  if (!child(&c, "idle_sweep",
             "narenas:2,dirty_decay_ms:500,borrow_dirty:false,idle_arena_decay:false,"
             "idle_return:false")) {
    return;
  }
  EXPECT_CHILD(c, "pdirty_after", kEq, value(c, "pdirty_before"));
}

// A large allocation the thread's arena would grow for takes another arena's dirty pages
// instead; explicit MALLOCX_ARENA requests never do, nor any request with borrow_dirty:false.
TEST_COMPAT(borrow_dirty_lends_pages_across_arenas, "borrow-dirty") {
  Child c;
  if (!child(&c, "borrow", "dirty_decay_ms:-1,narenas:4")) return;
  EXPECT_CHILD(c, "thread_arena", kEq, 2);
  EXPECT_CHILD(c, "auto_arena", kEq, 1);
  EXPECT_CHILD(c, "same_pages", kEq, 1);
  EXPECT_CHILD(c, "explicit_arena", kEq, 2);
  // Slabs change hands: the regions are arena 3's, on the pages arena 1 freed.
  EXPECT_CHILD(c, "slab_regions_in_arena3", kEq, 256);
  EXPECT_CHILD(c, "slab_regions_on_freed_pages", kEq, 256);
  EXPECT_CHILD(c, "slab_pages_lent", kGe, 64);
  if (!child(&c, "borrow", "dirty_decay_ms:-1,narenas:4,borrow_dirty:false")) return;
  EXPECT_CHILD(c, "auto_arena", kEq, 2);
  EXPECT_CHILD(c, "same_pages", kEq, 0);
  EXPECT_CHILD(c, "explicit_arena", kEq, 2);
  EXPECT_CHILD(c, "slab_regions_in_arena3", kEq, 256);
  EXPECT_CHILD(c, "slab_regions_on_freed_pages", kEq, 0);
  EXPECT_CHILD(c, "slab_pages_lent", kEq, 0);
  EXPECT_CHILD(c, "slab_arena3_mapped_grew", kEq, 1);
}

// Ours: a large allocation that may borrow looks at all of its arena's own cached pages first,
// the small extent cache's included once recorded dirty (where they coalesce).
TEST_COMPAT(borrow_dirty_takes_own_cached_pages_first, "borrow-dirty") {
  Child c;
  if (!child(&c, "borrow_own_first", "dirty_decay_ms:-1,narenas:4")) return;
  EXPECT_CHILD(c, "own_blocks", kEq, 1);
  if (value(c, "adjacent") != 1) {
    jt::skip("the two 16 KiB blocks did not get adjacent extents");
    return;
  }
  EXPECT_CHILD(c, "arena", kEq, 2);
  EXPECT_CHILD(c, "on_freed_pages", kEq, 1);
}

// The dip below the recent peak stays dirty for at least half a decay window, then decay
// purges it; with the option off decay purges by age alone (about a third by 40% of the window).
TEST_COMPAT(decay_hold_peak_spares_the_dip, "decay-hold-peak") {
  Child c;
  const char* conf = "narenas:1,dirty_decay_ms:4000,muzzy_decay_ms:0";
  if (!child(&c, "hold", conf)) return;
  long long freed = value(c, "pdirty_freed");
  EXPECT_GE(freed, 64 * 64);  // 64 blocks of 64 pages (+ the pad page each)
  if (value(c, "late") == 0) EXPECT_CHILD(c, "pdirty_mid", kGe, freed * 95 / 100);
  EXPECT_CHILD(c, "pdirty_end", kLt, freed / 10);
  std::string off = std::string(conf) + ",decay_hold_peak:false";
  if (!child(&c, "hold", off.c_str())) return;
  freed = value(c, "pdirty_freed");
  EXPECT_CHILD(c, "pdirty_mid", kLt, freed * 85 / 100);
  EXPECT_CHILD(c, "pdirty_end", kLt, freed / 10);
}

// Ours: arenas whose dips come one after the other share one budget, the process-wide dip.
TEST_COMPAT(decay_hold_peak_shares_one_budget, "decay-hold-peak") {
  Child c;
  if (!child(&c, "hold_budget", "narenas:2,dirty_decay_ms:4000,muzzy_decay_ms:0")) return;
  const long long freed = value(c, "pdirty_freed");
  EXPECT_GE(freed, 2 * 64 * 64);  // 2 x 64 blocks of 64 pages (+ the pad page each)
  // Decay's curve alone keeps ~59%; two whole holds would keep ~100%; the budget keeps 50%.
  if (value(c, "late") == 0) EXPECT_CHILD(c, "pdirty_mid", kLt, freed * 80 / 100);
  EXPECT_CHILD(c, "pdirty_mid", kGe, freed * 45 / 100);
}

// Ours: the huge arena keeps freed oversize blocks within the hold, so the second round
// faults almost nothing, and purges them once the peak has aged out; oversize_hold:false
// purges them when freed, as 5.3.0 does (the second round faults them all in again).
TEST_COMPAT(oversize_hold_keeps_huge_blocks_for_reuse, "oversize-hold") {
  Child c;
  const char* conf = "dirty_decay_ms:2000,muzzy_decay_ms:0";
  if (!child(&c, "oversize_hold", conf)) return;
  const long long first = value(c, "faults_first");
  EXPECT_GE(first, (52 << 20) / 4096 * 9 / 10);  // 52 MiB touched: at least 90% faulted
  EXPECT_CHILD(c, "faults_again", kLt, first / 10);
  EXPECT_CHILD(c, "huge_pdirty_freed", kGe, (40 << 20) / 4096);
  EXPECT_CHILD(c, "huge_pdirty_end", kEq, 0);
  // Idle, a background thread purges the hold when the peak has aged out.
  std::string bg = std::string(conf) + ",background_thread:true";
  if (!child(&c, "oversize_hold_idle", bg.c_str())) return;
  EXPECT_CHILD(c, "faults_again", kLt, value(c, "faults_first") / 10);
  EXPECT_CHILD(c, "huge_pdirty_end", kEq, 0);
  std::string off = std::string(conf) + ",oversize_hold:false";
  if (!child(&c, "oversize_hold", off.c_str())) return;
  EXPECT_CHILD(c, "faults_again", kGe, value(c, "faults_first") * 9 / 10);
  EXPECT_CHILD(c, "huge_pdirty_freed", kEq, 0);
}

// Ours: a thread-cache bin that bursts overflow after running dry grows, so from the second
// burst on the 256 blocks never leave the thread cache; tcache_grow_bytes:0 keeps 5.3.0's 20
// slots (most of every burst goes to the arena and back).
TEST_COMPAT(tcache_grow_bytes_keeps_a_burst_in_the_cache, "tcache-grow") {
  Child c;
  if (!child(&c, "tcache_grow", nullptr)) return;
  EXPECT_CHILD(c, "arena_allocs_last_round", kEq, 0);
  EXPECT_CHILD(c, "cached_blocks", kEq, 256);
  EXPECT_CHILD(c, "cached_after_flush", kEq, 0);
  if (!child(&c, "tcache_grow", "tcache_grow_bytes:0")) return;
  EXPECT_CHILD(c, "arena_allocs_last_round", kGe, 200);
  EXPECT_CHILD(c, "cached_blocks", kLe, 20);
}

// Ours: kept_max_bytes bounds, process-wide, what the policy keeps beyond what is allocated
// (doc/design/memory-return.md, rule 3): the huge arena's hold, and grown thread-cache bins,
// which may fill half of the bound (the caches' share).
TEST_COMPAT(kept_max_bytes_bounds_holds_and_grown_bins, "kept-max") {
  Child c;
  const char* conf = "dirty_decay_ms:2000,muzzy_decay_ms:0";
  if (!child(&c, "kept_huge", conf)) return;
  EXPECT_CHILD(c, "huge_pdirty_freed", kGe, (40 << 20) / 4096);
  std::string bounded = std::string(conf) + ",kept_max_bytes:16777216";
  if (!child(&c, "kept_huge", bounded.c_str())) return;
  EXPECT_CHILD(c, "huge_pdirty_freed", kLe, (16 << 20) / 4096);
  EXPECT_CHILD(c, "huge_pdirty_freed", kGe, (8 << 20) / 4096);  // a 12 MiB or 16 MiB block fits
  // 2 MiB: the caches may keep 1 MiB, 64 blocks of 16 KiB beyond the bin's 20.
  if (!child(&c, "tcache_grow", "kept_max_bytes:2097152")) return;
  EXPECT_CHILD(c, "cached_blocks", kLe, 20 + 64);
  EXPECT_CHILD(c, "cached_blocks", kGe, 20);
  EXPECT_CHILD(c, "arena_allocs_last_round", kGe, 100);
}

// Ours: arena.4096.purge (Redis's MEMORY PURGE) returns what the policy keeps -- the hold, the
// small extent cache and the calling thread's grown bins (doc/design/memory-return.md); 5.3.0
// keeps no grown bins and purges the rest alike.
TEST_COMPAT(purge_returns_held_cached_and_grown_memory, "tcache-grow") {
  Child c;
  if (!child(&c, "purge_all", nullptr)) return;
  EXPECT_CHILD(c, "cached_blocks", kEq, 256);
  // The 16 MiB freed (4,096 pages) within the hold, less what the bursts took of it.
  EXPECT_CHILD(c, "pdirty_kept", kGe, 2048);
  EXPECT_CHILD(c, "purge_rc", kEq, 0);
  EXPECT_CHILD(c, "cached_after_purge", kLe, 20);  // tcache_nslots_large: 5.3.0's capacity
  EXPECT_CHILD(c, "pdirty_after_purge", kEq, 0);
}

TEST(retain_false_unmaps_purged_memory) {
  Child c;
  if (!child(&c, "retain", nullptr)) return;
  EXPECT_CHILD(c, "mapped_live", kEq, 1);
  EXPECT_CHILD(c, "retained", kGe, 4 << 20);
  EXPECT_CHILD(c, "mapped_after_purge", kEq, 1);
  if (!child(&c, "retain", "retain:false")) return;
  EXPECT_CHILD(c, "mapped_live", kEq, 1);
  EXPECT_CHILD(c, "retained", kEq, 0);
  EXPECT_CHILD(c, "arena_retained", kEq, 0);
  EXPECT_CHILD(c, "mapped_after_purge", kEq, 0);
}

// ---------------------------------------------------------------------------
// Memory contents.

TEST(zero_realloc_modes) {
  Child c;
  // Default and "free": the block is freed, NULL returned.
  for (const char* conf : {(const char*)nullptr, "zero_realloc:free"}) {
    if (!child(&c, "zero_realloc", conf)) return;
    EXPECT_CHILD(c, "result_null", kEq, 1);
    EXPECT_CHILD(c, "freed_bytes", kEq, 112);
    EXPECT_CHILD(c, "zero_reallocs", kEq, 1);
  }
  // "alloc": the block is freed and a minimal one returned; the call still counts.
  if (!child(&c, "zero_realloc", "zero_realloc:alloc")) return;
  EXPECT_CHILD(c, "zero_reallocs", kEq, 1);
  EXPECT_CHILD(c, "result_null", kEq, 0);
  EXPECT_CHILD(c, "result_usable", kEq, 8);
  EXPECT_CHILD(c, "freed_bytes", kEq, 112);
  // "abort": the process aborts in realloc.
  const char* argv[] = {program_name(), "--child", "zero_realloc", nullptr};
  c = run_program(g_self, argv, "zero_realloc:abort");
  if (!EXPECT_TRUE(c.signaled(SIGABRT))) show(c);
  EXPECT_TRUE(contains(c.err, "child: calling realloc(p, 0)"));
  // 5.3.0's message, once, on a line of its own (it has no "<jemalloc>: " prefix there).
  EXPECT_TRUE(contains(c.err, "\nCalled realloc(non-null-ptr, 0) with zero_realloc:abort set\n"));
  EXPECT_FALSE(contains(c.err, "<jemalloc>"));
  EXPECT_FALSE(contains(c.out, "result_null="));
}

TEST(experimental_infallible_new_aborts_with_one_message) {
  Child c;
  // By default a failed operator new throws std::bad_alloc.
  if (!child(&c, "infallible_new", nullptr)) return;
  EXPECT_CHILD(c, "threw", kEq, 1);
  const char* argv[] = {program_name(), "--child", "infallible_new", nullptr};
  c = run_program(g_self, argv, "experimental_infallible_new:true");
  if (!EXPECT_TRUE(c.signaled(SIGABRT))) show(c);
  EXPECT_TRUE(
      contains(c.err,
               "\n<jemalloc>: Allocation failed and opt.experimental_infallible_new is true. "
               "Aborting.\n"));
  EXPECT_FALSE(contains(c.err, "<jemalloc>: <jemalloc>:"));
  EXPECT_FALSE(contains(c.out, "threw="));
}

TEST(junk_fills_allocated_and_freed_memory) {
  Child c;
  if (!child(&c, "junk", "junk:true,dirty_decay_ms:-1")) return;
  EXPECT_CHILD(c, "small_not_a5", kEq, 0);
  EXPECT_CHILD(c, "large_not_a5", kEq, 0);
  EXPECT_CHILD(c, "freed_not_5a", kEq, 0);
  if (!child(&c, "junk", "junk:alloc,dirty_decay_ms:-1")) return;
  EXPECT_CHILD(c, "small_not_a5", kEq, 0);
  EXPECT_CHILD(c, "large_not_a5", kEq, 0);
  EXPECT_CHILD(c, "freed_not_11", kEq, 0);
  if (!child(&c, "junk", "junk:free,dirty_decay_ms:-1")) return;
  EXPECT_CHILD(c, "large_not_0", kEq, 0);  // fresh pages, untouched
  EXPECT_CHILD(c, "freed_not_5a", kEq, 0);
  if (!child(&c, "junk", "dirty_decay_ms:-1")) return;
  EXPECT_CHILD(c, "large_not_0", kEq, 0);
  EXPECT_CHILD(c, "freed_not_11", kEq, 0);
}

TEST(zero_true_zeroes_recycled_memory) {
  Child c;
  if (!child(&c, "zero", "zero:true")) return;
  for (const char* size : {"100", "20480", "1048576"}) {
    char key[64];
    std::snprintf(key, sizeof(key), "nonzero_%s", size);
    EXPECT_CHILD(c, key, kEq, 0);
  }
  // Control: the same blocks come back with the old contents.
  if (!child(&c, "zero", nullptr)) return;
  EXPECT_CHILD(c, "same_100", kEq, 1);
  EXPECT_CHILD(c, "nonzero_100", kGt, 0);
  EXPECT_CHILD(c, "same_20480", kEq, 1);
  EXPECT_CHILD(c, "nonzero_20480", kGt, 0);
}

// ---------------------------------------------------------------------------
// Transparent huge pages.

TEST(thp_option_marks_user_mappings) {
  if (!thp_mode_is_madvise()) SKIP_TEST("system THP mode is not [madvise]");
  Child c;
  if (!child(&c, "thp", "thp:always")) return;
  EXPECT_CHILD(c, "vmas", kEq, 1);
  EXPECT_CHILD(c, "block_hg", kEq, 1);
  EXPECT_CHILD(c, "block_nh", kEq, 0);
  if (!child(&c, "thp", "thp:never")) return;
  EXPECT_CHILD(c, "block_hg", kEq, 0);
  EXPECT_CHILD(c, "block_nh", kEq, 1);
  if (!child(&c, "thp", nullptr)) return;
  EXPECT_CHILD(c, "block_hg", kEq, 0);
  EXPECT_CHILD(c, "block_nh", kEq, 0);
  EXPECT_CHILD(c, "all_hg", kEq, 0);
}

TEST(metadata_thp_always_marks_metadata) {
  if (!thp_mode_is_madvise()) SKIP_TEST("system THP mode is not [madvise]");
  Child c;
  if (!child(&c, "thp", "metadata_thp:always")) return;
  // The user block keeps the system default; some other (metadata) mapping is marked.
  EXPECT_CHILD(c, "block_hg", kEq, 0);
  EXPECT_CHILD(c, "all_hg", kGe, 1);
  if (!child(&c, "thp", "metadata_thp:disabled")) return;
  EXPECT_CHILD(c, "all_hg", kEq, 0);
}

int main(int argc, char** argv) { return run_main(argc, argv, kModes); }
