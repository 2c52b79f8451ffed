// xalloc.cc: jemalloc's non-standard *allocx family.
//
// `flags` carries MALLOCX_LG_ALIGN/ALIGN, MALLOCX_ZERO, MALLOCX_TCACHE(tc)/TCACHE_NONE and
// MALLOCX_ARENA(a) (decoded in alloc_path.h). None of these set errno; failures return NULL
// (or, for xallocx, the unchanged size).
#include "api/alloc_path.h"
#include "jemalloc/jemalloc.h"

using namespace je;
using namespace je::api;

extern "C" {

JE_EXPORT void* mallocx(size_t size, int flags) {
  if (JE_LIKELY(flags == 0)) return alloc_fast<mallocx_slow>(size);
  Request r = Request::of(size, Flags::decode(flags));
  if (JE_UNLIKELY(r.usize == 0)) return nullptr;
  return allocate(r);
}

JE_EXPORT void* rallocx(void* ptr, size_t size, int flags) {
  return reallocate(ptr, Request::of(size, Flags::decode(flags)));
}

JE_EXPORT size_t xallocx(void* ptr, size_t size, size_t extra, int flags) {
  return resize_in_place(ptr, size, extra, Flags::decode(flags));
}

JE_EXPORT size_t sallocx(const void* ptr, int) { return usable_size(ptr); }

JE_EXPORT void dallocx(void* ptr, int flags) {
  if (JE_LIKELY(flags == 0)) {
    free_fast(ptr);
    return;
  }
  deallocate(ptr, Flags::decode(flags).tcache);
}

JE_EXPORT void sdallocx(void* ptr, size_t size, int flags) {
  if (JE_LIKELY(flags == 0)) {
    sized_free_fast(ptr, size);
    return;
  }
  deallocate_sized(ptr, size, Flags::decode(flags));
}

JE_EXPORT size_t nallocx(size_t size, int flags) {
  if (JE_UNLIKELY(!ensure_init())) return 0;
  size_t usize = usize_for(size, Flags::decode(flags).alignment);
  return usize > sc::kLargeMaxClass ? 0 : usize;
}

}  // extern "C"
