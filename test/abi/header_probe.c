/*
 * header_probe.c: exercises every name of <jemalloc/jemalloc.h> and prints
 * what can be observed of it, one "key: value" line each.  header_compat.sh
 * compiles it against Debian's jemalloc 5.3.0 header and against ours (as C
 * and as C++, in several language modes) and diffs the two outputs.
 *
 * The program never calls the allocator's functions and never takes their
 * addresses in evaluated code, so it links against libc alone: prototypes
 * are checked by compatible redeclaration (a mismatch is a compile error),
 * and in C++ their exact types, exception specification included, are
 * printed through decltype.
 *
 * Lines starting with "version" differ between the two headers by design
 * (our NREV and commit id) and are left out of the comparison; the smallocx
 * name is printed with the commit id replaced by <GID>.
 *
 * Modes (chosen with -D): default; PROBE_NO_RENAME, PROBE_MANGLE and
 * PROBE_NO_DEMANGLE define the corresponding JEMALLOC_* switch before the
 * header and only print the resulting name mapping.
 */
#if defined(PROBE_NO_RENAME)
#define JEMALLOC_NO_RENAME
#elif defined(PROBE_MANGLE)
#define JEMALLOC_MANGLE
#elif defined(PROBE_NO_DEMANGLE)
#define JEMALLOC_NO_DEMANGLE
#else
#define PROBE_FULL
#endif

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <jemalloc/jemalloc.h>

#ifdef __cplusplus
#include <type_traits>
#endif

#define PROBE_STR_(x) #x
#define PROBE_STR(x) PROBE_STR_(x)
#define PROBE_CAT_(a, b) a##b
#define PROBE_CAT(a, b) PROBE_CAT_(a, b)

/* "defined" lines: which macros the header leaves defined. */
#define PROBE_DEFINED(name, yes) printf("defined %s: %d\n", #name, (yes))

static void print_defined(void) {
#ifdef JEMALLOC_H_
  PROBE_DEFINED(JEMALLOC_H_, 1);
#else
  PROBE_DEFINED(JEMALLOC_H_, 0);
#endif
#ifdef JEMALLOC_HAVE_ATTR
  PROBE_DEFINED(JEMALLOC_HAVE_ATTR, 1);
#else
  PROBE_DEFINED(JEMALLOC_HAVE_ATTR, 0);
#endif
#ifdef JEMALLOC_HAVE_ATTR_ALLOC_SIZE
  PROBE_DEFINED(JEMALLOC_HAVE_ATTR_ALLOC_SIZE, 1);
#else
  PROBE_DEFINED(JEMALLOC_HAVE_ATTR_ALLOC_SIZE, 0);
#endif
#ifdef JEMALLOC_HAVE_ATTR_FORMAT_ARG
  PROBE_DEFINED(JEMALLOC_HAVE_ATTR_FORMAT_ARG, 1);
#else
  PROBE_DEFINED(JEMALLOC_HAVE_ATTR_FORMAT_ARG, 0);
#endif
#ifdef JEMALLOC_HAVE_ATTR_FORMAT_GNU_PRINTF
  PROBE_DEFINED(JEMALLOC_HAVE_ATTR_FORMAT_GNU_PRINTF, 1);
#else
  PROBE_DEFINED(JEMALLOC_HAVE_ATTR_FORMAT_GNU_PRINTF, 0);
#endif
#ifdef JEMALLOC_HAVE_ATTR_FORMAT_PRINTF
  PROBE_DEFINED(JEMALLOC_HAVE_ATTR_FORMAT_PRINTF, 1);
#else
  PROBE_DEFINED(JEMALLOC_HAVE_ATTR_FORMAT_PRINTF, 0);
#endif
#ifdef JEMALLOC_HAVE_ATTR_FALLTHROUGH
  PROBE_DEFINED(JEMALLOC_HAVE_ATTR_FALLTHROUGH, 1);
#else
  PROBE_DEFINED(JEMALLOC_HAVE_ATTR_FALLTHROUGH, 0);
#endif
#ifdef JEMALLOC_HAVE_ATTR_COLD
  PROBE_DEFINED(JEMALLOC_HAVE_ATTR_COLD, 1);
#else
  PROBE_DEFINED(JEMALLOC_HAVE_ATTR_COLD, 0);
#endif
#ifdef JEMALLOC_OVERRIDE_MEMALIGN
  PROBE_DEFINED(JEMALLOC_OVERRIDE_MEMALIGN, 1);
#else
  PROBE_DEFINED(JEMALLOC_OVERRIDE_MEMALIGN, 0);
#endif
#ifdef JEMALLOC_OVERRIDE_VALLOC
  PROBE_DEFINED(JEMALLOC_OVERRIDE_VALLOC, 1);
#else
  PROBE_DEFINED(JEMALLOC_OVERRIDE_VALLOC, 0);
#endif
#ifdef JEMALLOC_USABLE_SIZE_CONST
  PROBE_DEFINED(JEMALLOC_USABLE_SIZE_CONST, 1);
#else
  PROBE_DEFINED(JEMALLOC_USABLE_SIZE_CONST, 0);
#endif
#ifdef JEMALLOC_USE_CXX_THROW
  PROBE_DEFINED(JEMALLOC_USE_CXX_THROW, 1);
#else
  PROBE_DEFINED(JEMALLOC_USE_CXX_THROW, 0);
#endif
#ifdef JEMALLOC_HAVE_MALLOC_SIZE
  PROBE_DEFINED(JEMALLOC_HAVE_MALLOC_SIZE, 1);
#else
  PROBE_DEFINED(JEMALLOC_HAVE_MALLOC_SIZE, 0);
#endif
#ifdef LG_SIZEOF_PTR_WIN
  PROBE_DEFINED(LG_SIZEOF_PTR_WIN, 1);
#else
  PROBE_DEFINED(LG_SIZEOF_PTR_WIN, 0);
#endif
#ifdef LG_SIZEOF_PTR
  PROBE_DEFINED(LG_SIZEOF_PTR, 1);
#else
  PROBE_DEFINED(LG_SIZEOF_PTR, 0);
#endif
#ifdef JEMALLOC_NO_RENAME
  PROBE_DEFINED(JEMALLOC_NO_RENAME, 1);
#else
  PROBE_DEFINED(JEMALLOC_NO_RENAME, 0);
#endif
#ifdef JEMALLOC_MANGLE
  PROBE_DEFINED(JEMALLOC_MANGLE, 1);
#else
  PROBE_DEFINED(JEMALLOC_MANGLE, 0);
#endif
#ifdef JEMALLOC_NO_DEMANGLE
  PROBE_DEFINED(JEMALLOC_NO_DEMANGLE, 1);
#else
  PROBE_DEFINED(JEMALLOC_NO_DEMANGLE, 0);
#endif
#ifdef JEMALLOC_ATTR
  PROBE_DEFINED(JEMALLOC_ATTR, 1);
#else
  PROBE_DEFINED(JEMALLOC_ATTR, 0);
#endif
#ifdef JEMALLOC_ALIGNED
  PROBE_DEFINED(JEMALLOC_ALIGNED, 1);
#else
  PROBE_DEFINED(JEMALLOC_ALIGNED, 0);
#endif
#ifdef JEMALLOC_ALLOC_SIZE
  PROBE_DEFINED(JEMALLOC_ALLOC_SIZE, 1);
#else
  PROBE_DEFINED(JEMALLOC_ALLOC_SIZE, 0);
#endif
#ifdef JEMALLOC_ALLOC_SIZE2
  PROBE_DEFINED(JEMALLOC_ALLOC_SIZE2, 1);
#else
  PROBE_DEFINED(JEMALLOC_ALLOC_SIZE2, 0);
#endif
#ifdef JEMALLOC_EXPORT
  PROBE_DEFINED(JEMALLOC_EXPORT, 1);
#else
  PROBE_DEFINED(JEMALLOC_EXPORT, 0);
#endif
#ifdef JEMALLOC_FORMAT_ARG
  PROBE_DEFINED(JEMALLOC_FORMAT_ARG, 1);
#else
  PROBE_DEFINED(JEMALLOC_FORMAT_ARG, 0);
#endif
#ifdef JEMALLOC_FORMAT_PRINTF
  PROBE_DEFINED(JEMALLOC_FORMAT_PRINTF, 1);
#else
  PROBE_DEFINED(JEMALLOC_FORMAT_PRINTF, 0);
#endif
#ifdef JEMALLOC_FALLTHROUGH
  PROBE_DEFINED(JEMALLOC_FALLTHROUGH, 1);
#else
  PROBE_DEFINED(JEMALLOC_FALLTHROUGH, 0);
#endif
#ifdef JEMALLOC_NOINLINE
  PROBE_DEFINED(JEMALLOC_NOINLINE, 1);
#else
  PROBE_DEFINED(JEMALLOC_NOINLINE, 0);
#endif
#ifdef JEMALLOC_NOTHROW
  PROBE_DEFINED(JEMALLOC_NOTHROW, 1);
#else
  PROBE_DEFINED(JEMALLOC_NOTHROW, 0);
#endif
#ifdef JEMALLOC_SECTION
  PROBE_DEFINED(JEMALLOC_SECTION, 1);
#else
  PROBE_DEFINED(JEMALLOC_SECTION, 0);
#endif
#ifdef JEMALLOC_RESTRICT_RETURN
  PROBE_DEFINED(JEMALLOC_RESTRICT_RETURN, 1);
#else
  PROBE_DEFINED(JEMALLOC_RESTRICT_RETURN, 0);
#endif
#ifdef JEMALLOC_ALLOCATOR
  PROBE_DEFINED(JEMALLOC_ALLOCATOR, 1);
#else
  PROBE_DEFINED(JEMALLOC_ALLOCATOR, 0);
#endif
#ifdef JEMALLOC_COLD
  PROBE_DEFINED(JEMALLOC_COLD, 1);
#else
  PROBE_DEFINED(JEMALLOC_COLD, 0);
#endif
#ifdef JEMALLOC_SYS_NOTHROW
  PROBE_DEFINED(JEMALLOC_SYS_NOTHROW, 1);
#else
  PROBE_DEFINED(JEMALLOC_SYS_NOTHROW, 0);
#endif
#ifdef JEMALLOC_CXX_THROW
  PROBE_DEFINED(JEMALLOC_CXX_THROW, 1);
#else
  PROBE_DEFINED(JEMALLOC_CXX_THROW, 0);
#endif
#ifdef JEMALLOC_VERSION
  PROBE_DEFINED(JEMALLOC_VERSION, 1);
#else
  PROBE_DEFINED(JEMALLOC_VERSION, 0);
#endif
#ifdef JEMALLOC_VERSION_MAJOR
  PROBE_DEFINED(JEMALLOC_VERSION_MAJOR, 1);
#else
  PROBE_DEFINED(JEMALLOC_VERSION_MAJOR, 0);
#endif
#ifdef JEMALLOC_VERSION_MINOR
  PROBE_DEFINED(JEMALLOC_VERSION_MINOR, 1);
#else
  PROBE_DEFINED(JEMALLOC_VERSION_MINOR, 0);
#endif
#ifdef JEMALLOC_VERSION_BUGFIX
  PROBE_DEFINED(JEMALLOC_VERSION_BUGFIX, 1);
#else
  PROBE_DEFINED(JEMALLOC_VERSION_BUGFIX, 0);
#endif
#ifdef JEMALLOC_VERSION_NREV
  PROBE_DEFINED(JEMALLOC_VERSION_NREV, 1);
#else
  PROBE_DEFINED(JEMALLOC_VERSION_NREV, 0);
#endif
#ifdef JEMALLOC_VERSION_GID
  PROBE_DEFINED(JEMALLOC_VERSION_GID, 1);
#else
  PROBE_DEFINED(JEMALLOC_VERSION_GID, 0);
#endif
#ifdef JEMALLOC_VERSION_GID_IDENT
  PROBE_DEFINED(JEMALLOC_VERSION_GID_IDENT, 1);
#else
  PROBE_DEFINED(JEMALLOC_VERSION_GID_IDENT, 0);
#endif
#ifdef MALLOCX_LG_ALIGN
  PROBE_DEFINED(MALLOCX_LG_ALIGN, 1);
#else
  PROBE_DEFINED(MALLOCX_LG_ALIGN, 0);
#endif
#ifdef MALLOCX_ALIGN
  PROBE_DEFINED(MALLOCX_ALIGN, 1);
#else
  PROBE_DEFINED(MALLOCX_ALIGN, 0);
#endif
#ifdef MALLOCX_ZERO
  PROBE_DEFINED(MALLOCX_ZERO, 1);
#else
  PROBE_DEFINED(MALLOCX_ZERO, 0);
#endif
#ifdef MALLOCX_TCACHE
  PROBE_DEFINED(MALLOCX_TCACHE, 1);
#else
  PROBE_DEFINED(MALLOCX_TCACHE, 0);
#endif
#ifdef MALLOCX_TCACHE_NONE
  PROBE_DEFINED(MALLOCX_TCACHE_NONE, 1);
#else
  PROBE_DEFINED(MALLOCX_TCACHE_NONE, 0);
#endif
#ifdef MALLOCX_ARENA
  PROBE_DEFINED(MALLOCX_ARENA, 1);
#else
  PROBE_DEFINED(MALLOCX_ARENA, 0);
#endif
#ifdef MALLCTL_ARENAS_ALL
  PROBE_DEFINED(MALLCTL_ARENAS_ALL, 1);
#else
  PROBE_DEFINED(MALLCTL_ARENAS_ALL, 0);
#endif
#ifdef MALLCTL_ARENAS_DESTROYED
  PROBE_DEFINED(MALLCTL_ARENAS_DESTROYED, 1);
#else
  PROBE_DEFINED(MALLCTL_ARENAS_DESTROYED, 0);
#endif
}

/* "name" lines: the expansion of each public name and of its je_ twin.
 * Which of them are macros, and what they turn into, is the whole of the
 * JEMALLOC_NO_RENAME / MANGLE / NO_DEMANGLE contract. */
#define PROBE_NAME(n, jn) printf("name %s -> %s; %s -> %s\n", #n, PROBE_STR(n), #jn, PROBE_STR(jn))

static void print_names(void) {
  PROBE_NAME(aligned_alloc, je_aligned_alloc);
  PROBE_NAME(calloc, je_calloc);
  PROBE_NAME(dallocx, je_dallocx);
  PROBE_NAME(free, je_free);
  PROBE_NAME(mallctl, je_mallctl);
  PROBE_NAME(mallctlbymib, je_mallctlbymib);
  PROBE_NAME(mallctlnametomib, je_mallctlnametomib);
  PROBE_NAME(malloc, je_malloc);
  PROBE_NAME(malloc_conf, je_malloc_conf);
  PROBE_NAME(malloc_conf_2_conf_harder, je_malloc_conf_2_conf_harder);
  PROBE_NAME(malloc_message, je_malloc_message);
  PROBE_NAME(malloc_stats_print, je_malloc_stats_print);
  PROBE_NAME(malloc_usable_size, je_malloc_usable_size);
  PROBE_NAME(malloc_size, je_malloc_size);
  PROBE_NAME(mallocx, je_mallocx);
  PROBE_NAME(nallocx, je_nallocx);
  PROBE_NAME(posix_memalign, je_posix_memalign);
  PROBE_NAME(rallocx, je_rallocx);
  PROBE_NAME(realloc, je_realloc);
  PROBE_NAME(sallocx, je_sallocx);
  PROBE_NAME(sdallocx, je_sdallocx);
  PROBE_NAME(xallocx, je_xallocx);
  PROBE_NAME(memalign, je_memalign);
  PROBE_NAME(valloc, je_valloc);
  /* The experimental entry point is named after the commit id. */
  printf("name smallocx_<GID> -> %s; je_smallocx_<GID> -> %s\n",
         PROBE_STR(PROBE_CAT(smallocx_, JEMALLOC_VERSION_GID_IDENT)),
         PROBE_STR(PROBE_CAT(je_smallocx_, JEMALLOC_VERSION_GID_IDENT)));
  printf("version gid-token %s\n", PROBE_STR(JEMALLOC_VERSION_GID_IDENT));
}

/* "version" lines are excluded from the comparison; "versioncheck" lines
 * are not: they check the shape every header must have. */
static void print_version(void) {
  char expect[128];
  printf("version string: %s\n", JEMALLOC_VERSION);
  printf("version nrev: %d\n", (int)JEMALLOC_VERSION_NREV);
  printf("version gid: %s\n", JEMALLOC_VERSION_GID);
  printf("versioncheck major.minor.bugfix: %d.%d.%d\n", JEMALLOC_VERSION_MAJOR,
         JEMALLOC_VERSION_MINOR, JEMALLOC_VERSION_BUGFIX);
#if JEMALLOC_VERSION_MAJOR == 5 && JEMALLOC_VERSION_MINOR >= 3 && JEMALLOC_VERSION_NREV >= 0
  printf("versioncheck usable in #if: 1\n");
#endif
  snprintf(expect, sizeof(expect), "%d.%d.%d-%d-g%s", JEMALLOC_VERSION_MAJOR,
           JEMALLOC_VERSION_MINOR, JEMALLOC_VERSION_BUGFIX, (int)JEMALLOC_VERSION_NREV,
           JEMALLOC_VERSION_GID);
  printf("versioncheck string consistent: %d\n", strcmp(expect, JEMALLOC_VERSION) == 0);
  printf("versioncheck gid ident = gid: %d\n",
         strcmp(PROBE_STR(JEMALLOC_VERSION_GID_IDENT), JEMALLOC_VERSION_GID) == 0);
  printf("versioncheck gid length: %d\n", (int)strlen(JEMALLOC_VERSION_GID));
}

#ifdef PROBE_FULL

/* ---- value macros ---- */

static void print_values(void) {
  static const size_t aligns[] = {1,
                                  2,
                                  8,
                                  16,
                                  64,
                                  4096,
                                  (size_t)1 << 20,
                                  (size_t)1 << 30,
                                  (size_t)INT_MAX,
                                  (size_t)1 << 31,
                                  (size_t)1 << 32,
                                  (size_t)1 << 33,
                                  (size_t)1 << 40,
                                  (size_t)1 << 62,
                                  (size_t)1 << 63};
  static const int tcaches[] = {-1, 0, 1, 2, 100, 4093};
  static const unsigned arenas[] = {0, 1, 2, 7, 100, 1000, 2046};
  size_t i;
  for (i = 0; i < sizeof(aligns) / sizeof(aligns[0]); i++) {
    printf("MALLOCX_ALIGN(%zu) = %d\n", aligns[i], MALLOCX_ALIGN(aligns[i]));
  }
  printf("MALLOCX_ALIGN(literal 1<<40) = %d\n", MALLOCX_ALIGN((size_t)1 << 40));
  printf("MALLOCX_ALIGN(literal 4096) = %d\n", MALLOCX_ALIGN(4096));
  for (i = 0; i < 64; i += 7) {
    printf("MALLOCX_LG_ALIGN(%zu) = %d\n", i, MALLOCX_LG_ALIGN(i));
  }
  printf("MALLOCX_ZERO = %d\n", MALLOCX_ZERO);
  for (i = 0; i < sizeof(tcaches) / sizeof(tcaches[0]); i++) {
    printf("MALLOCX_TCACHE(%d) = %d\n", tcaches[i], MALLOCX_TCACHE(tcaches[i]));
  }
  printf("MALLOCX_TCACHE_NONE = %d\n", MALLOCX_TCACHE_NONE);
  for (i = 0; i < sizeof(arenas) / sizeof(arenas[0]); i++) {
    printf("MALLOCX_ARENA(%u) = %d\n", arenas[i], MALLOCX_ARENA(arenas[i]));
  }
  printf("MALLOCX combined = %d\n",
         MALLOCX_ALIGN(64) | MALLOCX_ZERO | MALLOCX_TCACHE_NONE | MALLOCX_ARENA(3));
  printf("MALLCTL_ARENAS_ALL = %d\n", MALLCTL_ARENAS_ALL);
  printf("MALLCTL_ARENAS_DESTROYED = %d\n", MALLCTL_ARENAS_DESTROYED);
  printf("MALLCTL name: %s\n", "arena." PROBE_STR(MALLCTL_ARENAS_ALL) ".purge");
  printf("MALLCTL name: %s\n", "stats.arenas." PROBE_STR(MALLCTL_ARENAS_DESTROYED) ".pactive");
  printf("LG_SIZEOF_PTR = %d\n", LG_SIZEOF_PTR);
  printf("sizeof MALLOCX_ZERO = %zu\n", sizeof(MALLOCX_ZERO));
  printf("sizeof MALLOCX_ALIGN = %zu\n", sizeof(MALLOCX_ALIGN(16)));
  printf("sizeof MALLOCX_TCACHE = %zu\n", sizeof(MALLOCX_TCACHE(0)));
  printf("sizeof MALLOCX_ARENA = %zu\n", sizeof(MALLOCX_ARENA(0)));
  printf("sizeof MALLCTL_ARENAS_ALL = %zu\n", sizeof(MALLCTL_ARENAS_ALL));
}

/* Attribute macros: their expansions (header_compat.sh removes blanks
 * before comparing), and a use of each so that the compiler checks it. */
static void print_expansions(void) {
  printf("expand JEMALLOC_ATTR(malloc): %s\n", PROBE_STR(JEMALLOC_ATTR(malloc)));
  printf("expand JEMALLOC_ALIGNED(16): %s\n", PROBE_STR(JEMALLOC_ALIGNED(16)));
  printf("expand JEMALLOC_ALLOC_SIZE(1): %s\n", PROBE_STR(JEMALLOC_ALLOC_SIZE(1)));
  printf("expand JEMALLOC_ALLOC_SIZE2(1, 2): %s\n", PROBE_STR(JEMALLOC_ALLOC_SIZE2(1, 2)));
  printf("expand JEMALLOC_EXPORT: %s\n", PROBE_STR(JEMALLOC_EXPORT));
  printf("expand JEMALLOC_FORMAT_ARG(3): %s\n", PROBE_STR(JEMALLOC_FORMAT_ARG(3)));
  printf("expand JEMALLOC_FORMAT_PRINTF(1, 2): %s\n", PROBE_STR(JEMALLOC_FORMAT_PRINTF(1, 2)));
  printf("expand JEMALLOC_FALLTHROUGH: %s\n", PROBE_STR(JEMALLOC_FALLTHROUGH));
  printf("expand JEMALLOC_NOINLINE: %s\n", PROBE_STR(JEMALLOC_NOINLINE));
  printf("expand JEMALLOC_NOTHROW: %s\n", PROBE_STR(JEMALLOC_NOTHROW));
  printf("expand JEMALLOC_SECTION(\".x\"): %s\n", PROBE_STR(JEMALLOC_SECTION(".x")));
  printf("expand JEMALLOC_RESTRICT_RETURN: %s\n", PROBE_STR(JEMALLOC_RESTRICT_RETURN));
  printf("expand JEMALLOC_ALLOCATOR: %s\n", PROBE_STR(JEMALLOC_ALLOCATOR));
  printf("expand JEMALLOC_COLD: %s\n", PROBE_STR(JEMALLOC_COLD));
  printf("expand JEMALLOC_SYS_NOTHROW: %s\n", PROBE_STR(JEMALLOC_SYS_NOTHROW));
  printf("expand JEMALLOC_USABLE_SIZE_CONST: %s\n", PROBE_STR(JEMALLOC_USABLE_SIZE_CONST));
  printf("expand JEMALLOC_USE_CXX_THROW: %s\n", PROBE_STR(JEMALLOC_USE_CXX_THROW));
#ifndef __cplusplus
  /* In C++ the spelling may be throw() or noexcept(true); what counts
	 * there is the function type, printed by print_cxx_types(). */
  printf("expand JEMALLOC_CXX_THROW: %s\n", PROBE_STR(JEMALLOC_CXX_THROW));
#endif
}

JEMALLOC_ALIGNED(32) static char probe_aligned_var[4];
JEMALLOC_SECTION(".data.jeprobe") static int probe_section_var = 1;

static JEMALLOC_NOINLINE JEMALLOC_COLD int probe_cold(int x) {
  switch (x) {
    case 0: x += 2; JEMALLOC_FALLTHROUGH;
    case 1: x += 1; break;
    default: break;
  }
  return x;
}

static JEMALLOC_FORMAT_PRINTF(1, 2) int probe_printf(const char* fmt, ...);
static int probe_printf(const char* fmt, ...) {
  (void)fmt;
  return 0;
}

static JEMALLOC_FORMAT_ARG(3) const char* probe_fmtarg(int a, int b, const char* fmt);
static const char* probe_fmtarg(int a, int b, const char* fmt) {
  (void)a;
  (void)b;
  return fmt;
}

JEMALLOC_EXPORT JEMALLOC_ALLOCATOR JEMALLOC_RESTRICT_RETURN void JEMALLOC_NOTHROW*
probe_never_defined(size_t n) JEMALLOC_ATTR(malloc) JEMALLOC_ALLOC_SIZE(1);
JEMALLOC_EXPORT void* probe_never_defined2(size_t n, size_t m) JEMALLOC_ALLOC_SIZE2(1, 2);
JEMALLOC_EXPORT int JEMALLOC_SYS_NOTHROW probe_never_defined3(void) JEMALLOC_CXX_THROW;

static void print_attribute_uses(void) {
  printf("use JEMALLOC_ALIGNED: %d\n", (int)(((size_t)probe_aligned_var & 31) == 0));
  printf("use JEMALLOC_SECTION: %d\n", probe_section_var);
  printf("use JEMALLOC_COLD/NOINLINE/FALLTHROUGH: %d %d\n", probe_cold(0), probe_cold(1));
  printf("use JEMALLOC_FORMAT_PRINTF: %d\n", probe_printf("%d", 1));
  printf("use JEMALLOC_FORMAT_ARG: %s\n", probe_fmtarg(1, 2, "ok"));
  printf("use declarations: %zu %zu\n", sizeof(probe_never_defined(1)),
         sizeof(probe_never_defined2(1, 1)));
  printf("use JEMALLOC_CXX_THROW decl: %zu\n", sizeof(probe_never_defined3()));
}

/* ---- prototypes: a compatible redeclaration of each public name ---- */

#ifdef __cplusplus
extern "C" {
#endif
extern const char* malloc_conf;
extern void (*malloc_message)(void*, const char*);
/* The nothrow attributes are repeated because clang treats them as an
 * exception specification in C++ and warns when a redeclaration drops it. */
void JEMALLOC_SYS_NOTHROW* malloc(size_t) JEMALLOC_CXX_THROW;
void JEMALLOC_SYS_NOTHROW* calloc(size_t, size_t) JEMALLOC_CXX_THROW;
int JEMALLOC_SYS_NOTHROW posix_memalign(void**, size_t, size_t) JEMALLOC_CXX_THROW;
void JEMALLOC_SYS_NOTHROW* aligned_alloc(size_t, size_t) JEMALLOC_CXX_THROW;
void JEMALLOC_SYS_NOTHROW* realloc(void*, size_t) JEMALLOC_CXX_THROW;
void JEMALLOC_SYS_NOTHROW free(void*) JEMALLOC_CXX_THROW;
void JEMALLOC_NOTHROW* mallocx(size_t, int);
void JEMALLOC_NOTHROW* rallocx(void*, size_t, int);
size_t JEMALLOC_NOTHROW xallocx(void*, size_t, size_t, int);
size_t JEMALLOC_NOTHROW sallocx(const void*, int);
void JEMALLOC_NOTHROW dallocx(void*, int);
void JEMALLOC_NOTHROW sdallocx(void*, size_t, int);
size_t JEMALLOC_NOTHROW nallocx(size_t, int);
int JEMALLOC_NOTHROW mallctl(const char*, void*, size_t*, void*, size_t);
int JEMALLOC_NOTHROW mallctlnametomib(const char*, size_t*, size_t*);
int JEMALLOC_NOTHROW mallctlbymib(const size_t*, size_t, void*, size_t*, void*, size_t);
void JEMALLOC_NOTHROW malloc_stats_print(void (*)(void*, const char*), void*, const char*);
size_t JEMALLOC_NOTHROW malloc_usable_size(void*) JEMALLOC_CXX_THROW;
void JEMALLOC_SYS_NOTHROW* memalign(size_t, size_t) JEMALLOC_CXX_THROW;
void JEMALLOC_SYS_NOTHROW* valloc(size_t) JEMALLOC_CXX_THROW;
#ifdef __cplusplus
}
#endif

/* Return types and arities, without evaluating anything. */
static void print_prototypes(void) {
  void* slot;
  printf("proto sizeof malloc_conf = %zu\n", sizeof(malloc_conf));
  printf("proto sizeof malloc_message = %zu\n", sizeof(malloc_message));
  printf("proto sizeof *malloc_conf = %zu\n", sizeof(*malloc_conf));
  printf("proto sizes %zu %zu %zu %zu %zu %zu\n", sizeof(malloc(1)), sizeof(calloc(1, 1)),
         sizeof(posix_memalign(&slot, 8, 1)), sizeof(aligned_alloc(8, 8)), sizeof(realloc(NULL, 1)),
         sizeof(malloc_usable_size(NULL)));
  printf("proto sizes %zu %zu %zu %zu %zu\n", sizeof(mallocx(1, 0)), sizeof(rallocx(NULL, 1, 0)),
         sizeof(xallocx(NULL, 1, 0, 0)), sizeof(sallocx(NULL, 0)), sizeof(nallocx(1, 0)));
  printf("proto sizes %zu %zu %zu %zu %zu\n", sizeof(mallctl("", NULL, NULL, NULL, 0)),
         sizeof(mallctlnametomib("", NULL, NULL)),
         sizeof(mallctlbymib(NULL, 0, NULL, NULL, NULL, 0)), sizeof(memalign(8, 8)),
         sizeof(valloc(8)));
}

/* ---- extent hooks ---- */

static void* probe_alloc(extent_hooks_t* h, void* addr, size_t size, size_t alignment, bool* zero,
                         bool* commit, unsigned ind) {
  (void)h;
  (void)addr;
  (void)size;
  (void)alignment;
  (void)zero;
  (void)commit;
  (void)ind;
  return NULL;
}
static bool probe_dalloc(extent_hooks_t* h, void* addr, size_t size, bool committed, unsigned ind) {
  (void)h;
  (void)addr;
  (void)size;
  (void)committed;
  (void)ind;
  return true;
}
static void probe_destroy(extent_hooks_t* h, void* addr, size_t size, bool committed,
                          unsigned ind) {
  (void)h;
  (void)addr;
  (void)size;
  (void)committed;
  (void)ind;
}
static bool probe_range(extent_hooks_t* h, void* addr, size_t size, size_t offset, size_t length,
                        unsigned ind) {
  (void)h;
  (void)addr;
  (void)size;
  (void)offset;
  (void)length;
  (void)ind;
  return true;
}
static bool probe_split(extent_hooks_t* h, void* addr, size_t size, size_t size_a, size_t size_b,
                        bool committed, unsigned ind) {
  (void)h;
  (void)addr;
  (void)size;
  (void)size_a;
  (void)size_b;
  (void)committed;
  (void)ind;
  return true;
}
static bool probe_merge(extent_hooks_t* h, void* addr_a, size_t size_a, void* addr_b, size_t size_b,
                        bool committed, unsigned ind) {
  (void)h;
  (void)addr_a;
  (void)size_a;
  (void)addr_b;
  (void)size_b;
  (void)committed;
  (void)ind;
  return true;
}

struct probe_hooks_align {
  char c;
  extent_hooks_t h;
};

static void print_extent_hooks(void) {
  /* Positional initialisation pins both the member order and, through
	 * the function types, every typedef. */
  static extent_hooks_t hooks = {probe_alloc, probe_dalloc, probe_destroy, probe_range, probe_range,
                                 probe_range, probe_range,  probe_split,   probe_merge};
  struct extent_hooks_s* tagged = &hooks;
  extent_alloc_t* a = hooks.alloc;
  extent_dalloc_t* d = hooks.dalloc;
  extent_destroy_t* x = hooks.destroy;
  extent_commit_t* c = hooks.commit;
  extent_decommit_t* dc = hooks.decommit;
  extent_purge_t* pl = hooks.purge_lazy;
  extent_purge_t* pf = hooks.purge_forced;
  extent_split_t* s = hooks.split;
  extent_merge_t* m = hooks.merge;
  printf("extent_hooks_t sizeof = %zu\n", sizeof(extent_hooks_t));
  printf("extent_hooks_t offsetof alloc = %zu\n", offsetof(extent_hooks_t, alloc));
  printf("extent_hooks_t offsetof dalloc = %zu\n", offsetof(extent_hooks_t, dalloc));
  printf("extent_hooks_t offsetof destroy = %zu\n", offsetof(extent_hooks_t, destroy));
  printf("extent_hooks_t offsetof commit = %zu\n", offsetof(extent_hooks_t, commit));
  printf("extent_hooks_t offsetof decommit = %zu\n", offsetof(extent_hooks_t, decommit));
  printf("extent_hooks_t offsetof purge_lazy = %zu\n", offsetof(extent_hooks_t, purge_lazy));
  printf("extent_hooks_t offsetof purge_forced = %zu\n", offsetof(extent_hooks_t, purge_forced));
  printf("extent_hooks_t offsetof split = %zu\n", offsetof(extent_hooks_t, split));
  printf("extent_hooks_t offsetof merge = %zu\n", offsetof(extent_hooks_t, merge));
  printf("extent_hooks_t alignment = %zu\n", offsetof(struct probe_hooks_align, h));
  printf("extent hooks callable: %d %d %d %d %d %d %d %d %d\n",
         a(tagged, NULL, 4096, 4096, NULL, NULL, 0) == NULL, (int)d(tagged, NULL, 4096, true, 0),
         (x(tagged, NULL, 4096, true, 0), 1), (int)c(tagged, NULL, 4096, 0, 4096, 0),
         (int)dc(tagged, NULL, 4096, 0, 4096, 0), (int)pl(tagged, NULL, 4096, 0, 4096, 0),
         (int)pf(tagged, NULL, 4096, 0, 4096, 0), (int)s(tagged, NULL, 8192, 4096, 4096, true, 0),
         (int)m(tagged, NULL, 4096, NULL, 4096, true, 0));
}

#ifdef __cplusplus
/* The compiler's own spelling of a type, e.g. "void* (*)(long unsigned
 * int) noexcept": exception specification and all. */
template <class T>
static const char* probe_type() {
  return __PRETTY_FUNCTION__;
}
#define PROBE_TYPE(expr) printf("cxxtype %s: %s\n", #expr, probe_type<decltype(expr)>())
#define PROBE_TYPENAME(type) printf("cxxtype %s: %s\n", #type, probe_type<type>())

static void print_cxx_types(void) {
  PROBE_TYPE(&malloc);
  PROBE_TYPE(&calloc);
  PROBE_TYPE(&posix_memalign);
  PROBE_TYPE(&aligned_alloc);
  PROBE_TYPE(&realloc);
  PROBE_TYPE(&free);
  PROBE_TYPE(&mallocx);
  PROBE_TYPE(&rallocx);
  PROBE_TYPE(&xallocx);
  PROBE_TYPE(&sallocx);
  PROBE_TYPE(&dallocx);
  PROBE_TYPE(&sdallocx);
  PROBE_TYPE(&nallocx);
  PROBE_TYPE(&mallctl);
  PROBE_TYPE(&mallctlnametomib);
  PROBE_TYPE(&mallctlbymib);
  PROBE_TYPE(&malloc_stats_print);
  PROBE_TYPE(&malloc_usable_size);
  PROBE_TYPE(&memalign);
  PROBE_TYPE(&valloc);
  PROBE_TYPE(&malloc_conf);
  PROBE_TYPE(&malloc_message);
  PROBE_TYPE(MALLOCX_ALIGN(16));
  PROBE_TYPE(MALLOCX_LG_ALIGN(4));
  PROBE_TYPE(MALLOCX_ZERO);
  PROBE_TYPE(MALLOCX_TCACHE(1));
  PROBE_TYPE(MALLOCX_TCACHE_NONE);
  PROBE_TYPE(MALLOCX_ARENA(1));
  PROBE_TYPE(MALLCTL_ARENAS_ALL);
  PROBE_TYPE(LG_SIZEOF_PTR);
  PROBE_TYPE(JEMALLOC_VERSION_MAJOR);
  PROBE_TYPENAME(extent_alloc_t);
  PROBE_TYPENAME(extent_dalloc_t);
  PROBE_TYPENAME(extent_destroy_t);
  PROBE_TYPENAME(extent_commit_t);
  PROBE_TYPENAME(extent_decommit_t);
  PROBE_TYPENAME(extent_purge_t);
  PROBE_TYPENAME(extent_split_t);
  PROBE_TYPENAME(extent_merge_t);
  printf("cxx extent_hooks_t standard layout: %d\n",
         (int)std::is_standard_layout<extent_hooks_t>::value);
  printf("cxx extent_hooks_t trivial: %d\n", (int)std::is_trivial<extent_hooks_t>::value);
  printf("cxx malloc noexcept: %d\n", (int) noexcept(malloc(1)));
  printf("cxx free noexcept: %d\n", (int) noexcept(free(NULL)));
  printf("cxx mallocx noexcept: %d\n", (int) noexcept(mallocx(1, 0)));
  printf("cxx JEMALLOC_CXX_THROW noexcept: %d\n", (int) noexcept(probe_never_defined3()));
}
#endif /* __cplusplus */

#endif /* PROBE_FULL */

int main(void) {
  printf("language %s\n",
#ifdef __cplusplus
         "c++"
#else
         "c"
#endif
  );
  print_defined();
  print_names();
  print_version();
#ifdef PROBE_FULL
  print_values();
  print_expansions();
  print_attribute_uses();
  print_prototypes();
  print_extent_hooks();
#ifdef __cplusplus
  print_cxx_types();
#endif
#endif
  return 0;
}
