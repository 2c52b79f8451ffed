/*
 * dlopen_probe.c: loads the library given as argv[1] with dlopen() into a program that is not
 * linked to it, then allocates, frees and reads mallctl("version") through dlsym. Prints
 * "loaded: <version>" and exits 0, or prints "dlopen: <error>" and exits 1. With "user SO" or
 * "user-deepbind SO" it loads SO, a shared object linked against the library (dlopen_user.c),
 * instead, and runs its user_work().
 */
#define _GNU_SOURCE /* RTLD_DEEPBIND */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* probe USER_SO [deepbind]: dlopen a shared object linked against jemalloc, run its work. */
static int user_probe(const char* path, int flags) {
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL | flags);
  if (h == NULL) {
    printf("dlopen: %s\n", dlerror());
    return 1;
  }
  int (*work)(void) = (int (*)(void))dlsym(h, "user_work");
  if (work == NULL) return 3;
  int rc = work();
  if (rc != 0) {
    printf("user_work failed at step %d\n", rc);
    return 6;
  }
  printf("user object loaded and allocated%s\n", flags ? " (RTLD_DEEPBIND)" : "");
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 3 && strcmp(argv[1], "user") == 0) return user_probe(argv[2], 0);
  if (argc == 3 && strcmp(argv[1], "user-deepbind") == 0) return user_probe(argv[2], RTLD_DEEPBIND);
  if (argc != 2) return 2;
  void* h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) {
    printf("dlopen: %s\n", dlerror());
    return 1;
  }
  void* (*lib_malloc)(size_t) = (void* (*)(size_t))dlsym(h, "malloc");
  void (*lib_free)(void*) = (void (*)(void*))dlsym(h, "free");
  int (*lib_mallctl)(const char*, void*, size_t*, void*, size_t) =
      (int (*)(const char*, void*, size_t*, void*, size_t))dlsym(h, "mallctl");
  if (lib_malloc == NULL || lib_free == NULL || lib_mallctl == NULL) return 3;
  for (int i = 0; i < 1000; i++) {
    char* p = (char*)lib_malloc(100 + i * 37);
    if (p == NULL) return 4;
    memset(p, 1, 100 + i * 37);
    lib_free(p);
  }
  const char* version = NULL;
  size_t len = sizeof(version);
  if (lib_mallctl("version", &version, &len, NULL, 0) != 0) return 5;
  printf("loaded: %s\n", version);
  return 0;
}
