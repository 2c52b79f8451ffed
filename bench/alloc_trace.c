/*
 * bench/alloc_trace.c - a preload library that records a program's big allocations, for
 * bench/trace_replay.c to play back under any allocator.
 *
 * Purpose: a ClickHouse run of bench/clickhouse.sh takes half an hour; the allocations that
 * decide its page faults (blocks of 16 KiB and more: hash tables, arena chunks, column buffers)
 * are a few tens of thousands per query. Recorded once (`clickhouse.sh --trace`), they replay in
 * about a minute and a half, with the same threads, arenas, order and timing.
 *
 * What is recorded: every malloc/calloc/posix_memalign of at least ALLOC_TRACE_MIN bytes
 * (default 16384), every realloc to or from such a block, and the free of each such block.
 * Smaller blocks are neither recorded nor tracked. Each record (struct trace_rec, 40 bytes,
 * host byte order) holds CLOCK_REALTIME in ns, the kernel thread id, the operation, the
 * thread's arena (mallctl "thread.arena" at its first recorded call; 0xffff without mallctl),
 * and the sizes and addresses. The records go into ALLOC_TRACE_OUT, a sparse file mapped shared
 * (so nothing is lost when the program is killed); the first record with t == 0 ends the log.
 *
 * Callers: clickhouse.sh (--trace) preloads it ahead of the census library. It forwards every
 * call to the next definition (RTLD_NEXT), the allocator being measured. Locking: one spinlock
 * guards the table of tracked addresses (only calls on big blocks take it); the log slot is
 * claimed with an atomic add. Not for production use.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "alloc_trace.h"

#define TRACE_MAX_RECS ((size_t)1 << 25) /* 1.3 GB of sparse file at most */
#define SET_BITS 22                      /* tracked blocks: 4M slots */
#define SET_SLOTS ((size_t)1 << SET_BITS)
#define SET_TOMB ((uintptr_t)1)

static struct trace_rec* g_log;
static _Atomic size_t g_nrec;
static size_t g_min = 16384;

static void* (*next_malloc)(size_t);
static void (*next_free)(void*);
static void* (*next_calloc)(size_t, size_t);
static void* (*next_realloc)(void*, size_t);
static int (*next_posix_memalign)(void**, size_t, size_t);
static size_t (*next_usable)(void*);
static int (*next_mallctl)(const char*, void*, size_t*, void*, size_t);

/* dlsym may allocate before the next malloc is known: serve it from here (never freed). */
static char g_boot[1 << 16];
static size_t g_boot_used;
static int g_in_init;

static __thread int t_arena = -1;
static __thread uint32_t t_tid;

static uintptr_t g_set[SET_SLOTS];
static atomic_flag g_set_lock = ATOMIC_FLAG_INIT;

static void set_lock(void) {
  while (atomic_flag_test_and_set_explicit(&g_set_lock, memory_order_acquire)) {
  }
}
static void set_unlock(void) { atomic_flag_clear_explicit(&g_set_lock, memory_order_release); }
static size_t set_hash(uintptr_t p) {
  return (size_t)((p >> 12) * 0x9E3779B97F4A7C15ull >> (64 - SET_BITS));
}
static void set_add(uintptr_t p) {
  set_lock();
  size_t i = set_hash(p);
  while (g_set[i] != 0 && g_set[i] != SET_TOMB) i = (i + 1) & (SET_SLOTS - 1);
  g_set[i] = p;
  set_unlock();
}
static int set_remove(uintptr_t p) {
  set_lock();
  for (size_t i = set_hash(p); g_set[i] != 0; i = (i + 1) & (SET_SLOTS - 1)) {
    if (g_set[i] == p) {
      g_set[i] = SET_TOMB;
      set_unlock();
      return 1;
    }
  }
  set_unlock();
  return 0;
}

static void init(void) {
  if (next_malloc != NULL || g_in_init) return;
  g_in_init = 1;
  next_malloc = (void* (*)(size_t))dlsym(RTLD_NEXT, "malloc");
  next_free = (void (*)(void*))dlsym(RTLD_NEXT, "free");
  next_calloc = (void* (*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
  next_realloc = (void* (*)(void*, size_t))dlsym(RTLD_NEXT, "realloc");
  next_posix_memalign = (int (*)(void**, size_t, size_t))dlsym(RTLD_NEXT, "posix_memalign");
  next_usable = (size_t (*)(void*))dlsym(RTLD_NEXT, "malloc_usable_size");
  next_mallctl = (int (*)(const char*, void*, size_t*, void*, size_t))dlsym(RTLD_NEXT, "mallctl");
  const char* min = getenv("ALLOC_TRACE_MIN");
  if (min != NULL) g_min = strtoull(min, NULL, 0);
  const char* out = getenv("ALLOC_TRACE_OUT");
  if (out != NULL) {
    int fd = open(out, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    size_t len = TRACE_MAX_RECS * sizeof(struct trace_rec);
    if (fd >= 0 && ftruncate(fd, (off_t)len) == 0) {
      void* m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (m != MAP_FAILED) g_log = m;
    }
    if (fd >= 0) close(fd);
  }
  g_in_init = 0;
}

static void record(int op, uint64_t a, uint64_t b, uint64_t c) {
  if (g_log == NULL) return;
  if (t_arena < 0) {
    unsigned arena = 0;
    size_t sz = sizeof(arena);
    t_arena = next_mallctl != NULL && next_mallctl("thread.arena", &arena, &sz, NULL, 0) == 0
                  ? (int)arena
                  : TRACE_NO_ARENA;
    t_tid = (uint32_t)syscall(SYS_gettid);
  }
  size_t i = atomic_fetch_add(&g_nrec, 1);
  if (i >= TRACE_MAX_RECS) return;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct trace_rec r = {(uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec, t_tid,
                        (uint16_t)op, (uint16_t)t_arena, a, b, c};
  g_log[i] = r;
}

static void* boot_alloc(size_t n) {
  void* p = g_boot + g_boot_used;
  g_boot_used += (n + 15) & ~(size_t)15;
  return g_boot_used <= sizeof(g_boot) ? p : NULL;
}
static int is_boot(void* p) { return (char*)p >= g_boot && (char*)p < g_boot + sizeof(g_boot); }

/* A free of a block we recorded (checked cheaply by size first). */
static int tracked(void* p) {
  return p != NULL && next_usable != NULL && next_usable(p) >= g_min && set_remove((uintptr_t)p);
}

void* malloc(size_t n) {
  init();
  if (next_malloc == NULL) return boot_alloc(n);
  void* p = next_malloc(n);
  if (p != NULL && n >= g_min) {
    set_add((uintptr_t)p);
    record(TRACE_MALLOC, n, (uintptr_t)p, 0);
  }
  return p;
}

void* calloc(size_t k, size_t n) {
  init();
  if (next_calloc == NULL) return boot_alloc(k * n); /* static: already zero */
  void* p = next_calloc(k, n);
  if (p != NULL && k * n >= g_min) {
    set_add((uintptr_t)p);
    record(TRACE_CALLOC, k * n, (uintptr_t)p, 0);
  }
  return p;
}

void free(void* p) {
  if (p == NULL || is_boot(p)) return;
  init();
  if (tracked(p)) record(TRACE_FREE, (uintptr_t)p, 0, 0);
  next_free(p);
}

void* realloc(void* p, size_t n) {
  init();
  if (p != NULL && is_boot(p)) {
    void* q = malloc(n);
    if (q != NULL) memcpy(q, p, n);
    return q;
  }
  int was = tracked(p);
  void* q = next_realloc(p, n);
  if (q == NULL && n != 0) {
    if (was) set_add((uintptr_t)p); /* failed: the old block stays */
    return q;
  }
  if (q != NULL && n >= g_min) set_add((uintptr_t)q);
  if (was && n < g_min) {
    record(TRACE_FREE, (uintptr_t)p, 0, 0); /* shrunk out of sight */
  } else if (was) {
    record(TRACE_REALLOC, n, (uintptr_t)q, (uintptr_t)p);
  } else if (n >= g_min) {
    record(TRACE_MALLOC, n, (uintptr_t)q, 0); /* a small block grown big: new to us */
  }
  return q;
}

int posix_memalign(void** pp, size_t alignment, size_t n) {
  init();
  int r = next_posix_memalign(pp, alignment, n);
  if (r == 0 && n >= g_min) {
    set_add((uintptr_t)*pp);
    record(TRACE_MEMALIGN, n, (uintptr_t)*pp, alignment);
  }
  return r;
}
