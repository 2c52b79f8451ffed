/* prefix_probe.c: a client of a library configured --with-jemalloc-prefix=je_ (test/abi/
 * configure_build.sh). Built against the installed, prefixed header; calls the prefixed names
 * (or, with -DUSE_MANGLE, the plain names through JEMALLOC_MANGLE) and prints what the library
 * reports. The program's own malloc/free stay the C library's. */
#ifdef USE_MANGLE
#define JEMALLOC_MANGLE
#endif
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include HEADER

#ifdef USE_MANGLE
/* JEMALLOC_MANGLE implies JEMALLOC_NO_DEMANGLE: the je_ macros stay defined. */
#ifndef je_mallctl
#error "JEMALLOC_MANGLE did not keep the je_ macros"
#endif
#else
/* Without JEMALLOC_NO_DEMANGLE the header removes its je_ macros again. */
#ifdef je_malloc_conf
#error "the header left je_malloc_conf defined as a macro"
#endif
/* The program's option string, read at start-up under the prefixed name. */
const char *je_malloc_conf = "narenas:3";
#endif

#ifndef USE_MANGLE
/* A mallctl result as the script greps it: 0 or the errno's name. */
static const char *rc_name(int rc) {
  switch (rc) {
    case 0: return "0";
    case ENOENT: return "ENOENT";
    case EINVAL: return "EINVAL";
    case EFAULT: return "EFAULT";
    case EPERM: return "EPERM";
    default: return "other";
  }
}
#endif

int main(void) {
  const char *version = NULL;
  size_t len = sizeof(version);
#ifdef USE_MANGLE
  /* Plain names, turned into the prefixed ones by the header. */
  void *p = mallocx(100, 0);
  if (p == NULL || mallctl("version", &version, &len, NULL, 0) != 0) return 1;
  printf("mangled: version %s usable %zu\n", version, sallocx(p, 0));
  dallocx(p, 0);
#else
  void *p = je_malloc(100);
  if (p == NULL || je_mallctl("version", &version, &len, NULL, 0) != 0) return 1;
  size_t page = 0;
  unsigned narenas = 0;
  const char *conf = NULL;
  len = sizeof(page);
  if (je_mallctl("arenas.page", &page, &len, NULL, 0) != 0) return 1;
  len = sizeof(narenas);
  if (je_mallctl("opt.narenas", &narenas, &len, NULL, 0) != 0) return 1;
  len = sizeof(conf);
  printf("version %s\n", version);
  printf("arenas.page %zu\n", page);
  printf("opt.narenas %u\n", narenas);
  printf("usable %zu\n", je_malloc_usable_size(p));
  je_free(p);
  /* Heap profiling, configured out (--disable-prof): config.prof reads false, and the
   * profiling names answer ENOENT, as a 5.3.0 library configured the same way. */
  bool b = true;
  len = sizeof(b);
  if (je_mallctl("config.prof", &b, &len, NULL, 0) != 0) return 1;
  printf("config.prof %s\n", b ? "true" : "false");
  len = sizeof(b);
  printf("opt.prof %s\n", rc_name(je_mallctl("opt.prof", &b, &len, NULL, 0)));
  len = sizeof(b);
  printf("prof.active %s\n", rc_name(je_mallctl("prof.active", &b, &len, NULL, 0)));
  const char *dump = "prefix_probe.heap";
  printf("prof.dump %s\n", rc_name(je_mallctl("prof.dump", NULL, NULL, &dump, sizeof(dump))));
  len = sizeof(b);
  printf("thread.prof.active %s\n",
         rc_name(je_mallctl("thread.prof.active", &b, &len, NULL, 0)));
  /* --disable-cache-oblivious: both names read false, and large blocks start on a page (with
   * the pad, each would start at a random cache-line multiple inside its first page). */
  len = sizeof(b);
  if (je_mallctl("config.cache_oblivious", &b, &len, NULL, 0) != 0) return 1;
  printf("config.cache_oblivious %s\n", b ? "true" : "false");
  len = sizeof(b);
  if (je_mallctl("opt.cache_oblivious", &b, &len, NULL, 0) != 0) return 1;
  printf("opt.cache_oblivious %s\n", b ? "true" : "false");
  void *big[8];
  int aligned = 0;
  for (int i = 0; i < 8; i++) {
    big[i] = je_malloc((size_t)1 << 20);
    if (big[i] == NULL) return 1;
    aligned += ((size_t)big[i] & (page - 1)) == 0;
  }
  printf("page-aligned large blocks %d of 8\n", aligned);
  for (int i = 0; i < 8; i++) je_free(big[i]);
  /* operator new/delete absent (--disable-cxx) and malloc unprefixed absent: nothing else to
   * see from here; the script checks the dynamic symbols. */
  (void)conf;
#endif
  return 0;
}
