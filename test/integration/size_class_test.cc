// size_class_test: the size classes a program can observe -- through
// malloc_usable_size, nallocx, sallocx and the arenas.* geometry -- equal
// jemalloc 5.3.0's (golden tables read off Debian's
// 5.3.0, in test/integration/data).
#include "harness.h"

#ifndef JT_DATA_DIR
#define JT_DATA_DIR "test/integration/data"
#endif

namespace {

struct SmallClass {
  size_t size;
  uint32_t nregs;
  size_t slab_size;
  unsigned nshards;
};

constexpr int kNbins = 36;
constexpr int kNlextents = 196;
SmallClass g_small[kNbins];
size_t g_large[kNlextents];
bool g_loaded = false;

// Reads the two golden tables once; false (and a failure) when missing.
bool load_golden() {
  if (g_loaded) return true;
  char path[512];
  std::snprintf(path, sizeof(path), "%s/size-classes-5.3.0.tsv", JT_DATA_DIR);
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) {
    FAIL_MSG("cannot open %s", path);
    return false;
  }
  char line[256];
  int n = 0;
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    if (line[0] == '#') continue;
    int bin;
    unsigned long long size, slab;
    unsigned nregs, nshards;
    if (std::sscanf(line, "%d %llu %u %llu %u", &bin, &size, &nregs, &slab, &nshards) != 5 ||
        bin != n || n >= kNbins) {
      FAIL_MSG("bad line in %s: %s", path, line);
      std::fclose(f);
      return false;
    }
    g_small[n++] = SmallClass{(size_t)size, nregs, (size_t)slab, nshards};
  }
  std::fclose(f);
  if (n != kNbins) {
    FAIL_MSG("%s: %d bins, expected %d", path, n, kNbins);
    return false;
  }
  std::snprintf(path, sizeof(path), "%s/large-classes-5.3.0.tsv", JT_DATA_DIR);
  f = std::fopen(path, "r");
  if (f == nullptr) {
    FAIL_MSG("cannot open %s", path);
    return false;
  }
  n = 0;
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    if (line[0] == '#') continue;
    int i;
    unsigned long long size;
    if (std::sscanf(line, "%d %llu", &i, &size) != 2 || i != n || n >= kNlextents) {
      FAIL_MSG("bad line in %s: %s", path, line);
      std::fclose(f);
      return false;
    }
    g_large[n++] = (size_t)size;
  }
  std::fclose(f);
  if (n != kNlextents) {
    FAIL_MSG("%s: %d classes, expected %d", path, n, kNlextents);
    return false;
  }
  g_loaded = true;
  return true;
}

// The golden usable size for a request of n bytes (no alignment); 0 when
// no class holds it.
size_t golden_class(size_t n) {
  if (n == 0) n = 1;
  for (const SmallClass& c : g_small) {
    if (c.size >= n) return c.size;
  }
  for (size_t c : g_large) {
    if (c >= n) return c;
  }
  return 0;
}

}  // namespace

TEST(golden_tables_load) { load_golden(); }

// Every request 1..70000 (all small classes and the first large ones).
TEST(sweep_1_to_70000) {
  ASSERT_TRUE(load_golden());
  int bad = 0;
  for (size_t n = 1; n <= 70000; n++) {
    size_t want = golden_class(n);
    size_t nx = nallocx(n, 0);
    void* p = malloc(n);
    if (p == nullptr) {
      FAIL_MSG("malloc(%zu) failed", n);
      return;
    }
    size_t u = malloc_usable_size(p);
    if (u != want || nx != want) {
      if (bad++ < 10) {
        FAIL_MSG("size %zu: usable %zu, nallocx %zu, golden class %zu", n, u, nx, want);
      }
    }
    free(p);
  }
  EXPECT_EQ(bad, 0);
}

// Around every large class: allocate up to 1 GiB (address space only, the
// pages are never touched), beyond that nallocx only.
TEST(large_classes_boundaries) {
  ASSERT_TRUE(load_golden());
  int bad = 0;
  for (int i = 0; i < kNlextents; i++) {
    size_t c = g_large[i];
    size_t probes[] = {c - 1, c, c + 1};
    for (size_t n : probes) {
      size_t want = golden_class(n);
      size_t nx = nallocx(n, 0);
      if (nx != want && bad++ < 10) {
        FAIL_MSG("nallocx(%zu) = %zu, golden %zu", n, nx, want);
      }
      if (n <= ((size_t)1 << 30)) {
        void* p = mallocx(n, MALLOCX_TCACHE_NONE);
        if (p == nullptr) {
          FAIL_MSG("mallocx(%zu) failed", n);
          return;
        }
        size_t u = malloc_usable_size(p);
        if ((u != want || sallocx(p, 0) != want) && bad++ < 10) {
          FAIL_MSG("mallocx(%zu): usable %zu, sallocx %zu, golden %zu", n, u, sallocx(p, 0), want);
        }
        dallocx(p, MALLOCX_TCACHE_NONE);
      }
    }
  }
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(nallocx(g_large[kNlextents - 1] + 1, 0), 0u);
}

// A pseudo-random sample of larger requests, allocated for real up to 64 MiB.
TEST(large_random_sample) {
  ASSERT_TRUE(load_golden());
  jt::Rng rng(3);
  for (int i = 0; i < 300; i++) {
    size_t n = 70000 + rng.below((size_t)64 << 20);
    void* p = malloc(n);
    ASSERT_NOT_NULL(p);
    EXPECT_EQ(malloc_usable_size(p), golden_class(n));
    EXPECT_EQ(nallocx(n, 0), golden_class(n));
    free(p);
  }
}

// The bin geometry jemalloc 5.3.0 documents for the MALLOC_CONF in effect: the golden table,
// changed by `slab_sizes` (a class of size s in [lo, hi] gets `pages` pages, clamped to hold at
// least one and at most 512 regions: nregs = slab / s) and `bin_shards` (classes covering
// [lo, hi], hi clipped to 14 KiB, get n shards). Only well-formed values are expected here (the
// runner's variants); the parser's error handling is conf_test's and options_test's business.
void expected_bin_geometry(uint32_t* nregs, size_t* slab, unsigned* shards) {
  for (int i = 0; i < kNbins; i++) {
    nregs[i] = g_small[i].nregs;
    slab[i] = g_small[i].slab_size;
    shards[i] = g_small[i].nshards;
  }
  char value[256];
  for (const char* key : {"slab_sizes", "bin_shards"}) {
    if (!jt::conf_value(key, value, sizeof(value))) continue;
    const bool is_slab = std::strcmp(key, "slab_sizes") == 0;
    for (const char* p = value; *p != '\0';) {
      char* e;
      unsigned long long lo = std::strtoull(p, &e, 0);
      unsigned long long hi = std::strtoull(e + 1, &e, 0);
      unsigned long long n = std::strtoull(e + 1, &e, 0);
      p = *e == '|' ? e + 1 : e;
      for (int i = 0; i < kNbins; i++) {
        const size_t s = g_small[i].size;
        if (is_slab) {
          if (s < lo || s > hi) continue;
          unsigned long long lo_pg = (s + 4095) / 4096, hi_pg = 512 * s / 4096;
          unsigned long long pg = n < lo_pg ? lo_pg : n > hi_pg ? hi_pg : n;
          slab[i] = (size_t)pg * 4096;
          nregs[i] = (uint32_t)(slab[i] / s);
        } else {
          // Classes from the one holding lo to the one holding min(hi, 14 KiB).
          const size_t prev = i == 0 ? 0 : g_small[i - 1].size;  // class i <= that one
          const unsigned long long top = hi < 14336 ? hi : 14336;
          if (lo <= 14336 && s >= lo && (i == 0 || prev < top)) shards[i] = (unsigned)n;
        }
      }
    }
  }
}

TEST(arenas_geometry) {
  ASSERT_TRUE(load_golden());
  size_t page = 0, quantum = 0;
  unsigned nbins = 0, nlextents = 0, nhbins = 0;
  ASSERT_EQ(jt::ctl_get("arenas.page", &page), 0);
  ASSERT_EQ(jt::ctl_get("arenas.quantum", &quantum), 0);
  ASSERT_EQ(jt::ctl_get("arenas.nbins", &nbins), 0);
  ASSERT_EQ(jt::ctl_get("arenas.nlextents", &nlextents), 0);
  ASSERT_EQ(jt::ctl_get("arenas.nhbins", &nhbins), 0);
  EXPECT_EQ(page, 4096u);
  EXPECT_EQ(quantum, 16u);
  EXPECT_EQ(nbins, (unsigned)kNbins);
  EXPECT_EQ(nlextents, (unsigned)kNlextents);
  size_t tcache_max = 0;
  ASSERT_EQ(jt::ctl_get("arenas.tcache_max", &tcache_max), 0);
  // nhbins: the classes up to tcache_max (36 small + large ones <= it).
  unsigned want_nhbins = kNbins;
  for (size_t c : g_large) {
    if (c <= tcache_max) want_nhbins++;
  }
  EXPECT_EQ(nhbins, want_nhbins);
  if (jt::conf_int("tcache_max", -1) < 0 && jt::conf_int("lg_tcache_max", -1) < 0) {
    EXPECT_EQ(tcache_max, 32768u);
    EXPECT_EQ(nhbins, 41u);
  }
  char name[128];
  uint32_t want_nregs[kNbins];
  size_t want_slab[kNbins];
  unsigned want_shards[kNbins];
  expected_bin_geometry(want_nregs, want_slab, want_shards);
  for (int i = 0; i < kNbins; i++) {
    size_t size = 0, slab = 0;
    uint32_t nregs = 0;
    unsigned nshards = 0;
    EXPECT_EQ(jt::ctl_get(jt::ctl_name(name, "arenas.bin.%d.size", i), &size), 0);
    EXPECT_EQ(jt::ctl_get(jt::ctl_name(name, "arenas.bin.%d.nregs", i), &nregs), 0);
    EXPECT_EQ(jt::ctl_get(jt::ctl_name(name, "arenas.bin.%d.slab_size", i), &slab), 0);
    EXPECT_EQ(jt::ctl_get(jt::ctl_name(name, "arenas.bin.%d.nshards", i), &nshards), 0);
    EXPECT_EQ(size, g_small[i].size);
    EXPECT_EQ(nregs, want_nregs[i]);
    EXPECT_EQ(slab, want_slab[i]);
    EXPECT_EQ(nshards, want_shards[i]);
  }
  for (int i = 0; i < kNlextents; i++) {
    size_t size = 0;
    EXPECT_EQ(jt::ctl_get(jt::ctl_name(name, "arenas.lextent.%d.size", i), &size), 0);
    EXPECT_EQ(size, g_large[i]);
  }
  size_t dummy;
  EXPECT_EQ(jt::ctl_get("arenas.bin.37.size", &dummy), ENOENT);
  EXPECT_EQ(jt::ctl_get("arenas.lextent.197.size", &dummy), ENOENT);
}

// One past the last bin / large class is unknown too.  5.3.0 accepts that
// index and reads past its tables (doc/compat.md#mallctl-index-bounds).
TEST_COMPAT(arenas_index_one_past_end, "mallctl-index-bounds") {
  size_t dummy = 0;
  uint32_t nregs = 0;
  EXPECT_EQ(jt::ctl_get("arenas.bin.36.size", &dummy), ENOENT);
  EXPECT_EQ(jt::ctl_get("arenas.bin.36.nregs", &nregs), ENOENT);
  EXPECT_EQ(jt::ctl_get("arenas.lextent.196.size", &dummy), ENOENT);
  EXPECT_EQ(jt::ctl_get("stats.arenas.0.bins.36.curregs", &dummy), ENOENT);
  EXPECT_EQ(jt::ctl_get("stats.arenas.0.lextents.196.curlextents", &dummy), ENOENT);
  size_t mib[4];
  size_t miblen = 4;
  EXPECT_EQ(mallctlnametomib("arenas.bin.36.size", mib, &miblen), ENOENT);
}

// The partial-MIB idiom (Redis, Doris): translate once, vary one component.
TEST(partial_mib_iteration) {
  ASSERT_TRUE(load_golden());
  size_t mib[4];
  size_t miblen = 4;
  ASSERT_EQ(mallctlnametomib("arenas.bin.0.size", mib, &miblen), 0);
  ASSERT_EQ(miblen, 4u);
  for (int i = 0; i < kNbins; i++) {
    mib[2] = (size_t)i;
    size_t size = 0, len = sizeof(size);
    EXPECT_EQ(mallctlbymib(mib, 4, &size, &len, nullptr, 0), 0);
    EXPECT_EQ(size, g_small[i].size);
  }
  size_t lmib[4];
  size_t lmiblen = 4;
  ASSERT_EQ(mallctlnametomib("arenas.lextent.0.size", lmib, &lmiblen), 0);
  ASSERT_EQ(lmiblen, 4u);
  for (int i = 0; i < kNlextents; i += 7) {
    lmib[2] = (size_t)i;
    size_t size = 0, len = sizeof(size);
    EXPECT_EQ(mallctlbymib(lmib, 4, &size, &len, nullptr, 0), 0);
    EXPECT_EQ(size, g_large[i]);
  }
  // A short *miblen: the prefix only, and *miblen says how much was written.
  size_t pmib[2] = {99, 99};
  size_t plen = 2;
  ASSERT_EQ(mallctlnametomib("arenas.bin.0.size", pmib, &plen), 0);
  EXPECT_EQ(plen, 2u);
  EXPECT_EQ(pmib[0], mib[0]);
  EXPECT_EQ(pmib[1], mib[1]);
  // An interior node read by MIB: ENOENT.
  size_t v = 0, len = sizeof(v);
  EXPECT_EQ(mallctlbymib(pmib, 2, &v, &len, nullptr, 0), ENOENT);
}

TEST(aligned_classes) {
  ASSERT_TRUE(load_golden());
  // 5.3.0's rule: alignment <= page and a small result: the class of the
  // size rounded up to the alignment; otherwise a large class (page-aligned
  // extents, at least 16 KiB).
  for (int lg = 0; lg <= 16; lg++) {
    size_t a = (size_t)1 << lg;
    for (size_t n = 1; n <= 40000; n = n * 2 + 3) {
      size_t want = 0;
      if (n <= 14336 && a <= 4096) {
        size_t c = golden_class((n + a - 1) & ~(a - 1));
        if (c < 16384) want = c;
      }
      if (want == 0) want = golden_class(n <= 16384 ? 16384 : n);
      void* p = mallocx(n, MALLOCX_ALIGN(a));
      ASSERT_NOT_NULL(p);
      EXPECT_EQ(((uintptr_t)p & (a - 1)), 0u);
      if (nallocx(n, MALLOCX_ALIGN(a)) != want || sallocx(p, 0) != want) {
        FAIL_MSG("n=%zu align=%zu: nallocx %zu, sallocx %zu, expected %zu", n, a,
                 nallocx(n, MALLOCX_ALIGN(a)), sallocx(p, 0), want);
      }
      dallocx(p, 0);
    }
  }
}
