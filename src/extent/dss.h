// dss.h: the data segment (sbrk) as a second source of extent memory.
//
// Purpose: jemalloc's `dss` option. The default extent hooks take memory from mmap; with a
// precedence of "primary" they try sbrk first, with "secondary" (5.3.0's default) only after
// mmap failed, with "disabled" never. Each arena has its own precedence (`arena.<i>.dss`), new
// arenas take the default (`opt.dss`, then `arena.4096.dss`). Memory obtained from sbrk is never
// given back: the default hooks decline to unmap it (the page allocator keeps it as retained,
// purged, and reuses it) and do nothing on destroy; an sbrk extent never merges with an mmap one.
// Layer: extent. Callers: ehooks.cc (the default hooks), pac.cc (an arena's precedence at
// creation), ctl (arena.<i>.dss, stats.arenas.<i>.dss), core_boot, the fork handlers.
// Concurrency: one mutex (rank kLeaf, takes nothing inside) serializes every sbrk call of ours
// and the high-water mark; the precedences are atomics. The application may move the break
// itself (its own sbrk/brk calls): every growth starts from the current break, read under the
// mutex, never from a remembered one.
// Invariants: [base, max) is the range this process's break has covered since boot; every sbrk
// extent lies in it, page aligned. Addresses below `base` (the program's own heap before the
// allocator booted) are never claimed. An sbrk extent is zeroed and committed when handed out.
// jemalloc mapping: extent_dss.c (extent_alloc_dss, extent_in_dss, extent_dss_mergeable,
// dss_prec_names), `opt.dss`, `arena.<i>.dss`, `stats.arenas.<i>.dss`. Difference: the pages
// between the break and the requested alignment are skipped, not recorded as a retained extent
// (never touched, they cost address space only).
#pragma once

#include <cstddef>
#include <cstdint>

namespace je {

/// `dss`: where sbrk memory ranks relative to mmap (values are indexes of kDssNames, 5.3.0's
/// order).
enum class DssPrec : uint8_t { kDisabled, kPrimary, kSecondary };
inline constexpr const char* kDssNames[] = {"disabled", "primary", "secondary"};
inline constexpr unsigned kDssNPrec = 3;

/// Records the initial break and the default precedence. Called once by core_boot.
void dss_boot(DssPrec default_prec);

/// The precedence that arenas created from now on take (`arena.4096.dss`).
DssPrec dss_prec_default();
void dss_prec_default_set(DssPrec prec);

/// The precedence of arena `ind` (the default for an index never initialized).
DssPrec dss_prec_get(unsigned ind);
void dss_prec_set(unsigned ind, DssPrec prec);

/// Extends the break by `size` bytes aligned to `alignment` (page multiples); when `new_addr`
/// is given, only if the (page-rounded) break is exactly there. Sets *zero and *commit to true on
/// success. nullptr when sbrk refuses (remembered: later calls fail fast until the application
/// moves the break) or new_addr does not match.
void* dss_alloc(void* new_addr, size_t size, size_t alignment, bool* zero, bool* commit);

/// Whether `addr` lies in memory the break has covered since boot.
bool dss_contains(const void* addr);

/// Whether two adjacent extents may merge: both from sbrk or both not.
bool dss_mergeable(const void* a, const void* b);

/// The break at boot and the highest break seen (test and diagnostic use).
void* dss_base();
void* dss_max();

/// Fork protocol for the sbrk mutex (see support/mutex.h).
void dss_prefork();
void dss_postfork_parent();
void dss_postfork_child();

}  // namespace je
