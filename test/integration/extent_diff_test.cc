// extent_diff_test: a differential test of PAGE-LEVEL behaviour against jemalloc 5.3.0.
//
//
//
// Printed counters: pactive, pdirty, pmuzzy, retained, mapped (bytes; both include the arena's base
// blocks, which agree: one 2 MiB block per new arena), {dirty,muzzy}_{npurge,nmadvise, purged},
// large.{nmalloc,ndalloc,allocated}, small.{nmalloc,ndalloc,allocated},
// extents.<j>.{ndirty,nmuzzy,nretained,*_bytes}, stats.{active,retained}. Not printed: stats.mapped
// (it includes the global metadata, whose rtree leaves -- 2 MiB each, one per GiB of address space
// touched -- depend on where mmap places the arenas: 5.3.0's varies by 6 MiB from run to run in
// phase large_alloc). Checked but not printed: stats.arenas.<i>.resident (= the metadata's resident
// bytes + active and dirty pages; the metadata part is implementation-dependent: which base pages
// our descriptors and rtree leaves touch -- seen differing by 1..11 pages in
// create/resize/dirty_keep/slabs/huge while pactive and pdirty agreed) and stats.resident (the
// same).
//
// Determinism: the program's malloc_conf turns decay off (both libraries read it), and
// malloc_conf_2_conf_harder turns our coalescing bound and our unbounded dirty reuse before growth
// off (read by this library only: doc/compat.md#conf-2-conf-harder) so that extents merge and are
// reused as in 5.3.0.
#include <errno.h>

#include <algorithm>

#include "differential.h"

const char* malloc_conf = "tcache_gc_incr_bytes:1099511627776,dirty_decay_ms:-1,muzzy_decay_ms:-1";
const char* malloc_conf_2_conf_harder =
    "preset:jemalloc-5.3.0";

namespace {

// A child started with MALLOC_CONF exactly "bounded_coalesce:true" runs with our default bound:
// the override is dropped before the library reads its options (.preinit_array functions run
// before any library constructor; if the library initialized even earlier, the stream's setup
// line reports the wrong setting and fails).
void pick_conf(int, char**, char** envp) {
  for (char** e = envp; e != nullptr && *e != nullptr; e++) {
    if (std::strcmp(*e, "MALLOC_CONF=bounded_coalesce:true") == 0) {
      malloc_conf_2_conf_harder = nullptr;
    }
  }
}
__attribute__((section(".preinit_array"), used)) void (*const g_pick_conf)(int, char**,
                                                                           char**) = pick_conf;

using jt::diff::finish;
using jt::diff::put;
using jt::diff::Rng;

constexpr uint64_t kSeed = 0x6578746469666621ull;
constexpr size_t kPage = 4096;
constexpr unsigned kDestroyed = 4097;  // MALLCTL_ARENAS_DESTROYED
constexpr ssize_t kLong = 3600000;     // a decay time that never expires during the run
constexpr size_t kMaxPsz = 256;

constexpr size_t kLarge[] = {16384,  20480,  28672,   40960,   65536,   114688, 262144,
                             393216, 655360, 1 << 20, 1572864, 2621440, 4 << 20};

// --- Counters.
constexpr const char* kNames[] = {
    "pactive",         "pdirty",        "pmuzzy",          "retained",       "dirty_npurge",
    "dirty_nmadvise",  "dirty_purged",  "muzzy_npurge",    "muzzy_nmadvise", "muzzy_purged",
    "large.nmalloc",   "large.ndalloc", "large.allocated", "small.nmalloc",  "small.ndalloc",
    "small.allocated", "mapped",        "resident"};
enum {
  kPactive,
  kPdirty,
  kPmuzzy,
  kRetained,
  kDNpurge,
  kDNmadvise,
  kDPurged,
  kMNpurge,
  kMNmadvise,
  kMPurged,
  kLNmalloc,
  kLNdalloc,
  kLAllocated,
  kSNmalloc,
  kSNdalloc,
  kSAllocated,
  kMapped,
  kResident,
  kN
};
constexpr int kNPrinted = kResident;  // resident is checked, not printed (see the header)
constexpr const char* kExtNames[] = {"ndirty",      "nmuzzy",      "nretained",
                                     "dirty_bytes", "muzzy_bytes", "retained_bytes"};

struct Mib {
  size_t m[8], len;
};
Mib g_mib[kN], g_ext_mib[6];

bool translate(const char* name, Mib& out) {
  out.len = 8;
  return mallctlnametomib(name, out.m, &out.len) == 0;
}

bool read_at(Mib mib, unsigned ind, size_t j, uint64_t* v) {
  mib.m[2] = ind;
  if (mib.len == 6) mib.m[4] = j;  // stats.arenas.<i>.extents.<j>.X
  *v = 0;
  size_t len = sizeof(*v);  // size_t and uint64_t counters alike: 8 bytes on x86-64
  return mallctlbymib(mib.m, mib.len, v, &len, nullptr, 0) == 0;
}

struct Snap {
  bool present;
  uint64_t c[kN];
  uint64_t ext[kMaxPsz][6];
};

enum View { kMan, kHugeV, kDst, kNViews };
constexpr const char* kViewNames[] = {"man", "huge", "dst"};

struct State {
  unsigned man, huge, npsz;
  bool have_man, have_huge, huge_auto;  // huge_auto: no huge arena (oversize_threshold:0)
  int ph;
  uint64_t g_active, g_retained;
} g;
Snap g_prev[kNViews], g_cur[kNViews];

bool view_index(int v, unsigned* ind) {
  switch (v) {
    case kMan: *ind = g.man; return g.have_man;
    case kHugeV: *ind = g.huge; return g.have_huge;
    default: *ind = kDestroyed; return true;
  }
}

void read_snap(unsigned ind, Snap& s) {
  std::memset(&s, 0, sizeof(s));
  s.present = read_at(g_mib[kDNpurge], ind, 0, &s.c[kDNpurge]);
  if (!s.present) return;
  for (int k = 0; k < kN; k++) read_at(g_mib[k], ind, 0, &s.c[k]);
  for (unsigned j = 0; j < g.npsz; j++) {
    for (int k = 0; k < 6; k++) read_at(g_ext_mib[k], ind, j, &s.ext[j][k]);
  }
}

uint64_t global_stat(const char* name) {
  size_t v = 0, len = sizeof(v);
  return mallctl(name, &v, &len, nullptr, 0) == 0 ? v : ~(uint64_t)0;
}

int arena_action(unsigned ind, const char* what) {
  char name[64];
  std::snprintf(name, sizeof(name), "arena.%u.%s", ind, what);
  return mallctl(name, nullptr, nullptr, nullptr, 0);
}

int set_decay(unsigned ind, const char* which, ssize_t ms) {
  char name[64];
  std::snprintf(name, sizeof(name), "arena.%u.%s_decay_ms", ind, which);
  return mallctl(name, nullptr, nullptr, &ms, sizeof(ms));
}

// A note line for a mallctl action or setting; a nonzero return is a failure.
void ctl_note(const char* what, int rc) {
  put("%02d note %s | -> %d", g.ph, what, rc);
  finish(rc != 0);
}

void decay_both(unsigned ind, const char* view, ssize_t dirty, ssize_t muzzy) {
  char what[64];
  std::snprintf(what, sizeof(what), "arena.<%s>.muzzy_decay_ms=%zd", view, muzzy);
  ctl_note(what, set_decay(ind, "muzzy", muzzy));
  std::snprintf(what, sizeof(what), "arena.<%s>.dirty_decay_ms=%zd", view, dirty);
  ctl_note(what, set_decay(ind, "dirty", dirty));
}

bool setup() {
  std::memset(&g, 0, sizeof(g));
  char name[128];
  for (int k = 0; k < kN; k++) {
    std::snprintf(name, sizeof(name), "stats.arenas.0.%s", kNames[k]);
    if (!translate(name, g_mib[k])) return false;
  }
  for (int k = 0; k < 6; k++) {
    std::snprintf(name, sizeof(name), "stats.arenas.0.extents.0.%s", kExtNames[k]);
    if (!translate(name, g_ext_mib[k])) return false;
  }
  // The page-size classes: extents.<j> answers for j < SC_NPSIZES (199 with 4 KiB pages).
  uint64_t v;
  while (g.npsz < kMaxPsz && read_at(g_ext_mib[0], 0, g.npsz, &v)) g.npsz++;
  bool bounded = false;  // ENOENT in 5.3.0, which has no bound
  size_t len = sizeof(bounded);
  mallctl("opt.bounded_coalesce", &bounded, &len, nullptr, 0);
  const char* conf = std::getenv("MALLOC_CONF");
  bool want_bounded = conf != nullptr && std::strcmp(conf, "bounded_coalesce:true") == 0;
  size_t oversize = 0;
  len = sizeof(oversize);
  mallctl("opt.oversize_threshold", &oversize, &len, nullptr, 0);
  bool retain = false;
  len = sizeof(retain);
  mallctl("opt.retain", &retain, &len, nullptr, 0);
  if (!jt::refresh_stats()) return false;
  for (int vw = 0; vw < kNViews; vw++) {
    unsigned ind;
    if (view_index(vw, &ind)) read_snap(ind, g_prev[vw]);
  }
  g.g_active = global_stat("stats.active");
  g.g_retained = global_stat("stats.retained");
  put("00 setup setup | npsizes=%u oversize_threshold=%zu retain=%d", g.npsz, oversize, retain);
  finish(bounded != want_bounded);
  return true;
}

// --- Checks (both libraries); the first violation in buf, or empty.
void check_view(const Snap& s, char* buf, size_t cap) {
  buf[0] = '\0';
  uint64_t sum[6] = {};
  for (unsigned j = 0; j < g.npsz; j++) {
    for (int k = 0; k < 6; k++) sum[k] += s.ext[j][k];
  }
  if ((s.c[kPactive] + s.c[kPdirty] + s.c[kPmuzzy]) * kPage > s.c[kMapped]) {
    std::snprintf(buf, cap, "(pactive + pdirty + pmuzzy) pages %llu > mapped %llu",
                  (unsigned long long)((s.c[kPactive] + s.c[kPdirty] + s.c[kPmuzzy]) * kPage),
                  (unsigned long long)s.c[kMapped]);
  } else if (sum[3] != s.c[kPdirty] * kPage) {
    std::snprintf(buf, cap, "sum of extents dirty_bytes %llu != pdirty pages",
                  (unsigned long long)sum[3]);
  } else if (sum[4] != s.c[kPmuzzy] * kPage) {
    std::snprintf(buf, cap, "sum of extents muzzy_bytes %llu != pmuzzy pages",
                  (unsigned long long)sum[4]);
  } else if (sum[5] != s.c[kRetained]) {
    std::snprintf(buf, cap, "sum of extents retained_bytes %llu != retained %llu",
                  (unsigned long long)sum[5], (unsigned long long)s.c[kRetained]);
  }
}

void put_ext(int ph, const char* phase, const char* view, const Snap& s, int cnt, const char* n) {
  put("%02d ext %s:%s.extents.%s | ->", ph, phase, view, n);
  if (!s.present) put(" absent");
  for (unsigned j = 0; j < g.npsz; j++) {
    if (s.ext[j][cnt] || s.ext[j][cnt + 3]) {
      put(" %u:%llu/%llu", j, (unsigned long long)s.ext[j][cnt],
          (unsigned long long)(s.ext[j][cnt + 3] / kPage));
    }
  }
  finish(false);
}

// Ends phase g.ph: refreshes the statistics and prints every view's changes, then the checks.
void report(const char* phase) {
  const int ph = g.ph++;
  if (!jt::refresh_stats()) {
    put("%02d epoch %s:epoch | -> FAILED", ph, phase);
    finish(true);
    return;
  }
  for (int vw = 0; vw < kNViews; vw++) {
    unsigned ind = 0;
    Snap& s = g_cur[vw];
    if (view_index(vw, &ind))
      read_snap(ind, s);
    else
      std::memset(&s, 0, sizeof(s));
    const Snap& b = g_prev[vw];
    const char* vn = kViewNames[vw];
    for (int k = 0; k < kNPrinted; k++) {
      if (vw == kDst && !(k >= kDNpurge && k <= kMPurged)) continue;  // gauges read 0 there
      if (vw == kHugeV && k == kMapped && g.huge_auto) continue;      // arena 0: global metadata
      put("%02d stat %s:%s.%s | -> ", ph, phase, vn, kNames[k]);
      if (s.present)
        put("%lld", (long long)(s.c[k] - b.c[k]));
      else
        put("absent");
      finish(false);
    }
    if (vw == kDst) continue;
    put_ext(ph, phase, vn, s, 0, "dirty");
    put_ext(ph, phase, vn, s, 1, "muzzy");
    put_ext(ph, phase, vn, s, 2, "retained");
    if (!s.present) continue;
    char bad[160];
    check_view(s, bad, sizeof(bad));
    put("%02d check %s:%s.pages | -> %s%s", ph, phase, vn, bad[0] ? "BAD: " : "ok", bad);
    finish(bad[0] != '\0');
  }
  uint64_t active = global_stat("stats.active"), retained = global_stat("stats.retained");
  put("%02d stat %s:global.active | -> %lld", ph, phase, (long long)(active - g.g_active));
  finish(false);
  put("%02d stat %s:global.retained | -> %lld", ph, phase, (long long)(retained - g.g_retained));
  finish(false);
  g.g_active = active, g.g_retained = retained;
  std::memcpy(g_prev, g_cur, sizeof(g_prev));
}

// --- Blocks and where new ones land.
struct Blk {
  void* p;
  size_t usize;
};
struct Pool {
  Blk b[256];
  size_t n;
  void add(void* p) {
    if (p != nullptr && n < 256) b[n++] = Blk{p, sallocx(p, 0)};
  }
  Blk take(size_t i) {
    Blk x = b[i];
    b[i] = b[--n];
    return x;
  }
};
Pool g_live;
// Every extent the workload freed, in order (first page, pages with the pad page); "freed#k".
struct Range {
  uintptr_t start;
  size_t pages;
};
Range g_freed[1024];
size_t g_nfreed;
uintptr_t g_seen[1024];  // one page of every block ever handed out (the destroy check)
size_t g_nseen;

uintptr_t page_of(const void* p) { return (uintptr_t)p & ~(uintptr_t)(kPage - 1); }

void note_seen(const void* p) {
  if (p != nullptr && g_nseen < 1024) g_seen[g_nseen++] = page_of(p);
}

void record_free(const Blk& x) {
  // A large block's extent starts at the page holding the pointer (cache-oblivious offset) and
  // spans its usable size plus one pad page.
  if (g_nfreed < 1024) g_freed[g_nfreed++] = Range{page_of(x.p), x.usize / kPage + 1};
}

void put_place(const void* p) {
  uintptr_t pg = page_of(p);
  for (size_t k = g_nfreed; k-- > 0;) {  // the latest free that covers it
    if (pg >= g_freed[k].start && pg < g_freed[k].start + g_freed[k].pages * kPage) {
      put(" at freed#%zu+%zu", k, (size_t)((pg - g_freed[k].start) / kPage));
      return;
    }
  }
  put(" at other");
}

int g_fl;  // MALLOCX_ARENA(man) | MALLOCX_TCACHE_NONE
int g_call;

// A request inside the class (16 KiB's predecessor, 14336, is 2 KiB below it; the others' are
// at least a page below).
size_t draw_large(Rng& r) {
  size_t c = r.pick(kLarge);
  return c - r.below(c == 16384 ? 2048 : kPage);
}

void* alloc_man(const char* phase, size_t size) {
  void* p = mallocx(size, g_fl);
  put("%02d call %s:mallocx | #%d size=%zu ->", g.ph, phase, g_call++, size);
  if (p == nullptr)
    put(" NULL");
  else
    put(" usize=%zu", sallocx(p, 0)), put_place(p);
  finish(p == nullptr);
  note_seen(p);
  return p;
}

void free_blk(const Blk& x) {
  record_free(x);
  dallocx(x.p, MALLOCX_TCACHE_NONE);
}

void free_some(Rng& r, size_t k) {
  for (size_t i = 0; i < k && g_live.n; i++) free_blk(g_live.take(r.below(g_live.n)));
}

// --- Phases.
void ph_create() {
  unsigned m = UINT_MAX;
  size_t len = sizeof(m);
  g.have_man = mallctl("arenas.create", &m, &len, nullptr, 0) == 0;
  g.man = m;
  g_fl = MALLOCX_ARENA(m) | MALLOCX_TCACHE_NONE;
  ssize_t d = 0, mz = 0;
  len = sizeof(d);
  char name[64];
  std::snprintf(name, sizeof(name), "arena.%u.dirty_decay_ms", m);
  mallctl(name, &d, &len, nullptr, 0);
  std::snprintf(name, sizeof(name), "arena.%u.muzzy_decay_ms", m);
  len = sizeof(mz);
  mallctl(name, &mz, &len, nullptr, 0);
  put("%02d note create:arenas.create | -> %d dirty_decay_ms=%zd muzzy_decay_ms=%zd", g.ph,
      g.have_man ? 0 : -1, d, mz);
  finish(!g.have_man);
}

void ph_large_alloc(Rng& r) {
  for (int i = 0; i < 48; i++) g_live.add(alloc_man("large_alloc", draw_large(r)));
}

void ph_reuse(Rng& r, const char* phase, int n) {
  for (int i = 0; i < n; i++) g_live.add(alloc_man(phase, draw_large(r)));
}

// In-place shrink and grow with xallocx (extra 0: compat.md#xallocx-result does not arise),
// and rallocx growth that may or may not move.
void ph_resize(Rng& r) {
  for (int i = 0; i < 36 && g_live.n; i++) {
    size_t k = r.below(g_live.n);
    Blk& x = g_live.b[k];
    unsigned u = (unsigned)r.below(3);
    size_t want = u == 0 ? std::max<size_t>(16384, x.usize / 2 - r.below(kPage))
                         : x.usize + 1 + r.below(x.usize);
    if (u < 2) {
      size_t got = xallocx(x.p, want, 0, g_fl);
      put("%02d call resize:xallocx | #%d old=%zu size=%zu -> %zu", g.ph, g_call++, x.usize, want,
          got);
      finish(false);
      if (got < x.usize) {  // the tail became a free extent: remember it as "freed"
        if (g_nfreed < 1024) {
          g_freed[g_nfreed++] =
              Range{page_of(x.p) + got / kPage * kPage + kPage, (x.usize - got) / kPage};
        }
      }
      x.usize = got;
    } else {
      void* q = rallocx(x.p, want, g_fl);
      put("%02d call resize:rallocx | #%d old=%zu size=%zu ->", g.ph, g_call++, x.usize, want);
      if (q == nullptr) {
        put(" NULL");
      } else if (page_of(q) == page_of(x.p)) {
        put(" in-place usize=%zu", sallocx(q, 0));
      } else {
        put(" moved usize=%zu", sallocx(q, 0)), put_place(q);
        record_free(x);
      }
      finish(q == nullptr);
      if (q != nullptr) x = Blk{q, sallocx(q, 0)}, note_seen(q);
    }
  }
}

void ph_decay_call() { ctl_note("arena.<man>.decay", arena_action(g.man, "decay")); }

void ph_purge(const char* what) {
  int rc = arena_action(g.man, "purge");
  jt::refresh_stats();
  uint64_t dirty = 0, muzzy = 0;
  read_at(g_mib[kPdirty], g.man, 0, &dirty);
  read_at(g_mib[kPmuzzy], g.man, 0, &muzzy);
  put("%02d note %s:arena.<man>.purge | -> %d; pdirty=%llu pmuzzy=%llu", g.ph, what, rc,
      (unsigned long long)dirty, (unsigned long long)muzzy);
  finish(rc != 0 || dirty != 0 || muzzy != 0);
}

// Small regions of classes with 1-, 3-, 5- and 7-page slabs, all freed: emptied slabs go dirty
// (the 5- and 7-page ones are >= 16 KiB and coalesce eagerly, the others wait for the purge).
void ph_slabs(Rng& r) {
  static void* p[1200];
  constexpr size_t kSmall[] = {16, 448, 2560, 6144, 1792, 14336};
  size_t n = 0;
  for (size_t c : kSmall) {
    for (int i = 0; i < 150; i++) p[n++] = mallocx(c - r.below(8), g_fl);
  }
  for (size_t i = n; i > 1; i--) std::swap(p[i - 1], p[r.below(i)]);
  for (size_t i = 0; i < n; i++) {
    note_seen(p[i]);
    if (p[i] != nullptr) dallocx(p[i], MALLOCX_TCACHE_NONE);
  }
}

// One oversize block in the manual arena, freed.
void ph_oversize(const char* phase, size_t size) {
  void* p = alloc_man(phase, size);
  if (p != nullptr) free_blk(Blk{p, sallocx(p, 0)});
}

// Two blocks below the threshold, freed in turn: were they neighbours, the coalesced extent
// would reach the threshold and be purged eagerly (with this seed they are not).
void ph_oversize_pair() {
  void *a = alloc_man("oversize_pair", 5 << 20), *b = alloc_man("oversize_pair", 4 << 20);
  if (a != nullptr) free_blk(Blk{a, sallocx(a, 0)});
  if (b != nullptr) free_blk(Blk{b, sallocx(b, 0)});
}

// The huge arena: oversize requests of a thread on automatic arenas.
void ph_huge(size_t size) {
  void* p = malloc(size);  // not in g_seen: the huge arena outlives the manual one
  if (!g.have_huge && p != nullptr) {
    unsigned ind = UINT_MAX, narenas = 0;
    size_t len = sizeof(ind);
    if (mallctl("arenas.lookup", &ind, &len, &p, sizeof(p)) == 0) g.huge = ind, g.have_huge = true;
    len = sizeof(narenas);
    mallctl("opt.narenas", &narenas, &len, nullptr, 0);
    g.huge_auto = ind < narenas;
    put("%02d note huge:lookup | huge arena = opt.narenas%+d", g.ph, (int)ind - (int)narenas);
    finish(!g.have_huge);
    std::memset(&g_prev[kHugeV], 0, sizeof(Snap));  // new: its changes are absolute
  }
  put("%02d call huge:malloc | size=%zu -> %s", g.ph, size, p ? "ok" : "NULL");
  finish(p == nullptr);
  free(p);
}

void ph_reset(Rng& r) {
  ph_reuse(r, "reset", 6);
  for (int i = 0; i < 40; i++) note_seen(mallocx(448, g_fl));
  ctl_note("arena.<man>.reset", arena_action(g.man, "reset"));
  g_live.n = 0;
}

void ph_destroy() {
  ctl_note("arena.<man>.destroy", arena_action(g.man, "destroy"));
  size_t mapped = 0;
  for (size_t i = 0; i < g_nseen; i++) {
    mapped += msync((void*)g_seen[i], kPage, MS_ASYNC) == 0 || errno != ENOMEM;
  }
  put("%02d check destroy:unmapped | -> %zu of the pages once handed out are still mapped", g.ph,
      mapped);
  finish(mapped != 0);
  g.have_man = false;
}

bool run_stream(FILE* out) {
  jt::diff::begin(out);
  jt::diff::CrashReport crash_report;
  g_live.n = 0, g_nfreed = 0, g_nseen = 0, g_call = 0;
  std::memset(g_prev, 0, sizeof(g_prev));
  if (!setup()) {
    put("00 setup setup | FAILED");
    finish(true);
    return false;
  }
  g.ph = 1;
  auto rng = [] { return Rng{kSeed * 1000003 + (uint64_t)g.ph}; };
  Rng r = rng();
  ph_create(), report("create");
  if (!g.have_man) return false;
  // The new arena's counters start at zero: its first phase's changes are absolute.
  r = rng(), ph_large_alloc(r), report("large_alloc");
  r = rng(), free_some(r, 30), report("large_free");
  r = rng(), ph_reuse(r, "reuse", 30), report("reuse");
  r = rng(), ph_resize(r), report("resize");
  decay_both(g.man, "man", 0, kLong), report("dirty0_setting");  // dirty -> muzzy now
  r = rng(), free_some(r, 10), report("dirty0_free");            // each free purges
  ph_decay_call(), report("decay_long");                         // muzzy not yet due
  decay_both(g.man, "man", -1, kLong), report("dirty_keep_setting");
  r = rng(), ph_reuse(r, "dirty_keep", 12), free_some(r, 14), report("dirty_keep");
  ph_decay_call(), report("decay_keep");
  ph_purge("purge"), report("purge");  // dirty straight to retained, muzzy to retained
  decay_both(g.man, "man", 0, -1), report("muzzy_keep_setting");
  r = rng(), ph_reuse(r, "muzzy_keep", 10), free_some(r, 12), report("muzzy_keep");
  ph_decay_call(), report("decay_muzzy_keep");
  decay_both(g.man, "man", 0, 0), report("muzzy0_setting");
  r = rng(), ph_reuse(r, "both0", 8), free_some(r, 8), report("both0");
  decay_both(g.man, "man", -1, -1), report("keep_setting");
  r = rng(), ph_slabs(r), report("slabs");
  ph_purge("slab_purge"), report("slab_purge");
  ph_oversize("oversize_keep", 9 << 20), report("oversize_keep");
  decay_both(g.man, "man", kLong, kLong), report("long_setting");
  ph_oversize("oversize_eager", 9 << 20), report("oversize_eager");
  ph_oversize_pair(), report("oversize_pair");
  ph_huge(9 << 20), report("huge");  // the huge arena's decay is -1 here (malloc_conf)
  decay_both(g.huge, "huge", 0, 0), report("huge_decay0");
  ph_huge(10 << 20), report("huge_eager");
  r = rng(), ph_reset(r), report("reset");
  ph_purge("reset_purge"), report("reset_purge");  // keeps the reset bug out of destroy
  ph_destroy(), report("destroy");
  return jt::diff::g_failures == 0;
}

// --- The comparison (differential.h): glob on the line's name, PHASE:VIEW.COUNTER.
using jt::diff::Excl;

constexpr Excl kDocumented[] = {
    {nullptr, nullptr, nullptr, nullptr},
};

// KNOWN BUGS of this library: page-level behaviour that differs from 5.3.0 without a compat.md
// entry. Each is a bug to fix in src/; delete the entry with the fix.
constexpr Excl kKnownBugs[] = {
    {nullptr, nullptr, nullptr, nullptr},
};

}  // namespace

TEST(stream_in_process) {
  run_stream(nullptr);
  jt::note("%d failures", jt::diff::g_failures);
}

TEST(same_pages_as_5_3_0) {
  jt::diff::compare_with_reference(kDocumented, kKnownBugs, jt::diff::Layout::kSame);
}

// The stream under option variants (differential.h); the program's malloc_conf (decay off, GC out
// of reach) and bounded_coalesce:false still apply beneath each, and every phase sets the manual
// arena's decay itself. Not retain:false: freed pages go back to the kernel, which may map them
// again (destroy:unmapped) or place extents side by side: 5.3.0's record varies run to run.
constexpr const char* kConfs[] = {"lg_extent_max_active_fit:2", "oversize_threshold:0",
                                  "oversize_threshold:4194304", "narenas:1"};

TEST(same_pages_under_options) {
  jt::diff::compare_with_reference_under(kConfs, kDocumented, kKnownBugs,
                                           jt::diff::Layout::kSame);
}

// The stream on this library with its default coalescing bound, for the checks only (placement
// legitimately differs from 5.3.0 there: doc/compat.md#bounded-coalesce).
TEST(invariants_with_bounded_coalesce) {
  if (jt::is_reference()) {
    jt::skip("the reference has no coalescing bound");
    return;
  }
  const char* args[] = {"--record", nullptr};
  jt::diff::Spawned c;
  ASSERT_TRUE(jt::diff::spawn(&c, jt::diff::library_file(), args, "bounded_coalesce:true", false));
  int st = jt::diff::collect(&c, jt::diff::g_outbuf[0], sizeof(jt::diff::g_outbuf[0]), nullptr, 0,
                             60000);
  int bad = 0;
  for (char* p = jt::diff::g_outbuf[0]; const char* l = jt::diff::next_line(&p);) {
    if (std::strstr(l, "BAD") || std::strstr(l, "CRASH") || std::strstr(l, "FAIL")) {
      if (++bad <= 10) std::printf("  %s\n", l);
    }
  }
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    FAIL_MSG("the bounded_coalesce:true run ended with status %#x (%d lines flagged)", st, bad);
  }
}

int main(int argc, char** argv) { return jt::diff::main(argc, argv, run_stream); }
