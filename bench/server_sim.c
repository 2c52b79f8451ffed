/*
 * bench/server_sim.c - a long-running, server-like mix of sizes and
 * lifetimes, to measure fragmentation and RSS rather than raw speed.
 *
 * Each worker thread owns a population of sessions.  A session has a state
 * blob (256 B .. 16 KiB, lives as long as the session), up to 4 cache
 * entries (64 B .. 32 KiB, replaced now and then) and a log buffer grown by
 * realloc as requests append to it (flushed = freed when it passes the
 * session's cap, 4 .. 64 KiB).  Every tick a worker serves requests on random
 * sessions: each request allocates 4..32 short-lived buffers (16 B .. 2 KiB)
 * and frees them at its end; one in ten leaves a response (256 B .. 64 KiB)
 * that is freed 1..16 ticks later.
 *
 * The session count follows cycles of a growth phase (ramp up to --sessions
 * per thread) and a shrink phase (ramp down to 5 %), with random departures,
 * so the survivors of a shrink are scattered over the heap.  A quarter of the
 * departing sessions are handed to a shared graveyard and freed by whichever
 * worker drains it (cross-thread frees).
 *
 * Reports time, peak RSS, minor faults, and RSS vs live bytes at the end of
 * each phase (the fragmentation an allocator leaves behind after a shrink).
 */
#include "common.h"

#include <getopt.h>
#include <pthread.h>
#include <string.h>

enum { kCache = 4, kPendingSlots = 16, kMaxPendingPerSlot = 64 };

typedef struct session {
  struct session* next; /* graveyard link */
  void* state;
  size_t state_size;
  void* cache[kCache];
  size_t cache_size[kCache];
  char* log;
  size_t log_len, log_cap, log_limit;
} session_t;

typedef struct {
  unsigned threads;
  uint64_t cycles;
  uint64_t ticks;    /* per phase */
  uint64_t sessions; /* peak sessions per thread */
  unsigned requests; /* per tick per thread */
  uint64_t seed;
} config_t;

typedef struct {
  const config_t* cfg;
  unsigned index;
  bench_rng_t rng;
  session_t** live;
  size_t nlive;
  /* responses freed some ticks later: ring of slots indexed by tick */
  void* pending[kPendingSlots][kMaxPendingPerSlot];
  size_t pending_size[kPendingSlots][kMaxPendingPerSlot];
  unsigned npending[kPendingSlots];
  int64_t live_bytes; /* bytes this thread allocated minus freed (may go negative) */
  uint64_t allocs;
  uint64_t requests;
} worker_t;

static pthread_barrier_t g_barrier;
static pthread_mutex_t g_grave_lock = PTHREAD_MUTEX_INITIALIZER;
static session_t* g_grave;

static void* xmalloc(worker_t* w, size_t n) {
  void* p = malloc(n);
  if (!p) bench_die("malloc(%zu) failed", n);
  w->live_bytes += (int64_t)n;
  w->allocs++;
  return p;
}

static void xfree(worker_t* w, void* p, size_t n) {
  if (!p) return;
  free(p);
  w->live_bytes -= (int64_t)n;
}

static session_t* session_new(worker_t* w) {
  session_t* s = (session_t*)xmalloc(w, sizeof(session_t));
  memset(s, 0, sizeof(*s));
  s->state_size = bench_rand_size(&w->rng, 256, 16384);
  s->state = xmalloc(w, s->state_size);
  memset(s->state, 0x5a, s->state_size);
  unsigned n = (unsigned)bench_rand_below(&w->rng, kCache + 1);
  for (unsigned i = 0; i < n; i++) {
    s->cache_size[i] = bench_rand_size(&w->rng, 64, 32768);
    s->cache[i] = xmalloc(w, s->cache_size[i]);
    memset(s->cache[i], (int)i, s->cache_size[i]);
  }
  s->log_limit = bench_rand_size(&w->rng, 4096, 65536);
  return s;
}

static void session_free(worker_t* w, session_t* s) {
  xfree(w, s->state, s->state_size);
  for (unsigned i = 0; i < kCache; i++) xfree(w, s->cache[i], s->cache_size[i]);
  xfree(w, s->log, s->log_cap);
  xfree(w, s, sizeof(session_t));
}

static void session_depart(worker_t* w, size_t idx) {
  session_t* s = w->live[idx];
  w->live[idx] = w->live[--w->nlive];
  if (bench_rand_below(&w->rng, 4) == 0) {
    /* The bytes leave this thread's books now; the drainer frees them. */
    w->live_bytes -= (int64_t)(s->state_size + s->log_cap + sizeof(session_t));
    for (unsigned i = 0; i < kCache; i++) w->live_bytes -= (int64_t)s->cache_size[i];
    pthread_mutex_lock(&g_grave_lock);
    s->next = g_grave;
    g_grave = s;
    pthread_mutex_unlock(&g_grave_lock);
  } else {
    session_free(w, s);
  }
}

static void drain_graveyard(worker_t* w, unsigned max) {
  session_t* batch = NULL;
  pthread_mutex_lock(&g_grave_lock);
  for (unsigned i = 0; i < max && g_grave; i++) {
    session_t* s = g_grave;
    g_grave = s->next;
    s->next = batch;
    batch = s;
  }
  pthread_mutex_unlock(&g_grave_lock);
  while (batch) {
    session_t* s = batch;
    batch = s->next;
    /* Already taken off the books by the departing thread. */
    w->live_bytes += (int64_t)(s->state_size + s->log_cap + sizeof(session_t));
    for (unsigned i = 0; i < kCache; i++) w->live_bytes += (int64_t)s->cache_size[i];
    session_free(w, s);
  }
}

static void serve_request(worker_t* w, session_t* s, uint64_t tick) {
  void* tmp[32];
  size_t tsz[32];
  unsigned n = 4 + (unsigned)bench_rand_below(&w->rng, 29);
  for (unsigned i = 0; i < n; i++) {
    tsz[i] = bench_rand_size(&w->rng, 16, 2048);
    tmp[i] = xmalloc(w, tsz[i]);
    memset(tmp[i], (int)i, tsz[i]);
  }
  uint64_t r = bench_rand_below(&w->rng, 100);
  if (r < 20) {
    /* append to the session log, growing it by realloc; flush at the cap */
    size_t add = bench_rand_size(&w->rng, 64, 1024);
    if (s->log_len + add > s->log_limit) {
      xfree(w, s->log, s->log_cap);
      s->log = NULL;
      s->log_len = s->log_cap = 0;
    }
    if (s->log_len + add > s->log_cap) {
      size_t cap = s->log_cap ? s->log_cap + s->log_cap / 2 : 256;
      while (cap < s->log_len + add) cap += cap / 2;
      char* p = (char*)realloc(s->log, cap);
      if (!p) bench_die("realloc(%zu) failed", cap);
      w->live_bytes += (int64_t)cap - (int64_t)s->log_cap;
      w->allocs++;
      s->log = p;
      s->log_cap = cap;
    }
    memset(s->log + s->log_len, 'L', add);
    s->log_len += add;
  } else if (r < 25) {
    unsigned i = (unsigned)bench_rand_below(&w->rng, kCache);
    xfree(w, s->cache[i], s->cache_size[i]);
    s->cache_size[i] = bench_rand_size(&w->rng, 64, 32768);
    s->cache[i] = xmalloc(w, s->cache_size[i]);
    memset(s->cache[i], 0x33, s->cache_size[i]);
  }
  if (bench_rand_below(&w->rng, 10) == 0) {
    unsigned slot =
        (unsigned)((tick + 1 + bench_rand_below(&w->rng, kPendingSlots - 1)) % kPendingSlots);
    if (w->npending[slot] < kMaxPendingPerSlot) {
      size_t sz = bench_rand_size(&w->rng, 256, 65536);
      void* p = xmalloc(w, sz);
      memset(p, 0x77, sz);
      w->pending[slot][w->npending[slot]] = p;
      w->pending_size[slot][w->npending[slot]] = sz;
      w->npending[slot]++;
    }
  }
  for (unsigned i = 0; i < n; i++) {
    bench_escape(tmp[i]);
    xfree(w, tmp[i], tsz[i]);
  }
  w->requests++;
}

static void run_tick(worker_t* w, uint64_t tick, size_t target) {
  const config_t* c = w->cfg;
  unsigned slot = (unsigned)(tick % kPendingSlots);
  for (unsigned i = 0; i < w->npending[slot]; i++) {
    xfree(w, w->pending[slot][i], w->pending_size[slot][i]);
  }
  w->npending[slot] = 0;
  /* Turnover: a few random departures every tick, then arrivals up to the
   * target; during a shrink, extra random departures down to it. */
  size_t churn = w->nlive / 200 + 1;
  for (size_t i = 0; i < churn && w->nlive > 0; i++) {
    session_depart(w, (size_t)bench_rand_below(&w->rng, w->nlive));
  }
  while (w->nlive > target) session_depart(w, (size_t)bench_rand_below(&w->rng, w->nlive));
  size_t arrivals = 0, max_arrivals = c->sessions / 64 + 2;
  while (w->nlive < target && arrivals++ < max_arrivals) w->live[w->nlive++] = session_new(w);
  for (unsigned r = 0; r < c->requests && w->nlive > 0; r++) {
    serve_request(w, w->live[bench_rand_below(&w->rng, w->nlive)], tick);
  }
  drain_graveyard(w, 8);
}

static void* worker_main(void* arg) {
  worker_t* w = (worker_t*)arg;
  const config_t* c = w->cfg;
  w->live = (session_t**)calloc(c->sessions + 1, sizeof(session_t*));
  if (!w->live) bench_die("out of memory");
  size_t low = c->sessions / 20;
  uint64_t tick = 0;
  pthread_barrier_wait(&g_barrier);
  for (uint64_t cycle = 0; cycle < c->cycles; cycle++) {
    for (int phase = 0; phase < 2; phase++) {
      for (uint64_t t = 0; t < c->ticks; t++, tick++) {
        /* ramp over the first 3/4 of the phase, hold for the rest */
        uint64_t ramp = c->ticks * 3 / 4 + 1;
        uint64_t k = t < ramp ? t : ramp;
        size_t span = c->sessions - low;
        size_t target =
            phase == 0 ? low + (size_t)(span * k / ramp) : c->sessions - (size_t)(span * k / ramp);
        run_tick(w, tick, target);
      }
      pthread_barrier_wait(&g_barrier); /* phase done: main samples RSS */
      pthread_barrier_wait(&g_barrier);
    }
  }
  /* Tear down: everything, including what others left in the graveyard. */
  while (w->nlive > 0) session_free(w, w->live[--w->nlive]);
  for (unsigned s = 0; s < kPendingSlots; s++) {
    for (unsigned i = 0; i < w->npending[s]; i++) xfree(w, w->pending[s][i], w->pending_size[s][i]);
    w->npending[s] = 0;
  }
  drain_graveyard(w, ~0u);
  free(w->live);
  return NULL;
}

static int64_t total_live(const worker_t* w, unsigned n) {
  int64_t sum = 0;
  for (unsigned t = 0; t < n; t++) sum += w[t].live_bytes;
  /* sessions parked in the graveyard are off every thread's books */
  pthread_mutex_lock(&g_grave_lock);
  for (session_t* s = g_grave; s; s = s->next) {
    sum += (int64_t)(s->state_size + s->log_cap + sizeof(session_t));
    for (unsigned i = 0; i < kCache; i++) sum += (int64_t)s->cache_size[i];
  }
  pthread_mutex_unlock(&g_grave_lock);
  return sum;
}

static void usage(FILE* f) {
  fprintf(f,
          "usage: server_sim [options]\n"
          "  -t, --threads N    worker threads (default 2)\n"
          "  -c, --cycles N     growth+shrink cycles (default 4)\n"
          "  -s, --scale F      multiply the default ticks per phase by F\n"
          "      --ticks N      ticks per phase (default 2000)\n"
          "      --sessions N   peak sessions per thread (default 1500)\n"
          "      --requests N   requests per tick per thread (default 64)\n"
          "      --seed N       workload seed (default 1)\n"
          "      --info         print the allocator/API detection and exit\n");
}

int main(int argc, char** argv) {
  config_t c = {.threads = 2, .cycles = 4, .ticks = 0, .sessions = 1500, .requests = 64, .seed = 1};
  double scale = 1.0;
  enum { kTicks = 256, kSessions, kRequests, kSeed, kInfo };
  static const struct option opts[] = {{"threads", required_argument, 0, 't'},
                                       {"cycles", required_argument, 0, 'c'},
                                       {"scale", required_argument, 0, 's'},
                                       {"ticks", required_argument, 0, kTicks},
                                       {"sessions", required_argument, 0, kSessions},
                                       {"requests", required_argument, 0, kRequests},
                                       {"seed", required_argument, 0, kSeed},
                                       {"info", no_argument, 0, kInfo},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  int ch;
  while ((ch = getopt_long(argc, argv, "t:c:s:h", opts, NULL)) != -1) {
    switch (ch) {
      case 't': c.threads = (unsigned)bench_parse_u64(optarg, "--threads"); break;
      case 'c': c.cycles = bench_parse_u64(optarg, "--cycles"); break;
      case 's': scale = bench_parse_double(optarg, "--scale"); break;
      case kTicks: c.ticks = bench_parse_u64(optarg, "--ticks"); break;
      case kSessions: c.sessions = bench_parse_u64(optarg, "--sessions"); break;
      case kRequests: c.requests = (unsigned)bench_parse_u64(optarg, "--requests"); break;
      case kSeed: c.seed = bench_parse_u64(optarg, "--seed"); break;
      case kInfo: return bench_info("server_sim");
      case 'h': usage(stdout); return 0;
      default: usage(stderr); return 2;
    }
  }
  if (optind != argc) {
    usage(stderr);
    return 2;
  }
  if (c.ticks == 0) c.ticks = bench_scaled(2000, scale);
  if (c.threads == 0 || c.cycles == 0 || c.sessions < 20) {
    bench_die("need --threads >= 1, --cycles >= 1, --sessions >= 20");
  }

  bench_api_init();
  bench_print_header("server_sim");
  worker_t* w = (worker_t*)calloc(c.threads, sizeof(worker_t));
  pthread_t* tid = (pthread_t*)calloc(c.threads, sizeof(pthread_t));
  if (!w || !tid) bench_die("out of memory");
  pthread_barrier_init(&g_barrier, NULL, c.threads + 1);
  for (unsigned t = 0; t < c.threads; t++) {
    w[t].cfg = &c;
    w[t].index = t;
    w[t].rng.s = c.seed * 0x9e3779b97f4a7c15ull + t;
    if (pthread_create(&tid[t], NULL, worker_main, &w[t]) != 0) bench_die("pthread_create");
  }
  long f0 = bench_minflt_self();
  pthread_barrier_wait(&g_barrier);
  double t0 = bench_now();
  double rss_grown = 0, live_grown = 0, rss_shrunk = 0, live_shrunk = 0;
  printf("%-6s %-7s %10s %10s %8s\n", "cycle", "phase", "live MiB", "RSS MiB", "RSS/live");
  for (uint64_t cycle = 0; cycle < c.cycles; cycle++) {
    for (int phase = 0; phase < 2; phase++) {
      pthread_barrier_wait(&g_barrier);
      double live = (double)total_live(w, c.threads) / 1048576.0;
      double rss = (double)bench_rss_bytes() / 1048576.0;
      printf("%-6llu %-7s %10.1f %10.1f %8.2f\n", (unsigned long long)cycle,
             phase ? "shrunk" : "grown", live, rss, live > 0 ? rss / live : 0.0);
      if (phase == 0) {
        rss_grown = rss;
        live_grown = live;
      } else {
        rss_shrunk = rss;
        live_shrunk = live;
      }
      pthread_barrier_wait(&g_barrier);
    }
  }
  for (unsigned t = 0; t < c.threads; t++) pthread_join(tid[t], NULL);
  double wall = bench_now() - t0;
  long faults = bench_minflt_self() - f0;
  uint64_t allocs = 0, requests = 0;
  for (unsigned t = 0; t < c.threads; t++) {
    allocs += w[t].allocs;
    requests += w[t].requests;
  }
  printf("threads=%u cycles=%llu ticks/phase=%llu sessions/thread=%llu\n", c.threads,
         (unsigned long long)c.cycles, (unsigned long long)c.ticks, (unsigned long long)c.sessions);
  printf(
      "time=%.3f s  %.2f M allocs/s  requests=%llu  faults=%ld  peak RSS=%.1f MiB  "
      "last shrink: RSS %.1f MiB for %.1f MiB live\n",
      wall, (double)allocs / wall / 1e6, (unsigned long long)requests, faults,
      (double)bench_maxrss_kib() / 1024.0, rss_shrunk, live_shrunk);
  char extra[512];
  snprintf(extra, sizeof(extra),
           "threads=%u allocs=%llu mallocs_per_s=%.0f faults=%ld live_grown_mib=%.1f "
           "rss_grown_mib=%.1f live_shrunk_mib=%.1f rss_shrunk_mib=%.1f rss_over_live_shrunk=%.2f",
           c.threads, (unsigned long long)allocs, (double)allocs / wall, faults, live_grown,
           rss_grown, live_shrunk, rss_shrunk, live_shrunk > 0 ? rss_shrunk / live_shrunk : 0.0);
  bench_print_result("server_sim", wall, extra);
  free(w);
  free(tid);
  pthread_barrier_destroy(&g_barrier);
  return 0;
}
