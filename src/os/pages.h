// pages.h: the OS contract for virtual memory.
//
// Purpose: the one module that talks to the kernel about address space. Every mmap, munmap,
// madvise and mincore in the allocator is issued here, so the guarantees the upper layers rely on
// (alignment, zero-fill, what "commit" and "purge" mean, when a call is a no-op) are written down
// in one place and can be checked against a particular kernel at start-up.
//
// Layer: os. Callers: src/extent/ehooks (the default extent hooks), src/meta/base (metadata
// blocks), src/arena (THP advice), src/ctl (opt.thp / opt.trust_madvise, stats of what the OS
// supports), and the unit tests.
//
// Concurrency: not synchronized and needs no lock. boot() runs once during allocator init, before
// any other function here (set_trust_madvise() and set_abort_on_error() may precede it);
// afterwards the module's state is read-only except for one atomic flag (MADV_FREE found
// unsupported at run time), so every other function may be called from any thread at any time.
// Nothing here allocates, uses stdio or holds a lock, so it is safe inside the allocator's own
// critical sections and in a forked child.
//
// errno: every function preserves errno (the kernel's error codes never leak to the caller);
// failures are reported through the return value only.
//
// Invariants / contract (x86-64 and aarch64 Linux; config::kPage is 4 KiB or --with-lg-page):
//   * Addresses and sizes passed in are multiples of the page (config::kPage); boot() refuses to
//     run on a kernel whose page is larger (a smaller one divides ours), so page arithmetic
//     elsewhere can be constexpr.
//   * map() returns fresh anonymous private memory: zero-filled, aligned as asked.
//   * "Overcommit" means /proc/sys/vm/overcommit_memory is 0 or 1. Then a mapping costs no commit
//     charge, every mapping is committed (readable/writable) and commit()/decommit() refuse
//     (return false, touch nothing), so callers purge instead of decommitting. Without overcommit
//     (mode 2) uncommitted ranges are PROT_NONE and commit()/decommit() remap them.
//   * purge_forced() (MADV_DONTNEED) drops the pages; the next touch sees zeros iff
//     purge_forced_zeroes() (verified at boot, since some emulators ignore the advice).
//   * purge_lazy() (MADV_FREE) lets the kernel reclaim pages under pressure; until it does, the
//     old contents stay readable, so callers must treat the range as holding garbage.
//
// jemalloc mapping: src/pages.c (pages_map/unmap/commit/decommit/purge_lazy/purge_forced/huge/
// nohuge, os_overcommits, init_system_thp_mode; not dontdump/dodump: nothing here needs them).
// Feeds opt.trust_madvise and the system THP mode that opt.thp and opt.metadata_thp consult.
// Differences from jemalloc: the zeroing probe is always run at boot unless trust_madvise is
// set (jemalloc only runs it in some builds); an unsupported MADV_FREE is detected both by a
// boot probe and at run time.
#pragma once

#include <cstddef>
#include <cstdint>

namespace je::pages {

/// The system-wide transparent-hugepage policy, from /sys/kernel/mm/transparent_hugepage/enabled.
/// kDefault is the kernel's "[madvise]" setting: hugepages only where MADV_HUGEPAGE was given.
enum class ThpMode : uint8_t { kDefault, kAlways, kNever, kNotSupported };

/// Probes the kernel once: page size (must equal config::kPage), overcommit mode, THP mode,
/// whether MADV_FREE is accepted and whether MADV_DONTNEED zero-fills private anonymous pages
/// (skipped when set_trust_madvise(true) was called). Returns true on success; false when the
/// page size differs or a scratch mapping cannot be made. Later calls return the first result
/// without probing again.
bool boot();

/// Maps `size` bytes of fresh, zero-filled anonymous memory.
/// `size` and `alignment` are page multiples, `alignment` a power of two >= the page.
/// addr == nullptr: anywhere, aligned to `alignment` (a plain map is kept when it happens to be
/// aligned; otherwise size + alignment - page bytes are mapped and both ends trimmed).
/// addr != nullptr: exactly at `addr` (which must be aligned to `alignment`) without replacing any
/// existing mapping, or nullptr when that range is not free.
/// *commit: in, whether the caller wants the range committed; out, whether it is (always true
/// when the OS overcommits). An uncommitted range is PROT_NONE until commit().
/// Returns nullptr on failure (out of address space, overflow, bad arguments).
void* map(void* addr, size_t size, size_t alignment, bool* commit);

/// Unmaps a range obtained from map() (or a page-aligned part of one). A kernel refusal is
/// reported on stderr; there is nothing else a caller could do about it.
void unmap(void* addr, size_t size);

/// Makes a decommitted range usable again (zero-filled). On overcommitting systems commit and
/// decommit are not used: returns false ("not supported") without touching the memory.
bool commit(void* addr, size_t size);

/// Releases the range's backing and commit charge by mapping PROT_NONE over it, keeping the
/// address space reserved. Returns false without touching memory when the OS overcommits.
bool decommit(void* addr, size_t size);

/// MADV_FREE: the kernel may reclaim the pages lazily; contents are undefined afterwards (still
/// readable until reclaimed). Returns false when unsupported: the boot probe failed, or the
/// kernel answered EINVAL once (remembered; later calls return false without a syscall).
bool purge_lazy(void* addr, size_t size);

/// MADV_DONTNEED: the pages are dropped now (RSS falls). Returns true on success. Whether the
/// range then reads as zeros is purge_forced_zeroes().
bool purge_forced(void* addr, size_t size);

/// True when boot() verified that purge_forced() zero-fills, or set_trust_madvise(true) was set.
bool purge_forced_zeroes();

/// opt.trust_madvise: believe that MADV_DONTNEED zeroes without probing. Call before boot().
void set_trust_madvise(bool trust);

/// opt.abort: abort() after reporting an OS call that should not have failed. Call before
/// boot(), while no other thread uses this module (the flag is a plain, then read-only, bool).
void set_abort_on_error(bool abort_on_error);

/// MADV_HUGEPAGE on a hugepage-aligned range. False when THP is not supported or the kernel
/// refuses.
bool huge(void* addr, size_t size);

/// MADV_NOHUGEPAGE on a hugepage-aligned range. False when THP is not supported or the kernel
/// refuses.
bool nohuge(void* addr, size_t size);

/// Whether the kernel overcommits (overcommit_memory 0 or 1), as read by boot().
bool os_overcommits();

/// The system THP mode read by boot() (kNotSupported before boot or without THP).
ThpMode system_thp_mode();

/// The kernel's page size as read by boot() (0 before boot).
size_t os_page_size();

/// Test/diagnostic helper: bytes of the pages overlapping [addr, addr + size) that are resident,
/// per mincore(2). Unmapped parts count as not resident. Not for hot paths.
size_t resident_bytes(const void* addr, size_t size);

/// Test hook: pretend the kernel does (true) or does not (false) overcommit, so the PROT_NONE
/// commit/decommit path can be exercised on any machine. Only for unit tests.
void set_os_overcommits_for_testing(bool overcommits);

}  // namespace je::pages
