// dss.cc: sbrk as an extent source (see dss.h).
#include "extent/dss.h"

#include <unistd.h>

#include <atomic>
#include <cstdint>

#include "support/errno_keeper.h"
#include "support/mutex.h"
#include "support/util.h"

namespace je {

namespace {

// Arena indices are 12 bits (MALLOCX_ARENA); the table covers them all, so an index from a
// user hook call can never be out of range.
constexpr unsigned kPrecSlots = 4096;
constexpr uint8_t kUnset = 0xff;

constinit Mutex g_dss_mtx{LockRank::kLeaf, "dss"};
constinit std::atomic<uintptr_t> g_base{0};
constinit std::atomic<uintptr_t> g_max{0};
// Set when sbrk refused; cleared when the break is found elsewhere than where we left it
// (the application released memory), so that a later request tries again.
constinit std::atomic<bool> g_exhausted{false};
constinit std::atomic<uint8_t> g_default{static_cast<uint8_t>(DssPrec::kSecondary)};
constinit std::atomic<uint8_t> g_prec[kPrecSlots] = {};
constinit std::atomic<bool> g_prec_inited{false};

uintptr_t current_break() {
  void* p = sbrk(0);
  return p == reinterpret_cast<void*>(-1) ? 0 : reinterpret_cast<uintptr_t>(p);
}

void prec_table_init() {
  for (auto& p : g_prec) p.store(kUnset, std::memory_order_relaxed);
  g_prec_inited.store(true, std::memory_order_release);
}

}  // namespace

void dss_boot(DssPrec default_prec) {
  ErrnoKeeper keep;
  if (!g_prec_inited.load(std::memory_order_acquire)) prec_table_init();
  g_default.store(static_cast<uint8_t>(default_prec), std::memory_order_relaxed);
  if (g_base.load(std::memory_order_relaxed) == 0) {
    uintptr_t b = current_break();
    g_base.store(b, std::memory_order_relaxed);
    g_max.store(b, std::memory_order_relaxed);
  }
}

DssPrec dss_prec_default() {
  return static_cast<DssPrec>(g_default.load(std::memory_order_relaxed));
}

void dss_prec_default_set(DssPrec prec) {
  g_default.store(static_cast<uint8_t>(prec), std::memory_order_relaxed);
}

DssPrec dss_prec_get(unsigned ind) {
  if (ind >= kPrecSlots || !g_prec_inited.load(std::memory_order_acquire)) {
    return dss_prec_default();
  }
  uint8_t v = g_prec[ind].load(std::memory_order_relaxed);
  return v == kUnset ? dss_prec_default() : static_cast<DssPrec>(v);
}

void dss_prec_set(unsigned ind, DssPrec prec) {
  if (ind >= kPrecSlots) return;
  if (!g_prec_inited.load(std::memory_order_acquire)) prec_table_init();
  g_prec[ind].store(static_cast<uint8_t>(prec), std::memory_order_relaxed);
}

void* dss_alloc(void* new_addr, size_t size, size_t alignment, bool* zero, bool* commit) {
  if (size == 0 || g_base.load(std::memory_order_relaxed) == 0) return nullptr;
  ErrnoKeeper keep;  // sbrk sets ENOMEM on refusal; callers see errno unchanged
  MutexGuard g(g_dss_mtx);
  for (;;) {
    uintptr_t cur = current_break();
    if (cur == 0) return nullptr;
    uintptr_t max = g_max.load(std::memory_order_relaxed);
    if (cur != max) {
      // Someone else moved the break: start from where it is now. A break below our high-water
      // mark means the application released memory; it may succeed again.
      g_exhausted.store(false, std::memory_order_relaxed);
      if (cur > max) g_max.store(cur, std::memory_order_relaxed);
    }
    if (g_exhausted.load(std::memory_order_relaxed)) return nullptr;
    uintptr_t page_start = align_up(cur, config::kPage);
    if (page_start < cur) return nullptr;  // wrapped
    uintptr_t start = align_up(page_start, alignment);
    if (start < page_start) return nullptr;
    if (new_addr != nullptr && reinterpret_cast<uintptr_t>(new_addr) != start) return nullptr;
    uintptr_t end = start + size;
    if (end < start) return nullptr;
    uintptr_t incr = end - cur;
    if (incr > static_cast<uintptr_t>(INTPTR_MAX)) return nullptr;
    void* prev = sbrk(static_cast<intptr_t>(incr));
    if (prev == reinterpret_cast<void*>(-1)) {
      g_exhausted.store(true, std::memory_order_relaxed);
      return nullptr;
    }
    if (reinterpret_cast<uintptr_t>(prev) != cur) {
      // The break moved between our read and our sbrk (an application thread calling sbrk
      // without our lock): our increment landed elsewhere. Give it back and retry from the
      // new break; if giving back fails, the memory is simply not used.
      if (reinterpret_cast<uintptr_t>(sbrk(0)) == reinterpret_cast<uintptr_t>(prev) + incr) {
        sbrk(-static_cast<intptr_t>(incr));
      }
      continue;
    }
    g_max.store(end, std::memory_order_relaxed);
    // Pages above the old break's page are new to the process: the kernel hands them zeroed.
    *zero = true;
    *commit = true;
    return reinterpret_cast<void*>(start);
  }
}

bool dss_contains(const void* addr) {
  uintptr_t a = reinterpret_cast<uintptr_t>(addr);
  uintptr_t base = g_base.load(std::memory_order_relaxed);
  return base != 0 && a >= base && a < g_max.load(std::memory_order_relaxed);
}

bool dss_mergeable(const void* a, const void* b) { return dss_contains(a) == dss_contains(b); }

void* dss_base() { return reinterpret_cast<void*>(g_base.load(std::memory_order_relaxed)); }
void* dss_max() { return reinterpret_cast<void*>(g_max.load(std::memory_order_relaxed)); }

void dss_prefork() { g_dss_mtx.prefork(); }
void dss_postfork_parent() { g_dss_mtx.postfork_parent(); }
void dss_postfork_child() { g_dss_mtx.postfork_child(); }

}  // namespace je
