// malloc.cc: the standard C allocation functions (glibc-compatible prototypes).
//
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "api/alloc_path.h"
#include "ctl/ctl.h"
#include "ctl/opt.h"
#include "jemalloc/jemalloc.h"
#include "support/malloc_io.h"

using namespace je;
using namespace je::api;

namespace {

JE_NOINLINE_COLD void* aligned_slow(size_t alignment, size_t size, size_t min_alignment, int* err) {
  *err = 0;
  if (alignment < min_alignment || !is_pow2(alignment)) {
    *err = EINVAL;
    return nullptr;
  }
  Request r{size, sz::sa2u(size == 0 ? 1 : size, alignment), Flags::aligned(alignment)};
  void* p = r.usize == 0 ? nullptr : allocate(r);
  if (p == nullptr) *err = ENOMEM;
  return p;
}

JE_NOINLINE_COLD void* realloc_zero(void* ptr) {
  ctl_count_zero_realloc();  // stats.zero_reallocs counts the call whatever the action (5.3.0)
  switch (g_opt.zero_realloc_action) {
    case ZeroReallocAction::kAlloc:
      // Keep the block alive as a minimal allocation, bypassing the cache for a true fit.
      {
        Flags f;
        f.tcache = kTcacheNone;
        return reallocate(ptr, Request::of(1, f));
      }
    case ZeroReallocAction::kAbort:
      // 5.3.0's words exactly, without the "<jemalloc>: " prefix its other messages carry.
      io_printf("Called realloc(non-null-ptr, 0) with zero_realloc:abort set\n");
      abort();
    case ZeroReallocAction::kFree:
    default: free_fast(ptr); return nullptr;
  }
}

}  // namespace

extern "C" {

JE_EXPORT void* JE_PUBLIC(malloc)(size_t size) noexcept { return malloc_fast(size); }

JE_EXPORT void JE_PUBLIC(free)(void* ptr) noexcept { free_fast(ptr); }

// C23's sized frees, as jemalloc 5.3.1 defines them: free_sized(p, n) is sdallocx(p, n, 0), and
// free_aligned_sized(p, a, n) sdallocx with alignment a. The size is only checked under
// opt.safety_checks; a null pointer is ignored.
JE_EXPORT void JE_PUBLIC(free_sized)(void* ptr, size_t size) { sized_free_fast(ptr, size); }

JE_EXPORT void JE_PUBLIC(free_aligned_sized)(void* ptr, size_t alignment, size_t size) {
  // An alignment aligned_alloc would have refused is the caller's error; natural then.
  deallocate_sized(ptr, size, Flags::aligned(is_pow2(alignment) ? alignment : 0));
}

JE_EXPORT void* JE_PUBLIC(calloc)(size_t num, size_t size) noexcept {
  size_t total;
  if (JE_UNLIKELY(__builtin_mul_overflow(num, size, &total))) {
    errno = ENOMEM;
    return nullptr;
  }
  if (JE_LIKELY(total <= sc::kLookupMaxClass)) {
    void* p = malloc_fast(total);
    // The whole usable size, as 5.3.0 does: malloc_usable_size() users see zeros too.
    if (JE_LIKELY(p != nullptr)) std::memset(p, 0, sz::s2u(total));
    return p;
  }
  // Large: fresh or purged extents are already zero, so let the page allocator decide.
  Flags f;
  f.zero = true;
  void* p = allocate(Request::of(total, f));
  if (JE_UNLIKELY(p == nullptr)) errno = ENOMEM;
  return p;
}

JE_EXPORT void* JE_PUBLIC(realloc)(void* ptr, size_t size) noexcept {
  if (JE_UNLIKELY(ptr == nullptr)) return malloc_fast(size);
  if (JE_UNLIKELY(size == 0)) return realloc_zero(ptr);
  void* p = reallocate(ptr, Request::of(size, {}));
  if (JE_UNLIKELY(p == nullptr)) errno = ENOMEM;
  return p;
}

JE_EXPORT int JE_PUBLIC(posix_memalign)(void** memptr, size_t alignment, size_t size) noexcept {
  int err;
  void* p = aligned_slow(alignment, size, sizeof(void*), &err);
  if (err == 0) *memptr = p;
  return err;
}

JE_EXPORT void* JE_PUBLIC(aligned_alloc)(size_t alignment, size_t size) noexcept {
  int err;
  void* p = aligned_slow(alignment, size, 1, &err);
  if (err != 0) errno = err;
  return p;
}

JE_EXPORT void* JE_PUBLIC(memalign)(size_t alignment, size_t size) noexcept {
  int err;
  void* p = aligned_slow(alignment, size, 1, &err);
  if (err != 0) errno = err;
  return p;
}

JE_EXPORT void* JE_PUBLIC(valloc)(size_t size) noexcept {
  int err;
  void* p = aligned_slow(config::kPage, size, 1, &err);
  if (err != 0) errno = err;
  return p;
}

// glibc's pvalloc: valloc of the size rounded up to whole pages (0: one page); a size that
// overflows when rounded fails with ENOMEM. Not in 5.3.0 (under it glibc's own pvalloc ran,
// and our free could not release what it returned); 5.3.1 exports it.
JE_EXPORT void* JE_PUBLIC(pvalloc)(size_t size) noexcept {
  if (JE_UNLIKELY(size > SIZE_MAX - (config::kPage - 1))) {
    errno = ENOMEM;
    return nullptr;
  }
  int err;
  void* p = aligned_slow(config::kPage, page_ceil(size), 1, &err);
  if (err != 0) errno = err;
  return p;
}

JE_EXPORT size_t JE_PUBLIC(malloc_usable_size)(void* ptr) noexcept {
  return ptr == nullptr ? 0 : usable_size(ptr);
}

}  // extern "C"
