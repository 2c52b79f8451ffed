// harness.h: a small, header-only test harness for the integration and stress
// programs (test/integration, test/stress).
//
// Why not GoogleTest: these programs test the allocator through its public
// names, so everything they do -- including the harness -- allocates through
// the library under test.  A small harness keeps that traffic predictable,
// keeps the binaries small, and makes the output independent of the gtest
// version installed.  The harness itself allocates nothing while a test runs
// (fixed tables, printf only).
//
// Usage, one program per .cc file:
//   #include "harness.h"
//   TEST(malloc_zero) { void *p = malloc(0); ASSERT_NOT_NULL(p); ... }
//   TEST_COMPAT(opt_bounded_coalesce, "bounded-coalesce") { ... }
// TEST_COMPAT names a documented difference from jemalloc 5.3.0 (an anchor in
// doc/compat.md); such a test is skipped when the library under test is the
// reference 5.3.0 build.  main() is provided (define JT_NO_MAIN to write one).
//
// Exit status: 0 all run tests passed, 1 a test failed (or the library under
// test is not the expected one), 77 every test was skipped.
//
// Command line: test names (exact) or prefixes ending in '*' select tests;
// no argument runs them all.  Environment:
//   JT_EXPECT_LIB=path  fail unless the jemalloc entry points come from the
//                       shared object at this path (the runner sets it so a
//                       mislaid LD_PRELOAD cannot silently test the wrong code).
//   JT_REFERENCE=0|1    override the detection of the reference library.
//   JT_VERBOSE=1        print each test name before it runs.
//
// Preflight: before any test runs, every public name the program may call is
// looked up in the global scope; each must come from the object that defines
// mallctl.  Otherwise (e.g. our library does not export mallocx yet, or
// malloc still binds to glibc) the program says which names are missing and
// fails.  The jemalloc-only functions are declared weak below so that the
// programs link and report this cleanly even against an incomplete library.
#ifndef JT_HARNESS_H_
#define JT_HARNESS_H_

#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include <jemalloc/jemalloc.h>

#include <dlfcn.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <utility>

// Weak references: a missing definition reads as a null function address
// instead of a link error.  See the preflight in jt::run_all().
#pragma weak mallocx
#pragma weak rallocx
#pragma weak xallocx
#pragma weak sallocx
#pragma weak dallocx
#pragma weak sdallocx
#pragma weak nallocx
#pragma weak mallctl
#pragma weak mallctlnametomib
#pragma weak mallctlbymib
#pragma weak malloc_stats_print

namespace jt {

// ---------------------------------------------------------------------------
// Registry.

using TestFn = void (*)();

struct TestCase {
  const char* name;
  TestFn fn;
  const char* compat;  // doc/compat.md anchor, or nullptr
  const char* file;
  int line;
};

inline constexpr int kMaxTests = 256;
inline TestCase g_tests[kMaxTests];
inline int g_ntests = 0;

struct Registrar {
  Registrar(const char* name, TestFn fn, const char* compat, const char* file, int line) {
    if (g_ntests == kMaxTests) {
      std::fprintf(stderr, "harness: more than %d tests\n", kMaxTests);
      std::abort();
    }
    g_tests[g_ntests++] = TestCase{name, fn, compat, file, line};
  }
};

// Per-test state.  Failures may be recorded from any thread.
inline std::atomic<int> g_failures{0};
inline std::atomic<bool> g_skipped{false};
inline char g_skip_reason[256];
inline const char* g_current = "";

// ---------------------------------------------------------------------------
// Reporting.

inline void vreport(const char* file, int line, const char* fmt, va_list ap) {
  std::fprintf(stdout, "  %s:%d: [%s] ", file, line, g_current);
  std::vfprintf(stdout, fmt, ap);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

// Records a failure with a printf-style message.
inline void fail(const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));
inline void fail(const char* file, int line, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vreport(file, line, fmt, ap);
  va_end(ap);
  g_failures.fetch_add(1, std::memory_order_relaxed);
}

// Prints a note (no failure).
inline void note(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
inline void note(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::fprintf(stdout, "  note [%s]: ", g_current);
  std::vfprintf(stdout, fmt, ap);
  std::fputc('\n', stdout);
  std::fflush(stdout);
  va_end(ap);
}

// Marks the current test skipped (the caller returns).
inline void skip(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
inline void skip(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(g_skip_reason, sizeof(g_skip_reason), fmt, ap);
  va_end(ap);
  g_skipped.store(true);
}

inline bool failed() { return g_failures.load(std::memory_order_relaxed) != 0; }

// Formats a value for a failure message into buf.
template <class T>
inline const char* show(char (&buf)[64], const T& v) {
  using U = std::remove_cv_t<std::remove_reference_t<T>>;
  if constexpr (std::is_same_v<U, bool>) {
    std::snprintf(buf, sizeof(buf), "%s", v ? "true" : "false");
  } else if constexpr (std::is_enum_v<U>) {
    std::snprintf(buf, sizeof(buf), "%lld", (long long)v);
  } else if constexpr (std::is_integral_v<U> && std::is_signed_v<U>) {
    std::snprintf(buf, sizeof(buf), "%lld", (long long)v);
  } else if constexpr (std::is_integral_v<U>) {
    unsigned long long x = v;
    if (x > 0xffffffffull) {
      std::snprintf(buf, sizeof(buf), "%llu (%#llx)", x, x);
    } else {
      std::snprintf(buf, sizeof(buf), "%llu", x);
    }
  } else if constexpr (std::is_pointer_v<U> || std::is_null_pointer_v<U>) {
    std::snprintf(buf, sizeof(buf), "%p", (const void*)v);
  } else if constexpr (std::is_floating_point_v<U>) {
    std::snprintf(buf, sizeof(buf), "%g", (double)v);
  } else {
    std::snprintf(buf, sizeof(buf), "(value)");
  }
  return buf;
}

// Integer comparisons are done on values, not after the usual arithmetic
// conversions, so EXPECT_EQ(size_t, int) means what it says.
enum class Op { kEq, kNe, kLt, kLe, kGt, kGe };

// Character types are compared as int (std::cmp_* rejects them).
template <class T>
inline constexpr bool kIsChar =
    std::is_same_v<T, char> || std::is_same_v<T, wchar_t> || std::is_same_v<T, char8_t> ||
    std::is_same_v<T, char16_t> || std::is_same_v<T, char32_t>;

template <class A, class B>
inline bool compare(Op op, const A& a, const B& b) {
  using UA = std::remove_cv_t<std::remove_reference_t<A>>;
  using UB = std::remove_cv_t<std::remove_reference_t<B>>;
  if constexpr (kIsChar<UA> || kIsChar<UB>) {
    return compare(op, (long long)a, (long long)b);
  } else if constexpr (std::is_integral_v<UA> && std::is_integral_v<UB> &&
                       !std::is_same_v<UA, bool> && !std::is_same_v<UB, bool>) {
    switch (op) {
      case Op::kEq: return std::cmp_equal(a, b);
      case Op::kNe: return std::cmp_not_equal(a, b);
      case Op::kLt: return std::cmp_less(a, b);
      case Op::kLe: return std::cmp_less_equal(a, b);
      case Op::kGt: return std::cmp_greater(a, b);
      case Op::kGe: return std::cmp_greater_equal(a, b);
    }
    return false;
  } else {
    switch (op) {
      case Op::kEq: return a == b;
      case Op::kNe: return !(a == b);
      case Op::kLt: return a < b;
      case Op::kLe: return a <= b;
      case Op::kGt: return b < a;
      case Op::kGe: return b <= a;
    }
    return false;
  }
}

inline const char* op_name(Op op) {
  switch (op) {
    case Op::kEq: return "==";
    case Op::kNe: return "!=";
    case Op::kLt: return "<";
    case Op::kLe: return "<=";
    case Op::kGt: return ">";
    case Op::kGe: return ">=";
  }
  return "?";
}

template <class A, class B>
inline bool check_op(Op op, const A& a, const B& b, const char* ea, const char* eb,
                     const char* file, int line) {
  if (compare(op, a, b)) return true;
  char ba[64], bb[64];
  fail(file, line, "expected %s %s %s, got %s vs %s", ea, op_name(op), eb, show(ba, a),
       show(bb, b));
  return false;
}

inline bool check_true(bool c, const char* e, const char* file, int line) {
  if (c) return true;
  fail(file, line, "expected true: %s", e);
  return false;
}

inline bool check_streq(const char* a, const char* b, const char* ea, const char* eb,
                        const char* file, int line) {
  if (a != nullptr && b != nullptr && std::strcmp(a, b) == 0) return true;
  fail(file, line, "expected %s == %s, got \"%s\" vs \"%s\"", ea, eb, a ? a : "(null)",
       b ? b : "(null)");
  return false;
}

// ---------------------------------------------------------------------------
// Helpers shared by the test programs.

// Keeps the compiler from eliding an allocation whose result is unused.
inline void escape(const void* p) { asm volatile("" : : "g"(p) : "memory"); }

// The version string jemalloc 5.3.0 (the reference build, Debian's
// libjemalloc2 5.3.0-1) reports through mallctl("version").
inline constexpr const char* kReferenceVersion =
    "5.3.0-0-g54eaed1d8b56b1aa528be3bdd1877e59c56fa90c";

inline const char* library_version() {
  static const char* cached;
  if (cached == nullptr && &mallctl != nullptr) {
    const char* v = nullptr;
    size_t len = sizeof(v);
    if (mallctl("version", &v, &len, nullptr, 0) == 0) cached = v;
  }
  return cached ? cached : "";
}

// True when the library under test is jemalloc 5.3.0 itself.
inline bool is_reference() {
  const char* env = std::getenv("JT_REFERENCE");
  if (env != nullptr && *env != '\0') return env[0] == '1';
  return std::strcmp(library_version(), kReferenceVersion) == 0;
}

// What `preset:<name>` (ours, doc/design/memory-return.md#presets) sets `key` to, written
// down here independently of the library; nullptr when the preset leaves `key` alone.
inline const char* preset_value(const char* preset, size_t plen, const char* key) {
  static const struct {
    const char* key;
    const char* ours;
    const char* jemalloc;
  } kKeys[] = {{"bounded_coalesce", "true", "false"},   {"reuse_before_grow", "true", "false"},
               {"extent_best_fit", "true", "false"},    {"purge_on_grow", "false", "false"},
               {"borrow_dirty", "true", "false"},       {"decay_hold_peak", "true", "false"},
               {"oversize_hold", "true", "false"},      {"idle_arena_decay", "true", "false"},
               {"extent_cache_bytes", "8388608", "0"}, {"tcache_grow_bytes", "8388608", "0"},
               {"idle_return", "true", "false"}};
  const bool ours = plen == 4 && std::strncmp(preset, "ours", 4) == 0;
  const bool jemalloc = plen == 14 && std::strncmp(preset, "jemalloc-5.3.0", 14) == 0;
  if (!ours && !jemalloc) return nullptr;
  for (const auto& k : kKeys) {
    if (std::strcmp(k.key, key) == 0) return ours ? k.ours : k.jemalloc;
  }
  return nullptr;
}

// Looks key up in the MALLOC_CONF environment variable (the runner's
// variants); copies its value into buf and returns true when present (the
// last occurrence wins, as in jemalloc; a preset counts as setting the keys it
// names where it stands).
inline bool conf_value(const char* key, char* buf, size_t buflen) {
  const char* s = std::getenv("MALLOC_CONF");
  bool found = false;
  size_t klen = std::strlen(key);
  auto put = [&](const char* v, size_t vlen) {
    if (vlen >= buflen) vlen = buflen - 1;
    std::memcpy(buf, v, vlen);
    buf[vlen] = '\0';
    found = true;
  };
  while (s != nullptr && *s != '\0') {
    const char* end = std::strchr(s, ',');
    size_t len = end ? (size_t)(end - s) : std::strlen(s);
    if (len > klen && std::strncmp(s, key, klen) == 0 && s[klen] == ':') {
      put(s + klen + 1, len - klen - 1);
    } else if (len > 7 && std::strncmp(s, "preset:", 7) == 0) {
      if (const char* v = preset_value(s + 7, len - 7, key)) put(v, std::strlen(v));
    }
    s = end ? end + 1 : nullptr;
  }
  return found;
}

// The boolean option key from MALLOC_CONF, or dflt when absent.
inline bool conf_bool(const char* key, bool dflt) {
  char buf[32];
  if (!conf_value(key, buf, sizeof(buf))) return dflt;
  return std::strcmp(buf, "true") == 0;
}

// The signed integer option key from MALLOC_CONF, or dflt when absent.
inline long long conf_int(const char* key, long long dflt) {
  char buf[32];
  if (!conf_value(key, buf, sizeof(buf))) return dflt;
  return std::strtoll(buf, nullptr, 10);
}

// Typed mallctl read; returns the mallctl result.
template <class T>
inline int ctl_get(const char* name, T* out) {
  size_t len = sizeof(T);
  return mallctl(name, out, &len, nullptr, 0);
}

// Typed mallctl write; returns the mallctl result.
template <class T>
inline int ctl_set(const char* name, T value) {
  return mallctl(name, nullptr, nullptr, &value, sizeof(T));
}

// Formats a mallctl name with one index, e.g. ctl_name(buf, "arena.%u.purge", 3).
inline const char* ctl_name(char (&buf)[128], const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));
inline const char* ctl_name(char (&buf)[128], const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  return buf;
}

// Refreshes the statistics snapshot (mallctl "epoch").
inline bool refresh_stats() {
  uint64_t e = 1;
  size_t len = sizeof(e);
  return mallctl("epoch", &e, &len, &e, sizeof(e)) == 0;
}

// The arena owning allocation p (arenas.lookup), UINT_MAX if the lookup fails.
inline unsigned lookup_arena(const void* p) {
  unsigned a = UINT_MAX;
  size_t len = sizeof(a);
  if (mallctl("arenas.lookup", &a, &len, &p, sizeof(p)) != 0) return UINT_MAX;
  return a;
}

// stats.arenas.<arena>.<leaf> as a size_t (0 when unreadable); refresh_stats() first.
inline size_t arena_stat(unsigned arena, const char* leaf) {
  char name[128];
  size_t v = 0;
  ctl_get(ctl_name(name, "stats.arenas.%u.%s", arena, leaf), &v);
  return v;
}

// stats.arenas.<arena>.<leaf> as a uint64_t counter (0 when unreadable).
inline uint64_t arena_stat64(unsigned arena, const char* leaf) {
  char name[128];
  uint64_t v = 0;
  ctl_get(ctl_name(name, "stats.arenas.%u.%s", arena, leaf), &v);
  return v;
}

// A deterministic fill pattern: byte i of a block at p of size n.
inline unsigned char pattern_byte(const void* p, size_t n, size_t i) {
  uint64_t x = (uint64_t)(uintptr_t)p ^ ((uint64_t)n << 17) ^ (i * 0x9e3779b97f4a7c15ull);
  x ^= x >> 29;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 32;
  return (unsigned char)x;
}

// Fills n bytes at p with the pattern keyed by (key, n).
inline void fill_pattern(void* p, size_t n, const void* key) {
  unsigned char* b = static_cast<unsigned char*>(p);
  for (size_t i = 0; i < n; i++) b[i] = pattern_byte(key, n, i);
}

// Index of the first byte that differs from the pattern, or n when intact.
inline size_t check_pattern(const void* p, size_t n, const void* key) {
  const unsigned char* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; i++) {
    if (b[i] != pattern_byte(key, n, i)) return i;
  }
  return n;
}

// Index of the first non-zero byte in [p, p + n), or n.
inline size_t first_nonzero(const void* p, size_t n) {
  const unsigned char* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; i++) {
    if (b[i] != 0) return i;
  }
  return n;
}

// A small xorshift generator for reproducible "random" workloads.
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed * 0x9e3779b97f4a7c15ull + 1) {}
  uint64_t next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  }
  // Uniform in [0, n).
  uint64_t below(uint64_t n) { return n ? next() % n : 0; }
};

// Runs fn(arg) on a new thread and joins it; returns false if it could not
// be created.
inline bool run_in_thread(void* (*fn)(void*), void* arg) {
  pthread_t t;
  if (pthread_create(&t, nullptr, fn, arg) != 0) return false;
  pthread_join(t, nullptr);
  return true;
}

// ---------------------------------------------------------------------------
// Preflight and main loop.

struct PublicName {
  const char* name;
  const char* pretty;
};

// Every name a drop-in must define; the C++ operators by mangled name.
inline constexpr PublicName kPublicNames[] = {
    {"malloc", "malloc"},
    {"calloc", "calloc"},
    {"realloc", "realloc"},
    {"free", "free"},
    {"posix_memalign", "posix_memalign"},
    {"aligned_alloc", "aligned_alloc"},
    {"memalign", "memalign"},
    {"valloc", "valloc"},
    {"malloc_usable_size", "malloc_usable_size"},
    {"mallocx", "mallocx"},
    {"rallocx", "rallocx"},
    {"xallocx", "xallocx"},
    {"sallocx", "sallocx"},
    {"dallocx", "dallocx"},
    {"sdallocx", "sdallocx"},
    {"nallocx", "nallocx"},
    {"mallctl", "mallctl"},
    {"mallctlnametomib", "mallctlnametomib"},
    {"mallctlbymib", "mallctlbymib"},
    {"malloc_stats_print", "malloc_stats_print"},
    {"_Znwm", "operator new(size_t)"},
    {"_Znam", "operator new[](size_t)"},
    {"_ZnwmRKSt9nothrow_t", "operator new(size_t, nothrow)"},
    {"_ZnamRKSt9nothrow_t", "operator new[](size_t, nothrow)"},
    {"_ZnwmSt11align_val_t", "operator new(size_t, align)"},
    {"_ZnamSt11align_val_t", "operator new[](size_t, align)"},
    {"_ZnwmSt11align_val_tRKSt9nothrow_t", "operator new(size_t, align, nothrow)"},
    {"_ZnamSt11align_val_tRKSt9nothrow_t", "operator new[](size_t, align, nothrow)"},
    {"_ZdlPv", "operator delete(void*)"},
    {"_ZdaPv", "operator delete[](void*)"},
    {"_ZdlPvRKSt9nothrow_t", "operator delete(void*, nothrow)"},
    {"_ZdaPvRKSt9nothrow_t", "operator delete[](void*, nothrow)"},
    {"_ZdlPvm", "operator delete(void*, size_t)"},
    {"_ZdaPvm", "operator delete[](void*, size_t)"},
    {"_ZdlPvSt11align_val_t", "operator delete(void*, align)"},
    {"_ZdaPvSt11align_val_t", "operator delete[](void*, align)"},
    {"_ZdlPvSt11align_val_tRKSt9nothrow_t", "operator delete(void*, align, nothrow)"},
    {"_ZdaPvSt11align_val_tRKSt9nothrow_t", "operator delete[](void*, align, nothrow)"},
    {"_ZdlPvmSt11align_val_t", "operator delete(void*, size_t, align)"},
    {"_ZdaPvmSt11align_val_t", "operator delete[](void*, size_t, align)"},
};

// The file of the object that defines name in the global scope, or
// "(undefined)".
inline const char* object_of(const char* name) {
  void* sym = dlsym(RTLD_DEFAULT, name);
  Dl_info info;
  if (sym != nullptr && dladdr(sym, &info) != 0 && info.dli_fname != nullptr) {
    return info.dli_fname;
  }
  return "(undefined)";
}

// Checks that the public names bind to one shared object (the library under
// test) and, with JT_EXPECT_LIB, that it is the expected file.  Prints the
// library and its version.  Returns false (after explaining) otherwise.
inline bool preflight() {
#ifdef JT_RENAMED_STATIC
  // Sanitizer legs (test/legs/rename.h): the names are renamed and linked in statically.
  std::printf("library: static fz_* build (sanitizer leg)\nversion: %s\n", library_version());
  return true;
#endif
  if (&mallctl == nullptr) {
    // Say briefly where each name binds instead: one line per object
    // (glibc, libstdc++...) or "(undefined)".
    std::printf(
        "FAIL: no loaded object defines mallctl: the library under test "
        "does not export jemalloc's API (yet)\n");
    constexpr int kMaxObjs = 8;
    const char* objs[kMaxObjs] = {};
    int nobjs = 0;
    for (const PublicName& n : kPublicNames) {
      const char* where = object_of(n.name);
      bool seen = false;
      for (int i = 0; i < nobjs; i++) seen = seen || std::strcmp(objs[i], where) == 0;
      if (!seen && nobjs < kMaxObjs) objs[nobjs++] = where;
    }
    for (int i = 0; i < nobjs; i++) {
      std::printf("  %s:", objs[i]);
      for (const PublicName& n : kPublicNames) {
        if (std::strcmp(object_of(n.name), objs[i]) == 0) std::printf(" %s", n.name);
      }
      std::printf("\n");
    }
    return false;
  }
  void* ctl_addr = nullptr;
  {
    int (*fp)(const char*, void*, size_t*, void*, size_t) = mallctl;
    std::memcpy(&ctl_addr, &fp, sizeof(ctl_addr));
  }
  Dl_info lib;
  if (dladdr(ctl_addr, &lib) == 0 || lib.dli_fname == nullptr) {
    std::printf("FAIL: dladdr cannot place mallctl\n");
    return false;
  }
  bool ok = true;
  for (const PublicName& n : kPublicNames) {
    void* sym = dlsym(RTLD_DEFAULT, n.name);
    Dl_info info;
    if (sym == nullptr) {
      std::printf("FAIL: %s is not defined by any loaded object\n", n.pretty);
      ok = false;
    } else if (dladdr(sym, &info) == 0 || info.dli_fbase != lib.dli_fbase) {
      std::printf("FAIL: %s binds to %s, not to the library under test %s\n", n.pretty,
                  info.dli_fname ? info.dli_fname : "(unknown)", lib.dli_fname);
      ok = false;
    }
  }
  char real[PATH_MAX];
  const char* shown = realpath(lib.dli_fname, real) ? real : lib.dli_fname;
  std::printf("library: %s\nversion: %s%s\n", shown, library_version(),
              is_reference() ? " (reference jemalloc 5.3.0)" : "");
  const char* expect = std::getenv("JT_EXPECT_LIB");
  if (expect != nullptr && *expect != '\0') {
    char want[PATH_MAX];
    const char* w = realpath(expect, want) ? want : expect;
    if (std::strcmp(w, shown) != 0) {
      std::printf("FAIL: expected the library %s, but the entry points come from %s\n", w, shown);
      ok = false;
    }
  }
  const char* conf = std::getenv("MALLOC_CONF");
  if (conf != nullptr) std::printf("MALLOC_CONF=%s\n", conf);
  std::fflush(stdout);
  return ok;
}

inline bool selected(const char* name, int argc, char** argv) {
  if (argc <= 1) return true;
  for (int i = 1; i < argc; i++) {
    size_t len = std::strlen(argv[i]);
    if (len > 0 && argv[i][len - 1] == '*') {
      if (std::strncmp(name, argv[i], len - 1) == 0) return true;
    } else if (std::strcmp(name, argv[i]) == 0) {
      return true;
    }
  }
  return false;
}

// Runs the registered tests; returns the process exit status.
inline int run_all(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  if (!preflight()) return 1;
  bool verbose = std::getenv("JT_VERBOSE") != nullptr;
  int npass = 0, nfail = 0, nskip = 0;
  for (int i = 0; i < g_ntests; i++) {
    const TestCase& t = g_tests[i];
    if (!selected(t.name, argc, argv)) continue;
    g_current = t.name;
    g_failures.store(0);
    g_skipped.store(false);
    g_skip_reason[0] = '\0';
    if (verbose) std::printf("[ RUN  ] %s\n", t.name);
    if (t.compat != nullptr && is_reference()) {
      skip("documented difference from jemalloc 5.3.0 (doc/compat.md#%s)", t.compat);
    } else {
      t.fn();
    }
    if (failed()) {
      std::printf("[ FAIL ] %s\n", t.name);
      nfail++;
    } else if (g_skipped.load()) {
      std::printf("[ SKIP ] %s: %s\n", t.name, g_skip_reason);
      nskip++;
    } else {
      std::printf("[ PASS ] %s\n", t.name);
      npass++;
    }
  }
  std::printf("%d passed, %d failed, %d skipped\n", npass, nfail, nskip);
  if (nfail > 0) return 1;
  if (npass == 0 && nskip > 0) return 77;
  return 0;
}

}  // namespace jt

#define JT_CAT2(a, b) a##b
#define JT_CAT(a, b) JT_CAT2(a, b)

#define JT_DEFINE_TEST(name, compat)                                                            \
  static void JT_CAT(jt_test_, name)();                                                         \
  static ::jt::Registrar JT_CAT(jt_reg_, name)(#name, JT_CAT(jt_test_, name), compat, __FILE__, \
                                               __LINE__);                                       \
  static void JT_CAT(jt_test_, name)()

#define TEST(name) JT_DEFINE_TEST(name, nullptr)
#define TEST_COMPAT(name, anchor) JT_DEFINE_TEST(name, anchor)

#define JT_OP(op, a, b) ::jt::check_op(::jt::Op::op, (a), (b), #a, #b, __FILE__, __LINE__)
#define EXPECT_EQ(a, b) JT_OP(kEq, a, b)
#define EXPECT_NE(a, b) JT_OP(kNe, a, b)
#define EXPECT_LT(a, b) JT_OP(kLt, a, b)
#define EXPECT_LE(a, b) JT_OP(kLe, a, b)
#define EXPECT_GT(a, b) JT_OP(kGt, a, b)
#define EXPECT_GE(a, b) JT_OP(kGe, a, b)
#define EXPECT_TRUE(c) ::jt::check_true(static_cast<bool>(c), #c, __FILE__, __LINE__)
#define EXPECT_FALSE(c) ::jt::check_true(!static_cast<bool>(c), "!(" #c ")", __FILE__, __LINE__)
#define EXPECT_NULL(p) ::jt::check_true((p) == nullptr, #p " == NULL", __FILE__, __LINE__)
#define EXPECT_NOT_NULL(p) ::jt::check_true((p) != nullptr, #p " != NULL", __FILE__, __LINE__)
#define EXPECT_STREQ(a, b) ::jt::check_streq((a), (b), #a, #b, __FILE__, __LINE__)

// ASSERT_*: as EXPECT_*, and return from the (void) function on failure.
#define ASSERT_EQ(a, b)           \
  do {                            \
    if (!EXPECT_EQ(a, b)) return; \
  } while (0)
#define ASSERT_NE(a, b)           \
  do {                            \
    if (!EXPECT_NE(a, b)) return; \
  } while (0)
#define ASSERT_LT(a, b)           \
  do {                            \
    if (!EXPECT_LT(a, b)) return; \
  } while (0)
#define ASSERT_LE(a, b)           \
  do {                            \
    if (!EXPECT_LE(a, b)) return; \
  } while (0)
#define ASSERT_GT(a, b)           \
  do {                            \
    if (!EXPECT_GT(a, b)) return; \
  } while (0)
#define ASSERT_GE(a, b)           \
  do {                            \
    if (!EXPECT_GE(a, b)) return; \
  } while (0)
#define ASSERT_TRUE(c)           \
  do {                           \
    if (!EXPECT_TRUE(c)) return; \
  } while (0)
#define ASSERT_FALSE(c)           \
  do {                            \
    if (!EXPECT_FALSE(c)) return; \
  } while (0)
#define ASSERT_NULL(p)           \
  do {                           \
    if (!EXPECT_NULL(p)) return; \
  } while (0)
#define ASSERT_NOT_NULL(p)           \
  do {                               \
    if (!EXPECT_NOT_NULL(p)) return; \
  } while (0)
#define ASSERT_STREQ(a, b)           \
  do {                               \
    if (!EXPECT_STREQ(a, b)) return; \
  } while (0)

// FAIL_MSG(fmt, ...): record a failure with a message.
#define FAIL_MSG(...) ::jt::fail(__FILE__, __LINE__, __VA_ARGS__)
// SKIP_TEST(fmt, ...): mark the test skipped and return.
#define SKIP_TEST(...)       \
  do {                       \
    ::jt::skip(__VA_ARGS__); \
    return;                  \
  } while (0)

#ifndef JT_NO_MAIN
int main(int argc, char** argv) { return ::jt::run_all(argc, argv); }
#endif

#endif  // JT_HARNESS_H_
