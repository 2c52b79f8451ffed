/*
 * dlopen_user.c: a shared object linked against libjemalloc.so.2, for dlopen.sh. A program that
 * is not linked to jemalloc dlopen()s it, which loads jemalloc late, then calls user_work():
 * allocations through jemalloc's own names (mallocx, sdallocx, rallocx, mallctl; malloc and free
 * too when the program used RTLD_DEEPBIND) on the calling thread and on a thread created after
 * the load. Returns 0 when every allocation worked and thread.allocated counted it, else the
 * number of the failed step.
 */
#include <jemalloc/jemalloc.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

static int work(void) {
  uint64_t before = 0, after = 0;
  size_t len = sizeof(uint64_t);
  if (mallctl("thread.allocated", &before, &len, NULL, 0) != 0) return 10;
  for (int i = 0; i < 2000; i++) {
    size_t size = 16 + (size_t)i * 53;
    char* p = mallocx(size, 0);
    if (p == NULL) return 11;
    memset(p, 0x5a, size);
    p = rallocx(p, size * 2, 0);
    if (p == NULL || p[size - 1] != 0x5a) return 12;
    sdallocx(p, size * 2, 0);
  }
  len = sizeof(uint64_t);
  if (mallctl("thread.allocated", &after, &len, NULL, 0) != 0) return 13;
  return after > before ? 0 : 14;
}

static void* thread_main(void* arg) {
  *(int*)arg = work();
  return NULL;
}

int user_work(void) {
  int rc = work();
  if (rc != 0) return rc;
  int trc = -1;
  pthread_t t;
  if (pthread_create(&t, NULL, thread_main, &trc) != 0) return 20;
  pthread_join(t, NULL);
  return trc;
}
