/*
 * bench/rallocx_4k16k.c - the 4 KiB -> 16 KiB rallocx pattern (jemalloc PR
 * #2842's microbenchmark; the pattern of jemalloc issue #2842).
 *
 * Per iteration and per thread: 256 x mallocx(4096) + memset, rallocx of each
 * to 16384 + memset of the new 12 KiB, then dallocx of all.  Each thread gets
 * its own manual arena (arenas.create) when the jemalloc API is present;
 * otherwise plain malloc/realloc/free.  4096 B is a small size class and
 * 16384 B a large one in jemalloc, so every rallocx moves the block; with
 * unbounded eager coalescing of the freed 20 KiB extents jemalloc 5.3 builds
 * free extents too large to be reused for 20 KiB and keeps faulting in fresh
 * pages (~1,000 minor faults per iteration after warm-up).
 *
 * Reports per-iteration minor faults (getrusage RUSAGE_THREAD, per thread),
 * total time, mapped memory (stats.mapped, or RSS when mallctl is absent) and
 * peak RSS.  --trace FILE writes one line per iteration for plotting.
 */
#include "common.h"

#include <getopt.h>
#include <pthread.h>
#include <string.h>

typedef struct {
  unsigned threads;
  uint64_t iters;
  uint64_t warmup;
  unsigned nobj;
  size_t from, to;
  bool tcache_none;
  bool use_arena;
  const char* trace;
} config_t;

typedef struct {
  const config_t* cfg;
  unsigned index;
  pthread_barrier_t* start;
  long* faults;    /* [iters] minor faults of this thread per iteration */
  double* seconds; /* [iters] wall time of each iteration (thread 0 only) */
  size_t* rss;     /* [iters] process RSS after each iteration (thread 0, --trace) */
  size_t* mapped;  /* [iters] stats.mapped after each iteration (thread 0, --trace) */
  unsigned arena;
  bool has_arena;
  int flags;
} worker_t;

static void* worker_main(void* arg) {
  worker_t* w = (worker_t*)arg;
  const config_t* c = w->cfg;
  int flags = 0;
  if (c->use_arena && bench_arena_create(&w->arena)) {
    w->has_arena = true;
    flags |= BENCH_MALLOCX_ARENA(w->arena);
  }
  if (c->tcache_none) flags |= BENCH_MALLOCX_TCACHE_NONE;
  w->flags = flags;
  void** ptr = (void**)calloc(c->nobj, sizeof(void*));
  if (!ptr) bench_die("out of memory");
  pthread_barrier_wait(w->start);

  for (uint64_t it = 0; it < c->iters; it++) {
    double t0 = bench_now();
    long f0 = bench_minflt_thread();
    for (unsigned k = 0; k < c->nobj; k++) {
      void* p = bench_mallocx(c->from, flags);
      if (!p) bench_die("mallocx(%zu) failed", c->from);
      memset(p, (int)(k & 0xff), c->from);
      ptr[k] = p;
    }
    for (unsigned k = 0; k < c->nobj; k++) {
      char* q = (char*)bench_rallocx(ptr[k], c->to, flags);
      if (!q) bench_die("rallocx(%zu) failed", c->to);
      if (q[c->from - 1] != (char)(k & 0xff)) bench_die("rallocx lost data");
      memset(q + c->from, (int)(k & 0xff), c->to - c->from);
      ptr[k] = q;
    }
    for (unsigned k = 0; k < c->nobj; k++) {
      bench_escape(ptr[k]);
      bench_dallocx(ptr[k], flags);
    }
    w->faults[it] = bench_minflt_thread() - f0;
    if (w->seconds) w->seconds[it] = bench_now() - t0;
    if (w->rss) {
      w->rss[it] = bench_rss_bytes();
      size_t m = 0;
      w->mapped[it] = bench_stats_mapped(&m) ? m : 0;
    }
  }
  free(ptr);
  return NULL;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

/* Median over post-warm-up iterations of the per-thread mean faults: robust
 * against the odd iteration that trips a purge. */
static double steady_median(const worker_t* w, const config_t* c) {
  uint64_t n = c->iters - c->warmup;
  double* v = (double*)malloc(n * sizeof(double));
  if (!v) bench_die("out of memory");
  for (uint64_t i = 0; i < n; i++) {
    double s = 0;
    for (unsigned t = 0; t < c->threads; t++) s += (double)w[t].faults[c->warmup + i];
    v[i] = s / c->threads;
  }
  qsort(v, n, sizeof(double), cmp_double);
  double m = (n % 2) ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  free(v);
  return m;
}

static void usage(FILE* f) {
  fprintf(f,
          "usage: rallocx_4k16k [options]\n"
          "  -t, --threads N     threads, each with its own arena (default 1)\n"
          "  -i, --iters N       iterations per thread (default 500)\n"
          "  -s, --scale F       multiply the default iteration count by F\n"
          "  -w, --warmup N      iterations left out of the averages (default 1)\n"
          "  -n, --tcache-none   pass MALLOCX_TCACHE_NONE (jemalloc API only)\n"
          "      --no-arena      do not create per-thread arenas\n"
          "      --nobj N        blocks per iteration (default 256)\n"
          "      --from B        first size (default 4096)\n"
          "      --to B          size after rallocx (default 16384)\n"
          "      --trace FILE    per-iteration faults/time/RSS/mapped of thread 0\n"
          "      --info          print the allocator/API detection and exit\n");
}

int main(int argc, char** argv) {
  config_t c = {.threads = 1,
                .iters = 0,
                .warmup = 1,
                .nobj = 256,
                .from = 4096,
                .to = 16384,
                .tcache_none = false,
                .use_arena = true,
                .trace = NULL};
  double scale = 1.0;
  enum { kNoArena = 256, kNobj, kFrom, kTo, kTrace, kInfo };
  static const struct option opts[] = {{"threads", required_argument, 0, 't'},
                                       {"iters", required_argument, 0, 'i'},
                                       {"scale", required_argument, 0, 's'},
                                       {"warmup", required_argument, 0, 'w'},
                                       {"tcache-none", no_argument, 0, 'n'},
                                       {"no-arena", no_argument, 0, kNoArena},
                                       {"nobj", required_argument, 0, kNobj},
                                       {"from", required_argument, 0, kFrom},
                                       {"to", required_argument, 0, kTo},
                                       {"trace", required_argument, 0, kTrace},
                                       {"info", no_argument, 0, kInfo},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  int ch;
  while ((ch = getopt_long(argc, argv, "t:i:s:w:nh", opts, NULL)) != -1) {
    switch (ch) {
      case 't': c.threads = (unsigned)bench_parse_u64(optarg, "--threads"); break;
      case 'i': c.iters = bench_parse_u64(optarg, "--iters"); break;
      case 's': scale = bench_parse_double(optarg, "--scale"); break;
      case 'w': c.warmup = bench_parse_u64(optarg, "--warmup"); break;
      case 'n': c.tcache_none = true; break;
      case kNoArena: c.use_arena = false; break;
      case kNobj: c.nobj = (unsigned)bench_parse_u64(optarg, "--nobj"); break;
      case kFrom: c.from = bench_parse_u64(optarg, "--from"); break;
      case kTo: c.to = bench_parse_u64(optarg, "--to"); break;
      case kTrace: c.trace = optarg; break;
      case kInfo: return bench_info("rallocx_4k16k");
      case 'h': usage(stdout); return 0;
      default: usage(stderr); return 2;
    }
  }
  if (optind != argc) {
    usage(stderr);
    return 2;
  }
  if (c.iters == 0) c.iters = bench_scaled(500, scale);
  if (c.threads == 0 || c.nobj == 0 || c.from == 0 || c.to <= c.from) {
    bench_die("need --threads >= 1, --nobj >= 1 and 0 < --from < --to");
  }
  if (c.warmup >= c.iters) c.warmup = c.iters - 1;

  bench_api_init();
  bench_print_header("rallocx_4k16k");

  worker_t* w = (worker_t*)calloc(c.threads, sizeof(worker_t));
  pthread_t* tid = (pthread_t*)calloc(c.threads, sizeof(pthread_t));
  if (!w || !tid) bench_die("out of memory");
  pthread_barrier_t start;
  pthread_barrier_init(&start, NULL, c.threads + 1);
  for (unsigned t = 0; t < c.threads; t++) {
    w[t].cfg = &c;
    w[t].index = t;
    w[t].start = &start;
    w[t].faults = (long*)calloc(c.iters, sizeof(long));
    if (!w[t].faults) bench_die("out of memory");
    if (t == 0) {
      w[t].seconds = (double*)calloc(c.iters, sizeof(double));
      if (!w[t].seconds) bench_die("out of memory");
      if (c.trace) {
        w[t].rss = (size_t*)calloc(c.iters, sizeof(size_t));
        w[t].mapped = (size_t*)calloc(c.iters, sizeof(size_t));
        if (!w[t].rss || !w[t].mapped) bench_die("out of memory");
      }
    }
  }
  for (unsigned t = 0; t < c.threads; t++) {
    if (pthread_create(&tid[t], NULL, worker_main, &w[t]) != 0) bench_die("pthread_create");
  }
  long self0 = bench_minflt_self();
  pthread_barrier_wait(&start);
  double t0 = bench_now();
  for (unsigned t = 0; t < c.threads; t++) pthread_join(tid[t], NULL);
  double wall = bench_now() - t0;
  long self_faults = bench_minflt_self() - self0;

  /* Per-iteration faults averaged over threads; "steady" = after warm-up. */
  double steady_sum = 0, steady_max = 0;
  double first[3] = {0, 0, 0};
  for (uint64_t it = 0; it < c.iters; it++) {
    double s = 0;
    for (unsigned t = 0; t < c.threads; t++) s += (double)w[t].faults[it];
    s /= c.threads;
    if (it < 3) first[it] = s;
    if (it >= c.warmup) {
      steady_sum += s;
      if (s > steady_max) steady_max = s;
    }
  }
  double steady = steady_sum / (double)(c.iters - c.warmup);
  double median = steady_median(w, &c);
  double last = 0;
  for (unsigned t = 0; t < c.threads; t++) last += (double)w[t].faults[c.iters - 1];
  last /= c.threads;

  size_t mapped = 0;
  bool have_mapped = bench_stats_mapped(&mapped);
  bool arenas = c.threads > 0 && w[0].has_arena;

  printf("threads=%u iters=%llu nobj=%u %zu->%zu tcache=%s arenas=%s\n", c.threads,
         (unsigned long long)c.iters, c.nobj, c.from, c.to, c.tcache_none ? "none" : "default",
         arenas ? "manual" : "none");
  printf(
      "faults/iter per thread: iter0=%.0f iter1=%.0f iter2=%.0f last=%.0f; "
      "after %llu warm-up: mean=%.1f median=%.0f max=%.0f\n",
      first[0], first[1], first[2], last, (unsigned long long)c.warmup, steady, median, steady_max);
  printf("time=%.3f s (%.1f us/iter/thread)  process faults=%ld  %s=%.1f MiB  peak RSS=%.1f MiB\n",
         wall, wall * 1e6 / (double)c.iters, self_faults, have_mapped ? "stats.mapped" : "RSS",
         (double)(have_mapped ? mapped : bench_rss_bytes()) / 1048576.0,
         (double)bench_maxrss_kib() / 1024.0);

  if (c.trace) {
    FILE* f = fopen(c.trace, "w");
    if (!f) bench_die("cannot write %s", c.trace);
    fprintf(f,
            "# iter faults_mean_per_thread faults_thread0 seconds_thread0 rss_bytes "
            "mapped_bytes\n");
    for (uint64_t it = 0; it < c.iters; it++) {
      double s = 0;
      for (unsigned t = 0; t < c.threads; t++) s += (double)w[t].faults[it];
      fprintf(f, "%llu %.1f %ld %.6f %zu %zu\n", (unsigned long long)it, s / c.threads,
              w[0].faults[it], w[0].seconds[it], w[0].rss[it], w[0].mapped[it]);
    }
    fclose(f);
  }

  char extra[512];
  snprintf(extra, sizeof(extra),
           "threads=%u iters=%llu tcache=%s arenas=%s faults_iter0=%.0f faults_iter1=%.0f "
           "faults_per_iter=%.1f faults_per_iter_median=%.0f faults_per_iter_max=%.0f "
           "faults_last=%.0f process_faults=%ld mapped_mib=%.2f mapped_src=%s",
           c.threads, (unsigned long long)c.iters, c.tcache_none ? "none" : "default",
           arenas ? "manual" : "none", first[0], first[1], steady, median, steady_max, last,
           self_faults, (double)(have_mapped ? mapped : bench_rss_bytes()) / 1048576.0,
           have_mapped ? "stats.mapped" : "rss");
  bench_print_result("rallocx_4k16k", wall, extra);

  for (unsigned t = 0; t < c.threads; t++) {
    free(w[t].faults);
    free(w[t].seconds);
    free(w[t].rss);
    free(w[t].mapped);
  }
  free(w);
  free(tid);
  pthread_barrier_destroy(&start);
  return 0;
}
