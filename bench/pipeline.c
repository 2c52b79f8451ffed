/*
 * bench/pipeline.c - a three-stage producer/consumer pipeline across
 * threads: memory is allocated in one thread, resized in a second and freed
 * in a third, in bursts.
 *
 *   producers --(queue A)--> transformers --(queue B)--> consumers
 *
 * Producers allocate messages (70 % 32 B..512 B, 25 % 512 B..16 KiB, 5 %
 * 16 KiB..256 KiB), write a header and touch every page, and hand them on in
 * batches of 32 (the batch record is itself malloc'd).  Transformers realloc
 * half of the messages to 0.5x..2x their size and touch the new pages.
 * Consumers check the header, read every page and free the messages and the
 * batch.  Consumers stall now and then (--stall-every/--stall-ms), so the
 * bounded queues fill up and drain: the heap swings between nearly empty and
 * ~two full queues' worth.
 *
 * Reports time, messages/s, peak RSS, minor faults and RSS after the drain.
 */
#include "common.h"

#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

enum { kBatch = 32, kPage = 4096 };

typedef struct {
  uint64_t id;
  uint32_t size;
  uint32_t producer;
} msg_header_t;

typedef struct {
  unsigned n;
  void* msg[kBatch];
} batch_t;

typedef struct {
  pthread_mutex_t lock;
  pthread_cond_t not_empty, not_full;
  batch_t** ring;
  size_t cap, head, count, max_count;
} queue_t;

typedef struct {
  unsigned producers, transformers, consumers;
  uint64_t messages;
  size_t queue_batches;
  uint64_t stall_every; /* batches between consumer stalls (0 = never) */
  unsigned stall_ms;
  uint64_t seed;
} config_t;

static config_t g_cfg;
static queue_t g_qa, g_qb;
static atomic_uint g_producers_left, g_transformers_left;
static atomic_uint_fast64_t g_consumed, g_checksum, g_reallocs;

static void queue_init(queue_t* q, size_t cap) {
  pthread_mutex_init(&q->lock, NULL);
  pthread_cond_init(&q->not_empty, NULL);
  pthread_cond_init(&q->not_full, NULL);
  q->ring = (batch_t**)calloc(cap, sizeof(batch_t*));
  if (!q->ring) bench_die("out of memory");
  q->cap = cap;
  q->head = q->count = q->max_count = 0;
}

static void queue_destroy(queue_t* q) {
  free(q->ring);
  pthread_mutex_destroy(&q->lock);
  pthread_cond_destroy(&q->not_empty);
  pthread_cond_destroy(&q->not_full);
}

/* NULL is the end-of-stream marker: one per reader. */
static void queue_push(queue_t* q, batch_t* b) {
  pthread_mutex_lock(&q->lock);
  while (q->count == q->cap) pthread_cond_wait(&q->not_full, &q->lock);
  q->ring[(q->head + q->count) % q->cap] = b;
  q->count++;
  if (q->count > q->max_count) q->max_count = q->count;
  pthread_cond_signal(&q->not_empty);
  pthread_mutex_unlock(&q->lock);
}

static batch_t* queue_pop(queue_t* q) {
  pthread_mutex_lock(&q->lock);
  while (q->count == 0) pthread_cond_wait(&q->not_empty, &q->lock);
  batch_t* b = q->ring[q->head];
  q->head = (q->head + 1) % q->cap;
  q->count--;
  pthread_cond_signal(&q->not_full);
  pthread_mutex_unlock(&q->lock);
  return b;
}

static size_t message_size(bench_rng_t* r) {
  uint64_t k = bench_rand_below(r, 100);
  if (k < 70) return bench_rand_size(r, 32, 512);
  if (k < 95) return bench_rand_size(r, 512, 16384);
  return bench_rand_size(r, 16384, 262144);
}

/* Write one byte in every page from `from` on: enough to fault them all in. */
static void touch(char* p, size_t from, size_t size) {
  for (size_t i = from; i < size; i += kPage) p[i] = (char)i;
  if (size > from) p[size - 1] = 1;
}

static void* producer_main(void* arg) {
  unsigned index = (unsigned)(uintptr_t)arg;
  const config_t* c = &g_cfg;
  bench_rng_t rng = {c->seed * 0x9e3779b97f4a7c15ull + 101u * index};
  uint64_t n = c->messages / c->producers + (index < c->messages % c->producers);
  uint64_t id = (uint64_t)index << 40;
  while (n > 0) {
    batch_t* b = (batch_t*)malloc(sizeof(batch_t));
    if (!b) bench_die("out of memory");
    b->n = n < kBatch ? (unsigned)n : kBatch;
    for (unsigned i = 0; i < b->n; i++) {
      size_t size = message_size(&rng);
      char* m = (char*)malloc(size);
      if (!m) bench_die("malloc(%zu) failed", size);
      msg_header_t h = {id++, (uint32_t)size, index};
      memcpy(m, &h, sizeof(h));
      touch(m, sizeof(h), size);
      b->msg[i] = m;
    }
    n -= b->n;
    queue_push(&g_qa, b);
  }
  if (atomic_fetch_sub(&g_producers_left, 1) == 1) {
    for (unsigned t = 0; t < c->transformers; t++) queue_push(&g_qa, NULL);
  }
  return NULL;
}

static void* transformer_main(void* arg) {
  unsigned index = (unsigned)(uintptr_t)arg;
  const config_t* c = &g_cfg;
  bench_rng_t rng = {c->seed * 0xbf58476d1ce4e5b9ull + 7u * index};
  uint64_t reallocs = 0;
  batch_t* b;
  while ((b = queue_pop(&g_qa)) != NULL) {
    for (unsigned i = 0; i < b->n; i++) {
      if (bench_rand_below(&rng, 2)) continue;
      msg_header_t h;
      memcpy(&h, b->msg[i], sizeof(h));
      size_t size = h.size;
      size_t lo = size / 2 > sizeof(h) ? size / 2 : sizeof(h);
      size_t nsize = bench_rand_size(&rng, lo, size * 2);
      char* m = (char*)realloc(b->msg[i], nsize);
      if (!m) bench_die("realloc(%zu) failed", nsize);
      h.size = (uint32_t)nsize;
      memcpy(m, &h, sizeof(h));
      if (nsize > size) touch(m, size, nsize);
      b->msg[i] = m;
      reallocs++;
    }
    queue_push(&g_qb, b);
  }
  atomic_fetch_add(&g_reallocs, reallocs);
  if (atomic_fetch_sub(&g_transformers_left, 1) == 1) {
    for (unsigned t = 0; t < c->consumers; t++) queue_push(&g_qb, NULL);
  }
  return NULL;
}

static void* consumer_main(void* arg) {
  (void)arg;
  const config_t* c = &g_cfg;
  uint64_t consumed = 0, sum = 0, batches = 0;
  batch_t* b;
  while ((b = queue_pop(&g_qb)) != NULL) {
    for (unsigned i = 0; i < b->n; i++) {
      const char* m = (const char*)b->msg[i];
      msg_header_t h;
      memcpy(&h, m, sizeof(h));
      if (h.size < sizeof(h)) bench_die("corrupt message header");
      for (size_t k = 0; k < h.size; k += kPage) sum += (unsigned char)m[k];
      sum += (unsigned char)m[h.size - 1];
      free(b->msg[i]);
    }
    consumed += b->n;
    free(b);
    if (c->stall_every && ++batches % c->stall_every == 0) {
      struct timespec ts = {0, (long)c->stall_ms * 1000000L};
      nanosleep(&ts, NULL);
    }
  }
  atomic_fetch_add(&g_consumed, consumed);
  atomic_fetch_add(&g_checksum, sum);
  return NULL;
}

static void usage(FILE* f) {
  fprintf(f,
          "usage: pipeline [options]\n"
          "  -m, --messages N     messages in total (default 2M)\n"
          "  -s, --scale F        multiply the default message count by F\n"
          "  -p, --producers N    producer threads (default 2)\n"
          "  -x, --transformers N realloc stage threads (default 1)\n"
          "  -c, --consumers N    consumer threads (default 2)\n"
          "      --queue N        capacity of each queue in batches of 32 (default 256)\n"
          "      --stall-every N  consumer sleeps after every N batches (default 1000, 0 = never)\n"
          "      --stall-ms N     length of that sleep (default 20)\n"
          "      --seed N         workload seed (default 1)\n"
          "      --info           print the allocator/API detection and exit\n");
}

int main(int argc, char** argv) {
  config_t c = {.producers = 2,
                .transformers = 1,
                .consumers = 2,
                .messages = 0,
                .queue_batches = 256,
                .stall_every = 1000,
                .stall_ms = 20,
                .seed = 1};
  double scale = 1.0;
  enum { kQueue = 256, kStallEvery, kStallMs, kSeed, kInfo };
  static const struct option opts[] = {{"messages", required_argument, 0, 'm'},
                                       {"scale", required_argument, 0, 's'},
                                       {"producers", required_argument, 0, 'p'},
                                       {"transformers", required_argument, 0, 'x'},
                                       {"consumers", required_argument, 0, 'c'},
                                       {"queue", required_argument, 0, kQueue},
                                       {"stall-every", required_argument, 0, kStallEvery},
                                       {"stall-ms", required_argument, 0, kStallMs},
                                       {"seed", required_argument, 0, kSeed},
                                       {"info", no_argument, 0, kInfo},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  int ch;
  while ((ch = getopt_long(argc, argv, "m:s:p:x:c:h", opts, NULL)) != -1) {
    switch (ch) {
      case 'm': c.messages = bench_parse_u64(optarg, "--messages"); break;
      case 's': scale = bench_parse_double(optarg, "--scale"); break;
      case 'p': c.producers = (unsigned)bench_parse_u64(optarg, "--producers"); break;
      case 'x': c.transformers = (unsigned)bench_parse_u64(optarg, "--transformers"); break;
      case 'c': c.consumers = (unsigned)bench_parse_u64(optarg, "--consumers"); break;
      case kQueue: c.queue_batches = bench_parse_u64(optarg, "--queue"); break;
      case kStallEvery: c.stall_every = bench_parse_u64(optarg, "--stall-every"); break;
      case kStallMs: c.stall_ms = (unsigned)bench_parse_u64(optarg, "--stall-ms"); break;
      case kSeed: c.seed = bench_parse_u64(optarg, "--seed"); break;
      case kInfo: return bench_info("pipeline");
      case 'h': usage(stdout); return 0;
      default: usage(stderr); return 2;
    }
  }
  if (optind != argc) {
    usage(stderr);
    return 2;
  }
  if (c.messages == 0) c.messages = bench_scaled(2u << 20, scale);
  if (c.producers == 0 || c.transformers == 0 || c.consumers == 0 || c.queue_batches == 0) {
    bench_die("need at least one thread per stage and --queue >= 1");
  }
  g_cfg = c;

  bench_api_init();
  bench_print_header("pipeline");
  queue_init(&g_qa, c.queue_batches);
  queue_init(&g_qb, c.queue_batches);
  atomic_store(&g_producers_left, c.producers);
  atomic_store(&g_transformers_left, c.transformers);
  unsigned nthreads = c.producers + c.transformers + c.consumers;
  pthread_t* tid = (pthread_t*)calloc(nthreads, sizeof(pthread_t));
  if (!tid) bench_die("out of memory");

  long f0 = bench_minflt_self();
  double t0 = bench_now();
  unsigned k = 0;
  for (unsigned i = 0; i < c.consumers; i++, k++) {
    if (pthread_create(&tid[k], NULL, consumer_main, (void*)(uintptr_t)i) != 0) {
      bench_die("pthread_create");
    }
  }
  for (unsigned i = 0; i < c.transformers; i++, k++) {
    if (pthread_create(&tid[k], NULL, transformer_main, (void*)(uintptr_t)i) != 0) {
      bench_die("pthread_create");
    }
  }
  for (unsigned i = 0; i < c.producers; i++, k++) {
    if (pthread_create(&tid[k], NULL, producer_main, (void*)(uintptr_t)i) != 0) {
      bench_die("pthread_create");
    }
  }
  for (unsigned i = 0; i < nthreads; i++) pthread_join(tid[i], NULL);
  double wall = bench_now() - t0;
  long faults = bench_minflt_self() - f0;
  uint64_t consumed = atomic_load(&g_consumed);
  if (consumed != c.messages) {
    bench_die("consumed %llu of %llu messages", (unsigned long long)consumed,
              (unsigned long long)c.messages);
  }
  double rss_drained = (double)bench_rss_bytes() / 1048576.0;
  printf(
      "producers=%u transformers=%u consumers=%u messages=%llu queue=%zu batches "
      "stall=%llu/%ums\n",
      c.producers, c.transformers, c.consumers, (unsigned long long)c.messages, c.queue_batches,
      (unsigned long long)c.stall_every, c.stall_ms);
  printf(
      "time=%.3f s  %.2f M msgs/s  reallocs=%llu  max queue A/B=%zu/%zu batches  "
      "faults=%ld  peak RSS=%.1f MiB  RSS drained=%.1f MiB\n",
      wall, (double)c.messages / wall / 1e6, (unsigned long long)atomic_load(&g_reallocs),
      g_qa.max_count, g_qb.max_count, faults, (double)bench_maxrss_kib() / 1024.0, rss_drained);
  char extra[512];
  snprintf(extra, sizeof(extra),
           "threads=%u msgs_per_s=%.0f faults=%ld rss_drained_mib=%.1f max_queue_a=%zu "
           "max_queue_b=%zu",
           nthreads, (double)c.messages / wall, faults, rss_drained, g_qa.max_count,
           g_qb.max_count);
  bench_print_result("pipeline", wall, extra);
  queue_destroy(&g_qa);
  queue_destroy(&g_qb);
  free(tid);
  return 0;
}
