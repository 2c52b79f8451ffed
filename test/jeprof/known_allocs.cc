// known_allocs: a program whose live heap is known exactly, for the jeprof tests.
//
// Six functions, each in its own non-inlined frame, allocate a known number of bytes through a
// different entry point (malloc, calloc, realloc, posix_memalign, operator new, operator new[])
// and keep them live.  Functions of small blocks allocate about 8 MiB each: at lg_prof_sample:12
// that is ~2000 samples, so the sampling error stays near 2% and a 10% tolerance is not flaky; one more function allocates and frees everything it took, so none of its
// bytes may appear in a dump.  One function lives in a shared object (libknown_shared.so) when
// the program is linked with it, to exercise symbolisation through MAPPED_LIBRARIES.
//
// The program prints the truth ("truth <function> <live bytes> <live objects>", and
// "allocated" lines for what only prof_accum counts), then asks the allocator
// for a dump with mallctl("prof.dump", path), found through dlsym so that the program links
// against no allocator and runs under LD_PRELOAD of any libjemalloc.so.2 built with profiling.
//
// Usage: known_allocs <dump path> [base]
//   Run it with MALLOC_CONF=prof:true,lg_prof_sample:12 (what test/jeprof/run.sh does).
//   With a second argument "base" it dumps to <path> before the live allocations are made
//   and to <path>.2 after, for the --base tests.
// Exit status: 0 on success, 2 on bad usage, 3 when mallctl is absent or the dump fails.
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <new>
#include <string>
#include <vector>

extern "C" size_t known_shared_alloc(size_t count, size_t size, void** out);

namespace {

using mallctl_fn = int (*)(const char*, void*, size_t*, void*, size_t);

// Sinks keep every live block reachable (and the compiler from dropping the calls).
std::vector<void*> g_keep;

#define KA_NOINLINE __attribute__((noinline))

KA_NOINLINE size_t live_malloc_small(size_t n) {
  // 64-byte blocks: small size class, many samples at lg_prof_sample:12.
  for (size_t i = 0; i < n; i++) g_keep.push_back(malloc(64));
  return n * 64;
}

KA_NOINLINE size_t live_calloc_pages(size_t n) {
  for (size_t i = 0; i < n; i++) g_keep.push_back(calloc(1, 4096));
  return n * 4096;
}

KA_NOINLINE size_t live_realloc_grow(size_t n) {
  // Each block grows from 100 bytes to 1024: only the final size is live.
  for (size_t i = 0; i < n; i++) {
    void* p = malloc(100);
    p = realloc(p, 1024);
    g_keep.push_back(p);
  }
  return n * 1024;
}

KA_NOINLINE size_t live_memalign_large(size_t n) {
  for (size_t i = 0; i < n; i++) {
    void* p = nullptr;
    if (posix_memalign(&p, 4096, 256 * 1024) != 0) abort();
    g_keep.push_back(p);
  }
  return n * 256 * 1024;
}

KA_NOINLINE size_t live_new_objects(size_t n) {
  struct Node {
    char payload[192];
  };
  for (size_t i = 0; i < n; i++) g_keep.push_back(new Node);
  return n * sizeof(Node);
}

KA_NOINLINE size_t live_new_array(size_t n) {
  for (size_t i = 0; i < n; i++) g_keep.push_back(new char[16384]);
  return n * 16384;
}

KA_NOINLINE size_t freed_everything(size_t n) {
  // Allocates a lot and frees all of it: must not show in the live profile.
  std::vector<void*> tmp;
  for (size_t i = 0; i < n; i++) tmp.push_back(malloc(2048));
  for (void* p : tmp) free(p);
  return n * 2048;
}

int dump(mallctl_fn mallctl, const char* path) {
  int err = mallctl("prof.dump", nullptr, nullptr, &path, sizeof(path));
  if (err != 0) {
    fprintf(stderr, "known_allocs: mallctl(\"prof.dump\", \"%s\") failed: %s\n", path,
            strerror(err));
    return 3;
  }
  return 0;
}

}  // namespace

// Stands for an internal frame of our library (namespace je) in the synthetic dumps that
// jeprof_test.py writes to check pruning; never called.
namespace je {
__attribute__((noinline, used)) void* jeprof_test_internal_frame(size_t n) { return malloc(n + 1); }
}  // namespace je

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: known_allocs <dump path> [base]\n");
    return 2;
  }
  bool base = argc == 3 && strcmp(argv[2], "base") == 0;
  auto mallctl = reinterpret_cast<mallctl_fn>(dlsym(RTLD_DEFAULT, "mallctl"));
  if (mallctl == nullptr) {
    fprintf(stderr, "known_allocs: no mallctl in the process (preload a libjemalloc.so.2)\n");
    return 3;
  }
  g_keep.reserve(300000);  // before the first dump: the vector's own block stays out of the diff
  if (base) {
    live_malloc_small(16384);  // present in both dumps: cancels out under --base
    if (int rc = dump(mallctl, argv[1])) return rc;
  }
  struct Row {
    const char* name;
    size_t bytes, objs;
  } rows[7];
  size_t r = 0;
  rows[r++] = {"live_malloc_small", live_malloc_small(131072), 131072};  // 8 MiB
  rows[r++] = {"live_calloc_pages", live_calloc_pages(2048), 2048};      // 8 MiB
  rows[r++] = {"live_realloc_grow", live_realloc_grow(8192), 8192};      // 8 MiB
  rows[r++] = {"live_memalign_large", live_memalign_large(24), 24};      // 6 MiB
  rows[r++] = {"live_new_objects", live_new_objects(43690), 43690};      // 8 MiB
  rows[r++] = {"live_new_array", live_new_array(320), 320};              // 5 MiB
  {
    void* out[160];
    rows[r++] = {"known_shared_alloc", known_shared_alloc(160, 16384, out), 160};  // 2.5 MiB
    for (void* p : out) g_keep.push_back(p);
  }
  size_t freed = freed_everything(4096);  // 8 MiB, all freed
  for (size_t i = 0; i < r; i++)
    printf("truth %s %zu %zu\n", rows[i].name, rows[i].bytes, rows[i].objs);
  printf("truth freed_everything 0 0\n");
  // What prof_accum counts (--alloc_space): allocated since the start, freed or not.
  printf("allocated freed_everything %zu %d\n", freed, 4096);
  fflush(stdout);
  std::string second = std::string(argv[1]) + (base ? ".2" : "");
  return dump(mallctl, second.c_str());
}
