// stats_counters_test: statistics that follow the thread caches and the threads --
// thread.peak.read (sampled every 64 KiB of allocation and of deallocation, not only at reads),
// stats.arenas.<i>.internal and its share of stats.metadata, stats.arenas.<i>.large.nflushes,
// and the per-arena mutex groups with stats.mutexes.reset. Every expectation here is 5.3.0's:
// run.sh also runs this program against Debian's library.
#include "harness.h"

namespace {

int action(const char* name) { return mallctl(name, nullptr, nullptr, nullptr, 0); }

bool stats_built() {
  bool on = false;
  return jt::ctl_get("config.stats", &on) == 0 && on;
}

bool tcache_on() {
  bool on = false;
  return jt::ctl_get("thread.tcache.enabled", &on) == 0 && on;
}

template <class T>
T arena_stat(size_t ind, const char* leaf) {
  char name[128];
  T v{};
  size_t len = sizeof(v);
  std::snprintf(name, sizeof(name), "stats.arenas.%zu.%s", ind, leaf);
  int rc = mallctl(name, &v, &len, nullptr, 0);
  if (rc != 0) FAIL_MSG("reading %s returned %d", name, rc);
  return v;
}

size_t internal_of(size_t ind) { return arena_stat<size_t>(ind, "internal"); }

uint64_t mutex_ops(size_t ind, const char* group) {
  char leaf[96];
  std::snprintf(leaf, sizeof(leaf), "mutexes.%s.num_ops", group);
  return arena_stat<uint64_t>(ind, leaf);
}

unsigned this_thread_arena() {
  unsigned a = UINT_MAX;
  jt::ctl_get("thread.arena", &a);
  return a;
}

// A thread that allocates (so it has a cache), then waits until told to exit.
struct Parked {
  std::atomic<int> stage{0};
};

void* parked_thread(void* arg) {
  auto* p = static_cast<Parked*>(arg);
  void* block = malloc(64);
  jt::escape(block);
  p->stage.store(1);
  while (p->stage.load() != 2) usleep(1000);
  free(block);
  return nullptr;
}

}  // namespace

// Runs first: with tcache:false no cache (and so no internal allocation) exists yet.
TEST(internal_is_thread_cache_memory_and_part_of_metadata) {
  if (!stats_built()) SKIP_TEST("built without statistics");
  ASSERT_TRUE(jt::refresh_stats());
  size_t metadata = 0;
  ASSERT_EQ(jt::ctl_get("stats.metadata", &metadata), 0);
  const size_t all = internal_of(MALLCTL_ARENAS_ALL);
  EXPECT_EQ(metadata, arena_stat<size_t>(MALLCTL_ARENAS_ALL, "base") + all);
  // Internal allocations come from arena 0.
  const size_t i0 = internal_of(0);
  EXPECT_EQ(i0, all);
  if (tcache_on()) {
    EXPECT_GT(i0, 0u);  // this thread's cache slots
  } else {
    EXPECT_EQ(i0, 0u);
  }

  // An explicit cache is internal memory while it exists.
  unsigned tc = UINT_MAX;
  ASSERT_EQ(jt::ctl_get("tcache.create", &tc), 0);
  ASSERT_TRUE(jt::refresh_stats());
  size_t metadata1 = 0;
  ASSERT_EQ(jt::ctl_get("stats.metadata", &metadata1), 0);
  const size_t i1 = internal_of(0);
  EXPECT_GT(i1, i0);
  EXPECT_GE(metadata1 - metadata, i1 - i0);
  ASSERT_EQ(mallctl("tcache.destroy", nullptr, nullptr, &tc, sizeof(tc)), 0);
  ASSERT_TRUE(jt::refresh_stats());
  EXPECT_EQ(internal_of(0), i0);
  if (!tcache_on()) return;

  // This thread's own slots go with its cache...
  ASSERT_EQ(jt::ctl_set("thread.tcache.enabled", false), 0);
  ASSERT_TRUE(jt::refresh_stats());
  const size_t slots = i0 - internal_of(0);
  EXPECT_GT(slots, 0u);
  ASSERT_EQ(jt::ctl_set("thread.tcache.enabled", true), 0);
  ASSERT_TRUE(jt::refresh_stats());
  EXPECT_EQ(internal_of(0), i0);
  // ...and another thread's cache counts in arena 0 while the thread lives, whatever its arena.
  Parked p;
  pthread_t t;
  ASSERT_EQ(pthread_create(&t, nullptr, parked_thread, &p), 0);
  while (p.stage.load() != 1) usleep(1000);
  ASSERT_TRUE(jt::refresh_stats());
  EXPECT_EQ(internal_of(0), i0 + slots);
  p.stage.store(2);
  pthread_join(t, nullptr);
  ASSERT_TRUE(jt::refresh_stats());
  EXPECT_EQ(internal_of(0), i0);
}

TEST(thread_peak_sees_a_freed_burst) {
  if (!stats_built()) SKIP_TEST("built without statistics");
  static void* blocks[1024];
  uint64_t peak = 1;
  ASSERT_EQ(action("thread.peak.reset"), 0);
  ASSERT_EQ(jt::ctl_get("thread.peak.read", &peak), 0);
  EXPECT_EQ(peak, 0u);
  // 1 MiB in 1 KiB blocks, all freed before the read: the 64 KiB events saw the rise.
  for (void*& b : blocks) {
    b = malloc(1024);
    ASSERT_NOT_NULL(b);
  }
  for (void* b : blocks) free(b);
  ASSERT_EQ(jt::ctl_get("thread.peak.read", &peak), 0);
  const uint64_t burst = 1024 * (uint64_t)nallocx(1024, 0);
  EXPECT_LE(peak, burst);
  EXPECT_GE(peak + 64 * 1024, burst);
  // Large blocks cross the event threshold each time: the whole burst is seen.
  ASSERT_EQ(action("thread.peak.reset"), 0);
  for (int i = 0; i < 8; i++) {
    blocks[i] = malloc((size_t)1 << 20);
    ASSERT_NOT_NULL(blocks[i]);
  }
  for (int i = 0; i < 8; i++) free(blocks[i]);
  ASSERT_EQ(jt::ctl_get("thread.peak.read", &peak), 0);
  EXPECT_EQ(peak, 8 * (uint64_t)nallocx((size_t)1 << 20, 0));
  // A read samples too, and the peak stays after the free.
  ASSERT_EQ(action("thread.peak.reset"), 0);
  void* q = malloc(5000);
  ASSERT_NOT_NULL(q);
  ASSERT_EQ(jt::ctl_get("thread.peak.read", &peak), 0);
  EXPECT_EQ(peak, nallocx(5000, 0));
  free(q);
  ASSERT_EQ(jt::ctl_get("thread.peak.read", &peak), 0);
  EXPECT_EQ(peak, nallocx(5000, 0));
  // A small burst freed again within one event interval is not seen.
  ASSERT_EQ(action("thread.peak.reset"), 0);
  q = malloc(100);
  jt::escape(q);
  free(q);
  ASSERT_EQ(jt::ctl_get("thread.peak.read", &peak), 0);
  EXPECT_LE(peak, nallocx(100, 0));
}

TEST(large_nflushes_count_cache_flushes) {
  if (!stats_built()) SKIP_TEST("built without statistics");
  ASSERT_TRUE(jt::refresh_stats());
  arena_stat<uint64_t>(MALLCTL_ARENAS_ALL, "large.nflushes");  // readable in any case
  if (!tcache_on()) SKIP_TEST("no thread cache (tcache:false)");
  unsigned nbins = 0, nhbins = 0;
  size_t tcache_max = 0;
  ASSERT_EQ(jt::ctl_get("arenas.nbins", &nbins), 0);
  ASSERT_EQ(jt::ctl_get("arenas.nhbins", &nhbins), 0);
  ASSERT_EQ(jt::ctl_get("arenas.tcache_max", &tcache_max), 0);
  const uint64_t nlarge = nhbins - nbins;
  const unsigned ind = this_thread_arena();
  ASSERT_NE(ind, UINT_MAX);

  // A flush of the whole cache counts once per bin, empty bins included (5.3.0).
  const uint64_t f0 = arena_stat<uint64_t>(ind, "large.nflushes");
  const uint64_t s0 = arena_stat<uint64_t>(ind, "small.nflushes");
  ASSERT_EQ(action("thread.tcache.flush"), 0);
  ASSERT_TRUE(jt::refresh_stats());
  const uint64_t f1 = arena_stat<uint64_t>(ind, "large.nflushes");
  EXPECT_EQ(f1 - f0, nlarge);
  EXPECT_EQ(arena_stat<uint64_t>(ind, "small.nflushes") - s0, (uint64_t)nbins);

  // Freeing more cached large blocks than a bin holds flushes it (more than it can hold after
  // growing, too: ours grows a bin that overflows after running dry to at most 1,024 slots,
  // doc/compat.md#tcache-grow).
  const size_t kSize = 16384;
  if (nallocx(kSize, 0) <= tcache_max) {
    static void* blocks[1100];
    const uint64_t r1 = arena_stat<uint64_t>(ind, "large.nrequests");
    for (void*& b : blocks) {
      b = malloc(kSize);
      ASSERT_NOT_NULL(b);
    }
    for (void* b : blocks) free(b);
    ASSERT_TRUE(jt::refresh_stats());
    const uint64_t f2 = arena_stat<uint64_t>(ind, "large.nflushes");
    EXPECT_GE(f2, f1 + 1);
    // Once flushed, every request is counted, cache hits included.
    ASSERT_EQ(action("thread.tcache.flush"), 0);
    ASSERT_TRUE(jt::refresh_stats());
    EXPECT_EQ(arena_stat<uint64_t>(ind, "large.nrequests") - r1, 1100u);
    EXPECT_GE(arena_stat<uint64_t>(ind, "large.nflushes"), f2 + nlarge);
  }

  // Flushes count in the cache's arena. Leaving an arena merges the cache's counters there,
  // which 5.3.0 counts as one more flush per large bin (and none for small bins).
  unsigned m = UINT_MAX;
  size_t len = sizeof(m);
  ASSERT_EQ(mallctl("arenas.create", &m, &len, nullptr, 0), 0);
  ASSERT_TRUE(jt::refresh_stats());
  const uint64_t f3 = arena_stat<uint64_t>(ind, "large.nflushes");
  const uint64_t s3 = arena_stat<uint64_t>(ind, "small.nflushes");
  ASSERT_EQ(jt::ctl_set("thread.arena", m), 0);
  ASSERT_EQ(action("thread.tcache.flush"), 0);
  ASSERT_TRUE(jt::refresh_stats());
  EXPECT_EQ(arena_stat<uint64_t>(ind, "large.nflushes") - f3, nlarge);
  EXPECT_EQ(arena_stat<uint64_t>(ind, "small.nflushes"), s3);
  EXPECT_EQ(arena_stat<uint64_t>(m, "large.nflushes"), nlarge);
  EXPECT_EQ(arena_stat<uint64_t>(m, "small.nflushes"), (uint64_t)nbins);
  ASSERT_EQ(jt::ctl_set("thread.arena", ind), 0);
  ASSERT_TRUE(jt::refresh_stats());
  EXPECT_EQ(arena_stat<uint64_t>(m, "large.nflushes"), 2 * nlarge);
  char name[128];
  EXPECT_EQ(action(jt::ctl_name(name, "arena.%u.destroy", m)), 0);
}

TEST(arena_mutex_groups_count_and_reset) {
  if (!stats_built()) SKIP_TEST("built without statistics");
  static const char* const kGroups[] = {
      "large",          "extent_avail", "extents_dirty", "extents_muzzy", "extents_retained",
      "decay_dirty",    "decay_muzzy",  "base",          "tcache_list",   "hpa_shard",
      "hpa_shard_grow", "hpa_sec"};
  static const char* const kCounters[] = {"num_ops",          "num_wait",        "num_spin_acq",
                                          "num_owner_switch", "total_wait_time", "max_wait_time"};
  ASSERT_TRUE(jt::refresh_stats());
  for (size_t ind : {(size_t)0, (size_t)MALLCTL_ARENAS_ALL}) {
    for (const char* g : kGroups) {
      char leaf[96];
      for (const char* c : kCounters) {
        std::snprintf(leaf, sizeof(leaf), "mutexes.%s.%s", g, c);
        arena_stat<uint64_t>(ind, leaf);
      }
      std::snprintf(leaf, sizeof(leaf), "mutexes.%s.max_num_thds", g);
      arena_stat<uint32_t>(ind, leaf);
    }
  }
  // Reading the statistics takes each of arena 0's locks; the HPA is off.
  for (const char* g :
       {"large", "extent_avail", "decay_dirty", "decay_muzzy", "base", "tcache_list"}) {
    if (mutex_ops(0, g) == 0) FAIL_MSG("stats.arenas.0.mutexes.%s.num_ops is 0", g);
  }
  EXPECT_EQ(mutex_ops(0, "hpa_shard"), 0u);

  // A manual arena: its large list, descriptors and decay locks move with its use.
  unsigned m = UINT_MAX;
  size_t len = sizeof(m);
  ASSERT_EQ(mallctl("arenas.create", &m, &len, nullptr, 0), 0);
  ASSERT_TRUE(jt::refresh_stats());
  const uint64_t large0 = mutex_ops(m, "large"), avail0 = mutex_ops(m, "extent_avail");
  const uint64_t decay0 = mutex_ops(m, "decay_dirty"), lists0 = mutex_ops(0, "tcache_list");
  for (int i = 0; i < 20; i++) {
    void* p = mallocx((size_t)1 << 20, MALLOCX_ARENA(m) | MALLOCX_TCACHE_NONE);
    ASSERT_NOT_NULL(p);
    dallocx(p, MALLOCX_TCACHE_NONE);
  }
  char name[128];
  ASSERT_EQ(action(jt::ctl_name(name, "arena.%u.purge", m)), 0);
  // Explicit caches register under the cache list lock.
  for (int i = 0; i < 20; i++) {
    unsigned tc = UINT_MAX;
    ASSERT_EQ(jt::ctl_get("tcache.create", &tc), 0);
    ASSERT_EQ(mallctl("tcache.destroy", nullptr, nullptr, &tc, sizeof(tc)), 0);
  }
  ASSERT_TRUE(jt::refresh_stats());
  EXPECT_GE(mutex_ops(m, "large"), large0 + 40);
  EXPECT_GE(mutex_ops(m, "extent_avail"), avail0 + 2);  // the first one carved a new extent
  EXPECT_GE(mutex_ops(m, "decay_dirty"), decay0 + 2);
  EXPECT_GE(mutex_ops(0, "tcache_list"), lists0 + 40);
  EXPECT_GT(mutex_ops(m, "base"), 0u);

  // stats.mutexes.reset starts them over: only the refresh's own reads count afterwards.
  ASSERT_EQ(action("stats.mutexes.reset"), 0);
  ASSERT_TRUE(jt::refresh_stats());
  for (const char* g : {"large", "extent_avail", "decay_dirty", "decay_muzzy", "base"}) {
    if (mutex_ops(m, g) > 5)
      FAIL_MSG("arena %u mutex %s: %llu ops after reset", m, g,
               (unsigned long long)mutex_ops(m, g));
  }
  EXPECT_LT(mutex_ops(0, "tcache_list"), 40u);
  EXPECT_EQ(action(jt::ctl_name(name, "arena.%u.destroy", m)), 0);
}

TEST(stats_print_reports_internal) {
  if (!stats_built()) SKIP_TEST("built without statistics");
  if (!tcache_on()) SKIP_TEST("no thread cache (tcache:false)");
  struct Sink {
    char text[1 << 16];
    size_t len = 0;
  };
  static Sink sink;
  sink.len = 0;
  malloc_stats_print(
      [](void* opaque, const char* s) {
        auto* k = static_cast<Sink*>(opaque);
        size_t n = std::strlen(s);
        if (k->len + n >= sizeof(k->text)) n = sizeof(k->text) - 1 - k->len;
        std::memcpy(k->text + k->len, s, n);
        k->len += n;
        k->text[k->len] = '\0';
      },
      &sink, "Jgdblxeh");
  // Arena 0 (and the merged view, when printed) carries the cache slots.
  unsigned long long most = 0;
  int seen = 0;
  const char* key = "\"internal\":";
  for (const char* at = std::strstr(sink.text, key); at != nullptr; at = std::strstr(at + 1, key)) {
    unsigned long long v = std::strtoull(at + std::strlen(key), nullptr, 10);
    if (v > most) most = v;
    seen++;
  }
  EXPECT_GT(seen, 0);
  EXPECT_GT(most, 0ull);
}

TEST_COMPAT(explicit_tcache_flush_keeps_the_cache, "explicit-tcache-flush") {
  if (!stats_built()) SKIP_TEST("built without statistics");
  unsigned tc = UINT_MAX;
  ASSERT_EQ(jt::ctl_get("tcache.create", &tc), 0);
  void* p = mallocx(16384, MALLOCX_TCACHE(tc));
  ASSERT_NOT_NULL(p);
  dallocx(p, MALLOCX_TCACHE(tc));
  ASSERT_TRUE(jt::refresh_stats());
  const size_t with_cache = internal_of(0);
  ASSERT_EQ(mallctl("tcache.flush", nullptr, nullptr, &tc, sizeof(tc)), 0);
  ASSERT_TRUE(jt::refresh_stats());
  EXPECT_EQ(internal_of(0), with_cache);  // 5.3.0: the cache's bytes are gone until next use
  ASSERT_EQ(mallctl("tcache.destroy", nullptr, nullptr, &tc, sizeof(tc)), 0);
  ASSERT_TRUE(jt::refresh_stats());
  EXPECT_LT(internal_of(0), with_cache);
}
