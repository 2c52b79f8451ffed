// reuse_test: memory a burst freed is reused by the next burst of the same size -- the promise
// of the coalescing bound (doc/design/coalescing.md) -- and memory freed at exhaustion can be
// allocated again.  Each case runs in a fresh child process (child.h).
//
// Size sweep: bursts of same-sized blocks, 16 KiB to 8 MiB, class sizes and sizes between
// classes, every page touched, all freed, four rounds.  Mapped and resident memory after each
// later round must stay within 25% of the first round's (a burst that cannot reuse what it
// freed takes new pages instead, so both grow round after round):
//   * through malloc / posix_memalign with default options (5.3.0 holds this too: what it
//     cannot reuse, its oversize purge or decay gives back);
//   * through mallocx on one arena with decay off (what neither library purges must be reused:
//     5.3.0 does not hold this, doc/compat.md#bounded-coalesce); here, from the second round on,
//     no page may come from retained or new memory at all (our allocation-source counters).
// Faults (ours, with default options): from the second round on, a burst faults in at most 10%
// of the pages the first one did -- what a burst freed is still resident for the next one
// (opt.decay_hold_peak; 5.3.0 purges the oversize blocks, and those just below 8 MiB, when
// they are freed, and faults them in again every round).
// Exhaustion: under RLIMIT_AS, allocate until NULL, free everything, allocate again: at least
// 90% as many blocks must come back.
#include "child.h"

#include <sys/resource.h>

using namespace jt::subproc;

namespace {

constexpr int kRounds = 4;
constexpr size_t kBurstBytes = size_t{24} << 20;  // per round
constexpr size_t kMaxBlocks = 4096;
void* g_blocks[kMaxBlocks];

size_t burst_blocks(size_t size) {
  size_t n = kBurstBytes / size;
  return n < 8 ? 8 : (n > kMaxBlocks ? kMaxBlocks : n);
}

// "SIZE" or "SIZE:ALIGN".
void parse(const char* arg, size_t* size, size_t* align) {
  char* end = nullptr;
  *size = std::strtoull(arg, &end, 10);
  *align = (end != nullptr && *end == ':') ? std::strtoull(end + 1, nullptr, 10) : 0;
}

size_t stat_z(const char* name) {
  size_t v = 0;
  jt::ctl_get(name, &v);
  return v;
}

// Resident pages of the whole process (/proc/self/statm, second field).
long long rss_pages() {
  static char buf[256];
  read_proc("/proc/self/statm", buf, sizeof(buf));
  const char* sp = std::strchr(buf, ' ');
  return sp != nullptr ? std::strtoll(sp + 1, nullptr, 10) : -1;
}

long long minflt() {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_minflt;
}

void emit_round(int r, size_t mapped, size_t resident) {
  char key[32];
  std::snprintf(key, sizeof(key), "mapped%d", r);
  emit(key, (long long)mapped);
  std::snprintf(key, sizeof(key), "resident%d", r);
  emit(key, (long long)resident);
  std::snprintf(key, sizeof(key), "rss%d", r);
  emit(key, rss_pages() * 4096);
}

// Child: bursts through the plain C API under the options the parent chose.
void mode_capi(const char* arg) {
  size_t size, align;
  parse(arg, &size, &align);
  size_t n = burst_blocks(size);
  for (int r = 0; r < kRounds; r++) {
    const long long faults0 = minflt();
    for (size_t i = 0; i < n; i++) {
      void* p = nullptr;
      if (align == 0) {
        p = malloc(size);
      } else if (posix_memalign(&p, align, size) != 0) {
        p = nullptr;
      }
      if (p == nullptr) {
        FAIL_MSG("allocation %zu of %zu bytes failed", i, size);
        return;
      }
      touch(p, size);
      g_blocks[i] = p;
    }
    char key[32];
    std::snprintf(key, sizeof(key), "faults%d", r);
    emit(key, minflt() - faults0);
    for (size_t i = 0; i < n; i++) free(g_blocks[i]);
    jt::refresh_stats();
    emit_round(r, stat_z("stats.mapped"), stat_z("stats.resident"));
  }
}

// Child: bursts through mallocx on a new arena whose dirty and muzzy decay are off.
void mode_arena(const char* arg) {
  size_t size, align;
  parse(arg, &size, &align);
  unsigned a = 0;
  if (jt::ctl_get("arenas.create", &a) != 0) {
    FAIL_MSG("arenas.create failed");
    return;
  }
  char name[96];
  ssize_t off = -1;
  for (const char* leaf : {"dirty_decay_ms", "muzzy_decay_ms"}) {
    std::snprintf(name, sizeof(name), "arena.%u.%s", a, leaf);
    if (mallctl(name, nullptr, nullptr, &off, sizeof(off)) != 0) FAIL_MSG("%s failed", name);
  }
  int flags = MALLOCX_ARENA(a) | MALLOCX_TCACHE_NONE;
  if (align != 0) flags |= MALLOCX_ALIGN(align);
  size_t n = burst_blocks(size);
  for (int r = 0; r < kRounds; r++) {
    for (size_t i = 0; i < n; i++) {
      void* p = mallocx(size, flags);
      if (p == nullptr) {
        FAIL_MSG("mallocx %zu of %zu bytes failed", i, size);
        return;
      }
      touch(p, size);
      g_blocks[i] = p;
    }
    for (size_t i = 0; i < n; i++) dallocx(g_blocks[i], flags);
    jt::refresh_stats();
    emit_round(r, arena_stat(a, "mapped"), arena_stat(a, "resident"));
    char key[32];
    std::snprintf(key, sizeof(key), "newpages%d", r);
    emit(key, (long long)(arena_stat64(a, "retained_alloc_pages") +
                          arena_stat64(a, "fresh_alloc_pages")));
  }
}

// Child: under an address-space limit 1 GiB above what the process maps now, allocate blocks
// of SIZE until NULL, free them all, and allocate again until NULL (or as many as the first
// time).  The pointer table is mapped before the limit is set, outside the allocator.
void mode_exhaust(const char* arg) {
  size_t size, align;
  parse(arg, &size, &align);
  size_t cap = (size_t{2} << 30) / size + 1024;
  auto** ptrs = static_cast<void**>(mmap(nullptr, cap * sizeof(void*), PROT_READ | PROT_WRITE,
                                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (ptrs == MAP_FAILED) {
    FAIL_MSG("mmap of the pointer table failed");
    return;
  }
  free(malloc(size));  // initialize before measuring the address space
  static char buf[256];
  read_proc("/proc/self/statm", buf, sizeof(buf));
  size_t vm = (size_t)std::strtoull(buf, nullptr, 10) * 4096;
  struct rlimit rl = {vm + (size_t{1} << 30), vm + (size_t{1} << 30)};
  if (setrlimit(RLIMIT_AS, &rl) != 0) {
    FAIL_MSG("setrlimit failed");
    return;
  }
  size_t n1 = 0;
  while (n1 < cap && (ptrs[n1] = malloc(size)) != nullptr) n1++;
  for (size_t i = 0; i < n1; i++) free(ptrs[i]);
  size_t n2 = 0;
  while (n2 < n1 && (ptrs[n2] = malloc(size)) != nullptr) n2++;
  for (size_t i = 0; i < n2; i++) free(ptrs[i]);
  emit("first", (long long)n1);
  emit("again", (long long)n2);
}

constexpr Mode kModes[] = {
    {"noop", mode_noop}, {"capi", mode_capi}, {"arena", mode_arena}, {"exhaust", mode_exhaust}};

// 16 KiB to 8 MiB: size classes and sizes between them, among them the 30-420 KiB band where
// merged extents once fell out of their own requests' reach, and 8 MiB (the oversize arena).
constexpr size_t kSweep[] = {16384,   20000,   24576,   30000,   37000,   40000,   50000,
                             65536,   80000,   100000,  131072,  150000,  200000,  262144,
                             300000,  420000,  500000,  786432,  1000000, 1500000, 2097152,
                             3000000, 4194304, 5000000, 6000000, 7000000, 8000000, 8388608};
// Aligned requests: (size, alignment).
constexpr size_t kAligned[][2] = {{20000, 65536},   {100000, 65536},    {200000, 8192},
                                  {300000, 262144}, {1000000, 2097152}, {3000000, 65536}};

// Checks one child's rounds: every later round within 25% of the first, for each key.
void check_rounds(const Child& c, const char* label, bool check_new_pages) {
  for (const char* what : {"mapped", "resident", "rss"}) {
    char key[32];
    std::snprintf(key, sizeof(key), "%s0", what);
    long long first = value(c, key);
    for (int r = 1; r < kRounds; r++) {
      std::snprintf(key, sizeof(key), "%s%d", what, r);
      long long v = value(c, key);
      if (first <= 0 || v > first + first / 4) {
        FAIL_MSG("%s: %s grew from %lld to %lld bytes by round %d", label, what, first, v, r);
        show(c);
        return;
      }
    }
  }
  if (!check_new_pages) return;
  long long pages[kRounds];
  for (int r = 0; r < kRounds; r++) {
    char key[32];
    std::snprintf(key, sizeof(key), "newpages%d", r);
    pages[r] = value(c, key);
  }
  for (int r = 1; r < kRounds; r++) {
    if (pages[r] != pages[r - 1]) {
      FAIL_MSG("%s: round %d took %lld pages from retained or new memory", label, r,
               pages[r] - pages[r - 1]);
      return;
    }
  }
}

void sweep(const char* mode, const char* conf, bool check_new_pages) {
  char arg[64], label[96];
  for (size_t size : kSweep) {
    std::snprintf(arg, sizeof(arg), "%zu", size);
    std::snprintf(label, sizeof(label), "%s %s", mode, arg);
    Child c;
    if (!child(&c, mode, conf, arg)) return;
    check_rounds(c, label, check_new_pages);
  }
  for (const auto& sa : kAligned) {
    std::snprintf(arg, sizeof(arg), "%zu:%zu", sa[0], sa[1]);
    std::snprintf(label, sizeof(label), "%s %s", mode, arg);
    Child c;
    if (!child(&c, mode, conf, arg)) return;
    check_rounds(c, label, check_new_pages);
  }
}

TEST_COMPAT(bursts_reused_with_defaults, "bounded-coalesce") { sweep("capi", nullptr, false); }

TEST_COMPAT(bursts_reused_without_decay, "bounded-coalesce") { sweep("arena", nullptr, true); }

// Ours: with default options a later burst faults in at most 10% of the first burst's pages
// (the blocks' own pages; the first round also faults in the allocator's metadata).
TEST_COMPAT(bursts_fault_in_only_once_with_defaults, "decay-hold-peak") {
  char arg[64];
  for (size_t size : kSweep) {
    std::snprintf(arg, sizeof(arg), "%zu", size);
    Child c;
    if (!child(&c, "capi", nullptr, arg)) return;
    const long long first = value(c, "faults0");
    for (int r = 1; r < kRounds; r++) {
      char key[32];
      std::snprintf(key, sizeof(key), "faults%d", r);
      const long long v = value(c, key);
      if (first <= 0 || v * 10 > first) {
        FAIL_MSG("capi %s: round %d faulted %lld pages, the first %lld", arg, r, v, first);
        show(c);
        break;
      }
    }
  }
}

TEST_COMPAT(exhaustion_gives_back_what_was_freed, "bounded-coalesce") {
  for (size_t size : {size_t{4000}, size_t{20000}, size_t{40000}, size_t{100000}, size_t{300000},
                      size_t{1048576}, size_t{10485760}}) {
    char arg[32];
    std::snprintf(arg, sizeof(arg), "%zu", size);
    Child c;
    if (!child(&c, "exhaust", nullptr, arg)) return;
    long long first = value(c, "first"), again = value(c, "again");
    if (first < 50 || again * 10 < first * 9) {
      FAIL_MSG(
          "blocks of %zu bytes: %lld allocated until exhaustion, only %lld again after "
          "freeing them all",
          size, first, again);
    }
  }
}

}  // namespace

int main(int argc, char** argv) { return run_main(argc, argv, kModes); }
