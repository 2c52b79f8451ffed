/*
 * bench/mmap_census.c - an LD_PRELOAD library for bench/clickhouse.sh: it
 * records the anonymous memory a program maps for itself, beside the malloc
 * in libjemalloc.so.2, and how many of those pages were touched.
 *
 * Why: ClickHouse's own Allocator maps blocks of 64 MiB and more with mmap
 * (hash tables, string arenas), never through malloc.  Every page of such a
 * block faults when first touched, whatever the allocator; those faults are
 * a floor under the faults of a query that no malloc can lower.  Knowing the
 * floor tells how many of a query's faults the allocator is answerable for.
 *
 * What it does: interposes mmap, mremap and munmap.  An anonymous, not-fixed
 * mapping of at least MMAP_CENSUS_MIN bytes (default 1 MiB) whose caller is
 * not in a file named *libjemalloc* is remembered; when it is unmapped (or
 * moved by mremap) its resident pages are counted with mincore() first: for
 * private anonymous memory those are the pages the program touched, each one
 * a minor fault.  One line per event is appended to $MMAP_CENSUS_OUT:
 *
 *   map LEN          an own mapping of LEN bytes was made
 *   unmap LEN PAGES  an own mapping of LEN bytes went away with PAGES touched
 *
 * An own mapping moved or resized by mremap stays one mapping: its pages are counted
 * when it finally goes (mremap moves pages without faulting them).
 * Each line is written with one write(2) to the file opened with O_APPEND, so lines
 * never interleave.  Nothing here calls malloc; system calls go through syscall(2).
 * A diagnostic for benchmarks, not part of the library.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

enum { kMaxTracked = 4096, kPage = 4096 };

typedef struct {
  uintptr_t addr;
  size_t len;
} region_t;

static region_t g_regions[kMaxTracked];
static atomic_flag g_lock = ATOMIC_FLAG_INIT;
static char g_out[4096];
static size_t g_min = (size_t)1 << 20;

static void lock(void) {
  while (atomic_flag_test_and_set_explicit(&g_lock, memory_order_acquire)) {
  }
}
static void unlock(void) { atomic_flag_clear_explicit(&g_lock, memory_order_release); }

static void* sys_mmap(void* a, size_t len, int prot, int flags, int fd, off_t off) {
  return (void*)syscall(SYS_mmap, a, len, prot, flags, fd, off);
}

__attribute__((constructor)) static void census_init(void) {
  const char* out = getenv("MMAP_CENSUS_OUT");
  const char* min = getenv("MMAP_CENSUS_MIN");
  if (min != NULL && *min != '\0') g_min = strtoull(min, NULL, 10);
  if (out != NULL && strlen(out) < sizeof g_out) strcpy(g_out, out);
}

/* Opened for each line: servers close the descriptors they inherit or find at start-up. */
static void emit(const char* kind, size_t len, long pages) {
  if (g_out[0] == '\0') return;
  char line[96];
  int n = pages < 0 ? snprintf(line, sizeof line, "%s %zu\n", kind, len)
                    : snprintf(line, sizeof line, "%s %zu %ld\n", kind, len, pages);
  if (n <= 0) return;
  int fd = (int)syscall(SYS_openat, AT_FDCWD, g_out, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
                        0644);
  if (fd < 0) return;
  (void)syscall(SYS_write, fd, line, (size_t)n);
  syscall(SYS_close, fd);
}

/* The caller is the program (not the allocator under test). */
static int own_caller(void* ra) {
  Dl_info info;
  if (dladdr(ra, &info) != 0 && info.dli_fname != NULL &&
      strstr(info.dli_fname, "libjemalloc") != NULL) {
    return 0;
  }
  return 1;
}

/* Resident pages of [addr, addr + len): the touched ones, for private anonymous memory. */
static long touched_pages(uintptr_t addr, size_t len) {
  size_t npages = (len + kPage - 1) / kPage;
  unsigned char* vec = (unsigned char*)sys_mmap(NULL, npages, PROT_READ | PROT_WRITE,
                                                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (vec == MAP_FAILED) return -1;
  long n = 0;
  if (syscall(SYS_mincore, (void*)addr, len, vec) == 0) {
    for (size_t i = 0; i < npages; i++) n += vec[i] & 1;
  } else {
    n = -1;
  }
  syscall(SYS_munmap, vec, npages);
  return n;
}

static void track(uintptr_t addr, size_t len, int report) {
  lock();
  for (int i = 0; i < kMaxTracked; i++) {
    if (g_regions[i].len == 0) {
      g_regions[i].addr = addr;
      g_regions[i].len = len;
      break;
    }
  }
  unlock();
  if (report) emit("map", len, -1);
}

/* The tracked region starting at addr loses its first `len` bytes (all of it when len is 0
 * or covers it). With `report`, the touched pages of what goes are reported as an unmap;
 * without (mremap), they move on with the new mapping and are reported when that goes.
 * Whether such a region was tracked. */
static int untrack(uintptr_t addr, size_t len, int report) {
  size_t gone = 0;
  lock();
  for (int i = 0; i < kMaxTracked; i++) {
    if (g_regions[i].len != 0 && g_regions[i].addr == addr) {
      if (len == 0 || len >= g_regions[i].len) {
        gone = g_regions[i].len;
        g_regions[i].len = 0;
      } else {
        gone = len;
        g_regions[i].addr += len;
        g_regions[i].len -= len;
      }
      break;
    }
  }
  unlock();
  if (gone != 0 && report) emit("unmap", gone, touched_pages(addr, gone));
  return gone != 0;
}

void* mmap(void* a, size_t len, int prot, int flags, int fd, off_t off) {
  void* r = sys_mmap(a, len, prot, flags, fd, off);
  if (r != MAP_FAILED && len >= g_min && (flags & MAP_ANONYMOUS) && !(flags & MAP_FIXED) &&
      own_caller(__builtin_return_address(0))) {
    track((uintptr_t)r, len, 1);
  }
  return r;
}

void* mmap64(void* a, size_t len, int prot, int flags, int fd, off_t off)
    __attribute__((alias("mmap")));

int munmap(void* a, size_t len) {
  (void)untrack((uintptr_t)a, (len + kPage - 1) & ~(size_t)(kPage - 1), 1);
  return (int)syscall(SYS_munmap, a, len);
}

void* mremap(void* old, size_t old_len, size_t new_len, int flags, ...) {
  void* fixed = NULL;
  if (flags & MREMAP_FIXED) {
    va_list ap;
    va_start(ap, flags);
    fixed = va_arg(ap, void*);
    va_end(ap);
  }
  void* r = (void*)syscall(SYS_mremap, old, old_len, new_len, flags, fixed);
  if (r == MAP_FAILED) return r;
  if (untrack((uintptr_t)old, 0, 0)) {
    /* An own mapping: its pages moved with it and are counted when the new one goes. */
    track((uintptr_t)r, new_len, 0);
  } else if (new_len >= g_min && own_caller(__builtin_return_address(0))) {
    track((uintptr_t)r, new_len, 1);
  }
  return r;
}
