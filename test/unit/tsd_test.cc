// tsd_test.cc: per-thread state and thread events (src/thread/tsd.h), and the boot that sets
// them up (src/thread/core_boot.h) -- a zeroed thread reads as "slow path", the first fetch binds
// an arena and builds the cache, thread exit flushes the cache and unbinds (leaving a deserted
// manual arena purged and destroyable), later calls on an exiting thread get arena 0 without a
// cache, switching the cache off and on, moving to another arena, the byte-counter events
// (cache GC every tcache_gc_incr_bytes on both sides, the stats_interval report once per
// interval, thread.peak sampling) and core_boot's defaults and idempotence.
//
// Each test runs on a thread of its own, so it starts from a zeroed Tsd. The program boots with
// opt.stats_interval set and a counting report hook.
#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/mman.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "arena/arena.h"
#include "arena/arenas.h"
#include "arena/bin_info.h"
#include "arena_fixture.h"
#include "ctl/opt.h"
#include "os/sysinfo.h"
#include "support/config.h"
#include "support/mutex.h"
#include "thread/core_boot.h"
#include "thread/tcache.h"
#include "thread/tsd.h"

namespace je {
namespace {

// What a nominal thread's fast-path threshold reads for the real threshold `v`: `v`, except in
// an --enable-debug build, whose default junk and safety checks send every call to the slow
// path (threshold 0).
uint64_t fast(uint64_t v) { return config::kDebug ? 0 : v; }

constexpr szind_t kBin = 2;  // 32-byte regions
constexpr int64_t kStatsInterval = 1 << 20;
constexpr uint64_t kStatsBatch = kStatsInterval >> 6;  // how tsd_boot batches the counting

std::atomic<int> g_reports{0};
void count_report() { g_reports.fetch_add(1, std::memory_order_relaxed); }

template <class F>
void on_new_thread(F f) {
  std::thread t(f);
  t.join();
}

class TsdTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    CoreConfig cfg;
    cfg.thread.stats_interval = kStatsInterval;  // read by tsd_boot: the report is on
    cfg.stats_interval_hook = &count_report;
    // 5.3.0's teardown purge of a deserted arena (ThreadExitFlushesTheCacheAndUnbinds): with
    // opt.idle_return an exiting thread's memory goes back by time instead
    // (test/stress/idle_return_test).
    cfg.arena.policy.idle_return = false;
    ASSERT_TRUE(core_boot(cfg));
  }
  void SetUp() override {
    if (!config::kStats) GTEST_SKIP() << "built with --disable-stats";
  }
  static unsigned nthreads(const Arena* a) { return arena_stat<unsigned>(a->ind(), "nthreads"); }
  /// Fill the thread's cache with a few regions of kBin from its arena.
  static void cache_some(Tsd& tsd) {
    void* p = tcache_alloc_small_hard(&tsd.tcache, tsd.arena, kBin);
    ASSERT_NE(p, nullptr);
    ASSERT_TRUE(tsd.tcache.bins[kBin].push_fast(p));
  }
  /// The calling thread's state, moved to arena `m`, with a few regions in its cache.
  static Tsd& fetch_on(Arena* m) {
    Tsd& tsd = tsd_fetch();
    tsd_set_arena(tsd, m);
    cache_some(tsd);
    return tsd;
  }
};

TEST_F(TsdTest, ZeroedStateSendsTheFirstCallToTheSlowPath) {
  on_new_thread([] {
    EXPECT_EQ(t_tsd.state, TsdState::kUninitialized);
    EXPECT_EQ(t_tsd.allocated_next_event_fast, 0u);
    EXPECT_EQ(t_tsd.deallocated_next_event_fast, 0u);
    EXPECT_FALSE(t_tsd.tcache.bins[kBin].can_pop_fast());
    EXPECT_FALSE(t_tsd.tcache.bins[kBin].push_fast(&t_tsd));
  });
}

TEST_F(TsdTest, FirstFetchBindsAnArenaAndBuildsTheCache) {
  on_new_thread([] {
    Tsd& tsd = tsd_fetch();
    EXPECT_EQ(&tsd, &t_tsd);
    EXPECT_EQ(tsd.state, TsdState::kNominal);
    EXPECT_TRUE(tsd.tcache_enabled);
    ASSERT_NE(tsd.arena, nullptr);
    EXPECT_FALSE(tsd.arena->manual());
    EXPECT_EQ(tsd.tcache.slow().arena, tsd.arena);
    EXPECT_EQ(tsd_tcache(tsd), &tsd.tcache);
    EXPECT_EQ(tsd_arena(tsd), tsd.arena);
    EXPECT_TRUE(t_bin_shards.assigned);
    EXPECT_GE(nthreads(tsd.arena), 1u);
    // Nominal: the fast path sees the real thresholds.
    EXPECT_EQ(tsd.allocated_next_event_fast, fast(tsd.allocated_next_event));
    EXPECT_GT(tsd.allocated_next_event, tsd.allocated);
    EXPECT_EQ(&tsd_fetch(), &tsd);  // set up once
  });
}

TEST_F(TsdTest, ThreadExitFlushesTheCacheAndUnbinds) {
  Arena* m = manual_arena_without_decay();
  ASSERT_NE(m, nullptr);
  on_new_thread([&] {
    fetch_on(m);
    EXPECT_GT(tcache_bytes(m), 0u);
    EXPECT_GT(bin_stats(m, kBin, t_bin_shards.shard[kBin]).curregs, 0u);
    EXPECT_EQ(nthreads(m), 1u);
  });
  EXPECT_EQ(tcache_bytes(m), 0u);
  for (unsigned s = 0; s < g_bin_geo[kBin].nshards; s++)
    EXPECT_EQ(bin_stats(m, kBin, s).curregs, 0u);
  EXPECT_EQ(nthreads(m), 0u);
  // Its last thread gone, the arena was purged entirely, and nothing holds it any more.
  ArenaPages pg = arena_pages(m->ind());
  EXPECT_EQ(pg.active, 0u);
  EXPECT_EQ(pg.dirty, 0u);
  EXPECT_EQ(pg.muzzy, 0u);
  EXPECT_TRUE(arena_destroy_manual(m->ind()));
}

// The stack a thread's exit takes for its cache's flush, below the frame the thread ran in. A new
// thread's stack is fresh pages, so what the exit takes beyond what the thread itself used is
// faulted in for the exit alone: with 4 KiB of flush arrays on the stack it was one page of
// each new thread in mleak (10,000 short threads: 18.3k faults against glibc's 12.2k).
struct ExitStack {
  char* stack = nullptr;
  uintptr_t frame = 0;  // an address in the thread function's frame
  Arena* a = nullptr;
  Arena* b = nullptr;
};
constexpr size_t kExitStackBytes = 256 << 10;
constexpr unsigned char kPaint = 0xA5;
constexpr size_t kPaintGap = 1024;  // left unpainted below the frame, for memset's own

void* exit_stack_thread(void* arg) {
  ExitStack& x = *static_cast<ExitStack*>(arg);
  Tsd& tsd = tsd_fetch();
  tsd_set_arena(tsd, x.a);
  // A full bin of regions from two arenas: the flush groups them by owning bin.
  CacheBin& bin = tsd.tcache.bins[kBin];
  for (unsigned i = 0; bin.ncached() < bin.ncached_max(); i++) {
    void* p = (i % 2 == 0 ? x.a : x.b)->malloc_small(kBin, false);
    if (p == nullptr || !bin.push_fast(p)) break;
  }
  volatile char here = 0;
  x.frame = reinterpret_cast<uintptr_t>(&here);
  // Everything below this frame (less a gap for memset) is painted; the exit's flush runs from
  // the same depth (start_thread calls both).
  std::memset(x.stack, kPaint, x.frame - kPaintGap - reinterpret_cast<uintptr_t>(x.stack));
  return nullptr;
}

TEST_F(TsdTest, ThreadExitFlushTakesUnder3KiBOfStack) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "sanitizers enlarge the frames";
#endif
  if (config::kDebug) GTEST_SKIP() << "frames of a debug build are larger";
  ExitStack x;
  x.a = manual_arena_without_decay();
  x.b = manual_arena_without_decay();
  ASSERT_NE(x.a, nullptr);
  ASSERT_NE(x.b, nullptr);
  void* m =
      mmap(nullptr, kExitStackBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(m, MAP_FAILED);
  x.stack = static_cast<char*>(m);
  pthread_attr_t attr;
  ASSERT_EQ(pthread_attr_init(&attr), 0);
  ASSERT_EQ(pthread_attr_setstack(&attr, x.stack, kExitStackBytes), 0);
  pthread_t t;
  ASSERT_EQ(pthread_create(&t, &attr, exit_stack_thread, &x), 0);
  pthread_join(t, nullptr);
  pthread_attr_destroy(&attr);
  ASSERT_NE(x.frame, 0u);
  size_t untouched = 0;
  while (untouched < kExitStackBytes && static_cast<unsigned char>(x.stack[untouched]) == kPaint)
    untouched++;
  const uintptr_t deepest = reinterpret_cast<uintptr_t>(x.stack) + untouched;
  const long below = static_cast<long>(x.frame) - static_cast<long>(deepest);
  // Today 1.8 KiB: the flush's slab array (1 KiB) and the frames under it (4.8 KiB before). The
  // bound leaves room for other compilers and fails the 4 KiB of arrays the flush had before.
  EXPECT_LT(below, 3 * 1024) << "the exit took " << below << " bytes below the thread's frame";
  munmap(m, kExitStackBytes);
  EXPECT_EQ(tcache_bytes(x.a), 0u);
  EXPECT_TRUE(arena_destroy_manual(x.a->ind()));
  EXPECT_TRUE(arena_destroy_manual(x.b->ind()));
}

// What a TLS destructor running after the allocator's own sees.
struct LateCall {
  TsdState state;
  Tcache* tcache;
  Arena* arena;
  Arena* bound;
  bool seen;
};
pthread_key_t g_late_key;

void late_destructor(void* arg) {
  // Destructors run in rounds; until the allocator's has run, ask for another round.
  if (t_tsd.state != TsdState::kPurgatory) {
    pthread_setspecific(g_late_key, arg);
    return;
  }
  LateCall& c = *static_cast<LateCall*>(arg);
  Tsd& tsd = tsd_fetch();             // must not set the thread up again
  tsd_set_tcache_enabled(tsd, true);  // ignored in purgatory
  c.state = tsd.state;
  c.tcache = tsd_tcache(tsd);
  c.arena = tsd_arena(tsd);
  c.bound = tsd.arena;
  c.seen = true;
}

TEST_F(TsdTest, CallsAfterThreadExitGetArena0WithoutACache) {
  ASSERT_EQ(pthread_key_create(&g_late_key, late_destructor), 0);
  LateCall c{};
  on_new_thread([&] {
    Tsd& tsd = tsd_fetch();
    cache_some(tsd);
    pthread_setspecific(g_late_key, &c);
  });
  pthread_key_delete(g_late_key);
  ASSERT_TRUE(c.seen) << "the allocator's thread-exit hook did not run before the last round";
  EXPECT_EQ(c.state, TsdState::kPurgatory);
  EXPECT_EQ(c.tcache, nullptr);
  EXPECT_EQ(c.arena, arena_get(0, false));
  EXPECT_EQ(c.bound, nullptr);
}

TEST_F(TsdTest, DisablingTheCacheFlushesItAndEnablingBuildsAFreshOne) {
  Arena* m = manual_arena_without_decay();
  ASSERT_NE(m, nullptr);
  on_new_thread([&] {
    Tsd& tsd = fetch_on(m);
    tsd_set_tcache_enabled(tsd, false);
    EXPECT_EQ(tsd.state, TsdState::kNominalSlow);
    EXPECT_FALSE(tsd.tcache_enabled);
    EXPECT_EQ(tsd_tcache(tsd), nullptr);
    EXPECT_EQ(tsd.tcache.cold, nullptr);
    EXPECT_EQ(tcache_bytes(m), 0u);
    EXPECT_EQ(tsd.allocated_next_event_fast, 0u);  // every call takes the slow path
    EXPECT_EQ(tsd.deallocated_next_event_fast, 0u);
    tsd_set_tcache_enabled(tsd, false);  // already off: nothing changes
    EXPECT_EQ(tsd.state, TsdState::kNominalSlow);
    tsd_set_tcache_enabled(tsd, true);
    EXPECT_EQ(tsd.state, TsdState::kNominal);
    EXPECT_TRUE(tsd.tcache_enabled);
    EXPECT_EQ(tsd_tcache(tsd), &tsd.tcache);
    EXPECT_EQ(tsd.tcache.slow().arena, m);
    EXPECT_EQ(tsd.tcache.bins[kBin].ncached(), 0u);
    EXPECT_EQ(tsd.allocated_next_event_fast, fast(tsd.allocated_next_event));
  });
  EXPECT_TRUE(arena_destroy_manual(m->ind()));
}

TEST_F(TsdTest, SetArenaMovesTheBindingAndTheCache) {
  Arena* m1 = manual_arena_without_decay();
  Arena* m2 = manual_arena_without_decay();
  ASSERT_NE(m1, nullptr);
  ASSERT_NE(m2, nullptr);
  on_new_thread([&] {
    Tsd& tsd = tsd_fetch();
    Arena* first = tsd.arena;
    unsigned first_threads = nthreads(first);
    tsd_set_arena(tsd, m1);
    EXPECT_EQ(nthreads(first), first_threads - 1);
    EXPECT_EQ(nthreads(m1), 1u);
    EXPECT_EQ(tsd.tcache.slow().arena, m1);
    tsd_set_arena(tsd, m1);  // same arena: no change
    EXPECT_EQ(nthreads(m1), 1u);
    tsd_set_arena(tsd, m2);
    EXPECT_EQ(nthreads(m1), 0u);
    EXPECT_EQ(nthreads(m2), 1u);
    EXPECT_EQ(tsd.arena, m2);
    EXPECT_EQ(tsd_arena(tsd), m2);
    EXPECT_EQ(tsd.tcache.slow().arena, m2);
  });
  EXPECT_EQ(nthreads(m2), 0u);
}

TEST_F(TsdTest, CacheGcRunsEveryIncrBytesOnBothSides) {
  on_new_thread([] {
    Tsd& tsd = tsd_fetch();
    const uint64_t incr = g_thread_opt.tcache_gc_incr_bytes;
    const unsigned nhbins = g_tcache_geo.nhbins;
    EXPECT_EQ(tsd.gc_next_alloc - tsd.allocated, incr);
    EXPECT_EQ(tsd.gc_next_dalloc - tsd.deallocated, incr);
    unsigned visited = tsd.tcache.slow().next_gc_bin;
    tsd.allocated = tsd.gc_next_alloc - 1;
    tsd_alloc_event(tsd);
    EXPECT_EQ(tsd.tcache.slow().next_gc_bin, visited) << "GC ran a byte early";
    tsd.allocated++;
    tsd_alloc_event(tsd);
    EXPECT_EQ(tsd.tcache.slow().next_gc_bin, (visited + 1) % nhbins);
    EXPECT_EQ(tsd.gc_next_alloc, tsd.allocated + incr);
    EXPECT_LE(tsd.allocated_next_event, tsd.gc_next_alloc);
    tsd.deallocated = tsd.gc_next_dalloc - 1;
    tsd_dalloc_event(tsd);
    EXPECT_EQ(tsd.tcache.slow().next_gc_bin, (visited + 1) % nhbins);
    tsd.deallocated++;
    tsd_dalloc_event(tsd);
    EXPECT_EQ(tsd.tcache.slow().next_gc_bin, (visited + 2) % nhbins);
    EXPECT_EQ(tsd.gc_next_dalloc, tsd.deallocated + incr);
    EXPECT_EQ(tsd.deallocated_next_event_fast, fast(tsd.deallocated_next_event));
  });
}

TEST_F(TsdTest, StatsIntervalReportsOncePerIntervalOfBytes) {
  on_new_thread([] {
    Tsd& tsd = tsd_fetch();
    auto step = [&tsd] {
      tsd.allocated += kStatsBatch;
      tsd_alloc_event(tsd);
    };
    // Run until a report: the shared count is then below one batch.
    int reports = g_reports.load();
    for (int i = 0; i <= 64 && g_reports.load() == reports; i++) step();
    ASSERT_EQ(g_reports.load(), reports + 1);
    // From there, the next report comes after exactly one interval of bytes.
    for (int i = 1; i < 64; i++) {
      step();
      ASSERT_EQ(g_reports.load(), reports + 1) << "early report after " << i << " batches";
    }
    step();
    EXPECT_EQ(g_reports.load(), reports + 2);
    // The event threshold includes the next stats batch.
    EXPECT_LE(tsd.allocated_next_event, tsd.allocated + kStatsBatch);
  });
}

TEST_F(TsdTest, PeakTracksTheHighestNetAllocationSinceReset) {
  on_new_thread([] {
    Tsd& tsd = tsd_fetch();
    tsd_peak_reset(tsd);
    EXPECT_EQ(tsd.peak_max, 0u);
    tsd.allocated += 1000;
    tsd_peak_update(tsd);
    EXPECT_EQ(tsd.peak_max, 1000u);
    tsd.deallocated += 600;
    tsd_peak_update(tsd);
    EXPECT_EQ(tsd.peak_max, 1000u);  // a maximum: frees do not lower it
    tsd.allocated += 800;
    tsd_peak_update(tsd);
    EXPECT_EQ(tsd.peak_max, 1200u);
    // After a reset, freeing memory allocated before it never counts as a peak.
    tsd_peak_reset(tsd);
    EXPECT_EQ(tsd.peak_max, 0u);
    tsd.deallocated += 5000;
    tsd_peak_update(tsd);
    EXPECT_EQ(tsd.peak_max, 0u);
  });
}

TEST_F(TsdTest, PeakIsSampledByTheEventsOnBothSides) {
  on_new_thread([] {
    Tsd& tsd = tsd_fetch();
    tsd_peak_reset(tsd);
    const uint64_t a0 = tsd.allocated, d0 = tsd.deallocated;
    auto net = [&] { return (tsd.allocated - a0) - (tsd.deallocated - d0); };
    // Allocation side: reaching the sample threshold samples without an explicit update.
    tsd.allocated = tsd.peak_next_alloc;
    tsd_alloc_event(tsd);
    EXPECT_EQ(tsd.peak_max, net());
    EXPECT_EQ(tsd.peak_next_alloc, tsd.allocated + kPeakEventBytes);
    // Deallocation side: bytes counted without an allocation-side sample (as if the sample
    // were still ahead) show up when the frees reach their threshold.
    tsd.allocated += 4 * kPeakEventBytes;
    tsd.deallocated = tsd.peak_next_dalloc;
    tsd_dalloc_event(tsd);
    EXPECT_EQ(tsd.peak_max, net());
    EXPECT_EQ(tsd.peak_next_dalloc, tsd.deallocated + kPeakEventBytes);
  });
}

// Booted like the tests above (whichever suite runs first).
class CoreBoot : public TsdTest {};

// src/api/init.cc checks every member at compile time (core_config(Options{}) == CoreConfig{});
// this spot-checks a few of each struct where a test can see it.
TEST_F(CoreBoot, DefaultsAreTheOptionDefaults) {
  CoreConfig c;
  Options d{};
  EXPECT_EQ(c.abort, d.abort);
  EXPECT_EQ(c.trust_madvise, d.trust_madvise);
  EXPECT_EQ(d.thp_mode, ThpOpt::kDefault);
  EXPECT_EQ(c.thp, CoreThp::kDefault);
  EXPECT_EQ(d.metadata_thp_mode, MetadataThpMode::kDisabled);
  EXPECT_EQ(c.arena.metadata_thp, MetadataThp::kDisabled);
  EXPECT_EQ(c.slab_pages, d.slab_sizes);
  EXPECT_EQ(c.bin_shards, d.bin_shards);
  EXPECT_EQ(c.mutex_max_spin, d.mutex_max_spin);
  EXPECT_EQ(c.arena.narenas, d.narenas);
  EXPECT_EQ(c.arena.oversize_threshold, d.oversize_threshold);
  EXPECT_EQ(c.arena.dirty_decay_ms, d.dirty_decay_ms);
  EXPECT_EQ(c.arena.muzzy_decay_ms, d.muzzy_decay_ms);
  EXPECT_EQ(c.arena.max_background_threads, d.max_background_threads);
  EXPECT_EQ(c.thread.tcache_max, d.tcache_max);
  EXPECT_EQ(c.thread.lg_tcache_nslots_mul, d.lg_tcache_nslots_mul);
  EXPECT_EQ(c.thread.stats_interval, d.stats_interval);
  EXPECT_EQ(c.stats_interval_hook, nullptr);
}

// The layers keep what core_boot gave them; boot settles only the "computed at boot" values.
TEST_F(CoreBoot, LayersKeepTheirOptions) {
  CoreConfig c;
  EXPECT_EQ(g_thread_opt.tcache_max, c.thread.tcache_max);
  EXPECT_EQ(g_thread_opt.stats_interval, kStatsInterval);  // this suite's boot
  EXPECT_EQ(g_arena_opt.narenas, arenas_narenas_auto());   // computed: 4 x CPUs
  EXPECT_EQ(g_arena_opt.max_background_threads, kMaxBackgroundThreadsDefault);
  EXPECT_EQ(g_arena_opt.dirty_decay_ms, c.arena.dirty_decay_ms);
}

TEST_F(CoreBoot, SecondCallKeepsTheFirstConfiguration) {
  ASSERT_TRUE(core_boot(CoreConfig{}));
  EXPECT_TRUE(core_booted());
  CoreConfig other;
  other.bin_shards[0] = 8;
  other.slab_pages[1] = 4;
  other.mutex_max_spin = 5;
  EXPECT_TRUE(core_boot(other));
  EXPECT_EQ(g_bin_geo[0].nshards, 1u);
  EXPECT_EQ(g_nbins_total, sc::kNBins);
  EXPECT_EQ(g_bin_geo[1].slab_size, sc::kBinInfo[1].slab_size);
  EXPECT_EQ(mutex_max_spin(), sysinfo::ncpus() > 1 ? CoreConfig{}.mutex_max_spin : 0);
}

}  // namespace
}  // namespace je
