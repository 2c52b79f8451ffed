// ops_fuzz.cc: libFuzzer target that runs its input as a sequence of allocation-API and mallctl
// operations against the library (linked statically under ASan+UBSan, names renamed fz_*, see
// fz_api.h), checking every result against a shadow model.
//
// The model keeps, per live block: the requested size, the usable size, the alignment asked
// for, a fill seed (the block's first kFillMax bytes and its last kTailMax bytes carry a pattern
// derived from it), and the arena the block lives in (read with arenas.lookup when it is made).
// Checked: usable size >= request and == nallocx of the request where 5.3.0 guarantees it,
// sallocx == malloc_usable_size, alignment, zeroing (calloc, MALLOCX_ZERO, the grown part of a
// zeroing rallocx), contents kept across realloc/rallocx/xallocx, xallocx's return value.
//
// arena.<i>.reset discards every block of manual arena i -- including blocks that a thread
// cache took from that arena and later handed to a plain malloc/calloc (5.3.0's semantics: a
// tcache used with an explicit arena is filled from it). The harness flushes every cache before
// the reset, as the manual requires, and drops the blocks whose arena was i; the others must be
// intact afterwards.
//
// With JE_FUZZ_STATEFUL=1 in the environment the blocks, created arenas, explicit tcaches and
// the thread.tcache.enabled setting carry over from one input to the next (issue #12's lead);
// otherwise each input starts from nothing and cleans up after itself. A stateful failure
// depends on every input before it: JE_FUZZ_TRACE=FILE appends each input to FILE as a record
// (4-byte little-endian length, bytes), and JE_FUZZ_REPLAY=1 makes the target read its one input
// as such a list of records and run them in order, stateful -- the way to replay a stateful
// run's failure (`JE_FUZZ_REPLAY=1 ./ops_fuzz FILE`).
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cstdio>

#include "fz_api.h"

namespace {

constexpr unsigned kSlots = 64;
constexpr size_t kFillMax = 4096;  // bytes of pattern at the head of a block
constexpr size_t kTailMax = 256;   // and at its tail
constexpr unsigned kMaxArenas = 6;
constexpr unsigned kMaxTcaches = 6;

struct Block {
  unsigned char* p;
  size_t req;
  size_t usable;
  size_t align;  // alignment asked for at the last (re)allocation, 1 if none
  uint8_t seed;
  unsigned arena;
};

struct State {
  Block slot[kSlots];
  unsigned arenas[kMaxArenas];
  unsigned narenas;
  unsigned tcaches[kMaxTcaches];
  unsigned ntcaches;
  bool tcache_enabled;
};

State g;
bool g_stateful = false;
bool g_replay = false;
FILE* g_trace = nullptr;
unsigned long g_inputs = 0;

// Replay diagnostics (JE_FUZZ_HISTORY=1): every block event, so that a failure can say what
// happened to its address before.
struct Event {
  unsigned long input;
  const void* p;
  size_t req;
  unsigned arena;
  char what;  // 'a' allocated, 'f' freed, 'r' dropped by a reset of `arena`, 'R' reset
};
constexpr size_t kEvents = 1 << 20;
Event* g_events = nullptr;
size_t g_nevents = 0;
unsigned char g_last_op = 0;

unsigned long g_verbose_from = ~0ul;

void note(char what, const void* p, size_t req, unsigned arena) {
  if (g_inputs >= g_verbose_from) {
    fprintf(stderr, "    %c %p req %zu arena %u\n", what, p, req, arena);
  }
  if (g_events == nullptr) return;
  g_events[g_nevents++ % kEvents] = Event{g_inputs, p, req, arena, what};
}

void print_history(const void* p) {
  if (g_events == nullptr) return;
  size_t from = g_nevents > kEvents ? g_nevents - kEvents : 0;
  for (size_t i = from; i < g_nevents; i++) {
    const Event& e = g_events[i % kEvents];
    if (e.p == p || e.what == 'R') {
      fprintf(stderr, "  input %lu: %c %p req %zu arena %u\n", e.input, e.what, e.p, e.req,
              e.arena);
    }
  }
}

[[noreturn]] void fail(const char* what, const Block* b) {
  if (b != nullptr) print_history(b->p);
  fprintf(stderr, "ops_fuzz: last op %u\n", g_last_op);
  if (b != nullptr) {
    fprintf(stderr, "ops_fuzz: %s (block %p req %zu usable %zu arena %u, input %lu)\n", what,
            static_cast<void*>(b->p), b->req, b->usable, b->arena, g_inputs);
  } else {
    fprintf(stderr, "ops_fuzz: %s (input %lu)\n", what, g_inputs);
  }
  abort();
}

// ---- Input reader ------------------------------------------------------------------------------

struct Reader {
  const uint8_t* d;
  size_t n;
  size_t i = 0;
  bool done() const { return i >= n; }
  uint8_t u8() { return i < n ? d[i++] : 0; }
  uint32_t u32() {
    uint32_t v = 0;
    for (int k = 0; k < 4; k++) v = v << 8 | u8();
    return v;
  }
  /// A size skewed towards the small classes, sometimes large, rarely huge or odd.
  size_t size() {
    uint8_t kind = u8();
    uint32_t r = u32();
    switch (kind & 7) {
      case 0: return r % 17;
      case 1:
      case 2:
      case 3: return r % 1025;
      case 4: return r % 16385;
      case 5: return r % (256 << 10);
      case 6: return r % (4 << 20);
      default:
        return (kind & 8) ? size_t{1} << (r % 23) : (size_t{1} << (r % 23)) + (r >> 24) - 128;
    }
  }
  unsigned lg_align() {
    uint8_t v = u8();
    return v < 200 ? v % 8 : v % 22;  // mostly up to 128, sometimes up to 2 MiB
  }
};

// ---- Contents ----------------------------------------------------------------------------------

inline uint8_t pat(uint8_t seed, size_t i) {
  return static_cast<uint8_t>(seed + i * 131 + (i >> 8));
}

void fill(Block& b) {
  size_t head = b.req < kFillMax ? b.req : kFillMax;
  for (size_t i = 0; i < head; i++) b.p[i] = pat(b.seed, i);
  size_t tail_from = b.req > kTailMax ? b.req - kTailMax : 0;
  if (tail_from < head) tail_from = head;
  for (size_t i = tail_from; i < b.req; i++) b.p[i] = pat(b.seed, i);
}

// Checks the pattern in [0, limit) restricted to the filled parts.
void check_contents(const Block& b, size_t limit, const char* what) {
  if (limit > b.req) limit = b.req;
  size_t head = b.req < kFillMax ? b.req : kFillMax;
  for (size_t i = 0; i < head && i < limit; i++) {
    if (b.p[i] != pat(b.seed, i)) fail(what, &b);
  }
  size_t tail_from = b.req > kTailMax ? b.req - kTailMax : 0;
  if (tail_from < head) tail_from = head;
  for (size_t i = tail_from; i < limit; i++) {
    if (b.p[i] != pat(b.seed, i)) fail(what, &b);
  }
}

void check_zero(const unsigned char* p, size_t from, size_t to, const Block* b) {
  // Everything up to 64 KiB, then one byte per page (a page is zeroed as a whole or not).
  for (size_t i = from; i < to; i += (i < (64 << 10) ? 1 : 4096)) {
    if (p[i] != 0) fail("memory not zeroed", b);
  }
  if (to > from && p[to - 1] != 0) fail("memory not zeroed (last byte)", b);
}

unsigned lookup_arena(const void* p) {
  unsigned ind = ~0u;
  size_t len = sizeof(ind);
  const void* q = p;
  if (fz_mallctl("arenas.lookup", &ind, &len, &q, sizeof(q)) != 0)
    fail("arenas.lookup failed", nullptr);
  return ind;
}

// A fresh block: check it, record it, write its pattern.
void adopt(Block& b, void* p, size_t req, size_t align, bool zeroed, size_t expect_usable,
           uint8_t seed) {
  b.p = static_cast<unsigned char*>(p);
  b.req = req;
  b.usable = fz_malloc_usable_size(p);
  b.align = align;
  b.seed = seed;
  if (b.usable < req) fail("usable size below the request", &b);
  if (expect_usable != 0 && b.usable != expect_usable) fail("usable size != nallocx", &b);
  if (fz_sallocx(p, 0) != b.usable) fail("sallocx != malloc_usable_size", &b);
  if (align > 1 && reinterpret_cast<uintptr_t>(p) % align != 0) fail("misaligned", &b);
  if (zeroed) check_zero(b.p, 0, req, &b);
  b.arena = lookup_arena(p);
  note('a', p, req, b.arena);
  fill(b);
}

void verify(const Block& b) {
  size_t u = fz_malloc_usable_size(b.p);
  if (u != b.usable) fail("usable size changed while live", &b);
  check_contents(b, b.req, "contents changed while live");
}

void release(Block& b) {
  note('f', b.p, b.req, b.arena);
  b = Block{};
}

// ---- mallctl helpers ---------------------------------------------------------------------------

int ctl_void(const char* name) { return fz_mallctl(name, nullptr, nullptr, nullptr, 0); }

int ctl_write_u(const char* name, unsigned v) {
  return fz_mallctl(name, nullptr, nullptr, &v, sizeof(v));
}

void flush_all_caches() {
  for (unsigned i = 0; i < g.ntcaches; i++) {
    if (ctl_write_u("tcache.flush", g.tcaches[i]) != 0) fail("tcache.flush failed", nullptr);
  }
  // EFAULT while the thread's cache is disabled: nothing to flush then.
  int r = ctl_void("thread.tcache.flush");
  if (r != 0 && r != EFAULT) fail("thread.tcache.flush failed", nullptr);
}

void reset_arena(unsigned ind) {
  flush_all_caches();
  char name[48];
  snprintf(name, sizeof(name), "arena.%u.reset", ind);
  if (ctl_void(name) != 0) fail("arena.<i>.reset failed", nullptr);
  note('R', nullptr, 0, ind);
  for (Block& b : g.slot) {
    if (b.p != nullptr && b.arena == ind) {
      note('r', b.p, b.req, ind);
      b = Block{};
    }
  }
  // The survivors must be untouched.
  for (Block& b : g.slot) {
    if (b.p != nullptr) verify(b);
  }
}

// Flags for the *x calls: alignment, zero, an explicit arena, an explicit or no tcache.
int pick_flags(Reader& in, size_t* align, bool* zero, bool allow_arena) {
  uint8_t f = in.u8();
  int flags = 0;
  *align = 1;
  *zero = false;
  if (f & 1) {
    unsigned la = in.lg_align();
    flags |= fz_lg_align(la);
    *align = size_t{1} << la;
  }
  if (f & 2) {
    flags |= kFzZero;
    *zero = true;
  }
  if ((f & 4) && allow_arena && g.narenas > 0) flags |= fz_arena(g.arenas[in.u8() % g.narenas]);
  if ((f & 24) == 8 && g.ntcaches > 0) flags |= fz_tcache(g.tcaches[in.u8() % g.ntcaches]);
  if ((f & 24) == 16) flags |= kFzTcacheNone;
  return flags;
}

Block* pick_live(Reader& in) {
  unsigned start = in.u8() % kSlots;
  for (unsigned k = 0; k < kSlots; k++) {
    Block& b = g.slot[(start + k) % kSlots];
    if (b.p != nullptr) return &b;
  }
  return nullptr;
}

Block& pick_slot(Reader& in) {
  Block& b = g.slot[in.u8() % kSlots];
  if (b.p != nullptr) {
    verify(b);
    fz_free(b.p);
    release(b);
  }
  return b;
}

void cleanup() {
  for (Block& b : g.slot) {
    if (b.p != nullptr) {
      verify(b);
      fz_free(b.p);
      release(b);
    }
  }
  for (unsigned i = 0; i < g.ntcaches; i++) ctl_write_u("tcache.destroy", g.tcaches[i]);
  g.ntcaches = 0;
  for (unsigned i = 0; i < g.narenas; i++) {
    char name[48];
    snprintf(name, sizeof(name), "arena.%u.destroy", g.arenas[i]);
    flush_all_caches();
    if (ctl_void(name) != 0) fail("arena.<i>.destroy failed", nullptr);
  }
  g.narenas = 0;
  if (!g.tcache_enabled) {
    bool on = true;
    fz_mallctl("thread.tcache.enabled", nullptr, nullptr, &on, sizeof(on));
    g.tcache_enabled = true;
  }
}

void step(Reader& in) {
  uint8_t op = in.u8() % 20;
  g_last_op = op;
  if (g_inputs >= g_verbose_from) fprintf(stderr, "  input %lu op %u\n", g_inputs, op);
  switch (op) {
    case 0:
    case 1: {  // malloc
      Block& b = pick_slot(in);
      size_t n = in.size();
      void* p = fz_malloc(n);
      if (p == nullptr) return;
      adopt(b, p, n, 1, false, fz_nallocx(n == 0 ? 1 : n, 0), in.u8());
      return;
    }
    case 2: {  // calloc
      Block& b = pick_slot(in);
      size_t n = in.u8() % 64 + 1;
      size_t m = in.size() / n;
      void* p = fz_calloc(n, m);
      if (p == nullptr) return;
      adopt(b, p, n * m, 1, true, 0, in.u8());
      return;
    }
    case 3:
    case 4: {  // realloc
      Block* b = pick_live(in);
      if (b == nullptr) return;
      size_t n = in.size();
      if (n == 0) n = 1;  // realloc(p, 0) is a zero_realloc policy question, not a model one
      verify(*b);
      void* p = fz_realloc(b->p, n);
      if (p == nullptr) return;  // the old block stays
      Block old = *b;
      old.p = static_cast<unsigned char*>(p);
      check_contents(old, n, "realloc lost contents");
      adopt(*b, p, n, 1, false, 0, old.seed);
      return;
    }
    case 5:
    case 6: {  // free
      Block* b = pick_live(in);
      if (b == nullptr) return;
      verify(*b);
      fz_free(b->p);
      release(*b);
      return;
    }
    case 7: {  // posix_memalign / aligned_alloc
      Block& b = pick_slot(in);
      unsigned la = in.lg_align();
      size_t align = size_t{1} << la;
      size_t n = in.size();
      void* p = nullptr;
      if (in.u8() & 1) {
        if (align < sizeof(void*)) align = sizeof(void*);
        if (fz_posix_memalign(&p, align, n) != 0) return;
      } else {
        p = fz_aligned_alloc(align, n);
        if (p == nullptr) return;
      }
      adopt(b, p, n, align, false, 0, in.u8());
      return;
    }
    case 8:
    case 9: {  // mallocx
      Block& b = pick_slot(in);
      size_t align;
      bool zero;
      int flags = pick_flags(in, &align, &zero, true);
      size_t n = in.size();
      if (n == 0) n = 1;  // mallocx(0) is undefined
      void* p = fz_mallocx(n, flags);
      if (p == nullptr) return;
      adopt(b, p, n, align, zero, fz_nallocx(n, flags), in.u8());
      if ((flags >> 20) != 0 && (flags & (0xfff << 8)) == kFzTcacheNone &&
          b.arena != static_cast<unsigned>((flags >> 20) - 1)) {
        fail("mallocx(MALLOCX_ARENA, MALLOCX_TCACHE_NONE) not in that arena", &b);
      }
      return;
    }
    case 10: {  // rallocx
      Block* b = pick_live(in);
      if (b == nullptr) return;
      size_t align;
      bool zero;
      int flags = pick_flags(in, &align, &zero, true);
      size_t n = in.size();
      if (n == 0) n = 1;
      verify(*b);
      void* p = fz_rallocx(b->p, n, flags);
      if (p == nullptr) return;
      Block old = *b;
      old.p = static_cast<unsigned char*>(p);
      check_contents(old, n, "rallocx lost contents");
      if (zero && n > old.usable) check_zero(old.p, old.usable, n, &old);
      adopt(*b, p, n, align, false, fz_nallocx(n, flags), old.seed);
      return;
    }
    case 11: {  // xallocx
      Block* b = pick_live(in);
      if (b == nullptr) return;
      size_t align;
      bool zero;
      int flags = pick_flags(in, &align, &zero, false);
      size_t n = in.size();
      if (n == 0) n = 1;
      size_t extra = in.u8() & 1 ? in.size() : 0;
      verify(*b);
      size_t got = fz_xallocx(b->p, n, extra, flags);
      size_t u = fz_malloc_usable_size(b->p);
      if (got != u) fail("xallocx result != usable size", b);
      if (zero && u > b->usable) check_zero(b->p, b->usable, u, b);
      check_contents(*b, u, "xallocx lost contents");
      b->usable = u;
      b->req = u;  // the whole usable size is the application's now
      fill(*b);
      return;
    }
    case 12: {  // sdallocx / dallocx
      Block* b = pick_live(in);
      if (b == nullptr) return;
      verify(*b);
      uint8_t how = in.u8();
      int flags = 0;
      if ((how & 2) && g.ntcaches > 0) flags |= fz_tcache(g.tcaches[in.u8() % g.ntcaches]);
      if (how & 4) flags |= kFzTcacheNone;
      if (how & 1) {
        // A valid size: between the request and the usable size, with the alignment of the
        // allocation (5.3.0's contract; without it the size maps to another class). Blocks
        // whose alignment changed the class are freed with their usable size, always valid.
        size_t n = b->req + (b->usable - b->req) / 2;
        if (b->align > 1) n = b->usable;
        fz_sdallocx(b->p, n == 0 ? 1 : n, flags);
      } else {
        fz_dallocx(b->p, flags);
      }
      release(*b);
      return;
    }
    case 13: {  // arenas.create
      if (g.narenas == kMaxArenas) {
        unsigned k = in.u8() % g.narenas;
        reset_arena(g.arenas[k]);
        return;
      }
      unsigned ind;
      size_t len = sizeof(ind);
      if (fz_mallctl("arenas.create", &ind, &len, nullptr, 0) != 0) return;
      g.arenas[g.narenas++] = ind;
      return;
    }
    case 14: {  // arena.<i>.reset (manual arenas only)
      if (g.narenas == 0) return;
      reset_arena(g.arenas[in.u8() % g.narenas]);
      return;
    }
    case 15: {  // decay / purge, one arena or all
      char name[48];
      unsigned which = in.u8();
      unsigned ind = which & 1 ? 0 : (g.narenas > 0 ? g.arenas[which % g.narenas] : 4096);
      snprintf(name, sizeof(name), "arena.%u.%s", ind, which & 2 ? "purge" : "decay");
      if (ctl_void(name) != 0) fail("arena.<i>.purge/decay failed", nullptr);
      return;
    }
    case 16: {  // tcache.create / tcache.destroy
      uint8_t v = in.u8();
      if (g.ntcaches > 0 && ((v & 1) || g.ntcaches == kMaxTcaches)) {
        unsigned k = v % g.ntcaches;
        if (ctl_write_u("tcache.destroy", g.tcaches[k]) != 0)
          fail("tcache.destroy failed", nullptr);
        g.tcaches[k] = g.tcaches[--g.ntcaches];
        return;
      }
      unsigned id;
      size_t len = sizeof(id);
      if (fz_mallctl("tcache.create", &id, &len, nullptr, 0) != 0) return;
      g.tcaches[g.ntcaches++] = id;
      return;
    }
    case 17: {  // tcache.flush
      if (g.ntcaches == 0) return;
      if (ctl_write_u("tcache.flush", g.tcaches[in.u8() % g.ntcaches]) != 0) {
        fail("tcache.flush failed", nullptr);
      }
      return;
    }
    case 18: {  // thread.tcache.enabled toggle, read back
      bool want = in.u8() & 1;
      bool old = !want;
      size_t len = sizeof(old);
      if (fz_mallctl("thread.tcache.enabled", &old, &len, &want, sizeof(want)) != 0) {
        fail("thread.tcache.enabled failed", nullptr);
      }
      if (old != g.tcache_enabled) fail("thread.tcache.enabled read back wrong", nullptr);
      g.tcache_enabled = want;
      return;
    }
    default: {  // verify everything
      for (Block& b : g.slot) {
        if (b.p != nullptr) verify(b);
      }
      return;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* s = getenv("JE_FUZZ_STATEFUL");
  g_stateful = s != nullptr && s[0] == '1';
  const char* r = getenv("JE_FUZZ_REPLAY");
  g_replay = r != nullptr && r[0] == '1';
  if (g_replay) g_stateful = true;
  if (const char* t = getenv("JE_FUZZ_TRACE")) g_trace = fopen(t, "ab");
  if (const char* v = getenv("JE_FUZZ_VERBOSE_FROM")) g_verbose_from = strtoul(v, nullptr, 10);
  if (const char* h = getenv("JE_FUZZ_HISTORY"); h != nullptr && h[0] == '1') {
    g_events = static_cast<Event*>(calloc(kEvents, sizeof(Event)));
  }
  g.tcache_enabled = true;
  return 0;
}

namespace {

void run_one(const uint8_t* data, size_t size) {
  g_inputs++;
  if (g_trace != nullptr) {
    uint8_t len[4] = {static_cast<uint8_t>(size), static_cast<uint8_t>(size >> 8),
                      static_cast<uint8_t>(size >> 16), static_cast<uint8_t>(size >> 24)};
    fwrite(len, 1, 4, g_trace);
    fwrite(data, 1, size, g_trace);
    fflush(g_trace);
  }
  Reader in{data, size};
  for (unsigned n = 0; !in.done() && n < 4096; n++) step(in);
  if (!g_stateful) cleanup();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (!g_replay) {
    run_one(data, size);
    return 0;
  }
  size_t i = 0;
  while (i + 4 <= size) {
    size_t len = data[i] | data[i + 1] << 8 | data[i + 2] << 16 | size_t{data[i + 3]} << 24;
    i += 4;
    if (len > size - i) len = size - i;
    run_one(data + i, len);
    i += len;
  }
  return 0;
}
