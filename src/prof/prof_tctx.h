// prof_tctx.h: the record of one sampled allocation, from its sampling to its free.
//
// Purpose: when a thread's allocation crosses its sample threshold, the api layer serves it as
// a large extent of its own and asks here for a record: the backtrace is captured, looked up
// in the context table, and the context is charged for this thread; the record (context,
// thread id, charged amounts) hangs off the extent's descriptor until the block is freed,
// whichever thread frees it, and the free credits exactly what was charged.
// Charged amounts: with prof_unbias (default), the unbiased estimate of what this sample
// stands for -- an allocation of s bytes is sampled with probability p = 1 - e^(-s/R),
// R = 2^lg_sample, so it is charged 1/p objects (fixed point, see kProfObjsOne) and s/p bytes (rounded; the dump writer
// turns the totals back into what jeprof's correction expects); without it, one object of s
// bytes, which jeprof unsamples itself.
// Layer: prof. Callers: src/api/alloc_path.cc (sampled allocation and free), prof.cc.
// Memory: records come from base memory and are recycled (never freed): the freeing thread keeps
// one for its own next sample (ProfTdata::spare_rec), the rest go to a shared free list.
// Concurrency: the shared free list has its own mutex (LockRank::kProf, never held with
// another lock); a thread's spare record is touched by that thread only; the context table
// locks itself (one acquisition per sample: lookup and charge together). No allocator lock
// may be held by the caller.
// Frees capture a backtrace only when the block has a recent record or the log is on.
// jemalloc mapping: prof_tctx_t, prof_alloc_prep / prof_malloc_sample_object /
// prof_free_sampled_object (prof.c), prof_unbiased_sz / prof_shifted_unbiased_cnt.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace je {

struct ProfCtx;
struct ProfRecent;
struct ProfTdata;
struct ProfBt;

/// Object counts are charged in fixed point, kProfObjsOne per object: an unbiased sample of a
/// 4 KiB block at R = 4 KiB stands for 1.58 objects, and rounding each sample to whole objects
/// would skew the average size the dump's correction depends on. Dumps divide it back out.
inline constexpr uint64_t kProfObjsOne = uint64_t{1} << 16;

/// One live sampled allocation.
struct ProfTctx {
  ProfTctx* next_free;
  ProfCtx* ctx;
  ProfTdata* td;  // the allocating thread's data (immortal)
  uint64_t thr_uid;
  uint64_t objs;  // what was charged
  uint64_t bytes;
  size_t usize;
  uint64_t alloc_ns;                // prof_time_ns() when sampled
  std::atomic<ProfRecent*> recent;  // its experimental.prof_recent record, if any
  size_t req;                       // bytes asked for (prof.stats)
  unsigned szind;                   // the size class the caller sees (prof.stats)
};

/// Samples an allocation of `size` bytes asked for (usable size `usize`) by the calling
/// thread: captures its backtrace (dropping `skip` innermost frames), charges its context and
/// records it for experimental.prof_recent. nullptr when the
/// thread's profiling is inactive (thread.prof.active / prof.active false) or memory is short:
/// the block is then an ordinary one.
ProfTctx* prof_tctx_sample(size_t size, size_t usize, unsigned skip);
/// The same with a backtrace the caller captured (prof_backtrace_inline, from the entry point's
/// own frame: each frame the unwinder walks costs about as much as the rest of a sample): the
/// library's own frames at its innermost end are dropped here. `bt` is modified.
ProfTctx* prof_tctx_sample_bt(size_t size, size_t usize, ProfBt* bt);
/// Whether the calling thread samples now (prof.active and its thread.prof.active): checked
/// before a sampled block is set up, so that a crossing with profiling inactive costs nothing.
bool prof_tctx_wanted();
/// The sampled block is freed: tell its recent-allocation record and the allocation log (both
/// get the freeing thread's backtrace), credit its context back and recycle the record.
void prof_tctx_free(ProfTctx* t);
/// Puts an unused record (no context charged) on the shared free list.
void prof_tctx_recycle(ProfTctx* t);
/// Once, at boot with opt.prof (outside allocator locks): finds this library's code, whose
/// frames every captured backtrace drops.
void prof_tctx_boot();
/// Fork protocol for the free list's mutex.
void prof_tctx_prefork();
void prof_tctx_postfork_parent();
void prof_tctx_postfork_child();
/// What an allocation of `usize` is charged when sampled (exposed for tests).
void prof_tctx_charge_of(size_t usize, size_t lg_sample, bool unbias, uint64_t* objs,
                         uint64_t* bytes);

}  // namespace je
