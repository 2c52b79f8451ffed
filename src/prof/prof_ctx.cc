// prof_ctx.cc: the backtrace -> counters table (see prof_ctx.h).
#include "prof/prof_ctx.h"

#include <cstring>

#include "meta/base.h"
#include "support/mutex.h"

namespace je {

namespace {

constexpr size_t kNBuckets = 4096;  // power of two

constinit Mutex g_ctx_mtx{LockRank::kProf, "prof_ctx"};
constinit ProfCtx** g_buckets = nullptr;
constinit std::atomic<ProfCtx*> g_first{nullptr};
constinit ProfCtx* g_last = nullptr;  // under the mutex

// A word at a time (byte-wise FNV-1a cost 8 multiplications a frame, on every sample): each
// frame is folded in by a multiply, and the high half is folded down, since the bucket index
// takes the low bits. Only buckets depend on it; the dump order is the insertion order.
uint64_t hash_bt(const uintptr_t* vec, unsigned len) {
  uint64_t h = 0xcbf29ce484222325ULL ^ len;
  for (unsigned i = 0; i < len; i++) {
    h = (h ^ vec[i]) * 0x9e3779b97f4a7c15ULL;
    h ^= h >> 32;
  }
  return h;
}

void* base_alloc(size_t size, size_t align) {
  Base* b = base_global();
  return b == nullptr ? nullptr : b->alloc(size, align);
}

ProfThreadCnt* thread_cnt(ProfCtx* c, uint64_t thr_uid, bool create) {
  ProfThreadCnt* last = nullptr;
  for (ProfThreadCnt* t = c->threads.load(std::memory_order_acquire); t != nullptr;
       t = t->next.load(std::memory_order_acquire)) {
    if (t->thr_uid == thr_uid) return t;
    last = t;
  }
  if (!create) return nullptr;
  auto* t = static_cast<ProfThreadCnt*>(base_alloc(sizeof(ProfThreadCnt), alignof(ProfThreadCnt)));
  if (t == nullptr) return nullptr;
  t->next.store(nullptr, std::memory_order_relaxed);
  t->thr_uid = thr_uid;
  t->cnt = ProfCnt{};
  if (last == nullptr) {
    c->threads.store(t, std::memory_order_release);
  } else {
    last->next.store(t, std::memory_order_release);
  }
  return t;
}

void sub_clamped(uint64_t* v, uint64_t d) { *v = *v > d ? *v - d : 0; }

// The context of `bt` (hash h), created on first sight; nullptr on OOM. Under g_ctx_mtx.
ProfCtx* lookup_locked(const ProfBt& bt, uint64_t h) {
  if (g_buckets == nullptr) return nullptr;
  ProfCtx** bucket = &g_buckets[h & (kNBuckets - 1)];
  for (ProfCtx* c = *bucket; c != nullptr; c = c->bucket_next) {
    if (c->hash == h && c->len == bt.len &&
        memcmp(c->vec, bt.vec, bt.len * sizeof(uintptr_t)) == 0) {
      return c;
    }
  }
  auto* c = static_cast<ProfCtx*>(base_alloc(sizeof(ProfCtx), alignof(ProfCtx)));
  auto* vec = static_cast<uintptr_t*>(
      base_alloc((bt.len > 0 ? bt.len : 1) * sizeof(uintptr_t), alignof(uintptr_t)));
  if (c == nullptr || vec == nullptr) return nullptr;
  memcpy(vec, bt.vec, bt.len * sizeof(uintptr_t));
  c->vec = vec;
  c->len = bt.len;
  c->hash = h;
  c->total = ProfCnt{};
  c->log_epoch = 0;
  c->log_index = 0;
  c->threads.store(nullptr, std::memory_order_relaxed);
  c->all_next.store(nullptr, std::memory_order_relaxed);
  c->bucket_next = *bucket;
  *bucket = c;
  if (g_last == nullptr) {
    g_first.store(c, std::memory_order_release);
  } else {
    g_last->all_next.store(c, std::memory_order_release);
  }
  g_last = c;
  return c;
}

// Under g_ctx_mtx.
bool charge_locked(ProfCtx* c, uint64_t thr_uid, uint64_t objs, uint64_t bytes) {
  ProfThreadCnt* t = thread_cnt(c, thr_uid, true);
  if (t == nullptr) return false;
  for (ProfCnt* n : {&c->total, &t->cnt}) {
    n->curobjs += objs;
    n->curbytes += bytes;
    n->accumobjs += objs;
    n->accumbytes += bytes;
  }
  return true;
}

}  // namespace

bool prof_ctx_boot() {
  MutexGuard g(g_ctx_mtx);
  if (g_buckets != nullptr) return true;
  g_buckets = static_cast<ProfCtx**>(base_alloc(kNBuckets * sizeof(ProfCtx*), alignof(ProfCtx*)));
  return g_buckets != nullptr;  // base memory is zeroed: every bucket empty
}

ProfCtx* prof_ctx_get(const ProfBt& bt) {
  const uint64_t h = hash_bt(bt.vec, bt.len);
  MutexGuard g(g_ctx_mtx);
  return lookup_locked(bt, h);
}

bool prof_ctx_charge(ProfCtx* c, uint64_t thr_uid, uint64_t objs, uint64_t bytes) {
  MutexGuard g(g_ctx_mtx);
  return charge_locked(c, thr_uid, objs, bytes);
}

ProfCtx* prof_ctx_get_charged(const ProfBt& bt, uint64_t thr_uid, uint64_t objs,
                              uint64_t bytes) {
  const uint64_t h = hash_bt(bt.vec, bt.len);
  MutexGuard g(g_ctx_mtx);
  ProfCtx* c = lookup_locked(bt, h);
  return c != nullptr && charge_locked(c, thr_uid, objs, bytes) ? c : nullptr;
}

void prof_ctx_credit(ProfCtx* c, uint64_t thr_uid, uint64_t objs, uint64_t bytes) {
  MutexGuard g(g_ctx_mtx);
  sub_clamped(&c->total.curobjs, objs);
  sub_clamped(&c->total.curbytes, bytes);
  if (ProfThreadCnt* t = thread_cnt(c, thr_uid, false)) {
    sub_clamped(&t->cnt.curobjs, objs);
    sub_clamped(&t->cnt.curbytes, bytes);
  }
}

void prof_ctx_reset() {
  MutexGuard g(g_ctx_mtx);
  for (ProfCtx* c = g_first.load(std::memory_order_acquire); c != nullptr;
       c = c->all_next.load(std::memory_order_acquire)) {
    c->total = ProfCnt{};
    for (ProfThreadCnt* t = c->threads.load(std::memory_order_acquire); t != nullptr;
         t = t->next.load(std::memory_order_acquire)) {
      t->cnt = ProfCnt{};
    }
  }
}

ProfCtx* prof_ctx_first() { return g_first.load(std::memory_order_acquire); }

ProfCtx* prof_ctx_next(const ProfCtx* c) { return c->all_next.load(std::memory_order_acquire); }

unsigned prof_ctx_copy(const ProfCtx* c, ProfCnt* total, ProfThreadCnt* out, unsigned max) {
  MutexGuard g(g_ctx_mtx);
  *total = c->total;
  unsigned n = 0;
  for (ProfThreadCnt* t = c->threads.load(std::memory_order_acquire); t != nullptr;
       t = t->next.load(std::memory_order_acquire)) {
    if (n < max) {
      out[n].thr_uid = t->thr_uid;
      out[n].cnt = t->cnt;
    }
    n++;
  }
  return n;
}

void prof_ctx_prefork() { g_ctx_mtx.prefork(); }
void prof_ctx_postfork_parent() { g_ctx_mtx.postfork_parent(); }
void prof_ctx_postfork_child() { g_ctx_mtx.postfork_child(); }

}  // namespace je
