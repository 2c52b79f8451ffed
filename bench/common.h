/*
 * bench/common.h - shared helpers for the benchmark programs in bench/.
 *
 * Purpose: every benchmark is linked against libc only, so that one binary
 * can be run under any allocator with LD_PRELOAD (ours, Debian's jemalloc,
 * tcmalloc, mimalloc, or glibc with no preload).  The jemalloc-only entry
 * points (mallocx, rallocx, dallocx, sdallocx, mallctl) are therefore looked
 * up at run time with dlsym(RTLD_DEFAULT, ...); when any of them is missing
 * the wrappers below fall back to malloc/realloc/free and the program says
 * so in its output ("api=libc").
 *
 * Also here: clocks, page-fault and RSS probes (getrusage, /proc/self/statm),
 * a small PRNG, a compiler barrier that keeps stores to soon-freed memory,
 * and the "RESULT key=value ..." line that bench/compare.py parses.
 *
 * Include this header first in every benchmark source (it sets _GNU_SOURCE
 * for RUSAGE_THREAD and dladdr).
 */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Flag encodings of the public jemalloc ABI (<jemalloc/jemalloc.h>, 5.x).
 * Spelled out here so that the benchmarks need no jemalloc header. */
#define BENCH_MALLOCX_TCACHE_NONE (1 << 8) /* MALLOCX_TCACHE(-1) */
#define BENCH_MALLOCX_ARENA(a) ((int)(((unsigned)(a) + 1u) << 20))

/* Which allocation API the wrappers use. */
typedef struct bench_api {
  bool jemalloc; /* all five jemalloc entry points resolved */
  void* (*mallocx)(size_t, int);
  void* (*rallocx)(void*, size_t, int);
  void (*dallocx)(void*, int);
  void (*sdallocx)(void*, size_t, int);
  int (*mallctl)(const char*, void*, size_t*, void*, size_t);
} bench_api_t;

extern bench_api_t bench_api;

/* Resolve the jemalloc API (idempotent).  BENCH_FORCE_LIBC=1 in the
 * environment forces the malloc/realloc/free fallback. */
void bench_api_init(void);

/* "jemalloc" or "libc": the API the wrappers below call. */
const char* bench_api_name(void);

/* Best-effort name of the allocator that serves malloc in this process:
 * the file that defines `malloc` (dladdr), plus the jemalloc version when
 * mallctl("version") answers.  Written into buf; returns buf. */
const char* bench_allocator_desc(char* buf, size_t len);

/* mallocx/rallocx/dallocx/sdallocx, or malloc/realloc/free (flags ignored). */
static inline void* bench_mallocx(size_t size, int flags) {
  return bench_api.jemalloc ? bench_api.mallocx(size, flags) : malloc(size);
}
static inline void* bench_rallocx(void* p, size_t size, int flags) {
  return bench_api.jemalloc ? bench_api.rallocx(p, size, flags) : realloc(p, size);
}
static inline void bench_dallocx(void* p, int flags) {
  if (bench_api.jemalloc)
    bench_api.dallocx(p, flags);
  else
    free(p);
}
static inline void bench_sdallocx(void* p, size_t size, int flags) {
  if (bench_api.jemalloc)
    bench_api.sdallocx(p, size, flags);
  else
    free(p);
}

/* mallctl helpers; false when mallctl is unavailable or fails. */
bool bench_ctl_read(const char* name, void* out, size_t len);
bool bench_ctl_write(const char* name, const void* in, size_t len);
/* arenas.create: a fresh manual arena index. */
bool bench_arena_create(unsigned* arena);
/* stats.mapped after an epoch refresh. */
bool bench_stats_mapped(size_t* bytes);

/* Clocks and resource probes. */
double bench_now(void);         /* CLOCK_MONOTONIC seconds */
long bench_minflt_self(void);   /* getrusage(RUSAGE_SELF).ru_minflt */
long bench_minflt_thread(void); /* getrusage(RUSAGE_THREAD).ru_minflt */
long bench_majflt_self(void);
long bench_maxrss_kib(void);  /* peak RSS so far, KiB */
size_t bench_rss_bytes(void); /* current RSS from /proc/self/statm */
unsigned bench_ncpus(void);

/* Keep the compiler from dropping stores into memory that is about to be
 * freed (or from eliding an allocation whose result is unused). */
static inline void bench_escape(void* p) {
#if defined(__GNUC__)
  __asm__ __volatile__("" : : "r"(p) : "memory");
#else
  (void)p;
#endif
}

/* splitmix64: deterministic, seedable, good enough for workload shapes. */
typedef struct bench_rng {
  uint64_t s;
} bench_rng_t;
static inline uint64_t bench_rand(bench_rng_t* r) {
  uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
/* Uniform in [0, n). */
static inline uint64_t bench_rand_below(bench_rng_t* r, uint64_t n) {
  return n ? bench_rand(r) % n : 0;
}
/* Log-uniform size in [lo, hi]. */
size_t bench_rand_size(bench_rng_t* r, size_t lo, size_t hi);

/* Parse a non-negative number with an optional k/m/g suffix (powers of 1024);
 * exits with a message naming `what` on garbage. */
uint64_t bench_parse_u64(const char* s, const char* what);
double bench_parse_double(const char* s, const char* what);

/* Apply --scale to a default run length (at least 1). */
uint64_t bench_scaled(uint64_t base, double scale);

/* Print the common header line ("# prog: api=... allocator=...") and, at the
 * end, the machine-readable summary:
 *   RESULT prog=<name> api=<api> wall_s=<t> maxrss_kib=<k> minflt=<n> ... extra
 * `extra` is appended verbatim (space-separated key=value pairs). */
void bench_print_header(const char* prog);
void bench_print_result(const char* prog, double wall_s, const char* extra);

/* Print what `--info` asks for (API, allocator file, jemalloc options read
 * back) and return 0: compare.py uses it to check each preload took effect. */
int bench_info(const char* prog);

/* Abort with a message (allocation failure and the like). */
void bench_die(const char* fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

#ifdef __cplusplus
}
#endif

#endif /* BENCH_COMMON_H */
