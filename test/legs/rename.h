// rename.h: force-included (-include) into test programs built against the renamed static
// library of the sanitizer legs (test/fuzz/build_lib.sh): every public name x becomes fz_x, so
// the program calls our allocator while the sanitizer runtime keeps its own malloc. The system
// headers are read first, with the real names; the macros apply to the program's code only.
#pragma once

#include <malloc.h>
#include <stdlib.h>
#include <unistd.h>
#ifdef __cplusplus
#include <cstdlib>
#include <new>
#endif

#define malloc fz_malloc
#define calloc fz_calloc
#define realloc fz_realloc
#define free fz_free
#define posix_memalign fz_posix_memalign
#define aligned_alloc fz_aligned_alloc
#define memalign fz_memalign
#define valloc fz_valloc
#define malloc_usable_size fz_malloc_usable_size
#define mallocx fz_mallocx
#define rallocx fz_rallocx
#define xallocx fz_xallocx
#define sallocx fz_sallocx
#define dallocx fz_dallocx
#define sdallocx fz_sdallocx
#define nallocx fz_nallocx
#define mallctl fz_mallctl
#define mallctlnametomib fz_mallctlnametomib
#define mallctlbymib fz_mallctlbymib
#define malloc_stats_print fz_malloc_stats_print
#define malloc_message fz_malloc_message
#define malloc_conf fz_malloc_conf

// The harness checks, by name, that the public names come from one shared library; here they
// are renamed and linked statically.
#define JT_RENAMED_STATIC 1
