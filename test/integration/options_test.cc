// options_test: every run-time option has the effect jemalloc 5.3.0 gives it, and the
// configuration sources override each other in 5.3.0's order (doc/options.md, "Sources and
// syntax").
//
// Options are read once per process, so each test starts CHILD processes: this binary again
// (`options_test --child MODE [ARG]`) or the helper program malloc_conf_global, with an
// environment built from scratch (only MALLOC_CONF as the test chooses, plus LD_PRELOAD and
// JT_REFERENCE passed through so the child runs the same library as the parent).  The MALLOC_CONF
// that run.sh gives the parent does not reach the children.  A child mode does some work and
// prints what it observed as `key=value` lines on stdout; its stdout and stderr go to memfds the
// parent reads after the child ended.  The parent then checks the EFFECT of the option through
// public interfaces only: mallctl and stats, malloc_usable_size, memory contents,
// /proc/self/maps and /proc/self/smaps, getrusage, exit status and output.
//
// Tests that need something the machine may not offer (the THP mode [madvise], permission to
// create /etc/malloc.conf, a deterministic CPU count) skip with the reason.
#define JT_NO_MAIN
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "harness.h"

namespace {

// ===========================================================================
// Child side.

constexpr unsigned kAllArenas = 4096;  // MALLCTL_ARENAS_ALL

char g_stdout_buf[1 << 14];

void emit(const char *key, long long v) { std::printf("%s=%lld\n", key, v); }
void emit_str(const char *key, const char *v) { std::printf("%s=%s\n", key, v ? v : "(null)"); }

unsigned thread_arena() {
  unsigned a = UINT_MAX;
  jt::ctl_get("thread.arena", &a);
  return a;
}

unsigned lookup_arena(const void *p) {
  unsigned a = UINT_MAX;
  size_t len = sizeof(a);
  if (mallctl("arenas.lookup", &a, &len, &p, sizeof(p)) != 0) return UINT_MAX;
  return a;
}

size_t arena_stat(unsigned arena, const char *leaf) {
  char name[128];
  size_t v = 0;
  jt::ctl_get(jt::ctl_name(name, "stats.arenas.%u.%s", arena, leaf), &v);
  return v;
}

uint64_t arena_stat64(unsigned arena, const char *leaf) {
  char name[128];
  uint64_t v = 0;
  jt::ctl_get(jt::ctl_name(name, "stats.arenas.%u.%s", arena, leaf), &v);
  return v;
}

bool arena_action(unsigned arena, const char *what) {
  char name[128];
  return mallctl(jt::ctl_name(name, "arena.%u.%s", arena, what), nullptr, nullptr, nullptr, 0) == 0;
}

void tcache_flush() { mallctl("thread.tcache.flush", nullptr, nullptr, nullptr, 0); }

// Writes one byte in every page of [p, p + n) so the pages are resident.
void touch(void *p, size_t n) {
  auto *b = static_cast<volatile unsigned char *>(p);
  for (size_t i = 0; i < n; i += 4096) b[i] = 1;
  if (n > 0) b[n - 1] = 1;
}

// Bytes in [p, p + n) that differ from c (through volatile reads: p may have been freed).
size_t count_not(const void *p, size_t n, unsigned char c) {
  auto *b = static_cast<const volatile unsigned char *>(p);
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) bad += b[i] != c;
  return bad;
}

// Reads a /proc file into buf with plain system calls (no stdio: its buffer would come from
// the allocator under test and could take the very pages being looked for).  Returns the length.
size_t read_proc(const char *path, char *buf, size_t cap) {
  buf[0] = '\0';
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  size_t n = 0;
  while (n + 1 < cap) {
    ssize_t r = read(fd, buf + n, cap - 1 - n);
    if (r <= 0) break;
    n += (size_t)r;
  }
  close(fd);
  buf[n] = '\0';
  return n;
}

char g_proc_buf[4 << 20];

// True when some line of /proc/self/maps covers addr.
bool is_mapped(const void *addr) {
  read_proc("/proc/self/maps", g_proc_buf, sizeof(g_proc_buf));
  uintptr_t a = (uintptr_t)addr;
  for (char *line = g_proc_buf; *line != '\0';) {
    char *end = std::strchr(line, '\n');
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line, "%lx-%lx", &lo, &hi) == 2 && lo <= a && a < hi) return true;
    if (end == nullptr) break;
    line = end + 1;
  }
  return false;
}

// Walks /proc/self/smaps: for each mapping, whether its VmFlags hold "hg" / "nh".  With
// addr != 0, only the mapping covering addr counts.  Returns the number of mappings seen.
int smaps_flags(uintptr_t addr, int *nhg, int *nnh) {
  read_proc("/proc/self/smaps", g_proc_buf, sizeof(g_proc_buf));
  *nhg = 0;
  *nnh = 0;
  int seen = 0;
  bool in_range = false;
  for (char *line = g_proc_buf; *line != '\0';) {
    char *end = std::strchr(line, '\n');
    if (end != nullptr) *end = '\0';
    unsigned long lo = 0, hi = 0;
    char dash = 0;
    if (std::sscanf(line, "%lx%c%lx", &lo, &dash, &hi) == 3 && dash == '-') {
      in_range = addr == 0 || (lo <= addr && addr < hi);
      if (in_range) seen++;
    } else if (in_range && std::strncmp(line, "VmFlags:", 8) == 0) {
      // Flags are two-letter words separated by spaces.
      for (const char *f = line + 8; *f != '\0'; f++) {
        if (f[0] == ' ' && f[1] != '\0' && f[2] != '\0' && (f[3] == ' ' || f[3] == '\0')) {
          if (f[1] == 'h' && f[2] == 'g') (*nhg)++;
          if (f[1] == 'n' && f[2] == 'h') (*nnh)++;
        }
      }
    }
    if (end == nullptr) break;
    line = end + 1;
  }
  return seen;
}

// Blocks the tcache of this thread holds for class `size` after it freed n blocks into an
// emptied cache: flush, allocate n, flush (so the allocations left nothing cached), free n.
long long cached_after_frees(size_t size, int n) {
  static void *blocks[512];
  if (n > 512) n = 512;
  tcache_flush();
  for (int i = 0; i < n; i++) blocks[i] = malloc(size);
  tcache_flush();
  for (int i = 0; i < n; i++) free(blocks[i]);
  jt::refresh_stats();
  size_t usize = nallocx(size, 0);
  return (long long)(arena_stat(thread_arena(), "tcache_bytes") / usize);
}

// --- modes ---------------------------------------------------------------

void mode_noop(const char *) {
  void *p = malloc(100);
  jt::escape(p);
  free(p);
  emit("ok", 1);
}

// What opt.* reports for the keys the priority tests set.
void mode_opts(const char *) {
  mode_noop(nullptr);
  unsigned u = 0;
  size_t sz = 0;
  uint64_t u64 = 0;
  if (jt::ctl_get("opt.narenas", &u) == 0) emit("opt_narenas", u);
  if (jt::ctl_get("arenas.narenas", &u) == 0) emit("arenas_narenas", u);
  if (jt::ctl_get("arenas.tcache_max", &sz) == 0) emit("tcache_max", (long long)sz);
  if (jt::ctl_get("opt.hpa_min_purge_interval_ms", &u64) == 0) {
    emit("opt_hpa_min_purge_interval_ms", (long long)u64);
  }
  if (jt::ctl_get("opt.hpa_hugify_delay_ms", &u64) == 0) {
    emit("opt_hpa_hugify_delay_ms", (long long)u64);
  }
}

// narenas: threads alive at the same time spread over the automatic arenas.
constexpr int kSpreadThreads = 8;
std::atomic<int> g_spread_ready{0};
unsigned g_spread_arena[kSpreadThreads];

void *spread_thread(void *arg) {
  int i = (int)(intptr_t)arg;
  void *p = malloc(64);
  g_spread_arena[i] = lookup_arena(p);
  if (thread_arena() != g_spread_arena[i]) g_spread_arena[i] = UINT_MAX - 1;
  g_spread_ready.fetch_add(1);
  // Stay alive (and bound to the arena) until every thread has chosen one.
  while (g_spread_ready.load() < kSpreadThreads) sched_yield();
  free(p);
  return nullptr;
}

void mode_arenas(const char *) {
  mode_noop(nullptr);
  unsigned opt = 0, n = 0;
  jt::ctl_get("opt.narenas", &opt);
  jt::ctl_get("arenas.narenas", &n);
  emit("opt_narenas", opt);
  emit("arenas_narenas", n);
  pthread_t t[kSpreadThreads];
  for (int i = 0; i < kSpreadThreads; i++) {
    if (pthread_create(&t[i], nullptr, spread_thread, (void *)(intptr_t)i) != 0) {
      FAIL_MSG("pthread_create failed");
      return;
    }
  }
  for (auto &th : t) pthread_join(th, nullptr);
  unsigned seen[kSpreadThreads];
  int distinct = 0;
  unsigned max = 0;
  for (unsigned a : g_spread_arena) {
    bool dup = false;
    for (int j = 0; j < distinct; j++) dup = dup || seen[j] == a;
    if (!dup) seen[distinct++] = a;
    if (a > max) max = a;
  }
  emit("threads_distinct_arenas", distinct);
  emit("threads_max_arena", max);
}

// tcache: whether this thread (and a new one) caches freed blocks.
std::atomic<long long> g_thread_cached{-1};

void *tcache_thread(void *) {
  g_thread_cached.store(cached_after_frees(64, 10));
  return nullptr;
}

void mode_tcache(const char *) {
  mode_noop(nullptr);
  bool enabled = false;
  jt::ctl_get("thread.tcache.enabled", &enabled);
  emit("tcache_enabled", enabled);
  emit("cached_64", cached_after_frees(64, 10));
  emit("cached_20480", cached_after_frees(20480, 3));
  jt::run_in_thread(tcache_thread, nullptr);
  emit("thread_cached_64", g_thread_cached.load());
}

// tcache_max: the largest class a thread cache keeps.
void mode_tcache_max(const char *) {
  mode_noop(nullptr);
  size_t max = 0;
  unsigned nhbins = 0;
  jt::ctl_get("arenas.tcache_max", &max);
  jt::ctl_get("arenas.nhbins", &nhbins);
  emit("tcache_max", (long long)max);
  emit("nhbins", nhbins);
  emit("cached_32768", cached_after_frees(32768, 1));
  emit("cached_40960", cached_after_frees(40960, 1));
  emit("cached_65536", cached_after_frees(65536, 1));
  emit("cached_131072", cached_after_frees(131072, 1));
  emit("cached_262144", cached_after_frees(262144, 1));
}

// tcache_nslots_*: a full bin flushes half of its slots, so freeing capacity + 1 blocks into an
// empty bin leaves capacity / 2 + 1 of them; freeing `capacity` leaves all.
void mode_nslots(const char *) {
  mode_noop(nullptr);
  emit("cached_8_x50", cached_after_frees(8, 50));
  emit("cached_8_x51", cached_after_frees(8, 51));
  emit("cached_8_x201", cached_after_frees(8, 201));
  emit("cached_14336_x11", cached_after_frees(14336, 11));
  emit("cached_14336_x21", cached_after_frees(14336, 21));
  emit("cached_20480_x7", cached_after_frees(20480, 7));
  emit("cached_20480_x21", cached_after_frees(20480, 21));
}

// Decay: 32 large blocks (outside the tcache) freed, then arena.<i>.decay, then .purge.
void mode_decay(const char *arg) {
  mode_noop(nullptr);
  constexpr int kBlocks = 32;
  constexpr size_t kSize = 256 << 10;
  void *blocks[kBlocks];
  unsigned arena = thread_arena();
  for (auto &b : blocks) {
    b = mallocx(kSize, MALLOCX_TCACHE_NONE);
    touch(b, kSize);
  }
  for (auto b : blocks) dallocx(b, MALLOCX_TCACHE_NONE);
  emit("freed_pages", (long long)(kBlocks * kSize / 4096));
  jt::refresh_stats();
  emit("pdirty_free", (long long)arena_stat(arena, "pdirty"));
  emit("pmuzzy_free", (long long)arena_stat(arena, "pmuzzy"));
  // With a sleep: arena.<i>.decay only acts when a decay epoch passes, and the freed pages
  // join the backlog at the first one, so it is called a few times, the decay time apart.
  long long sleep_ms = arg ? std::atoll(arg) : 0;
  for (int i = 0; sleep_ms > 0 && i < 3; i++) {
    arena_action(arena, "decay");
    timespec ts{(time_t)(sleep_ms / 1000), (long)(sleep_ms % 1000) * 1000000L};
    nanosleep(&ts, nullptr);
  }
  arena_action(arena, "decay");
  jt::refresh_stats();
  emit("pdirty_decay", (long long)arena_stat(arena, "pdirty"));
  emit("pmuzzy_decay", (long long)arena_stat(arena, "pmuzzy"));
  arena_action(arena, "purge");
  jt::refresh_stats();
  emit("pdirty_purge", (long long)arena_stat(arena, "pdirty"));
  emit("pmuzzy_purge", (long long)arena_stat(arena, "pmuzzy"));
}

// lg_extent_max_active_fit: is a request of `arg` KiB carved out of a freed 1 MiB dirty extent?
void mode_fit(const char *arg) {
  mode_noop(nullptr);
  unsigned arena = thread_arena();
  constexpr size_t kBig = 1 << 20;
  size_t req = (size_t)(arg ? std::atoll(arg) : 64) << 10;
  char *big = static_cast<char *>(mallocx(kBig, MALLOCX_TCACHE_NONE));
  touch(big, kBig);
  dallocx(big, MALLOCX_TCACHE_NONE);
  jt::refresh_stats();
  size_t before = arena_stat(arena, "pdirty");
  char *small = static_cast<char *>(mallocx(req, MALLOCX_TCACHE_NONE));
  jt::refresh_stats();
  size_t after = arena_stat(arena, "pdirty");
  emit("pdirty_before", (long long)before);
  emit("pdirty_after", (long long)after);
  // The extent starts up to a page below the block (the cache-oblivious offset).
  emit("reused", small + 4096 > big && small < big + kBig);
  dallocx(small, MALLOCX_TCACHE_NONE);
}

// bounded_coalesce: a burst of same-sized large frees, then the same requests again.  Where
// the freed blocks merged into an extent too large to be reused for them, the second round
// faults in fresh pages.
void mode_coalesce(const char *) {
  mode_noop(nullptr);
  constexpr int kBlocks = 256;
  constexpr size_t kSize = 16 << 10;
  static void *blocks[kBlocks];
  unsigned arena = thread_arena();
  for (auto &b : blocks) {
    b = mallocx(kSize, MALLOCX_TCACHE_NONE);
    touch(b, kSize);
  }
  for (auto b : blocks) dallocx(b, MALLOCX_TCACHE_NONE);
  rusage r0, r1;
  getrusage(RUSAGE_SELF, &r0);
  for (auto &b : blocks) {
    b = mallocx(kSize, MALLOCX_TCACHE_NONE);
    touch(b, kSize);
  }
  getrusage(RUSAGE_SELF, &r1);
  for (auto b : blocks) dallocx(b, MALLOCX_TCACHE_NONE);
  jt::refresh_stats();
  emit("faults", r1.ru_minflt - r0.ru_minflt);
  emit("pages_per_round", (long long)(kBlocks * kSize / 4096));
  emit("dirty_merges_refused", (long long)arena_stat64(arena, "dirty_merges_refused"));
  emit("dirty_merges", (long long)arena_stat64(arena, "dirty_merges"));
}

// oversize_threshold: which arena large allocations land in.
void mode_oversize(const char *) {
  mode_noop(nullptr);
  unsigned opt = 0, n = 0;
  size_t thr = 0;
  jt::ctl_get("opt.narenas", &opt);
  jt::ctl_get("opt.oversize_threshold", &thr);
  emit("opt_narenas", opt);
  emit("opt_oversize_threshold", (long long)thr);
  void *huge = mallocx(8 << 20, MALLOCX_TCACHE_NONE);
  void *mid = mallocx(1 << 20, MALLOCX_TCACHE_NONE);
  void *small = malloc(64);
  jt::ctl_get("arenas.narenas", &n);
  emit("arenas_narenas", n);
  emit("thread_arena", thread_arena());
  emit("arena_8m", lookup_arena(huge));
  emit("arena_1m", lookup_arena(mid));
  emit("arena_small", lookup_arena(small));
  free(small);
  dallocx(mid, MALLOCX_TCACHE_NONE);
  dallocx(huge, MALLOCX_TCACHE_NONE);
}

// retain: after a purge, is the freed range still part of the address space?
void mode_retain(const char *) {
  mode_noop(nullptr);
  unsigned arena = thread_arena();
  constexpr size_t kBig = 4 << 20;
  char *big = static_cast<char *>(mallocx(kBig, MALLOCX_TCACHE_NONE));
  touch(big, kBig);
  emit("mapped_live", is_mapped(big));
  dallocx(big, MALLOCX_TCACHE_NONE);
  arena_action(arena, "purge");
  arena_action(kAllArenas, "purge");
  jt::refresh_stats();
  size_t retained = 0;
  jt::ctl_get("stats.retained", &retained);
  emit("mapped_after_purge", is_mapped(big) || is_mapped(big + kBig / 2));
  emit("retained", (long long)retained);
  emit("arena_retained", (long long)arena_stat(arena, "retained"));
}

// percpu_arena: a thread pinned to CPU c allocates from arena c.
struct PinResult {
  int cpu;
  unsigned small_arena, large_arena, thread_arena;
  int cpu_after;
};
PinResult g_pin;

void *pinned_thread(void *) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(g_pin.cpu, &set);
  if (sched_setaffinity(0, sizeof(set), &set) != 0) {
    g_pin.cpu_after = -2;
    return nullptr;
  }
  sched_yield();
  void *s = malloc(64);
  void *l = mallocx(1 << 20, MALLOCX_TCACHE_NONE);
  g_pin.small_arena = lookup_arena(s);
  g_pin.large_arena = lookup_arena(l);
  g_pin.thread_arena = thread_arena();
  g_pin.cpu_after = sched_getcpu();
  free(s);
  dallocx(l, MALLOCX_TCACHE_NONE);
  return nullptr;
}

void mode_percpu(const char *) {
  mode_noop(nullptr);
  const char *mode = nullptr;
  unsigned opt = 0;
  jt::ctl_get("opt.percpu_arena", &mode);
  jt::ctl_get("opt.narenas", &opt);
  emit_str("opt_percpu_arena", mode);
  emit("opt_narenas", opt);
  cpu_set_t set;
  CPU_ZERO(&set);
  sched_getaffinity(0, sizeof(set), &set);
  int checked = 0, mismatched = 0;
  for (int c = 0; c < CPU_SETSIZE; c++) {
    if (!CPU_ISSET(c, &set)) continue;
    g_pin = PinResult{c, UINT_MAX, UINT_MAX, UINT_MAX, -1};
    jt::run_in_thread(pinned_thread, nullptr);
    checked++;
    if (g_pin.cpu_after != c || g_pin.small_arena != (unsigned)c ||
        g_pin.large_arena != (unsigned)c || g_pin.thread_arena != (unsigned)c) {
      mismatched++;
      std::printf("pin cpu=%d after=%d small=%u large=%u thread=%u\n", c, g_pin.cpu_after,
                  g_pin.small_arena, g_pin.large_arena, g_pin.thread_arena);
    }
  }
  emit("cpus_checked", checked);
  emit("cpus_mismatched", mismatched);
}

// zero_realloc: what realloc(p, 0) does.
void mode_zero_realloc(const char *) {
  mode_noop(nullptr);
  void *p = malloc(100);
  uint64_t d0 = 0, d1 = 0;
  jt::ctl_get("thread.deallocated", &d0);
  std::fprintf(stderr, "child: calling realloc(p, 0)\n");
  void *q = realloc(p, 0);
  jt::ctl_get("thread.deallocated", &d1);
  emit("result_null", q == nullptr);
  emit("result_usable", q ? (long long)malloc_usable_size(q) : -1);
  emit("freed_bytes", (long long)(d1 - d0));
  free(q);
}

// junk: fill bytes on allocation (0xa5) and on free (0x5a).  Freed contents are read only from
// a large block whose pages stay mapped (the conf keeps dirty pages: dirty_decay_ms:-1).
void mode_junk(const char *) {
  mode_noop(nullptr);
  unsigned char *s = static_cast<unsigned char *>(malloc(100));
  size_t su = malloc_usable_size(s);
  emit("small_not_a5", (long long)count_not(s, su, 0xa5));
  free(s);
  constexpr size_t kBig = 1 << 20;
  unsigned char *b = static_cast<unsigned char *>(malloc(kBig));
  size_t bu = malloc_usable_size(b);
  emit("large_usable", (long long)bu);
  emit("large_not_a5", (long long)count_not(b, bu, 0xa5));
  emit("large_not_0", (long long)count_not(b, bu, 0));
  std::memset(b, 0x11, bu);
  free(b);
  jt::escape(b);
  emit("freed_not_5a", (long long)count_not(b, bu, 0x5a));
  emit("freed_not_11", (long long)count_not(b, bu, 0x11));
}

// zero: recycled memory comes back zeroed.
void mode_zero(const char *) {
  mode_noop(nullptr);
  for (size_t size : {size_t{100}, size_t{20480}, size_t{1} << 20}) {
    void *p = malloc(size);
    size_t u = malloc_usable_size(p);
    std::memset(p, 0xcc, u);
    free(p);
    void *q = malloc(size);
    char key[64];
    std::snprintf(key, sizeof(key), "same_%zu", size);
    emit(key, p == q);
    std::snprintf(key, sizeof(key), "nonzero_%zu", size);
    emit(key, (long long)count_not(q, malloc_usable_size(q), 0));
    free(q);
  }
}

// stats_interval: allocation traffic between two markers on stderr.
void mode_interval(const char *) {
  mode_noop(nullptr);
  std::fprintf(stderr, "child: traffic starts\n");
  for (int i = 0; i < 16; i++) {
    void *p = malloc(1 << 20);
    touch(p, 4096);
    free(p);
  }
  std::fprintf(stderr, "child: traffic ends\n");
}

// thp: the huge-page flags of the mapping holding a large block.
void mode_thp(const char *) {
  mode_noop(nullptr);
  constexpr size_t kBig = 4 << 20;
  void *b = mallocx(kBig, MALLOCX_TCACHE_NONE);
  touch(b, kBig);
  int hg = 0, nh = 0;
  emit("vmas", smaps_flags((uintptr_t)b, &hg, &nh));
  emit("block_hg", hg);
  emit("block_nh", nh);
  emit("all_vmas", smaps_flags(0, &hg, &nh));
  emit("all_hg", hg);
  emit("all_nh", nh);
  dallocx(b, MALLOCX_TCACHE_NONE);
}

struct Mode {
  const char *name;
  void (*fn)(const char *arg);
};

constexpr Mode kModes[] = {
    {"noop", mode_noop},
    {"opts", mode_opts},
    {"arenas", mode_arenas},
    {"tcache", mode_tcache},
    {"tcache_max", mode_tcache_max},
    {"nslots", mode_nslots},
    {"decay", mode_decay},
    {"fit", mode_fit},
    {"coalesce", mode_coalesce},
    {"oversize", mode_oversize},
    {"retain", mode_retain},
    {"percpu", mode_percpu},
    {"zero_realloc", mode_zero_realloc},
    {"junk", mode_junk},
    {"zero", mode_zero},
    {"interval", mode_interval},
    {"thp", mode_thp},
};

int child_main(const char *mode, const char *arg) {
  // stdio's buffer must not come from the allocator: a child measures its caches.
  std::setvbuf(stdout, g_stdout_buf, _IOLBF, sizeof(g_stdout_buf));
  jt::g_current = mode;
  for (const Mode &m : kModes) {
    if (std::strcmp(m.name, mode) == 0) {
      m.fn(arg);
      std::fflush(stdout);
      std::fprintf(stderr, "child: returning from main\n");
      return jt::failed() ? 1 : 0;
    }
  }
  std::printf("unknown child mode %s\n", mode);
  return 2;
}

// ===========================================================================
// Parent side.

char g_self[PATH_MAX];

// Output buffers for the latest child (reused by every spawn).
char g_out[1 << 16];
char g_err[8 << 20];

struct Child {
  const char *what;  // "mode [conf]" for messages
  int status;        // waitpid status; -1 if it never ran
  bool timed_out;
  const char *out;   // stdout, NUL-terminated
  const char *err;   // stderr, NUL-terminated
  size_t err_len;

  bool exited(int code) const { return status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == code; }
  bool signaled(int sig) const { return status != -1 && WIFSIGNALED(status) && WTERMSIG(status) == sig; }
};

char g_what[512];
int g_child_timeout_ms = 60000;

size_t slurp(int fd, char *buf, size_t cap) {
  size_t n = 0;
  while (n + 1 < cap) {
    ssize_t r = pread(fd, buf + n, cap - 1 - n, (off_t)n);
    if (r <= 0) break;
    n += (size_t)r;
  }
  buf[n] = '\0';
  return n;
}

// Runs `path argv...` with an environment holding only MALLOC_CONF=conf (none when conf is
// null) and the pass-through variables; waits up to g_child_timeout_ms, then kills it.
Child run_program(const char *path, const char *const *argv, const char *conf) {
  Child c{g_what, -1, false, g_out, g_err, 0};
  size_t wl = 0;
  for (int i = 0; argv[i] != nullptr && wl < sizeof(g_what) - 1; i++) {
    wl += (size_t)std::snprintf(g_what + wl, sizeof(g_what) - wl, "%s ", argv[i]);
  }
  if (wl < sizeof(g_what) - 1) {
    std::snprintf(g_what + wl, sizeof(g_what) - wl, "[MALLOC_CONF=%s]", conf ? conf : "(unset)");
  }
  g_out[0] = g_err[0] = '\0';
  static char env_conf[1024], env_preload[PATH_MAX + 16], env_ref[64];
  const char *envp[4] = {};
  int ne = 0;
  if (conf != nullptr) {
    std::snprintf(env_conf, sizeof(env_conf), "MALLOC_CONF=%s", conf);
    envp[ne++] = env_conf;
  }
  if (const char *pre = std::getenv("LD_PRELOAD"); pre != nullptr && *pre != '\0') {
    std::snprintf(env_preload, sizeof(env_preload), "LD_PRELOAD=%s", pre);
    envp[ne++] = env_preload;
  }
  if (const char *ref = std::getenv("JT_REFERENCE"); ref != nullptr && *ref != '\0') {
    std::snprintf(env_ref, sizeof(env_ref), "JT_REFERENCE=%s", ref);
    envp[ne++] = env_ref;
  }
  int ofd = memfd_create("child-stdout", MFD_CLOEXEC);
  int efd = memfd_create("child-stderr", MFD_CLOEXEC);
  if (ofd < 0 || efd < 0) {
    FAIL_MSG("memfd_create: %s", std::strerror(errno));
    return c;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(ofd, 1);
    dup2(efd, 2);
    rlimit no_core{0, 0};
    setrlimit(RLIMIT_CORE, &no_core);  // expected aborts leave no core files
    execve(path, const_cast<char *const *>(argv), const_cast<char *const *>(envp));
    _exit(127);
  }
  if (pid < 0) {
    FAIL_MSG("fork: %s", std::strerror(errno));
    close(ofd);
    close(efd);
    return c;
  }
  int st = 0;
  for (int ms = 0;; ms++) {
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid) break;
    if (ms >= g_child_timeout_ms) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      c.timed_out = true;
      break;
    }
    timespec ts{0, 1000000};
    nanosleep(&ts, nullptr);
  }
  c.status = st;
  slurp(ofd, g_out, sizeof(g_out));
  c.err_len = slurp(efd, g_err, sizeof(g_err));
  close(ofd);
  close(efd);
  return c;
}

// Prints the child's output (for a failure report), at most a few lines of each stream.
void show(const Child &c) {
  std::printf("    child %s: status %#x%s\n", c.what, c.status, c.timed_out ? " (timed out)" : "");
  for (int s = 0; s < 2; s++) {
    const char *text = s == 0 ? c.out : c.err;
    int lines = 0;
    for (const char *p = text; *p != '\0' && lines < 25; lines++) {
      const char *e = std::strchr(p, '\n');
      int len = e ? (int)(e - p) : (int)std::strlen(p);
      std::printf("    | %s %.*s\n", s == 0 ? "out" : "err", len, p);
      p = e ? e + 1 : p + len;
    }
  }
}

// Runs `options_test --child mode [arg]` under conf; fails the test (showing the output) unless
// the child exits 0.
bool child(Child *c, const char *mode, const char *conf, const char *arg = nullptr) {
  const char *argv[] = {"options_test", "--child", mode, arg, nullptr};
  *c = run_program(g_self, argv, conf);
  if (c->exited(0)) return true;
  FAIL_MSG("child did not exit 0");
  show(*c);
  return false;
}

// The integer the child printed as key=..., or LLONG_MIN (after recording a failure).
long long value(const Child &c, const char *key) {
  size_t klen = std::strlen(key);
  for (const char *p = c.out; p != nullptr && *p != '\0';) {
    if (std::strncmp(p, key, klen) == 0 && p[klen] == '=') return std::strtoll(p + klen + 1, nullptr, 10);
    p = std::strchr(p, '\n');
    if (p) p++;
  }
  FAIL_MSG("child %s printed no %s", c.what, key);
  show(c);
  return LLONG_MIN;
}

// The text after key= on its line (copied into buf).
const char *text_value(const Child &c, const char *key, char *buf, size_t cap) {
  size_t klen = std::strlen(key);
  for (const char *p = c.out; p != nullptr && *p != '\0';) {
    if (std::strncmp(p, key, klen) == 0 && p[klen] == '=') {
      const char *v = p + klen + 1;
      const char *e = std::strchr(v, '\n');
      size_t n = e ? (size_t)(e - v) : std::strlen(v);
      if (n >= cap) n = cap - 1;
      std::memcpy(buf, v, n);
      buf[n] = '\0';
      return buf;
    }
    p = std::strchr(p, '\n');
    if (p) p++;
  }
  return "";
}

int count(const char *hay, const char *needle) {
  int n = 0;
  size_t len = std::strlen(needle);
  for (const char *p = std::strstr(hay, needle); p != nullptr; p = std::strstr(p + len, needle)) n++;
  return n;
}

bool contains(const char *hay, const char *needle) { return std::strstr(hay, needle) != nullptr; }

// Offset of needle in hay, or -1.
long offset(const char *hay, const char *needle) {
  const char *p = std::strstr(hay, needle);
  return p ? (long)(p - hay) : -1;
}

// Expect the child's value for key to satisfy op against want (messages name the child).
#define EXPECT_CHILD(c, key, OP, want)                                                  \
  do {                                                                                  \
    long long v_ = value(c, key);                                                       \
    if (v_ != LLONG_MIN && !JT_OP(OP, v_, (want))) {                                    \
      std::printf("    (%s, from child %s)\n", key, (c).what);                          \
    }                                                                                   \
  } while (0)

bool thp_mode_is_madvise() {
  static char buf[256];
  read_proc("/sys/kernel/mm/transparent_hugepage/enabled", buf, sizeof(buf));
  return contains(buf, "[madvise]");
}

unsigned affinity_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 0;
  return (unsigned)CPU_COUNT(&set);
}

}  // namespace

// ---------------------------------------------------------------------------
// Arenas.

TEST(narenas_sets_arena_count_and_threads_spread) {
  Child c;
  if (!child(&c, "arenas", "narenas:3")) return;
  EXPECT_CHILD(c, "opt_narenas", kEq, 3);
  // The 3 automatic arenas plus the huge arena (oversize_threshold is on by default).
  EXPECT_CHILD(c, "arenas_narenas", kEq, 4);
  EXPECT_CHILD(c, "threads_distinct_arenas", kEq, 3);
  EXPECT_CHILD(c, "threads_max_arena", kEq, 2);

  if (!child(&c, "arenas", "narenas:1")) return;
  EXPECT_CHILD(c, "opt_narenas", kEq, 1);
  EXPECT_CHILD(c, "arenas_narenas", kEq, 2);
  EXPECT_CHILD(c, "threads_distinct_arenas", kEq, 1);
  EXPECT_CHILD(c, "threads_max_arena", kEq, 0);

  if (!child(&c, "arenas", "narenas:12,oversize_threshold:0")) return;
  EXPECT_CHILD(c, "arenas_narenas", kEq, 12);
  // Eight threads plus the main thread, each on the least loaded arena: all different.
  EXPECT_CHILD(c, "threads_distinct_arenas", kEq, 8);
  EXPECT_CHILD(c, "threads_max_arena", kLe, 11);
}

TEST(oversize_threshold_routes_to_huge_arena) {
  Child c;
  if (!child(&c, "oversize", "narenas:2")) return;
  EXPECT_CHILD(c, "opt_oversize_threshold", kEq, 8 << 20);
  EXPECT_CHILD(c, "arenas_narenas", kEq, 3);
  // The huge arena is the last one, index arenas.narenas - 1.
  EXPECT_CHILD(c, "arena_8m", kEq, 2);
  EXPECT_CHILD(c, "arena_1m", kEq, value(c, "thread_arena"));
  EXPECT_CHILD(c, "arena_small", kEq, value(c, "thread_arena"));

  if (!child(&c, "oversize", "narenas:2,oversize_threshold:1048576")) return;
  EXPECT_CHILD(c, "opt_oversize_threshold", kEq, 1 << 20);
  EXPECT_CHILD(c, "arena_8m", kEq, 2);
  EXPECT_CHILD(c, "arena_1m", kEq, 2);
  EXPECT_CHILD(c, "arena_small", kEq, value(c, "thread_arena"));

  // 0 turns the huge arena off: no extra arena, everything stays in the thread's arena.
  if (!child(&c, "oversize", "narenas:2,oversize_threshold:0")) return;
  EXPECT_CHILD(c, "opt_oversize_threshold", kEq, 0);
  EXPECT_CHILD(c, "arenas_narenas", kEq, 2);
  EXPECT_CHILD(c, "arena_8m", kEq, value(c, "thread_arena"));
  EXPECT_CHILD(c, "arena_1m", kEq, value(c, "thread_arena"));

  // Below the smallest large class: also off.
  if (!child(&c, "oversize", "narenas:2,oversize_threshold:4096")) return;
  EXPECT_CHILD(c, "opt_oversize_threshold", kEq, 0);
  EXPECT_CHILD(c, "arenas_narenas", kEq, 2);
  EXPECT_CHILD(c, "arena_8m", kEq, value(c, "thread_arena"));
}

TEST(percpu_arena_binds_arena_to_cpu) {
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  unsigned aff = affinity_cpus();
  if (online <= 0 || (unsigned)online != aff) {
    SKIP_TEST("CPU affinity (%u) differs from online CPUs (%ld): percpu_arena is disabled then",
              aff, online);
  }
  Child c;
  if (!child(&c, "percpu", "percpu_arena:percpu")) return;
  char mode[64];
  EXPECT_STREQ(text_value(c, "opt_percpu_arena", mode, sizeof(mode)), "percpu");
  EXPECT_CHILD(c, "opt_narenas", kEq, online);
  EXPECT_CHILD(c, "cpus_checked", kEq, online);
  EXPECT_CHILD(c, "cpus_mismatched", kEq, 0);
}

// ---------------------------------------------------------------------------
// Thread caches.

TEST(tcache_false_disables_thread_caches) {
  Child c;
  if (!child(&c, "tcache", nullptr)) return;
  EXPECT_CHILD(c, "tcache_enabled", kEq, 1);
  EXPECT_CHILD(c, "cached_64", kEq, 10);
  EXPECT_CHILD(c, "cached_20480", kEq, 3);
  EXPECT_CHILD(c, "thread_cached_64", kEq, 10);

  if (!child(&c, "tcache", "tcache:false")) return;
  EXPECT_CHILD(c, "tcache_enabled", kEq, 0);
  EXPECT_CHILD(c, "cached_64", kEq, 0);
  EXPECT_CHILD(c, "cached_20480", kEq, 0);
  EXPECT_CHILD(c, "thread_cached_64", kEq, 0);
}

TEST(tcache_max_bounds_cached_classes) {
  Child c;
  // Default: 32 KiB; 36 small bins + 16, 20, 24, 28, 32 KiB.
  if (!child(&c, "tcache_max", nullptr)) return;
  EXPECT_CHILD(c, "tcache_max", kEq, 32768);
  EXPECT_CHILD(c, "nhbins", kEq, 41);
  EXPECT_CHILD(c, "cached_32768", kEq, 1);
  EXPECT_CHILD(c, "cached_40960", kEq, 0);
  EXPECT_CHILD(c, "cached_65536", kEq, 0);

  if (!child(&c, "tcache_max", "tcache_max:65536")) return;
  EXPECT_CHILD(c, "tcache_max", kEq, 65536);
  EXPECT_CHILD(c, "nhbins", kEq, 45);
  EXPECT_CHILD(c, "cached_40960", kEq, 1);
  EXPECT_CHILD(c, "cached_65536", kEq, 1);
  EXPECT_CHILD(c, "cached_131072", kEq, 0);

  // lg_tcache_max:N means tcache_max:2^N.
  if (!child(&c, "tcache_max", "lg_tcache_max:17")) return;
  EXPECT_CHILD(c, "tcache_max", kEq, 131072);
  EXPECT_CHILD(c, "nhbins", kEq, 49);
  EXPECT_CHILD(c, "cached_131072", kEq, 1);
  EXPECT_CHILD(c, "cached_262144", kEq, 0);

  // A size between classes is rounded up to its class.
  if (!child(&c, "tcache_max", "tcache_max:100000")) return;
  EXPECT_CHILD(c, "tcache_max", kEq, 114688);
  EXPECT_CHILD(c, "cached_65536", kEq, 1);
  EXPECT_CHILD(c, "cached_131072", kEq, 0);

  // Small classes are always cached.
  if (!child(&c, "tcache_max", "tcache_max:0")) return;
  EXPECT_CHILD(c, "cached_32768", kEq, 0);
}

TEST(tcache_nslots_set_bin_capacity) {
  // Defaults: the 8-byte bin holds 200 (nregs 512, clipped to small_max), the 14336-byte bin
  // 20 (its few regions, raised to small_min), each large bin 20.
  Child c;
  if (!child(&c, "nslots", nullptr)) return;
  EXPECT_CHILD(c, "cached_8_x50", kEq, 50);
  EXPECT_CHILD(c, "cached_8_x51", kEq, 51);
  EXPECT_CHILD(c, "cached_8_x201", kEq, 101);
  EXPECT_CHILD(c, "cached_14336_x11", kEq, 11);
  EXPECT_CHILD(c, "cached_14336_x21", kEq, 11);
  EXPECT_CHILD(c, "cached_20480_x7", kEq, 7);
  EXPECT_CHILD(c, "cached_20480_x21", kEq, 11);

  if (!child(&c, "nslots",
             "tcache_nslots_small_max:50,tcache_nslots_small_min:10,tcache_nslots_large:6")) {
    return;
  }
  EXPECT_CHILD(c, "cached_8_x50", kEq, 50);
  EXPECT_CHILD(c, "cached_8_x51", kEq, 26);
  EXPECT_CHILD(c, "cached_14336_x11", kEq, 6);
  EXPECT_CHILD(c, "cached_20480_x7", kEq, 4);
}

// ---------------------------------------------------------------------------
// Decay, purging, extent reuse.

TEST(dirty_decay_ms_zero_purges_at_once) {
  Child c;
  if (!child(&c, "decay", "dirty_decay_ms:0")) return;
  EXPECT_CHILD(c, "pdirty_free", kEq, 0);
  EXPECT_CHILD(c, "pmuzzy_free", kEq, 0);  // muzzy_decay_ms is 0 by default: no muzzy stage
  // Control: the default 10 s keeps them.
  if (!child(&c, "decay", nullptr)) return;
  EXPECT_CHILD(c, "pdirty_free", kGe, value(c, "freed_pages"));
  EXPECT_CHILD(c, "pdirty_purge", kEq, 0);
}

TEST(dirty_decay_ms_minus_one_never_decays) {
  Child c;
  if (!child(&c, "decay", "dirty_decay_ms:-1", "50")) return;
  long long freed = value(c, "freed_pages");
  EXPECT_CHILD(c, "pdirty_free", kGe, freed);
  EXPECT_CHILD(c, "pdirty_decay", kGe, freed);
  // An explicit purge still empties the cache.
  EXPECT_CHILD(c, "pdirty_purge", kEq, 0);
}

TEST(muzzy_decay_ms_keeps_lazily_purged_pages) {
  Child c;
  // A short dirty decay: once it elapsed, arena.<i>.decay moves the dirty pages, by MADV_FREE,
  // to the muzzy state, where the long muzzy decay keeps them.
  if (!child(&c, "decay", "dirty_decay_ms:50,muzzy_decay_ms:100000", "100")) return;
  long long freed = value(c, "freed_pages");
  EXPECT_CHILD(c, "pdirty_free", kGe, freed);
  EXPECT_CHILD(c, "pdirty_decay", kEq, 0);
  EXPECT_CHILD(c, "pmuzzy_decay", kGe, freed);
  EXPECT_CHILD(c, "pmuzzy_purge", kEq, 0);  // a purge empties both
  EXPECT_CHILD(c, "pdirty_purge", kEq, 0);
  // Control: with the default muzzy_decay_ms:0 the same decay purges for good.
  if (!child(&c, "decay", "dirty_decay_ms:50", "100")) return;
  EXPECT_CHILD(c, "pdirty_decay", kEq, 0);
  EXPECT_CHILD(c, "pmuzzy_decay", kEq, 0);
  // dirty_decay_ms:0 purges on free, fully: the muzzy stage is skipped as well (5.3.0).
  if (!child(&c, "decay", "dirty_decay_ms:0,muzzy_decay_ms:10000")) return;
  EXPECT_CHILD(c, "pdirty_free", kEq, 0);
  EXPECT_CHILD(c, "pmuzzy_free", kEq, 0);
}

TEST(lg_extent_max_active_fit_bounds_reuse) {
  Child c;
  // (1 MiB + a page) >> 6 is below a 64 KiB request: the freed extent is split for it.
  if (!child(&c, "fit", "dirty_decay_ms:-1", "64")) return;
  EXPECT_CHILD(c, "reused", kEq, 1);
  EXPECT_CHILD(c, "pdirty_after", kLt, value(c, "pdirty_before"));
  // With 0, a dirty extent serves only requests of (about) its own size.
  if (!child(&c, "fit", "dirty_decay_ms:-1,lg_extent_max_active_fit:0", "64")) return;
  EXPECT_CHILD(c, "reused", kEq, 0);
  EXPECT_CHILD(c, "pdirty_after", kEq, value(c, "pdirty_before"));
  // With 2: requests down to about a quarter of the extent (the size-class steps of the
  // free-extent lists make 256 KiB too small already, 320 KiB large enough).
  if (!child(&c, "fit", "dirty_decay_ms:-1,lg_extent_max_active_fit:2", "256")) return;
  EXPECT_CHILD(c, "reused", kEq, 0);
  if (!child(&c, "fit", "dirty_decay_ms:-1,lg_extent_max_active_fit:2", "320")) return;
  EXPECT_CHILD(c, "reused", kEq, 1);
}

TEST_COMPAT(bounded_coalesce_false_merges_without_bound, "bounded-coalesce") {
  Child c;
  if (!child(&c, "coalesce", "dirty_decay_ms:-1")) return;
  long long pages = value(c, "pages_per_round");
  EXPECT_CHILD(c, "dirty_merges_refused", kGt, 0);
  EXPECT_CHILD(c, "faults", kLt, pages / 8);
  if (!child(&c, "coalesce", "dirty_decay_ms:-1,bounded_coalesce:false")) return;
  EXPECT_CHILD(c, "dirty_merges_refused", kEq, 0);
  EXPECT_CHILD(c, "dirty_merges", kGt, 0);
  // 5.3.0's behaviour: the merged extent is too large for the requests; fresh pages fault.
  EXPECT_CHILD(c, "faults", kGe, pages / 2);
}

TEST(retain_false_unmaps_purged_memory) {
  Child c;
  if (!child(&c, "retain", nullptr)) return;
  EXPECT_CHILD(c, "mapped_live", kEq, 1);
  EXPECT_CHILD(c, "retained", kGe, 4 << 20);
  EXPECT_CHILD(c, "mapped_after_purge", kEq, 1);
  if (!child(&c, "retain", "retain:false")) return;
  EXPECT_CHILD(c, "mapped_live", kEq, 1);
  EXPECT_CHILD(c, "retained", kEq, 0);
  EXPECT_CHILD(c, "arena_retained", kEq, 0);
  EXPECT_CHILD(c, "mapped_after_purge", kEq, 0);
}

// ---------------------------------------------------------------------------
// Memory contents.

TEST(zero_realloc_modes) {
  Child c;
  // Default and "free": the block is freed, NULL returned.
  for (const char *conf : {(const char *)nullptr, "zero_realloc:free"}) {
    if (!child(&c, "zero_realloc", conf)) return;
    EXPECT_CHILD(c, "result_null", kEq, 1);
    EXPECT_CHILD(c, "freed_bytes", kEq, 112);
  }
  // "alloc": the block is freed and a minimal one returned.
  if (!child(&c, "zero_realloc", "zero_realloc:alloc")) return;
  EXPECT_CHILD(c, "result_null", kEq, 0);
  EXPECT_CHILD(c, "result_usable", kEq, 8);
  EXPECT_CHILD(c, "freed_bytes", kEq, 112);
  // "abort": the process aborts in realloc.
  const char *argv[] = {"options_test", "--child", "zero_realloc", nullptr};
  c = run_program(g_self, argv, "zero_realloc:abort");
  if (!EXPECT_TRUE(c.signaled(SIGABRT))) show(c);
  EXPECT_TRUE(contains(c.err, "child: calling realloc(p, 0)"));
  EXPECT_FALSE(contains(c.out, "result_null="));
}

TEST(junk_fills_allocated_and_freed_memory) {
  Child c;
  if (!child(&c, "junk", "junk:true,dirty_decay_ms:-1")) return;
  EXPECT_CHILD(c, "small_not_a5", kEq, 0);
  EXPECT_CHILD(c, "large_not_a5", kEq, 0);
  EXPECT_CHILD(c, "freed_not_5a", kEq, 0);
  if (!child(&c, "junk", "junk:alloc,dirty_decay_ms:-1")) return;
  EXPECT_CHILD(c, "small_not_a5", kEq, 0);
  EXPECT_CHILD(c, "large_not_a5", kEq, 0);
  EXPECT_CHILD(c, "freed_not_11", kEq, 0);
  if (!child(&c, "junk", "junk:free,dirty_decay_ms:-1")) return;
  EXPECT_CHILD(c, "large_not_0", kEq, 0);  // fresh pages, untouched
  EXPECT_CHILD(c, "freed_not_5a", kEq, 0);
  if (!child(&c, "junk", "dirty_decay_ms:-1")) return;
  EXPECT_CHILD(c, "large_not_0", kEq, 0);
  EXPECT_CHILD(c, "freed_not_11", kEq, 0);
}

TEST(zero_true_zeroes_recycled_memory) {
  Child c;
  if (!child(&c, "zero", "zero:true")) return;
  for (const char *size : {"100", "20480", "1048576"}) {
    char key[64];
    std::snprintf(key, sizeof(key), "nonzero_%s", size);
    EXPECT_CHILD(c, key, kEq, 0);
  }
  // Control: the same blocks come back with the old contents.
  if (!child(&c, "zero", nullptr)) return;
  EXPECT_CHILD(c, "same_100", kEq, 1);
  EXPECT_CHILD(c, "nonzero_100", kGt, 0);
  EXPECT_CHILD(c, "same_20480", kEq, 1);
  EXPECT_CHILD(c, "nonzero_20480", kGt, 0);
}

// ---------------------------------------------------------------------------
// Configuration errors and output.

TEST(abort_conf_aborts_on_invalid_pair) {
  const char *argv[] = {"options_test", "--child", "noop", nullptr};
  Child c = run_program(g_self, argv, "no_such_option:1");
  if (!EXPECT_TRUE(c.exited(0))) show(c);
  EXPECT_TRUE(contains(c.err, "<jemalloc>: Invalid conf pair: no_such_option:1\n"));
  EXPECT_TRUE(contains(c.out, "ok=1"));

  c = run_program(g_self, argv, "abort_conf:true,no_such_option:1");
  if (!EXPECT_TRUE(c.signaled(SIGABRT))) show(c);
  EXPECT_TRUE(contains(c.err, "<jemalloc>: Invalid conf pair: no_such_option:1\n"));
  EXPECT_FALSE(contains(c.out, "ok=1"));

  // An invalid value counts too; abort_conf set after the error still applies.
  c = run_program(g_self, argv, "narenas:many,abort_conf:true");
  if (!EXPECT_TRUE(c.signaled(SIGABRT))) show(c);
  EXPECT_TRUE(contains(c.err, "<jemalloc>: Invalid conf value: narenas:many\n"));
}

TEST(confirm_conf_prints_sources_and_pairs) {
  Child c;
  if (!child(&c, "noop", "confirm_conf:true,narenas:3")) return;
  long o1 = offset(c.err, "<jemalloc>: malloc_conf #1 (string specified via --with-malloc-conf): \"");
  long o2 = offset(c.err,
                   "<jemalloc>: malloc_conf #2 (string pointed to by the global variable "
                   "malloc_conf): \"\"\n");
  long o3 = offset(c.err,
                   "<jemalloc>: malloc_conf #3 (\"name\" of the file referenced by the symbolic "
                   "link named /etc/malloc.conf): \"");
  long o4 = offset(c.err,
                   "<jemalloc>: malloc_conf #4 (value of the environment variable MALLOC_CONF): "
                   "\"confirm_conf:true,narenas:3\"\n"
                   "<jemalloc>: -- Set conf value: confirm_conf:true\n"
                   "<jemalloc>: -- Set conf value: narenas:3\n");
  long o5 = offset(c.err,
                   "<jemalloc>: malloc_conf #5 (string pointed to by the global variable "
                   "malloc_conf_2_conf_harder): \"\"\n");
  EXPECT_GE(o1, 0);
  EXPECT_GT(o2, o1);
  EXPECT_GT(o3, o2);
  EXPECT_GT(o4, o3);
  EXPECT_GT(o5, o4);
  if (jt::failed()) show(c);
  // Without it, a valid configuration prints nothing.
  if (!child(&c, "noop", "narenas:3")) return;
  EXPECT_FALSE(contains(c.err, "<jemalloc>"));
}

TEST(stats_print_reports_at_exit) {
  Child c;
  if (!child(&c, "noop", "stats_print:true")) return;
  long begin = offset(c.err, "___ Begin jemalloc statistics ___\n");
  long end = offset(c.err, "--- End jemalloc statistics ---\n");
  long returning = offset(c.err, "child: returning from main\n");
  EXPECT_GE(returning, 0);
  EXPECT_GT(begin, returning);  // printed at exit, after main returned
  EXPECT_GT(end, begin);
  EXPECT_EQ(count(c.err, "___ Begin jemalloc statistics ___"), 1);
  EXPECT_TRUE(contains(c.err, "Version: \"5.3.0-"));
  if (!child(&c, "noop", nullptr)) return;
  EXPECT_FALSE(contains(c.err, "jemalloc statistics"));
}

TEST(stats_print_opts_select_report) {
  Child c;
  // J: the JSON form.
  if (!child(&c, "noop", "stats_print:true,stats_print_opts:J")) return;
  EXPECT_FALSE(contains(c.err, "___ Begin jemalloc statistics ___"));
  EXPECT_TRUE(contains(c.err, "{\"jemalloc\":{\"version\":\"5.3.0-"));
  // g omits the general section (version, options), a the per-arena ones.
  if (!child(&c, "noop", "stats_print:true,stats_print_opts:g")) return;
  EXPECT_TRUE(contains(c.err, "___ Begin jemalloc statistics ___"));
  EXPECT_FALSE(contains(c.err, "Version: "));
  EXPECT_TRUE(contains(c.err, "arenas[0]:"));
  if (!child(&c, "noop", "stats_print:true,stats_print_opts:a")) return;
  EXPECT_TRUE(contains(c.err, "Version: "));
  EXPECT_FALSE(contains(c.err, "arenas[0]:"));
}

TEST(stats_interval_prints_during_run) {
  Child c;
  if (!child(&c, "interval", "stats_interval:1048576,stats_interval_opts:mdablxe")) return;
  long start = offset(c.err, "child: traffic starts\n");
  long stop = offset(c.err, "child: traffic ends\n");
  ASSERT_GE(start, 0);
  ASSERT_GT(stop, start);
  // Reports between the markers: the 16 MiB allocated cross the 1 MiB interval many times.
  int inside = 0;
  const char *needle = "___ Begin jemalloc statistics ___";
  for (const char *p = std::strstr(c.err, needle); p != nullptr; p = std::strstr(p + 1, needle)) {
    if (p - c.err > start && p - c.err < stop) inside++;
  }
  EXPECT_GE(inside, 4);
  EXPECT_FALSE(contains(c.err, "arenas[0]:"));  // the interval opts apply
  if (jt::failed()) show(c);
  if (!child(&c, "interval", nullptr)) return;
  EXPECT_FALSE(contains(c.err, "jemalloc statistics"));
}

// ---------------------------------------------------------------------------
// Transparent huge pages.

TEST(thp_option_marks_user_mappings) {
  if (!thp_mode_is_madvise()) SKIP_TEST("system THP mode is not [madvise]");
  Child c;
  if (!child(&c, "thp", "thp:always")) return;
  EXPECT_CHILD(c, "vmas", kEq, 1);
  EXPECT_CHILD(c, "block_hg", kEq, 1);
  EXPECT_CHILD(c, "block_nh", kEq, 0);
  if (!child(&c, "thp", "thp:never")) return;
  EXPECT_CHILD(c, "block_hg", kEq, 0);
  EXPECT_CHILD(c, "block_nh", kEq, 1);
  if (!child(&c, "thp", nullptr)) return;
  EXPECT_CHILD(c, "block_hg", kEq, 0);
  EXPECT_CHILD(c, "block_nh", kEq, 0);
  EXPECT_CHILD(c, "all_hg", kEq, 0);
}

TEST(metadata_thp_always_marks_metadata) {
  if (!thp_mode_is_madvise()) SKIP_TEST("system THP mode is not [madvise]");
  Child c;
  if (!child(&c, "thp", "metadata_thp:always")) return;
  // The user block keeps the system default; some other (metadata) mapping is marked.
  EXPECT_CHILD(c, "block_hg", kEq, 0);
  EXPECT_CHILD(c, "all_hg", kGe, 1);
  if (!child(&c, "thp", "metadata_thp:disabled")) return;
  EXPECT_CHILD(c, "all_hg", kEq, 0);
}

// ---------------------------------------------------------------------------
// Sources and their priority.  The malloc_conf_global helper defines the program's own
// strings; see the key plan at its top.

namespace {

char g_helper[PATH_MAX];

// Runs the malloc_conf_global helper under conf.
bool helper(Child *c, const char *conf) {
  const char *argv[] = {"malloc_conf_global", nullptr};
  *c = run_program(g_helper, argv, conf);
  if (c->exited(0)) return true;
  FAIL_MSG("helper did not exit 0");
  show(*c);
  return false;
}

constexpr const char *kEtcConf = "/etc/malloc.conf";
// Only keys without any effect while the HPA is off: every jemalloc process started while the
// link exists (other test runs on the machine included) reads it too.
constexpr const char *kEtcTarget = "hpa_min_purge_interval_ms:200,hpa_hugify_delay_ms:12345";

volatile sig_atomic_t g_etc_linked = 0;

// A runner timeout (SIGTERM) or ^C while the link exists must not leave it behind.
void etc_signal(int sig) {
  if (g_etc_linked) unlink(kEtcConf);
  signal(sig, SIG_DFL);
  raise(sig);
}

// Points /etc/malloc.conf at kEtcTarget only while fn runs.  Returns false (with the reason in
// why) when the test may not do it.
bool with_etc_malloc_conf(void (*fn)(), char *why, size_t cap) {
  struct stat st;
  if (geteuid() != 0) {
    std::snprintf(why, cap, "needs root to create %s", kEtcConf);
    return false;
  }
  if (lstat(kEtcConf, &st) == 0) {
    char target[256] = {};
    ssize_t n = readlink(kEtcConf, target, sizeof(target) - 1);
    bool ours = n > 0 && std::strcmp(target, kEtcTarget) == 0;
    std::snprintf(why, cap, "%s exists%s; not touching it", kEtcConf,
                  ours ? " (with this test's target: another run is using it, or a killed "
                         "run left it behind)"
                       : "");
    return false;
  }
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) signal(sig, etc_signal);
  if (symlink(kEtcTarget, kEtcConf) != 0) {
    std::snprintf(why, cap, "symlink %s: %s", kEtcConf, std::strerror(errno));
    return false;
  }
  g_etc_linked = 1;
  int saved = g_child_timeout_ms;
  g_child_timeout_ms = 10000;
  fn();
  g_child_timeout_ms = saved;
  unlink(kEtcConf);
  g_etc_linked = 0;
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) signal(sig, SIG_DFL);
  return true;
}

// The four runs made while the link exists; their stdout copied out of the shared buffer.
Child g_etc_runs[4];
char g_etc_out[4][1024];

void etc_runs() {
  const char *self_argv[] = {"options_test", "--child", "opts", nullptr};
  const char *helper_argv[] = {"malloc_conf_global", nullptr};
  for (int i = 0; i < 4; i++) {
    const char *conf = i % 2 == 0 ? nullptr : "hpa_min_purge_interval_ms:300";
    Child c = i < 2 ? run_program(g_self, self_argv, conf) : run_program(g_helper, helper_argv, conf);
    std::snprintf(g_etc_out[i], sizeof(g_etc_out[i]), "%s", c.out);
    g_etc_runs[i] = c;
    g_etc_runs[i].out = g_etc_out[i];
    g_etc_runs[i].err = "";
  }
}

}  // namespace

TEST(conf_source_builtin) {
  const char *builtin = nullptr;
  if (jt::ctl_get("config.malloc_conf", &builtin) != 0 || builtin == nullptr ||
      *builtin == '\0') {
    SKIP_TEST("the library was built without --with-malloc-conf");
  }
  Child c;
  if (!child(&c, "noop", "confirm_conf:true")) return;
  // The built-in string is source #1, and its first pair is applied before source #2.
  char line[512];
  std::snprintf(line, sizeof(line),
                "<jemalloc>: malloc_conf #1 (string specified via --with-malloc-conf): \"%s\"\n"
                "<jemalloc>: -- Set conf value: %.*s\n",
                builtin, (int)std::strcspn(builtin, ","), builtin);
  long o1 = offset(c.err, line);
  long o2 = offset(c.err, "<jemalloc>: malloc_conf #2 ");
  EXPECT_GE(o1, 0);
  EXPECT_GT(o2, o1);
  if (jt::failed()) show(c);
}

TEST(conf_source_global_malloc_conf) {
  Child c;
  if (!helper(&c, nullptr)) return;
  EXPECT_CHILD(c, "opt_narenas", kEq, 3);
  EXPECT_CHILD(c, "arenas_narenas", kEq, 4);  // 3 + the huge arena
  // MALLOC_CONF overrides it key by key.
  if (!helper(&c, "narenas:5,confirm_conf:true")) return;
  EXPECT_CHILD(c, "opt_narenas", kEq, 5);
  EXPECT_CHILD(c, "arenas_narenas", kEq, 6);
  long o2 = offset(c.err,
                   "<jemalloc>: malloc_conf #2 (string pointed to by the global variable "
                   "malloc_conf): \"narenas:3,hpa_min_purge_interval_ms:100\"\n"
                   "<jemalloc>: -- Set conf value: narenas:3\n");
  long o4 = offset(c.err, "<jemalloc>: -- Set conf value: narenas:5\n");
  EXPECT_GE(o2, 0);
  EXPECT_GT(o4, o2);
  if (jt::failed()) show(c);
}

TEST(conf_source_etc_malloc_conf) {
  char why[256];
  if (!with_etc_malloc_conf(etc_runs, why, sizeof(why))) SKIP_TEST("%s", why);
  for (const Child &c : g_etc_runs) {
    if (!EXPECT_TRUE(c.exited(0))) show(c);
  }
  if (jt::failed()) return;
  const Child &plain = g_etc_runs[0], &env = g_etc_runs[1];
  const Child &global = g_etc_runs[2], &global_env = g_etc_runs[3];
  // The link's target name is a source of its own...
  EXPECT_CHILD(plain, "opt_hpa_min_purge_interval_ms", kEq, 200);
  EXPECT_CHILD(plain, "opt_hpa_hugify_delay_ms", kEq, 12345);
  // ...below MALLOC_CONF...
  EXPECT_CHILD(env, "opt_hpa_min_purge_interval_ms", kEq, 300);
  EXPECT_CHILD(env, "opt_hpa_hugify_delay_ms", kEq, 12345);
  // ...and above the program's malloc_conf.
  EXPECT_CHILD(global, "opt_hpa_min_purge_interval_ms", kEq, 200);
  EXPECT_CHILD(global, "opt_narenas", kEq, 3);
  EXPECT_CHILD(global_env, "opt_hpa_min_purge_interval_ms", kEq, 300);
}

// Debian's shared libjemalloc.so.2 keeps its own malloc_conf_2_conf_harder hidden (it is not
// in the dynamic symbol table), so a program's definition never reaches it and the fifth
// source is always empty there; this library reads the program's definition.
TEST_COMPAT(conf_source_conf_harder_overrides_env, "conf-2-conf-harder") {
  Child c;
  if (!helper(&c, nullptr)) return;
  EXPECT_CHILD(c, "tcache_max", kEq, 131072);
  EXPECT_CHILD(c, "opt_hpa_hugify_delay_ms", kEq, 54321);
  if (!helper(&c, "tcache_max:16384,hpa_hugify_delay_ms:7,narenas:5")) return;
  EXPECT_CHILD(c, "tcache_max", kEq, 131072);
  EXPECT_CHILD(c, "opt_hpa_hugify_delay_ms", kEq, 54321);
  EXPECT_CHILD(c, "opt_narenas", kEq, 5);  // keys it does not name keep MALLOC_CONF's value
}

int main(int argc, char **argv) {
  if (argc >= 3 && std::strcmp(argv[1], "--child") == 0) {
    return child_main(argv[2], argc >= 4 ? argv[3] : nullptr);
  }
  ssize_t n = readlink("/proc/self/exe", g_self, sizeof(g_self) - 1);
  if (n <= 0) {
    std::printf("FAIL: cannot read /proc/self/exe\n");
    return 1;
  }
  g_self[n] = '\0';
  // The children choose their own configuration, so the runner's MALLOC_CONF variants would
  // only repeat the same runs (and re-create /etc/malloc.conf each time): run under the
  // default variant only.  JT_OPTIONS_ALL_VARIANTS=1 runs anyway.
  const char *conf = std::getenv("MALLOC_CONF");
  const char *all = std::getenv("JT_OPTIONS_ALL_VARIANTS");
  if (conf != nullptr && *conf != '\0' && (all == nullptr || *all != '1')) {
    if (!jt::preflight()) return 1;
    std::printf("skipped: the children set their own MALLOC_CONF; the parent's changes nothing\n");
    return 77;
  }
  std::snprintf(g_helper, sizeof(g_helper), "%s", g_self);
  if (char *slash = std::strrchr(g_helper, '/'); slash != nullptr) {
    std::snprintf(slash + 1, sizeof(g_helper) - (size_t)(slash + 1 - g_helper),
                  "malloc_conf_global");
  }
  return jt::run_all(argc, argv);
}
