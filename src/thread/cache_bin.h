// cache_bin.h: one size class of a thread cache -- a stack of free pointers.
//
// Purpose: the fast paths. A bin is a downward-growing array of pointers; `head` points at the
// most recently pushed item. Three positions are kept as the low 16 bits of their addresses
// (stacks are < 64 KiB, so equal low bits mean equal pointers): `full` (head when the bin is
// full), `empty` (head when empty) and `low_water` (the emptiest head since the last GC). Pop
// needs one compare (head vs low_water: reaching the low-water mark also covers "empty");
// push needs one compare (head vs full).
// A zero-initialized bin reads as empty and full at once, so a brand-new thread's zeroed TLS
// sends every call to the slow path, which sets the thread up: no "initialized?" branch.
// Layer: thread. Callers: tcache, api fast paths. Not synchronized (thread-local, or an
// explicit tcache used by one thread at a time, as jemalloc requires).
// jemalloc mapping: cache_bin_t (include/jemalloc/internal/cache_bin.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "support/compiler.h"

namespace je {

struct CacheBin {
  void** head = nullptr;
  uint16_t low_water = 0;
  uint16_t full = 0;
  uint16_t empty = 0;
  uint64_t nrequests = 0;  // requests served since the last merge into arena stats

  static uint16_t low_bits(const void* p) {
    return static_cast<uint16_t>(reinterpret_cast<uintptr_t>(p));
  }

  /// Whether pop_fast() would succeed (head above the low-water mark, hence non-empty).
  JE_ALWAYS_INLINE bool can_pop_fast() const { return low_bits(head) != low_water; }
  /// Pop without checks; only after can_pop_fast().
  JE_ALWAYS_INLINE void* pop_unchecked() { return *head++; }
  /// Pop unless that would go below the low-water mark (or the bin is empty).
  JE_ALWAYS_INLINE void* pop_fast() {
    if (JE_UNLIKELY(low_bits(head) == low_water)) return nullptr;
    return *head++;
  }
  /// Pop past the low-water mark (moving it), or nullptr when empty.
  void* pop_slow() {
    if (low_bits(head) == empty) return nullptr;
    void* p = *head++;
    low_water = low_bits(head);
    return p;
  }
  JE_ALWAYS_INLINE bool push_fast(void* p) {
    if (JE_UNLIKELY(low_bits(head) == full)) return false;
    *--head = p;
    return true;
  }

  unsigned ncached() const { return static_cast<uint16_t>(empty - low_bits(head)) / sizeof(void*); }
  unsigned nlow_water() const { return static_cast<uint16_t>(empty - low_water) / sizeof(void*); }
  unsigned ncached_max() const { return static_cast<uint16_t>(empty - full) / sizeof(void*); }
  void reset_low_water() { low_water = low_bits(head); }
  /// One past the oldest item (the stack's bottom).
  void** bottom() const { return head + ncached(); }

  /// Point the bin at an empty stack of `n` slots starting at `slots`.
  void init(void** slots, unsigned n) {
    head = slots + n;
    full = low_bits(slots);
    empty = low_bits(slots + n);
    low_water = empty;
    nrequests = 0;
  }
  /// Push `n` items (a fill): out[0] ends up on top.
  void push_batch(void* const* items, unsigned n) {
    head -= n;
    for (unsigned i = 0; i < n; i++) head[i] = items[i];
  }
  /// Drop the `n` oldest items (after they were flushed), keeping the newer ones on top.
  void remove_oldest(unsigned n) {
    unsigned keep = ncached() - n;
    void** dst = bottom() - keep;
    for (unsigned i = keep; i-- > 0;) dst[i] = head[i];
    head = dst;
    if (static_cast<uint16_t>(empty - low_water) / sizeof(void*) > keep) low_water = low_bits(head);
  }
};

}  // namespace je
