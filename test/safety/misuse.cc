// misuse.cc: one allocator misuse per mode, for the death tests of opt.safety_checks
// (safety_test.sh). `misuse MODE` performs the misuse, then prints "survived MODE" and exits 0:
// with the checks on the library must have aborted before that line, with them off (release
// default) the misuse is silently absorbed as before. Written against the public API only, so
// the same program also runs on Debian's jemalloc 5.3.0 (LD_PRELOAD) for comparison.
// Mode "config" prints config.debug and opt.safety_checks as the library reports them.
#include <jemalloc/jemalloc.h>
#include <pthread.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

namespace {

// Keep the compiler from seeing through the misuse (it warns, or drops a free it can prove
// invalid).
void* launder(void* p) {
  void* volatile v = p;
  return v;
}

int g_global;

void small_double() {
  void* p = malloc(48);
  free(p);
  free(launder(p));
}
// The first free reaches the slab (cache flushed), the second finds the region free there.
void small_double_flushed() {
  void* keep = malloc(48);  // keeps the slab alive so its map entry stays
  void* p = malloc(48);
  free(p);
  mallctl("thread.tcache.flush", nullptr, nullptr, nullptr, 0);
  free(launder(p));
  free(keep);
}
// Freed into two threads' caches (neither sees the other's): found when the second cache
// flushes the region back to a slab that already has it free.
void* free_in_thread(void* p) {
  free(p);
  return nullptr;  // thread exit flushes this thread's cache
}
void small_double_two_caches() {
  void* keep = malloc(48);
  void* p = malloc(48);
  free(p);  // into the main thread's cache
  pthread_t t;
  pthread_create(&t, nullptr, free_in_thread, launder(p));
  pthread_join(t, nullptr);
  mallctl("thread.tcache.flush", nullptr, nullptr, nullptr, 0);
  free(keep);
}
// Bypassing the cache: dallocx(MALLOCX_TCACHE_NONE) twice goes to the slab both times.
void small_double_nocache() {
  void* keep = malloc(48);
  void* p = mallocx(48, MALLOCX_TCACHE_NONE);
  dallocx(p, MALLOCX_TCACHE_NONE);
  dallocx(launder(p), MALLOCX_TCACHE_NONE);
  free(keep);
}
void large_double() {  // above tcache_max: the pages go back at once
  void* p = malloc(100000);
  free(p);
  free(launder(p));
}
void large_cached_double() {  // cached large class (<= 32 KiB)
  void* p = malloc(20000);
  free(p);
  free(launder(p));
}
void sized_small() { sdallocx(malloc(48), 100, 0); }
void sized_large() { sdallocx(malloc(100000), 200000, 0); }
void sized_flags() { sdallocx(mallocx(48, MALLOCX_TCACHE_NONE), 4000, MALLOCX_TCACHE_NONE); }
void sized_delete() {
  void* p = ::operator new(48);
  ::operator delete (launder(p), size_t{200});
}
void sized_delete_aligned() {
  void* p = ::operator new (48, std::align_val_t{64});
  ::operator delete (launder(p), size_t{4096}, std::align_val_t{64});
}
void invalid_stack() {
  int x = 0;
  free(launder(&x));
}
void invalid_global() { free(launder(&g_global)); }
void invalid_wild() { free(launder(reinterpret_cast<void*>(0x100000000010))); }
void interior_small() { free(static_cast<char*>(launder(malloc(48))) + 16); }
void interior_large() { free(static_cast<char*>(launder(malloc(100000))) + 8192); }
void interior_large_tail() { free(static_cast<char*>(launder(malloc(100000))) + 99000); }
void realloc_interior() {
  void* p = realloc(static_cast<char*>(launder(malloc(48))) + 16, 100);
  std::printf("realloc -> %p\n", p);
}
void realloc_invalid() {
  int x = 0;
  void* p = realloc(launder(&x), 100);
  std::printf("realloc -> %p\n", p);
}
void realloc_double() {
  void* p = malloc(48);
  free(p);
  void* q = realloc(launder(p), 100);
  std::printf("realloc -> %p\n", q);
}
// Needs junk on free: the written byte is found when the region is handed out again.
void write_after_free() {
  char* p = static_cast<char*>(malloc(48));
  free(p);
  static_cast<char*>(launder(p))[5] = 1;
  for (int i = 0; i < 1000; i++) launder(malloc(48));
}
// The misuse-free control: every call of the modes above, used correctly.
void correct() {
  for (int i = 0; i < 20000; i++) free(malloc(static_cast<size_t>(i % 5000) + 1));
  sdallocx(malloc(48), 48, 0);
  sdallocx(malloc(100000), 100000, 0);
  sdallocx(mallocx(48, MALLOCX_TCACHE_NONE), 40, MALLOCX_TCACHE_NONE);
  ::operator delete (::operator new(48), size_t{48});
  ::operator delete (::operator new (48, std::align_val_t{64}), size_t{48}, std::align_val_t{64});
  free(realloc(malloc(48), 100000));
  void* p = malloc(48);
  free(p);
  p = malloc(48);
  std::memset(p, 1, 48);
  free(p);
}
void config() {
  bool debug = false, safety = false;
  size_t len = sizeof(bool);
  mallctl("config.debug", &debug, &len, nullptr, 0);
  len = sizeof(bool);
  int rc = mallctl("opt.safety_checks", &safety, &len, nullptr, 0);
  std::printf("debug=%d safety_checks=%s\n", debug, rc == 0 ? (safety ? "1" : "0") : "absent");
}

struct Mode {
  const char* name;
  void (*run)();
};
constexpr Mode kModes[] = {
    {"small_double", small_double},
    {"small_double_flushed", small_double_flushed},
    {"small_double_nocache", small_double_nocache},
    {"small_double_two_caches", small_double_two_caches},
    {"large_double", large_double},
    {"large_cached_double", large_cached_double},
    {"sized_small", sized_small},
    {"sized_large", sized_large},
    {"sized_flags", sized_flags},
    {"sized_delete", sized_delete},
    {"sized_delete_aligned", sized_delete_aligned},
    {"invalid_stack", invalid_stack},
    {"invalid_global", invalid_global},
    {"invalid_wild", invalid_wild},
    {"interior_small", interior_small},
    {"interior_large", interior_large},
    {"interior_large_tail", interior_large_tail},
    {"realloc_interior", realloc_interior},
    {"realloc_invalid", realloc_invalid},
    {"realloc_double", realloc_double},
    {"write_after_free", write_after_free},
    {"correct", correct},
    {"config", config},
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  for (const Mode& m : kModes) {
    if (std::strcmp(m.name, argv[1]) == 0) {
      m.run();
      std::printf("survived %s\n", m.name);
      return 0;
    }
  }
  std::fprintf(stderr, "misuse: unknown mode %s\n", argv[1]);
  return 2;
}
