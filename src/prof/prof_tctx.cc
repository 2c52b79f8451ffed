// prof_tctx.cc: sampled allocation records (see prof_tctx.h).
#include "prof/prof_tctx.h"

#include <link.h>

#include "meta/base.h"
#include "prof/prof.h"
#include "prof/prof_backtrace.h"
#include "prof/prof_ctx.h"
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

ProfTctx* tctx_new() {
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

ProfTctx* prof_tctx_sample(size_t usize, unsigned skip) {
  if (!prof_active_get()) return nullptr;
  ProfBt bt;
  prof_backtrace(&bt, skip + 1);
  return prof_tctx_sample_bt(usize, &bt);
}

ProfTctx* prof_tctx_sample_bt(size_t usize, ProfBt* bt_in) {
  if (!prof_active_get()) return nullptr;
  ProfTdata* td = prof_tdata_get();
  if (td == nullptr || !td->active) return nullptr;
  // The table may allocate (base memory): those calls are reentrant and take the plain
  // paths, never sampled (the capture has its own guard).
  ReentrancyGuard guard;
  ProfBt& bt = *bt_in;
  unsigned drop = 0;
  while (drop < bt.len && bt.vec[drop] >= g_text_lo && bt.vec[drop] < g_text_hi) drop++;
  if (drop > 0 && drop < bt.len) {
    for (unsigned i = drop; i < bt.len; i++) bt.vec[i - drop] = bt.vec[i];
    bt.len -= drop;
  }
  ProfCtx* ctx = prof_ctx_get(bt);
  if (ctx == nullptr) return nullptr;
  ProfTctx* t = tctx_new();
  if (t == nullptr) return nullptr;
  uint64_t objs, bytes;
  prof_tctx_charge_of(usize, prof_lg_sample(), prof_options().unbias, &objs, &bytes);
  if (!prof_ctx_charge(ctx, td->thr_uid, objs, bytes)) {
    prof_tctx_free(t);
    return nullptr;
  }
  t->ctx = ctx;
  t->thr_uid = td->thr_uid;
  t->objs = objs;
  t->bytes = bytes;
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
  if (t->ctx != nullptr) prof_ctx_credit(t->ctx, t->thr_uid, t->objs, t->bytes);
  t->ctx = nullptr;
  MutexGuard g(g_free_mtx);
  t->next_free = g_free;
  g_free = t;
}

}  // namespace je
