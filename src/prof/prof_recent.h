// prof_recent.h: the most recent sampled allocations (experimental.prof_recent.*).
//
// Purpose: 5.3.0's "last-N" record. While the limit (opt.prof_recent_alloc_max, changed at run
// time through experimental.prof_recent.alloc_max; -1 = unlimited, 0 = off) is not 0, every
// sampled allocation appends a record -- requested and usable size, allocating thread, time,
// backtrace -- evicting the oldest record once the limit is reached. When a recorded block
// is freed, its record gets the freeing thread, time and backtrace, and stays until evicted.
// alloc_dump writes the records, oldest first, as 5.3.0's compact JSON:
//   {"sample_interval":N,"recent_alloc_max":M,"recent_alloc":[{"size":..,"usize":..,
//    "released":..,"alloc_thread_uid":..,["alloc_thread_name":..,]"alloc_time":..,
//    "alloc_trace":["0x..",..][,"dalloc_thread_uid":..,["dalloc_thread_name":..,]
//    "dalloc_time":..,"dalloc_trace":[..]]},..]}
// (thread names only when set, dalloc_* only for a released block whose free was recorded).
// Memory: records come from base memory and are recycled through a free list (never malloc),
// so the sampled paths never recurse into the allocator for them. A record points at the
// thread data (ProfTdata) and the backtrace contexts (ProfCtx), both immortal.
// Layer: prof. Callers: prof_tctx.cc (sampled allocation and free), src/ctl (the names).
// Concurrency: `g_recent_mtx` (LockRank::kProf, never held with another allocator lock) guards
// the list, the free list and the block <-> record links; a block's link is also read without
// it (acquire) so that frees of unrecorded blocks never lock. A dump holds `g_recent_dump_mtx`
// (kProfRecentDump, outside kProfDump: the callback's allocations may trigger an interval
// dump), detaches the list, writes it without the list lock (the client's callback may
// allocate, sampled allocations go on recording), then puts it back in front of what was
// recorded meanwhile and trims to the limit, as 5.3.0 does.
// Invariants: count <= max unless max == -1; a live recorded block's ProfTctx::recent and its
// record's `live` point at each other.
// jemalloc mapping: prof_recent.c (prof_recent_alloc, prof_recent_alloc_reset,
// prof_recent_alloc_max_ctl_{read,write}, prof_recent_alloc_dump).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include "prof/prof_json.h"

namespace je {

struct ProfCtx;
struct ProfTctx;
struct ProfTdata;

/// Once, at boot (opt.prof): the initial limit.
void prof_recent_boot(ssize_t max);
/// experimental.prof_recent.alloc_max.
ssize_t prof_recent_max_get();
/// Sets the limit (>= -1), evicting the oldest records beyond it; returns the previous one.
ssize_t prof_recent_max_set(ssize_t max);
/// Records the sampled block `t` (allocated by `td`, backtrace `ctx`) if the limit allows.
void prof_recent_alloc(ProfTctx* t, ProfTdata* td, ProfCtx* ctx, size_t size, size_t usize,
                       uint64_t time_ns);
/// Whether `t` may have a record (lock-free precheck for the free path).
bool prof_recent_linked(const ProfTctx* t);
/// The recorded block `t` is being freed by `td` (nullptr: unknown) with backtrace `ctx`
/// (nullptr: not captured): completes its record, unlinks it.
void prof_recent_free(ProfTctx* t, ProfTdata* td, ProfCtx* ctx, uint64_t time_ns);
/// experimental.prof_recent.alloc_dump: the records as JSON through `cb`.
void prof_recent_dump(ProfWriteCb cb, void* opaque);

/// Fork protocol, in two parts for the two ranks: the dump mutex (before kProfDump's) and the
/// list mutex (among the kProf ones).
void prof_recent_dump_prefork();
void prof_recent_dump_postfork_parent();
void prof_recent_dump_postfork_child();
void prof_recent_prefork();
void prof_recent_postfork_parent();
void prof_recent_postfork_child();

}  // namespace je
