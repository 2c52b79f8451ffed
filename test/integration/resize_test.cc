// resize_test: what growing a block with realloc / rallocx / xallocx promises beyond the copy,
// under options that change it -- each case in a child process with its own MALLOC_CONF (see
// child.h), so run.sh's variants do not repeat it.
//  - opt.zero (zero:true): every byte a resize adds is zero, whether the block grew in place
//    or moved, with the thread cache on or off (5.3.0 applies opt.zero to rallocx, realloc and
//    xallocx alike).
//  - opt.prof: a sampled large block grows in place as any other block does; growing a 4 MiB
//    block by one byte at a time moves it at most once even when every allocation is sampled
//    (lg_prof_sample:0), and with prof.active false.
#include "child.h"

using namespace jt::subproc;

namespace {

// ===========================================================================
// Child side.

constexpr unsigned char kMagic = 0x61;
constexpr size_t kLargeMin = 16385;  // the smallest large request (SC_SMALL_MAXCLASS + 1)
constexpr size_t kGrowTo = 256 << 10;

// Leaves freed memory full of kMagic in the size range the growth walks through, so that a
// resize that reuses it without zeroing shows.
void dirty_freed_memory(size_t lo, size_t hi) {
  static void* blocks[256];
  int n = 0;
  for (size_t sz = lo; sz <= hi && n < 256; sz += sz / 4) {
    for (int i = 0; i < 4 && n < 256; i++) {
      void* p = malloc(sz);
      if (p == nullptr) break;
      std::memset(p, kMagic, malloc_usable_size(p));
      blocks[n++] = p;
    }
  }
  for (int i = 0; i < n; i++) free(blocks[i]);
}

// Grows one block from kLargeMin past kGrowTo a byte beyond its usable size at a time, checking
// that the bytes each step adds are zero and filling them with kMagic, as jemalloc's own
// unit/zero does. `how`: "rallocx", "realloc" or "xallocx" (xallocx first, rallocx when it
// cannot grow in place); "rallocx_nocache" passes MALLOCX_TCACHE_NONE.
void mode_grow(const char* how) {
  mode_noop(nullptr);
  const bool use_realloc = std::strcmp(how, "realloc") == 0;
  const bool use_xallocx = std::strcmp(how, "xallocx") == 0;
  const int flags = std::strcmp(how, "rallocx_nocache") == 0 ? MALLOCX_TCACHE_NONE : 0;
  long long nonzero = 0, first_bad = -1, moved = 0, in_place = 0, steps = 0;
  for (int round = 0; round < 4; round++) {
    dirty_freed_memory(kLargeMin, 2 * kGrowTo);
    auto* s = static_cast<unsigned char*>(mallocx(kLargeMin, flags));
    if (s == nullptr) {
      FAIL_MSG("mallocx failed");
      return;
    }
    size_t prev = 0;
    for (size_t sz = sallocx(s, 0); sz <= kGrowTo; prev = sz, sz = sallocx(s, 0)) {
      for (size_t i = prev; i < sz; i++) {
        if (s[i] != 0) {
          if (first_bad < 0) first_bad = (long long)i;
          nonzero++;
        }
        s[i] = kMagic;
      }
      steps++;
      unsigned char* t = s;
      if (use_xallocx && xallocx(s, sz + 1, 0, flags) > sz) {
        in_place++;
        continue;
      }
      t = static_cast<unsigned char*>(use_realloc ? realloc(s, sz + 1) : rallocx(s, sz + 1, flags));
      if (t == nullptr) {
        FAIL_MSG("growth failed");
        return;
      }
      (t == s ? in_place : moved)++;
      s = t;
    }
    dallocx(s, flags);
  }
  emit("steps", steps);
  emit("nonzero", nonzero);
  emit("first_bad", first_bad);
  emit("moved", moved);
  emit("in_place", in_place);
}

// Under prof_stats:true, the sampled blocks alive in large class `size`: their number and the
// bytes their callers asked for (-1, -1 when the stats cannot be read).
void emit_live_lextent(const char* key, size_t size) {
  unsigned n = 0;
  jt::ctl_get("arenas.nlextents", &n);
  char name[96];
  for (unsigned j = 0; j < n; j++) {
    size_t sz = 0;
    std::snprintf(name, sizeof(name), "arenas.lextent.%u.size", j);
    if (jt::ctl_get(name, &sz) != 0 || sz != size) continue;
    struct {
      uint64_t req_sum;
      uint64_t count;
    } live = {~uint64_t{0}, ~uint64_t{0}};
    size_t len = sizeof(live);
    std::snprintf(name, sizeof(name), "prof.stats.lextents.%u.live", j);
    mallctl(name, &live, &len, nullptr, 0);
    char k[64];
    std::snprintf(k, sizeof(k), "%s_count", key);
    emit(k, (long long)live.count);
    std::snprintf(k, sizeof(k), "%s_req", key);
    emit(k, (long long)live.req_sum);
    return;
  }
}

// A 4 MiB block grown by one byte 2,047 times (the case of jemalloc's integration/rallocx):
// how many of the steps moved it.
void mode_grow_by_one(const char*) {
  mode_noop(nullptr);
  constexpr size_t kStart = 4 << 20;
  auto* p = static_cast<char*>(malloc(kStart));
  if (p == nullptr) {
    FAIL_MSG("malloc failed");
    return;
  }
  p[0] = 1;
  long long moved = 0;
  for (size_t i = 1; i < 2048; i++) {
    auto* q = static_cast<char*>(rallocx(p, kStart + i, 0));
    if (q == nullptr) {
      FAIL_MSG("rallocx failed");
      return;
    }
    if (q != p) moved++;
    p = q;
  }
  emit("intact", p[0] == 1);
  emit("moved", moved);
  emit("usable", (long long)sallocx(p, 0));
  emit_live_lextent("live_4m", kStart);
  emit_live_lextent("live_5m", 5 << 20);
  dallocx(p, 0);
}

// xallocx on a 4 MiB block (sampled under lg_prof_sample:0): shrunk to 2 MiB in place, then
// grown back over the pages it just gave up.
void mode_xallocx_shrink_grow(const char*) {
  mode_noop(nullptr);
  constexpr size_t kStart = 4 << 20;
  void* p = malloc(kStart);
  if (p == nullptr) {
    FAIL_MSG("malloc failed");
    return;
  }
  emit("shrunk", (long long)xallocx(p, kStart / 2, 0, 0));
  emit("regrown", (long long)xallocx(p, kStart, 0, 0));
  emit("usable", (long long)sallocx(p, 0));
  free(p);
}

constexpr Mode kModes[] = {
    {"noop", mode_noop},
    {"grow", mode_grow},
    {"grow_by_one", mode_grow_by_one},
    {"xallocx_shrink_grow", mode_xallocx_shrink_grow},
};

// ===========================================================================
// Parent side.

TEST(zero_true_zeroes_bytes_gained_by_growth) {
  Child c;
  for (const char* conf : {"zero:true", "zero:true,tcache:false"}) {
    for (const char* how : {"rallocx", "rallocx_nocache", "realloc", "xallocx"}) {
      if (!child(&c, "grow", conf, how)) return;
      EXPECT_CHILD(c, "nonzero", kEq, 0);
      EXPECT_CHILD(c, "first_bad", kEq, -1);
      // Both ways of growing were exercised.
      EXPECT_CHILD(c, "in_place", kGt, 0);
      EXPECT_CHILD(c, "moved", kGt, 0);
    }
  }
}

TEST(without_zero_growth_may_expose_old_bytes) {
  // Control: the walk above does reuse freed memory, so zero:true had something to clear.
  Child c;
  long long nonzero = 0;
  for (const char* how : {"rallocx", "realloc"}) {
    if (!child(&c, "grow", nullptr, how)) return;
    nonzero += value(c, "nonzero");
  }
  EXPECT_GT(nonzero, 0);
}

TEST(sampled_block_resized_in_place_keeps_one_record) {
  // The record follows the block: the old one is released, the last resize's sample is live
  // (every resize is sampled at lg_prof_sample:0).
  if (!profiling_built()) return;
  Child c;
  if (!child(&c, "grow_by_one", "prof:true,lg_prof_sample:0,prof_stats:true")) return;
  EXPECT_CHILD(c, "moved", kLe, 1);
  EXPECT_CHILD(c, "live_4m_count", kEq, 0);
  EXPECT_CHILD(c, "live_5m_count", kEq, 1);
  EXPECT_CHILD(c, "live_5m_req", kEq, (4 << 20) + 2047);
}

TEST(sampled_large_block_grows_in_place) {
  if (!profiling_built()) return;
  Child c;
  for (const char* conf :
       {"prof:true,lg_prof_sample:0", "prof:true,lg_prof_sample:0,prof_active:false",
        "prof:true,lg_prof_sample:0,tcache:false", "prof:true"}) {
    if (!child(&c, "grow_by_one", conf)) return;
    EXPECT_CHILD(c, "intact", kEq, 1);
    EXPECT_CHILD(c, "moved", kLe, 1);
    EXPECT_CHILD(c, "usable", kEq, 5 << 20);
    if (!child(&c, "xallocx_shrink_grow", conf)) return;
    EXPECT_CHILD(c, "shrunk", kEq, 2 << 20);
    EXPECT_CHILD(c, "regrown", kEq, 4 << 20);
    EXPECT_CHILD(c, "usable", kEq, 4 << 20);
  }
}

}  // namespace

int main(int argc, char** argv) { return run_main(argc, argv, kModes); }
