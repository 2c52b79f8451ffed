// tcache_diff_test: a differential test of the THREAD CACHE's observable behaviour against
// jemalloc 5.3.0, with the default cache options.
//
// The cache decides when an allocation reaches an arena (fill: ncached_max >> lg_fill_div
// regions of a small class at once), when a free does (flush of the oldest items when a bin is
// full, down to ncached_max >> lg_tcache_flush_{small,large}_div), and what it gives back on
// its own: the incremental GC, one bin per tcache_gc_incr_bytes (64 KiB) of allocation and one
// per 64 KiB of deallocation, round-robin over the arenas.nhbins bins; it flushes 3/4 of a
// bin's low-water mark (the items unused since the last visit) and doubles the next fill's
// divisor (halves the fill), or, for a bin that ran dry and was refilled, halves the divisor.
// All of that is driven by byte counts, not time, so one single-threaded seeded workload is
// deterministic and must give the same counters in both libraries. differential.h runs this
// program's stream once per library in a child (MALLOC_CONF unset) and compares the records
// line by line; kDocumented excuses what doc/compat.md documents (by anchor), kKnownBugs our
// known bugs.
//
// The probe: how many blocks the caches hold per class. After the set-up both caches are empty
// and (single thread, nothing else allocating) a class's live regions in the thread's arena are
// the program's blocks, the caches' blocks and the internal blocks (cache slot arrays, counted in
// stats.arenas.<i>.internal; each internal change is measured around the call that makes it
// and assigned to the class of its size). So cached(class) = change of curregs (curlextents)
// since the set-up - the program's live blocks of the class - internal blocks of the class;
// the sum over the cached classes times their sizes must equal tcache_bytes (checked in both
// libraries).
//
// Phases (each its own seeded generator): fill_flush (each small class alone: more blocks than
// a bin holds, then all freed: fills and overflow flushes), idle_gc (bins warmed, then GC "ticks"
// -- a 64 KiB block allocated and freed, which fires exactly one allocation and one deallocation
// GC step, since each step re-arms the event 64 KiB later -- so GC steps visit the idle bins
// several times, then each class drained: the fills show the shrunken fill sizes), busy_gc
// (classes that run dry between ticks: the fill grows back), large_tc (16..32 KiB: misses,
// overflow flushes, idle GC), thread.tcache.flush, thread.tcache.enabled off and on, an
// explicit cache (MALLOCX_TCACHE(tc): overflow, fills, GC ticks, which only visit the thread's
// cache; tcache.flush; destroy), and large resizes (rallocx/xallocx growth and shrinking of
// blocks of 16 KiB .. 256 KiB in the thread's arena: "in-place" or "moved", and the usable
// sizes; never addresses), and resize_gc (idle bins, then only in-place xallocx/rallocx of a
// 1 MiB block: whatever the caches give back is GC driven by the resizes' bytes).
// After sub-steps a `probe` line (per touched class: cached/Δnmalloc/Δndalloc/Δnfills/
// Δnflushes); after each phase one line per counter with its change (cached: its value):
// stats.arenas.<thr>.{tcache_bytes, small/large.{nfills,nflushes}}, stats.arenas.4096.
// tcache_bytes, bins.<j>.{nmalloc,ndalloc,nrequests,nfills,nflushes,curregs} and lextents.<j>.
// {nmalloc,ndalloc,nrequests,curlextents} of the classes used.
// Determinism: decay off (the program's malloc_conf, read by both libraries: purging runs on a
// clock); our coalescing bound off (malloc_conf_2_conf_harder, read by this library only:
// doc/compat.md#conf-2-conf-harder) so extents merge, hence large blocks grow in place, as in
// 5.3.0. The cache options stay at their defaults in the default run (the setup line prints
// them; it requires tcache_max 32 KiB and a GC period of at most the tick). The GC event's
// state at the start depends on everything the program allocated before; the setup realigns
// it: with the cache off, a 64 KiB block allocated and freed fires both events (re-armed 64 KiB
// later), then the cache is switched back on (a fresh cache: next GC bin 0, fill divisors 1).
// Skipped (77) under run.sh's non-default MALLOC_CONF variants, like the other differential
// tests.
#include "differential.h"

const char* malloc_conf = "dirty_decay_ms:-1,muzzy_decay_ms:-1";
const char* malloc_conf_2_conf_harder =
    "preset:jemalloc-5.3.0";

namespace {

using jt::diff::finish;
using jt::diff::put;
using jt::diff::Rng;

constexpr uint64_t kSeed = 0x7463616368656466ull;
constexpr unsigned kAll = 4096;
constexpr size_t kTick = 65536;  // not cached (> tcache_max), >= the GC event's period
constexpr int kMaxCls = 48;      // cached classes (nhbins, 41 by default) and the tick class

// The classes printed: small (ncached_max 200, 200, 32, 128, 64, 20, 20, 20, 20, 20) and the
// five cached large ones.
constexpr size_t kSmall[] = {8, 96, 256, 448, 640, 1024, 2560, 4096, 8192, 14336};
constexpr size_t kLarge[] = {16384, 20480, 24576, 28672, 32768};

// Per class (index: bin j, or nbins + lextent j): nmalloc, ndalloc, nrequests, cur (curregs /
// curlextents), nfills, nflushes (small only).
constexpr const char* kBinNames[] = {"nmalloc", "ndalloc", "nrequests",
                                     "curregs", "nfills",  "nflushes"};
constexpr const char* kLextNames[] = {"nmalloc", "ndalloc", "nrequests", "curlextents"};
enum { kNm, kNd, kNr, kCur, kNf, kNfl, kNC };
constexpr const char* kTopNames[] = {"small.nfills",   "small.nflushes", "large.nfills",
                                     "large.nflushes", "tcache_bytes",   "internal"};
enum { kSNf, kSNfl, kLNf, kLNfl, kTb, kInt, kNTop };

struct Mib {
  size_t m[8], len;
};
Mib g_bin_mib[kNC], g_lext_mib[4], g_top_mib[kNTop];

struct Snap {
  uint64_t c[kMaxCls][kNC];
  uint64_t top[kNTop];
  uint64_t all_tb;  // stats.arenas.4096.tcache_bytes
};

struct State {
  unsigned nbins, nhbins, thr, ncls;  // ncls: nhbins + the tick class
  size_t size[kMaxCls];
  unsigned ncached_max_hint[kMaxCls];
  int tick_cls;            // index of the tick class in the tables (nhbins)
  unsigned tick_lext;      // its lextent index
  long live[kMaxCls];      // the program's blocks per class
  long internal[kMaxCls];  // internal blocks per class, since the base
  int ph;
  unsigned tc;
} g;
Snap g_base, g_prev, g_cur, g_pprev;  // set-up; last report; now; last probe

bool translate(const char* name, Mib& out) {
  out.len = 8;
  return mallctlnametomib(name, out.m, &out.len) == 0;
}

uint64_t read_mib(Mib mib, unsigned ind, unsigned j) {
  mib.m[2] = ind;
  if (mib.len == 6) mib.m[4] = j;
  uint64_t v = 0;
  size_t len = sizeof(v);
  return mallctlbymib(mib.m, mib.len, &v, &len, nullptr, 0) == 0 ? v : ~(uint64_t)0;
}

void read_snap(Snap& s) {
  jt::refresh_stats();
  for (unsigned i = 0; i < g.ncls; i++) {
    if (i < g.nbins) {
      for (int k = 0; k < kNC; k++) s.c[i][k] = read_mib(g_bin_mib[k], g.thr, i);
    } else {
      unsigned j = i < g.nhbins ? i - g.nbins : g.tick_lext;
      for (int k = 0; k < 4; k++) s.c[i][k] = read_mib(g_lext_mib[k], g.thr, j);
      s.c[i][kNf] = s.c[i][kNfl] = 0;
    }
  }
  for (int k = 0; k < kNTop; k++) s.top[k] = read_mib(g_top_mib[k], k == kInt ? 0 : g.thr, 0);
  s.all_tb = read_mib(g_top_mib[kTb], kAll, 0);
}

int cls_of_usize(size_t usize) {
  for (unsigned i = 0; i < g.ncls; i++) {
    if (g.size[i] == usize) return (int)i;
  }
  return -1;
}

// Blocks the caches hold of class i, from the counters (see the header).
long cached(const Snap& s, unsigned i) {
  return (long)(s.c[i][kCur] - g_base.c[i][kCur]) - g.live[i] - g.internal[i];
}

// --- The program's blocks.
void* am(size_t n, int flags = 0) {
  void* p = flags ? mallocx(n, flags) : malloc(n);
  if (p != nullptr) {
    int c = cls_of_usize(sallocx(p, 0));
    if (c >= 0) g.live[c]++;
  }
  return p;
}

void fr(void* p, int flags = 0) {
  if (p == nullptr) return;
  int c = cls_of_usize(sallocx(p, 0));
  if (c >= 0) g.live[c]--;
  if (flags)
    dallocx(p, flags);
  else
    free(p);
}

// One allocation and one deallocation GC step, touching no cached bin.
void tick(int n = 1) {
  for (int i = 0; i < n; i++) fr(am(kTick));
}

// A request inside class i.
size_t in_class(Rng& r, unsigned i) {
  size_t lo = i == 0 ? 0 : g.size[i - 1];
  return g.size[i] - r.below(g.size[i] - lo);
}

// Runs a call that may allocate or free an internal block (a cache's slot array) and assigns
// the change of stats.arenas.0.internal to the class of that size.
template <class F>
int with_internal(F fn) {
  jt::refresh_stats();
  uint64_t before = read_mib(g_top_mib[kInt], 0, 0);
  int rc = fn();
  jt::refresh_stats();
  int64_t d = (int64_t)(read_mib(g_top_mib[kInt], 0, 0) - before);
  if (d != 0) {
    int c = cls_of_usize((size_t)(d < 0 ? -d : d));
    if (c >= 0 && g.thr == 0) g.internal[c] += d < 0 ? -1 : 1;
  }
  return rc;
}

// `PP probe PHASE:LABEL.small | class=cached/Δnmalloc/Δndalloc/Δnfills/Δnflushes ...` for every
// cached small class with a nonzero field (changes since the previous probe), the same for the
// large classes (`.large`, no fills or flushes per class there), then the tcache_bytes check.
void probe(const char* phase, const char* label) {
  read_snap(g_cur);
  uint64_t bytes = 0;
  for (int large = 0; large < 2; large++) {
    put("%02d probe %s:%s.%s |", g.ph, phase, label, large ? "large" : "small");
    bool any = false;
    for (unsigned i = large ? g.nbins : 0; i < (large ? g.nhbins : g.nbins); i++) {
      long n = cached(g_cur, i);
      bytes += (uint64_t)n * g.size[i];
      long d[4];
      const int ks[4] = {kNm, kNd, kNf, kNfl};
      bool nz = n != 0;
      for (int k = 0; k < 4; k++) {
        nz |= (d[k] = (long)(g_cur.c[i][ks[k]] - g_pprev.c[i][ks[k]])) != 0;
      }
      if (!nz) continue;
      any = true;
      if (large)
        put(" %zu=%ld/%ld/%ld", g.size[i], n, d[0], d[1]);
      else
        put(" %zu=%ld/%ld/%ld/%ld/%ld", g.size[i], n, d[0], d[1], d[2], d[3]);
    }
    if (!any) put(" -");
    finish(false);
  }
  uint64_t tb = g_cur.top[kTb] - g_base.top[kTb];
  put("%02d check %s:%s.tcache_bytes | -> ", g.ph, phase, label);
  if (bytes != tb) {
    put("BAD: sum of cached x size %llu != tcache_bytes %llu", (unsigned long long)bytes,
        (unsigned long long)tb);
  } else {
    put("ok");
  }
  finish(bytes != tb);
  std::memcpy(&g_pprev, &g_cur, sizeof(Snap));
}

void put_line(int ph, const char* phase, const char* what, long long v) {
  put("%02d stat %s:thr.%s | -> %lld", ph, phase, what, v);
  finish(false);
}

void report(const char* phase) {
  const int ph = g.ph;
  probe(phase, "end");
  g.ph++;
  const Snap &s = g_cur, &b = g_prev;
  for (int k = 0; k < kNTop - 1; k++) put_line(ph, phase, kTopNames[k], s.top[k] - b.top[k]);
  put("%02d stat %s:all.tcache_bytes | -> %lld", ph, phase, (long long)(s.all_tb - b.all_tb));
  finish(false);
  char what[64];
  for (size_t c : kSmall) {
    int i = cls_of_usize(c);
    for (int k = 0; k < kNC; k++) {
      std::snprintf(what, sizeof(what), "bins.%d.%s", i, kBinNames[k]);
      put_line(ph, phase, what, (long long)(s.c[i][k] - b.c[i][k]));
    }
    std::snprintf(what, sizeof(what), "bins.%d.cached", i);
    put_line(ph, phase, what, cached(s, i));
  }
  for (size_t c : kLarge) {
    int i = cls_of_usize(c);
    for (int k = 0; k < 4; k++) {
      std::snprintf(what, sizeof(what), "lextents.%d.%s", i - (int)g.nbins, kLextNames[k]);
      put_line(ph, phase, what, (long long)(s.c[i][k] - b.c[i][k]));
    }
    std::snprintf(what, sizeof(what), "lextents.%d.cached", i - (int)g.nbins);
    put_line(ph, phase, what, cached(s, i));
  }
  int t = g.tick_cls;
  std::snprintf(what, sizeof(what), "lextents.%u.nmalloc", g.tick_lext);
  put_line(ph, phase, what, (long long)(s.c[t][kNm] - b.c[t][kNm]));
  std::memcpy(&g_prev, &s, sizeof(Snap));
}

int ctl_bool(const char* name, bool v) { return mallctl(name, nullptr, nullptr, &v, sizeof(v)); }

bool setup() {
  std::memset(&g, 0, sizeof(g));
  size_t len = sizeof(unsigned);
  if (mallctl("arenas.nbins", &g.nbins, &len, nullptr, 0) != 0) return false;
  len = sizeof(unsigned);
  if (mallctl("arenas.nhbins", &g.nhbins, &len, nullptr, 0) != 0) return false;
  if (g.nhbins + 1 > (unsigned)kMaxCls || g.nhbins <= g.nbins) return false;
  char name[128];
  for (unsigned i = 0; i < g.nhbins; i++) {
    len = sizeof(size_t);
    if (i < g.nbins)
      std::snprintf(name, sizeof(name), "arenas.bin.%u.size", i);
    else
      std::snprintf(name, sizeof(name), "arenas.lextent.%u.size", i - g.nbins);
    if (mallctl(name, &g.size[i], &len, nullptr, 0) != 0) return false;
  }
  // The tick class: the lextent of 64 KiB, after the cached ones.
  unsigned nlext = 0;
  len = sizeof(nlext);
  mallctl("arenas.nlextents", &nlext, &len, nullptr, 0);
  for (unsigned j = g.nhbins - g.nbins; j < nlext; j++) {
    size_t sz = 0;
    len = sizeof(sz);
    std::snprintf(name, sizeof(name), "arenas.lextent.%u.size", j);
    if (mallctl(name, &sz, &len, nullptr, 0) == 0 && sz == kTick) {
      g.size[g.nhbins] = sz;
      g.tick_lext = j;
      g.tick_cls = (int)g.nhbins;
      break;
    }
  }
  if (g.tick_cls == 0) return false;
  g.ncls = g.nhbins + 1;
  for (int k = 0; k < kNC; k++) {
    std::snprintf(name, sizeof(name), "stats.arenas.0.bins.0.%s", kBinNames[k]);
    if (!translate(name, g_bin_mib[k])) return false;
  }
  for (int k = 0; k < 4; k++) {
    std::snprintf(name, sizeof(name), "stats.arenas.0.lextents.0.%s", kLextNames[k]);
    if (!translate(name, g_lext_mib[k])) return false;
  }
  for (int k = 0; k < kNTop; k++) {
    std::snprintf(name, sizeof(name), "stats.arenas.0.%s", kTopNames[k]);
    if (!translate(name, g_top_mib[k])) return false;
  }
  len = sizeof(unsigned);
  if (mallctl("thread.arena", &g.thr, &len, nullptr, 0) != 0) return false;
  size_t tcache_max = 0, gc_incr = 0, gc_delay = 0;
  len = sizeof(size_t);
  mallctl("arenas.tcache_max", &tcache_max, &len, nullptr, 0);
  len = sizeof(size_t);
  mallctl("opt.tcache_gc_incr_bytes", &gc_incr, &len, nullptr, 0);
  len = sizeof(size_t);
  mallctl("opt.tcache_gc_delay_bytes", &gc_delay, &len, nullptr, 0);
  bool bounded = false;
  len = sizeof(bounded);
  mallctl("opt.bounded_coalesce", &bounded, &len, nullptr, 0);
  // Realign the GC events and start from a fresh, empty cache (see the header).
  int rc = with_internal([] { return ctl_bool("thread.tcache.enabled", false); });
  free(malloc(kTick));
  rc |= with_internal([] { return ctl_bool("thread.tcache.enabled", true); });
  std::memset(g.internal, 0, sizeof(g.internal));
  read_snap(g_base);
  std::memcpy(&g_prev, &g_base, sizeof(Snap));
  std::memcpy(&g_pprev, &g_base, sizeof(Snap));
  put("00 setup setup | nbins=%u nhbins=%u tcache_max=%zu gc_incr=%zu gc_delay=%zu thread_arena=%u"
      " tick_lextent=%u rc=%d",
      g.nbins, g.nhbins, tcache_max, gc_incr, gc_delay, g.thr, g.tick_lext, rc);
  finish(rc != 0 || bounded || gc_incr > kTick || tcache_max != 32768);  // a tick: >= 1 GC step
  return true;
}

// --- Phases.
void* g_hold[2400];

// Each small class alone: 1.5..2.5 bins' worth allocated (fills), then all freed (flushes).
void ph_fill_flush(Rng& r) {
  for (size_t c : kSmall) {
    unsigned i = cls_of_usize(c), cap = (unsigned)(c <= 160   ? 200
                                                   : c == 256 ? 32
                                                   : c == 448 ? 128
                                                   : c == 640 ? 64
                                                              : 20);
    size_t n = cap * 3 / 2 + r.below(cap);
    for (size_t k = 0; k < n; k++) g_hold[k] = am(in_class(r, i));
    char label[32];
    std::snprintf(label, sizeof(label), "alloc%zu", c);
    probe("fill_flush", label);
    for (size_t k = n; k-- > 0;) {
      size_t j = r.below(k + 1);  // a seeded order
      std::swap(g_hold[j], g_hold[k]);
      fr(g_hold[k]);
    }
    std::snprintf(label, sizeof(label), "free%zu", c);
    probe("fill_flush", label);
  }
}

// Bins warmed, then GC ticks visit them while idle; then each class drained.
void ph_idle_gc(Rng& r, const size_t* cls, size_t ncls, const char* phase) {
  for (size_t t = 0; t < ncls; t++) {
    unsigned i = cls_of_usize(cls[t]);
    size_t n = 20 + r.below(40);
    for (size_t k = 0; k < n; k++) g_hold[k] = am(in_class(r, i));
    for (size_t k = 0; k < n; k++) fr(g_hold[k]);
  }
  probe(phase, "warm");
  char label[32];
  for (int round = 0; round < 6; round++) {
    tick(7 + (int)r.below(10));
    std::snprintf(label, sizeof(label), "ticks%d", round);
    probe(phase, label);
  }
  for (size_t t = 0; t < ncls; t++) {
    unsigned i = cls_of_usize(cls[t]);
    size_t n = 60 + r.below(60);
    for (size_t k = 0; k < n; k++) g_hold[k] = am(in_class(r, i));
    std::snprintf(label, sizeof(label), "drain%zu", cls[t]);
    probe(phase, label);
    for (size_t k = 0; k < n; k++) fr(g_hold[k]);
  }
  probe(phase, "freed");
}

// Classes that run dry between ticks: their fills grow back (lg_fill_div decreases).
void ph_busy_gc(Rng& r) {
  constexpr size_t kBusy[] = {96, 448, 2560};
  char label[32];
  for (int it = 0; it < 48; it++) {
    size_t c = kBusy[it % 3];
    unsigned i = cls_of_usize(c);
    size_t n = 15 + r.below(50);
    for (size_t k = 0; k < n; k++) g_hold[k] = am(in_class(r, i));
    tick(1 + (int)r.below(4));
    for (size_t k = 0; k < n; k++) fr(g_hold[k]);
    if (it % 8 == 7) {
      std::snprintf(label, sizeof(label), "it%d", it);
      probe("busy_gc", label);
    }
  }
}

// Large cached classes: misses, overflow (flush to 10), idle GC, reuse.
void ph_large(Rng& r) {
  char label[32];
  for (size_t c : kLarge) {
    unsigned i = cls_of_usize(c);
    size_t n = 15 + r.below(20);
    for (size_t k = 0; k < n; k++) g_hold[k] = am(in_class(r, i));
    for (size_t k = 0; k < n; k++) fr(g_hold[k]);
    std::snprintf(label, sizeof(label), "burst%zu", c);
    probe("large_tc", label);
  }
  ph_idle_gc(r, kLarge, 5, "large_gc");
  for (int it = 0; it < 30; it++) {
    size_t n = 1 + r.below(12);
    for (size_t k = 0; k < n; k++) g_hold[k] = am(in_class(r, cls_of_usize(r.pick(kLarge))));
    if (r.chance(40)) tick();
    for (size_t k = 0; k < n; k++) fr(g_hold[k]);
  }
}

// A mix of small and large classes (used with the cache off, on, and an explicit cache).
void mix(Rng& r, int n, int flags) {
  size_t held = 0;
  for (int it = 0; it < n; it++) {
    if (held == 0 || (held < 2000 && r.chance(55))) {
      size_t c = r.chance(80) ? r.pick(kSmall) : r.pick(kLarge);
      g_hold[held++] = am(in_class(r, cls_of_usize(c)), flags);
    } else {
      size_t j = r.below(held);
      fr(g_hold[j], flags);
      g_hold[j] = g_hold[--held];
    }
    if (r.chance(2)) tick();
  }
  while (held) fr(g_hold[--held], flags);
}

void note_rc(const char* what, int rc) {
  put("%02d note %s | -> %d", g.ph, what, rc);
  finish(rc != 0);
}

// Large in-place resizes: rallocx / xallocx growth and shrinking.
void ph_resize(Rng& r) {
  constexpr size_t kSizes[] = {16384, 20480, 28672, 32768, 40960, 65536, 98304, 131072, 262144};
  static void* blk[24];
  for (auto& p : blk) p = am(r.pick(kSizes));
  for (int it = 0; it < 60; it++) {
    void*& p = blk[r.below(24)];
    if (p == nullptr) continue;
    size_t old = sallocx(p, 0);
    unsigned u = (unsigned)r.below(100);
    size_t want = u < 60 ? old + 1 + r.below(old) : 16384 + r.below(old > 16384 ? old - 16384 : 1);
    int c_old = cls_of_usize(old);
    if (u < 35 || (u >= 60 && u < 80)) {
      size_t extra = r.chance(30) ? r.below(old) : 0;
      size_t got = xallocx(p, want, extra, 0);
      put("%02d call resize:xallocx | #%d old=%zu size=%zu extra=%zu -> %zu", g.ph, it, old, want,
          extra, got);
      finish(got < 16384);
      int c_new = cls_of_usize(sallocx(p, 0));
      if (c_old >= 0) g.live[c_old]--;
      if (c_new >= 0) g.live[c_new]++;
    } else {
      void* q = rallocx(p, want, 0);
      put("%02d call resize:rallocx | #%d old=%zu size=%zu ->", g.ph, it, old, want);
      if (q == nullptr) {
        put(" NULL");
      } else {
        bool same = ((uintptr_t)q >> 12) == ((uintptr_t)p >> 12);
        put(" %s usize=%zu", same ? "in-place" : "moved", sallocx(q, 0));
        int c_new = cls_of_usize(sallocx(q, 0));
        if (c_old >= 0) g.live[c_old]--;
        if (c_new >= 0) g.live[c_new]++;
        p = q;
      }
      finish(q == nullptr);
    }
    if (it % 20 == 19) probe("resize", "step");
  }
  for (auto& p : blk) fr(p), p = nullptr;
}

// GC steps driven by in-place resizes alone: idle cached bins, then a 1 MiB block shrunk to
// 512 KiB and grown back in place, over and over (each call moves at least 512 KiB of allocated
// and deallocated bytes: one allocation and one deallocation GC step each), with xallocx and
// then rallocx. No cached class is touched, so only GC steps can change the cached counts.
void ph_resize_gc(Rng& r) {
  constexpr size_t kWarm[] = {1024, 16384, 32768};
  for (size_t c : kWarm) {
    unsigned i = cls_of_usize(c);
    size_t n = 8 + r.below(8);
    for (size_t k = 0; k < n; k++) g_hold[k] = am(in_class(r, i));
    for (size_t k = 0; k < n; k++) fr(g_hold[k]);
  }
  probe("resize_gc", "warm");
  void* p = mallocx(1 << 20, MALLOCX_TCACHE_NONE);
  int moved = 0, failed = 0;
  char label[32];
  for (int it = 0; it < 80; it++) {
    size_t want = it % 2 ? 1 << 20 : 512 << 10;
    if (it < 40) {
      failed += xallocx(p, want, 0, 0) != want;
    } else {
      void* q = rallocx(p, want, 0);
      moved += q != p;
      failed += q == nullptr;
      if (q != nullptr) p = q;
    }
    if (it % 20 == 19) {
      std::snprintf(label, sizeof(label), "%s%d", it < 40 ? "xallocx" : "rallocx", it);
      probe("resize_gc", label);
    }
  }
  put("%02d note resize_gc:calls | 80 resizes: %d moved, %d failed", g.ph, moved, failed);
  finish(p == nullptr || failed != 0);
  dallocx(p, MALLOCX_TCACHE_NONE);
}

bool run_stream(FILE* out) {
  jt::diff::begin(out);
  jt::diff::CrashReport crash_report;
  if (!setup()) {
    put("00 setup setup | FAILED");
    finish(true);
    return false;
  }
  g.ph = 1;
  auto rng = [] { return Rng{kSeed * 1000003 + (uint64_t)g.ph}; };
  Rng r = rng();
  ph_fill_flush(r), report("fill_flush");
  constexpr size_t kIdle[] = {8, 256, 640, 1024, 4096, 14336};
  r = rng(), ph_idle_gc(r, kIdle, 6, "idle_gc"), report("idle_gc");
  r = rng(), ph_busy_gc(r), report("busy_gc");
  r = rng(), ph_large(r), report("large_tc");
  note_rc("thread.tcache.flush", mallctl("thread.tcache.flush", nullptr, nullptr, nullptr, 0));
  report("thread_flush");
  note_rc("thread.tcache.enabled=false",
          with_internal([] { return ctl_bool("thread.tcache.enabled", false); }));
  r = rng(), mix(r, 1500, 0), report("disabled");
  note_rc("thread.tcache.enabled=true",
          with_internal([] { return ctl_bool("thread.tcache.enabled", true); }));
  r = rng(), mix(r, 1500, 0), report("enabled");
  note_rc("tcache.create", with_internal([] {
            size_t len = sizeof(g.tc);
            return mallctl("tcache.create", &g.tc, &len, nullptr, 0);
          }));
  report("tc_create");
  r = rng(), mix(r, 2500, MALLOCX_TCACHE(g.tc)), report("explicit");
  note_rc("tcache.flush", with_internal([] {
            return mallctl("tcache.flush", nullptr, nullptr, &g.tc, sizeof(g.tc));
          }));
  report("explicit_flush");
  with_internal([] {
    fr(am(8, MALLOCX_TCACHE(g.tc)), MALLOCX_TCACHE(g.tc));
    return 0;
  });
  report("explicit_touch");
  r = rng(), mix(r, 600, MALLOCX_TCACHE(g.tc)), report("explicit_reuse");
  note_rc("tcache.destroy", with_internal([] {
            return mallctl("tcache.destroy", nullptr, nullptr, &g.tc, sizeof(g.tc));
          }));
  report("tc_destroy");
  r = rng(), ph_resize(r), report("resize");
  r = rng(), ph_resize_gc(r), report("resize_gc");
  note_rc("thread.tcache.flush", mallctl("thread.tcache.flush", nullptr, nullptr, nullptr, 0));
  report("end");
  return jt::diff::g_failures == 0;
}

// --- The comparison (differential.h): glob on the line's name, PHASE:WHAT. Nothing is dropped
// as implementation-dependent: fills, flushes and the GC are specified, and every other line
// agrees.
using jt::diff::Excl;
constexpr const char *kSlab1 = "slab_sizes:1-4096:1", *kMul0 = "lg_tcache_nslots_mul:0",
                     *kMax50 = "tcache_nslots_small_max:50";

// compat.md#explicit-tcache-flush: 5.3.0's tcache.flush destroys the explicit cache, freeing its
// one internal 28 KiB block (lextents.3: ndalloc +1 beyond the cached blocks; the probe assigns
// the internal change to that class, so only Δndalloc shows) and merging its counters (one more
// large.nflushes per cached large class: 10 vs 5); the next use builds a new cache (lextents.3
// nmalloc/nrequests/curlextents +1, large.nfills +1). We keep the cache.
constexpr Excl kDocumented[] = {
    {"explicit_flush:end.large", nullptr, nullptr, "explicit-tcache-flush"},
    {"explicit_flush:thr.large.nflushes", nullptr, nullptr, "explicit-tcache-flush"},
    {"explicit_flush:thr.lextents.3.*", nullptr, nullptr, "explicit-tcache-flush"},
    {"explicit_touch:end.large", nullptr, nullptr, "explicit-tcache-flush"},
    {"explicit_touch:thr.large.nfills", nullptr, nullptr, "explicit-tcache-flush"},
    {"explicit_touch:thr.lextents.3.*", nullptr, nullptr, "explicit-tcache-flush"},
    // The same under variants whose smaller slot counts put the cache's block in another class.
    {"explicit_*:thr.lextents.1.*", nullptr, nullptr, "explicit-tcache-flush", kSlab1},
    {"explicit_*:thr.lextents.2.*", nullptr, nullptr, "explicit-tcache-flush", kMul0},
    {"explicit_*:thr.lextents.0.*", nullptr, nullptr, "explicit-tcache-flush", kMax50},
};

// KNOWN BUGS of this library; delete an entry with its fix.
constexpr Excl kKnownBugs[] = {
    {nullptr, nullptr, nullptr, nullptr},
};

}  // namespace

TEST(stream_in_process) {
  run_stream(nullptr);
  jt::note("%d failures", jt::diff::g_failures);
}

TEST(same_cache_behaviour_as_5_3_0) {
  jt::diff::compare_with_reference(kDocumented, kKnownBugs, jt::diff::Layout::kSame);
}

// The stream under option variants (differential.h); decay stays off and bounded_coalesce off
// beneath each. Fills, flushes and GC steps stay byte-driven under all of them: the layout
// options (arenas, slab sizes, shards) and the slot-count, flush and GC-period options change
// the counts, never their determinism.
constexpr const char* kConfs[] = {"narenas:1",
                                  "junk:true",
                                  "zero:true",
                                  kSlab1,
                                  "bin_shards:1-14336:2",
                                  kMul0,
                                  kMax50,
                                  "lg_tcache_flush_small_div:2",
                                  "tcache_gc_incr_bytes:32768"};

TEST(same_cache_behaviour_under_options) {
  jt::diff::compare_with_reference_under(kConfs, kDocumented, kKnownBugs,
                                           jt::diff::Layout::kSame);
}

int main(int argc, char** argv) { return jt::diff::main(argc, argv, run_stream); }
