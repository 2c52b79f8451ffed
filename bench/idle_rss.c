/*
 * bench/idle_rss.c - does the allocator give memory back when the work stops?
 * (issue 28: "RSS over time").
 *
 * N worker threads (--threads, default 4) each build their share of about
 * --mib MiB (default 2048) of mixed-size blocks, 16 B .. 230 KiB (70 % up to
 * 512 B, 25 % up to 16 KiB, 5 % up to 230 KiB, log-uniform inside each band,
 * so most blocks are small and most bytes are in large ones), write every
 * byte, free them all, and do it once more: that is one burst.  Then the
 * process goes quiet for a while, with the workers in the --after state:
 *
 *   blocked  alive, waiting on a condition variable: no allocator calls at all
 *   trickle  as blocked, but worker 0 does one 64-byte malloc/free every
 *            100 ms (a server's timer)
 *   exit     the workers exit; main waits (new threads do a later burst)
 *
 * The run is: burst, quiet --quiet2 s; with --pattern: burst, quiet --quiet1
 * s, burst, quiet --quiet2 s.  A sampler thread reads the resident size from
 * /proc/self/statm every --sample-ms ms and never allocates after it starts;
 * its samples go to --csv (t_seconds,rss_mib,phase) at the end.  Main reads
 * RSS itself right after each burst, at fixed points into each quiet stretch
 * (1, 5, 10, 20, 30, 60 s) and at its end, so the key figures do not depend
 * on the sampling grid.  Neither main nor the sampler calls the allocator
 * while the process is quiet.
 *
 * RESULT keys (MiB unless named otherwise): peak_rss_mib, rss_work_mib (right
 * after the last burst), rss_at<S>_mib (S s after it), rss_end_mib (end of
 * the last quiet stretch), with --pattern the same per stretch as
 * q<i>_work_mib, q<i>_at<S>_mib, q<i>_end_mib, minor faults during the bursts
 * (minflt_work) and the quiet stretches (minflt_quiet), and burst_s.
 */
#include "common.h"

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

enum { kMaxQuiet = 2, kTrickleMs = 100, kTrickleBytes = 64 };
static const unsigned kMarks[] = {1, 5, 10, 20, 30, 60};
enum { kNumMarks = sizeof(kMarks) / sizeof(kMarks[0]) };

typedef enum { kBlocked, kTrickle, kExit } after_t;
static const char* const kAfterNames[] = {"blocked", "trickle", "exit"};

/* What the sampler writes into each sample: the phase names below. */
// clang-format off
typedef enum {
  kPhaseStart, kPhaseBurst, kPhaseQuiet, kPhaseBurst1, kPhaseQuiet1, kPhaseBurst2, kPhaseQuiet2,
  kPhaseEnd
} phase_t;
static const char* const kPhaseNames[] = {
  "start", "burst", "quiet", "burst1", "quiet1", "burst2", "quiet2", "end"
};
// clang-format on

typedef struct {
  float t;          /* seconds since the sampler started */
  uint32_t rss_kib; /* resident */
  uint8_t phase;
} sample_t;

typedef struct {
  unsigned threads;
  uint64_t bytes_per_thread;
  after_t after;
  bool pattern;
  double quiet[kMaxQuiet];
  unsigned sample_ms;
  uint64_t seed;
  const char* csv;
} config_t;

static config_t g_cfg;

/* Workers wait for a new generation (a burst to do) or for the stop flag;
 * main waits for g_done to reach the thread count. */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_wake; /* on CLOCK_MONOTONIC, for the trickle's timed waits */
static pthread_cond_t g_done_cv = PTHREAD_COND_INITIALIZER;
static unsigned g_generation, g_done;
static bool g_stop, g_trickle_on;
static atomic_uint_fast64_t g_trickles, g_checksum;

static atomic_int g_phase;
static atomic_bool g_sampler_stop;
static sample_t* g_samples;
static size_t g_nsamples, g_cap_samples;
static atomic_uint g_peak_kib;
static double g_t0;

static void add_ns(struct timespec* ts, long ns) {
  ts->tv_nsec += ns;
  while (ts->tv_nsec >= 1000000000L) {
    ts->tv_nsec -= 1000000000L;
    ts->tv_sec++;
  }
}

/* The sampler: reads RSS with raw syscalls (bench_rss_bytes) into a buffer
 * sized before it starts, on an absolute-time grid so it does not drift. */
static void* sampler_main(void* arg) {
  (void)arg;
  struct timespec next;
  clock_gettime(CLOCK_MONOTONIC, &next);
  while (!atomic_load(&g_sampler_stop)) {
    uint32_t kib = (uint32_t)(bench_rss_bytes() / 1024);
    if (kib > atomic_load(&g_peak_kib)) atomic_store(&g_peak_kib, kib);
    if (g_nsamples < g_cap_samples) {
      sample_t* s = &g_samples[g_nsamples++];
      s->t = (float)(bench_now() - g_t0);
      s->rss_kib = kib;
      s->phase = (uint8_t)atomic_load(&g_phase);
    }
    add_ns(&next, (long)g_cfg.sample_ms * 1000000L);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR) {
    }
  }
  return NULL;
}

/* Size mix: many small blocks, most bytes in the large ones. */
static size_t next_size(bench_rng_t* r) {
  uint64_t band = bench_rand_below(r, 100);
  if (band < 70) return bench_rand_size(r, 16, 512);
  if (band < 95) return bench_rand_size(r, 513, 16 << 10);
  return bench_rand_size(r, (16 << 10) + 1, 230 << 10);
}

/* Build about `bytes` of blocks chained through their first word (no side
 * array to allocate), write every byte, then free them in allocation order. */
static void build_and_free(uint64_t bytes, uint64_t seed) {
  bench_rng_t r = {seed};
  void* head = NULL;
  void** tail = &head;
  uint64_t sum = 0;
  for (uint64_t built = 0; built < bytes;) {
    size_t n = next_size(&r);
    void* p = malloc(n);
    if (!p) bench_die("malloc(%zu) failed", n);
    memset(p, (int)(n & 0xff) | 1, n);
    *(void**)p = NULL;
    *tail = p;
    tail = (void**)p;
    built += n;
  }
  for (void* p = head; p;) {
    void* next = *(void**)p;
    sum += ((unsigned char*)p)[sizeof(void*)];
    free(p);
    p = next;
  }
  atomic_fetch_add(&g_checksum, sum);
}

static void report_done(void) {
  pthread_mutex_lock(&g_lock);
  g_done++;
  pthread_cond_signal(&g_done_cv);
  pthread_mutex_unlock(&g_lock);
}

/* One 64-byte block in and out, through the allocator under test. */
static void trickle_once(void) {
  void* p = malloc(kTrickleBytes);
  if (!p) bench_die("trickle malloc failed");
  memset(p, 1, kTrickleBytes);
  bench_escape(p);
  free(p);
  atomic_fetch_add(&g_trickles, 1);
}

static void* worker_main(void* arg) {
  unsigned id = (unsigned)(uintptr_t)arg;
  pthread_mutex_lock(&g_lock);
  unsigned seen = 0;
  for (;;) {
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    while (!g_stop && g_generation == seen) {
      if (id == 0 && g_trickle_on) {
        /* Timed waits on a fixed grid; the malloc/free runs unlocked. */
        add_ns(&next, (long)kTrickleMs * 1000000L);
        if (pthread_cond_timedwait(&g_wake, &g_lock, &next) == ETIMEDOUT && g_trickle_on &&
            !g_stop && g_generation == seen) {
          pthread_mutex_unlock(&g_lock);
          trickle_once();
          pthread_mutex_lock(&g_lock);
        }
      } else {
        pthread_cond_wait(&g_wake, &g_lock);
        clock_gettime(CLOCK_MONOTONIC, &next);
      }
    }
    if (g_stop) break;
    seen = g_generation;
    pthread_mutex_unlock(&g_lock);
    for (unsigned round = 0; round < 2; round++) {
      build_and_free(g_cfg.bytes_per_thread,
                     g_cfg.seed * 0x100000001b3ull + (uint64_t)seen * 1000 + round * 100 + id);
    }
    report_done();
    if (g_cfg.after == kExit) return NULL;
    pthread_mutex_lock(&g_lock);
  }
  pthread_mutex_unlock(&g_lock);
  return NULL;
}

static void start_workers(pthread_t* tid) {
  for (unsigned i = 0; i < g_cfg.threads; i++) {
    if (pthread_create(&tid[i], NULL, worker_main, (void*)(uintptr_t)i) != 0) {
      bench_die("pthread_create");
    }
  }
}

static double rss_mib(void) { return (double)bench_rss_bytes() / 1048576.0; }

/* Sleep until `at` seconds after `base` (CLOCK_MONOTONIC seconds). */
static void sleep_until(double base, double at) {
  double target = base + at;
  struct timespec ts;
  ts.tv_sec = (time_t)target;
  ts.tv_nsec = (long)((target - (double)ts.tv_sec) * 1e9);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
  }
}

typedef struct {
  double work_mib, end_mib;
  double at_mib[kNumMarks]; /* negative: the stretch ended before that mark */
} quiet_result_t;

static void usage(FILE* f) {
  fprintf(f,
          "usage: idle_rss [options]\n"
          "  -t, --threads N      worker threads (default 4)\n"
          "  -m, --mib N          MiB built per round, shared by the threads (default 2048)\n"
          "  -a, --after MODE     blocked | trickle | exit: the workers while quiet\n"
          "                       (default blocked)\n"
          "      --pattern        burst, quiet --quiet1 s, burst, quiet --quiet2 s\n"
          "                       (default: burst, quiet --quiet2 s)\n"
          "      --quiet1 S       first quiet stretch with --pattern (default 10)\n"
          "      --quiet2 S       last quiet stretch (default 30)\n"
          "      --sample-ms N    RSS sampling period (default 250)\n"
          "      --csv FILE       write the samples (t_seconds,rss_mib,phase)\n"
          "      --seed N         workload seed (default 1)\n"
          "      --info           print the allocator/API detection and exit\n");
}

int main(int argc, char** argv) {
  config_t c = {
      .threads = 4, .after = kBlocked, .quiet = {10, 30}, .sample_ms = 250, .seed = 1, .csv = NULL};
  uint64_t mib = 2048;
  enum { kPattern = 256, kQuiet1, kQuiet2, kSampleMs, kCsv, kSeed, kInfo };
  static const struct option opts[] = {{"threads", required_argument, 0, 't'},
                                       {"mib", required_argument, 0, 'm'},
                                       {"after", required_argument, 0, 'a'},
                                       {"pattern", no_argument, 0, kPattern},
                                       {"quiet1", required_argument, 0, kQuiet1},
                                       {"quiet2", required_argument, 0, kQuiet2},
                                       {"sample-ms", required_argument, 0, kSampleMs},
                                       {"csv", required_argument, 0, kCsv},
                                       {"seed", required_argument, 0, kSeed},
                                       {"info", no_argument, 0, kInfo},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  int ch;
  while ((ch = getopt_long(argc, argv, "t:m:a:h", opts, NULL)) != -1) {
    switch (ch) {
      case 't': c.threads = (unsigned)bench_parse_u64(optarg, "--threads"); break;
      case 'm': mib = bench_parse_u64(optarg, "--mib"); break;
      case 'a': {
        bool ok = false;
        for (int i = 0; i < 3; i++) {
          if (strcmp(optarg, kAfterNames[i]) == 0) {
            c.after = (after_t)i;
            ok = true;
          }
        }
        if (!ok) bench_die("--after wants blocked, trickle or exit, not '%s'", optarg);
        break;
      }
      case kPattern: c.pattern = true; break;
      case kQuiet1: c.quiet[0] = bench_parse_double(optarg, "--quiet1"); break;
      case kQuiet2: c.quiet[1] = bench_parse_double(optarg, "--quiet2"); break;
      case kSampleMs: c.sample_ms = (unsigned)bench_parse_u64(optarg, "--sample-ms"); break;
      case kCsv: c.csv = optarg; break;
      case kSeed: c.seed = bench_parse_u64(optarg, "--seed"); break;
      case kInfo: return bench_info("idle_rss");
      case 'h': usage(stdout); return 0;
      default: usage(stderr); return 2;
    }
  }
  if (optind != argc) {
    usage(stderr);
    return 2;
  }
  if (c.threads == 0 || mib == 0 || c.sample_ms == 0) {
    bench_die("--threads, --mib and --sample-ms must be at least 1");
  }
  c.bytes_per_thread = (mib << 20) / c.threads;
  /* Without --pattern there is one burst and one quiet stretch, --quiet2 s. */
  const unsigned nbursts = c.pattern ? 2 : 1;
  const unsigned first = c.pattern ? 0 : 1;
  g_cfg = c;

  bench_api_init();
  bench_print_header("idle_rss");
  printf("threads=%u mib=%llu after=%s pattern=%s quiet=%g/%g s sample=%u ms\n", c.threads,
         (unsigned long long)mib, kAfterNames[c.after], c.pattern ? "yes" : "no",
         c.pattern ? c.quiet[0] : 0.0, c.quiet[1], c.sample_ms);
  fflush(stdout);

  /* Room for the quiet stretches plus 10 minutes of bursts; the sampler
   * stops recording (but keeps the peak) if the bursts take longer. */
  double quiet_total = c.quiet[1] + (c.pattern ? c.quiet[0] : 0);
  g_cap_samples = (size_t)((quiet_total + 600.0) * 1000.0 / c.sample_ms) + 16;
  g_samples = (sample_t*)calloc(g_cap_samples, sizeof(sample_t));
  pthread_t* tid = (pthread_t*)calloc(c.threads, sizeof(pthread_t));
  if (!g_samples || !tid) bench_die("out of memory");

  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&g_wake, &ca);
  pthread_condattr_destroy(&ca);
  atomic_store(&g_phase, kPhaseStart);
  g_t0 = bench_now();
  pthread_t sampler;
  if (pthread_create(&sampler, NULL, sampler_main, NULL) != 0) bench_die("pthread_create");

  quiet_result_t q[kMaxQuiet];
  long flt_work = 0, flt_quiet = 0;
  double burst_s = 0;
  for (unsigned b = 0; b < nbursts; b++) {
    unsigned qi = first + b; /* index into c.quiet */
    atomic_store(&g_phase, !c.pattern ? kPhaseBurst : b == 0 ? kPhaseBurst1 : kPhaseBurst2);
    long f0 = bench_minflt_self();
    double tb = bench_now();
    /* The new generation is set before any new thread starts, so a fresh
     * worker cannot report done before g_done is reset. */
    pthread_mutex_lock(&g_lock);
    g_trickle_on = false;
    g_done = 0;
    g_generation++;
    pthread_cond_broadcast(&g_wake);
    pthread_mutex_unlock(&g_lock);
    if (b == 0 || c.after == kExit) start_workers(tid);
    pthread_mutex_lock(&g_lock);
    while (g_done < c.threads) pthread_cond_wait(&g_done_cv, &g_lock);
    pthread_mutex_unlock(&g_lock);
    if (c.after == kExit) {
      for (unsigned i = 0; i < c.threads; i++) pthread_join(tid[i], NULL);
    }
    double quiet0 = bench_now();
    burst_s += quiet0 - tb;
    long f1 = bench_minflt_self();
    flt_work += f1 - f0;

    /* Quiet: from here until the stretch ends main only reads RSS. */
    atomic_store(&g_phase, !c.pattern ? kPhaseQuiet : b == 0 ? kPhaseQuiet1 : kPhaseQuiet2);
    quiet_result_t* r = &q[b];
    r->work_mib = rss_mib();
    if (c.after == kTrickle) {
      pthread_mutex_lock(&g_lock);
      g_trickle_on = true;
      pthread_cond_broadcast(&g_wake);
      pthread_mutex_unlock(&g_lock);
    }
    for (unsigned m = 0; m < kNumMarks; m++) {
      r->at_mib[m] = -1;
      if (kMarks[m] <= c.quiet[qi]) {
        sleep_until(quiet0, kMarks[m]);
        r->at_mib[m] = rss_mib();
      }
    }
    sleep_until(quiet0, c.quiet[qi]);
    r->end_mib = rss_mib();
    flt_quiet += bench_minflt_self() - f1;
  }
  atomic_store(&g_phase, kPhaseEnd);
  double wall = bench_now() - g_t0;

  atomic_store(&g_sampler_stop, true);
  pthread_join(sampler, NULL);
  if (c.after != kExit) {
    pthread_mutex_lock(&g_lock);
    g_stop = true;
    pthread_cond_broadcast(&g_wake);
    pthread_mutex_unlock(&g_lock);
    for (unsigned i = 0; i < c.threads; i++) pthread_join(tid[i], NULL);
  }

  if (c.csv) {
    FILE* f = fopen(c.csv, "w");
    if (!f) bench_die("cannot write %s", c.csv);
    fprintf(f, "t_seconds,rss_mib,phase\n");
    for (size_t i = 0; i < g_nsamples; i++) {
      fprintf(f, "%.3f,%.1f,%s\n", g_samples[i].t, g_samples[i].rss_kib / 1024.0,
              kPhaseNames[g_samples[i].phase]);
    }
    fclose(f);
  }

  /* The figures: per stretch, then the last stretch unprefixed. */
  double peak = (double)bench_maxrss_kib() / 1024.0;
  char extra[2048];
  size_t len = 0;
  len +=
      (size_t)snprintf(extra + len, sizeof(extra) - len,
                       "after=%s threads=%u mib=%llu pattern=%d burst_s=%.2f "
                       "peak_rss_mib=%.1f sampled_peak_mib=%.1f minflt_work=%ld "
                       "minflt_quiet=%ld trickles=%llu samples=%zu",
                       kAfterNames[c.after], c.threads, (unsigned long long)mib, c.pattern ? 1 : 0,
                       burst_s, peak, atomic_load(&g_peak_kib) / 1024.0, flt_work, flt_quiet,
                       (unsigned long long)atomic_load(&g_trickles), g_nsamples);
  for (unsigned b = 0; b < nbursts; b++) {
    const quiet_result_t* r = &q[b];
    bool last = b + 1 == nbursts;
    /* pass 0: q<i>_ keys (with --pattern); pass 1: the last stretch, unprefixed. */
    for (int pass = c.pattern ? 0 : 1; pass < (last ? 2 : 1); pass++) {
      char pre[8] = "";
      if (pass == 0) snprintf(pre, sizeof(pre), "q%u_", b + 1);
      len += (size_t)snprintf(extra + len, sizeof(extra) - len, " %s%s=%.1f %s%s=%.1f", pre,
                              pass ? "rss_work_mib" : "work_mib", r->work_mib, pre,
                              pass ? "rss_end_mib" : "end_mib", r->end_mib);
      for (unsigned m = 0; m < kNumMarks; m++) {
        if (r->at_mib[m] < 0) continue;
        len += (size_t)snprintf(extra + len, sizeof(extra) - len, " %s%sat%u_mib=%.1f", pre,
                                pass ? "rss_" : "", kMarks[m], r->at_mib[m]);
      }
    }
  }
  for (unsigned b = 0; b < nbursts; b++) {
    printf("quiet %u: RSS after the work %.1f MiB, after %g s %.1f MiB\n", b + 1, q[b].work_mib,
           c.quiet[first + b], q[b].end_mib);
  }
  printf("peak RSS=%.1f MiB  bursts=%.2f s  faults work/quiet=%ld/%ld  trickles=%llu\n", peak,
         burst_s, flt_work, flt_quiet, (unsigned long long)atomic_load(&g_trickles));
  bench_print_result("idle_rss", wall, extra);
  free(g_samples);
  free(tid);
  return 0;
}
