// opt.h: the run-time option table (the MALLOC_CONF keys) and the storage of their values.
//
// Purpose: one X-macro list, JE_OPTION_TABLE, names every option jemalloc 5.3.0's parser knows
// plus ours, with its storage kind, default, value domain, visibility, status and a one-line
// description. The list expands into (a) the fields of `Options` (the values, read by ctl and
// api as `g_opt.<key>`), (b) the descriptor table the MALLOC_CONF parser (src/ctl/conf) walks,
// (c) the `opt.*` mallctl view (`opt_find`, `opt_table`), and (d) doc/options.md, which a unit test
// regenerates from the table and compares, so the documentation cannot drift from the code.
//
// Layer: ctl. Only src/ctl and src/api include this header; the layers below get their values
// at boot through CoreConfig (src/thread/core_boot.h: ArenaOptions, ThreadOptions, ...), which
// src/api/init.cc fills from g_opt (src/README.md, "Where options live"). Writers:
// src/ctl/conf: conf_init (parsing, once, before the first allocation) and, right after
// core_boot, conf_adopt_boot_values (the "computed at boot" values the arena layer settles:
// `narenas`, `oversize_threshold`, `max_background_threads`). Readers: src/ctl (`opt.*`, a few ctl
// handlers), src/api (options the api layer applies itself: junk, zero, zero_realloc, ...).
//
// Concurrency: not synchronized. All writes happen during single-threaded initialization (conf,
// then boot); afterwards the values are read-only, so plain loads are race-free.
//
// Invariants:
//   * `g_opt` is constant-initialized to the defaults (no static constructor);
//   * every string option's `const char*` points at a string literal of its choice list or at a
//     NUL-terminated buffer inside `g_opt`; it is never null;
//   * a choice option's string and its typed enum field (`dss`/`dss_prec`, `thp`/`thp_mode`,
//     `junk`/`junk_alloc`+`junk_free`, ...) always agree;
//   * defaults are jemalloc 5.3.0's *code* defaults (muzzy_decay_ms 0, not the manual's 10 s).
//
// jemalloc mapping: the `opt_*` globals scattered over jemalloc.c, arena.c, tcache.c, pa.c,
// background_thread.c, extent.c, ...; the `opt.*` mallctl nodes of ctl.c. Deliberate
// differences (documented in doc/options.md): the keys of ours, the table's "ours:" rows (the
// placement and memory-return options of doc/design/memory-return.md, `preset`,
// `safety_checks`); with `--disable-prof` every prof* key is an "Invalid conf pair" and
// `opt.prof*` is absent, as in jemalloc built that way.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "support/config.h"
#include "extent/dss.h"

namespace je {

// ---- Kinds, mallctl types, domains ----------------------------------------------------------

/// How an option is stored and parsed.
enum class OptKind : uint8_t {
  kBool,       ///< "true" / "false"
  kUnsigned,   ///< unsigned (32-bit), strtoumax-style number
  kSizeT,      ///< size_t, strtoumax-style number
  kSSizeT,     ///< ssize_t, strtoumax-style number reinterpreted as signed
  kUint64,     ///< uint64_t
  kInt64,      ///< int64_t
  kFxp,        ///< 16.16 fixed point in a uint32_t, decimal syntax "I[.F]" (hpa_dirty_mult)
  kChoice,     ///< one of a list of names; stored as a `const char*` to the list's literal
  kLetters,    ///< set of stats letters (stats_print_opts); `const char*` to a buffer in g_opt
  kString,     ///< free text (prof_prefix), cut to kOptPathMax - 1; `const char*` to a g_opt buffer
  kBinShards,  ///< "lo-hi:n|lo-hi:n..." per small bin shard counts
  kSlabPages,  ///< "lo-hi:pages|..." per small bin slab pages
  kAlias,      ///< no storage: sets another option (lg_tcache_max -> tcache_max, preset)
  kNotBuilt,   ///< no storage: a 5.3.0 key of a feature this build leaves out ("Invalid conf pair")
};

/// The C type `mallctl("opt.<name>")` reads, as jemalloc 5.3.0 reports it.
enum class OptType : uint8_t {
  kNone,      ///< not readable through mallctl
  kBool,      ///< bool
  kUnsigned,  ///< unsigned
  kSizeT,     ///< size_t
  kSSizeT,    ///< ssize_t
  kUint64,    ///< uint64_t
  kInt64,     ///< int64_t
  kFxp,       ///< uint32_t holding 16.16 fixed point (jemalloc's fxp_t)
  kString,    ///< const char*
};

/// Visibility flags of a table entry.
inline constexpr uint8_t kOptParse = 1;      ///< accepted by the MALLOC_CONF parser
inline constexpr uint8_t kOptMallctl = 2;    ///< readable as mallctl `opt.<name>`
inline constexpr uint8_t kOptPrefixKey = 4;  ///< 5.3.0 quirk: any prefix of the key selects it
inline constexpr uint8_t kOptBoth = kOptParse | kOptMallctl;

/// Range checks of a numeric domain (jemalloc's check_min/check_max/clip triple).
inline constexpr uint8_t kOptCheckMin = 1;  ///< value < lo is out of range
inline constexpr uint8_t kOptCheckMax = 2;  ///< value > hi is out of range
inline constexpr uint8_t kOptClip = 4;      ///< out of range is clipped silently, not rejected

/// Extra parse rules of a domain.
inline constexpr uint8_t kOptValuePrefix = 1;     ///< choice: any prefix of a name selects it
inline constexpr uint8_t kOptDefaultKeyword = 2;  ///< the value "default" restores the default
inline constexpr uint8_t kOptMinusOne = 4;        ///< fxp: the exact value "-1" stores 0xffffffff
inline constexpr uint8_t kOptMaxIsCurrent = 8;    ///< the upper bound is the current value

/// The values an option accepts. Signed kinds store lo/hi as two's-complement bit patterns.
struct OptDomain {
  uint64_t lo = 0;
  uint64_t hi = 0;
  uint8_t checks = 0;  ///< kOptCheckMin | kOptCheckMax | kOptClip
  uint8_t rules = 0;   ///< kOptValuePrefix | kOptDefaultKeyword | kOptMinusOne | kOptMaxIsCurrent
  uint8_t nnames = 0;
  const char* const* names = nullptr;
};

/// Any value the kind can represent (booleans, strings, unchecked numbers).
inline constexpr OptDomain opt_any(uint8_t rules = 0) {
  return OptDomain{0, 0, 0, rules, 0, nullptr};
}

/// Unsigned range [lo, hi] with the given checks.
inline constexpr OptDomain opt_urange(uint64_t lo, uint64_t hi, uint8_t checks, uint8_t rules = 0) {
  return OptDomain{lo, hi, checks, rules, 0, nullptr};
}

/// Signed range [lo, hi] with the given checks.
inline constexpr OptDomain opt_srange(int64_t lo, int64_t hi, uint8_t checks, uint8_t rules = 0) {
  return OptDomain{static_cast<uint64_t>(lo), static_cast<uint64_t>(hi), checks, rules, 0, nullptr};
}

/// One of `names` (in jemalloc's matching order).
template <size_t N>
inline constexpr OptDomain opt_choice(const char* const (&names)[N], uint8_t rules = 0) {
  static_assert(N < 256);
  return OptDomain{0, 0, 0, rules, static_cast<uint8_t>(N), names};
}

/// Element of `names` equal to `s` (constexpr; used for choice defaults so that the default
/// pointer is the same literal the parser would store). Fails to compile when `s` is absent.
template <size_t N>
consteval const char* opt_pick(const char* const (&names)[N], const char* s) {
  for (size_t i = 0; i < N; i++) {
    const char* a = names[i];
    size_t j = 0;
    while (a[j] != '\0' && a[j] == s[j]) j++;
    if (a[j] == '\0' && s[j] == '\0') return names[i];
  }
  __builtin_unreachable();  // not a constant expression: a misspelt default fails to compile
}

// ---- Enumerations of the choice options ------------------------------------------------------
// Each enum's values are the indexes of its name list, which is in jemalloc 5.3.0's matching
// order (it matters: with the prefix rule the empty value selects the first name).

// `dss`: DssPrec and kDssNames come from extent/dss.h (the extent layer applies them).

/// `percpu_arena`: the parse-time values. Arena boot turns them into its own run-time modes.
enum class PercpuArenaMode : uint8_t { kPercpu, kPhycpu, kDisabled };
inline constexpr const char* kPercpuArenaNames[] = {"percpu", "phycpu", "disabled"};

/// `thp`: transparent huge page policy for user memory. (Not "ThpMode": pages::ThpMode is the
/// system's THP setting, a different thing.)
enum class ThpOpt : uint8_t { kDefault, kAlways, kNever };
inline constexpr const char* kThpNames[] = {"default", "always", "never"};

/// `metadata_thp`: transparent huge pages for base (metadata) memory.
enum class MetadataThpMode : uint8_t { kDisabled, kAuto, kAlways };
inline constexpr const char* kMetadataThpNames[] = {"disabled", "auto", "always"};

/// `zero_realloc`: what realloc(p, 0) does.
enum class ZeroReallocAction : uint8_t { kAlloc, kFree, kAbort };
inline constexpr const char* kZeroReallocNames[] = {"alloc", "free", "abort"};
/// Ours, `preset`: every option of ours that places, keeps or returns memory set at once --
/// to our defaults, or to jemalloc 5.3.0's behaviour (extent/placement.h, extent/hold.h).
inline constexpr const char* kPresetNames[] = {"ours", "jemalloc-5.3.0"};

/// `prof_time_resolution`: timestamps of prof_log records (exact match).
enum class ProfTimeRes : uint8_t { kDefault, kHigh };
inline constexpr const char* kProfTimeResNames[] = {"default", "high"};

/// `junk`: which events fill memory with junk bytes. Typed as g_opt.junk_alloc/junk_free.
inline constexpr const char* kJunkNames[] = {"true", "false", "alloc", "free"};

/// Letters `stats_print_opts` / `stats_interval_opts` accept (malloc_stats_print's options).
inline constexpr char kStatsLetters[] = "Jgmdablxeh";
inline constexpr size_t kStatsLettersMax = sizeof(kStatsLetters) - 1;

/// Small bins covered by `bin_shards` / `slab_sizes`: the classes below 4 pages, 36 with 4 KiB
/// pages (jemalloc's SC_NBINS as a function of the page). src/ctl/conf and src/api/init check
/// that it equals sc::kNBins; this table stays free of allocator headers.
inline constexpr unsigned kOptNBins = 4 * (config::kLgPage - 3);
/// Most shards one bin may have (`bin_shards`; jemalloc's BIN_SHARDS_MAX).
inline constexpr unsigned kOptBinShardsMax = 64;

// ---- Constants the defaults and domains use ----------------------------------------------------

/// Largest decay time: 5.3.0 caps it at NSTIME_SEC_MAX (2^64 / 10^9 seconds) in milliseconds.
inline constexpr int64_t kOptDecayMsMax = int64_t{18446744072} * 1000;
/// `tcache_max` upper bound (clipped): 8 MiB, i.e. lg_tcache_max 23.
inline constexpr unsigned kOptLgTcacheMaxLimit = 23;
inline constexpr size_t kOptTcacheMaxLimit = size_t{1} << kOptLgTcacheMaxLimit;
/// `oversize_threshold` upper bound (rejected above): the largest size class, 7 << 60.
inline constexpr size_t kOptLargeMaxClass = size_t{7} << 60;
/// Background threads: the parse default means "unset"; boot replaces anything above the
/// limit (4095) by kOptMaxBackgroundThreadsDefault (4), which `opt.max_background_threads` shows.
inline constexpr size_t kOptMaxBackgroundThreadsLimit = 4095;
inline constexpr size_t kOptMaxBackgroundThreadsUnset = kOptMaxBackgroundThreadsLimit + 1;
inline constexpr size_t kOptMaxBackgroundThreadsDefault = 4;
/// HPA geometry used by the hpa_* domains (the page, 4 KiB unless --with-lg-page; 2 MiB huge
/// pages).
inline constexpr size_t kOptPage = config::kPage;
inline constexpr size_t kOptHugepage = size_t{2} << 20;
/// `process_madvise_max_batch` upper bound (clipped): jemalloc 5.3.1's, 2048 bytes of iovecs.
inline constexpr size_t kOptProcessMadviseMaxBatchLimit = 2048 / 16;
/// 16.16 fixed-point one.
inline constexpr uint32_t kOptFxpOne = uint32_t{1} << 16;

/// Visibility of the prof* keys: parsed and readable in a profiling build (config::kProf), an
/// "Invalid conf pair" and ENOENT in a --disable-prof one, as 5.3.0's two builds.
inline constexpr uint8_t kOptProfBoth = config::kProf ? kOptBoth : 0;
inline constexpr uint8_t kOptProfParse = config::kProf ? kOptParse : 0;
inline constexpr const char* kOptProfStatus =
    "supported (configure --disable-prof: Invalid conf pair, ENOENT)";
/// `prof_prefix` buffer size: a path (5.3.0's PROF_DUMP_FILENAME_LEN, PATH_MAX + 1); longer
/// values are cut to fit, as 5.3.0's parser does.
inline constexpr size_t kOptPathMax = 4096;

/// Constant array with every element `v` (for per-bin defaults).
template <class T, size_t N>
inline constexpr std::array<T, N> opt_filled(T v) {
  std::array<T, N> a{};
  for (auto& e : a) e = v;
  return a;
}

/// Placeholder member for keys without storage (aliases, features not built); occupies no space.
struct OptNoStorage {};

/// Storage C++ type and mallctl type of each kind.
template <OptKind K>
struct OptStorage;
template <>
struct OptStorage<OptKind::kBool> {
  using T = bool;
  static constexpr OptType kType = OptType::kBool;
};
template <>
struct OptStorage<OptKind::kUnsigned> {
  using T = unsigned;
  static constexpr OptType kType = OptType::kUnsigned;
};
template <>
struct OptStorage<OptKind::kSizeT> {
  using T = size_t;
  static constexpr OptType kType = OptType::kSizeT;
};
template <>
struct OptStorage<OptKind::kSSizeT> {
  using T = ssize_t;
  static constexpr OptType kType = OptType::kSSizeT;
};
template <>
struct OptStorage<OptKind::kUint64> {
  using T = uint64_t;
  static constexpr OptType kType = OptType::kUint64;
};
template <>
struct OptStorage<OptKind::kInt64> {
  using T = int64_t;
  static constexpr OptType kType = OptType::kInt64;
};
template <>
struct OptStorage<OptKind::kFxp> {
  using T = uint32_t;
  static constexpr OptType kType = OptType::kFxp;
};
template <>
struct OptStorage<OptKind::kChoice> {
  using T = const char*;
  static constexpr OptType kType = OptType::kString;
};
template <>
struct OptStorage<OptKind::kLetters> {
  using T = const char*;
  static constexpr OptType kType = OptType::kString;
};
template <>
struct OptStorage<OptKind::kString> {
  using T = const char*;
  static constexpr OptType kType = OptType::kString;
};
template <>
struct OptStorage<OptKind::kBinShards> {
  using T = std::array<uint8_t, kOptNBins>;
  static constexpr OptType kType = OptType::kNone;
};
template <>
struct OptStorage<OptKind::kSlabPages> {
  using T = std::array<uint16_t, kOptNBins>;
  static constexpr OptType kType = OptType::kNone;
};
template <>
struct OptStorage<OptKind::kAlias> {
  using T = OptNoStorage;
  static constexpr OptType kType = OptType::kNone;
};
template <>
struct OptStorage<OptKind::kNotBuilt> {
  using T = OptNoStorage;
  static constexpr OptType kType = OptType::kNone;
};

// ---- The table -------------------------------------------------------------------------------
// X(name, Kind, default, domain, flags, status, doc)
//   name     the MALLOC_CONF key, the `opt.` mallctl leaf and the g_opt field;
//   Kind     an OptKind enumerator without the k;
//   default  jemalloc 5.3.0's code default (parenthesized when it has commas);
//   domain   an OptDomain (parenthesized);
//   flags    kOptParse / kOptMallctl / kOptPrefixKey;
//   status   our implementation status, one short phrase (goes to doc/options.md);
//   doc      one line.
// The order is jemalloc's parser order where it matters: the prefix-key entries metadata_thp, dss,
// percpu_arena must stay in this relative order (an empty key selects metadata_thp).
#define JE_OPTION_TABLE(X)                                                                         \
  X(abort, Bool, false, (opt_any()), kOptBoth, "supported",                                        \
    "Abort (instead of warning) on allocator misuse and internal errors.")                         \
  X(abort_conf, Bool, false, (opt_any()), kOptBoth, "supported",                                   \
    "Abort after reading a configuration source that held an invalid pair.")                       \
  X(cache_oblivious, Bool, config::kCacheOblivious, (opt_any()), kOptMallctl,                      \
    "read-only build property (configure --disable-cache-oblivious); the key is an Invalid "       \
    "conf pair as in 5.3.0",                                                                       \
    "Large allocations get a random cache-line offset inside one extra page.")                     \
  X(confirm_conf, Bool, false, (opt_any()), kOptBoth, "supported",                                 \
    "Print each configuration source and each accepted pair.")                                     \
  X(trust_madvise, Bool, false, (opt_any()), kOptBoth, "supported",                                \
    "Skip the boot-time check that MADV_DONTNEED zeroes pages.")                                   \
  X(metadata_thp, Choice, (opt_pick(kMetadataThpNames, "disabled")),                               \
    (opt_choice(kMetadataThpNames, kOptValuePrefix)), kOptBoth | kOptPrefixKey, "supported",       \
    "Transparent huge pages for metadata: disabled, auto or always.")                              \
  X(retain, Bool, true, (opt_any()), kOptBoth, "supported",                                        \
    "Keep unused virtual memory (retained extents) instead of unmapping it.")                      \
  X(dss, Choice, (opt_pick(kDssNames, "secondary")), (opt_choice(kDssNames, kOptValuePrefix)),     \
    kOptBoth | kOptPrefixKey, "supported",                                                         \
    "Precedence of sbrk memory relative to mmap: disabled, primary or secondary.")                 \
  X(narenas, Unsigned, 0u,                                                                         \
    (opt_urange(1, std::numeric_limits<unsigned>::max(), kOptCheckMin, kOptDefaultKeyword)),       \
    kOptBoth, "supported; 0 = computed at arena boot (opt.narenas shows the result)",              \
    "Number of automatic arenas; default narenas_ratio x CPUs.")                                   \
  X(narenas_ratio, Fxp, 4 * kOptFxpOne, (opt_any()), kOptParse, "supported (arena boot)",          \
    "Automatic arenas per CPU when narenas is not set (fixed point).")                             \
  X(bin_shards, BinShards, (opt_filled<uint8_t, kOptNBins>(1)),                                    \
    (opt_urange(1, kOptBinShardsMax, kOptCheckMin | kOptCheckMax)), kOptParse,                     \
    "supported (bin boot; arenas.bin.<j>.nshards)",                                                \
    "Shards per small bin, as size ranges: \"lo-hi:n|lo-hi:n\".")                                  \
  X(mutex_max_spin, Int64, 600, (opt_srange(-1, INT64_MAX, kOptCheckMin)), kOptBoth, "supported",  \
    "Spins before a contended mutex blocks; -1 spins forever.")                                    \
  X(dirty_decay_ms, SSizeT, 10000, (opt_srange(-1, kOptDecayMsMax, kOptCheckMin | kOptCheckMax)),  \
    kOptBoth, "supported",                                                                         \
    "Time for dirty pages to decay to muzzy/retained; 0 purges at once, -1 never.")                \
  X(muzzy_decay_ms, SSizeT, 0, (opt_srange(-1, kOptDecayMsMax, kOptCheckMin | kOptCheckMax)),      \
    kOptBoth, "supported",                                                                         \
    "Time for muzzy (MADV_FREE) pages to decay to retained; 0 skips the muzzy state.")             \
  X(stats_print, Bool, false, (opt_any()), kOptBoth, "supported", "Print statistics at exit.")     \
  X(stats_print_opts, Letters, stats_print_opts_buf, (opt_any()), kOptBoth, "supported",           \
    "malloc_stats_print letters for stats_print; letters accumulate, unknown ones are ignored.")   \
  X(stats_interval, Int64, -1, (opt_srange(-1, INT64_MAX, kOptCheckMin)), kOptBoth, "supported",   \
    "Print statistics every this many allocated bytes; -1 disables.")                              \
  X(stats_interval_opts, Letters, stats_interval_opts_buf, (opt_any()), kOptBoth, "supported",     \
    "malloc_stats_print letters for stats_interval.")                                              \
  X(junk, Choice, (opt_pick(kJunkNames, config::kDebug ? "true" : "false")),                       \
    (opt_choice(kJunkNames)), kOptBoth,                                                            \
    "supported", "Fill memory with junk on allocation and/or free: true, false, alloc or free.")   \
  X(zero, Bool, false, (opt_any()), kOptBoth, "supported", "Zero-fill every allocation.")          \
  X(experimental_infallible_new, Bool, false, (opt_any()), kOptBoth, "supported",                  \
    "operator new aborts instead of throwing std::bad_alloc.")                                     \
  X(tcache, Bool, true, (opt_any()), kOptBoth, "supported", "Use thread caches.")                  \
  X(tcache_max, SizeT, size_t{32768},                                                              \
    (opt_urange(0, kOptTcacheMaxLimit, kOptCheckMax | kOptClip)), kOptBoth,                        \
    "supported (rounded to a size class at tcache boot)",                                          \
    "Largest size class cached in thread caches; clipped to 8 MiB.")                               \
  X(lg_tcache_max, Alias, {}, (opt_urange(0, kOptLgTcacheMaxLimit, kOptCheckMax | kOptClip)),      \
    kOptParse, "supported (alias)", "Alias: tcache_max = 2^value, value clipped to 23.")           \
  X(lg_tcache_nslots_mul, SSizeT, 1, (opt_srange(-16, 16, kOptCheckMin | kOptCheckMax)), kOptBoth, \
    "supported", "log2 multiplier of small-bin tcache slots (relative to nregs).")                 \
  X(tcache_nslots_small_min, Unsigned, 20u,                                                        \
    (opt_urange(1, 2048, kOptCheckMin | kOptCheckMax | kOptClip)), kOptBoth, "supported",          \
    "Fewest tcache slots of a small bin.")                                                         \
  X(tcache_nslots_small_max, Unsigned, 200u,                                                       \
    (opt_urange(1, 2048, kOptCheckMin | kOptCheckMax | kOptClip)), kOptBoth, "supported",          \
    "Most tcache slots of a small bin.")                                                           \
  X(tcache_nslots_large, Unsigned, 20u,                                                            \
    (opt_urange(1, 2048, kOptCheckMin | kOptCheckMax | kOptClip)), kOptBoth, "supported",          \
    "tcache slots of each large bin.")                                                             \
  X(tcache_gc_incr_bytes, SizeT, size_t{65536},                                                    \
    (opt_urange(1024, SIZE_MAX, kOptCheckMin | kOptClip)), kOptBoth, "supported",                  \
    "Allocated bytes between thread-cache garbage-collection steps.")                              \
  X(tcache_gc_delay_bytes, SizeT, size_t{0}, (opt_any()), kOptBoth, "supported",                   \
    "Bytes to wait before GC may flush a bin that was just refilled.")                             \
  X(lg_tcache_flush_small_div, Unsigned, 1u,                                                       \
    (opt_urange(1, 16, kOptCheckMin | kOptCheckMax | kOptClip)), kOptBoth, "supported",            \
    "A full small bin flushes 1/2^value of its items.")                                            \
  X(lg_tcache_flush_large_div, Unsigned, 1u,                                                       \
    (opt_urange(1, 16, kOptCheckMin | kOptCheckMax | kOptClip)), kOptBoth, "supported",            \
    "A full large bin flushes 1/2^value of its items.")                                            \
  X(oversize_threshold, SizeT, size_t{8} << 20, (opt_urange(0, kOptLargeMaxClass, kOptCheckMax)),  \
    kOptBoth, "supported",                                                                         \
    "Allocations at least this large go to the dedicated huge arena; 0 disables it.")              \
  X(lg_extent_max_active_fit, SizeT, size_t{6}, (opt_urange(0, 64, kOptCheckMax)), kOptBoth,       \
    "supported",                                                                                   \
    "A cached extent is reused only if at most 2^value times the request (and bounds "             \
    "coalescing).")                                                                                \
  X(percpu_arena, Choice, (opt_pick(kPercpuArenaNames, "disabled")),                               \
    (opt_choice(kPercpuArenaNames, kOptValuePrefix)), kOptBoth | kOptPrefixKey,                    \
    "supported (arena boot)", "Bind arenas to CPUs: percpu, phycpu or disabled.")                  \
  X(background_thread, Bool, false, (opt_any()), kOptBoth, "supported",                            \
    "Purge with background threads.")                                                              \
  X(max_background_threads, SizeT, kOptMaxBackgroundThreadsUnset,                                  \
    (opt_urange(1, 0, kOptCheckMin | kOptCheckMax | kOptClip, kOptMaxIsCurrent)), kOptBoth,        \
    "supported; 4096 = unset, background-thread boot makes it 4",                                  \
    "Most background threads; clipped to the value already set.")                                  \
  X(hpa, Bool, false, (opt_any()), kOptBoth, "accepted and reported; no HPA (PAC serves all)",     \
    "Use the hugepage-aware page allocator.")                                                      \
  X(hpa_slab_max_alloc, SizeT, size_t{65536},                                                      \
    (opt_urange(kOptPage, kOptHugepage, kOptCheckMin | kOptCheckMax | kOptClip)), kOptBoth,        \
    "accepted and reported; no HPA", "Largest allocation the HPA serves from a huge page.")        \
  X(hpa_hugification_threshold, SizeT, kOptHugepage * 95 / 100,                                    \
    (opt_urange(kOptPage, kOptHugepage, kOptCheckMin | kOptCheckMax | kOptClip)), kOptBoth,        \
    "accepted and reported; no HPA", "Active bytes in a huge page before it is hugified.")         \
  X(hpa_hugification_threshold_ratio, Alias, {}, (opt_urange(0, kOptFxpOne, kOptCheckMax)),        \
    kOptParse, "accepted (alias); no HPA",                                                         \
    "Alias: hpa_hugification_threshold = value x 2 MiB, value in [0, 1].")                         \
  X(hpa_hugify_delay_ms, Uint64, uint64_t{10000}, (opt_any()), kOptBoth,                           \
    "accepted and reported; no HPA", "Delay before hugifying a huge page past the threshold.")     \
  X(hpa_min_purge_interval_ms, Uint64, uint64_t{5000}, (opt_any()), kOptBoth,                      \
    "accepted and reported; no HPA", "Minimum time between HPA purges.")                           \
  X(hpa_dirty_mult, Fxp, kOptFxpOne / 4, (opt_any(kOptMinusOne)), kOptBoth,                        \
    "accepted and reported; no HPA",                                                               \
    "HPA dirty pages allowed, as a fraction of active; -1 = no limit.")                            \
  X(hpa_sec_nshards, SizeT, size_t{4}, (opt_urange(0, 0, kOptCheckMin | kOptClip)), kOptBoth,      \
    "accepted and reported; no SEC", "Shards of the small extent cache in front of the HPA.")      \
  X(hpa_sec_max_alloc, SizeT, size_t{32768}, (opt_urange(kOptPage, 0, kOptCheckMin | kOptClip)),   \
    kOptBoth, "accepted and reported; no SEC", "Largest extent the SEC caches.")                   \
  X(hpa_sec_max_bytes, SizeT, size_t{262144}, (opt_urange(kOptPage, 0, kOptCheckMin | kOptClip)),  \
    kOptBoth, "accepted and reported; no SEC", "Bytes one SEC shard may cache.")                   \
  X(hpa_sec_bytes_after_flush, SizeT, size_t{131072},                                              \
    (opt_urange(kOptPage, 0, kOptCheckMin | kOptClip)), kOptBoth, "accepted and reported; no SEC", \
    "Bytes a SEC shard keeps after a flush.")                                                      \
  X(hpa_sec_batch_fill_extra, SizeT, size_t{0},                                                    \
    (opt_urange(0, kOptHugepage / kOptPage, kOptCheckMin | kOptCheckMax | kOptClip)), kOptBoth,    \
    "accepted and reported; no SEC", "Extra extents a SEC miss allocates.")                        \
  X(slab_sizes, SlabPages, (opt_filled<uint16_t, kOptNBins>(0)), (opt_any(kOptDefaultKeyword)),    \
    kOptParse, "supported (bin boot; arenas.bin.<j>.slab_size)",                                   \
    "Slab pages per small bin, as size ranges: \"lo-hi:pages|...\"; 0 = default geometry.")        \
  X(thp, Choice, (opt_pick(kThpNames, "default")), (opt_choice(kThpNames, kOptValuePrefix)),       \
    kOptBoth, "supported", "Transparent huge pages for user memory: default, always or never.")    \
  X(zero_realloc, Choice, (opt_pick(kZeroReallocNames, "free")), (opt_choice(kZeroReallocNames)),  \
    kOptBoth, "supported", "realloc(p, 0): free (returns NULL), alloc or abort.")                  \
  X(san_guard_small, SizeT, size_t{0}, (opt_any()), kOptParse, "accepted; no guard pages",         \
    "Guard every n-th small slab with guard pages (0 = never).")                                   \
  X(san_guard_large, SizeT, size_t{0}, (opt_any()), kOptParse, "accepted; no guard pages",         \
    "Guard every n-th large extent with guard pages (0 = never).")                                 \
  X(preset, Alias, {}, (opt_choice(kPresetNames)), kOptParse, "ours: supported (sets the keys named)", \
    "Sets bounded_coalesce, reuse_before_grow, extent_best_fit, purge_on_grow, borrow_dirty, "     \
    "decay_hold_peak, oversize_hold, idle_arena_decay, idle_return, extent_cache_bytes and "       \
    "tcache_grow_bytes at once: ours (their defaults) or jemalloc-5.3.0 (5.3.0's behaviour); "      \
    "later keys win.")                                                                             \
  X(bounded_coalesce, Bool, true, (opt_any()), kOptBoth, "ours: supported",                        \
    "Bound eager coalescing of large extents freed into the dirty cache at size << "               \
    "lg_extent_max_active_fit; false reproduces jemalloc 5.3.0's unbounded merging.")              \
  X(idle_arena_decay, Bool, true, (opt_any()), kOptBoth, "ours: supported",                        \
    "Any thread's decay tick also advances decay, at most once a second, in the automatic "        \
    "arenas no thread is ticking; false keeps jemalloc 5.3.0's per-arena ticking.")                \
  X(reuse_before_grow, Bool, true, (opt_any()), kOptBoth, "ours: supported",                       \
    "Before taking retained or new pages, split a dirty extent larger than "                       \
    "lg_extent_max_active_fit allows; false grows as jemalloc 5.3.0 does.")                        \
  X(extent_best_fit, Bool, true, (opt_any()), kOptBoth, "ours: supported",                         \
    "Requests of up to 64 KiB of pages reuse free extents best fit (smallest size class that "     \
    "fits, oldest within it), bigger ones the oldest fitting extent of any class; false takes "    \
    "the oldest fitting extent of any class for every size, as jemalloc 5.3.0 does.")              \
  X(purge_on_grow, Bool, false, (opt_any()), kOptBoth, "ours: supported",                          \
    "true: an arena that takes retained or new pages purges as many dirty pages, from free "       \
    "extents of 64 KiB or more, keeping max(1 MiB, active/32); false (default): as 5.3.0.")        \
  X(borrow_dirty, Bool, true, (opt_any()), kOptBoth, "ours: supported",                            \
    "A large allocation or slab its automatic arena would grow for is served from another "        \
    "automatic arena's cached pages (a large block belongs to that arena, a slab's pages change "  \
    "hands); false keeps arenas apart as jemalloc 5.3.0 does.")                                    \
  X(decay_hold_peak, Bool, true, (opt_any()), kOptBoth, "ours: supported",                         \
    "Dirty decay keeps as many pages as active memory fell below its peak of the last "            \
    "dirty_decay_ms (and 1/64 of the peak more while the arena is in use), for a return to "       \
    "that peak; false purges by age alone, as jemalloc 5.3.0.")                                    \
  X(oversize_hold, Bool, true, (opt_any()), kOptBoth, "ours: supported",                           \
    "With decay_hold_peak, the oversize arena keeps freed blocks within that hold for the next "   \
    "request; false purges them when freed (its decay stays 0), as jemalloc 5.3.0.")               \
  X(extent_cache_bytes, SizeT, size_t{8} << 20, (opt_urange(0, kOptLargeMaxClass, kOptCheckMax)),  \
    kOptBoth, "ours: supported",                                                                   \
    "Per arena, freed extents of up to 16 pages kept as they are (not coalesced) for requests of "  \
    "exactly their size, until growth, decay or statistics need them; 0: as jemalloc 5.3.0.")      \
  X(tcache_grow_bytes, SizeT, size_t{8} << 20, (opt_urange(0, kOptLargeMaxClass, kOptCheckMax)),   \
    kOptBoth, "ours: supported",                                                                   \
    "Per thread, how far thread-cache bins may grow beyond their capacity when bursts overflow "   \
    "them (bytes of capacity); 0: fixed capacities, as jemalloc 5.3.0.")                           \
  X(idle_return, Bool, true, (opt_any()), kOptBoth, "ours: supported",                             \
    "One thread of ours, started when the process has two threads, runs decay while the "          \
    "application's threads do not, so memory goes back within two dirty_decay_ms of the last "     \
    "free; not with background_thread. false: only allocating threads decay, as jemalloc 5.3.0.")  \
  X(kept_max_bytes, SizeT, size_t{0}, (opt_any()), kOptBoth, "ours: supported",                    \
    "The most the memory-return policy keeps beyond what is allocated, process-wide (holds, extent " \
    "caches, grown thread-cache bins); 0: 1/8 of the cgroup's memory.max, else of the machine's "  \
    "memory (doc/design/memory-return.md).")                                                       \
  X(safety_checks, Bool, false, (opt_any()), kOptBoth, "ours: supported",                          \
    "Detect application misuse (double, sized-size-mismatched, invalid or interior frees; with "   \
    "junk, writes after free) and abort with a message; always on with --enable-debug.")           \
  X(process_madvise_max_batch, SizeT, size_t{0},                                                  \
    (opt_urange(0, kOptProcessMadviseMaxBatchLimit, kOptCheckMax | kOptClip)), kOptBoth,           \
    "jemalloc 5.3.1's: accepted and reported; no effect (always madvise)",                         \
    "Most regions one process_madvise(2) purge call may carry; 0: madvise(2) only.")               \
  X(calloc_madvise_threshold, SizeT, size_t{8} << 20,                                             \
    (opt_urange(0, kOptLargeMaxClass, kOptCheckMax)), kOptParse,                                   \
    "jemalloc 5.3.1's: accepted (no opt.*, as 5.3.1); no effect (zeroing as 5.3.0)",               \
    "Zeroed large requests below this size are zeroed with memset, not by purging.")               \
  X(tcache_ncached_max, NotBuilt, {}, (opt_any()), 0,                                              \
    "jemalloc 5.3.1's, not supported (capacities are 5.3.0's): Invalid conf pair, as 5.3.0",       \
    "Thread-cache capacity per size range: \"lo-hi:n|...\".")                                     \
  X(utrace, NotBuilt, {}, (opt_any()), 0, "not built (as Debian): Invalid conf pair, ENOENT",      \
    "utrace(2) tracing of allocation calls.")                                                      \
  X(xmalloc, NotBuilt, {}, (opt_any()), 0, "not built (as Debian): Invalid conf pair, ENOENT",     \
    "Abort instead of returning NULL on out-of-memory.")                                           \
  X(lg_san_uaf_align, NotBuilt, {}, (opt_any()), 0,                                                \
    "not built (as Debian): Invalid conf pair, ENOENT", "Use-after-free detection alignment.")     \
  X(log, NotBuilt, {}, (opt_any()), 0, "not built (as Debian): Invalid conf pair",                 \
    "Debug logging of named event categories.")                                                    \
  X(prof, Bool, false, (opt_any()), kOptProfBoth, kOptProfStatus, "Enable heap profiling.")        \
  X(prof_prefix, String, prof_prefix_buf, (opt_any()), kOptProfBoth, kOptProfStatus,               \
    "Filename prefix of profile dumps; empty: no automatic dumps.")                                \
  X(prof_active, Bool, true, (opt_any()), kOptProfBoth, kOptProfStatus, "Initial prof.active.")    \
  X(prof_thread_active_init, Bool, true, (opt_any()), kOptProfBoth, kOptProfStatus,                \
    "Initial thread.prof.active of new threads.")                                                  \
  X(lg_prof_sample, SizeT, size_t{19}, (opt_urange(0, 63, kOptCheckMax | kOptClip)), kOptProfBoth, \
    kOptProfStatus, "Mean bytes between samples, log2 (0 samples every allocation).")              \
  X(lg_prof_interval, SSizeT, ssize_t{-1}, (opt_srange(-1, 63, kOptCheckMin | kOptCheckMax)),      \
    kOptProfBoth, kOptProfStatus, "Dump a profile every 2^value allocated bytes; -1: never.")      \
  X(prof_gdump, Bool, false, (opt_any()), kOptProfBoth, kOptProfStatus,                            \
    "Dump a profile when total virtual memory exceeds its previous maximum.")                      \
  X(prof_final, Bool, false, (opt_any()), kOptProfBoth, kOptProfStatus,                            \
    "Dump a final profile at exit.")                                                               \
  X(prof_leak, Bool, false, (opt_any()), kOptProfBoth, kOptProfStatus, "Report leaks at exit.")    \
  X(prof_leak_error, Bool, false, (opt_any()), kOptProfBoth, kOptProfStatus,                       \
    "Exit with an error status when leaks are found.")                                             \
  X(prof_accum, Bool, false, (opt_any()), kOptProfBoth, kOptProfStatus,                            \
    "Keep cumulative counts in profile dumps.")                                                    \
  X(prof_recent_alloc_max, SSizeT, ssize_t{0},                                                     \
    (opt_srange(-1, std::numeric_limits<ssize_t>::max(), kOptCheckMin | kOptCheckMax)),            \
    kOptProfBoth, kOptProfStatus,                                                                  \
    "Sampled allocations experimental.prof_recent keeps; -1: no limit.")                           \
  X(prof_stats, Bool, false, (opt_any()), kOptProfBoth, kOptProfStatus,                            \
    "Keep per-size-class sampled statistics (prof.stats.{bins,lextents}.<i>.{live,accum}).")       \
  X(prof_sys_thread_name, Bool, false, (opt_any()), kOptProfBoth, kOptProfStatus,                  \
    "Use the system thread name in profiles.")                                                     \
  X(prof_time_resolution, Choice, (opt_pick(kProfTimeResNames, "default")),                        \
    (opt_choice(kProfTimeResNames)), kOptProfBoth, kOptProfStatus,                                 \
    "Clock of prof_log / prof_recent times: default (coarse) or high.")                            \
  X(prof_bt_max, Unsigned, 128u,                                                                   \
    (opt_urange(1, std::numeric_limits<unsigned>::max(), kOptCheckMin | kOptCheckMax | kOptClip)), \
    kOptProfBoth,                                                                                  \
    "jemalloc 5.3.1's; keeps at most 128 frames (more reads back); no prof build: ENOENT",         \
    "Deepest backtrace profiling records.")                                                        \
  X(prof_unbias, Bool, true, (opt_any()), kOptProfParse, kOptProfStatus,                           \
    "Unbias sampled counts in dumps.")                                                             \
  X(prof_log, Bool, false, (opt_any()), kOptProfParse, kOptProfStatus,                             \
    "Log sampled allocations from start-up (written at log_stop/exit).")

/// Identifier of each table entry, in table order (conf uses it to special-case options).
enum class OptId : uint16_t {
#define JE_OPT_X(name, kind, def, dom, flags, status, doc) name,
  JE_OPTION_TABLE(JE_OPT_X)
#undef JE_OPT_X
      kCount
};

// ---- Storage ---------------------------------------------------------------------------------

/// Every option's value, one field per key (plus typed companions of the choice options).
struct Options {
#define JE_OPT_X(name, kind, def, dom, flags, status, doc) \
  [[no_unique_address]] OptStorage<OptKind::k##kind>::T name = def;
  JE_OPTION_TABLE(JE_OPT_X)
#undef JE_OPT_X

  // Typed companions of the choice options, for fast checks; kept in step by the parser.
  DssPrec dss_prec = DssPrec::kSecondary;
  PercpuArenaMode percpu_arena_mode = PercpuArenaMode::kDisabled;
  ThpOpt thp_mode = ThpOpt::kDefault;
  MetadataThpMode metadata_thp_mode = MetadataThpMode::kDisabled;
  ZeroReallocAction zero_realloc_action = ZeroReallocAction::kFree;
  ProfTimeRes prof_time_res = ProfTimeRes::kDefault;
  bool junk_alloc = config::kDebug;  // 5.3.0: junk "true" by default in debug builds
  bool junk_free = config::kDebug;

  // Buffers behind the kLetters options (their `const char*` fields point here).
  char stats_print_opts_buf[kStatsLettersMax + 1] = "";
  char stats_interval_opts_buf[kStatsLettersMax + 1] = "";
  // Buffer behind prof_prefix.
  char prof_prefix_buf[kOptPathMax] = "jeprof";
};

/// The option values. Written only during initialization (see the header comment).
extern constinit Options g_opt;

// ---- Descriptors -----------------------------------------------------------------------------

/// A readable `opt.<name>` mallctl leaf: `size` bytes of type `type` at `ptr` (for kString, `ptr`
/// points at a `const char*`).
struct OptDesc {
  const char* name;
  OptType type;
  void* ptr;
  size_t size;
};

/// Everything the table knows about one entry (parser, docs, tests).
struct OptInfo {
  OptId id;
  const char* name;
  OptKind kind;
  OptType type;   ///< mallctl type, kNone when not readable
  uint8_t flags;  ///< kOptParse | kOptMallctl | kOptPrefixKey
  OptDomain domain;
  void* ptr;        ///< the live value in g_opt; nullptr for kAlias / kNotBuilt
  const void* def;  ///< the default value (same type); nullptr for kAlias / kNotBuilt
  size_t size;      ///< bytes at ptr; 0 for kAlias / kNotBuilt
  const char* status;
  const char* doc;
};

/// The `opt.*` mallctl leaf `name` (without the "opt." prefix; `len` bytes, need not be
/// NUL-terminated), or nullptr when it is not an option readable through mallctl (unknown,
/// parse-only, prof* and the other features this build leaves out).
const OptDesc* opt_find(const char* name, size_t len);

/// All readable `opt.*` leaves, in table order; stores their number in *n.
const OptDesc* opt_table(size_t* n);

/// Every table entry (including parse-only and not-built keys), in table order.
const OptInfo* opt_info_table(size_t* n);

/// The table entry whose key is exactly s[0, len), or nullptr.
const OptInfo* opt_info_find(const char* s, size_t len);

/// The table entry of `id`.
const OptInfo& opt_info(OptId id);

/// Restores every option to its default (g_opt's initial state). For tests and for callers that
/// re-run configuration; not thread-safe.
void opt_reset();

}  // namespace je
