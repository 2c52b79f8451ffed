/*
 * pair_loop: malloc(n) + free(p) in a loop, for instruction counting under callgrind
 * (bench/fastpath.sh). Also new/delete-like sized frees through sdallocx when the library has
 * it. Linked against libc only so the same binary runs under any allocator (LD_PRELOAD).
 *
 *   pair_loop SIZE ITERATIONS [sized]
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s SIZE ITERATIONS [sized]\n", argv[0]);
    return 2;
  }
  size_t size = (size_t)strtoull(argv[1], NULL, 10);
  long iters = strtol(argv[2], NULL, 10);
  void (*sdallocx)(void*, size_t, int) = NULL;
  if (argc > 3) *(void**)&sdallocx = dlsym(RTLD_DEFAULT, "sdallocx");
  void* volatile sink = NULL;
  for (long i = 0; i < iters; i++) {
    void* p = malloc(size);
    sink = p;
    if (sdallocx != NULL) {
      sdallocx(p, size, 0);
    } else {
      free(p);
    }
  }
  (void)sink;
  return 0;
}
