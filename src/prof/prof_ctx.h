// prof_ctx.h: the table of sampled backtraces ("contexts") and their counters.
//
// Purpose: every sampled allocation is charged to the context of its backtrace: live objects
// and bytes (cur), and under prof_accum everything ever sampled (accum), in total and per
// allocating thread (the t<id> lines of a dump). A freed sampled block is credited back to the
// same context and thread, whichever thread frees it and whether or not its allocator still
// runs. The counts are whatever the caller charges (the prof module charges unbiased
// estimates); this table only adds and subtracts.
// Memory: contexts, their frame arrays, per-thread counters and the bucket array come from the
// base allocator and are never freed (a context whose counts fall to zero stays, as jemalloc's
// does until it is collected), so a Ctx pointer kept in a sampled block's metadata stays valid.
// Layer: prof. Callers: the prof module (sampling, frees, dumps, prof.reset); unit tests.
// Concurrency: one mutex (LockRank::kProf; never held with the prof module's other mutex) over
// lookups, insertions and counter updates. The list of all contexts and each context's thread
// list are append-only with release/acquire links, so a dump walks them without the lock and
// copies each context's counters under it, one context at a time.
// Invariants: cur counts never underflow (a subtraction larger than the count clamps to 0 --
// only possible after prof.reset cleared counts of blocks still live); accum only grows until
// reset.
// jemalloc mapping: prof_gctx_t / prof_tctx_t and the bt2gctx table of prof_data.c
// (prof_lookup, prof_tctx_create, prof_free_sampled_object, prof_reset).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "prof/prof_backtrace.h"
#include "prof/prof_dump.h"

namespace je {

/// One thread's share of a context.
struct ProfThreadCnt {
  std::atomic<ProfThreadCnt*> next;
  uint64_t thr_uid;
  ProfCnt cnt;
};

/// One backtrace and its counters.
struct ProfCtx {
  ProfCtx* bucket_next;            // hash chain (under the mutex)
  std::atomic<ProfCtx*> all_next;  // every context, oldest first
  std::atomic<ProfThreadCnt*> threads;
  uint64_t hash;
  unsigned len;
  const uintptr_t* vec;  // len frames, innermost first
  ProfCnt total;
  // The allocation log's index of this backtrace in its current session (prof_log.cc, under
  // its mutex): valid while log_epoch equals the session's number.
  uint64_t log_epoch;
  size_t log_index;
};

/// Sets the table up (bucket array from base memory). Idempotent; false on OOM.
bool prof_ctx_boot();
/// The context of `bt` (created on first sight); nullptr on OOM.
ProfCtx* prof_ctx_get(const ProfBt& bt);
/// Charges one sampled allocation of (objs, bytes) to `ctx` and thread `thr_uid` (cur and
/// accum). False on OOM for a new per-thread counter (nothing is charged then).
bool prof_ctx_charge(ProfCtx* ctx, uint64_t thr_uid, uint64_t objs, uint64_t bytes);
/// Both under one lock (a sampled allocation's path): the context of `bt`, charged; nullptr on
/// OOM (then nothing is charged).
ProfCtx* prof_ctx_get_charged(const ProfBt& bt, uint64_t thr_uid, uint64_t objs, uint64_t bytes);
/// Credits a freed sampled allocation back (cur only).
void prof_ctx_credit(ProfCtx* ctx, uint64_t thr_uid, uint64_t objs, uint64_t bytes);
/// prof.reset: every counter to zero (contexts stay).
void prof_ctx_reset();

/// Walk: the oldest context, and the one after `c` (nullptr at the end). Lock-free.
ProfCtx* prof_ctx_first();
ProfCtx* prof_ctx_next(const ProfCtx* c);
/// Copies c's total and up to `max` per-thread counters (thread order: first charged first)
/// under the lock; returns how many per-thread counters c has (may exceed max).
unsigned prof_ctx_copy(const ProfCtx* c, ProfCnt* total, ProfThreadCnt* out, unsigned max);

/// Fork protocol.
void prof_ctx_prefork();
void prof_ctx_postfork_parent();
void prof_ctx_postfork_child();

}  // namespace je
