// mallctl_test: the mallctl names real programs use (doc/mallctl.md): version, epoch, arenas.*,
// arena.<i>.*, thread.*, tcache.*, stats.*, opt.*, and mallctl's error codes.
#include "harness.h"

namespace {

unsigned narenas() {
  unsigned n = 0;
  jt::ctl_get("arenas.narenas", &n);
  return n;
}

unsigned create_arena() {
  unsigned a = UINT_MAX;
  size_t len = sizeof(a);
  if (mallctl("arenas.create", &a, &len, nullptr, 0) != 0) return UINT_MAX;
  return a;
}

using jt::lookup_arena;

int action(const char* name) { return mallctl(name, nullptr, nullptr, nullptr, 0); }

unsigned ncpus_online() { return (unsigned)sysconf(_SC_NPROCESSORS_ONLN); }

unsigned ncpus_affinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 0;
  return (unsigned)CPU_COUNT(&set);
}

}  // namespace

TEST(version_string) {
  const char* v = nullptr;
  ASSERT_EQ(jt::ctl_get("version", &v), 0);
  ASSERT_NOT_NULL(v);
  EXPECT_EQ(std::strncmp(v, "5.3.0-", 6), 0);
  // The string is "5.3.0-<nrev>-g<gid>".
  const char* g = std::strstr(v, "-g");
  EXPECT_NOT_NULL(g);
}

TEST(epoch_refresh) {
  uint64_t e0 = 0, e1 = 0;
  ASSERT_EQ(jt::ctl_get("epoch", &e0), 0);
  uint64_t w = 12345;  // any value refreshes
  ASSERT_EQ(jt::ctl_set("epoch", w), 0);
  ASSERT_EQ(jt::ctl_get("epoch", &e1), 0);
  EXPECT_GT(e1, e0);
  // Write and read in one call: the new epoch is returned.
  uint64_t e2 = 0;
  size_t len = sizeof(e2);
  ASSERT_EQ(mallctl("epoch", &e2, &len, &w, sizeof(w)), 0);
  EXPECT_GT(e2, e1);
  // Wrong write size.
  uint32_t small = 1;
  EXPECT_EQ(mallctl("epoch", nullptr, nullptr, &small, sizeof(small)), EINVAL);
}

TEST(arenas_narenas_and_opt) {
  unsigned opt = 0;
  ASSERT_EQ(jt::ctl_get("opt.narenas", &opt), 0);
  unsigned n = narenas();
  EXPECT_GE(n, opt);
  EXPECT_GE(opt, 1u);
  long long conf = jt::conf_int("narenas", -1);
  if (conf > 0) {
    EXPECT_EQ(opt, (unsigned)conf);
  } else {
    // 4 arenas per CPU (1 on a single CPU).
    unsigned on = ncpus_online(), af = ncpus_affinity();
    unsigned want_on = on == 1 ? 1 : 4 * on, want_af = af == 1 ? 1 : 4 * af;
    if (opt != want_on && opt != want_af) {
      FAIL_MSG("opt.narenas %u, expected 4 x CPUs (%u online, %u in affinity mask)", opt, on, af);
    }
  }
}

TEST(arenas_create_and_lookup) {
  unsigned before = narenas();
  unsigned a = create_arena();
  ASSERT_NE(a, UINT_MAX);
  EXPECT_GE(a, before);  // manual arenas come after the automatic ones
  EXPECT_EQ(narenas(), a + 1);
  void* small = mallocx(64, MALLOCX_ARENA(a) | MALLOCX_TCACHE_NONE);
  void* large = mallocx(100000, MALLOCX_ARENA(a));
  ASSERT_NOT_NULL(small);
  ASSERT_NOT_NULL(large);
  EXPECT_EQ(lookup_arena(small), a);
  EXPECT_EQ(lookup_arena(large), a);
  // Statistics (and arena.<i>.initialized, which is part of the snapshot)
  // see arena a after an epoch write.
  jt::refresh_stats();
  bool init = false;
  char name[128];
  EXPECT_EQ(jt::ctl_get(jt::ctl_name(name, "arena.%u.initialized", a), &init), 0);
  EXPECT_TRUE(init);
  size_t large_alloc = 0;
  EXPECT_EQ(jt::ctl_get(jt::ctl_name(name, "stats.arenas.%u.large.allocated", a), &large_alloc), 0);
  EXPECT_GE(large_alloc, nallocx(100000, 0));
  dallocx(small, MALLOCX_TCACHE_NONE);
  dallocx(large, 0);
  // A pointer from malloc lives in some existing arena.
  void* p = malloc(10);
  ASSERT_NOT_NULL(p);
  EXPECT_LT(lookup_arena(p), narenas());
  free(p);
}

TEST(arenas_create_wrong_oldlen) {
  unsigned before = narenas();
  uint64_t wide = 0;
  size_t len = sizeof(wide);
  EXPECT_EQ(mallctl("arenas.create", &wide, &len, nullptr, 0), EINVAL);
  EXPECT_EQ(len, 0u);
  EXPECT_EQ(narenas(), before);  // nothing was created
}

TEST(arena_purge_and_decay) {
  unsigned a = create_arena();
  ASSERT_NE(a, UINT_MAX);
  void* p = mallocx(1 << 20, MALLOCX_ARENA(a));
  ASSERT_NOT_NULL(p);
  std::memset(p, 1, 1 << 20);
  dallocx(p, 0);
  char name[128];
  EXPECT_EQ(action(jt::ctl_name(name, "arena.%u.decay", a)), 0);
  EXPECT_EQ(action(jt::ctl_name(name, "arena.%u.purge", a)), 0);
  // After a purge the arena holds no dirty pages.
  jt::refresh_stats();
  size_t pdirty = 1;
  EXPECT_EQ(jt::ctl_get(jt::ctl_name(name, "stats.arenas.%u.pdirty", a), &pdirty), 0);
  EXPECT_EQ(pdirty, 0u);
  // All arenas: MALLCTL_ARENAS_ALL and the deprecated narenas alias.
  EXPECT_EQ(action(jt::ctl_name(name, "arena.%d.purge", MALLCTL_ARENAS_ALL)), 0);
  EXPECT_EQ(action(jt::ctl_name(name, "arena.%d.decay", MALLCTL_ARENAS_ALL)), 0);
  EXPECT_EQ(action(jt::ctl_name(name, "arena.%u.purge", narenas())), 0);
  EXPECT_EQ(action(jt::ctl_name(name, "arena.%u.decay", narenas())), 0);
  // By MIB, as ClickHouse does.
  size_t mib[3];
  size_t miblen = 3;
  ASSERT_EQ(mallctlnametomib("arena.0.purge", mib, &miblen), 0);
  mib[1] = MALLCTL_ARENAS_ALL;
  EXPECT_EQ(mallctlbymib(mib, miblen, nullptr, nullptr, nullptr, 0), 0);
  // An index past the arenas (and not a special one): ENOENT.
  EXPECT_EQ(action(jt::ctl_name(name, "arena.%u.purge", narenas() + 1)), ENOENT);
  EXPECT_EQ(action("arena.4000.purge"), ENOENT);
}

TEST(arena_decay_ms) {
  unsigned a = create_arena();
  ASSERT_NE(a, UINT_MAX);
  char name[128];
  ssize_t d = 0;
  ASSERT_EQ(jt::ctl_get(jt::ctl_name(name, "arena.%u.dirty_decay_ms", a), &d), 0);
  ssize_t dflt = 0;
  ASSERT_EQ(jt::ctl_get("arenas.dirty_decay_ms", &dflt), 0);
  EXPECT_EQ(d, dflt);  // new arenas start with arenas.dirty_decay_ms
  EXPECT_EQ(jt::ctl_set(jt::ctl_name(name, "arena.%u.dirty_decay_ms", a), (ssize_t)1234), 0);
  ASSERT_EQ(jt::ctl_get(name, &d), 0);
  EXPECT_EQ(d, 1234);
  EXPECT_EQ(jt::ctl_set(jt::ctl_name(name, "arena.%u.muzzy_decay_ms", a), (ssize_t)-1), 0);
  ASSERT_EQ(jt::ctl_get(name, &d), 0);
  EXPECT_EQ(d, -1);
  // Values below -1 are rejected.
  EXPECT_EQ(jt::ctl_set(name, (ssize_t)-2), EFAULT);
  // "All arenas" is not supported here.
  EXPECT_EQ(
      jt::ctl_set(jt::ctl_name(name, "arena.%d.dirty_decay_ms", MALLCTL_ARENAS_ALL), (ssize_t)1000),
      EFAULT);
  // arenas.dirty_decay_ms: default for arenas created later.
  ssize_t saved = dflt;
  EXPECT_EQ(jt::ctl_set("arenas.dirty_decay_ms", (ssize_t)4321), 0);
  unsigned b = create_arena();
  ASSERT_NE(b, UINT_MAX);
  ASSERT_EQ(jt::ctl_get(jt::ctl_name(name, "arena.%u.dirty_decay_ms", b), &d), 0);
  EXPECT_EQ(d, 4321);
  EXPECT_EQ(jt::ctl_set("arenas.dirty_decay_ms", saved), 0);
  ssize_t opt = 0;
  ASSERT_EQ(jt::ctl_get("opt.dirty_decay_ms", &opt), 0);
  EXPECT_EQ(opt, jt::conf_int("dirty_decay_ms", 10000));
  ASSERT_EQ(jt::ctl_get("opt.muzzy_decay_ms", &opt), 0);
  EXPECT_EQ(opt, jt::conf_int("muzzy_decay_ms", 0));
}

TEST(arena_destroy) {
  unsigned a = create_arena();
  ASSERT_NE(a, UINT_MAX);
  void* p = mallocx(5000, MALLOCX_ARENA(a) | MALLOCX_TCACHE_NONE);
  ASSERT_NOT_NULL(p);
  dallocx(p, MALLOCX_TCACHE_NONE);
  char name[128];
  EXPECT_EQ(action(jt::ctl_name(name, "arena.%u.destroy", a)), 0);
  // Automatic arenas cannot be destroyed.
  EXPECT_EQ(action("arena.0.destroy"), EFAULT);
  // The destroyed arena's index is handed out again.
  unsigned b = create_arena();
  EXPECT_EQ(b, a);
  p = mallocx(5000, MALLOCX_ARENA(b) | MALLOCX_TCACHE_NONE);
  ASSERT_NOT_NULL(p);
  EXPECT_EQ(lookup_arena(p), b);
  dallocx(p, MALLOCX_TCACHE_NONE);
  // With several destroyed, the most recently destroyed index comes back first.
  unsigned c = create_arena();
  ASSERT_NE(c, UINT_MAX);
  EXPECT_EQ(action(jt::ctl_name(name, "arena.%u.destroy", b)), 0);
  EXPECT_EQ(action(jt::ctl_name(name, "arena.%u.destroy", c)), 0);
  EXPECT_EQ(create_arena(), c);
  EXPECT_EQ(create_arena(), b);
  EXPECT_EQ(action(jt::ctl_name(name, "arena.%u.destroy", b)), 0);
  EXPECT_EQ(action(jt::ctl_name(name, "arena.%u.destroy", c)), 0);
}

TEST(thread_arena) {
  unsigned cur = UINT_MAX;
  ASSERT_EQ(jt::ctl_get("thread.arena", &cur), 0);
  EXPECT_LT(cur, narenas());
  unsigned a = create_arena();
  ASSERT_NE(a, UINT_MAX);
  unsigned old = UINT_MAX;
  size_t len = sizeof(old);
  ASSERT_EQ(mallctl("thread.arena", &old, &len, &a, sizeof(a)), 0);
  EXPECT_EQ(old, cur);
  unsigned now = UINT_MAX;
  ASSERT_EQ(jt::ctl_get("thread.arena", &now), 0);
  EXPECT_EQ(now, a);
  // Allocations not served from the tcache now come from arena a.
  void* p = malloc(1 << 20);
  ASSERT_NOT_NULL(p);
  EXPECT_EQ(lookup_arena(p), a);
  free(p);
  p = mallocx(200, MALLOCX_TCACHE_NONE);
  ASSERT_NOT_NULL(p);
  EXPECT_EQ(lookup_arena(p), a);
  dallocx(p, MALLOCX_TCACHE_NONE);
  // Out of range: EFAULT, binding unchanged.
  unsigned bad = narenas() + 10;
  EXPECT_EQ(jt::ctl_set("thread.arena", bad), EFAULT);
  ASSERT_EQ(jt::ctl_get("thread.arena", &now), 0);
  EXPECT_EQ(now, a);
  EXPECT_EQ(jt::ctl_set("thread.arena", cur), 0);
}

namespace {

struct CounterShare {
  pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
  int stage = 0;
  uint64_t* allocatedp = nullptr;
  uint64_t* deallocatedp = nullptr;
  void* block = nullptr;
};

void wait_stage(CounterShare* s, int stage) {
  pthread_mutex_lock(&s->mu);
  while (s->stage < stage) pthread_cond_wait(&s->cv, &s->mu);
  pthread_mutex_unlock(&s->mu);
}

void set_stage(CounterShare* s, int stage) {
  pthread_mutex_lock(&s->mu);
  s->stage = stage;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
}

void* counter_thread(void* arg) {
  CounterShare* s = static_cast<CounterShare*>(arg);
  size_t len = sizeof(s->allocatedp);
  mallctl("thread.allocatedp", &s->allocatedp, &len, nullptr, 0);
  len = sizeof(s->deallocatedp);
  mallctl("thread.deallocatedp", &s->deallocatedp, &len, nullptr, 0);
  set_stage(s, 1);
  wait_stage(s, 2);
  s->block = malloc(1000);
  jt::escape(s->block);
  set_stage(s, 3);
  wait_stage(s, 4);
  free(s->block);
  set_stage(s, 5);
  wait_stage(s, 6);
  return nullptr;
}

}  // namespace

TEST(thread_allocated_counters) {
  uint64_t a0 = 0, a1 = 0, d0 = 0, d1 = 0;
  ASSERT_EQ(jt::ctl_get("thread.allocated", &a0), 0);
  ASSERT_EQ(jt::ctl_get("thread.deallocated", &d0), 0);
  void* p = malloc(1);  // folly's jemalloc detection
  jt::escape(p);
  ASSERT_EQ(jt::ctl_get("thread.allocated", &a1), 0);
  EXPECT_EQ(a1 - a0, 8u);
  free(p);
  ASSERT_EQ(jt::ctl_get("thread.deallocated", &d1), 0);
  EXPECT_EQ(d1 - d0, 8u);

  uint64_t *ap = nullptr, *dp = nullptr;
  ASSERT_EQ(jt::ctl_get("thread.allocatedp", &ap), 0);
  ASSERT_EQ(jt::ctl_get("thread.deallocatedp", &dp), 0);
  ASSERT_NOT_NULL(ap);
  ASSERT_NOT_NULL(dp);
  uint64_t before = *ap;
  p = malloc(1);
  jt::escape(p);
  EXPECT_EQ(*ap - before, 8u);  // the pointer reads the live counter
  uint64_t dbefore = *dp;
  free(p);
  EXPECT_EQ(*dp - dbefore, 8u);
  uint64_t* ap2 = nullptr;
  ASSERT_EQ(jt::ctl_get("thread.allocatedp", &ap2), 0);
  EXPECT_EQ(ap2, ap);  // stable for the thread's life
  // Large allocations count their usable size too.
  before = *ap;
  p = malloc(100000);
  jt::escape(p);
  EXPECT_EQ(*ap - before, nallocx(100000, 0));
  free(p);
  // Read-only.
  uint64_t v = 0;
  EXPECT_EQ(jt::ctl_set("thread.allocated", v), EPERM);
}

TEST(thread_allocated_read_from_other_thread) {
  CounterShare s;
  pthread_t t;
  ASSERT_EQ(pthread_create(&t, nullptr, counter_thread, &s), 0);
  wait_stage(&s, 1);
  EXPECT_NOT_NULL(s.allocatedp);
  EXPECT_NOT_NULL(s.deallocatedp);
  uint64_t* mine = nullptr;
  jt::ctl_get("thread.allocatedp", &mine);
  if (s.allocatedp != nullptr && s.deallocatedp != nullptr) {
    EXPECT_NE(s.allocatedp, mine);  // per-thread counters
    uint64_t a0 = *s.allocatedp;
    set_stage(&s, 2);
    wait_stage(&s, 3);
    EXPECT_EQ(*s.allocatedp - a0, nallocx(1000, 0));
    uint64_t d0 = *s.deallocatedp;
    set_stage(&s, 4);
    wait_stage(&s, 5);
    EXPECT_EQ(*s.deallocatedp - d0, nallocx(1000, 0));
  } else {
    set_stage(&s, 4);
  }
  set_stage(&s, 6);
  pthread_join(t, nullptr);
}

TEST(thread_tcache_enabled_and_flush) {
  bool opt = false, en = false;
  ASSERT_EQ(jt::ctl_get("opt.tcache", &opt), 0);
  EXPECT_EQ(opt, jt::conf_bool("tcache", true));
  ASSERT_EQ(jt::ctl_get("thread.tcache.enabled", &en), 0);
  EXPECT_EQ(en, opt);
  if (opt) {
    EXPECT_EQ(action("thread.tcache.flush"), 0);
    // Disable, check, re-enable.
    EXPECT_EQ(jt::ctl_set("thread.tcache.enabled", false), 0);
    ASSERT_EQ(jt::ctl_get("thread.tcache.enabled", &en), 0);
    EXPECT_FALSE(en);
    void* p = malloc(100);  // still works without a cache
    ASSERT_NOT_NULL(p);
    free(p);
    EXPECT_EQ(action("thread.tcache.flush"), EFAULT);  // no cache to flush
    bool old = true;
    size_t len = sizeof(old);
    bool on = true;
    EXPECT_EQ(mallctl("thread.tcache.enabled", &old, &len, &on, sizeof(on)), 0);
    EXPECT_FALSE(old);
    ASSERT_EQ(jt::ctl_get("thread.tcache.enabled", &en), 0);
    EXPECT_TRUE(en);
    EXPECT_EQ(action("thread.tcache.flush"), 0);
  } else {
    EXPECT_EQ(action("thread.tcache.flush"), EFAULT);
  }
  // A freed small block is reused by the next same-class request when the
  // tcache is on (LIFO).
  if (opt) {
    void* p = malloc(48);
    free(p);
    void* q = malloc(48);
    EXPECT_EQ(q, p);
    free(q);
  }
}

TEST(tcache_create_flush_destroy) {
  unsigned tc = UINT_MAX;
  ASSERT_EQ(jt::ctl_get("tcache.create", &tc), 0);
  void* p = mallocx(200, MALLOCX_TCACHE(tc));
  ASSERT_NOT_NULL(p);
  dallocx(p, MALLOCX_TCACHE(tc));
  EXPECT_EQ(mallctl("tcache.flush", nullptr, nullptr, &tc, sizeof(tc)), 0);
  unsigned tc2 = UINT_MAX;
  ASSERT_EQ(jt::ctl_get("tcache.create", &tc2), 0);
  EXPECT_NE(tc2, tc);
  EXPECT_EQ(mallctl("tcache.destroy", nullptr, nullptr, &tc, sizeof(tc)), 0);
  EXPECT_EQ(mallctl("tcache.destroy", nullptr, nullptr, &tc2, sizeof(tc2)), 0);
  // Flushing a destroyed index is a harmless no-op in 5.3.0.
  EXPECT_EQ(mallctl("tcache.flush", nullptr, nullptr, &tc, sizeof(tc)), 0);
  // Destroyed indices are reused, the most recently destroyed first (5.3.0's free list).
  unsigned tc3 = UINT_MAX, tc4 = UINT_MAX;
  ASSERT_EQ(jt::ctl_get("tcache.create", &tc3), 0);
  ASSERT_EQ(jt::ctl_get("tcache.create", &tc4), 0);
  EXPECT_EQ(tc3, tc2);
  EXPECT_EQ(tc4, tc);
  EXPECT_EQ(mallctl("tcache.destroy", nullptr, nullptr, &tc3, sizeof(tc3)), 0);
  EXPECT_EQ(mallctl("tcache.destroy", nullptr, nullptr, &tc4, sizeof(tc4)), 0);
  // tcache.flush/destroy are write-only.
  unsigned out = 0;
  size_t len = sizeof(out);
  EXPECT_EQ(mallctl("tcache.flush", &out, &len, nullptr, 0), EPERM);
  // RocksDB's pattern: a tcache per arena, destroyed before the arena.
  unsigned a = create_arena();
  ASSERT_NE(a, UINT_MAX);
  ASSERT_EQ(jt::ctl_get("tcache.create", &tc), 0);
  void* blocks[100];
  for (int i = 0; i < 100; i++) {
    blocks[i] = mallocx(64 + (size_t)i * 100, MALLOCX_ARENA(a) | MALLOCX_TCACHE(tc));
    ASSERT_NOT_NULL(blocks[i]);
  }
  for (int i = 0; i < 100; i++) dallocx(blocks[i], MALLOCX_TCACHE(tc));
  EXPECT_EQ(mallctl("tcache.destroy", nullptr, nullptr, &tc, sizeof(tc)), 0);
  char name[128];
  EXPECT_EQ(action(jt::ctl_name(name, "arena.%u.destroy", a)), 0);
}

TEST(stats_invariants) {
  ASSERT_TRUE(jt::refresh_stats());
  size_t allocated = 0, active = 0, resident = 0, mapped = 0, retained = 0, metadata = 0;
  ASSERT_EQ(jt::ctl_get("stats.allocated", &allocated), 0);
  ASSERT_EQ(jt::ctl_get("stats.active", &active), 0);
  ASSERT_EQ(jt::ctl_get("stats.resident", &resident), 0);
  ASSERT_EQ(jt::ctl_get("stats.mapped", &mapped), 0);
  ASSERT_EQ(jt::ctl_get("stats.retained", &retained), 0);
  ASSERT_EQ(jt::ctl_get("stats.metadata", &metadata), 0);
  EXPECT_GT(allocated, 0u);
  EXPECT_LE(allocated, active);
  EXPECT_LE(active, resident);
  EXPECT_LE(active, mapped);
  EXPECT_GT(metadata, 0u);
  EXPECT_EQ(active % 4096, 0u);
  EXPECT_EQ(mapped % 4096, 0u);
  EXPECT_EQ(retained % 4096, 0u);
  // Per-arena pages, all-arenas view and its alias.
  char name[128];
  size_t pactive = 0, pactive_alias = 0;
  EXPECT_EQ(
      jt::ctl_get(jt::ctl_name(name, "stats.arenas.%d.pactive", MALLCTL_ARENAS_ALL), &pactive), 0);
  EXPECT_EQ(jt::ctl_get(jt::ctl_name(name, "stats.arenas.%u.pactive", narenas()), &pactive_alias),
            0);
  EXPECT_EQ(pactive, pactive_alias);
  EXPECT_EQ(pactive * 4096, active);
}

TEST(stats_follow_allocation) {
  ASSERT_TRUE(jt::refresh_stats());
  size_t a0 = 0, act0 = 0;
  ASSERT_EQ(jt::ctl_get("stats.allocated", &a0), 0);
  ASSERT_EQ(jt::ctl_get("stats.active", &act0), 0);
  const size_t kBig = (size_t)4 << 20;
  void* p = malloc(kBig);
  ASSERT_NOT_NULL(p);
  std::memset(p, 3, kBig);
  ASSERT_TRUE(jt::refresh_stats());
  size_t a1 = 0, act1 = 0, res1 = 0;
  ASSERT_EQ(jt::ctl_get("stats.allocated", &a1), 0);
  ASSERT_EQ(jt::ctl_get("stats.active", &act1), 0);
  ASSERT_EQ(jt::ctl_get("stats.resident", &res1), 0);
  EXPECT_GE(a1, a0 + kBig);
  EXPECT_GE(act1, act0 + kBig);
  EXPECT_GE(res1, act1);
  // Without an epoch write, the values stay as they were.
  free(p);
  size_t a_stale = 0;
  ASSERT_EQ(jt::ctl_get("stats.allocated", &a_stale), 0);
  EXPECT_EQ(a_stale, a1);
  ASSERT_TRUE(jt::refresh_stats());
  size_t a2 = 0;
  ASSERT_EQ(jt::ctl_get("stats.allocated", &a2), 0);
  EXPECT_LE(a2 + kBig, a1);
}

TEST(opt_main_options) {
  bool b = true;
  EXPECT_EQ(jt::ctl_get("opt.abort", &b), 0);
  EXPECT_FALSE(b);
  EXPECT_EQ(jt::ctl_get("opt.abort_conf", &b), 0);
  EXPECT_FALSE(b);
  EXPECT_EQ(jt::ctl_get("opt.confirm_conf", &b), 0);
  EXPECT_FALSE(b);
  EXPECT_EQ(jt::ctl_get("opt.background_thread", &b), 0);
  EXPECT_EQ(b, jt::conf_bool("background_thread", false));
  EXPECT_EQ(jt::ctl_get("opt.retain", &b), 0);
  EXPECT_TRUE(b);
  // A build property: true unless configured --disable-cache-oblivious (config.* says which).
  bool co = false;
  EXPECT_EQ(jt::ctl_get("config.cache_oblivious", &co), 0);
  EXPECT_EQ(jt::ctl_get("opt.cache_oblivious", &b), 0);
  EXPECT_EQ(b, co);
  EXPECT_EQ(jt::ctl_get("opt.zero", &b), 0);
  EXPECT_FALSE(b);
  EXPECT_EQ(jt::ctl_get("opt.stats_print", &b), 0);
  EXPECT_FALSE(b);
  EXPECT_EQ(jt::ctl_get("opt.hpa", &b), 0);
  EXPECT_FALSE(b);
  EXPECT_EQ(jt::ctl_get("opt.trust_madvise", &b), 0);
  EXPECT_FALSE(b);
  EXPECT_EQ(jt::ctl_get("opt.tcache", &b), 0);
  EXPECT_EQ(b, jt::conf_bool("tcache", true));

  struct StrOpt {
    const char* name;
    const char* want;
  };
  static const StrOpt strs[] = {
      {"opt.dss", "secondary"},         {"opt.junk", "false"},
      {"opt.zero_realloc", "free"},     {"opt.thp", "default"},
      {"opt.metadata_thp", "disabled"}, {"opt.percpu_arena", "disabled"},
      {"opt.stats_print_opts", ""},     {"opt.stats_interval_opts", ""},
  };
  for (const StrOpt& o : strs) {
    const char* v = nullptr;
    EXPECT_EQ(jt::ctl_get(o.name, &v), 0);
    if (v == nullptr || std::strcmp(v, o.want) != 0) {
      FAIL_MSG("%s = \"%s\", expected \"%s\"", o.name, v ? v : "(null)", o.want);
    }
  }

  size_t z = 0;
  EXPECT_EQ(jt::ctl_get("opt.oversize_threshold", &z), 0);
  EXPECT_EQ(z, (size_t)8 << 20);
  EXPECT_EQ(jt::ctl_get("opt.lg_extent_max_active_fit", &z), 0);
  EXPECT_EQ(z, 6u);
  EXPECT_EQ(jt::ctl_get("opt.tcache_max", &z), 0);
  EXPECT_EQ(z, 32768u);
  EXPECT_EQ(jt::ctl_get("opt.tcache_gc_incr_bytes", &z), 0);
  EXPECT_EQ(z, 65536u);
  ssize_t s = 0;
  EXPECT_EQ(jt::ctl_get("opt.dirty_decay_ms", &s), 0);
  EXPECT_EQ(s, jt::conf_int("dirty_decay_ms", 10000));
  EXPECT_EQ(jt::ctl_get("opt.muzzy_decay_ms", &s), 0);
  EXPECT_EQ(s, jt::conf_int("muzzy_decay_ms", 0));
  EXPECT_EQ(jt::ctl_get("opt.lg_tcache_nslots_mul", &s), 0);
  EXPECT_EQ(s, 1);
  int64_t i64 = 0;
  EXPECT_EQ(jt::ctl_get("opt.stats_interval", &i64), 0);
  EXPECT_EQ(i64, -1);
  EXPECT_EQ(jt::ctl_get("opt.mutex_max_spin", &i64), 0);
  EXPECT_EQ(i64, 600);
  unsigned u = 0;
  EXPECT_EQ(jt::ctl_get("opt.tcache_nslots_small_min", &u), 0);
  EXPECT_EQ(u, 20u);
  EXPECT_EQ(jt::ctl_get("opt.tcache_nslots_small_max", &u), 0);
  EXPECT_EQ(u, 200u);
  EXPECT_EQ(jt::ctl_get("opt.tcache_nslots_large", &u), 0);
  EXPECT_EQ(u, 20u);
  // Options are read-only at run time.
  EXPECT_EQ(jt::ctl_set("opt.tcache", false), EPERM);
  EXPECT_EQ(jt::ctl_set("opt.dirty_decay_ms", (ssize_t)5), EPERM);
  // Features 5.3.0 (Debian) was built without.
  EXPECT_EQ(jt::ctl_get("opt.utrace", &b), ENOENT);
  EXPECT_EQ(jt::ctl_get("opt.xmalloc", &b), ENOENT);
}

// Ours: the run-time switch for the coalescing bound (README.md), absent
// from 5.3.0.
TEST_COMPAT(opt_bounded_coalesce, "bounded-coalesce") {
  bool b = false;
  ASSERT_EQ(jt::ctl_get("opt.bounded_coalesce", &b), 0);
  EXPECT_EQ(b, jt::conf_bool("bounded_coalesce", true));
  EXPECT_EQ(jt::ctl_set("opt.bounded_coalesce", true), EPERM);
}

// Ours: whether dirty reuse may ignore lg_extent_max_active_fit before growing.
TEST_COMPAT(opt_reuse_before_grow, "reuse-before-grow") {
  bool b = false;
  ASSERT_EQ(jt::ctl_get("opt.reuse_before_grow", &b), 0);
  EXPECT_EQ(b, jt::conf_bool("reuse_before_grow", true));
  EXPECT_EQ(jt::ctl_set("opt.reuse_before_grow", true), EPERM);
}

// Ours: whether a large allocation may use another automatic arena's cached pages.
TEST_COMPAT(opt_borrow_dirty, "borrow-dirty") {
  bool b = false;
  ASSERT_EQ(jt::ctl_get("opt.borrow_dirty", &b), 0);
  EXPECT_EQ(b, jt::conf_bool("borrow_dirty", true));
  EXPECT_EQ(jt::ctl_set("opt.borrow_dirty", true), EPERM);
}

// Ours: whether free extents are reused best fit.
TEST_COMPAT(opt_extent_best_fit, "extent-best-fit") {
  bool b = false;
  ASSERT_EQ(jt::ctl_get("opt.extent_best_fit", &b), 0);
  EXPECT_EQ(b, jt::conf_bool("extent_best_fit", true));
  EXPECT_EQ(jt::ctl_set("opt.extent_best_fit", true), EPERM);
}

// Ours: whether growth purges idle dirty pages.
TEST_COMPAT(opt_purge_on_grow, "purge-on-grow") {
  bool b = false;
  ASSERT_EQ(jt::ctl_get("opt.purge_on_grow", &b), 0);
  EXPECT_EQ(b, jt::conf_bool("purge_on_grow", false));
  EXPECT_EQ(jt::ctl_set("opt.purge_on_grow", true), EPERM);
}

TEST(error_einval_wrong_oldlen) {
  // Too wide: 4 bytes copied, *oldlenp says 4.
  uint64_t wide = 0xdeadbeefdeadbeefull;
  size_t len = sizeof(wide);
  unsigned narenas_opt = 0;
  ASSERT_EQ(jt::ctl_get("opt.narenas", &narenas_opt), 0);
  EXPECT_EQ(mallctl("opt.narenas", &wide, &len, nullptr, 0), EINVAL);
  EXPECT_EQ(len, sizeof(unsigned));
  EXPECT_EQ((uint32_t)wide, narenas_opt);          // the value was copied
  EXPECT_EQ((uint32_t)(wide >> 32), 0xdeadbeefu);  // and nothing beyond it
  // Too narrow: as much as fits is copied (Arrow probes uint64 then uint32).
  jt::refresh_stats();
  size_t allocated = 0;
  ASSERT_EQ(jt::ctl_get("stats.allocated", &allocated), 0);
  uint32_t narrow = 0;
  len = sizeof(narrow);
  EXPECT_EQ(mallctl("stats.allocated", &narrow, &len, nullptr, 0), EINVAL);
  EXPECT_EQ(len, sizeof(narrow));
  EXPECT_EQ(narrow, (uint32_t)allocated);
  // Strings (pointers) too.
  uint32_t half = 0;
  len = sizeof(half);
  EXPECT_EQ(mallctl("version", &half, &len, nullptr, 0), EINVAL);
  // Wrong newlen.
  uint32_t en = 1;
  EXPECT_EQ(mallctl("thread.tcache.enabled", nullptr, nullptr, &en, sizeof(en)), EINVAL);
  uint64_t big_arena = 0;
  EXPECT_EQ(mallctl("thread.arena", nullptr, nullptr, &big_arena, sizeof(big_arena)), EINVAL);
}

TEST(error_enoent) {
  size_t v = 0;
  EXPECT_EQ(jt::ctl_get("no.such.name", &v), ENOENT);
  EXPECT_EQ(jt::ctl_get("opt.no_such_option", &v), ENOENT);
  EXPECT_EQ(jt::ctl_get("stats", &v), ENOENT);  // interior node
  EXPECT_EQ(jt::ctl_get("arenas.bin", &v), ENOENT);
  EXPECT_EQ(jt::ctl_get("arenas.bin.99.size", &v), ENOENT);
  EXPECT_EQ(jt::ctl_get("stats.arenas.0.extents.199.dirty_bytes", &v), ENOENT);
  EXPECT_EQ(jt::ctl_get("stats.arenas.0.extents.198.dirty_bytes", &v), 0);
  // Misspelled by ClickHouse; must stay unknown.
  uint64_t u = 0;
  EXPECT_EQ(jt::ctl_get("stats.background_thread.run_intervals", &u), ENOENT);
  EXPECT_EQ(jt::ctl_get("stats.arenas.0.small.resident", &v), ENOENT);
  size_t mib[8];
  size_t miblen = 8;
  EXPECT_EQ(mallctlnametomib("no.such.name", mib, &miblen), ENOENT);
  miblen = 8;
  EXPECT_EQ(mallctlnametomib("arenas.bin.99.size", mib, &miblen), ENOENT);
}

TEST(error_eperm) {
  const char* sv = "x";
  EXPECT_EQ(jt::ctl_set("version", sv), EPERM);
  size_t z = 1;
  EXPECT_EQ(jt::ctl_set("arenas.page", z), EPERM);
  EXPECT_EQ(jt::ctl_set("stats.allocated", z), EPERM);
  unsigned u = 1;
  EXPECT_EQ(jt::ctl_set("opt.narenas", u), EPERM);
  EXPECT_EQ(jt::ctl_set("arenas.narenas", u), EPERM);
  // Reading a write-only (void) node.  (thread.tcache.flush first checks
  // that the thread has a cache: EFAULT without one.)
  bool dummy = false;
  size_t len = sizeof(dummy);
  EXPECT_EQ(mallctl("thread.tcache.flush", &dummy, &len, nullptr, 0),
            jt::conf_bool("tcache", true) ? EPERM : EFAULT);
  len = sizeof(dummy);
  EXPECT_EQ(mallctl("arena.0.purge", &dummy, &len, nullptr, 0), EPERM);
}

TEST(nametomib_and_bymib) {
  size_t mib[2];
  size_t miblen = 2;
  ASSERT_EQ(mallctlnametomib("stats.allocated", mib, &miblen), 0);
  EXPECT_EQ(miblen, 2u);
  jt::refresh_stats();
  size_t a = 0, b = 0, len = sizeof(a);
  EXPECT_EQ(mallctlbymib(mib, miblen, &a, &len, nullptr, 0), 0);
  EXPECT_EQ(jt::ctl_get("stats.allocated", &b), 0);
  EXPECT_EQ(a, b);
  // epoch by MIB (ClickHouse).
  size_t emib[1];
  size_t elen = 1;
  ASSERT_EQ(mallctlnametomib("epoch", emib, &elen), 0);
  uint64_t e = 1, eo = 0;
  len = sizeof(eo);
  EXPECT_EQ(mallctlbymib(emib, elen, &eo, &len, &e, sizeof(e)), 0);
  EXPECT_GT(eo, 0u);
  // thread.allocatedp by MIB (HHVM).
  size_t tmib[2];
  size_t tlen = 2;
  ASSERT_EQ(mallctlnametomib("thread.allocatedp", tmib, &tlen), 0);
  uint64_t *p1 = nullptr, *p2 = nullptr;
  len = sizeof(p1);
  EXPECT_EQ(mallctlbymib(tmib, tlen, &p1, &len, nullptr, 0), 0);
  EXPECT_EQ(jt::ctl_get("thread.allocatedp", &p2), 0);
  EXPECT_EQ(p1, p2);
}

namespace {

struct PrintSink {
  size_t calls = 0;
  size_t bytes = 0;
  char head[64] = {0};
  size_t head_len = 0;
  bool saw_begin = false;
  bool saw_end = false;
  char tail[64] = {0};
};

void sink_cb(void* opaque, const char* s) {
  PrintSink* k = static_cast<PrintSink*>(opaque);
  size_t n = std::strlen(s);
  k->calls++;
  k->bytes += n;
  for (size_t i = 0; i < n && k->head_len < sizeof(k->head) - 1; i++) k->head[k->head_len++] = s[i];
  if (std::strstr(s, "Begin jemalloc statistics") != nullptr) k->saw_begin = true;
  if (std::strstr(s, "End jemalloc statistics") != nullptr) k->saw_end = true;
  // A marker may straddle two chunks (where the output buffer happens to fill up): look for it
  // in the previous chunk's tail followed by this chunk's head too.
  char seam[128];
  size_t tl = std::strlen(k->tail), hl = n < sizeof(seam) - 1 - tl ? n : sizeof(seam) - 1 - tl;
  std::memcpy(seam, k->tail, tl);
  std::memcpy(seam + tl, s, hl);
  seam[tl + hl] = '\0';
  if (std::strstr(seam, "Begin jemalloc statistics") != nullptr) k->saw_begin = true;
  if (std::strstr(seam, "End jemalloc statistics") != nullptr) k->saw_end = true;
  size_t keep = n < sizeof(k->tail) - 1 ? n : sizeof(k->tail) - 1;
  std::memcpy(k->tail, s + n - keep, keep);
  k->tail[keep] = '\0';
}

}  // namespace

TEST(malloc_stats_print_callback) {
  PrintSink text;
  malloc_stats_print(sink_cb, &text, nullptr);
  EXPECT_GT(text.calls, 0u);
  EXPECT_GT(text.bytes, 100u);
  EXPECT_TRUE(text.saw_begin);
  EXPECT_TRUE(text.saw_end);
  PrintSink json;
  malloc_stats_print(sink_cb, &json, "J");
  EXPECT_GT(json.bytes, 100u);
  EXPECT_EQ(json.head[0], '{');
  EXPECT_NOT_NULL(std::strstr(json.head, "\"jemalloc\""));
  EXPECT_FALSE(json.saw_begin);
  // Section letters only omit parts: everything off still prints something.
  PrintSink small;
  malloc_stats_print(sink_cb, &small, "gmdablxeh");
  EXPECT_GT(small.calls, 0u);
  EXPECT_LT(small.bytes, text.bytes);
}

// experimental.utilization.{query,batch_query}: 5.3.0's layouts and answers for small blocks
// in a slab and for a large block (a manual arena without caches, so the slab's and the bin's
// counts are exactly what this test allocated).
struct UtilVerbose {
  void* slabcur_addr;
  size_t nfree, nregs, size, bin_nfree, bin_nregs;
};
struct Util {
  size_t nfree, nregs, size;
};

TEST(experimental_utilization_query) {
  unsigned a = create_arena();
  ASSERT_NE(a, UINT_MAX);
  const int flags = MALLOCX_ARENA(a) | MALLOCX_TCACHE_NONE;
  uint32_t nregs = 0;
  size_t slab = 0;
  ASSERT_EQ(jt::ctl_get("arenas.bin.4.nregs", &nregs), 0);  // the 64-byte class
  ASSERT_EQ(jt::ctl_get("arenas.bin.4.slab_size", &slab), 0);
  void* small[3];
  for (void*& p : small) {
    p = mallocx(64, flags);
    ASSERT_NOT_NULL(p);
  }
  void* large = mallocx(100000, flags);
  ASSERT_NOT_NULL(large);

  UtilVerbose v{};
  size_t len = sizeof(v);
  ASSERT_EQ(mallctl("experimental.utilization.query", &v, &len, &small[1], sizeof(void*)), 0);
  EXPECT_EQ(v.nregs, nregs);
  EXPECT_EQ(v.nfree, nregs - 3);
  EXPECT_EQ(v.size, slab);
  EXPECT_EQ(v.bin_nregs, nregs);
  EXPECT_EQ(v.bin_nfree, nregs - 3);
  EXPECT_TRUE(v.slabcur_addr == small[0]);  // the fresh slab's first region is its start
  ASSERT_EQ(mallctl("experimental.utilization.query", &v, &len, &large, sizeof(void*)), 0);
  EXPECT_EQ(v.nregs, 1u);
  EXPECT_EQ(v.nfree, 0u);
  bool co = true;
  EXPECT_EQ(jt::ctl_get("config.cache_oblivious", &co), 0);
  EXPECT_EQ(v.size, nallocx(100000, 0) + (co ? 4096 : 0));  // the extent: usable size + the pad
  EXPECT_EQ(v.bin_nregs, 0u);
  EXPECT_TRUE(v.slabcur_addr == nullptr);
  // Exact lengths only.
  len = sizeof(v) - 1;
  EXPECT_EQ(mallctl("experimental.utilization.query", &v, &len, &small[0], sizeof(void*)), EINVAL);
  len = sizeof(v);
  EXPECT_EQ(mallctl("experimental.utilization.query", &v, &len, nullptr, 0), EINVAL);
  EXPECT_EQ(mallctl("experimental.utilization.query", &v, &len, &small[0], 4), EINVAL);

  void* ptrs[4] = {small[0], small[1], small[2], large};
  Util u[4] = {};
  len = sizeof(u);
  ASSERT_EQ(mallctl("experimental.utilization.batch_query", u, &len, ptrs, sizeof(ptrs)), 0);
  for (int i = 0; i < 3; i++) {
    EXPECT_EQ(u[i].nregs, nregs);
    EXPECT_EQ(u[i].nfree, nregs - 3);
    EXPECT_EQ(u[i].size, slab);
  }
  EXPECT_EQ(u[3].nregs, 1u);
  EXPECT_EQ(u[3].nfree, 0u);
  len = sizeof(u) - sizeof(Util);
  EXPECT_EQ(mallctl("experimental.utilization.batch_query", u, &len, ptrs, sizeof(ptrs)), EINVAL);
  len = 0;
  EXPECT_EQ(mallctl("experimental.utilization.batch_query", u, &len, ptrs, 0), EINVAL);

  for (void* p : small) dallocx(p, flags);
  dallocx(large, flags);
  char name[128];
  EXPECT_EQ(action(jt::ctl_name(name, "arena.%u.destroy", a)), 0);
}

TEST_COMPAT(jemalloc_531_names, "jemalloc-531-api") {
  // arenas.hugepage: size_t, read-only, 2 MiB on x86-64; its MIB comes after 5.3.0's names.
  size_t hp = 0;
  EXPECT_EQ(jt::ctl_get("arenas.hugepage", &hp), 0);
  EXPECT_EQ(hp, size_t{2} << 20);
  size_t mib[4];
  size_t miblen = 4;
  EXPECT_EQ(mallctlnametomib("arenas.hugepage", mib, &miblen), 0);
  EXPECT_EQ(miblen, 2u);
  EXPECT_EQ(mib[0], 9u);
  EXPECT_EQ(mib[1], 14u);
  size_t v = 1;
  EXPECT_EQ(mallctl("arenas.hugepage", nullptr, nullptr, &v, sizeof(v)), EPERM);

  // approximate_stats.active: follows allocation with no epoch; once quiescent, equals the
  // stats.active an epoch snapshot reports (both count the arenas' active pages).
  size_t before = 0, during = 0, after = 0;
  EXPECT_EQ(jt::ctl_get("approximate_stats.active", &before), 0);
  void* p = mallocx(size_t{64} << 20, MALLOCX_TCACHE_NONE);
  ASSERT_NOT_NULL(p);
  EXPECT_EQ(jt::ctl_get("approximate_stats.active", &during), 0);
  EXPECT_GE(during, before + (size_t{64} << 20));
  ASSERT_TRUE(jt::refresh_stats());
  size_t active = 0;
  EXPECT_EQ(jt::ctl_get("stats.active", &active), 0);
  EXPECT_EQ(jt::ctl_get("approximate_stats.active", &v), 0);
  EXPECT_EQ(v, active);
  dallocx(p, MALLOCX_TCACHE_NONE);
  EXPECT_EQ(jt::ctl_get("approximate_stats.active", &after), 0);
  EXPECT_LE(after + (size_t{64} << 20), during);
  EXPECT_EQ(mallctl("approximate_stats.active", nullptr, nullptr, &v, sizeof(v)), EPERM);
}

// arena.<i>.name (jemalloc 5.3.1): both directions pass a char*; names start as auto_<i>,
// manual_<i> or auto_oversize and are cut to 31 characters.
int arena_name_get(unsigned ind, char* buf, size_t oldlen = sizeof(char*)) {
  char name[128];
  char* p = buf;
  return mallctl(jt::ctl_name(name, "arena.%u.name", ind), &p, &oldlen, nullptr, 0);
}

int arena_name_set(unsigned ind, const char* s, size_t newlen = sizeof(char*)) {
  char name[128];
  return mallctl(jt::ctl_name(name, "arena.%u.name", ind), nullptr, nullptr, &s, newlen);
}

TEST_COMPAT(arena_name, "jemalloc-531-api") {
  char buf[64];
  ASSERT_EQ(arena_name_get(0, buf), 0);
  EXPECT_STREQ(buf, "auto_0");
  size_t mib[4];
  size_t miblen = 4;
  ASSERT_EQ(mallctlnametomib("arena.0.name", mib, &miblen), 0);
  EXPECT_EQ(miblen, 3u);
  EXPECT_EQ(mib[2], 12u);  // after 5.3.0's names and ours

  unsigned a = 0;
  size_t len = sizeof(a);
  ASSERT_EQ(mallctl("arenas.create", &a, &len, nullptr, 0), 0);
  char want[32];
  std::snprintf(want, sizeof(want), "manual_%u", a);
  ASSERT_EQ(arena_name_get(a, buf), 0);
  EXPECT_STREQ(buf, want);

  // Write, then read and write in one call (the old name comes back).
  EXPECT_EQ(arena_name_set(a, "pool of buffers"), 0);
  char old[64] = {};
  char* op = old;
  size_t ol = sizeof(char*);
  const char* nv = "second";
  char name[128];
  EXPECT_EQ(mallctl(jt::ctl_name(name, "arena.%u.name", a), &op, &ol, &nv, sizeof(nv)), 0);
  EXPECT_STREQ(old, "pool of buffers");
  ASSERT_EQ(arena_name_get(a, buf), 0);
  EXPECT_STREQ(buf, "second");
  // Longer than 31 characters: cut.
  EXPECT_EQ(arena_name_set(a, "0123456789abcdefghijklmnopqrstuvwxyz"), 0);
  ASSERT_EQ(arena_name_get(a, buf), 0);
  EXPECT_STREQ(buf, "0123456789abcdefghijklmnopqrstu");

  // 5.3.1's errors: wrong lengths, a NULL name, ALL or an index past arenas.narenas: EINVAL;
  // an index without an arena: EFAULT.
  EXPECT_EQ(arena_name_get(a, buf, sizeof(char*) - 1), EINVAL);
  EXPECT_EQ(arena_name_set(a, "x", 1), EINVAL);
  EXPECT_EQ(arena_name_set(a, nullptr), EINVAL);
  EXPECT_EQ(arena_name_get(MALLCTL_ARENAS_ALL, buf), EINVAL);
  unsigned narenas = 0;
  ASSERT_EQ(jt::ctl_get("arenas.narenas", &narenas), 0);
  EXPECT_EQ(arena_name_get(narenas, buf), EINVAL);
  ASSERT_EQ(arena_name_get(a, buf), 0);
  EXPECT_STREQ(buf, "0123456789abcdefghijklmnopqrstu");  // errors left it alone

  EXPECT_EQ(mallctl(jt::ctl_name(name, "arena.%u.destroy", a), nullptr, nullptr, nullptr, 0), 0);
  EXPECT_EQ(arena_name_get(a, buf), EFAULT);
  // A new arena at that index starts with the default name again.
  unsigned b = 0;
  len = sizeof(b);
  ASSERT_EQ(mallctl("arenas.create", &b, &len, nullptr, 0), 0);
  std::snprintf(want, sizeof(want), "manual_%u", b);
  ASSERT_EQ(arena_name_get(b, buf), 0);
  EXPECT_STREQ(buf, want);
  EXPECT_EQ(mallctl(jt::ctl_name(name, "arena.%u.destroy", b), nullptr, nullptr, nullptr, 0), 0);

  // The huge arena (a block above oversize_threshold lands there), unless the option is 0.
  size_t threshold = 0;
  ASSERT_EQ(jt::ctl_get("opt.oversize_threshold", &threshold), 0);
  if (threshold != 0) {
    void* p = mallocx(threshold + (size_t{1} << 20), MALLOCX_TCACHE_NONE);
    ASSERT_NOT_NULL(p);
    unsigned h = 0;
    len = sizeof(h);
    ASSERT_EQ(mallctl("arenas.lookup", &h, &len, &p, sizeof(p)), 0);
    ASSERT_EQ(arena_name_get(h, buf), 0);
    EXPECT_STREQ(buf, "auto_oversize");
    dallocx(p, MALLOCX_TCACHE_NONE);
  }
}

// opt.prof_bt_max and opt.process_madvise_max_batch (jemalloc 5.3.1): unsigned and size_t,
// read-only; opt.prof_bt_max only in a profiling build. calloc_madvise_threshold and
// tcache_ncached_max have no opt.* name in 5.3.1 either.
TEST_COMPAT(opt_531_names, "jemalloc-531-api") {
  size_t batch = 1;
  ASSERT_EQ(jt::ctl_get("opt.process_madvise_max_batch", &batch), 0);
  const char* conf = std::getenv("MALLOC_CONF");
  if (conf == nullptr || std::strstr(conf, "process_madvise_max_batch") == nullptr) {
    EXPECT_EQ(batch, 0u);
  }
  EXPECT_EQ(mallctl("opt.process_madvise_max_batch", nullptr, nullptr, &batch, sizeof(batch)),
            EPERM);
  bool prof_built = false;
  ASSERT_EQ(jt::ctl_get("config.prof", &prof_built), 0);
  unsigned bt = 0;
  if (prof_built) {
    ASSERT_EQ(jt::ctl_get("opt.prof_bt_max", &bt), 0);
    if (conf == nullptr || std::strstr(conf, "prof_bt_max") == nullptr) EXPECT_EQ(bt, 128u);
  } else {
    EXPECT_EQ(jt::ctl_get("opt.prof_bt_max", &bt), ENOENT);
  }
  size_t v = 0;
  EXPECT_EQ(jt::ctl_get("opt.calloc_madvise_threshold", &v), ENOENT);
  EXPECT_EQ(jt::ctl_get("opt.tcache_ncached_max", &v), ENOENT);
}
