// ctl.h: the mallctl control plane -- read and write options, settings and statistics by name.
//
// Purpose: implements the semantics behind the public mallctl, mallctlnametomib and
// mallctlbymib: the full jemalloc 5.3.0 name tree (src/ctl/ctl_tree.cc), jemalloc's exact
// error codes and length rules (src/ctl/ctl_io.h), a statistics snapshot refreshed by writing
// `epoch` (src/ctl/ctl_stats.cc), and the actions (arena purge/decay/reset/destroy, arenas.create,
// thread cache control, thread arena binding). doc/mallctl.md lists every name with its type and
// meaning, and the names that answer ENOENT on purpose.
// Layer: ctl. Callers: src/api (mallctl entry points, realloc(p, 0) counting, fork handlers).
// The library must be initialized (pages, base, arenas, tcache and tsd booted) before any call.
// Concurrency: one mutex, LockRank::kCtl (jemalloc's ctl_mtx), guards the snapshot and
// ctl-owned settings; it nests outside every allocator lock and is released before actions
// that can run user extent hooks. All functions are thread-safe.
// Invariants: error codes are jemalloc's: 0, ENOENT (unknown or interior name, bad index,
// feature absent), EINVAL (wrong length -- the value is still copied as far as it fits and
// *oldlenp updated; invalid value), EPERM (writing a read-only node, reading a void one),
// EFAULT (an action that could not be done, e.g. arena.4096.dirty_decay_ms), EAGAIN (no
// memory for ctl metadata or a new arena).
// jemalloc mapping: src/ctl.c (ctl_byname, ctl_nametomib, ctl_bymib, ctl_prefork/postfork_*),
// the zero_realloc_count of jemalloc.c.
#pragma once

#include <cstddef>

namespace je {

/// mallctl(name, oldp, oldlenp, newp, newlen).
int ctl_byname(const char* name, void* oldp, size_t* oldlenp, void* newp, size_t newlen);

/// mallctlnametomib: writes up to *miblenp components of `name`'s path to mibp and sets *miblenp
/// to the number written (a short *miblenp yields a partial MIB; an interior name is fine).
int ctl_nametomib(const char* name, size_t* mibp, size_t* miblenp);

/// mallctlbymib: like ctl_byname on an integer path.
int ctl_bymib(const size_t* mib, size_t miblen, void* oldp, size_t* oldlenp, void* newp,
              size_t newlen);

/// experimental.batch_alloc's allocator: fills ptrs[] with up to `num` blocks as
/// mallocx(size, flags) would return them and returns the count. The allocation paths are
/// src/api's, above this layer, so src/api installs it at boot (api::batch_allocate); until
/// then the name fills nothing.
using CtlBatchAllocFn = size_t (*)(void** ptrs, size_t num, size_t size, int flags);
void ctl_set_batch_alloc(CtlBatchAllocFn fn);
/// Counts one realloc(p, 0) that freed p (`stats.zero_reallocs`). Lock-free.
void ctl_count_zero_realloc();

/// Fork protocol for the ctl mutex (called by src/api's atfork handlers, outermost first).
void ctl_prefork();
void ctl_postfork_parent();
void ctl_postfork_child();

}  // namespace je
