/*
 * api_user.c: a small program written against jemalloc's documented API the
 * way an application would use it -- a private arena for one subsystem,
 * allocations placed in it with MALLOCX_ARENA, resized with rallocx, freed
 * with dallocx, the version checked at start-up.  Plain C11, no test
 * harness: test/integration/run.sh compiles it against a jemalloc.h and
 * links it with -ljemalloc, then runs it.  Exit status 0 when everything
 * behaved, 1 otherwise (with a message).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jemalloc/jemalloc.h>

#if JEMALLOC_VERSION_MAJOR < 5
#error "this program needs the jemalloc 5 API"
#endif

static int failures;

static void check(int ok, const char* what) {
  if (!ok) {
    printf("api_user: FAILED: %s\n", what);
    failures++;
  }
}

int main(void) {
  const char* version = NULL;
  size_t len = sizeof(version);
  unsigned arena = 0, found = 0;
  char *buf, *bigger, *smaller;
  size_t i;

  /* Which allocator are we talking to? */
  if (mallctl("version", &version, &len, NULL, 0) != 0 || version == NULL) {
    printf("api_user: mallctl(\"version\") failed\n");
    return 1;
  }
  printf("api_user: jemalloc %s (compiled against %s)\n", version, JEMALLOC_VERSION);
  check(strncmp(version, "5.3.0-", 6) == 0, "version starts with 5.3.0-");

  /* A private arena. */
  len = sizeof(arena);
  if (mallctl("arenas.create", &arena, &len, NULL, 0) != 0) {
    printf("api_user: arenas.create failed\n");
    return 1;
  }
  printf("api_user: created arena %u\n", arena);

  buf = mallocx(1000, MALLOCX_ARENA(arena) | MALLOCX_TCACHE_NONE);
  check(buf != NULL, "mallocx in the new arena");
  if (buf == NULL) {
    return 1;
  }
  for (i = 0; i < 1000; i++) {
    buf[i] = (char)(i * 7);
  }
  len = sizeof(found);
  check(mallctl("arenas.lookup", &found, &len, &buf, sizeof(buf)) == 0 && found == arena,
        "arenas.lookup finds the new arena");
  check(sallocx(buf, 0) >= 1000, "sallocx >= 1000");

  /* Grow it (small -> large) and shrink it again, keeping the data. */
  bigger = rallocx(buf, 100000, MALLOCX_ARENA(arena) | MALLOCX_TCACHE_NONE);
  check(bigger != NULL, "rallocx to 100000");
  if (bigger == NULL) {
    return 1;
  }
  for (i = 0; i < 1000; i++) {
    if (bigger[i] != (char)(i * 7)) {
      check(0, "rallocx kept the contents");
      break;
    }
  }
  len = sizeof(found);
  check(mallctl("arenas.lookup", &found, &len, &bigger, sizeof(bigger)) == 0 && found == arena,
        "the grown block is in the new arena");
  check(nallocx(100000, 0) == sallocx(bigger, 0), "nallocx == sallocx");
  smaller = rallocx(bigger, 500, MALLOCX_ARENA(arena) | MALLOCX_TCACHE_NONE);
  check(smaller != NULL, "rallocx to 500");
  if (smaller == NULL) {
    return 1;
  }
  for (i = 0; i < 500; i++) {
    if (smaller[i] != (char)(i * 7)) {
      check(0, "shrinking kept the contents");
      break;
    }
  }
  dallocx(smaller, MALLOCX_TCACHE_NONE);

  /* Ordinary malloc/free still work alongside. */
  buf = malloc(64);
  check(buf != NULL, "malloc(64)");
  free(buf);

  /* Give the arena's memory back. */
  {
    char name[64];
    snprintf(name, sizeof(name), "arena.%u.purge", arena);
    check(mallctl(name, NULL, NULL, NULL, 0) == 0, "arena.<i>.purge");
  }
  if (failures != 0) {
    return 1;
  }
  printf("api_user: ok\n");
  return 0;
}
