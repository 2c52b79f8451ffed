/*
 * version_probe.c: a minimal client of the installed library.  Prints which
 * libjemalloc.so.2 the dynamic loader chose and the version it reports
 * through mallctl("version"), checks that it matches the header the program
 * was compiled against, and makes one allocation through each family.
 * Used by `make showcase` and by test/abi/install.sh.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include <jemalloc/jemalloc.h>

int main(void) {
  const char* version = NULL;
  size_t len = sizeof(version);
  void* (*entry)(size_t, int) = mallocx;
  void* where;
  Dl_info info;
  void* p;
  size_t usable;

  if (mallctl("version", (void*)&version, &len, NULL, 0) != 0 || version == NULL) {
    printf("mallctl(\"version\") failed\n");
    return 1;
  }
  /* dladdr takes an object pointer; copy the function pointer's bits. */
  memcpy(&where, &entry, sizeof(where));
  if (dladdr(where, &info) != 0 && info.dli_fname != NULL) {
    printf("library: %s\n", info.dli_fname);
  } else {
    printf("library: (unknown)\n");
  }
  printf("version: %s\n", version);
  if (strcmp(version, JEMALLOC_VERSION) != 0) {
    printf("header version %s differs from the library's\n", JEMALLOC_VERSION);
    return 1;
  }

  p = mallocx(100, MALLOCX_ZERO | MALLOCX_ALIGN(64));
  if (p == NULL || ((size_t)p & 63) != 0 || ((char*)p)[99] != 0) {
    printf("mallocx(100, ZERO | ALIGN(64)) misbehaved\n");
    return 1;
  }
  usable = sallocx(p, 0);
  dallocx(p, 0);
  p = malloc(1000);
  if (p == NULL) {
    printf("malloc(1000) failed\n");
    return 1;
  }
  free(p);
  printf("mallocx(100, MALLOCX_ZERO | MALLOCX_ALIGN(64)): usable size %zu\n", usable);
  return 0;
}
