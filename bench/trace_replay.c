/*
 * bench/trace_replay.c - plays back a log of bench/alloc_trace.c under any allocator and
 * reports page faults and RSS per marked window (a query run).
 *
 * Usage: trace_replay TRACE MARKS [LIB START [SCALE]]
 *   TRACE  the log (alloc_trace.h records; decompress .xz first)
 *   MARKS  lines "lib,start,query,run,t0_ns,t1_ns" (clickhouse.sh --trace writes them): the
 *          windows to report; only those of LIB and START (default: all lines) are used
 *   SCALE  time factor (default 1: the recorded timing; decay acts on it)
 *
 * How: one thread per recorded thread, bound to the recorded arena (mallctl "thread.arena",
 * when the allocator has it and the arena exists), each call made in the recorded global order
 * (a thread waits on its own futex until the previous call is done) and not before its recorded
 * time. Every page of a new block is written (realloc: the whole new size), as the recorded
 * program did for the hash tables and buffers that dominate such logs. At a window's start the
 * peak RSS is reset (/proc/self/clear_refs 5); at its end the line reads
 *   window N (QUERY RUN): faults F peak P MiB after A MiB
 * and a last "RESULT" line sums the faults of the first and of the repeat runs.
 *
 * Linked against libc only (bench/common.h): run it with LD_PRELOAD set to the allocator under
 * test (its first line names the API it found: "jemalloc" or "libc"). Not a unit test: its figures depend on timing (decay), so compare
 * allocators over several replays.
 */
#include "common.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "alloc_trace.h"

enum { OP_WINDOW_START = 100, OP_WINDOW_END = 101 };
#define MAX_THREADS 4096
#define MAP_BITS 22
#define MAP_SLOTS ((size_t)1 << MAP_BITS)

struct replay_thread {
  _Atomic uint32_t turn; /* index of the next call it may make */
  pthread_t th;
  uint32_t tid;
  int arena;
  size_t* calls;
  size_t n, cap;
};

static struct trace_rec* g_ops;
static size_t g_nops;
static unsigned* g_owner; /* thread of each call */
static struct replay_thread g_thr[MAX_THREADS];
static unsigned g_nthr;
static uint64_t g_t0_trace, g_t0_real;
static double g_scale = 1.0;
static unsigned g_narenas;

/* Recorded address -> replayed block (only the thread whose turn it is touches it). */
static uint64_t g_key[MAP_SLOTS];
static void* g_val[MAP_SLOTS];
static size_t map_hash(uint64_t k) { return (size_t)(k * 0x9E3779B97F4A7C15ull >> (64 - MAP_BITS)); }
static void map_put(uint64_t k, void* v) {
  size_t i = map_hash(k);
  while (g_key[i] != 0 && g_key[i] != 1 && g_key[i] != k) i = (i + 1) & (MAP_SLOTS - 1);
  g_key[i] = k;
  g_val[i] = v;
}
static void* map_take(uint64_t k) {
  for (size_t i = map_hash(k); g_key[i] != 0; i = (i + 1) & (MAP_SLOTS - 1)) {
    if (g_key[i] == k) {
      g_key[i] = 1;
      return g_val[i];
    }
  }
  return NULL;
}

static uint64_t now_ns(void) { return (uint64_t)(bench_now() * 1e9); }
static void futex_wait(_Atomic uint32_t* w, uint32_t v) {
  syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, v, NULL, NULL, 0);
}
static void futex_wake(_Atomic uint32_t* w) {
  syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}
static void touch(char* p, size_t n) {
  if (p == NULL) return;
  for (size_t o = 0; o < n; o += 4096) p[o] = 1;
  if (n != 0) p[n - 1] = 1;
}
static long status_kib(const char* key) {
  FILE* f = fopen("/proc/self/status", "r");
  char line[256];
  long v = -1;
  size_t k = strlen(key);
  while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
    if (strncmp(line, key, k) == 0) {
      v = atol(line + k + 1);
      break;
    }
  }
  if (f != NULL) fclose(f);
  return v;
}

static long g_window_f0, g_faults_first, g_faults_repeat, g_peak_max_kib;
static int g_nwindows;

static void window_start(void) {
  int fd = open("/proc/self/clear_refs", O_WRONLY);
  if (fd >= 0) {
    if (write(fd, "5", 1) != 1) {
    }
    close(fd);
  }
  g_window_f0 = bench_minflt_self();
}

static void window_end(const struct trace_rec* r) {
  const char* name = (const char*)(uintptr_t)r->a;
  long faults = bench_minflt_self() - g_window_f0;
  long peak = status_kib("VmHWM");
  printf("window %d (%s): faults %ld peak %ld MiB after %ld MiB\n", g_nwindows++, name, faults,
         peak / 1024, status_kib("VmRSS") / 1024);
  fflush(stdout);
  if (r->b <= 1) {
    g_faults_first += faults;
  } else {
    g_faults_repeat += faults;
  }
  if (peak > g_peak_max_kib) g_peak_max_kib = peak;
}

static void play(size_t i) {
  const struct trace_rec* r = &g_ops[i];
  char* p;
  switch (r->op) {
    case TRACE_MALLOC:
      p = malloc(r->a);
      touch(p, r->a);
      map_put(r->b, p);
      break;
    case TRACE_CALLOC:
      p = calloc(1, r->a);
      touch(p, r->a);
      map_put(r->b, p);
      break;
    case TRACE_MEMALIGN: {
      void* q = NULL;
      if (posix_memalign(&q, r->c, r->a) != 0) q = NULL;
      touch(q, r->a);
      map_put(r->b, q);
      break;
    }
    case TRACE_FREE:
      free(map_take(r->a));
      break;
    case TRACE_REALLOC:
      p = realloc(map_take(r->c), r->a);
      touch(p, r->a);
      map_put(r->b, p);
      break;
    case OP_WINDOW_START:
      window_start();
      break;
    case OP_WINDOW_END:
      window_end(r);
      break;
  }
}

static void* run(void* arg) {
  struct replay_thread* t = arg;
  if (t->arena >= 0 && (unsigned)t->arena < g_narenas) {
    unsigned a = (unsigned)t->arena;
    bench_ctl_write("thread.arena", &a, sizeof(a));
  }
  for (size_t k = 0; k < t->n; k++) {
    size_t i = t->calls[k];
    uint32_t v;
    while ((v = atomic_load(&t->turn)) != (uint32_t)i) futex_wait(&t->turn, v);
    uint64_t due = g_t0_real + (uint64_t)((double)(g_ops[i].t - g_t0_trace) * g_scale);
    uint64_t now = now_ns();
    if (due > now + 50000) {
      struct timespec ts = {(time_t)((due - now) / 1000000000u), (long)((due - now) % 1000000000u)};
      nanosleep(&ts, NULL);
    }
    play(i);
    if (i + 1 < g_nops) {
      struct replay_thread* next = &g_thr[g_owner[i + 1]];
      atomic_store(&next->turn, (uint32_t)(i + 1));
      futex_wake(&next->turn);
    }
  }
  return NULL;
}

static int by_time(const void* x, const void* y) {
  const struct trace_rec *a = x, *b = y;
  return a->t < b->t ? -1 : a->t > b->t;
}

static void read_marks(const char* path, const char* lib, int start, size_t* n, size_t cap) {
  FILE* f = fopen(path, "r");
  if (f == NULL) bench_die("cannot open %s", path);
  char line[512];
  while (fgets(line, sizeof(line), f) != NULL) {
    char l[128], q[128];
    int s, run;
    unsigned long long t0, t1;
    if (sscanf(line, "%127[^,],%d,%127[^,],%d,%llu,%llu", l, &s, q, &run, &t0, &t1) != 6) continue;
    if (lib != NULL && (strcmp(l, lib) != 0 || s != start)) continue;
    if (*n + 2 > cap) bench_die("too many windows in %s", path);
    char* name = malloc(strlen(q) + 16);
    sprintf(name, "%s %d", q, run);
    g_ops[(*n)++] = (struct trace_rec){t0, 0, OP_WINDOW_START, TRACE_NO_ARENA, 0, 0, 0};
    g_ops[(*n)++] =
        (struct trace_rec){t1, 0, OP_WINDOW_END, TRACE_NO_ARENA, (uintptr_t)name, (uint64_t)run, 0};
  }
  fclose(f);
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s TRACE MARKS [LIB START [SCALE]]\n", argv[0]);
    return 2;
  }
  bench_api_init();
  const char* lib = argc > 4 ? argv[3] : NULL;
  int start = argc > 4 ? atoi(argv[4]) : 0;
  if (argc > 5) g_scale = bench_parse_double(argv[5], "SCALE");
  int fd = open(argv[1], O_RDONLY);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) bench_die("cannot open %s", argv[1]);
  const struct trace_rec* in =
      st.st_size > 0 ? mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
  if (in == MAP_FAILED) bench_die("cannot map %s", argv[1]);
  size_t n = 0, max = (size_t)st.st_size / sizeof(struct trace_rec);
  while (n < max && in[n].t != 0) n++;
  const size_t extra = 4096; /* window marks */
  g_ops = calloc(n + extra, sizeof(struct trace_rec));
  memcpy(g_ops, in, n * sizeof(struct trace_rec));
  read_marks(argv[2], lib, start, &n, n + extra);
  qsort(g_ops, n, sizeof(struct trace_rec), by_time);
  g_nops = n;
  if (!bench_ctl_read("arenas.narenas", &g_narenas, sizeof(g_narenas))) g_narenas = 0;
  g_owner = malloc(n * sizeof(*g_owner));
  for (size_t i = 0; i < n; i++) {
    unsigned k = 0;
    while (k < g_nthr && g_thr[k].tid != g_ops[i].tid) k++;
    if (k == g_nthr) {
      if (g_nthr == MAX_THREADS) bench_die("more than %d threads", MAX_THREADS);
      g_thr[k].tid = g_ops[i].tid;
      g_thr[k].arena = g_ops[i].op >= OP_WINDOW_START ? -1 : g_ops[i].arena;
      atomic_store(&g_thr[k].turn, UINT32_MAX);
      g_nthr++;
    }
    struct replay_thread* t = &g_thr[k];
    if (t->n == t->cap) {
      t->cap = t->cap != 0 ? 2 * t->cap : 64;
      t->calls = realloc(t->calls, t->cap * sizeof(size_t));
    }
    t->calls[t->n++] = i;
    g_owner[i] = k;
  }
  printf("trace_replay: %zu calls and marks, %u threads, %.1f s, allocator %s\n", n, g_nthr,
         n != 0 ? (double)(g_ops[n - 1].t - g_ops[0].t) / 1e9 : 0.0, bench_api_name());
  fflush(stdout);
  if (n == 0) return 1;
  g_t0_trace = g_ops[0].t;
  g_t0_real = now_ns();
  atomic_store(&g_thr[g_owner[0]].turn, 0);
  for (unsigned k = 0; k < g_nthr; k++) pthread_create(&g_thr[k].th, NULL, run, &g_thr[k]);
  for (unsigned k = 0; k < g_nthr; k++) pthread_join(g_thr[k].th, NULL);
  printf("RESULT windows=%d faults_first=%ld faults_repeat=%ld peak_max_mib=%ld\n", g_nwindows,
         g_faults_first, g_faults_repeat, g_peak_max_kib / 1024);
  return 0;
}
