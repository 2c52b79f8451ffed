// sec.h: the small extent cache of one arena's page allocator (ours, opt.extent_cache_bytes).
//
// Purpose: page allocators spend most of a small extent's life in bookkeeping -- a free records
// the extent dirty, coalesces it with its neighbours and files it in the eset; the next request
// of the same size finds it, splits it off again and re-activates it (about 1,400 instructions
// each way on x86-64). Workloads that free and re-request the same small page counts in bursts
// (one-page slabs of the 4 KiB class, 16 KiB large blocks grown by realloc: ClickHouse's hash
// tables) do nothing else. The cache keeps recently freed extents of up to kMaxPages pages as
// they are, one LIFO list per page count, and hands them back to requests of exactly that size.
// Cached extents stay active in the emap (neighbours do not coalesce into them) and count as
// dirty pages. Pac flushes the cache into the dirty ecache -- where they coalesce as any free
// does -- whenever it matters that they be seen there: before it would grow (so that freed
// memory is reused before any retained or fresh memory is taken), before a decay epoch ends
// (decay ages cached pages as if they had been recorded dirty when freed), before purging on
// request (so arena destroy, which purges everything first, finds the cache empty), before
// reading statistics, and when in-place growth needs a cached neighbour.
// Layer: extent. Callers: Pac only.
// Concurrency: one mutex (LockRank::kLeaf: nothing is taken while it is held; extents leaving
// the cache are handed back to the caller, who records them after unlocking; flush() adds their
// pages to the in-transit count before they leave, so that a reader who looks here
// first and there next never misses them). npages() is an atomic read (acquire) for statistics
// and the unlocked "anything cached?" test.
// Invariants: every cached extent has `cached` set, is page aligned with its cache-oblivious
// offset dropped, belongs to this arena and sits in exactly one list, the one of its page count;
// bytes_ == the sum of their sizes <= max_bytes_, published to the memory-return policy's
// process-wide count (kept::, extent/hold.h), whose room trims every cache when crowded.
// jemalloc mapping: none in the PAC; 5.3.0's HPA has a cache of the same kind (sec.c, options
// hpa_sec_*), which the default configuration does not use.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "extent/edata.h"
#include "support/config.h"
#include "support/mutex.h"

namespace je {

class Sec {
 public:
  /// Largest extent cached, in pages (64 KiB with 4 KiB pages).
  static constexpr size_t kMaxPages = 16;
  /// take() looks at most this many extents of the list for one aligned to more than a page.
  static constexpr unsigned kMaxAlignedScan = 8;

  /// max_bytes 0 turns the cache off (fits() refuses everything).
  void init(size_t max_bytes);
  bool enabled() const { return max_bytes_ != 0; }

  /// A cached extent of exactly `size` bytes whose address is a multiple of `alignment`, among
  /// the kMaxAlignedScan most recent of that size; nullptr when there is none.
  Edata* take(size_t size, size_t alignment);
  /// Up to `k` cached extents of exactly `size` bytes (page aligned), most recent first, into
  /// out[]; one lock for all. Returns how many.
  unsigned take_batch(size_t size, Edata** out, unsigned k);
  /// Cache es[0..n) (active, offset dropped), under one lock; each must fit() (the caller
  /// records the others as usual). When the cache overflows, it gives up its least recently
  /// filled lists down to half its capacity into *evicted, for the caller to record.
  void put_batch(Edata* const* es, unsigned n, EdataList* evicted);
  /// Whether put_batch() may take `e`: the cache is on and `e` is small enough.
  bool fits(const Edata* e) const {
    return e->size <= kMaxPages * config::kPage && e->size <= max_bytes_;
  }
  /// Remove `e` -- any extent, of any arena -- if it sits in this cache, which belongs to arena
  /// `arena_ind` (in-place growth wants a cached neighbour). True if it did.
  bool remove(Edata* e, unsigned arena_ind);
  /// The order in which flush() hands extents out, for the caller to record in that order. The
  /// dirty ecache coalesces a large extent (16 KiB and up) eagerly with its free neighbours but
  /// files small ones as they are: recorded small first, the large ones absorb their small free
  /// neighbours (more contiguous memory, for a request no cached size fits); large first, every
  /// extent stays whole (each size comes back out of the ecache as it went in).
  enum class FlushOrder : uint8_t { kSmallFirst, kLargeFirst };
  /// Everything cached, into *out; in_transit() grows by their pages before any leaves (the
  /// caller takes each one's pages off with landed() once it has recorded it elsewhere).
  void flush(EdataList* out, FlushOrder order);
  /// `npages` that flush() handed out are recorded elsewhere now.
  void landed(size_t npages) { in_transit_.fetch_sub(npages, std::memory_order_release); }
  /// Pages flush() calls have taken out of the cache and not yet landed. The owner's dirty
  /// count includes them: a background thread asking how long it may sleep must not read that
  /// gap as "nothing to decay".
  size_t in_transit() const { return in_transit_.load(std::memory_order_acquire); }
  /// Whether `growths` (g_pac_growths: some arena faulted pages in) moved since the last call
  /// that saw it move -- then what this cache holds for exact sizes should go to the ecache,
  /// where it coalesces, can be borrowed and decays, rather than wait for the arena's own
  /// growth or decay epoch.
  bool growths_moved(uint64_t growths) {
    return seen_growths_.load(std::memory_order_relaxed) != growths &&
           seen_growths_.exchange(growths, std::memory_order_relaxed) != growths;
  }

  /// Pages cached now (unlocked read; acquire, so that reads made after it -- the caller's
  /// in-transit count -- see what left the cache after this value).
  size_t npages() const { return npages_.load(std::memory_order_acquire); }

  void prefork() { mtx_.prefork(); }
  void postfork_parent() { mtx_.postfork_parent(); }
  void postfork_child() { mtx_.postfork_child(); }

 private:
  void unlink_locked(EdataList& l, Edata* e);
  void link_locked(Edata* e);
  void trim_locked(EdataList* evicted);
  /// bytes_ = `bytes`, with npages_ and the process-wide count (kept::cache_publish).
  void set_bytes_locked(size_t bytes);
  void drain_list_locked(size_t i, EdataList* out);

  Mutex mtx_{LockRank::kLeaf, "extent_cache"};
  size_t max_bytes_ = 0;
  size_t bytes_ = 0;
  size_t next_evict_ = 0;  // round-robin start of the lists given up on overflow
  std::atomic<size_t> npages_{0};
  std::atomic<size_t> in_transit_{0};
  std::atomic<uint64_t> seen_growths_{0};
  EdataList lists_[kMaxPages];  // lists_[n - 1]: extents of n pages, most recent first
};

}  // namespace je
