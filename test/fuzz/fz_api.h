// fz_api.h: the public names of the fuzz build of the library.
//
// test/fuzz/build.sh links the allocator statically into each fuzz target after renaming
// every exported name `x` to `fz_x` (objcopy --redefine-syms), so that the sanitizer's own
// malloc (which instruments the harness) and ours live side by side in one process.
#pragma once

#include <stddef.h>

extern "C" {
void* fz_malloc(size_t size);
void* fz_calloc(size_t n, size_t size);
void* fz_realloc(void* p, size_t size);
void fz_free(void* p);
int fz_posix_memalign(void** out, size_t alignment, size_t size);
void* fz_aligned_alloc(size_t alignment, size_t size);
size_t fz_malloc_usable_size(const void* p);
void* fz_mallocx(size_t size, int flags);
void* fz_rallocx(void* p, size_t size, int flags);
size_t fz_xallocx(void* p, size_t size, size_t extra, int flags);
size_t fz_sallocx(const void* p, int flags);
void fz_dallocx(void* p, int flags);
void fz_sdallocx(void* p, size_t size, int flags);
size_t fz_nallocx(size_t size, int flags);
int fz_mallctl(const char* name, void* oldp, size_t* oldlenp, void* newp, size_t newlen);
}

// The flag encodings of jemalloc's public header (5.3.0).
inline int fz_lg_align(unsigned la) { return static_cast<int>(la); }
inline constexpr int kFzZero = 0x40;
inline int fz_tcache(unsigned tc) { return static_cast<int>((tc + 2) << 8); }
inline constexpr int kFzTcacheNone = 1 << 8;
inline int fz_arena(unsigned a) { return static_cast<int>((a + 1) << 20); }
