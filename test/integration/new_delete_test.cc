// new_delete_test: the 20 replaceable C++ allocation operators the library
// exports (the C++ standard's and jemalloc 5.3.0's): new-handler protocol, nothrow forms,
// aligned forms, and sized/aligned deletes reaching the allocator with the
// right size (seen through thread.deallocated).
#include <sys/resource.h>

#include <new>

#include "harness.h"

namespace {

// Read through volatile so the compiler neither folds nor warns about the
// impossible requests.
volatile size_t v_too_big = SIZE_MAX - 4096;  // beyond every size class
volatile size_t v_huge = (size_t)1 << 62;     // a class no mmap can satisfy
#define kTooBig ((size_t)v_too_big)
#define kHuge ((size_t)v_huge)

uint64_t allocated() {
  uint64_t v = 0;
  jt::ctl_get("thread.allocated", &v);
  return v;
}

uint64_t deallocated() {
  uint64_t v = 0;
  jt::ctl_get("thread.deallocated", &v);
  return v;
}

int g_handler_calls = 0;

// A new-handler that gives up after its first call (uninstalls itself), so
// the operator's retry loop ends.
void handler_once() {
  g_handler_calls++;
  std::set_new_handler(nullptr);
}

// A new-handler that gives up by throwing, as the standard lets it.
void handler_throws() {
  g_handler_calls++;
  throw std::bad_alloc();
}

// A new-handler that makes the retry succeed: it lifts the address-space
// limit that made the first attempt fail.
struct rlimit g_saved_limit;
void handler_lift_limit() {
  g_handler_calls++;
  setrlimit(RLIMIT_AS, &g_saved_limit);
}

// Current virtual size of the process in bytes (/proc/self/statm).
size_t vm_size() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long pages = 0;
  if (std::fscanf(f, "%lu", &pages) != 1) pages = 0;
  std::fclose(f);
  return pages * (size_t)sysconf(_SC_PAGESIZE);
}

void* (*volatile v_new)(size_t) = ::operator new;
void* (*volatile v_new_arr)(size_t) = ::operator new[];

}  // namespace

TEST(new_delete_plain) {
  uint64_t a0 = allocated();
  void* p = ::operator new(100);
  ASSERT_NOT_NULL(p);
  EXPECT_EQ(allocated() - a0, nallocx(100, 0));
  EXPECT_EQ(sallocx(p, 0), nallocx(100, 0));
  uint64_t d0 = deallocated();
  ::operator delete(p);
  EXPECT_EQ(deallocated() - d0, nallocx(100, 0));

  p = ::operator new[](5000);
  ASSERT_NOT_NULL(p);
  EXPECT_EQ(sallocx(p, 0), nallocx(5000, 0));
  d0 = deallocated();
  ::operator delete[](p);
  EXPECT_EQ(deallocated() - d0, nallocx(5000, 0));

  // Zero bytes: a unique, valid pointer.
  void* z1 = ::operator new(0);
  void* z2 = ::operator new(0);
  EXPECT_NE(z1, z2);
  ::operator delete(z1);
  ::operator delete(z2);
}

TEST(new_expression_objects) {
  struct Obj {
    int v[25];
  };
  Obj* o = new Obj();
  ASSERT_NOT_NULL(o);
  EXPECT_EQ(sallocx(o, 0), nallocx(sizeof(Obj), 0));
  delete o;
  int* arr = new int[1000]();
  EXPECT_EQ(arr[999], 0);
  EXPECT_GE(sallocx(arr, 0), 1000 * sizeof(int));
  delete[] arr;
}

TEST(new_failure_calls_handler_then_throws) {
  g_handler_calls = 0;
  std::set_new_handler(handler_once);
  bool threw = false;
  try {
    void* p = v_new(kTooBig);
    jt::escape(p);
  } catch (const std::bad_alloc&) {
    threw = true;
  }
  EXPECT_TRUE(threw);
  EXPECT_EQ(g_handler_calls, 1);

  g_handler_calls = 0;
  std::set_new_handler(handler_once);
  threw = false;
  try {
    void* p = v_new_arr(kHuge);
    jt::escape(p);
  } catch (const std::bad_alloc&) {
    threw = true;
  }
  EXPECT_TRUE(threw);
  EXPECT_EQ(g_handler_calls, 1);

  // No handler: bad_alloc straight away.
  std::set_new_handler(nullptr);
  threw = false;
  try {
    void* p = v_new(kTooBig);
    jt::escape(p);
  } catch (const std::bad_alloc&) {
    threw = true;
  }
  EXPECT_TRUE(threw);
}

TEST(new_handler_can_recover) {
  // The handler is called when the allocation fails and the allocation is
  // retried afterwards: with RLIMIT_AS just above the current size a 256 MiB
  // request fails until the handler lifts the limit.
  ASSERT_EQ(getrlimit(RLIMIT_AS, &g_saved_limit), 0);
  size_t vs = vm_size();
  ASSERT_GT(vs, 0u);
  struct rlimit tight = g_saved_limit;
  tight.rlim_cur = vs + ((size_t)16 << 20);
  if (g_saved_limit.rlim_cur != RLIM_INFINITY && g_saved_limit.rlim_cur < tight.rlim_cur) {
    SKIP_TEST("RLIMIT_AS already tight");
  }
  g_handler_calls = 0;
  std::set_new_handler(handler_lift_limit);
  ASSERT_EQ(setrlimit(RLIMIT_AS, &tight), 0);
  void* p = nullptr;
  bool threw = false;
  try {
    p = v_new((size_t)256 << 20);
  } catch (const std::bad_alloc&) {
    threw = true;
  }
  setrlimit(RLIMIT_AS, &g_saved_limit);
  std::set_new_handler(nullptr);
  EXPECT_FALSE(threw);
  if (p != nullptr && g_handler_calls == 0) {
    ::operator delete(p);
    SKIP_TEST("256 MiB fit in address space the library had already reserved");
  }
  EXPECT_EQ(g_handler_calls, 1);
  EXPECT_NOT_NULL(p);
  if (p != nullptr) {
    EXPECT_EQ(sallocx(p, 0), (size_t)256 << 20);
    ::operator delete(p);
  }
}

TEST(nothrow_returns_null) {
  std::set_new_handler(nullptr);
  void* p = ::operator new(kTooBig, std::nothrow);
  EXPECT_NULL(p);
  p = ::operator new[](kHuge, std::nothrow);
  EXPECT_NULL(p);
  p = ::operator new(kTooBig, std::align_val_t(64), std::nothrow);
  EXPECT_NULL(p);
  p = ::operator new[](kTooBig, std::align_val_t(4096), std::nothrow);
  EXPECT_NULL(p);
  // The handler is still consulted by the nothrow forms.
  g_handler_calls = 0;
  std::set_new_handler(handler_once);
  p = ::operator new(kHuge, std::nothrow);
  EXPECT_NULL(p);
  EXPECT_EQ(g_handler_calls, 1);
  // A handler that throws bad_alloc ends the loop: the nothrow forms return null.
  g_handler_calls = 0;
  std::set_new_handler(handler_throws);
  p = ::operator new(kHuge, std::nothrow);
  EXPECT_NULL(p);
  p = ::operator new[](kTooBig, std::align_val_t(64), std::nothrow);
  EXPECT_NULL(p);
  EXPECT_EQ(g_handler_calls, 2);
  std::set_new_handler(nullptr);
  // Success paths.
  p = ::operator new(64, std::nothrow);
  ASSERT_NOT_NULL(p);
  EXPECT_EQ(sallocx(p, 0), 64u);
  ::operator delete(p, std::nothrow);
  p = ::operator new[](64, std::nothrow);
  ASSERT_NOT_NULL(p);
  ::operator delete[](p, std::nothrow);
}

TEST(aligned_new_honours_alignment) {
  for (int lg = 4; lg <= 21; lg++) {
    size_t a = (size_t)1 << lg;
    std::align_val_t al{a};
    void* p = ::operator new(100, al);
    ASSERT_NOT_NULL(p);
    EXPECT_EQ((uintptr_t)p & (a - 1), 0u);
    EXPECT_EQ(sallocx(p, 0), nallocx(100, MALLOCX_ALIGN(a)));
    uint64_t d0 = deallocated();
    ::operator delete(p, al);
    EXPECT_EQ(deallocated() - d0, nallocx(100, MALLOCX_ALIGN(a)));

    p = ::operator new[](3000, al);
    ASSERT_NOT_NULL(p);
    EXPECT_EQ((uintptr_t)p & (a - 1), 0u);
    ::operator delete[](p, al);

    p = ::operator new(10, al, std::nothrow);
    ASSERT_NOT_NULL(p);
    EXPECT_EQ((uintptr_t)p & (a - 1), 0u);
    ::operator delete(p, al, std::nothrow);

    p = ::operator new[](10, al, std::nothrow);
    ASSERT_NOT_NULL(p);
    EXPECT_EQ((uintptr_t)p & (a - 1), 0u);
    ::operator delete[](p, al, std::nothrow);
  }
  struct alignas(256) Wide {
    char c[300];
  };
  Wide* w = new Wide;
  EXPECT_EQ((uintptr_t)w & 255, 0u);
  delete w;
  Wide* wa = new Wide[3];
  EXPECT_EQ((uintptr_t)wa & 255, 0u);
  delete[] wa;
}

TEST(aligned_new_failure_throws) {
  std::set_new_handler(nullptr);
  bool threw = false;
  try {
    void* p = ::operator new(kTooBig, std::align_val_t(64));
    jt::escape(p);
  } catch (const std::bad_alloc&) {
    threw = true;
  }
  EXPECT_TRUE(threw);
  threw = false;
  try {
    void* p = ::operator new[](kHuge, std::align_val_t(4096));
    jt::escape(p);
  } catch (const std::bad_alloc&) {
    threw = true;
  }
  EXPECT_TRUE(threw);
}

TEST(sized_delete) {
  static const size_t sizes[] = {1, 24, 100, 1000, 4096, 14336, 16385, 40000, 1 << 20};
  for (size_t n : sizes) {
    void* p = ::operator new(n);
    ASSERT_NOT_NULL(p);
    uint64_t d0 = deallocated();
    ::operator delete(p, n);
    EXPECT_EQ(deallocated() - d0, nallocx(n, 0));

    p = ::operator new[](n);
    ASSERT_NOT_NULL(p);
    d0 = deallocated();
    ::operator delete[](p, n);
    EXPECT_EQ(deallocated() - d0, nallocx(n, 0));

    std::align_val_t al{64};
    p = ::operator new(n, al);
    ASSERT_NOT_NULL(p);
    d0 = deallocated();
    ::operator delete(p, n, al);
    EXPECT_EQ(deallocated() - d0, nallocx(n, MALLOCX_ALIGN(64)));

    std::align_val_t big{8192};
    p = ::operator new[](n, big);
    ASSERT_NOT_NULL(p);
    EXPECT_EQ((uintptr_t)p & 8191, 0u);
    d0 = deallocated();
    ::operator delete[](p, n, big);
    EXPECT_EQ(deallocated() - d0, nallocx(n, MALLOCX_ALIGN(8192)));
  }
}

TEST(new_and_malloc_interoperate) {
  // The operators and the C API share one heap: sallocx/malloc_usable_size
  // work on operator-new blocks and sdallocx frees them.
  void* p = ::operator new(333);
  ASSERT_NOT_NULL(p);
  EXPECT_EQ(malloc_usable_size(p), nallocx(333, 0));
  sdallocx(p, 333, 0);
  void* q = std::malloc(444);
  ASSERT_NOT_NULL(q);
  uint64_t d0 = deallocated();
  ::operator delete(q, (size_t)444);
  EXPECT_EQ(deallocated() - d0, nallocx(444, 0));
}
