// mallctl_fuzz_test: a deterministic, differential fuzz test of the mallctl interface.
//
// (1) Bad input never corrupts: a fixed-seed stream of mallctl, mallctlnametomib and
// mallctlbymib calls built from 5.3.0's name list (test/integration/data) -- valid, special
// (4096 = MALLCTL_ARENAS_ALL, 4097 = _DESTROYED), one-past-end and huge indices, mangled names and
// MIBs, NULL / short / long / exact buffers -- leaves the allocator working, and no call writes
// past *oldlenp (the buffer ends at a PROT_NONE page; bytes past the returned length are
// canaries), writes to newp (read-only) or reads past newlen (PROT_NONE). (2) Every call answers
// with the same return code and *oldlenp as jemalloc 5.3.0.
//
// `PROGRAM --record` runs the stream and prints one line per call (the call, the return code,
// the resulting *oldlenp; never values, which legitimately differ), then a post-check. The test
// runs the stream in-process, then compares the records of this library and of Debian's 5.3.0
// line by line (differential.h: children under LD_PRELOAD, MALLOC_CONF unset; REF_LIB
// overrides the reference, empty turns this off); kDocumented excludes what doc/compat.md
// documents, kKnownBugs our known bugs. Under the reference or without it only the in-process
// part runs; under run.sh's non-default MALLOC_CONF variants the program skips (77).
//
// 5.3.0 must survive the stream, so it never: writes a pointer (extent hooks, arenas.create's
// hooks; dss gets only static strings), writes background_thread / max_background_threads,
// resets or destroys an arena it did not create, binds the thread to a random arena, flushes or
// destroys an explicit tcache it does not own (5.3.0 indexes its table with any value,
// UINT_MAX included), looks up a pointer the allocator did not return, calls tcache.create /
// arenas.create / experimental.* without oldlenp, or passes a MIB going on past a leaf.
#include <algorithm>
#include <sys/mman.h>

#include "differential.h"

#ifndef JT_DATA_DIR
#define JT_DATA_DIR "test/integration/data"
#endif

namespace {

using jt::diff::finish;
using jt::diff::put;
using jt::diff::put_escaped;
using jt::diff::Rng;  // each call has its own: a call that goes differently in one library does
                      // not shift the rest of the stream

constexpr uint64_t kSeed = 0x6d616c6c63746cull;
constexpr int kCalls = 10000;
constexpr unsigned kAll = 4096, kDestroyed = 4097;  // MALLCTL_ARENAS_ALL / _DESTROYED
constexpr int kMaxMade = 6;  // arenas and explicit tcaches the stream creates, at most
constexpr size_t kMaxComp = 8;

// --- The name templates, and how the stream may call each leaf.
// A leaf not in kClasses is read-only in 5.3.0 (READONLY comes first: any new value is EPERM
// before anything happens), so it gets random new values.
enum Cls : uint8_t {
  kRO,
  kEpoch,
  kBoolW,
  kThreadArena,
  kDecayMs,
  kSizeW,
  kDss,
  kVoid,
  kResetDestroy,
  kTcacheIdx,
  kArenasCreate,
  kTcacheCreate,
  kLookup,
  kHooks,
  kBg,
  kProf,
  kExp
};
enum Kind : uint8_t { kArenaI, kBinI, kLextI, kExtI, kHpaI };

constexpr struct {
  const char* name;
  Cls cls;
} kClasses[] = {
    {"epoch", kEpoch},
    {"thread.tcache.enabled", kBoolW},
    {"thread.arena", kThreadArena},
    {"background_thread", kBg},
    {"max_background_threads", kBg},
    {"arena.<i>.dss", kDss},
    {"arenas.dirty_decay_ms", kDecayMs},
    {"arenas.muzzy_decay_ms", kDecayMs},
    {"arena.<i>.dirty_decay_ms", kDecayMs},
    {"arena.<i>.muzzy_decay_ms", kDecayMs},
    {"arena.<i>.oversize_threshold", kSizeW},
    {"arena.<i>.retain_grow_limit", kSizeW},
    {"arena.<i>.purge", kVoid},
    {"arena.<i>.decay", kVoid},
    {"thread.tcache.flush", kVoid},
    {"thread.peak.reset", kVoid},
    {"thread.idle", kVoid},
    {"stats.mutexes.reset", kVoid},
    {"arena.<i>.reset", kResetDestroy},
    {"arena.<i>.destroy", kResetDestroy},
    {"tcache.flush", kTcacheIdx},
    {"tcache.destroy", kTcacheIdx},
    {"tcache.create", kTcacheCreate},
    {"arenas.create", kArenasCreate},
    {"arenas.lookup", kLookup},
    {"arena.<i>.extent_hooks", kHooks},
};

struct Tmpl {
  char name[96];  // with "<i>"
  Cls cls;
  uint8_t depth, nidx, width;  // width: what a read takes (probed), the "correct" *oldlenp
  bool idx[kMaxComp];          // component c is an integer
  Kind kind[kMaxComp];
  bool mib_ok;  // mallctlnametomib translated it (indices 0)
  size_t mib[kMaxComp];
};
Tmpl g_t[420];
int g_nt;

Cls classify(const char* n) {
  if (std::strncmp(n, "experimental.", 13) == 0) return kExp;
  if (std::strncmp(n, "prof.", 5) == 0 || std::strncmp(n, "thread.prof.", 12) == 0) return kProf;
  for (const auto& c : kClasses) {
    if (std::strcmp(n, c.name) == 0) return c.cls;
  }
  return kRO;
}

// Splits s at dots into start offsets and lengths; returns the count (at most 32).
int split(const char* s, size_t* st, size_t* ln) {
  for (size_t i = 0, n = 0;; n++) {
    size_t j = i + std::strcspn(s + i, ".");
    st[n] = i;
    ln[n] = j - i;
    if (s[j] == '\0' || n == 31) return (int)n + 1;
    i = j + 1;
  }
}

// The concrete name of t with index values v[c]; txt[c], when given, replaces the decimal
// text of index component c.
void build(const Tmpl& t, const uint64_t* v, char* out, size_t cap,
           const char* const* txt = nullptr) {
  size_t o = 0, c = 0;
  for (const char* p = t.name; *p && o + 1 < cap; p++) {
    c += *p == '.';
    if (std::strncmp(p, "<i>", 3) != 0) {
      out[o++] = *p;
    } else if (p += 2, txt && txt[c]) {
      o = std::min(cap - 1, o + std::snprintf(out + o, cap - o, "%s", txt[c]));
    } else {
      o = std::min(cap - 1, o + std::snprintf(out + o, cap - o, "%llu", (unsigned long long)v[c]));
    }
  }
  out[o] = '\0';
}

// The template whose translation mib[0..len) is (named components equal), or -1.
int match_mib(const size_t* mib, size_t len) {
  for (int k = 0; k < g_nt; k++) {
    const Tmpl& t = g_t[k];
    size_t c = 0;
    while (t.mib_ok && t.depth == len && c < len && (t.idx[c] || t.mib[c] == mib[c])) c++;
    if (t.mib_ok && t.depth == len && c == len) return k;
  }
  return -1;
}

// Whether the library translates s to a leaf's MIB (a mangled name must not name another leaf:
// "thread.tcache.flush" without "thread" is tcache.flush).
bool names_leaf(const char* s) {
  size_t mib[kMaxComp], n = kMaxComp;
  return mallctlnametomib(s, mib, &n) == 0 && match_mib(mib, n) >= 0;
}

// --- Per-process state: guard pages, what the stream created.
struct State {
  unsigned char *old_end, *new_page, *new_end, *mib_end;  // each followed by PROT_NONE
  size_t page;
  unsigned n0, nbins, nlext;  // arenas.narenas at start (automatic arenas and the huge one)
  unsigned arenas[kMaxMade], tcaches[kMaxMade];  // what arenas.create (>= n0) / tcache.create gave
  bool tc_alive[kMaxMade];
  int narenas_made, ntc, would_arenas, would_tc;
  void *blocks[4], *lookups[5];  // allocations arenas.lookup is asked about, and the pointers
} g;
constexpr const char* kLookupNames[] = {"small", "medium", "medium+8", "large", "huge"};
unsigned narenas_now() {
  unsigned n = 0;
  size_t len = sizeof(n);
  return mallctl("arenas.narenas", &n, &len, nullptr, 0) == 0 ? n : 0;
}

// Loads, translates and probes the templates, maps the guard pages, allocates the blocks
// arenas.lookup is asked about.
bool setup() {
  std::memset(&g, 0, sizeof(g));
  char path[512], text[256];
  std::snprintf(path, sizeof(path), "%s/mallctl-names-5.3.0.txt", JT_DATA_DIR);
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return false;
  for (g_nt = 0; std::fgets(text, sizeof(text), f) != nullptr && g_nt < 420;) {
    text[std::strcspn(text, "\r\n")] = '\0';
    if (text[0] == '\0' || text[0] == '#') continue;
    Tmpl& t = g_t[g_nt++];
    std::memset(&t, 0, sizeof(t));
    std::snprintf(t.name, sizeof(t.name), "%s", text);
    t.cls = classify(t.name);
    size_t st[32], ln[32];
    t.depth = (uint8_t)split(t.name, st, ln);
    for (size_t c = 1; c < t.depth; c++) {
      const char* prev = t.name + st[c - 1];
      t.idx[c] = ln[c] == 3 && std::strncmp(t.name + st[c], "<i>", 3) == 0;
      t.nidx += t.idx[c];
      t.kind[c] = std::strncmp(prev, "arena", 5) == 0     ? kArenaI
                  : std::strncmp(prev, "bin", 3) == 0     ? kBinI
                  : std::strncmp(prev, "lextent", 7) == 0 ? kLextI
                  : std::strncmp(prev, "extents", 7) == 0 ? kExtI
                                                          : kHpaI;  // nonfull_slabs
    }
    uint64_t zero[kMaxComp] = {};
    char name[160];
    build(t, zero, name, sizeof(name));
    size_t n = kMaxComp;
    t.mib_ok = mallctlnametomib(name, t.mib, &n) == 0 && n == t.depth;
    // The width a read takes, probed as a client would; not for actions, creations,
    // arenas.lookup (5.3.0 dereferences the missing input) or experimental.*.
    bool u =
        t.cls == kArenasCreate || t.cls == kTcacheCreate || t.cls == kLookup || t.cls == kTcacheIdx;
    t.width = u ? 4 : (t.cls == kVoid || t.cls == kResetDestroy) ? 0 : 8;
    int rc = t.width != 8 || t.cls == kExp ? ENOENT : EINVAL;
    for (size_t w = 1, len = 1; rc == EINVAL && w <= 8; w *= w == 1 ? 4 : 2, len = w) {
      unsigned char buf[16];
      if ((rc = mallctl(name, buf, &len, nullptr, 0)) == 0) t.width = (uint8_t)w;
    }
  }
  std::fclose(f);
  g.page = (size_t)sysconf(_SC_PAGESIZE);
  auto* base = static_cast<unsigned char*>(
      mmap(nullptr, 6 * g.page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (g_nt != 395 || base == MAP_FAILED) return false;
  mprotect(base, g.page, PROT_READ | PROT_WRITE);  // [old][none][new (read-only)][none][mib][none]
  mprotect(base + 4 * g.page, g.page, PROT_READ | PROT_WRITE);
  g.old_end = base + g.page, g.new_page = base + 2 * g.page;
  g.new_end = base + 3 * g.page, g.mib_end = base + 5 * g.page;
  g.n0 = narenas_now();
  size_t len = sizeof(unsigned);
  mallctl("arenas.nbins", &g.nbins, &len, nullptr, 0);
  mallctl("arenas.nlextents", &g.nlext, &len, nullptr, 0);
  const size_t sizes[] = {16, 5000, 100000, (size_t)9 << 20};  // the last: huge arena
  for (int i = 0; i < 4; i++) g.blocks[i] = std::malloc(sizes[i]);
  void* lk[] = {g.blocks[0], g.blocks[1], (char*)g.blocks[1] + 8, g.blocks[2], g.blocks[3]};
  std::memcpy(g.lookups, lk, sizeof(lk));
  return g.n0 > 0 && g.nbins > 0 && g.nlext > 0;
}

// --- One call: indices, arguments, execution against the guard pages, the line.
bool made_arena(uint64_t v) { return std::count(g.arenas, g.arenas + g.narenas_made, v) > 0; }

// Whether a leaf of class cls may get arena index v: reset and destroy only on arenas this
// test created and on indices that name no arena (one past the end: EFAULT; further: ENOENT).
// Every other leaf checks the index in 5.3.0 (4096 and 4097 read as no arena where unsupported).
bool allowed_index(Cls cls, uint64_t v) {
  return cls != kResetDestroy || made_arena(v) ||
         (v >= narenas_now() && v != kAll && v != kDestroyed);
}

// An index into a table of n entries: mostly valid, else one past the end or beyond.
uint64_t table_index(Rng& r, uint64_t n) {
  const uint64_t valid[] = {0, 1, n - 1, r.below(n)}, odd[] = {n, n, n + 1, 1000, UINT32_MAX};
  return r.chance(60) ? r.pick(valid) : r.pick(odd);
}

uint64_t pick_index(Rng& r, Kind k, Cls cls) {
  if (k != kArenaI) {  // 5.3.0 has 199 page-size classes and 64 psset bins
    return table_index(r, k == kBinI ? g.nbins : k == kLextI ? g.nlext : k == kExtI ? 199 : 64);
  }
  uint64_t now = narenas_now();
  if (g.narenas_made > 0 && r.chance(cls == kResetDestroy ? 70 : 15)) {
    return g.arenas[r.below(g.narenas_made)];
  }
  const uint64_t none[] = {now, now + 1, 4098, UINT32_MAX, 1ull << 32};
  const uint64_t valid[] = {0, 0, 1, g.n0 - 1u};
  const uint64_t odd[] = {now,        now + 1, kAll,       kAll,       kDestroyed,
                          kDestroyed, 4098,    UINT32_MAX, 1ull << 32, UINT64_MAX - 1};
  if (cls == kResetDestroy) return r.pick(none);
  return r.chance(50) ? r.pick(valid) : r.pick(odd);
}

struct Call {
  bool oldp_null, oldlenp_null, newp_null;
  size_t oldlen, newlen;
  unsigned char nb[16];  // newp's bytes
  char desc[48];         // what they are, when typed; "" for random bytes
};

uint64_t bits_of(const void* p) { return (uint64_t)(uintptr_t)p; }

void gen_args(Rng& r, const Tmpl& t, Call& c) {
  const size_t lens[] = {0, 1, 3, 4, 7, 8, 16}, newlens[] = {0, 1, 4, 8, 16};
  c.oldp_null = r.chance(20);
  c.oldlenp_null = r.chance(15);
  c.oldlen = r.chance(35) ? t.width : r.pick(lens);
  c.newp_null = r.chance(t.cls == kRO ? 75 : 50);
  c.newlen = c.newp_null && r.chance(70) ? 0 : r.pick(newlens);
  for (auto& b : c.nb) b = (unsigned char)r.next();
  c.desc[0] = '\0';
  // Random bytes of exactly a writable leaf's width only where any value is harmless.
  size_t w = t.cls == kBoolW ? 1 : (t.cls == kThreadArena || t.cls == kTcacheIdx) ? 4 : 8;
  bool any_value = t.cls == kRO || t.cls == kEpoch || t.cls == kVoid || t.cls == kResetDestroy ||
                   t.cls == kTcacheCreate;
  if (!c.newp_null && !any_value && c.newlen == w) c.newlen = 16;
  // A typed value for the writable leaves: v, as `w` little-endian bytes.
  static const uint64_t kEpochV[] = {0, 1, UINT64_MAX, 12345}, kBoolV[] = {0, 1},
                        kSizeV[] = {0, 1, 4096, 1 << 20, 8 << 20, 1ull << 30, SIZE_MAX};
  static const int64_t kDecayV[] = {
      -2, -1, 0, 1, 10000, 18446744073000, 18446744073001, INT64_MAX, INT64_MIN};
  static const char* const kDssNames[] = {"disabled", "primary", "secondary", "bogus", ""};
  uint64_t v = 0;
  int live[kMaxMade], n = 0, i = (int)r.below(5);
  for (int k = 0; k < g.ntc; k++) {
    if (g.tc_alive[k]) live[n++] = k;
  }
  switch (t.cls) {
    case kEpoch: v = r.pick(kEpochV); break;
    case kBoolW: v = r.pick(kBoolV); break;
    case kSizeW: v = r.pick(kSizeV); break;
    case kDecayMs: v = (uint64_t)r.pick(kDecayV); break;
    case kThreadArena: {
      const uint64_t o[] = {0, g.n0 > 2 ? 1u : 0u, narenas_now(), kAll, UINT_MAX};
      v = r.pick(o);
      break;
    }
    case kDss:
      v = bits_of(kDssNames[i]);
      std::snprintf(c.desc, sizeof(c.desc), "dss:\"%s\"", kDssNames[i]);
      break;
    case kLookup:
      v = bits_of(g.lookups[i]);
      std::snprintf(c.desc, sizeof(c.desc), "ptr:%s", kLookupNames[i]);
      if (c.newp_null || c.newlen == 8) c.newp_null = false, c.newlen = 16;  // 5.3.0 looks up
      break;                                                                 // whatever: crash
    case kTcacheIdx:
      if (r.chance(60)) c.oldp_null = c.oldlenp_null = true;
      if (r.chance(15) || n == 0)
        c.newp_null = c.newp_null || n > 0, w = 0;
      else
        v = g.tcaches[live[r.below(n)]];
      break;
    case kVoid:
    case kResetDestroy:
      if (r.chance(50)) c.oldp_null = c.oldlenp_null = c.newp_null = true, c.newlen = 0;
      break;
    case kArenasCreate:
    case kTcacheCreate: {
      c.oldlenp_null = false;  // 5.3.0 stores 0 through a NULL oldlenp
      if (r.chance(70)) c.newp_null = true;
      if (t.cls == kTcacheCreate && c.newp_null && r.chance(80)) c.newlen = 0;
      bool creates = !c.oldp_null && c.oldlen == sizeof(unsigned) && c.newp_null &&
                     (t.cls == kArenasCreate || c.newlen == 0);
      int& would = t.cls == kArenasCreate ? g.would_arenas : g.would_tc;
      if (creates && would >= kMaxMade) c.oldlen = 8;
      if (creates && would < kMaxMade) would++;
      break;
    }
    case kHooks:
      if (r.chance(70)) c.newp_null = true;
      break;
    case kBg: c.newp_null = true; break;
    case kProf: c.newp_null = true, c.newlen = 0; break;
    case kExp: c.oldp_null = true, c.oldlenp_null = false, c.newp_null = true, c.newlen = 0; break;
    default: break;
  }
  constexpr unsigned kTyped = 1u << kEpoch | 1u << kBoolW | 1u << kSizeW | 1u << kDecayMs |
                              1u << kThreadArena | 1u << kDss | 1u << kLookup | 1u << kTcacheIdx;
  if (w == 0 || !(kTyped >> t.cls & 1) || !r.chance(60)) return (void)(c.desc[0] = '\0');
  if (c.desc[0] == '\0') {
    std::snprintf(c.desc, sizeof(c.desc), t.cls == kDecayMs ? "val:%lld" : "val:%llu",
                  (unsigned long long)v);
  }
  std::memcpy(c.nb, &v, sizeof(v));
  c.newp_null = false;
  c.newlen = w;
  const size_t wrong[] = {0, 1, 4, 8, 16};
  while (c.newlen == w && r.chance(20)) c.newlen = r.pick(wrong);  // sometimes the wrong length
}

void put_args(const Call& c) {
  put(" old=%s oldlen=", c.oldp_null ? "NULL" : "buf");
  if (c.oldlenp_null)
    put("NULL");
  else
    put("%zu", c.oldlen);
  if (c.newp_null)
    put(" new=NULL");
  else if (c.desc[0] != '\0')
    put(" new=%s", c.desc);
  else
    put(" new=x");
  for (size_t i = 0; !c.newp_null && !c.desc[0] && i < c.newlen; i++) put("%02x", c.nb[i]);
  put(" newlen=%zu", c.newlen);
}

struct Result {
  int rc;
  size_t len;    // *oldlenp afterwards
  unsigned val;  // the first bytes read
  bool bad;      // a guard or canary was hit
};

// Runs fn(oldp, oldlenp, newp, newlen) with c's arguments against the guard pages, checks the
// canaries, appends the result to the line.
template <class F>
Result exec(const Call& c, F&& fn) {
  jt::diff::mark();
  size_t len = c.oldlen, room = c.oldlenp_null ? 0 : c.oldlen;
  unsigned char* oldp = c.oldp_null ? nullptr : g.old_end - room;
  if (oldp) std::memset(oldp, 0xa5, room);
  void* newp = c.newp_null ? nullptr : g.new_end - c.newlen;
  if (newp) {
    mprotect(g.new_page, g.page, PROT_READ | PROT_WRITE);
    std::memcpy(newp, c.nb, c.newlen);
    mprotect(g.new_page, g.page, PROT_READ);
  }
  Result res{fn(oldp, c.oldlenp_null ? nullptr : &len, newp, c.newlen), 0, 0, false};
  res.len = len;
  const char* bad = oldp && !c.oldlenp_null && len > c.oldlen ? "*oldlenp grew" : nullptr;
  for (size_t i = len; oldp && !c.oldlenp_null && i < c.oldlen; i++) {
    if (oldp[i] != 0xa5) bad = "wrote past the returned *oldlenp";
  }
  if (oldp && !c.oldlenp_null && len >= 4 && !bad) std::memcpy(&res.val, oldp, 4);
  put(" -> rc=%d len=", res.rc);
  if (c.oldlenp_null)
    put("-");
  else
    put("%zu", len);
  if (bad) put(" BAD(%s)", bad);
  res.bad = bad != nullptr;
  return res;
}

// Follows what the stream created: arenas and explicit tcaches it may reset, flush, destroy.
void track(const Tmpl& t, const Call& c, const Result& res) {
  bool got = res.rc == 0 && !c.oldp_null && !c.oldlenp_null && res.len == sizeof(unsigned);
  unsigned v = res.val;
  if (t.cls == kArenasCreate && got) {
    put(" new=%u", v);
    if (v >= g.n0 && g.narenas_made < kMaxMade && !made_arena(v)) g.arenas[g.narenas_made++] = v;
  } else if (t.cls == kTcacheCreate && got) {
    put(" new=%u", v);
    if (g.ntc < kMaxMade) g.tc_alive[g.ntc] = true, g.tcaches[g.ntc++] = v;
  } else if (t.cls == kTcacheIdx && res.rc == 0 && c.desc[0] && c.newlen == 4 &&
             std::strcmp(t.name, "tcache.destroy") == 0) {
    std::memcpy(&v, c.nb, sizeof(v));
    for (int i = 0; i < g.ntc; i++) g.tc_alive[i] = g.tc_alive[i] && g.tcaches[i] != v;
  }
}

// Mangles a valid name; returns what it did.
const char* mutate(Rng& r, char* s, size_t cap) {
  size_t st[32], ln[32], at;
  int n = split(s, st, ln), k = (int)r.below(n);
  char tmp[1024], fill[301] = {};
  switch (r.below(9)) {
    case 0:
      if (n == 1) return mutate(r, s, cap);
      s[st[1 + r.below(n - 1)] - 1] = '\0';
      return "cut";
    case 1: s[st[n - 1] + r.below(ln[n - 1])] = '\0'; return "cut-inside";
    case 2:
      at = k ? st[k] - 1 : 0;
      std::snprintf(tmp, sizeof(tmp), "%.*s%s", (int)at, s, k + 1 < n ? s + st[k + 1] - !!k : "");
      std::snprintf(s, cap, "%s", tmp);
      return "drop";
    case 3: std::strncat(s, ".x", cap - std::strlen(s) - 1); return "extra";
    case 4:
      std::snprintf(tmp, sizeof(tmp), "%.*s.%s", (int)st[k], s, s + st[k]);
      std::snprintf(s, cap, "%s", tmp);
      return "dot";
    case 5: s[0] = '\0'; return "empty";
    case 6:
      std::memset(fill, s[st[k]] >= '0' && s[st[k]] <= '9' ? '9' : 'a', 300);
      std::snprintf(tmp, sizeof(tmp), "%.*s%s%s", (int)st[k], s, fill, s + st[k] + ln[k]);
      std::snprintf(s, cap, "%s", tmp);
      return "long";
    case 7:
      std::strncat(s, r.chance(50) ? "\xc3\xa9" : "\xff", cap - std::strlen(s) - 1);
      return "non-ascii";
    default: std::strncat(s, ".", cap - std::strlen(s) - 1); return "trailing-dot";
  }
}

// A third of the picks are uniform (stats.* dominate the list), a third go to the leaves that
// act or take writes, a third to the other read-only ones. Then indices for it.
const Tmpl& pick_tmpl(Rng& r, bool need_mib, uint64_t* v, char* canon, size_t cap) {
  unsigned bias = (unsigned)r.below(3);
  for (;;) {
    const Tmpl& t = g_t[r.below(g_nt)];
    bool acts = t.cls != kRO && t.cls != kProf && t.cls != kExp;
    if ((need_mib && !t.mib_ok) || (bias == 1 && !acts) ||
        (bias == 2 && (acts || std::strncmp(t.name, "stats.", 6) == 0))) {
      continue;
    }
    for (size_t c = 0; c < t.depth; c++) v[c] = t.idx[c] ? pick_index(r, t.kind[c], t.cls) : 0;
    build(t, v, canon, cap);
    return t;
  }
}

// A name for t: mangled (never into another leaf's name), with an index written unusually, or
// plain. Returns what was done to it, or null.
const char* make_name(Rng& r, const Tmpl& t, const uint64_t* v, const char* canon, char* name,
                      size_t cap) {
  std::snprintf(name, cap, "%s", canon);
  unsigned roll = (unsigned)r.below(100);
  if (roll < 20) {
    const char* how = mutate(r, name, cap);
    if (!names_leaf(name)) return how;
    std::snprintf(name, cap, "%s", canon);
    return nullptr;
  }
  if (roll >= 32 || t.nidx == 0) return nullptr;
  // 5.3.0 reads an index like strtoumax: blanks, a sign (-x is 2^64 - x), digits up to the first
  // non-digit, and a "0" followed by neither an octal digit nor "x<hex>" as 0 -- so "0x.." and
  // "08" read as 0: the last three forms never for reset/destroy.
  static const char* const kForms[] = {" %llu", "+%llu",  "%llux",
                                       "%llu ", "-%llu",  "%llu99999999999999999999",
                                       "0%llu", "0x%llx", ""};
  size_t c = 0;
  for (unsigned k = (unsigned)r.below(t.nidx) + 1; k > 0; c++) k -= t.idx[c];
  char text[64];
  const char* form = kForms[r.below(t.cls == kResetDestroy ? 6 : 9)];
  std::snprintf(text, sizeof(text), form, (unsigned long long)v[--c]);
  const char* txt[kMaxComp] = {};
  txt[c] = text;
  build(t, v, name, cap, txt);
  return "index-text";
}

// mallctl by name, or mallctlnametomib with a short, exact or long *miblenp (the MIB array
// ends at a guard page).
void op_name(Rng& r, int seq, bool n2m) {
  uint64_t v[kMaxComp];
  char canon[160], name[1024];
  const Tmpl& t = pick_tmpl(r, false, v, canon, sizeof(canon));
  const char* how = make_name(r, t, v, canon, name, sizeof(name));
  put("%05d %s %s | name=", seq, n2m ? "n2m" : "ctl", canon);
  put_escaped(name);
  if (how) put(" (%s)", how);
  if (n2m) {
    const size_t lens[] = {0, 1, t.depth - 1u, t.depth, t.depth, t.depth + 1u, 8, 16};
    size_t in = r.pick(lens), n = in;
    size_t* mib = reinterpret_cast<size_t*>(g.mib_end) - in;
    for (size_t i = 0; i < in; i++) mib[i] = 0xa5a5a5a5a5a5a5a5ull;
    put(" miblen=%zu", in);
    jt::diff::mark();
    int rc = mallctlnametomib(name, mib, &n);
    put(" -> rc=%d miblen=%zu%s", rc, n, rc == 0 && n <= in ? " mib=" : "");
    for (size_t i = 0; rc == 0 && i < n && n <= in; i++) put(i ? ",%zu" : "%zu", mib[i]);
    if (n > in) put(" BAD(*miblenp grew)");
    return finish(n > in);
  }
  Call c;
  gen_args(r, t, c);
  put_args(c);
  Result res = exec(
      c, [&](void* o, size_t* ol, void* nw, size_t nl) { return mallctl(name, o, ol, nw, nl); });
  track(t, c, res);
  finish(res.bad);
}
// The name of a MIB that is not 5.3.0's but one of our additions after 5.3.0's siblings
// (doc/mallctl.md, "Our additions"), so that the comparison can excuse it by name; "?" for any
// other MIB outside the golden tree.
const char* our_addition(const size_t* mib, size_t len) {
  if (len == 3 && mib[0] == 8 && mib[2] == 11) return "arena.*.bounded_coalesce";
  if (len == 2 && mib[0] == 9 && mib[1] == 13) return "arenas.bounded_coalesce";
  // jemalloc 5.3.1's names, after 5.3.0's and ours.
  if (len == 2 && mib[0] == 9 && mib[1] == 14) return "arenas.hugepage";
  if (len >= 1 && mib[0] == 13) return "approximate_stats.*";
  if (len == 3 && mib[0] == 8 && mib[2] == 12) return "arena.*.name";
  return "?";
}

// mallctlbymib: a translated MIB with the indices written into it (the partial-MIB idiom), or
// a mangled one: components replaced, cut short, or made longer than any path.
void op_bymib(Rng& r, int seq, bool mangle) {
  uint64_t v[kMaxComp];
  char canon[160];
  const Tmpl& t0 = pick_tmpl(r, true, v, canon, sizeof(canon));
  size_t mib[16], len = t0.depth;
  for (size_t c = 0; c < t0.depth; c++) mib[c] = t0.idx[c] ? v[c] : t0.mib[c];
  const size_t odd[] = {40, 1000, UINT32_MAX, SIZE_MAX}, lens[] = {t0.depth, 8, 16};
  switch (mangle ? r.below(4) : r.chance(15) ? 0 : 4) {
    case 0: len = r.below(t0.depth); break;
    case 1: mib[r.below(t0.depth)] = r.below(40); break;
    case 2:
      mib[r.below(t0.depth)] = r.pick(odd);
      len = r.pick(lens);
      for (size_t k = t0.depth; k < len; k++) mib[k] = r.below(40);
      break;
    case 3: mib[r.below(t0.depth)] = r.below(40), mib[r.below(t0.depth)] = r.below(40); break;
    default: break;
  }
  // A MIB that goes on past a leaf crashes 5.3.0: end it at the leaf -- except in-process on
  // this library, which must refuse it (ENOENT) without calling the leaf.
  size_t past = 0;
  for (size_t k = 1; k < len; k++) {
    if (match_mib(mib, k) >= 0) past = len, len = k;
  }
  int leaf = match_mib(mib, len);
  bool overlong = past != 0 && jt::diff::g_out == nullptr && !jt::is_reference();
  Call c;
  if (leaf >= 0) {
    const Tmpl& t = g_t[leaf];
    for (size_t k = 0; k < t.depth; k++) {
      bool bad = t.idx[k] && t.kind[k] == kArenaI && !allowed_index(t.cls, mib[k]);
      v[k] = mib[k] = bad ? narenas_now() : mib[k];
    }
    build(t, v, canon, sizeof(canon));
    gen_args(r, t, c);
  } else {
    // No handler runs (5.3.0 stops at the bad or missing component): read arguments only.
    Tmpl ro{};
    ro.cls = kProf, ro.width = 8;
    gen_args(r, ro, c);
    std::snprintf(canon, sizeof(canon), "%s", our_addition(mib, len));
  }
  len = overlong ? past : len;
  put("%05d %s %s | mib=", seq, mangle ? "rmib" : "mib", canon);
  for (size_t k = 0; k < len; k++) put(k ? ",%zu" : "%zu", mib[k]);
  put(" miblen=%zu", len);
  put_args(c);
  Result res = exec(c, [&](void* o, size_t* ol, void* n, size_t nl) {
    return mallctlbymib(mib, len, o, ol, n, nl);
  });
  if (overlong && res.rc != ENOENT) put(" BAD(a MIB past a leaf must be ENOENT)");
  if (leaf >= 0 && !overlong) track(g_t[leaf], c, res);
  finish(res.bad || (overlong && res.rc != ENOENT));
}

int destroy_one(bool tcache, unsigned v) {
  char name[64];
  std::snprintf(name, sizeof(name), "arena.%u.destroy", v);
  return tcache ? mallctl("tcache.destroy", nullptr, nullptr, &v, sizeof(v))
                : mallctl(name, nullptr, nullptr, nullptr, 0);
}

// After the stream: give back what it made, then check that the allocator works.
void post_check() {
  for (int i = 0; i < g.ntc + g.narenas_made; i++) {
    bool tc = i < g.ntc;
    unsigned v = tc ? g.tcaches[i] : g.arenas[i - g.ntc];
    if (tc && !g.tc_alive[i]) continue;
    put("post destroy post | %s %u -> rc=%d", tc ? "tcache" : "arena", v, destroy_one(tc, v));
    finish(false);
  }
  // Which destroyed index does the next creation hand out? 5.3.0: the last one destroyed.
  for (int tc = 0; tc < 2; tc++) {
    auto destroy = [tc](unsigned v) { return destroy_one(tc, v); };
    unsigned idx[3] = {};
    int rc = 0;
    for (int k = 0; k < 3; k++) {
      size_t len = sizeof(unsigned);
      if (k == 2) rc |= destroy(idx[0]) | destroy(idx[1]);
      rc |= mallctl(tc ? "tcache.create" : "arenas.create", &idx[k], &len, nullptr, 0);
    }
    put("post reuse %s.create.reuse | create a, b; destroy a, b; create -> rc=%d %s",
        tc ? "tcache" : "arenas", rc | destroy(idx[2]),
        idx[2] == idx[1]   ? "b"
        : idx[2] == idx[0] ? "a"
                           : "new");
    finish(false);
  }
  const char* what = nullptr;
  const int flags[] = {0, MALLOCX_ZERO, MALLOCX_ALIGN(64), MALLOCX_ALIGN(4096) | MALLOCX_ZERO};
  for (size_t n : {1, 8, 100, 4096, 20000, 100000, 1 << 20, 9 << 20}) {
    auto* p = static_cast<unsigned char*>(std::malloc(n));
    if (p == nullptr || malloc_usable_size(p) < n) what = "malloc";
    if (p == nullptr) break;
    jt::fill_pattern(p, n, p);
    auto* q = static_cast<unsigned char*>(std::realloc(p, 2 * n));
    if (q == nullptr || jt::check_pattern(q, n, p) != n) what = "realloc";
    std::free(q ? q : p);
    for (int f : flags) {
      void* x = mallocx(n, f);
      if (x == nullptr || (uintptr_t)x % ((size_t)1 << (f & 0x3f)) != 0) what = "mallocx";
      if (x == nullptr) continue;
      if ((f & MALLOCX_ZERO) && jt::first_nonzero(x, n) != n) what = "MALLOCX_ZERO";
      if (sallocx(x, 0) != nallocx(n, f)) what = "sallocx == nallocx";
      std::memset(x, 0x5a, n);
      dallocx(x, 0);
    }
  }
  put("post alloc post | malloc/realloc/mallocx of 8 sizes -> %s", what ? what : "ok");
  finish(what != nullptr);
  size_t st[4] = {}, len = sizeof(size_t);
  int rc = jt::refresh_stats() ? 0 : -1, i = 0;
  for (const char* n : {"stats.allocated", "stats.active", "stats.resident", "stats.mapped"}) {
    rc |= mallctl(n, &st[i++], &len, nullptr, 0);
  }
  bool ok = rc == 0 && st[0] > 0 && st[0] <= st[1] && st[1] <= st[2] && st[1] <= st[3];
  put("post stats post | epoch, allocated <= active <= resident, active <= mapped -> %s",
      ok ? "ok" : "FAIL");
  if (!ok) put(" (rc %d: %zu %zu %zu %zu)", rc, st[0], st[1], st[2], st[3]);
  finish(!ok);
  for (void* p : g.blocks) std::free(p);
}

// The whole stream; lines go to out (null: checks only). Returns false on a failure.
bool run_stream(FILE* out) {
  jt::diff::begin(out);
  if (!setup()) {
    FAIL_MSG("setup failed (name list in %s, mmap)", JT_DATA_DIR);
    return false;
  }
  int nmib = 0;
  for (int k = 0; k < g_nt; k++) nmib += g_t[k].mib_ok;
  put("setup setup setup | narenas=%u nbins=%u nlextents=%u names=%d translated=%d", g.n0, g.nbins,
      g.nlext, g_nt, nmib);
  finish(false);
  jt::diff::CrashReport crash_report;
  for (int i = 0; i < kCalls; i++) {
    Rng r{kSeed * 1000003 + (uint64_t)i};
    unsigned op = (unsigned)r.below(100);
    if (op < 70)
      op_name(r, i, op >= 55);
    else
      op_bymib(r, i, op >= 85);
  }
  jt::diff::mark("the post-check");
  post_check();
  return jt::diff::g_failures == 0;
}

// --- The comparison.
// Entries are differential.h's: glob on the canonical name (a line's third field), args, unless
// (kNoN2m: not for mallctlnametomib lines), why.
using jt::diff::Excl;
constexpr const char* kNoN2m = " n2m ";

// Documented differences (doc/compat.md#<anchor>): a differing line whose canonical name
// matches is not a failure. Names answering ENOENT here still translate with
// mallctlnametomib, as in 5.3.0, so only the index bounds excuse translation lines.
constexpr Excl kDocumented[] = {
    // compat.md#mallctl-unavailable: experimental.* and three opt.* answer ENOENT.
    {"experimental.*", nullptr, kNoN2m, "mallctl-unavailable"},
    {"opt.utrace", nullptr, kNoN2m, "mallctl-unavailable"},
    {"opt.xmalloc", nullptr, kNoN2m, "mallctl-unavailable"},
    {"opt.lg_san_uaf_align", nullptr, kNoN2m, "mallctl-unavailable"},
    // compat.md#mallctl-index-bounds: index nbins (36) and nlextents (196) are ENOENT.
    {"arenas.bin.36.*", nullptr, nullptr, "mallctl-index-bounds"},
    {"stats.arenas.*.bins.36.*", nullptr, nullptr, "mallctl-index-bounds"},
    {"arenas.lextent.196.*", nullptr, nullptr, "mallctl-index-bounds"},
    {"stats.arenas.*.lextents.196.*", nullptr, nullptr, "mallctl-index-bounds"},
    // compat.md#bounded-coalesce: the run-time switches are ours (ENOENT in 5.3.0).
    {"arena.*.bounded_coalesce", nullptr, kNoN2m, "bounded-coalesce"},
    {"arenas.bounded_coalesce", nullptr, kNoN2m, "bounded-coalesce"},
    // compat.md#jemalloc-531-api: jemalloc 5.3.1's names (ENOENT in 5.3.0).
    {"arenas.hugepage", nullptr, kNoN2m, "jemalloc-531-api"},
    {"approximate_stats.*", nullptr, kNoN2m, "jemalloc-531-api"},
    {"arena.*.name", nullptr, kNoN2m, "jemalloc-531-api"},
};

// KNOWN BUGS of this library: differences from 5.3.0 that doc/compat.md does not document.
// Each entry is a bug to fix in src/; delete the entry with the fix. The null entry only keeps
// the array non-empty.
constexpr Excl kKnownBugs[] = {
    {nullptr, nullptr, nullptr, nullptr},
};

}  // namespace

TEST(stream_leaves_the_allocator_working) {
  run_stream(nullptr);
  jt::note("%d calls, %d failures", kCalls, jt::diff::g_failures);
}

TEST(same_results_as_5_3_0) { jt::diff::compare_with_reference(kDocumented, kKnownBugs); }

// The stream under option variants (differential.h): only options that leave the call pattern
// deterministic (the stream reads no placement and no statistic value). Not percpu_arena:percpu:
// which arenas exist (the stream addresses arena 1) follows the CPU the thread runs on.
constexpr const char* kConfs[] = {"narenas:1", "tcache:false", "oversize_threshold:0",
                                  "background_thread:false", "dirty_decay_ms:0"};

TEST(same_results_under_options) {
  jt::diff::compare_with_reference_under(kConfs, kDocumented, kKnownBugs);
}

int main(int argc, char** argv) { return jt::diff::main(argc, argv, run_stream); }
