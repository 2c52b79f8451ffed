/*
 * bench/common.c - run-time API resolution and measurement helpers shared by
 * the benchmark programs (see common.h).
 */
#include "common.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

bench_api_t bench_api;
static bool api_resolved;

void bench_api_init(void) {
  if (api_resolved) return;
  api_resolved = true;
  const char* force = getenv("BENCH_FORCE_LIBC");
  bench_api_t a;
  memset(&a, 0, sizeof(a));
  /* dlsym returns void *; going through memcpy keeps -Wpedantic quiet about
   * object-to-function pointer conversion. */
  void* sym;
  sym = dlsym(RTLD_DEFAULT, "mallocx");
  memcpy(&a.mallocx, &sym, sizeof(sym));
  sym = dlsym(RTLD_DEFAULT, "rallocx");
  memcpy(&a.rallocx, &sym, sizeof(sym));
  sym = dlsym(RTLD_DEFAULT, "dallocx");
  memcpy(&a.dallocx, &sym, sizeof(sym));
  sym = dlsym(RTLD_DEFAULT, "sdallocx");
  memcpy(&a.sdallocx, &sym, sizeof(sym));
  sym = dlsym(RTLD_DEFAULT, "mallctl");
  memcpy(&a.mallctl, &sym, sizeof(sym));
  /* All or nothing, like RocksDB's and folly's detection (tcmalloc, for one,
   * exports nallocx but none of these).  mallctl alone is kept for stats. */
  bool forced = force && *force && strcmp(force, "0") != 0;
  a.jemalloc = !forced && a.mallocx && a.rallocx && a.dallocx && a.sdallocx && a.mallctl;
  if (!a.jemalloc) {
    a.mallocx = NULL;
    a.rallocx = NULL;
    a.dallocx = NULL;
    a.sdallocx = NULL;
  }
  if (forced) a.mallctl = NULL;
  bench_api = a;
}

const char* bench_api_name(void) {
  bench_api_init();
  return bench_api.jemalloc ? "jemalloc" : "libc";
}

const char* bench_allocator_desc(char* buf, size_t len) {
  bench_api_init();
  Dl_info info;
  const char* file = "?";
  void* m = dlsym(RTLD_DEFAULT, "malloc");
  if (m && dladdr(m, &info) && info.dli_fname) file = info.dli_fname;
  const char* version = NULL;
  size_t vlen = sizeof(version);
  if (bench_api.mallctl && bench_api.mallctl("version", &version, &vlen, NULL, 0) != 0) {
    version = NULL;
  }
  snprintf(buf, len, "%s%s%s", file, version ? " version=" : "", version ? version : "");
  return buf;
}

bool bench_ctl_read(const char* name, void* out, size_t len) {
  bench_api_init();
  if (!bench_api.mallctl) return false;
  size_t l = len;
  return bench_api.mallctl(name, out, &l, NULL, 0) == 0 && l == len;
}

bool bench_ctl_write(const char* name, const void* in, size_t len) {
  bench_api_init();
  if (!bench_api.mallctl) return false;
  return bench_api.mallctl(name, NULL, NULL, (void*)in, len) == 0;
}

bool bench_arena_create(unsigned* arena) {
  return bench_api.jemalloc && bench_ctl_read("arenas.create", arena, sizeof(*arena));
}

bool bench_stats_mapped(size_t* bytes) {
  uint64_t epoch = 1;
  if (!bench_ctl_write("epoch", &epoch, sizeof(epoch))) return false;
  return bench_ctl_read("stats.mapped", bytes, sizeof(*bytes));
}

double bench_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static struct rusage usage(int who) {
  struct rusage ru;
  memset(&ru, 0, sizeof(ru));
  getrusage(who, &ru);
  return ru;
}

long bench_minflt_self(void) { return usage(RUSAGE_SELF).ru_minflt; }
long bench_minflt_thread(void) { return usage(RUSAGE_THREAD).ru_minflt; }
long bench_majflt_self(void) { return usage(RUSAGE_SELF).ru_majflt; }
long bench_maxrss_kib(void) { return usage(RUSAGE_SELF).ru_maxrss; }

size_t bench_rss_bytes(void) {
  /* Raw read(2): stdio would allocate a FILE through the allocator that is
   * being measured. */
  char buf[128];
  int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  unsigned long long size = 0, resident = 0;
  if (sscanf(buf, "%llu %llu", &size, &resident) != 2) return 0;
  return (size_t)resident * (size_t)sysconf(_SC_PAGESIZE);
}

unsigned bench_ncpus(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (unsigned)n : 1u;
}

size_t bench_rand_size(bench_rng_t* r, size_t lo, size_t hi) {
  if (hi <= lo) return lo;
  /* Pick a power-of-two octave uniformly, then a size uniformly inside it:
   * as many 16..32 B requests as 16..32 KiB ones. */
  unsigned lo_bits = 63u - (unsigned)__builtin_clzll((unsigned long long)lo | 1ull);
  unsigned hi_bits = 63u - (unsigned)__builtin_clzll((unsigned long long)hi);
  unsigned octave = lo_bits + (unsigned)bench_rand_below(r, hi_bits - lo_bits + 1);
  size_t base = (size_t)1 << octave;
  size_t s = base + (size_t)bench_rand_below(r, base);
  if (s < lo) s = lo;
  if (s > hi) s = hi;
  return s;
}

uint64_t bench_parse_u64(const char* s, const char* what) {
  char* end = NULL;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 0);
  if (errno != 0 || end == s || *s == '-') bench_die("bad value for %s: '%s'", what, s);
  switch (*end) {
    case 'k':
    case 'K':
      v <<= 10;
      end++;
      break;
    case 'm':
    case 'M':
      v <<= 20;
      end++;
      break;
    case 'g':
    case 'G':
      v <<= 30;
      end++;
      break;
    default: break;
  }
  if (*end != '\0') bench_die("bad value for %s: '%s'", what, s);
  return (uint64_t)v;
}

double bench_parse_double(const char* s, const char* what) {
  char* end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (errno != 0 || end == s || *end != '\0' || !(v > 0)) {
    bench_die("bad value for %s: '%s' (want a positive number)", what, s);
  }
  return v;
}

uint64_t bench_scaled(uint64_t base, double scale) {
  double v = (double)base * scale;
  return v < 1.0 ? 1u : (uint64_t)(v + 0.5);
}

void bench_print_header(const char* prog) {
  char desc[512];
  printf("# %s: api=%s malloc=%s\n", prog, bench_api_name(),
         bench_allocator_desc(desc, sizeof(desc)));
  fflush(stdout);
}

void bench_print_result(const char* prog, double wall_s, const char* extra) {
  struct rusage ru = usage(RUSAGE_SELF);
  printf(
      "RESULT prog=%s api=%s wall_s=%.4f maxrss_kib=%ld minflt=%ld majflt=%ld "
      "utime_s=%.3f stime_s=%.3f rss_end_kib=%zu%s%s\n",
      prog, bench_api_name(), wall_s, ru.ru_maxrss, ru.ru_minflt, ru.ru_majflt,
      (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6,
      (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6, bench_rss_bytes() / 1024,
      extra && *extra ? " " : "", extra ? extra : "");
  fflush(stdout);
}

int bench_info(const char* prog) {
  char desc[512];
  bench_api_init();
  printf("INFO prog=%s api=%s malloc=%s", prog, bench_api_name(),
         bench_allocator_desc(desc, sizeof(desc)));
  bool b;
  if (bench_ctl_read("opt.bounded_coalesce", &b, sizeof(b))) {
    printf(" opt.bounded_coalesce=%s", b ? "true" : "false");
  }
  /* Read for the *-prof allocators of compare.py (absent, ENOENT, without profiling). */
  if (bench_ctl_read("opt.prof", &b, sizeof(b))) printf(" opt.prof=%s", b ? "true" : "false");
  unsigned narenas;
  if (bench_ctl_read("arenas.narenas", &narenas, sizeof(narenas))) {
    printf(" arenas.narenas=%u", narenas);
  }
  printf(" ncpus=%u\n", bench_ncpus());
  /* Exercise the API once so that a broken preload fails here, not later. */
  void* p = bench_mallocx(4096, 0);
  if (!p) bench_die("allocation failed");
  p = bench_rallocx(p, 16384, 0);
  if (!p) bench_die("reallocation failed");
  bench_dallocx(p, 0);
  return 0;
}

void bench_die(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("bench: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(2);
}
