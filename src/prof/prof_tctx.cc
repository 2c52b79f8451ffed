// prof_tctx.cc: sampled allocation records (see prof_tctx.h).
#include "prof/prof_tctx.h"

#include <link.h>

#include "meta/base.h"
#include "meta/sz.h"
#include "prof/prof.h"
#include "prof/prof_backtrace.h"
#include "prof/prof_ctx.h"
#include "prof/prof_log.h"
#include "prof/prof_recent.h"
#include "prof/prof_sample.h"
#include "support/mutex.h"
#include "support/reentrancy.h"

namespace je {

namespace {

constinit Mutex g_free_mtx{LockRank::kProf, "prof_tctx"};
constinit ProfTctx* g_free = nullptr;

// The executable segment of this library when it is a shared object (not the program itself):
// captured frames inside it are the allocator's own and are dropped, whatever inlining and tail
// calls did to their number.
constinit uintptr_t g_text_lo = 0;
constinit uintptr_t g_text_hi = 0;

int find_text(dl_phdr_info* info, size_t, void* arg) {
  const uintptr_t self = *static_cast<uintptr_t*>(arg);
  for (unsigned i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD || (ph.p_flags & PF_X) == 0) continue;
    uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
    uintptr_t hi = lo + ph.p_memsz;
    if (self >= lo && self < hi) {
      // The program itself (statically linked tests) has an empty name: keep its frames.
      if (info->dlpi_name != nullptr && info->dlpi_name[0] != '\0') {
        g_text_lo = lo;
        g_text_hi = hi;
      }
      return 1;
    }
  }
  return 0;
}

ProfTctx* tctx_new(ProfTdata* td) {
  if (ProfTctx* t = td->spare_rec) {  // this thread's own: no lock
    td->spare_rec = nullptr;
    return t;
  }
  {
    MutexGuard g(g_free_mtx);
    if (ProfTctx* t = g_free) {
      g_free = t->next_free;
      return t;
    }
  }
  Base* b = base_global();
  return b == nullptr ? nullptr : static_cast<ProfTctx*>(b->alloc(sizeof(ProfTctx), 16));
}

}  // namespace

void prof_tctx_charge_of(size_t usize, size_t lg_sample, bool unbias, uint64_t* objs,
                         uint64_t* bytes) {
  if (!unbias) {
    *objs = kProfObjsOne;
    *bytes = usize;
    return;
  }
  const double r = static_cast<double>(uint64_t{1} << lg_sample);
  const double p = 1.0 - prof_exp_neg(-static_cast<double>(usize) / r);
  if (!(p > 0.0)) {  // beyond double precision: one sample stands for a huge population
    *objs = kProfObjsOne;
    *bytes = usize;
    return;
  }
  const double o = static_cast<double>(kProfObjsOne) / p;
  const double by = static_cast<double>(usize) / p;
  *objs = static_cast<uint64_t>(o + 0.5);
  *bytes = static_cast<uint64_t>(by + 0.5);
}

bool prof_tctx_wanted() {
  if (!prof_active_get()) return false;
  ProfTdata* td = prof_tdata_get();
  return td != nullptr && td->active;
}

namespace {

// Drops the library's own frames at the innermost end of `bt`.
void trim_own_frames(ProfBt& bt) {
  unsigned drop = 0;
  while (drop < bt.len && bt.vec[drop] >= g_text_lo && bt.vec[drop] < g_text_hi) drop++;
  if (drop > 0 && drop < bt.len) {
    for (unsigned i = drop; i < bt.len; i++) bt.vec[i - drop] = bt.vec[i];
    bt.len -= drop;
  }
}

// `bt` as a context, its own frames dropped (nullptr on OOM). The table may allocate (base
// memory): that call is reentrant and takes the plain paths, never sampled.
ProfCtx* ctx_of(ProfBt& bt) {
  ReentrancyGuard guard;
  trim_own_frames(bt);
  return prof_ctx_get(bt);
}

// The calling thread's backtrace as a context (the free side of prof_recent and prof_log).
// The capture may allocate (the unwinder): reentrant, never sampled.
JE_NOINLINE ProfCtx* capture_ctx(unsigned skip) {
  ProfBt bt;
  prof_backtrace(&bt, skip + 1);
  return ctx_of(bt);
}

}  // namespace

ProfTctx* prof_tctx_sample(size_t size, size_t usize, unsigned skip) {
  if (!prof_active_get()) return nullptr;
  ProfBt bt;
  prof_backtrace(&bt, skip + 1);
  return prof_tctx_sample_bt(size, usize, &bt);
}

ProfTctx* prof_tctx_sample_bt(size_t size, size_t usize, ProfBt* bt) {
  if (!prof_active_get()) return nullptr;
  ProfTdata* td = prof_tdata_get();
  if (td == nullptr || !td->active) return nullptr;
  ReentrancyGuard guard;  // the context table may allocate (base memory): never sampled
  prof_thread_name_refresh();  // prof_sys_thread_name: 5.3.0 reads it at every sample
  ProfTctx* t = tctx_new(td);
  if (t == nullptr) return nullptr;
  t->ctx = nullptr;  // a recycled record must not look charged or linked if charging fails
  t->recent.store(nullptr, std::memory_order_relaxed);
  uint64_t objs, bytes;
  prof_tctx_charge_of(usize, prof_lg_sample(), prof_options().unbias, &objs, &bytes);
  trim_own_frames(*bt);
  // Looked up and charged under one lock acquisition (one sample, one trip to the table).
  ProfCtx* ctx = prof_ctx_get_charged(*bt, td->thr_uid, objs, bytes);
  if (ctx == nullptr) {
    prof_tctx_free(t);
    return nullptr;
  }
  t->ctx = ctx;
  t->td = td;
  t->thr_uid = td->thr_uid;
  t->objs = objs;
  t->bytes = bytes;
  t->usize = usize;
  t->alloc_ns = prof_time_ns();
  t->recent.store(nullptr, std::memory_order_relaxed);
  t->req = size;
  t->szind = sz::size2index(usize);
  prof_stats_sampled(t->szind, size);
  prof_recent_alloc(t, td, ctx, size, usize, t->alloc_ns);  // malloc(0): size 0, as 5.3.0
  return t;
}

void prof_tctx_boot() {
  uintptr_t self = reinterpret_cast<uintptr_t>(&prof_tctx_sample);
  dl_iterate_phdr(find_text, &self);
}

void prof_tctx_prefork() { g_free_mtx.prefork(); }
void prof_tctx_postfork_parent() { g_free_mtx.postfork_parent(); }
void prof_tctx_postfork_child() { g_free_mtx.postfork_child(); }

void prof_tctx_free(ProfTctx* t) {
  const bool recent = prof_recent_linked(t);
  if (recent || prof_log_running()) {
    // The freeing side, as 5.3.0 records it: not from inside the allocator (nor for a thread
    // whose profiling data cannot be made), and then the record says only "released".
    ProfTdata* td = nullptr;
    ProfCtx* ctx = nullptr;
    if (!in_reentrant_call()) {
      td = prof_tdata_get();
      // Frames dropped: prof_tctx_free (those of the library's free path are trimmed).
      if (td != nullptr) ctx = capture_ctx(1);
    }
    const uint64_t now = prof_time_ns();
    if (recent) prof_recent_free(t, td, ctx, now);
    prof_log_free(t, td, ctx, now);
  }
  if (t->ctx != nullptr) {
    prof_ctx_credit(t->ctx, t->thr_uid, t->objs, t->bytes);
    prof_stats_freed(t->szind, t->req);
  }
  t->ctx = nullptr;
  // The freeing thread keeps one record for its next sample (most samples are freed by the
  // thread that made them, which samples again), unless it has exited: its data is never
  // looked at again, and the record would be lost.
  ProfTdata* td = prof_tdata_peek();
  if (td != nullptr && td->spare_rec == nullptr && !td->exited.load(std::memory_order_relaxed)) {
    td->spare_rec = t;
    return;
  }
  prof_tctx_recycle(t);
}

void prof_tctx_recycle(ProfTctx* t) {
  MutexGuard g(g_free_mtx);
  t->next_free = g_free;
  g_free = t;
}

}  // namespace je
