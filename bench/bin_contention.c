/*
 * bench/bin_contention.c - many threads on one arena's small bins: the case
 * `bin_shards` exists for.
 *
 * Each thread repeatedly allocates a burst of small blocks and frees them
 * again.  With --no-tcache (the default) every call bypasses the thread cache
 * (MALLOCX_TCACHE_NONE), so each one takes the lock of the class's bin: with
 * `narenas:1` all threads meet on the same lock, with `bin_shards` they spread
 * over several.  --tcache runs the same loop through malloc/free, where only
 * cache fills and flushes reach the bin.  Run it under different MALLOC_CONF
 * values (bench/bin_shards.sh does the comparison):
 *
 *   MALLOC_CONF=narenas:1                       bin_contention -t 8
 *   MALLOC_CONF=narenas:1,bin_shards:1-4096:8   bin_contention -t 8
 *
 * Reports operations (allocation + free) per second, and the bin mutex's wait
 * count and total wait time for the class (stats.arenas.0.bins.<j>.mutex.*,
 * summed over shards), so the effect on the lock is visible directly.
 */
#include "common.h"

#include <getopt.h>
#include <pthread.h>
#include <string.h>

typedef struct {
  unsigned threads;
  size_t size;
  unsigned burst;
  uint64_t rounds;
  bool tcache;
} config_t;

static config_t g_cfg;
static pthread_barrier_t g_start;

static void* worker(void* arg) {
  (void)arg;
  void** blocks = (void**)malloc(g_cfg.burst * sizeof(void*));
  if (blocks == NULL) bench_die("out of memory");
  const int flags = g_cfg.tcache ? 0 : BENCH_MALLOCX_TCACHE_NONE;
  pthread_barrier_wait(&g_start);
  for (uint64_t r = 0; r < g_cfg.rounds; r++) {
    for (unsigned i = 0; i < g_cfg.burst; i++) {
      void* p = g_cfg.tcache ? malloc(g_cfg.size) : bench_mallocx(g_cfg.size, flags);
      if (p == NULL) bench_die("allocation failed");
      *(volatile char*)p = (char)i;
      blocks[i] = p;
    }
    for (unsigned i = 0; i < g_cfg.burst; i++) {
      if (g_cfg.tcache) {
        free(blocks[i]);
      } else {
        bench_dallocx(blocks[i], flags);
      }
    }
  }
  free(blocks);
  return NULL;
}

/* Sum of a bin mutex counter over the merged arenas view (4096 = all arenas). */
static uint64_t bin_mutex_stat(unsigned bin, const char* leaf) {
  uint64_t epoch = 1, v = 0;
  bench_ctl_write("epoch", &epoch, sizeof(epoch));
  char name[128];
  snprintf(name, sizeof(name), "stats.arenas.4096.bins.%u.mutex.%s", bin, leaf);
  if (!bench_ctl_read(name, &v, sizeof(v))) return 0;
  return v;
}

/* The small bin serving `size`, or -1 (not jemalloc, or not small). */
static int bin_of(size_t size) {
  unsigned nbins = 0;
  if (!bench_ctl_read("arenas.nbins", &nbins, sizeof(nbins))) return -1;
  for (unsigned j = 0; j < nbins; j++) {
    char name[64];
    size_t s = 0;
    snprintf(name, sizeof(name), "arenas.bin.%u.size", j);
    if (bench_ctl_read(name, &s, sizeof(s)) && s >= size) return (int)j;
  }
  return -1;
}

static void usage(FILE* f) {
  fprintf(f,
          "usage: bin_contention [options]\n"
          "  -t, --threads N   threads (default: CPUs)\n"
          "  -z, --size B      block size (default 64)\n"
          "  -b, --burst N     blocks allocated before freeing them (default 64)\n"
          "  -r, --rounds N    bursts per thread (default 20000 x --scale)\n"
          "  -s, --scale X     scale the default run length\n"
          "      --tcache      malloc/free through the thread cache\n"
          "      --no-tcache   mallocx/dallocx with MALLOCX_TCACHE_NONE (default)\n"
          "      --info        print the allocator/API detection and exit\n");
}

int main(int argc, char** argv) {
  config_t c = {.threads = 0, .size = 64, .burst = 64, .rounds = 0, .tcache = false};
  double scale = 1.0;
  enum { kTcache = 256, kNoTcache, kInfo };
  static const struct option opts[] = {{"threads", required_argument, 0, 't'},
                                       {"size", required_argument, 0, 'z'},
                                       {"burst", required_argument, 0, 'b'},
                                       {"rounds", required_argument, 0, 'r'},
                                       {"scale", required_argument, 0, 's'},
                                       {"tcache", no_argument, 0, kTcache},
                                       {"no-tcache", no_argument, 0, kNoTcache},
                                       {"info", no_argument, 0, kInfo},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  int ch;
  while ((ch = getopt_long(argc, argv, "t:z:b:r:s:h", opts, NULL)) != -1) {
    switch (ch) {
      case 't': c.threads = (unsigned)bench_parse_u64(optarg, "--threads"); break;
      case 'z': c.size = bench_parse_u64(optarg, "--size"); break;
      case 'b': c.burst = (unsigned)bench_parse_u64(optarg, "--burst"); break;
      case 'r': c.rounds = bench_parse_u64(optarg, "--rounds"); break;
      case 's': scale = bench_parse_double(optarg, "--scale"); break;
      case kTcache: c.tcache = true; break;
      case kNoTcache: c.tcache = false; break;
      case kInfo: return bench_info("bin_contention");
      case 'h': usage(stdout); return 0;
      default: usage(stderr); return 2;
    }
  }
  if (optind != argc) {
    usage(stderr);
    return 2;
  }
  if (c.threads == 0) c.threads = bench_ncpus();
  if (c.rounds == 0) c.rounds = bench_scaled(20000, scale);
  if (c.size == 0 || c.burst == 0) bench_die("--size and --burst must be positive");
  g_cfg = c;

  bench_api_init();
  bench_print_header("bin_contention");
  const int bin = bin_of(c.size);
  const uint64_t waits0 = bin >= 0 ? bin_mutex_stat((unsigned)bin, "num_wait") : 0;
  const uint64_t wait_ns0 = bin >= 0 ? bin_mutex_stat((unsigned)bin, "total_wait_time") : 0;
  pthread_t* tid = (pthread_t*)calloc(c.threads, sizeof(pthread_t));
  if (tid == NULL) bench_die("out of memory");
  pthread_barrier_init(&g_start, NULL, c.threads + 1);
  for (unsigned i = 0; i < c.threads; i++) {
    if (pthread_create(&tid[i], NULL, worker, NULL) != 0) bench_die("pthread_create");
  }
  double t0 = bench_now();
  pthread_barrier_wait(&g_start);
  for (unsigned i = 0; i < c.threads; i++) pthread_join(tid[i], NULL);
  double wall = bench_now() - t0;
  const uint64_t ops = (uint64_t)c.threads * c.rounds * c.burst;
  const uint64_t waits = bin >= 0 ? bin_mutex_stat((unsigned)bin, "num_wait") - waits0 : 0;
  const uint64_t wait_ns =
      bin >= 0 ? bin_mutex_stat((unsigned)bin, "total_wait_time") - wait_ns0 : 0;
  unsigned nshards = 0;
  if (bin >= 0) {
    char name[64];
    snprintf(name, sizeof(name), "arenas.bin.%d.nshards", bin);
    bench_ctl_read(name, &nshards, sizeof(nshards));
  }
  printf("threads=%u size=%zu burst=%u rounds=%llu %s bin=%d nshards=%u\n", c.threads, c.size,
         c.burst, (unsigned long long)c.rounds, c.tcache ? "tcache" : "no-tcache", bin, nshards);
  printf("time=%.3f s  %.2f M ops/s  bin mutex waits=%llu wait=%.3f s\n", wall,
         (double)ops / wall / 1e6, (unsigned long long)waits, (double)wait_ns / 1e9);
  char extra[256];
  snprintf(extra, sizeof(extra),
           "threads=%u ops_per_s=%.0f nshards=%u mutex_waits=%llu "
           "mutex_wait_s=%.3f",
           c.threads, (double)ops / wall, nshards, (unsigned long long)waits,
           (double)wait_ns / 1e9);
  bench_print_result("bin_contention", wall, extra);
  free(tid);
  return 0;
}
