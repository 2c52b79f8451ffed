/*
 * bench/xthread.c - cross-thread stress: blocks allocated in one thread are
 * freed in another, through a shared transfer array.
 *
 * N threads (--threads, default 16) loop: allocate a block of a log-uniform
 * size in [--min-size, --max-size] (default 8 B .. 4 MiB: most blocks are
 * small, most bytes are in the large ones), write its size into its first
 * word and one byte into every page, swap it with atomic_exchange into a
 * random slot of a shared array of --slots pointers (default 256), and free
 * whatever came out (NULL while the array fills).  With N threads the block
 * that comes out was put there by another thread N-1 times in N, so most
 * frees are remote.  The live heap settles at about slots x the mean size
 * (about 630 KiB with the defaults: ~160 MiB).
 *
 * Run length: --ops N operations in all (split evenly over the threads; the
 * fixed amount of work that makes runs comparable across allocators, and
 * what bench/compare.py asks for), or --seconds S (default 30 when --ops is
 * not given).  The report gives the elapsed time either way.
 *
 * At the end (before the array is drained) it prints peak RSS and minor
 * faults from getrusage, the live bytes left in the array and, when the
 * allocator answers mallctl, its statistics: stats.allocated / active /
 * resident / mapped / retained / metadata and the dirty, muzzy and
 * thread-cache bytes of all arenas together.  With --stats-ms MS the main
 * thread also samples the resident size every MS milliseconds while the
 * workers run and takes the same mallctl snapshot each time the resident
 * size reaches a new high, so the figures at the peak can be compared with
 * the peak itself (main does not allocate while it samples).
 *
 * RESULT keys: threads, slots, ops, ops_per_s, faults, peak_rss_mib,
 * live_end_mib, rss_drained_mib and, with mallctl, resident_end_mib,
 * active_end_mib, dirty_end_mib, tcache_end_mib (and *_peak_mib with
 * --stats-ms).
 */
#include "common.h"

#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

enum { kPage = 4096, kStopCheck = 64 };
/* How much of each block is written: one byte per page, every byte, or the header only. */
enum { kWritePages, kWriteAll, kWriteHeader };
static const char* const kWriteNames[] = {"pages", "all", "header"};
/* The merged view of all arenas in the stats.arenas.<i> namespace. */
#define ARENAS_ALL "4096"

typedef struct {
  unsigned threads;
  size_t slots;
  size_t min_size, max_size;
  uint64_t ops; /* total; 0 = run for `seconds` */
  double seconds;
  unsigned stats_ms; /* 0 = no sampling during the run */
  int write;         /* kWritePages, kWriteAll or kWriteHeader */
  uint64_t seed;
} config_t;

static config_t g_cfg;
static _Atomic(void*)* g_slots;
static atomic_bool g_stop;
static atomic_uint g_running;
static atomic_uint_fast64_t g_ops_done, g_remote, g_checksum;

/* A thread's blocks carry its index in the second word (when there is room)
 * so that the remote-free share can be counted. */
typedef struct {
  size_t size;
  size_t owner;
} block_header_t;

static void put_header(char* p, size_t size, unsigned owner) {
  memcpy(p, &size, sizeof(size));
  if (size >= sizeof(block_header_t)) {
    size_t o = owner;
    memcpy(p + sizeof(size_t), &o, sizeof(o));
  }
}

/* After the header: one write per page (enough to make every page resident), every byte, or
 * nothing but the last byte. */
static void touch(char* p, size_t size, int write) {
  size_t h = sizeof(block_header_t);
  if (write == kWriteAll && size > h) {
    memset(p + h, (int)(size & 0x7f), size - h);
  } else if (write == kWritePages) {
    for (size_t i = kPage; i < size; i += kPage) p[i] = (char)i;
  }
  /* The last byte, unless it is the owner word's (a 16-byte block). */
  if (size > sizeof(size_t) && size != h) p[size - 1] = 1;
}

static void* worker_main(void* arg) {
  unsigned index = (unsigned)(uintptr_t)arg;
  const config_t* c = &g_cfg;
  bench_rng_t rng = {c->seed * 0x9e3779b97f4a7c15ull + 977u * (index + 1)};
  uint64_t quota = c->ops ? c->ops / c->threads + (index < c->ops % c->threads) : UINT64_MAX;
  uint64_t done = 0, remote = 0, sum = 0;
  while (done < quota) {
    if (!c->ops && done % kStopCheck == 0 && atomic_load_explicit(&g_stop, memory_order_relaxed)) {
      break;
    }
    size_t size = bench_rand_size(&rng, c->min_size, c->max_size);
    char* p = (char*)malloc(size);
    if (!p) bench_die("malloc(%zu) failed", size);
    put_header(p, size, index);
    touch(p, size, c->write);
    size_t slot = (size_t)bench_rand_below(&rng, c->slots);
    char* q = (char*)atomic_exchange_explicit(&g_slots[slot], p, memory_order_acq_rel);
    if (q) {
      size_t qsize;
      memcpy(&qsize, q, sizeof(qsize));
      if (qsize < c->min_size || qsize > c->max_size) bench_die("corrupt block header");
      if (qsize >= sizeof(block_header_t)) {
        size_t owner;
        memcpy(&owner, q + sizeof(size_t), sizeof(owner));
        remote += owner != index;
      }
      sum += (unsigned char)q[qsize - 1];
      free(q);
    }
    done++;
  }
  atomic_fetch_add(&g_ops_done, done);
  atomic_fetch_add(&g_remote, remote);
  atomic_fetch_add(&g_checksum, sum);
  atomic_fetch_sub(&g_running, 1);
  return NULL;
}

/* What mallctl says about the heap; `ok` false when the allocator has no mallctl. */
typedef struct {
  bool ok;
  size_t allocated, active, resident, mapped, retained, metadata;
  size_t dirty, muzzy, tcache; /* bytes, all arenas */
  unsigned narenas;
  size_t rss; /* /proc/self/statm at the same moment */
} heap_stats_t;

static heap_stats_t read_heap_stats(void) {
  heap_stats_t s;
  memset(&s, 0, sizeof(s));
  s.rss = bench_rss_bytes();
  uint64_t epoch = 1;
  if (!bench_ctl_write("epoch", &epoch, sizeof(epoch))) return s;
  s.ok = bench_ctl_read("stats.allocated", &s.allocated, sizeof(size_t)) &&
         bench_ctl_read("stats.active", &s.active, sizeof(size_t)) &&
         bench_ctl_read("stats.resident", &s.resident, sizeof(size_t)) &&
         bench_ctl_read("stats.mapped", &s.mapped, sizeof(size_t));
  bench_ctl_read("stats.retained", &s.retained, sizeof(size_t));
  bench_ctl_read("stats.metadata", &s.metadata, sizeof(size_t));
  bench_ctl_read("arenas.narenas", &s.narenas, sizeof(unsigned));
  size_t page = kPage, pdirty = 0, pmuzzy = 0;
  bench_ctl_read("arenas.page", &page, sizeof(page));
  if (bench_ctl_read("stats.arenas." ARENAS_ALL ".pdirty", &pdirty, sizeof(pdirty))) {
    s.dirty = pdirty * page;
  }
  if (bench_ctl_read("stats.arenas." ARENAS_ALL ".pmuzzy", &pmuzzy, sizeof(pmuzzy))) {
    s.muzzy = pmuzzy * page;
  }
  bench_ctl_read("stats.arenas." ARENAS_ALL ".tcache_bytes", &s.tcache, sizeof(size_t));
  return s;
}

static double mib(size_t b) { return (double)b / 1048576.0; }

static void print_heap_stats(const char* when, const heap_stats_t* s) {
  if (!s->ok) return;
  printf(
      "mallctl %s: rss=%.1f resident=%.1f active=%.1f allocated=%.1f mapped=%.1f "
      "retained=%.1f metadata=%.1f dirty=%.1f muzzy=%.1f tcache=%.1f MiB narenas=%u\n",
      when, mib(s->rss), mib(s->resident), mib(s->active), mib(s->allocated), mib(s->mapped),
      mib(s->retained), mib(s->metadata), mib(s->dirty), mib(s->muzzy), mib(s->tcache), s->narenas);
}

/* Per-arena dirty pages and thread-cache bytes, for the arenas that have any. */
static void print_arena_stats(void) {
  unsigned n = 0;
  size_t page = kPage;
  if (!bench_ctl_read("arenas.narenas", &n, sizeof(n))) return;
  bench_ctl_read("arenas.page", &page, sizeof(page));
  for (unsigned i = 0; i < n; i++) {
    char name[96];
    size_t pactive = 0, pdirty = 0, tc = 0, resident = 0;
    unsigned nthreads = 0;
    snprintf(name, sizeof(name), "stats.arenas.%u.pactive", i);
    if (!bench_ctl_read(name, &pactive, sizeof(pactive))) continue;
    snprintf(name, sizeof(name), "stats.arenas.%u.pdirty", i);
    bench_ctl_read(name, &pdirty, sizeof(pdirty));
    snprintf(name, sizeof(name), "stats.arenas.%u.tcache_bytes", i);
    bench_ctl_read(name, &tc, sizeof(tc));
    snprintf(name, sizeof(name), "stats.arenas.%u.resident", i);
    bench_ctl_read(name, &resident, sizeof(resident));
    snprintf(name, sizeof(name), "stats.arenas.%u.nthreads", i);
    bench_ctl_read(name, &nthreads, sizeof(nthreads));
    if (pactive == 0 && pdirty == 0 && tc == 0) continue;
    printf("  arena %u: threads=%u active=%.1f dirty=%.1f tcache=%.1f resident=%.1f MiB\n", i,
           nthreads, mib(pactive * page), mib(pdirty * page), mib(tc), mib(resident));
  }
}

static void usage(FILE* f) {
  fprintf(f,
          "usage: xthread [options]\n"
          "  -t, --threads N     worker threads (default 16)\n"
          "  -n, --slots N       slots of the shared transfer array (default 256)\n"
          "  -o, --ops N         operations in all, split over the threads (fixed work)\n"
          "  -d, --seconds S     run for S seconds instead (default 30 when --ops is not given)\n"
          "  -s, --scale F       multiply --ops (default 400k with --scale) by F\n"
          "      --min-size N    smallest block (default 8)\n"
          "      --max-size N    largest block (default 4m)\n"
          "      --write W       pages (one byte per page, default), all (memset) or header\n"
          "      --stats-ms MS   sample RSS every MS ms; mallctl snapshot at each new high\n"
          "      --arenas        per-arena dirty/tcache figures at the end (mallctl)\n"
          "      --seed N        workload seed (default 1)\n"
          "      --info          print the allocator/API detection and exit\n");
}

int main(int argc, char** argv) {
  config_t c = {.threads = 16,
                .slots = 256,
                .min_size = 8,
                .max_size = (size_t)4 << 20,
                .ops = 0,
                .seconds = 0,
                .stats_ms = 0,
                .seed = 1};
  double scale = 0;
  bool arenas = false;
  enum { kMin = 256, kMax, kWrite, kStatsMs, kArenas, kSeed, kInfo };
  static const struct option opts[] = {{"threads", required_argument, 0, 't'},
                                       {"slots", required_argument, 0, 'n'},
                                       {"ops", required_argument, 0, 'o'},
                                       {"seconds", required_argument, 0, 'd'},
                                       {"scale", required_argument, 0, 's'},
                                       {"min-size", required_argument, 0, kMin},
                                       {"max-size", required_argument, 0, kMax},
                                       {"write", required_argument, 0, kWrite},
                                       {"stats-ms", required_argument, 0, kStatsMs},
                                       {"arenas", no_argument, 0, kArenas},
                                       {"seed", required_argument, 0, kSeed},
                                       {"info", no_argument, 0, kInfo},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  int ch;
  while ((ch = getopt_long(argc, argv, "t:n:o:d:s:h", opts, NULL)) != -1) {
    switch (ch) {
      case 't': c.threads = (unsigned)bench_parse_u64(optarg, "--threads"); break;
      case 'n': c.slots = bench_parse_u64(optarg, "--slots"); break;
      case 'o': c.ops = bench_parse_u64(optarg, "--ops"); break;
      case 'd': c.seconds = bench_parse_double(optarg, "--seconds"); break;
      case 's': scale = bench_parse_double(optarg, "--scale"); break;
      case kMin: c.min_size = bench_parse_u64(optarg, "--min-size"); break;
      case kMax: c.max_size = bench_parse_u64(optarg, "--max-size"); break;
      case kWrite:
        c.write = -1;
        for (int w = 0; w < 3; w++) {
          if (strcmp(optarg, kWriteNames[w]) == 0) c.write = w;
        }
        if (c.write < 0) bench_die("--write wants pages, all or header, not '%s'", optarg);
        break;
      case kStatsMs: c.stats_ms = (unsigned)bench_parse_u64(optarg, "--stats-ms"); break;
      case kArenas: arenas = true; break;
      case kSeed: c.seed = bench_parse_u64(optarg, "--seed"); break;
      case kInfo: return bench_info("xthread");
      case 'h': usage(stdout); return 0;
      default: usage(stderr); return 2;
    }
  }
  if (optind != argc) {
    usage(stderr);
    return 2;
  }
  /* --scale multiplies --ops, or 400k when --ops is not given. */
  if (scale > 0) c.ops = bench_scaled(c.ops ? c.ops : 400000, scale);
  if (c.ops == 0 && c.seconds == 0) c.seconds = 30;
  if (c.ops && c.seconds) bench_die("give --ops or --seconds, not both");
  if (c.threads == 0 || c.slots == 0) bench_die("need --threads >= 1 and --slots >= 1");
  if (c.min_size < sizeof(size_t) || c.max_size < c.min_size) {
    bench_die("need %zu <= --min-size <= --max-size", sizeof(size_t));
  }
  g_cfg = c;

  bench_api_init();
  bench_print_header("xthread");
  g_slots = (_Atomic(void*)*)calloc(c.slots, sizeof(*g_slots));
  pthread_t* tid = (pthread_t*)calloc(c.threads, sizeof(pthread_t));
  if (!g_slots || !tid) bench_die("out of memory");
  for (size_t i = 0; i < c.slots; i++) atomic_init(&g_slots[i], NULL);
  atomic_store(&g_running, c.threads);

  heap_stats_t at_peak;
  memset(&at_peak, 0, sizeof(at_peak));
  long f0 = bench_minflt_self();
  double t0 = bench_now();
  for (unsigned i = 0; i < c.threads; i++) {
    if (pthread_create(&tid[i], NULL, worker_main, (void*)(uintptr_t)i) != 0) {
      bench_die("pthread_create");
    }
  }
  /* Main waits (and samples) until the deadline or until every worker is done. */
  unsigned tick_ms = c.stats_ms ? c.stats_ms : 50;
  while (atomic_load(&g_running) > 0) {
    if (c.seconds && bench_now() - t0 >= c.seconds) break;
    struct timespec ts = {(time_t)(tick_ms / 1000), (long)(tick_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    if (c.stats_ms && bench_rss_bytes() > at_peak.rss) at_peak = read_heap_stats();
  }
  atomic_store(&g_stop, true);
  for (unsigned i = 0; i < c.threads; i++) pthread_join(tid[i], NULL);
  double wall = bench_now() - t0;
  long faults = bench_minflt_self() - f0;
  long peak_kib = bench_maxrss_kib();
  uint64_t ops = atomic_load(&g_ops_done);

  size_t live = 0, nlive = 0;
  for (size_t i = 0; i < c.slots; i++) {
    void* p = atomic_load(&g_slots[i]);
    if (p) {
      size_t size;
      memcpy(&size, p, sizeof(size));
      live += size;
      nlive++;
    }
  }
  heap_stats_t at_end = read_heap_stats();

  printf("threads=%u slots=%zu sizes=%zu..%zu write=%s ops=%llu remote=%.1f%%\n", c.threads,
         c.slots, c.min_size, c.max_size, kWriteNames[c.write], (unsigned long long)ops,
         ops ? 100.0 * (double)atomic_load(&g_remote) / (double)ops : 0.0);
  printf(
      "time=%.3f s  %.0f ops/s  faults=%ld  peak RSS=%.1f MiB  live at end=%.1f MiB in %zu "
      "blocks\n",
      wall, (double)ops / wall, faults, (double)peak_kib / 1024.0, mib(live), nlive);
  if (c.stats_ms) print_heap_stats("at the highest sample", &at_peak);
  print_heap_stats("at the end", &at_end);
  if (arenas) print_arena_stats();

  for (size_t i = 0; i < c.slots; i++) free(atomic_exchange(&g_slots[i], NULL));
  double rss_drained = mib(bench_rss_bytes());

  char extra[768];
  int n = snprintf(extra, sizeof(extra),
                   "threads=%u slots=%zu ops=%llu ops_per_s=%.0f faults=%ld peak_rss_mib=%.1f "
                   "live_end_mib=%.1f rss_drained_mib=%.1f",
                   c.threads, c.slots, (unsigned long long)ops, (double)ops / wall, faults,
                   (double)peak_kib / 1024.0, mib(live), rss_drained);
  if (at_end.ok && n > 0 && (size_t)n < sizeof(extra)) {
    n += snprintf(extra + n, sizeof(extra) - (size_t)n,
                  " resident_end_mib=%.1f active_end_mib=%.1f dirty_end_mib=%.1f "
                  "tcache_end_mib=%.1f",
                  mib(at_end.resident), mib(at_end.active), mib(at_end.dirty), mib(at_end.tcache));
  }
  if (at_peak.ok && n > 0 && (size_t)n < sizeof(extra)) {
    snprintf(extra + n, sizeof(extra) - (size_t)n,
             " rss_peak_sample_mib=%.1f resident_peak_mib=%.1f active_peak_mib=%.1f "
             "dirty_peak_mib=%.1f tcache_peak_mib=%.1f",
             mib(at_peak.rss), mib(at_peak.resident), mib(at_peak.active), mib(at_peak.dirty),
             mib(at_peak.tcache));
  }
  bench_print_result("xthread", wall, extra);
  if (atomic_load(&g_checksum) == 42) printf("#\n"); /* keep the reads */
  free(g_slots);
  free(tid);
  return 0;
}
