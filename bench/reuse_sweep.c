/*
 * bench/reuse_sweep.c - does a burst of same-sized blocks reuse what the previous burst freed?
 *
 *   reuse_sweep SIZE [BURST_BYTES [ROUNDS [ALIGN]]]
 *
 * Each round allocates BURST_BYTES / SIZE blocks of SIZE bytes (malloc, or posix_memalign
 * with ALIGN), writes one byte in every page, then frees them all.  After each round it prints
 *
 *   ROUND r rss=<bytes> minflt=<page faults so far> mapped=<stats.mapped or -1>
 *
 * An allocator that reuses the freed blocks faults only in round 0 and keeps its RSS flat; one
 * that cannot (free memory merged into blocks its own fit rule refuses, see
 * doc/design/coalescing.md) faults in fresh pages every round, and its RSS or mapped memory
 * grows until something purges.  Linked against libc only: run it under any allocator with
 * LD_PRELOAD.  bench/reuse_sweep.sh runs it over sizes and allocators.
 */
#include "common.h"

#include <string.h>

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s SIZE [BURST_BYTES [ROUNDS [ALIGN]]]\n", argv[0]);
    return 2;
  }
  if (strcmp(argv[1], "--info") == 0) return bench_info("reuse_sweep");
  size_t size = (size_t)bench_parse_u64(argv[1], "SIZE");
  size_t burst = argc > 2 ? (size_t)bench_parse_u64(argv[2], "BURST_BYTES") : (size_t)256 << 20;
  int rounds = argc > 3 ? (int)bench_parse_u64(argv[3], "ROUNDS") : 4;
  size_t align = argc > 4 ? (size_t)bench_parse_u64(argv[4], "ALIGN") : 0;
  if (size == 0) bench_die("SIZE must be positive");
  size_t n = burst / size;
  if (n < 8) n = 8;
  void** blocks = calloc(n, sizeof(void*));
  if (blocks == NULL) bench_die("calloc of the block table failed");
  bench_api_init();
  for (int r = 0; r < rounds; r++) {
    for (size_t i = 0; i < n; i++) {
      void* p = NULL;
      if (align == 0) {
        p = malloc(size);
      } else if (posix_memalign(&p, align, size) != 0) {
        p = NULL;
      }
      if (p == NULL) bench_die("allocation failed");
      for (size_t off = 0; off < size; off += 4096) ((volatile char*)p)[off] = 1;
      blocks[i] = p;
    }
    for (size_t i = 0; i < n; i++) free(blocks[i]);
    size_t mapped = 0;
    long long m = bench_stats_mapped(&mapped) ? (long long)mapped : -1;
    printf("ROUND %d rss=%zu minflt=%ld mapped=%lld\n", r, bench_rss_bytes(), bench_minflt_self(),
           m);
  }
  free(blocks);
  return 0;
}
