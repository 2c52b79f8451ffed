// alloc_fuzz_test: a deterministic, differential fuzz test of the public allocation API.
//
// (1) Every guarantee holds on a fixed-seed stream of malloc, calloc, realloc, posix_memalign,
// aligned_alloc, memalign, valloc, malloc_usable_size and mallocx, rallocx, xallocx, sallocx,
// nallocx, dallocx, sdallocx calls with sizes at every size-class boundary +-1, 0, and sizes no
// class holds (near SIZE_MAX, PTRDIFF_MAX, the largest class), valid and invalid alignments,
// calloc products that overflow, and random MALLOCX_* flag words: usable >= request, the
// requested alignment, zeroed memory where promised (checked byte by byte), contents kept across
// a resize or a failed one, malloc_usable_size == sallocx == nallocx of the request, and no two
// live blocks overlapping (each carries a stamp checked before it is resized or freed).
// (2) Every call answers like jemalloc 5.3.0: NULL or not, the usable size, errno where the API
// documents it (posix_memalign's return code), whether the zeroing covers the request or the
// whole usable size, xallocx's result (except where a large block may grow in place: whether
// it can depends on its neighbours, see op_xallocx).  The record never holds an address;
// arenas and explicit tcaches appear as a0, a1, t0, t1.  differential.h runs the comparison;
// kDocumented excuses what doc/compat.md documents, kKnownBugs our known bugs.
//
// Only well-defined calls, so that 5.3.0 survives the stream: a block is freed once, by the
// function it may be freed with; sdallocx gets a size in [request, usable] that nallocx (with
// the block's alignment) maps to its usable size, else the call becomes dallocx; MALLOCX_ARENA
// and MALLOCX_TCACHE name only the two arenas and two tcaches the stream created (5.3.0 indexes
// its tables with any value); *allocx never get size 0 (undefined).  Sizes and alignments that
// would need between 64 MiB and 2^57 bytes of address space are never asked for: whether those
// succeed depends on the machine's overcommit policy and address space, not on the allocator.
// (3) Every line also records how the call moved the thread's counters (thread.allocated and
// thread.deallocated, read through the thread.allocatedp/deallocatedp pointers fetched once, so
// reading them allocates nothing), realloc-family lines the stats.zero_reallocs delta, and every
// 50 calls a `ctl thread.peak.read` line checks the peak (sometimes followed by
// thread.peak.reset): within [current, most any sample could have seen] since the reset, the
// exact value where those agree, and a model of 5.3.0's sampling (op_peak) once it is exact.
// Not covered: pvalloc and reallocarray, which neither library exports (test/abi/exports.txt):
// under LD_PRELOAD they would be glibc's and hand out blocks jemalloc does not own.
#include <algorithm>

#include "differential.h"

namespace {

using jt::diff::put;
using jt::diff::Rng;

constexpr uint64_t kSeed = 0x616c6c6f637aull;
constexpr int kOps = 4000;
constexpr int kSlots = 48;
constexpr size_t kSmallMax = 14336;            // SC_SMALL_MAXCLASS
constexpr size_t kMaxClass = (size_t)7 << 60;  // SC_LARGE_MAXCLASS
constexpr size_t kFeasible = (size_t)1 << 26;  // the most a request or alignment may succeed with
constexpr size_t kVast = (size_t)1 << 57;      // no mapping this large exists (57-bit user space)
constexpr int kSentinel = EDOM;                // errno before each call: "kept" if still so
constexpr int kMade = 2;                       // arenas and explicit tcaches

// --- Size classes (jemalloc 5.3.0's: 8, 16, 32, 48, 64, then four per doubling), sizes and
// alignments to ask for, and how they are written in the record.
size_t g_cls[240];
int g_ncls;

void gen_classes() {
  g_ncls = 0;
  for (size_t c : {8, 16, 32, 48, 64}) g_cls[g_ncls++] = c;
  for (int lg = 6; lg < 63; lg++) {
    for (size_t n = 1; n <= 4; n++) {
      size_t c = ((size_t)1 << lg) + n * ((size_t)1 << (lg - 2));
      if (c > kMaxClass) return;
      g_cls[g_ncls++] = c;
    }
  }
}

int classes_upto(size_t lim) { return (int)(std::upper_bound(g_cls, g_cls + g_ncls, lim) - g_cls); }

// Sizes no allocation can have: beyond the largest class, or classes needing > 2^57 bytes.
constexpr size_t kAbsurd[] = {SIZE_MAX,
                              SIZE_MAX - 1,
                              SIZE_MAX - 4095,
                              SIZE_MAX - 16383,
                              PTRDIFF_MAX,
                              (size_t)PTRDIFF_MAX + 1,
                              kMaxClass - 1,
                              kMaxClass,
                              kMaxClass + 1,
                              kVast - 1,
                              kVast,
                              kVast + 1,
                              (size_t)1 << 62,
                              ((size_t)1 << 62) + 1,
                              ((size_t)6 << 60) + 1};

// A size: 0 (or 1 where 0 is undefined), an impossible one, or a class boundary -1, 0, +1
// (small classes most often; large up to 1 MiB, 4 MiB, 32 MiB ever more rarely).
size_t draw_size(Rng& r, bool zero_ok) {
  unsigned u = (unsigned)r.below(100);
  if (u < 4) return zero_ok ? 0 : 1;
  if (u < 10) return r.pick(kAbsurd);
  size_t lim = u < 68 ? kSmallMax : u < 90 ? (1 << 20) : u < 98 ? (4 << 20) : (32 << 20);
  return g_cls[r.below(classes_upto(lim))] - 1 + r.below(3);
}

// An alignment: a power of two (most often up to a page), not a power of two, or absurd.
size_t draw_align(Rng& r) {
  static const size_t kNpot[] = {
      0, 3, 12, 24, 48, 100, 4097, 65535, ((size_t)1 << 20) + 1, (size_t)6 << 60, SIZE_MAX};
  unsigned u = (unsigned)r.below(100);
  if (u < 62) return (size_t)1 << r.below(13);
  if (u < 70) return (size_t)1 << (13 + r.below(14));
  if (u < 86) return r.pick(kNpot);
  return (size_t)1 << (57 + r.below(7));
}

bool pow2(size_t a) { return a != 0 && (a & (a - 1)) == 0; }
unsigned lg_of(size_t a) { return pow2(a) ? (unsigned)__builtin_ctzll(a) : 0; }

// The class of a size, for a record line's name: zero, small, large, vast (a class no mapping
// can hold) or huge (no class).
const char* cat(size_t n) {
  return n == 0           ? "zero"
         : n <= kSmallMax ? "small"
         : n <= kFeasible ? "large"
         : n <= kMaxClass ? "vast"
                          : "huge";
}

const char* acat(size_t a) {
  return a == 0              ? "a0"
         : !pow2(a)          ? "npot"
         : a < sizeof(void*) ? "tiny"
         : a <= kFeasible    ? "ok"
                             : "vast";
}

// n in decimal, or relative to a named limit when near one.
const char* sym(size_t n, char (&buf)[48]) {
  static const struct {
    size_t at;
    const char* name;
  } kNamed[] = {{SIZE_MAX, "SIZE_MAX"},      {PTRDIFF_MAX, "PTRDIFF_MAX"}, {kMaxClass, "MAXCLASS"},
                {(size_t)6 << 60, "6*2^60"}, {(size_t)1 << 62, "2^62"},    {kVast, "2^57"}};
  for (const auto& k : kNamed) {
    size_t d = n > k.at ? n - k.at : k.at - n;
    if (d > 65536) continue;
    if (d == 0)
      std::snprintf(buf, sizeof(buf), "%s", k.name);
    else
      std::snprintf(buf, sizeof(buf), "%s%c%zu", k.name, n > k.at ? '+' : '-', d);
    return buf;
  }
  std::snprintf(buf, sizeof(buf), "%zu", n);
  return buf;
}

template <class T>
int ctl_read(const char* name, T* v) {
  size_t len = sizeof(T);
  return mallctl(name, v, &len, nullptr, 0);
}

// --- The thread's counters. 5.3.0 adds the usable size a successful call hands out to
// thread.allocated and the usable size it takes back to thread.deallocated; a resize that
// changes the size (in place or not) does both, the allocation side first. The counters as of
// the call (mark()) to the end of its line (finish()) give the line's deltas.
uint64_t g_zero64;
const uint64_t *g_ap = &g_zero64, *g_dp = &g_zero64;  // thread.allocatedp, deallocatedp
uint64_t g_a0, g_d0;                                  // the counters at mark()
bool g_hide;     // this line's moves depend on where blocks lie: not recorded
bool g_diverge;  // this line may move the counters differently in two correct allocators
bool g_zr;       // this line records the stats.zero_reallocs delta from g_zr0
size_t g_zr0;

// thread.peak in 5.3.0: the maximum of (allocated - deallocated) - base over samples since the
// last reset (base: the difference at the reset; 0 at least). Samples are taken by each read
// and by the thread events: each side (allocation, deallocation) samples at the first call whose
// counter reaches its next point, which then becomes that counter + 64 KiB (PEAK_EVENT_WAIT).
// The test cannot know the points it inherited from before the stream, but a call that moves a
// side by >= 64 KiB certainly samples there, after which the model is exact for that side.
constexpr uint64_t kPeakWait = 64 << 10;
struct PeakModel {
  uint64_t la, ld;  // the counters as last fed
  uint64_t base;    // allocated - deallocated at the last reset
  int64_t hi;       // the most any sample since the reset could have seen
  int64_t max;      // the model's thread.peak (meaningful when valid)
  uint64_t next[2];
  bool known[2];  // whether each side's next sample point is known
  bool valid;     // both were known at the last reset
  bool diverged;  // a g_diverge line since the last reset
} g_pk;

void pk_sample(uint64_t net) { g_pk.max = std::max(g_pk.max, (int64_t)(net - g_pk.base)); }

// Feeds the moves since the last feed, as one call: the allocation side, then the deallocation
// side. reliable: the moves are the same in any correct allocator (may fix a side's point).
void pk_feed(bool reliable) {
  uint64_t a = *g_ap, d = *g_dp;
  for (int k = 0; k < 2; k++) {
    uint64_t now = k ? d : a, before = k ? g_pk.ld : g_pk.la, net = k ? a - d : a - g_pk.ld;
    if (now == before) continue;
    g_pk.hi = std::max(g_pk.hi, (int64_t)(net - g_pk.base));
    if (!g_pk.known[k] && reliable && now - before >= kPeakWait) {
      g_pk.known[k] = true, g_pk.next[k] = now;
    }
    if (g_pk.known[k] && now >= g_pk.next[k]) pk_sample(net), g_pk.next[k] = now + kPeakWait;
  }
  g_pk.la = a, g_pk.ld = d;
}

void pk_reset() {
  g_pk.base = *g_ap - *g_dp;
  g_pk.hi = g_pk.max = 0;
  g_pk.valid = g_pk.known[0] && g_pk.known[1];
  g_pk.diverged = false;
}

/// Names the call about to run (for the crash report) and starts its counter deltas.
void mark(const char* what = nullptr) {
  jt::diff::mark(what);
  g_a0 = *g_ap, g_d0 = *g_dp;
}

// Records stats.zero_reallocs' move over this line.
void zr_begin() { g_zr = ctl_read("stats.zero_reallocs", &g_zr0) == 0; }

/// Ends the line with the counter deltas since mark().
void finish(bool bad) {
  unsigned long long da = *g_ap - g_a0, dd = *g_dp - g_d0;
  pk_feed(!g_diverge && !g_hide);
  g_pk.diverged |= g_diverge || g_hide;
  if (g_hide)
    put(" | counters: not recorded");
  else
    put(" | allocated+%llu deallocated+%llu", da, dd);
  size_t zr = 0;
  if (g_zr && ctl_read("stats.zero_reallocs", &zr) == 0) put(" zero_reallocs+%zu", zr - g_zr0);
  g_hide = g_diverge = g_zr = false;
  jt::diff::finish(bad);
  g_a0 = *g_ap, g_d0 = *g_dp;
}

// --- Flags: built from parts, written symbolically.
unsigned g_arena[kMade], g_tc[kMade];

struct Flags {
  int bits;
  unsigned lg;
  bool zero;
  char text[64];
};

// tc: -2 automatic, -1 MALLOCX_TCACHE_NONE, else tcache g_tc[tc]; ar: -1 automatic, else g_arena.
Flags make_flags(unsigned lg, bool zero, int tc, int ar) {
  Flags f{MALLOCX_LG_ALIGN(lg) | (zero ? MALLOCX_ZERO : 0), lg, zero, ""};
  size_t o = 0;
  auto add = [&](const char* fmt, int v) {
    o += std::snprintf(f.text + o, sizeof(f.text) - o, "%s", o ? "|" : "");
    o += std::snprintf(f.text + o, sizeof(f.text) - o, fmt, v);
  };
  if (lg) add("LG(%d)", (int)lg);
  if (zero) add("ZERO", 0);
  if (tc == -1) f.bits |= MALLOCX_TCACHE_NONE, add("TC_NONE", 0);
  if (tc >= 0) f.bits |= MALLOCX_TCACHE(g_tc[tc]), add("TC(t%d)", tc);
  if (ar >= 0) f.bits |= MALLOCX_ARENA(g_arena[ar]), add("ARENA(a%d)", ar);
  if (o == 0) std::snprintf(f.text, sizeof(f.text), "0");
  return f;
}

int draw_tc(Rng& r) {
  unsigned u = (unsigned)r.below(100);
  return u < 60 ? -2 : u < 75 ? -1 : (int)r.below(kMade);
}

int draw_arena(Rng& r, unsigned pct) { return r.chance(pct) ? (int)r.below(kMade) : -1; }

// Alignment for an allocation: none, up to a page, up to 64 MiB, or absurd (2^57..2^63).
unsigned draw_lg(Rng& r) {
  unsigned u = (unsigned)r.below(100);
  return u < 55   ? 0
         : u < 82 ? 1 + (unsigned)r.below(12)
         : u < 92 ? 13 + (unsigned)r.below(14)
                  : 57 + (unsigned)r.below(7);
}

Flags draw_alloc_flags(Rng& r) {
  unsigned lg = draw_lg(r);
  bool zero = r.chance(30);
  int tc = draw_tc(r);
  return make_flags(lg, zero, tc, draw_arena(r, 25));
}

// --- The live blocks. Each carries a stamp (bytes at sparse offsets, keyed per block) that
// must survive until it is resized or freed.
struct Slot {
  unsigned char* p;
  size_t req, usable, stamped;  // req >= 1: the smallest size sdallocx may be given
  unsigned lg;                  // the alignment sdallocx must be given
  uint64_t key;
};
Slot g_slot[kSlots];
uint64_t g_nkeys;

unsigned char stamp_byte(uint64_t key, size_t i) {
  uint64_t x = key ^ (i * 0x9e3779b97f4a7c15ull);
  x ^= x >> 29;
  x *= 0xbf58476d1ce4e5b9ull;
  return (unsigned char)(x ^ (x >> 32));
}

// The first and last 64 bytes, and one byte every 4093 in between (each page of a large block).
template <class F>
void each_stamp_offset(size_t n, F&& f) {
  for (size_t i = 0; i < n; i = (i < 64 || i + 64 >= n) ? i + 1 : std::min(i + 4093, n - 64)) {
    f(i);
  }
}

void stamp(Slot& s) {
  s.key = ++g_nkeys * 0x2545f4914f6cdd1dull;
  s.stamped = std::min(s.req, kFeasible);
  each_stamp_offset(s.stamped, [&](size_t i) { s.p[i] = stamp_byte(s.key, i); });
}

// The first offset below lim where s's stamp is gone at p (where s's bytes are now), or
// SIZE_MAX.
size_t stamp_damage(const Slot& s, const unsigned char* p, size_t lim) {
  size_t bad = SIZE_MAX;
  each_stamp_offset(s.stamped, [&](size_t i) {
    if (i < lim && bad == SIZE_MAX && p[i] != stamp_byte(s.key, i)) bad = i;
  });
  return bad;
}

// Appends " keep=ok", or the damaged offset; returns whether intact.
bool put_keep(size_t damage) {
  if (damage == SIZE_MAX)
    put(" keep=ok");
  else
    put(" keep=BAD(offset %zu)", damage);
  return damage == SIZE_MAX;
}

bool check_stamp(const Slot& s, const unsigned char* p, size_t lim) {
  return put_keep(stamp_damage(s, p, lim));
}

bool all_zero(const unsigned char* p, size_t from, size_t to) {
  static const unsigned char kZero[1 << 16] = {};
  for (size_t n; from < to; from += n) {
    n = std::min(to - from, sizeof(kZero));
    if (std::memcmp(p + from, kZero, n) != 0) return false;
  }
  return true;
}

void put_errno(int e) {
  if (e == ENOMEM)
    put(" errno=ENOMEM");
  else if (e == EINVAL)
    put(" errno=EINVAL");
  else if (e == kSentinel)
    put(" errno=kept");
  else
    put(" errno=%d", e);
}

// A block p just returned for a request of req bytes with alignment 2^lg: its usable size and
// checks; stored in s with a fresh stamp. zero_from: the bytes from there to req must be zero
// (SIZE_MAX: no promise); nflags: the flags nallocx(req, .) must give the usable size for (-1:
// no such check). Returns whether a guarantee broke.
bool store(Slot& s, void* p, size_t req, unsigned lg, size_t zero_from, int nflags) {
  bool bad = false;
  auto* b = static_cast<unsigned char*>(p);
  size_t u = sallocx(p, 0), mus = malloc_usable_size(p);
  put(" usable=%zu", u);
  if (mus != u) bad = true, put(" BAD(malloc_usable_size %zu)", mus);
  if (u < req) bad = true, put(" BAD(usable < request)");
  // (A 0-byte request with an alignment: 5.3.0's memalign and valloc ignore the alignment and
  // hand out an 8-byte block; no object fits in it anyway.)
  size_t align = std::max<size_t>((size_t)1 << lg, u >= 16 ? 16 : 8);
  if ((uintptr_t)p % align != 0 && (req > 0 || lg == 0)) {
    bad = true, put(" BAD(not %zu-aligned)", align);
  }
  size_t n = nflags >= 0 && req > 0 ? nallocx(req, nflags) : u;
  if (n != u) bad = true, put(" BAD(nallocx %zu)", n);
  if (zero_from != SIZE_MAX) {
    bool in_req = zero_from >= req || all_zero(b, zero_from, std::min(req, kFeasible));
    bool in_usable = in_req && (zero_from >= u || all_zero(b, zero_from, std::min(u, kFeasible)));
    put(" zero=%s", in_usable ? "usable" : in_req ? "request" : "NO");
    bad |= !in_req;
  }
  s = Slot{b, std::max<size_t>(req, 1), u, 0, lg, 0};
  stamp(s);
  return bad;
}

void head(int seq, const char* fn, const char* c1, const char* c2, int si) {
  put("%05d call %s.%s%s%s | ", seq, fn, c1, c2 ? "." : "", c2 ? c2 : "");
  if (si >= 0) put("s%02d ", si);
}

// --- Allocating into an empty slot.
void op_alloc(Rng& r, int seq, int si) {
  Slot& s = g_slot[si];
  unsigned u = (unsigned)r.below(100);
  char b1[48], b2[48];
  size_t n = draw_size(r, true), a = 0, zero_from = SIZE_MAX;
  unsigned lg = 0;
  int nflags = 0, e = 0, rc = 0;
  bool has_errno = true, is_pm = false;
  void *p = nullptr, *pm_out = &g_nkeys;
  if (u < 16) {
    head(seq, "malloc", cat(n), nullptr, si);
    put("size=%s", sym(n, b1));
    mark(), errno = kSentinel, p = malloc(n), e = errno;
  } else if (u < 26) {
    static const size_t kOver[][2] = {{SIZE_MAX, 2},
                                      {2, SIZE_MAX},
                                      {(size_t)1 << 32, (size_t)1 << 32},
                                      {(size_t)1 << 33, (size_t)1 << 31},
                                      {((size_t)1 << 63) + 1, 2},
                                      {3, (size_t)1 << 62},
                                      {(size_t)1 << 29, (size_t)1 << 28},
                                      {PTRDIFF_MAX, 1},
                                      {1, kMaxClass + 1},
                                      {0, SIZE_MAX},
                                      {SIZE_MAX, 0},
                                      {SIZE_MAX, 1},
                                      {65537, (size_t)1 << 48}};
    static const size_t kNmemb[] = {0, 1, 1, 1, 2, 3, 5, 16, 100};
    size_t k = r.pick(kNmemb), m = draw_size(r, true);
    if (r.chance(15)) {  // a product that overflows, is 0 with a huge factor, or is absurd
      const size_t* pr = kOver[r.below(sizeof(kOver) / sizeof(kOver[0]))];
      k = pr[0], m = pr[1];
    } else if (m <= kFeasible && k * m > (32u << 20)) {
      m = g_cls[r.below(classes_upto(kSmallMax))];
    }
    size_t prod = 0;
    bool over = __builtin_mul_overflow(k, m, &prod);
    n = prod, zero_from = 0;
    head(seq, "calloc", over ? "overflow" : cat(prod), nullptr, si);
    put("nmemb=%s size=%s", sym(k, b1), sym(m, b2));
    mark(), errno = kSentinel, p = calloc(k, m), e = errno;
  } else if (u < 50) {
    a = draw_align(r);
    lg = lg_of(a);
    nflags = MALLOCX_LG_ALIGN(lg);
    const char* fn = u < 34   ? "posix_memalign"
                     : u < 40 ? "aligned_alloc"
                     : u < 46 ? "memalign"
                              : "valloc";
    if (u >= 46) a = 4096, lg = 12, nflags = MALLOCX_LG_ALIGN(12);
    head(seq, fn, cat(n), u < 46 ? acat(a) : nullptr, si);
    if (u < 46) put("align=%s ", sym(a, b1));
    put("size=%s", sym(n, b2));
    mark(), errno = kSentinel;
    if (u < 34)
      is_pm = true, rc = posix_memalign(&pm_out, a, n), p = rc == 0 ? pm_out : nullptr;
    else if (u < 40)
      p = aligned_alloc(a, n);
    else if (u < 46)
      p = memalign(a, n);
    else
      p = valloc(n);
    e = errno;
  } else if (u < 55) {
    head(seq, "realloc_null", cat(n), nullptr, si);
    put("size=%s", sym(n, b1));
    zr_begin(), mark(), errno = kSentinel, p = realloc(nullptr, n), e = errno;
  } else {
    n = draw_size(r, false);
    Flags f = draw_alloc_flags(r);
    lg = f.lg, nflags = f.bits, has_errno = false, zero_from = f.zero ? 0 : SIZE_MAX;
    head(seq, "mallocx", cat(n), nullptr, si);
    put("size=%s flags=%s", sym(n, b1), f.text);
    mark(), p = mallocx(n, f.bits);
  }
  if (is_pm) {  // the error is the result (errno is not part of it: 5.3.0 leaves mmap's there)
    put(" -> rc=%s", rc == 0 ? "0" : rc == EINVAL ? "EINVAL" : rc == ENOMEM ? "ENOMEM" : "other");
    if (rc != 0) put(" ptr=%s", pm_out == &g_nkeys ? "kept" : pm_out ? "changed" : "NULL");
  } else {
    put(" -> %s", p ? "ptr" : "NULL");
    if (p == nullptr && has_errno) put_errno(e);
  }
  if (p == nullptr) return finish(false);
  bool bad = store(s, p, n, lg, zero_from, nflags);
  if (n == 0 && u >= 40 && u < 50) {  // memalign/valloc(0): see kKnownBugs; no later effects
    put(" freed");
    g_diverge = true, pk_feed(false);  // the two calls as two
    free(p);
    s.p = nullptr;
  }
  finish(bad);
}

// --- Freeing a slot: free, dallocx, sdallocx (with a size nallocx maps to the usable size).
void op_free(Rng& r, int seq, int si, unsigned how) {
  Slot& s = g_slot[si];
  const char* fn = how == 0 ? "free" : how == 1 ? "dallocx" : "sdallocx";
  Flags f = make_flags(0, false, draw_tc(r), draw_arena(r, 15));
  size_t n = s.req;
  if (how == 2) {
    unsigned u = (unsigned)r.below(100);
    n = u < 40 ? s.req : u < 70 ? s.usable : s.req + r.below(s.usable - s.req + 1);
    f = make_flags(s.lg, false, draw_tc(r), -1);
    if (nallocx(n, MALLOCX_LG_ALIGN(s.lg)) != s.usable) n = s.usable;
    if (nallocx(n, MALLOCX_LG_ALIGN(s.lg)) != s.usable) how = 1, fn = "dallocx(no-size)";
  }
  head(seq, fn, cat(s.usable), nullptr, si);
  if (how == 2) put("size=%s ", n == s.req ? "req" : n == s.usable ? "usable" : "between");
  if (how != 0) put("flags=%s ", f.text);
  put("->");
  bool ok = check_stamp(s, s.p, SIZE_MAX);
  mark();
  if (how == 0)
    free(s.p);
  else if (how == 1)
    dallocx(s.p, f.bits);
  else
    sdallocx(s.p, n, f.bits);
  s.p = nullptr;
  finish(!ok);
}

// realloc(p, n) / realloc(p, 0) / rallocx: the result, whether the contents moved along.
void op_resize(Rng& r, int seq, int si, unsigned how) {
  Slot& s = g_slot[si];
  char b1[48];
  size_t n = how == 1 ? 0 : draw_size(r, false), old_usable = s.usable;
  Flags f = make_flags(0, false, -2, -1);
  if (how == 2) f = draw_alloc_flags(r);
  head(seq, how == 2 ? "rallocx" : "realloc", cat(n), nullptr, si);
  put("size=%s", sym(n, b1));
  if (how == 2) put(" flags=%s", f.text);
  zr_begin(), mark();
  errno = kSentinel;
  void* q = how == 2 ? rallocx(s.p, n, f.bits) : realloc(s.p, n);
  int e = errno;
  if (q == nullptr) {
    put(" -> NULL");
    if (how != 2) put_errno(e);
    if (n == 0) return s.p = nullptr, finish(false);  // zero_realloc:free freed it
    return finish(!check_stamp(s, s.p, SIZE_MAX));    // a failure keeps the block
  }
  put(" -> ptr");
  size_t damage = stamp_damage(s, static_cast<unsigned char*>(q), n);  // before the new stamp
  bool bad = store(s, q, n, f.lg, f.zero ? old_usable : SIZE_MAX, how == 2 ? f.bits : 0);
  finish(!put_keep(damage) || bad);
}

// xallocx: the result, the real size after it, whether they agree; contents and zeroing.
void op_xallocx(Rng& r, int seq, int si) {
  Slot& s = g_slot[si];
  char b1[48], b2[48];
  size_t n = draw_size(r, false), old_usable = s.usable, extra = 0;
  // Large blocks shrink in place: often enough to see the counters move (both sides).
  if (old_usable > kSmallMax && r.chance(30)) n = old_usable / 2 + r.below(old_usable / 2);
  unsigned u = (unsigned)r.below(100);
  if (u < 40)
    extra = 0;
  else if (u < 55)
    extra = 1 + r.below(4096);
  else if (u < 75)
    extra = draw_size(r, false);
  else {
    const size_t ex[] = {SIZE_MAX,  SIZE_MAX - n,  SIZE_MAX - n + 1,
                         kMaxClass, kMaxClass - n, PTRDIFF_MAX};
    extra = r.pick(ex);
  }
  // The alignment: none, the block's own, or one no address has. (Any other depends on where
  // the block happens to be.)
  unsigned v = (unsigned)r.below(100), lg = v < 70 ? 0 : v < 90 ? s.lg : 57 + (unsigned)r.below(7);
  Flags f = make_flags(lg, r.chance(30), r.chance(10) ? draw_tc(r) : -2, draw_arena(r, 10));
  head(seq, "xallocx", cat(n), nullptr, si);
  const char* ex = extra == SIZE_MAX - n       ? "SIZE_MAX-size"
                   : extra == SIZE_MAX - n + 1 ? "SIZE_MAX-size+1"
                   : extra == kMaxClass - n    ? "MAXCLASS-size"
                                               : sym(extra, b2);
  put("size=%s extra=%s flags=%s", sym(n, b1), ex, f.text);
  // Growing a large block in place succeeds when the pages after it are free: that depends on
  // where blocks happen to lie, which differs between two correct allocators. Such a call is
  // checked (the result is the old size, or a size between the classes of size and size +
  // extra) but its outcome is not recorded, and a grown block is shrunk back (which never
  // fails) so that later lines do not depend on it either.
  size_t target = n > kMaxClass ? 0 : n + std::min(extra, kMaxClass - n);  // 5.3.0 clamps
  bool layout = old_usable > kSmallMax && lg < 57 &&
                ((n > old_usable && n < kVast) || (target > old_usable && target < kVast));
  mark();
  size_t ret = xallocx(s.p, n, extra, f.bits), now = sallocx(s.p, 0);
  bool bad = false;
  if (layout) {
    size_t lo = n > old_usable ? nallocx(n, 0) : old_usable + 1;
    size_t hi = std::max(n > old_usable ? lo : 0, target < kVast ? nallocx(target, 0) : 0);
    bool valid = now == old_usable ? ret == old_usable
                                   : now >= lo && now <= hi && (ret == now || ret == old_usable);
    put(" -> in-place growth (outcome not recorded): %s", valid ? "valid" : "BAD");
    if (!valid) put("(ret=%zu usable=%zu)", ret, now);
    bad = !valid;
  } else {
    put(" -> ret=%zu usable=%zu%s", ret, now, ret != now ? " ret!=usable" : "");
  }
  size_t damage = stamp_damage(s, s.p, now);
  if (!layout || damage != SIZE_MAX) bad |= !put_keep(damage);
  if (f.zero && now > old_usable && !all_zero(s.p, old_usable, std::min(now, kFeasible))) {
    bad = true, put(" BAD(the grown part is not zeroed)");
  }
  g_hide = layout;
  if (layout && now != old_usable) {
    pk_feed(false);  // the growth and the shrinking back as two calls
    xallocx(s.p, old_usable, 0, 0);
    now = sallocx(s.p, 0);
    if (now != old_usable) bad = true, put(" BAD(no shrinking back: usable=%zu)", now);
  }
  if (now != old_usable) {
    s.req = s.usable = now;
    stamp(s);
  }
  finish(bad);
}

// sallocx / malloc_usable_size of a live block, and its stamp.
void op_check(int seq, int si) {
  Slot& s = g_slot[si];
  head(seq, "sallocx", cat(s.usable), nullptr, si);
  mark();
  size_t a = sallocx(s.p, 0), b = malloc_usable_size(s.p);
  put("-> sallocx=%zu malloc_usable_size=%zu", a, b);
  bool ok = check_stamp(s, s.p, SIZE_MAX);
  finish(!ok || a != b || a != s.usable);
}

// Calls that need no block: nallocx, free(NULL), malloc_usable_size(NULL).
void op_stateless(Rng& r, int seq) {
  unsigned u = (unsigned)r.below(100);
  char b1[48];
  if (u < 80) {
    size_t n = draw_size(r, false);
    Flags f = draw_alloc_flags(r);
    head(seq, "nallocx", cat(n), nullptr, -1);
    put("size=%s flags=%s", sym(n, b1), f.text);
    mark();
    put(" -> %zu", nallocx(n, f.bits));
    return finish(false);
  }
  head(seq, u < 90 ? "free" : "malloc_usable_size", "null", nullptr, -1);
  mark();
  if (u < 90)
    free(nullptr), put("-> done");
  else
    put("-> %zu", malloc_usable_size(nullptr));
  finish(false);
}

// thread.peak.read (and the counters by name), then sometimes thread.peak.reset. The value is
// recorded where the bounds fix it; else whether it is within them and, when the model has
// tracked every sample since the reset, whether it agrees with the model.
void op_peak(int seq) {
  Rng r{kSeed * 31 + (uint64_t)seq};
  put("%05d ctl thread.peak.read | ", seq);
  mark();
  uint64_t peak = 0, ta = 0, td = 0;
  int rc = ctl_read("thread.peak.read", &peak);
  rc |= ctl_read("thread.allocated", &ta) | ctl_read("thread.deallocated", &td);
  pk_feed(true);
  uint64_t a = *g_ap, d = *g_dp;
  int64_t lo = std::max<int64_t>(0, (int64_t)(a - d - g_pk.base)), hi = std::max(g_pk.hi, lo);
  pk_sample(a - d);  // the read samples too
  bool in = (int64_t)peak >= lo && (int64_t)peak <= hi;
  bool bad = rc != 0 || !in || ta != a || td != d;
  put("-> rc=%d", rc);
  if (!g_pk.diverged && lo == hi)
    put(" peak=+%llu", (unsigned long long)peak);
  else
    put(" peak %s", in ? "in [current, max]" : "BAD(outside [current, max])");
  if (!g_pk.valid)
    put(" model=n/a");
  else if ((int64_t)peak == g_pk.max)
    put(" model=agrees");
  else
    put(" model=DIFFERS(peak +%llu, model +%lld)", (unsigned long long)peak, (long long)g_pk.max);
  if (ta != a || td != d) put(" BAD(thread.allocated/deallocated by name differ from *p)");
  if (r.chance(40) || g_pk.diverged || !g_pk.valid) {
    rc = mallctl("thread.peak.reset", nullptr, nullptr, nullptr, 0);
    pk_reset();
    rc |= ctl_read("thread.peak.read", &peak);
    put("; thread.peak.reset, read -> rc=%d peak=+%llu", rc, (unsigned long long)peak);
    bad |= rc != 0 || peak != 0;
  }
  finish(bad);
}

void op(int seq) {
  if (seq % 50 == 49) op_peak(seq);
  Rng r{kSeed * 1000003 + (uint64_t)seq};
  if (r.chance(6)) return op_stateless(r, seq);
  int si = (int)r.below(kSlots);
  if (g_slot[si].p == nullptr) return op_alloc(r, seq, si);
  unsigned u = (unsigned)r.below(100);
  if (u < 10)
    op_free(r, seq, si, 0);
  else if (u < 18)
    op_free(r, seq, si, 1);
  else if (u < 30)
    op_free(r, seq, si, 2);
  else if (u < 32)
    op_resize(r, seq, si, 1);
  else if (u < 46)
    op_resize(r, seq, si, 0);
  else if (u < 62)
    op_resize(r, seq, si, 2);
  else if (u < 82)
    op_xallocx(r, seq, si);
  else
    op_check(seq, si);
}

// Creates the arenas and tcaches the flags may name.
bool setup() {
  std::memset(g_slot, 0, sizeof(g_slot));
  g_nkeys = 0;
  gen_classes();
  uint64_t *ap = nullptr, *dp = nullptr;
  int rc = ctl_read("thread.allocatedp", &ap) | ctl_read("thread.deallocatedp", &dp);
  if (rc == 0 && ap != nullptr && dp != nullptr) g_ap = ap, g_dp = dp;
  g_pk = PeakModel{};
  g_pk.la = *g_ap, g_pk.ld = *g_dp;
  rc |= mallctl("thread.peak.reset", nullptr, nullptr, nullptr, 0);
  pk_reset();
  mark("setup");
  for (int i = 0; i < kMade; i++) {
    rc |= ctl_read("arenas.create", &g_arena[i]) | ctl_read("tcache.create", &g_tc[i]);
  }
  put("setup setup setup | classes=%d thread.allocatedp deallocatedp peak.reset, arenas.create "
      "tcache.create x%d -> rc=%d",
      g_ncls, kMade, rc);
  finish(rc != 0 || g_ncls != 232);
  return rc == 0;
}

// After the stream: every block freed (random order and function), the tcaches and arenas
// destroyed, the statistics consistent.
void post(int seq) {
  Rng r{kSeed ^ 0xf1e2d3c4b5a69788ull};
  int order[kSlots];
  for (int i = 0; i < kSlots; i++) order[i] = i;
  for (int i = kSlots - 1; i > 0; i--) std::swap(order[i], order[r.below(i + 1)]);
  for (int si : order) {
    if (g_slot[si].p != nullptr) op_free(r, seq++, si, (unsigned)r.below(3));
  }
  mark("the post-check");
  // Under tcache:false the thread has no cache to flush: EFAULT (5.3.0's answer, ours too).
  bool tc_on = true;
  size_t len = sizeof(tc_on);
  mallctl("opt.tcache", &tc_on, &len, nullptr, 0);
  int frc = mallctl("thread.tcache.flush", nullptr, nullptr, nullptr, 0), rc = 0;
  char name[64];
  for (int i = 0; i < kMade; i++) {
    rc |= mallctl("tcache.destroy", nullptr, nullptr, &g_tc[i], sizeof(unsigned));
  }
  for (int i = 0; i < kMade; i++) {
    std::snprintf(name, sizeof(name), "arena.%u.destroy", g_arena[i]);
    rc |= mallctl(name, nullptr, nullptr, nullptr, 0);
  }
  put("post destroy post | thread.tcache.flush -> %d, tcache.destroy, arena.<i>.destroy -> rc=%d",
      frc, rc);
  finish(rc != 0 || frc != (tc_on ? 0 : EFAULT));
  size_t st[4] = {};
  mark();
  rc = jt::refresh_stats() ? 0 : -1;
  int i = 0;
  for (const char* n : {"stats.allocated", "stats.active", "stats.resident", "stats.mapped"}) {
    rc |= ctl_read(n, &st[i++]);
  }
  bool ok = rc == 0 && st[0] > 0 && st[0] <= st[1] && st[1] <= st[2] && st[1] <= st[3];
  put("post stats post | epoch, allocated <= active <= resident, active <= mapped -> %s",
      ok ? "ok" : "FAIL");
  if (!ok) put(" (rc %d: %zu %zu %zu %zu)", rc, st[0], st[1], st[2], st[3]);
  finish(!ok);
}

// The whole stream; lines go to out (null: checks only). Returns false on a failure.
bool run_stream(FILE* out) {
  jt::diff::begin(out);
  jt::diff::CrashReport crash_report;
  if (setup()) {
    for (int i = 0; i < kOps; i++) op(i);
    post(kOps);
  }
  return jt::diff::g_failures == 0;
}

// --- The comparison (differential.h): glob on the line's name (fn.size-class[.alignment]).
using jt::diff::Excl;

// Documented differences (doc/compat.md#<anchor>). compat.md#xallocx-result arises only when a
// large block grows in place, whose outcome is not recorded (see op_xallocx; the check there
// accepts 5.3.0's old size and our real one); a recorded "ret!=usable" is therefore a bug.
constexpr Excl kDocumented[] = {
    // compat.md#errno-on-failure: realloc beyond the largest class sets ENOMEM; memalign with
    // an alignment that is not a power of two sets EINVAL (5.3.0's aligned_alloc does too), and
    // one it cannot serve (2^63) sets ENOMEM.
    {"realloc.huge", "errno=ENOMEM", nullptr, "errno-on-failure"},
    {"memalign.*.npot", "errno=EINVAL", nullptr, "errno-on-failure"},
    {"memalign.*.vast", "errno=ENOMEM", nullptr, "errno-on-failure"},
    // compat.md#aligned-zero-size: memalign(a, 0) and valloc(0) keep the alignment (usable =
    // the smallest class it allows); 5.3.0 hands out its 8-byte class there.
    {"memalign.zero.*", nullptr, nullptr, "aligned-zero-size"},
    {"valloc.zero", nullptr, nullptr, "aligned-zero-size"},
};

// KNOWN BUGS of this library: differences from 5.3.0 that doc/compat.md does not document.
// Each entry is a bug to fix in src/ (or, where we deliberately differ, to document in
// doc/compat.md and move to kDocumented); delete the entry with the fix.
constexpr Excl kKnownBugs[] = {
    {nullptr, nullptr, nullptr, nullptr},
};

}  // namespace

TEST(stream_keeps_every_guarantee) {
  run_stream(nullptr);
  jt::note("%d calls, %d failures", kOps, jt::diff::g_failures);
}

TEST(same_results_as_5_3_0) { jt::diff::compare_with_reference(kDocumented, kKnownBugs); }

// The stream under option variants (each recorded on both libraries and compared): option
// effects on what the calls answer (zero_realloc:alloc: realloc(p, 0) hands out a block and
// counts in stats.zero_reallocs). The stream stays deterministic under all of them: it records
// no placement and no statistic but zero_reallocs and the thread's own counters.
// clang-format off
constexpr const char* kConfs[] = {
    "zero_realloc:alloc", "junk:true", "zero:true", "tcache:false", "tcache_max:1024",
    "lg_tcache_max:16", "narenas:1", "oversize_threshold:0", "oversize_threshold:1048576",
    "retain:false", "dirty_decay_ms:0,muzzy_decay_ms:0", "slab_sizes:1-4096:1",
    "bin_shards:1-14336:3", "lg_extent_max_active_fit:2", "percpu_arena:percpu",
    "abort_conf:false,confirm_conf:false"
};
// clang-format on

TEST(same_results_under_options) {
  jt::diff::compare_with_reference_under(kConfs, kDocumented, kKnownBugs);
}

int main(int argc, char** argv) { return jt::diff::main(argc, argv, run_stream); }
