// prof_recent.cc: the most recent sampled allocations (see prof_recent.h).
#include "prof/prof_recent.h"

#include <atomic>

#include "meta/base.h"
#include "prof/prof.h"
#include "prof/prof_ctx.h"
#include "prof/prof_tctx.h"
#include "support/mutex.h"

namespace je {

/// One record. `live` is the recorded block while it is live and the record still exists.
struct ProfRecent {
  ProfRecent* next;  // list order (oldest first), or the free list
  size_t size;
  size_t usize;
  ProfTdata* alloc_td;
  ProfCtx* alloc_ctx;
  uint64_t alloc_ns;
  ProfTdata* dalloc_td;  // nullptr until the free is recorded
  ProfCtx* dalloc_ctx;
  uint64_t dalloc_ns;
  ProfTctx* live;
};

namespace {

constinit Mutex g_recent_mtx{LockRank::kProf, "prof_recent_alloc"};
constinit Mutex g_recent_dump_mtx{LockRank::kProfRecentDump, "prof_recent_dump"};
constinit std::atomic<ssize_t> g_max{0};
// The list (g_recent_mtx).
constinit ProfRecent* g_head = nullptr;
constinit ProfRecent* g_tail = nullptr;
constinit ssize_t g_count = 0;
constinit ProfRecent* g_free = nullptr;

// Unlinks the block of record `r`, if any (g_recent_mtx held).
void unlink_block(ProfRecent* r) {
  if (r->live != nullptr) {
    r->live->recent.store(nullptr, std::memory_order_release);
    r->live = nullptr;
  }
}

// Drops the oldest records until the count is within the limit (g_recent_mtx held).
void trim_locked() {
  const ssize_t max = g_max.load(std::memory_order_relaxed);
  while (max != -1 && g_count > max) {
    ProfRecent* r = g_head;
    g_head = r->next;
    if (g_head == nullptr) g_tail = nullptr;
    g_count--;
    unlink_block(r);
    r->next = g_free;
    g_free = r;
  }
}

// Copies the record `r` for the dump without the list lock held by the writer.
ProfRecent snapshot(const ProfRecent* r) {
  MutexGuard g(g_recent_mtx);
  return *r;
}

void dump_trace(ProfJson& j, const char* key, const ProfCtx* ctx) {
  j.array_begin(key);
  if (ctx != nullptr) {
    for (unsigned i = 0; i < ctx->len; i++) j.value_ptr(ctx->vec[i]);
  }
  j.array_end();
}

void dump_record(ProfJson& j, const ProfRecent& r) {
  j.object_begin();
  j.kv_u64("size", r.size);
  j.kv_u64("usize", r.usize);
  const bool released = r.live == nullptr;
  j.kv_bool("released", released);
  j.kv_u64("alloc_thread_uid", r.alloc_td->thr_uid);
  // A thread without a name (or with the empty one) has no name key, as in 5.3.0.
  if (r.alloc_td->name[0] != '\0') j.kv_str("alloc_thread_name", r.alloc_td->name);
  j.kv_u64("alloc_time", r.alloc_ns);
  dump_trace(j, "alloc_trace", r.alloc_ctx);
  if (released && r.dalloc_td != nullptr) {
    j.kv_u64("dalloc_thread_uid", r.dalloc_td->thr_uid);
    if (r.dalloc_td->name[0] != '\0') j.kv_str("dalloc_thread_name", r.dalloc_td->name);
    j.kv_u64("dalloc_time", r.dalloc_ns);
    dump_trace(j, "dalloc_trace", r.dalloc_ctx);
  }
  j.object_end();
}

}  // namespace

void prof_recent_boot(ssize_t max) { g_max.store(max, std::memory_order_relaxed); }

ssize_t prof_recent_max_get() { return g_max.load(std::memory_order_relaxed); }

ssize_t prof_recent_max_set(ssize_t max) {
  MutexGuard g(g_recent_mtx);
  ssize_t old = g_max.exchange(max, std::memory_order_relaxed);
  trim_locked();
  return old;
}

void prof_recent_alloc(ProfTctx* t, ProfTdata* td, ProfCtx* ctx, size_t size, size_t usize,
                       uint64_t time_ns) {
  // Off (or a dump has the whole limit's worth detached: the list then refills and is trimmed
  // when the dump puts it back).
  if (g_max.load(std::memory_order_relaxed) == 0) return;
  MutexGuard g(g_recent_mtx);
  const ssize_t max = g_max.load(std::memory_order_relaxed);
  if (max == 0) return;
  ProfRecent* r;
  if (max != -1 && g_count >= max) {
    // Full: the oldest record makes room (5.3.0 rotates the head to the tail).
    r = g_head;
    g_head = r->next;
    if (g_head == nullptr) g_tail = nullptr;
    g_count--;
    unlink_block(r);
  } else if (g_free != nullptr) {
    r = g_free;
    g_free = r->next;
  } else {
    Base* b = base_global();
    r = b == nullptr ? nullptr : static_cast<ProfRecent*>(b->alloc(sizeof(ProfRecent), 16));
    if (r == nullptr) return;  // no memory: this allocation goes unrecorded
  }
  r->next = nullptr;
  r->size = size;
  r->usize = usize;
  r->alloc_td = td;
  r->alloc_ctx = ctx;
  r->alloc_ns = time_ns;
  r->dalloc_td = nullptr;
  r->dalloc_ctx = nullptr;
  r->dalloc_ns = 0;
  r->live = t;
  t->recent.store(r, std::memory_order_release);
  if (g_tail != nullptr) {
    g_tail->next = r;
  } else {
    g_head = r;
  }
  g_tail = r;
  g_count++;
}

bool prof_recent_linked(const ProfTctx* t) {
  return t->recent.load(std::memory_order_acquire) != nullptr;
}

void prof_recent_free(ProfTctx* t, ProfTdata* td, ProfCtx* ctx, uint64_t time_ns) {
  MutexGuard g(g_recent_mtx);
  ProfRecent* r = t->recent.load(std::memory_order_relaxed);
  if (r == nullptr) return;  // evicted meanwhile
  if (td != nullptr && ctx != nullptr) {
    r->dalloc_td = td;
    r->dalloc_ctx = ctx;
    r->dalloc_ns = time_ns;
  }
  unlink_block(r);
}

void prof_recent_dump(ProfWriteCb cb, void* opaque) {
  MutexGuard dump_guard(g_recent_dump_mtx);
  ProfRecent* head;
  ssize_t count;
  ssize_t max;
  {
    MutexGuard g(g_recent_mtx);
    max = g_max.load(std::memory_order_relaxed);
    head = g_head;
    count = g_count;
    g_head = g_tail = nullptr;
    g_count = 0;
  }
  {
    ProfJson j(cb, opaque);
    j.object_begin();
    j.kv_u64("sample_interval", uint64_t{1} << prof_lg_sample());
    j.kv_i64("recent_alloc_max", max);
    j.array_begin("recent_alloc");
    // The detached records change only through frees of their blocks (under the list lock):
    // each is copied under it before it is written.
    for (ProfRecent* r = head; r != nullptr; r = r->next) dump_record(j, snapshot(r));
    j.array_end();
    j.object_end();
  }
  MutexGuard g(g_recent_mtx);
  if (head != nullptr) {
    ProfRecent* last = head;
    while (last->next != nullptr) last = last->next;
    last->next = g_head;
    if (g_tail == nullptr) g_tail = last;
    g_head = head;
    g_count += count;
  }
  trim_locked();
}

void prof_recent_dump_prefork() { g_recent_dump_mtx.prefork(); }
void prof_recent_dump_postfork_parent() { g_recent_dump_mtx.postfork_parent(); }
void prof_recent_dump_postfork_child() { g_recent_dump_mtx.postfork_child(); }
void prof_recent_prefork() { g_recent_mtx.prefork(); }
void prof_recent_postfork_parent() { g_recent_mtx.postfork_parent(); }
void prof_recent_postfork_child() { g_recent_mtx.postfork_child(); }

}  // namespace je
