/* malloc_conf_global: a helper program of conf_sources_test (not a test by itself; run.sh does
 * not run it).  It defines the two option strings a program can carry in itself, the global
 * `malloc_conf` (read after the built-in string, before /etc/malloc.conf) and
 * `malloc_conf_2_conf_harder` (read last, after MALLOC_CONF), and prints what the library made
 * of them as `key=value` lines on stdout.  conf_sources_test runs it with chosen environments and
 * /etc/malloc.conf targets and checks which source won for each key.
 *
 * Each key is set by a chosen subset of the sources, so the printed values tell the order:
 *   narenas                    global 3            (MALLOC_CONF may override)
 *   hpa_min_purge_interval_ms  global 100          (/etc/malloc.conf, MALLOC_CONF may override)
 *   tcache_max                 conf_harder 131072  (overrides MALLOC_CONF)
 *   hpa_hugify_delay_ms        conf_harder 54321   (overrides /etc/malloc.conf)
 * The effects of narenas and tcache_max are read through arenas.narenas and
 * arenas.tcache_max.  The two hpa_* keys have no effect at all while the HPA is off (the
 * default, and the only mode here); that is why conf_sources_test puts them, and only them, in
 * /etc/malloc.conf, which every process started meanwhile reads too.  Their opt.* is printed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>

#include <jemalloc/jemalloc.h>

const char* malloc_conf = "narenas:3,hpa_min_purge_interval_ms:100";
const char* malloc_conf_2_conf_harder = "tcache_max:131072,hpa_hugify_delay_ms:54321";

static void print_unsigned(const char* key, const char* name) {
  unsigned v = 0;
  size_t len = sizeof(v);
  if (mallctl(name, &v, &len, NULL, 0) == 0) printf("%s=%u\n", key, v);
}

static void print_size(const char* key, const char* name) {
  size_t v = 0;
  size_t len = sizeof(v);
  if (mallctl(name, &v, &len, NULL, 0) == 0) printf("%s=%zu\n", key, v);
}

static void print_u64(const char* key, const char* name) {
  uint64_t v = 0;
  size_t len = sizeof(v);
  if (mallctl(name, &v, &len, NULL, 0) == 0) printf("%s=%llu\n", key, (unsigned long long)v);
}

int main(void) {
  /* The first allocation reads the configuration. */
  void* p = malloc(100);
  if (p == NULL) return 1;
  free(p);
  print_unsigned("opt_narenas", "opt.narenas");
  print_unsigned("arenas_narenas", "arenas.narenas");
  print_size("tcache_max", "arenas.tcache_max");
  print_u64("opt_hpa_min_purge_interval_ms", "opt.hpa_min_purge_interval_ms");
  print_u64("opt_hpa_hugify_delay_ms", "opt.hpa_hugify_delay_ms");
  printf("done=1\n");
  return 0;
}
