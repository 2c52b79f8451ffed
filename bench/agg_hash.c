/*
 * bench/agg_hash.c - GROUP BY-style aggregation on two-level hash tables,
 * modelled on ClickHouse's TwoLevelHashTable.
 *
 * Each thread aggregates a stream of uint64 keys (count per key) into 256
 * sub-tables selected by the top 8 bits of the key's hash.  A sub-table is an
 * open-addressing (linear probing) array of 16-byte cells that starts at
 * 256 cells = 4 KiB (calloc) and grows by realloc when half full: x4 while
 * small (4 KiB -> 16 KiB -> 64 KiB ...) and x2 once it has 2^23 cells, as
 * ClickHouse's grower does; the cells are re-placed in place after each
 * realloc.  After the build phase the threads merge bucket j of every thread
 * into thread 0's bucket j (buckets dealt round-robin to threads, so most
 * frees cross threads), then free everything.  Rounds repeat with a
 * different key cardinality each time, so table sizes -- and the sizes the
 * allocator must recycle -- change from round to round.
 *
 * Only malloc/calloc/realloc/free are used (as ClickHouse's Allocator does).
 * Reports time, peak RSS, minor faults; --verify checks every key and sum.
 */
#include "common.h"

#include <getopt.h>
#include <pthread.h>
#include <string.h>

enum { kSubTables = 256, kInitialDegree = 8 };

typedef struct {
  uint64_t key; /* 0 = empty cell; key 0 itself is kept aside */
  uint64_t count;
} cell_t;

typedef struct {
  cell_t* cells;
  unsigned degree; /* capacity = 1 << degree */
  size_t used;
  uint64_t zero_count; /* count of key 0 (cannot live in a cell) */
} table_t;

typedef struct {
  unsigned threads;
  uint64_t rounds;
  uint64_t keys;     /* keys inserted per thread per round */
  uint64_t min_card; /* distinct keys per thread per round: log-uniform in [min, max] */
  uint64_t max_card;
  unsigned grow_small; /* degrees added per growth while small (2 = x4) */
  bool merge;
  bool verify;
  uint64_t seed;
} config_t;

typedef struct {
  const config_t* cfg;
  unsigned index;
  table_t* tables; /* [kSubTables], this thread's two-level table */
  uint64_t grows;  /* reallocs done by this thread */
  uint64_t checksum;
  uint64_t distinct;
  long faults;
} worker_t;

static worker_t* g_workers;
static pthread_barrier_t g_barrier;

static inline uint64_t mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

static void table_init(table_t* t) {
  t->degree = kInitialDegree;
  t->used = 0;
  t->zero_count = 0;
  t->cells = (cell_t*)calloc((size_t)1 << t->degree, sizeof(cell_t));
  if (!t->cells) bench_die("calloc failed");
}

static void table_free(table_t* t) {
  free(t->cells);
  t->cells = NULL;
}

/* After growing from old_n to new_n cells, move each cell to where a lookup
 * in the bigger table expects it.  Walking the old range in order and then
 * the run of occupied cells just past it leaves every probe sequence
 * unbroken: a cell only ever moves to the first free slot of its new chain. */
static void table_replace(table_t* t, size_t old_n) {
  size_t mask = ((size_t)1 << t->degree) - 1;
  cell_t* c = t->cells;
  size_t i = 0;
  for (;; i++) {
    if (i >= old_n && (i > mask || c[i].key == 0)) break;
    if (c[i].key == 0) continue;
    size_t p = (size_t)mix64(c[i].key) & mask;
    while (p != i && c[p].key != 0) p = (p + 1) & mask;
    if (p == i) continue;
    c[p] = c[i];
    c[i].key = 0;
    c[i].count = 0;
  }
}

static void table_grow(table_t* t, unsigned grow_small, uint64_t* grows) {
  size_t old_n = (size_t)1 << t->degree;
  t->degree += t->degree >= 23 ? 1 : grow_small;
  size_t new_n = (size_t)1 << t->degree;
  cell_t* c = (cell_t*)realloc(t->cells, new_n * sizeof(cell_t));
  if (!c) bench_die("realloc to %zu bytes failed", new_n * sizeof(cell_t));
  memset(c + old_n, 0, (new_n - old_n) * sizeof(cell_t));
  t->cells = c;
  table_replace(t, old_n);
  (*grows)++;
}

static inline void table_add(table_t* t, uint64_t key, uint64_t hash, uint64_t n,
                             unsigned grow_small, uint64_t* grows) {
  if (key == 0) {
    t->zero_count += n;
    return;
  }
  size_t mask = ((size_t)1 << t->degree) - 1;
  size_t p = (size_t)hash & mask;
  cell_t* c = t->cells;
  while (c[p].key != 0 && c[p].key != key) p = (p + 1) & mask;
  if (c[p].key == key) {
    c[p].count += n;
    return;
  }
  c[p].key = key;
  c[p].count = n;
  if (++t->used * 2 > mask + 1) table_grow(t, grow_small, grows);
}

static bool table_find(const table_t* t, uint64_t key, uint64_t hash) {
  if (key == 0) return t->zero_count != 0;
  size_t mask = ((size_t)1 << t->degree) - 1;
  size_t p = (size_t)hash & mask;
  while (t->cells[p].key != 0) {
    if (t->cells[p].key == key) return true;
    p = (p + 1) & mask;
  }
  return false;
}

/* Key stream of one thread in one round: `keys` draws from `card` distinct
 * values.  The values depend on the round only, so threads share keys and the
 * merge really combines counts. */
typedef struct {
  bench_rng_t rng;
  uint64_t card;
  uint64_t salt;
} stream_t;

/* Distinct keys of one thread in one round, log-uniform in [min, max]: as
 * many small rounds as big ones. */
static uint64_t round_card(const config_t* c, uint64_t round, unsigned thread) {
  bench_rng_t r = {c->seed ^ mix64(round * 7919u + thread + 1)};
  return bench_rand_size(&r, c->min_card, c->max_card);
}

static stream_t stream_open(const config_t* c, uint64_t round, unsigned thread) {
  stream_t s;
  s.rng.s = c->seed ^ mix64(round * 104729u + thread * 31u + 17u);
  s.card = round_card(c, round, thread);
  s.salt = mix64(c->seed + round);
  return s;
}

static inline uint64_t stream_next(stream_t* s) {
  return mix64(bench_rand_below(&s->rng, s->card) ^ s->salt);
}

static void* worker_main(void* arg) {
  worker_t* w = (worker_t*)arg;
  const config_t* c = w->cfg;
  table_t* tables = (table_t*)calloc(kSubTables, sizeof(table_t));
  if (!tables) bench_die("out of memory");
  w->tables = tables;
  long f0 = bench_minflt_thread();
  pthread_barrier_wait(&g_barrier);

  for (uint64_t round = 0; round < c->rounds; round++) {
    for (unsigned j = 0; j < kSubTables; j++) table_init(&tables[j]);
    stream_t s = stream_open(c, round, w->index);
    for (uint64_t k = 0; k < c->keys; k++) {
      uint64_t key = stream_next(&s);
      uint64_t h = mix64(key);
      table_add(&tables[h >> 56], key, h, 1, c->grow_small, &w->grows);
    }
    if (c->verify) {
      stream_t again = stream_open(c, round, w->index);
      for (uint64_t k = 0; k < c->keys; k++) {
        uint64_t key = stream_next(&again);
        uint64_t h = mix64(key);
        if (!table_find(&tables[h >> 56], key, h)) bench_die("lost key after regrowth");
      }
    }
    pthread_barrier_wait(&g_barrier);

    /* Merge: bucket j of every thread into thread 0's bucket j, buckets dealt
     * round-robin, then free it all (mostly memory another thread allocated). */
    for (unsigned j = w->index; j < kSubTables; j += c->threads) {
      table_t* dst = &g_workers[0].tables[j];
      for (unsigned t = 1; t < c->threads && c->merge; t++) {
        table_t* src = &g_workers[t].tables[j];
        size_t n = (size_t)1 << src->degree;
        for (size_t i = 0; i < n; i++) {
          if (src->cells[i].key != 0) {
            uint64_t key = src->cells[i].key;
            table_add(dst, key, mix64(key), src->cells[i].count, c->grow_small, &w->grows);
          }
        }
        if (src->zero_count) dst->zero_count += src->zero_count;
        table_free(src);
      }
      for (unsigned t = 0; t < c->threads; t++) {
        table_t* tb = &g_workers[t].tables[j];
        if (!tb->cells) continue;
        size_t n = (size_t)1 << tb->degree;
        for (size_t i = 0; i < n; i++) {
          if (tb->cells[i].key != 0) {
            w->checksum += tb->cells[i].count;
            w->distinct++;
          }
        }
        w->checksum += tb->zero_count;
        table_free(tb);
      }
    }
    pthread_barrier_wait(&g_barrier);
  }
  w->faults = bench_minflt_thread() - f0;
  return NULL;
}

static void usage(FILE* f) {
  fprintf(f,
          "usage: agg_hash [options]\n"
          "  -t, --threads N    aggregating threads (default 2)\n"
          "  -r, --rounds N     build/merge/destroy rounds (default 40)\n"
          "  -s, --scale F      multiply the default number of rounds by F\n"
          "  -k, --keys N       keys per thread per round (default 1M)\n"
          "      --min-card N   fewest distinct keys per thread-round (default 4k)\n"
          "      --max-card N   most distinct keys per thread-round (default 400k)\n"
          "      --grow 2|4     growth factor of small sub-tables (default 4)\n"
          "      --no-merge     free each thread's tables without merging\n"
          "      --verify       check every key after growth and the final sums\n"
          "      --seed N       workload seed (default 1)\n"
          "      --info         print the allocator/API detection and exit\n");
}

int main(int argc, char** argv) {
  config_t c = {.threads = 2,
                .rounds = 0,
                .keys = 1u << 20,
                .min_card = 4096,
                .max_card = 400000,
                .grow_small = 2,
                .merge = true,
                .verify = false,
                .seed = 1};
  double scale = 1.0;
  enum { kMinCard = 256, kMaxCard, kGrow, kNoMerge, kVerify, kSeed, kInfo };
  static const struct option opts[] = {{"threads", required_argument, 0, 't'},
                                       {"rounds", required_argument, 0, 'r'},
                                       {"scale", required_argument, 0, 's'},
                                       {"keys", required_argument, 0, 'k'},
                                       {"min-card", required_argument, 0, kMinCard},
                                       {"max-card", required_argument, 0, kMaxCard},
                                       {"grow", required_argument, 0, kGrow},
                                       {"no-merge", no_argument, 0, kNoMerge},
                                       {"verify", no_argument, 0, kVerify},
                                       {"seed", required_argument, 0, kSeed},
                                       {"info", no_argument, 0, kInfo},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  int ch;
  while ((ch = getopt_long(argc, argv, "t:r:s:k:h", opts, NULL)) != -1) {
    switch (ch) {
      case 't': c.threads = (unsigned)bench_parse_u64(optarg, "--threads"); break;
      case 'r': c.rounds = bench_parse_u64(optarg, "--rounds"); break;
      case 's': scale = bench_parse_double(optarg, "--scale"); break;
      case 'k': c.keys = bench_parse_u64(optarg, "--keys"); break;
      case kMinCard: c.min_card = bench_parse_u64(optarg, "--min-card"); break;
      case kMaxCard: c.max_card = bench_parse_u64(optarg, "--max-card"); break;
      case kGrow: {
        uint64_t g = bench_parse_u64(optarg, "--grow");
        if (g != 2 && g != 4) bench_die("--grow must be 2 or 4");
        c.grow_small = g == 4 ? 2 : 1;
        break;
      }
      case kNoMerge: c.merge = false; break;
      case kVerify: c.verify = true; break;
      case kSeed: c.seed = bench_parse_u64(optarg, "--seed"); break;
      case kInfo: return bench_info("agg_hash");
      case 'h': usage(stdout); return 0;
      default: usage(stderr); return 2;
    }
  }
  if (optind != argc) {
    usage(stderr);
    return 2;
  }
  if (c.rounds == 0) c.rounds = bench_scaled(40, scale);
  if (c.threads == 0 || c.min_card == 0 || c.max_card < c.min_card) {
    bench_die("need --threads >= 1 and 1 <= --min-card <= --max-card");
  }

  bench_api_init();
  bench_print_header("agg_hash");

  g_workers = (worker_t*)calloc(c.threads, sizeof(worker_t));
  pthread_t* tid = (pthread_t*)calloc(c.threads, sizeof(pthread_t));
  if (!g_workers || !tid) bench_die("out of memory");
  pthread_barrier_init(&g_barrier, NULL, c.threads + 1);
  for (unsigned t = 0; t < c.threads; t++) {
    g_workers[t].cfg = &c;
    g_workers[t].index = t;
    if (pthread_create(&tid[t], NULL, worker_main, &g_workers[t]) != 0) bench_die("pthread_create");
  }
  long f0 = bench_minflt_self();
  pthread_barrier_wait(&g_barrier); /* start */
  double t0 = bench_now();
  double peak_sample = 0;
  for (uint64_t round = 0; round < c.rounds; round++) {
    pthread_barrier_wait(&g_barrier); /* built */
    double rss = (double)bench_rss_bytes();
    if (rss > peak_sample) peak_sample = rss;
    pthread_barrier_wait(&g_barrier); /* merged and freed */
  }
  for (unsigned t = 0; t < c.threads; t++) pthread_join(tid[t], NULL);
  double wall = bench_now() - t0;
  long faults = bench_minflt_self() - f0;

  uint64_t checksum = 0, distinct = 0, grows = 0;
  for (unsigned t = 0; t < c.threads; t++) {
    checksum += g_workers[t].checksum;
    distinct += g_workers[t].distinct;
    grows += g_workers[t].grows;
  }
  uint64_t expect = c.rounds * c.keys * c.threads;
  if (checksum != expect) {
    bench_die("checksum %llu != %llu keys inserted", (unsigned long long)checksum,
              (unsigned long long)expect);
  }
  size_t mapped = 0;
  bool have_mapped = bench_stats_mapped(&mapped);
  printf("threads=%u rounds=%llu keys/thread/round=%llu card=[%llu,%llu] grow=x%u merge=%s\n",
         c.threads, (unsigned long long)c.rounds, (unsigned long long)c.keys,
         (unsigned long long)c.min_card, (unsigned long long)c.max_card,
         c.grow_small == 2 ? 4u : 2u, c.merge ? "yes" : "no");
  printf(
      "time=%.3f s  %.1f Mkeys/s  groups=%llu  reallocs=%llu  faults=%ld  "
      "peak RSS=%.1f MiB  RSS after build (max)=%.1f MiB%s\n",
      wall, (double)expect / wall / 1e6, (unsigned long long)distinct, (unsigned long long)grows,
      faults, (double)bench_maxrss_kib() / 1024.0, peak_sample / 1048576.0,
      c.verify ? "  verified" : "");
  char extra[512];
  snprintf(extra, sizeof(extra),
           "threads=%u rounds=%llu mkeys_per_s=%.2f groups=%llu reallocs=%llu faults=%ld "
           "rss_built_max_mib=%.1f mapped_end_mib=%.1f",
           c.threads, (unsigned long long)c.rounds, (double)expect / wall / 1e6,
           (unsigned long long)distinct, (unsigned long long)grows, faults, peak_sample / 1048576.0,
           have_mapped ? (double)mapped / 1048576.0 : 0.0);
  bench_print_result("agg_hash", wall, extra);
  free(g_workers);
  free(tid);
  pthread_barrier_destroy(&g_barrier);
  return 0;
}
