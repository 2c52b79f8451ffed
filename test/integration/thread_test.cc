// thread_test: per-thread state is created lazily by whichever entry point a
// thread calls first, survives use from TLS destructors (after the
// allocator's own thread-exit cleanup), and memory outlives the thread that
// allocated it (per-thread state: doc/design/threads.md).
#include <sys/mman.h>

#include <new>

#include "harness.h"

namespace {

// Blocks allocated by the main thread for the first operation of a new
// thread to work on (free, realloc, sallocx...).
void* g_foreign = nullptr;
constexpr size_t kForeignSize = 3000;

void prepare_foreign() {
  g_foreign = malloc(kForeignSize);
  if (g_foreign != nullptr) jt::fill_pattern(g_foreign, kForeignSize, nullptr);
}

bool foreign_intact(const void* p) {
  return jt::check_pattern(p, kForeignSize, nullptr) == kForeignSize;
}

using ThreadOp = void (*)();

void* thread_main(void* arg) {
  reinterpret_cast<ThreadOp>(arg)();
  return nullptr;
}

// Runs op as the very first thing on a new thread.
void on_new_thread(ThreadOp op) {
  pthread_t t;
  if (pthread_create(&t, nullptr, thread_main, reinterpret_cast<void*>(op)) != 0) {
    FAIL_MSG("pthread_create failed");
    return;
  }
  pthread_join(t, nullptr);
}

}  // namespace

// FIRST_OP_TEST(name, { body }): body runs as a new thread's first action.
#define FIRST_OP_TEST(name, ...)                                    \
  static void first_op_##name() __VA_ARGS__ TEST(first_op_##name) { \
    prepare_foreign();                                              \
    on_new_thread(first_op_##name);                                 \
  }

FIRST_OP_TEST(malloc, {
  void* p = malloc(100);
  ASSERT_NOT_NULL(p);
  EXPECT_EQ(malloc_usable_size(p), 112u);
  std::memset(p, 1, 100);
  free(p);
  free(g_foreign);
})

FIRST_OP_TEST(calloc, {
  void* p = calloc(100, 100);
  ASSERT_NOT_NULL(p);
  EXPECT_EQ(jt::first_nonzero(p, 10000), 10000u);
  free(p);
  free(g_foreign);
})

FIRST_OP_TEST(free_foreign, {
  free(g_foreign);
  void* p = malloc(kForeignSize);  // the thread works normally afterwards
  ASSERT_NOT_NULL(p);
  free(p);
})

FIRST_OP_TEST(free_null, {
  free(nullptr);
  void* p = malloc(10);
  ASSERT_NOT_NULL(p);
  free(p);
  free(g_foreign);
})

FIRST_OP_TEST(realloc_null, {
  void* p = realloc(nullptr, 500);
  ASSERT_NOT_NULL(p);
  EXPECT_EQ(malloc_usable_size(p), 512u);
  free(p);
  free(g_foreign);
})

FIRST_OP_TEST(realloc_foreign, {
  void* p = realloc(g_foreign, 50000);
  ASSERT_NOT_NULL(p);
  EXPECT_TRUE(foreign_intact(p));
  free(p);
})

FIRST_OP_TEST(posix_memalign, {
  void* p = nullptr;
  ASSERT_EQ(posix_memalign(&p, 256, 1000), 0);
  EXPECT_EQ((uintptr_t)p & 255, 0u);
  free(p);
  free(g_foreign);
})

FIRST_OP_TEST(aligned_alloc, {
  void* p = aligned_alloc(4096, 100);
  ASSERT_NOT_NULL(p);
  EXPECT_EQ((uintptr_t)p & 4095, 0u);
  free(p);
  free(g_foreign);
})

FIRST_OP_TEST(memalign, {
  void* p = memalign(64, 100);
  ASSERT_NOT_NULL(p);
  EXPECT_EQ((uintptr_t)p & 63, 0u);
  free(p);
  free(g_foreign);
})

FIRST_OP_TEST(valloc, {
  void* p = valloc(100);
  ASSERT_NOT_NULL(p);
  EXPECT_EQ((uintptr_t)p & 4095, 0u);
  free(p);
  free(g_foreign);
})

FIRST_OP_TEST(malloc_usable_size, {
  EXPECT_EQ(malloc_usable_size(g_foreign), nallocx(kForeignSize, 0));
  free(g_foreign);
})

FIRST_OP_TEST(mallocx, {
  void* p = mallocx(300, MALLOCX_ZERO | MALLOCX_ALIGN(64));
  ASSERT_NOT_NULL(p);
  EXPECT_EQ((uintptr_t)p & 63, 0u);
  EXPECT_EQ(jt::first_nonzero(p, 300), 300u);
  dallocx(p, 0);
  free(g_foreign);
})

FIRST_OP_TEST(mallocx_tcache_none, {
  void* p = mallocx(300, MALLOCX_TCACHE_NONE);
  ASSERT_NOT_NULL(p);
  dallocx(p, MALLOCX_TCACHE_NONE);
  free(g_foreign);
})

FIRST_OP_TEST(rallocx_foreign, {
  void* p = rallocx(g_foreign, 100000, 0);
  ASSERT_NOT_NULL(p);
  EXPECT_TRUE(foreign_intact(p));
  dallocx(p, 0);
})

FIRST_OP_TEST(xallocx_foreign, {
  EXPECT_EQ(xallocx(g_foreign, kForeignSize, 0, 0), nallocx(kForeignSize, 0));
  free(g_foreign);
})

FIRST_OP_TEST(sallocx_foreign, {
  EXPECT_EQ(sallocx(g_foreign, 0), nallocx(kForeignSize, 0));
  free(g_foreign);
})

FIRST_OP_TEST(dallocx_foreign, { dallocx(g_foreign, 0); })

FIRST_OP_TEST(sdallocx_foreign, { sdallocx(g_foreign, kForeignSize, 0); })

FIRST_OP_TEST(nallocx, {
  EXPECT_EQ(nallocx(16385, 0), 20480u);
  free(g_foreign);
})

FIRST_OP_TEST(mallctl_read, {
  uint64_t a = 1;
  EXPECT_EQ(jt::ctl_get("thread.allocated", &a), 0);
  EXPECT_EQ(a, 0u);  // nothing allocated by this thread yet
  uint64_t* ap = nullptr;
  EXPECT_EQ(jt::ctl_get("thread.allocatedp", &ap), 0);
  ASSERT_NOT_NULL(ap);
  void* p = malloc(1);
  jt::escape(p);
  EXPECT_EQ(*ap, 8u);
  free(p);
  free(g_foreign);
})

FIRST_OP_TEST(mallctl_thread_arena_write, {
  unsigned a = 0;
  EXPECT_EQ(jt::ctl_set("thread.arena", a), 0);
  unsigned now = 99;
  EXPECT_EQ(jt::ctl_get("thread.arena", &now), 0);
  EXPECT_EQ(now, 0u);
  free(g_foreign);
})

FIRST_OP_TEST(mallctl_tcache_flush, {
  int r = mallctl("thread.tcache.flush", nullptr, nullptr, nullptr, 0);
  EXPECT_EQ(r, jt::conf_bool("tcache", true) ? 0 : EFAULT);
  free(g_foreign);
})

FIRST_OP_TEST(mallctl_epoch_write, {
  EXPECT_TRUE(jt::refresh_stats());
  free(g_foreign);
})

FIRST_OP_TEST(mallctlnametomib, {
  size_t mib[4];
  size_t len = 4;
  EXPECT_EQ(mallctlnametomib("arenas.bin.0.size", mib, &len), 0);
  size_t v = 0, vl = sizeof(v);
  EXPECT_EQ(mallctlbymib(mib, len, &v, &vl, nullptr, 0), 0);
  EXPECT_EQ(v, 8u);
  free(g_foreign);
})

namespace {
size_t g_print_bytes;
void count_cb(void*, const char* s) { g_print_bytes += std::strlen(s); }
}  // namespace

FIRST_OP_TEST(malloc_stats_print, {
  g_print_bytes = 0;
  malloc_stats_print(count_cb, nullptr, "J");
  EXPECT_GT(g_print_bytes, 0u);
  free(g_foreign);
})

FIRST_OP_TEST(operator_new, {
  void* p = ::operator new(200);
  ASSERT_NOT_NULL(p);
  EXPECT_EQ(sallocx(p, 0), 224u);
  ::operator delete(p, (size_t)200);
  free(g_foreign);
})

FIRST_OP_TEST(operator_new_aligned, {
  void* p = ::operator new(200, std::align_val_t(1024));
  ASSERT_NOT_NULL(p);
  EXPECT_EQ((uintptr_t)p & 1023, 0u);
  ::operator delete(p, std::align_val_t(1024));
  free(g_foreign);
})

FIRST_OP_TEST(operator_delete_foreign, { ::operator delete(g_foreign); })

// ---------------------------------------------------------------------------
// TLS destructors.  Our key is created after the allocator initialized, so
// its destructor runs after the allocator's own thread-exit cleanup in each
// round; re-setting the value asks for further rounds.

namespace {

pthread_key_t g_key;
std::atomic<int> g_dtor_rounds{0};
std::atomic<int> g_dtor_failures{0};
std::atomic<uint64_t> g_dtor_allocated{0};

// Allocates and frees through several entry points; counts what went wrong.
void churn_from_destructor() {
  for (size_t n = 8; n <= ((size_t)1 << 20); n *= 4) {
    unsigned char* p = static_cast<unsigned char*>(malloc(n));
    if (p == nullptr) {
      g_dtor_failures++;
      continue;
    }
    jt::fill_pattern(p, n, p);
    if (jt::check_pattern(p, n, p) != n) g_dtor_failures++;
    p = static_cast<unsigned char*>(realloc(p, n * 2));
    if (p == nullptr) {
      g_dtor_failures++;
      continue;
    }
    free(p);
    void* q = mallocx(n, MALLOCX_ZERO);
    if (q == nullptr || jt::first_nonzero(q, n) != n) g_dtor_failures++;
    if (q != nullptr) sdallocx(q, n, 0);
    void* r = ::operator new(n, std::nothrow);
    if (r == nullptr) g_dtor_failures++;
    ::operator delete(r);
  }
  uint64_t a = 0;
  if (jt::ctl_get("thread.allocated", &a) != 0) g_dtor_failures++;
  g_dtor_allocated = a;
}

void key_destructor(void* value) {
  g_dtor_rounds++;
  // Free what the thread left in the key, then allocate anew.
  free(value);
  churn_from_destructor();
  if (g_dtor_rounds.load() % 3 != 0) {
    // Ask for another round, with a fresh block to free then.
    void* again = malloc(777);
    if (again == nullptr) g_dtor_failures++;
    pthread_setspecific(g_key, again);
  }
}

void* key_thread(void*) {
  void* p = malloc(555);
  pthread_setspecific(g_key, p);
  void* keep = malloc(100);  // thread state exists before exit
  free(keep);
  return nullptr;
}

struct AllocatingDtor {
  void* held = nullptr;
  ~AllocatingDtor() {
    free(held);
    churn_from_destructor();
    g_dtor_rounds++;
  }
};

thread_local AllocatingDtor t_obj;

void* cxx_tls_thread(void*) {
  t_obj.held = malloc(4000);
  return nullptr;
}

}  // namespace

TEST(allocation_from_pthread_key_destructor) {
  // Make sure the allocator is initialized before the key exists.
  void* warm = malloc(1);
  free(warm);
  ASSERT_EQ(pthread_key_create(&g_key, key_destructor), 0);
  g_dtor_rounds = 0;
  g_dtor_failures = 0;
  pthread_t t;
  ASSERT_EQ(pthread_create(&t, nullptr, key_thread, nullptr), 0);
  pthread_join(t, nullptr);
  EXPECT_EQ(g_dtor_rounds.load(), 3);
  EXPECT_EQ(g_dtor_failures.load(), 0);
  pthread_key_delete(g_key);
}

TEST(allocation_from_thread_local_destructor) {
  g_dtor_rounds = 0;
  g_dtor_failures = 0;
  pthread_t t;
  ASSERT_EQ(pthread_create(&t, nullptr, cxx_tls_thread, nullptr), 0);
  pthread_join(t, nullptr);
  EXPECT_EQ(g_dtor_rounds.load(), 1);
  EXPECT_EQ(g_dtor_failures.load(), 0);
}

// ---------------------------------------------------------------------------
// After thread exit.

namespace {

struct Leftovers {
  void* small[64];
  void* large[8];
  unsigned tcache = UINT_MAX;
  unsigned arena = UINT_MAX;
};

void* leaving_thread(void* arg) {
  Leftovers* l = static_cast<Leftovers*>(arg);
  for (int i = 0; i < 64; i++) {
    size_t n = 8 + (size_t)i * 37;
    l->small[i] = malloc(n);
    if (l->small[i] != nullptr) jt::fill_pattern(l->small[i], n, l->small[i]);
  }
  for (int i = 0; i < 8; i++) {
    size_t n = ((size_t)16 << 10) << i;
    l->large[i] = malloc(n);
    if (l->large[i] != nullptr) jt::fill_pattern(l->large[i], 4096, l->large[i]);
  }
  // Leave some blocks in this thread's cache, too.
  for (int i = 0; i < 32; i++) free(malloc(48));
  jt::ctl_get("tcache.create", &l->tcache);
  if (l->tcache != UINT_MAX) {
    void* p = mallocx(128, MALLOCX_TCACHE(l->tcache));
    dallocx(p, MALLOCX_TCACHE(l->tcache));
  }
  unsigned a = UINT_MAX;
  size_t len = sizeof(a);
  if (mallctl("arenas.create", &a, &len, nullptr, 0) == 0) {
    l->arena = a;
    jt::ctl_set("thread.arena", a);
    void* p = malloc(1000);
    free(p);
  }
  return nullptr;
}

}  // namespace

TEST(memory_outlives_thread) {
  Leftovers l;
  pthread_t t;
  ASSERT_EQ(pthread_create(&t, nullptr, leaving_thread, &l), 0);
  pthread_join(t, nullptr);
  for (int i = 0; i < 64; i++) {
    size_t n = 8 + (size_t)i * 37;
    ASSERT_NOT_NULL(l.small[i]);
    EXPECT_EQ(jt::check_pattern(l.small[i], n, l.small[i]), n);
    EXPECT_EQ(malloc_usable_size(l.small[i]), nallocx(n, 0));
    free(l.small[i]);
  }
  for (int i = 0; i < 8; i++) {
    ASSERT_NOT_NULL(l.large[i]);
    EXPECT_EQ(jt::check_pattern(l.large[i], 4096, l.large[i]), 4096u);
    free(l.large[i]);
  }
  // An explicit tcache is not tied to the thread that created it.
  ASSERT_NE(l.tcache, UINT_MAX);
  void* p = mallocx(128, MALLOCX_TCACHE(l.tcache));
  ASSERT_NOT_NULL(p);
  dallocx(p, MALLOCX_TCACHE(l.tcache));
  EXPECT_EQ(mallctl("tcache.destroy", nullptr, nullptr, &l.tcache, sizeof(l.tcache)), 0);
  // The exited thread no longer counts as bound to its arena.
  ASSERT_NE(l.arena, UINT_MAX);
  jt::refresh_stats();
  char name[128];
  unsigned nthreads = 99;
  EXPECT_EQ(jt::ctl_get(jt::ctl_name(name, "stats.arenas.%u.nthreads", l.arena), &nthreads), 0);
  EXPECT_EQ(nthreads, 0u);
}

namespace {

void* short_lived(void* arg) {
  unsigned* bound = static_cast<unsigned*>(arg);
  void* p = malloc(200);
  jt::escape(p);
  free(p);
  jt::ctl_get("thread.arena", bound);
  return nullptr;
}

}  // namespace

TEST(thread_exit_unbinds_arenas) {
  // Threads bind to automatic arenas and unbind at exit: after many
  // sequential threads, the sum of nthreads over all arenas is back to
  // what it was (the main thread's binding).
  jt::refresh_stats();
  char name[128];
  unsigned total0 = 0;
  ASSERT_EQ(
      jt::ctl_get(jt::ctl_name(name, "stats.arenas.%d.nthreads", MALLCTL_ARENAS_ALL), &total0), 0);
  for (int i = 0; i < 40; i++) {
    unsigned bound = UINT_MAX;
    pthread_t t;
    ASSERT_EQ(pthread_create(&t, nullptr, short_lived, &bound), 0);
    pthread_join(t, nullptr);
    unsigned n = 0;
    jt::ctl_get("arenas.narenas", &n);
    EXPECT_LT(bound, n);
  }
  jt::refresh_stats();
  unsigned total1 = 0;
  ASSERT_EQ(
      jt::ctl_get(jt::ctl_name(name, "stats.arenas.%d.nthreads", MALLCTL_ARENAS_ALL), &total1), 0);
  EXPECT_EQ(total1, total0);
}

// Stack a short-lived thread's allocator use takes (ours; 5.3.0 and debug or sanitizer builds,
// whose frames are larger, are not held to it). A new thread runs on fresh pages: whatever its
// first malloc or its exit takes beyond the thread's own frames is faulted in for that alone,
// once per thread. Before: 4 KiB of flush arrays at exit cost mleak (10,000 threads) a page
// each of 6,000 fresh stacks (doc/design/threads.md, "Stack").
namespace stack_use {

constexpr size_t kBytes = 256 << 10;
constexpr unsigned char kPaint = 0xA5;
constexpr size_t kGap = 1024;  // left unpainted below the frame, for memset's own
char* g_stack;
uintptr_t g_frame;
long g_first_call;  // bytes below the thread's frame its first calloc and free touched

uintptr_t deepest() {
  size_t i = 0;
  while (i < kBytes && static_cast<unsigned char>(g_stack[i]) == kPaint) i++;
  return reinterpret_cast<uintptr_t>(g_stack) + i;
}

void* thread_fn(void*) {
  volatile char here = 0;
  g_frame = reinterpret_cast<uintptr_t>(&here);
  void* p = calloc(16, sizeof(void*));  // mleak's block
  jt::escape(p);
  free(g_foreign);
  free(p);
  g_first_call = static_cast<long>(g_frame) - static_cast<long>(deepest());
  // Paint again: what the exit (from start_thread, at this depth) takes shows after the join.
  std::memset(g_stack, kPaint, g_frame - kGap - reinterpret_cast<uintptr_t>(g_stack));
  return nullptr;
}

}  // namespace stack_use

TEST(short_thread_takes_little_stack) {
  if (jt::is_reference()) SKIP_TEST("5.3.0 takes more");
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  SKIP_TEST("sanitizers enlarge the frames");
#endif
  bool debug = false;
  if (jt::ctl_get("config.debug", &debug) != 0 || debug) SKIP_TEST("debug build");
  using namespace stack_use;
  // Bind calloc's lazy PLT entry here: the loader's resolver takes kilobytes of stack itself.
  void* q = calloc(1, 1);
  jt::escape(q);
  free(q);
  // A thread before, as in a program that starts many: the first one also starts ours idle
  // return's thread (once per process), from deeper in its calls.
  prepare_foreign();
  on_new_thread([] {
    void* p = calloc(16, sizeof(void*));
    jt::escape(p);
    free(g_foreign);
    free(p);
  });
  prepare_foreign();
  void* m = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_TRUE(m != MAP_FAILED);
  g_stack = static_cast<char*>(m);
  std::memset(g_stack, kPaint, kBytes);
  pthread_attr_t attr;
  ASSERT_EQ(pthread_attr_init(&attr), 0);
  ASSERT_EQ(pthread_attr_setstack(&attr, g_stack, kBytes), 0);
  pthread_t t;
  ASSERT_EQ(pthread_create(&t, &attr, thread_fn, nullptr), 0);
  pthread_join(t, nullptr);
  pthread_attr_destroy(&attr);
  const long exit = static_cast<long>(g_frame) - static_cast<long>(deepest());
  // Today 2.5 KiB for the first calls (1 KiB of it the heap profiler's frame buffer in the slow
  // path's frame) and 1.8-2.2 KiB for the exit (4.8 KiB before), over this program's MALLOC_CONF
  // variants.
  EXPECT_LT(g_first_call, 3072);
  EXPECT_LT(exit, 3072);
  munmap(m, kBytes);
}

TEST(concurrent_first_operations) {
  // Many threads doing their first operation at the same moment.
  constexpr int kThreads = 16;
  static pthread_barrier_t barrier;
  pthread_barrier_init(&barrier, nullptr, kThreads);
  static std::atomic<int> ok{0};
  ok = 0;
  pthread_t ts[kThreads];
  for (int i = 0; i < kThreads; i++) {
    auto fn = [](void* arg) -> void* {
      pthread_barrier_wait(&barrier);
      size_t n = 16 + (size_t)(uintptr_t)arg * 1000;
      void* p = (uintptr_t)arg % 2 ? mallocx(n, 0) : malloc(n);
      if (p != nullptr && sallocx(p, 0) == nallocx(n, 0)) ok++;
      free(p);
      return nullptr;
    };
    ASSERT_EQ(pthread_create(&ts[i], nullptr, fn, (void*)(uintptr_t)i), 0);
  }
  for (pthread_t t : ts) pthread_join(t, nullptr);
  pthread_barrier_destroy(&barrier);
  EXPECT_EQ(ok.load(), kThreads);
}
