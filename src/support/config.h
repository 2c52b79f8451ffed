// config.h: build-time configuration as constexpr values.
//
// Purpose: turn configure's AC_DEFINEs into `inline constexpr` constants so that code branches
// with `if constexpr` and every line compiles in every configuration (no #ifdef forests).
// Layer: support (bottom). No state.
// jemalloc mapping: the `config_*` booleans and the `config.*` mallctl names.
#pragma once

#include <cstddef>

#include "support/autoconf.h"

namespace je::config {

inline constexpr bool kDebug = JE_CONFIG_DEBUG != 0;
inline constexpr bool kStats = JE_CONFIG_STATS != 0;
/// Heap profiling compiled in (`--enable-prof`, the default; `config.prof`). Backtraces come
/// from libgcc's unwinder (`config.prof_libgcc`), as in Debian's 5.3.0 package.
inline constexpr bool kProf = JE_CONFIG_PROF != 0;
/// Built-in option string (`--with-malloc-conf`), the lowest-priority MALLOC_CONF source.
inline constexpr const char* kMallocConf = JE_CONFIG_MALLOC_CONF;
/// `mallctl("version")`: 5.3.0-<our commit count>-g<our commit>.
inline constexpr const char* kVersion = JE_VERSION_STRING;

/// `--disable-cxx`: whether the library defines operator new/delete.
inline constexpr bool kCxx = JE_CONFIG_CXX != 0;

// Geometry of the supported platform (x86-64 / aarch64 Linux, 16-byte quantum). The page is
// 4 KiB unless configured `--with-lg-page` (12..16); the default build is identical to Debian's
// jemalloc 5.3.0 build, and every size class follows the page (meta/sc.h).
inline constexpr unsigned kLgPage = JE_CONFIG_LG_PAGE;
static_assert(kLgPage >= 12 && kLgPage <= 16, "configure accepts --with-lg-page=12..16");
inline constexpr size_t kPage = size_t{1} << kLgPage;
inline constexpr unsigned kLgQuantum = 4;
inline constexpr size_t kQuantum = size_t{1} << kLgQuantum;
inline constexpr unsigned kLgHugepage = 21;
inline constexpr size_t kHugepage = size_t{1} << kLgHugepage;
/// Significant virtual-address bits (x86-64 / aarch64 4-level paging).
inline constexpr unsigned kLgVaddr = 48;
/// `config.cache_oblivious` / `opt.cache_oblivious`: large extents carry one extra page so the
/// returned pointer can be offset by a random cache-line multiple. On unless configured
/// `--disable-cache-oblivious` (as 5.3.0: large allocations are then page aligned, and a 16 KiB
/// block takes 16 KiB of pages instead of 20).
inline constexpr bool kCacheOblivious = JE_CONFIG_CACHE_OBLIVIOUS != 0;

}  // namespace je::config
