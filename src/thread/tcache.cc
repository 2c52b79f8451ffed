// tcache.cc: fill, flush, GC, geometry and explicit caches (see tcache.h).
#include "thread/tcache.h"

#include <algorithm>
#include <cstring>
#include <new>

#include "arena/arenas.h"
#include "extent/emap.h"
#include "extent/hold.h"
#include "extent/pac.h"
#include "meta/base.h"
#include "support/mutex.h"
#include "thread/thread_options.h"

namespace je {

constinit TcacheGeometry g_tcache_geo;

namespace {

constinit Mutex g_tcaches_mtx{LockRank::kTcaches, "tcaches"};
constinit IntrusiveList<TcacheSlow, &TcacheSlow::link> g_live;
constinit Tcache* g_explicit[kTcachesMax] = {};
// Indices of destroyed explicit caches, most recent last, and the first never-used index.
constinit unsigned g_avail[kTcachesMax] = {};
constinit unsigned g_navail = 0;
constinit unsigned g_past = 0;

/// Slots per bin are bounded by the 16-bit position encoding of CacheBin.
constexpr unsigned kNcachedMaxLimit = (1u << 16) / sizeof(void*) - 1;
/// Ours (opt.tcache_grow_bytes): the most slots a bin grows to (8 KiB of pointers), and how many
/// GC visits in a row must find a grown bin's items unused before it shrinks: a bin is visited
/// every ~41 GC steps (64 KiB of allocation or deallocation each), so a burst that drains the
/// bin once per cycle of up to ~20 MiB of the thread's traffic keeps its capacity.
constexpr unsigned kGrowSlotsMax = 1024;
constexpr uint8_t kGrowIdleVisits = 8;

// Capacity bin `binind` (5.3.0 capacity `n`) may grow to within `budget` bytes, 0 for none.
uint16_t grow_limit(szind_t binind, unsigned n, size_t budget) {
  size_t extra = budget / sz::index2size(binind);
  size_t max = n + extra;
  if (max > kGrowSlotsMax) max = kGrowSlotsMax;
  if (max > kNcachedMaxLimit) max = kNcachedMaxLimit;
  max &= ~size_t{1};
  return max >= n + 2 ? static_cast<uint16_t>(max) : 0;
}

unsigned small_slots(szind_t binind) {
  unsigned lo = g_thread_opt.tcache_nslots_small_min;
  unsigned hi = g_thread_opt.tcache_nslots_small_max;
  if (hi > kNcachedMaxLimit) hi = kNcachedMaxLimit;
  // Even and non-zero, so halving for fills and flushes always leaves a positive count.
  if (lo % 2 != 0) lo++;
  if (hi % 2 != 0) hi--;
  if (lo < 2) lo = 2;
  if (hi < 2) hi = 2;
  if (lo > hi) lo = hi;
  unsigned nregs = g_bin_geo[binind].nregs;
  int64_t mul = g_thread_opt.lg_tcache_nslots_mul;
  unsigned candidate = mul < 0 ? nregs >> (-mul) : nregs << mul;
  if (candidate % 2 != 0) candidate++;
  if (candidate <= lo) return lo;
  return candidate <= hi ? candidate : hi;
}

// Metadata of the global base (never freed), nullptr on OOM.
void* global_meta(size_t size, size_t alignment) {
  Base* b0 = base_global();
  return b0 == nullptr ? nullptr : b0->alloc(size, alignment);
}

// The automatic caches' cold parts: metadata of the global base (never freed), kept on a free
// list under g_tcaches_mtx when their thread has gone.
constinit TcacheCold* g_cold_free = nullptr;

TcacheCold* cold_get() {
  {
    MutexGuard guard(g_tcaches_mtx);
    if (TcacheCold* c = g_cold_free) {
      g_cold_free = c->next_free;
      return c;
    }
  }
  void* p = global_meta(sizeof(TcacheCold), alignof(TcacheCold));
  return p == nullptr ? nullptr : new (p) TcacheCold{};
}

void cold_put(TcacheCold* c) {
  MutexGuard guard(g_tcaches_mtx);
  c->next_free = g_cold_free;
  g_cold_free = c;
}

// Which arena owns a cached region.
Arena* owner_arena(const Edata* e) { return arena_get(e->arena_ind, false); }

constexpr unsigned kFlushChunk = 128;

// The cache leaves its arena (thread.arena, destruction): hand the request counts gathered since
// the last flush to that arena. As in 5.3.0, each large class also counts a flush there.
void stats_merge(Tcache* t, Arena* arena) {
  for (szind_t i = 0; i < g_tcache_geo.nhbins; i++) {
    CacheBin& bin = t->bin(i);
    if (i < sc::kNBins) {
      if (bin.nrequests != 0) arena->merge_small_tcache_stats(i, bin.nrequests, /*flush=*/false);
    } else {
      arena->merge_large_tcache_stats(i, bin.nrequests);
    }
    bin.nrequests = 0;
  }
}

// opt.tcache_gc_delay_bytes as a number of items of this class (GC skips flushes until that
// many items would have gone), at most 255.
uint8_t gc_delay_items(szind_t binind) {
  size_t items = g_thread_opt.tcache_gc_delay_bytes / sz::index2size(binind);
  return static_cast<uint8_t>(items > 255 ? 255 : items);
}

// Purge requests (arena.<i>.purge) since boot: each asks every cache to give its grown bins back.
constinit std::atomic<uint64_t> g_release_requests{0};

// Moves whenever grown bins should give back what they hold beyond 5.3.0's capacities: an arena
// took retained or new pages (g_pac_growths), or the application asked for a purge.
uint64_t release_epoch() {
  return g_pac_growths.load(std::memory_order_relaxed) +
         g_release_requests.load(std::memory_order_relaxed);
}

}  // namespace

void tcache_boot() {
  size_t maxclass = g_thread_opt.tcache_max;
  if (maxclass > kTcacheMaxClassLimit) maxclass = kTcacheMaxClassLimit;
  maxclass = sz::s2u(maxclass);
  TcacheGeometry& g = g_tcache_geo;
  g.maxclass = maxclass;
  g.nhbins = sz::size2index(maxclass) + 1;
  size_t slots = 0;
  for (szind_t i = 0; i < g.nhbins; i++) {
    unsigned n = i < sc::kNBins ? small_slots(i) : g_thread_opt.tcache_nslots_large;
    if (n > kNcachedMaxLimit) n = kNcachedMaxLimit;
    if (n == 0) n = 1;
    g.ncached_max[i] = static_cast<uint16_t>(n);
    slots += n;
  }
  // Two spare slots, as 5.3.0 reserves them, so the slot arrays have its size class.
  g.stack_bytes = (slots + 2) * sizeof(void*);
  g.grow_bytes = g_thread_opt.tcache_grow_bytes;
  for (szind_t i = 0; i < g.nhbins; i++) {
    g.grow_max[i] = g.grow_bytes == 0 ? 0 : grow_limit(i, g.ncached_max[i], g.grow_bytes);
  }
}

void* internal_alloc(size_t size) {
  Arena* a0 = arena_get(0, false);
  // Page aligned, as 5.3.0 allocates cache memory (fewer TLB entries for the hot small bins),
  // which also gives its size classes: 14 KiB of slots take a 16 KiB block.
  size_t usize = sz::sa2u(size, config::kPage);
  if (usize == 0 || a0 == nullptr) return nullptr;
  void* p = usize <= sc::kSmallMaxClass ? a0->malloc_small(sz::size2index(usize), false)
                                        : a0->malloc_large(usize, config::kPage, false);
  if (p != nullptr) a0->internal_add(usize);
  return p;
}

void internal_free(void* ptr) {
  EmapEntry ent = g_emap.lookup_entry(ptr);
  Arena* a = owner_arena(ent.edata);
  a->internal_sub(sz::index2size(ent.szind));
  if (ent.slab) {
    a->dalloc_small(ent.edata, ent.szind, ptr);
  } else {
    a->dalloc_large(ent.edata);
  }
}

bool tcache_init(Tcache* t, Arena* arena, void** stack, TcacheCold* cold) {
  const TcacheGeometry& g = g_tcache_geo;
  const bool owned = stack == nullptr;
  if (owned) {
    cold = cold_get();
    if (cold == nullptr) return false;
    stack = static_cast<void**>(internal_alloc(g.stack_bytes));
    if (stack == nullptr) {
      cold_put(cold);
      return false;
    }
  }
  // A recycled cold part keeps its growth state's memory (and the grown bins' slot arrays).
  TcacheGrow* grow = owned ? cold->slow.grow : nullptr;
  t->cold = new (cold) TcacheCold{};
  if (owned && g.grow_bytes != 0) {
    if (grow == nullptr) {
      void* m = global_meta(sizeof(TcacheGrow), alignof(TcacheGrow));
      if (m != nullptr) grow = new (m) TcacheGrow{};
    }
    if (grow != nullptr) {
      void** keep[kTcacheMaxBins];
      std::memcpy(keep, grow->slots, sizeof(keep));
      *grow = TcacheGrow{};
      std::memcpy(grow->slots, keep, sizeof(keep));
      grow->seen_growths = release_epoch();
    }
  }
  t->cold->slow.grow = grow;  // null: this cache's bins keep 5.3.0's capacities
  void** p = stack;
  for (szind_t i = 0; i < g.nhbins; i++) {
    t->bin(i).init(p, g.ncached_max[i]);
    p += g.ncached_max[i];
  }
  for (szind_t i = g.nhbins; i < sc::kNBins; i++) t->bins[i] = CacheBin{};
  TcacheSlow& s = t->slow();
  s.arena = arena;
  s.next_gc_bin = 0;
  for (auto& d : s.lg_fill_div) d = 1;
  for (auto& r : s.bin_refilled) r = false;
  for (szind_t i = 0; i < sc::kNBins; i++) s.flush_delay_items[i] = gc_delay_items(i);
  s.stack = stack;
  s.stack_owned = owned;
  s.owner = t;
  MutexGuard guard(g_tcaches_mtx);
  g_live.push_back(&s);
  return true;
}

namespace {

// tcache_destroy without the decay pass that follows it; returns the arena the cache was bound
// to (nullptr if it was never set up).
Arena* teardown(Tcache* t) {
  Arena* arena = t->slow().arena;
  tcache_flush_all(t);
  if (arena != nullptr) stats_merge(t, arena);
  {
    MutexGuard guard(g_tcaches_mtx);
    g_live.remove(&t->slow());
  }
  // Zeroed bins first: a call from a signal handler or a later TLS destructor then finds an
  // empty, full cache (slow path) rather than slots in freed memory.
  for (CacheBin& b : t->bins) b = CacheBin{};
  void** stack = t->slow().stack;
  bool owned = t->slow().stack_owned;
  TcacheCold* cold = t->cold;
  t->cold = nullptr;
  if (owned) {
    internal_free(stack);
    cold_put(cold);
  }
  return arena;
}

}  // namespace

void tcache_destroy(Tcache* t) {
  // A cache that was never set up (tcache:false, OOM) returned nothing: no decay either, as in
  // 5.3.0, where a thread without a cache leaves its arena's decay to the usual ticks.
  if (t->cold == nullptr) return;
  arena_decay_after_cache_teardown(teardown(t));
}

void tcache_set_arena(Tcache* t, Arena* arena) {
  if (t->cold == nullptr) return;  // not set up: tcache_init binds it
  // The counts so far belong to the arena the cache served until now.
  if (t->slow().arena != nullptr && t->slow().arena != arena) stats_merge(t, t->slow().arena);
  MutexGuard guard(g_tcaches_mtx);
  t->slow().arena = arena;
}

// ---- growth (ours, opt.tcache_grow_bytes; see TcacheGrow) -----------------------------------

namespace {

void flush_bin(Tcache* t, szind_t binind, unsigned rem) {
  if (binind < sc::kNBins) {
    tcache_flush_small(t, binind, rem);
  } else {
    tcache_flush_large(t, binind, rem);
  }
}

// The cache's grown capacity is `bytes` now; published exactly to the memory-return policy's
// process-wide count of what caches keep (kept::, extent/hold.h).
void set_grown_bytes(Tcache* t, size_t bytes) {
  TcacheGrow* g = t->slow().grow;
  kept::cache_publish(g->grown_bytes, bytes, 0);
  g->grown_bytes = bytes;
  t->slow().any_grown = bytes != 0;
}

// Grown bin `binind` down to capacity `cap` (at least its 5.3.0 one), flushing what does not fit.
void shrink(Tcache* t, szind_t binind, unsigned cap) {
  TcacheGrow* g = t->slow().grow;
  CacheBin& bin = t->bin(binind);
  const unsigned base = g_tcache_geo.ncached_max[binind];
  const unsigned old = bin.ncached_max();
  if (cap < base) cap = base;
  if (!g->in_grown[binind] || cap >= old) return;
  if (bin.ncached() > cap) flush_bin(t, binind, cap);
  bin.full = CacheBin::low_bits(g->slots[binind] + g_tcache_geo.grow_max[binind] - cap);
  set_grown_bytes(t, g->grown_bytes - (old - cap) * sz::index2size(binind));
}

// Whether the release epoch moved since this cache last looked.
bool pages_grew(TcacheGrow* g) {
  const uint64_t now = release_epoch();
  if (now == g->seen_growths) return false;
  g->seen_growths = now;
  return true;
}

// Every grown bin back to its 5.3.0 capacity, flushing what no longer fits.
void release_grown(Tcache* t) {
  TcacheGrow* g = t->slow().grow;
  for (szind_t i = 0; i < g_tcache_geo.nhbins && g->grown_bytes != 0; i++) shrink(t, i, 0);
}

// Full bin `binind` after it ran dry: double its capacity (within grow_max and the cache's
// budget), moving it to its own slots the first time. False when it may not grow.
bool try_grow(Tcache* t, szind_t binind) {
  TcacheGrow* g = t->slow().grow;
  const unsigned gmax = g_tcache_geo.grow_max[binind];
  if (g == nullptr || gmax == 0 || !g->ran_dry[binind]) return false;
  if (pages_grew(g)) {
    // Memory is being faulted in: what the cache holds beyond 5.3.0's capacities goes back.
    release_grown(t);
    return false;
  }
  CacheBin& bin = t->bin(binind);
  const unsigned cap = bin.ncached_max();
  if (cap >= gmax) return false;
  const size_t size = sz::index2size(binind);
  // Within this cache's allowance and the room all caches have left (kept::).
  const size_t room = std::min(g_tcache_geo.grow_bytes - g->grown_bytes, kept::cache_room()) / size;
  unsigned target = cap * 2 < gmax ? cap * 2 : gmax;
  if (target - cap > room) target = cap + static_cast<unsigned>(room & ~size_t{1});
  if (target <= cap) return false;
  if (!g->in_grown[binind]) {
    if (g->slots[binind] == nullptr) {
      void* m = global_meta(gmax * sizeof(void*), kCacheline);
      if (m == nullptr) return false;
      g->slots[binind] = static_cast<void**>(m);
    }
    // Same items in the same order at the end of the new slots, same low-water count.
    void** end = g->slots[binind] + gmax;
    const unsigned n = bin.ncached();
    const unsigned lw = bin.nlow_water();
    std::memmove(end - n, bin.head, n * sizeof(void*));
    bin.head = end - n;
    bin.empty = CacheBin::low_bits(end);
    bin.low_water = CacheBin::low_bits(end - lw);
    g->in_grown[binind] = true;
  }
  bin.full = CacheBin::low_bits(g->slots[binind] + gmax - target);
  set_grown_bytes(t, g->grown_bytes + (target - cap) * size);
  g->idle_visits[binind] = 0;
  return true;
}

// GC step on bin `binind` of a cache with grown bins: first gives everything grown back if
// pages were faulted in since the cache last looked; then, for a bin still grown, items unused
// over one visit say little about a burst's cycle, so only kGrowIdleVisits such visits in a row
// start shrinking it (by half per visit from then on). True when the bin was handled here (a
// grown bin), false for 5.3.0's rule.
JE_NOINLINE_COLD bool gc_grown(Tcache* t, szind_t binind) {
  TcacheGrow* g = t->slow().grow;
  if (pages_grew(g)) release_grown(t);
  CacheBin& bin = t->bin(binind);
  if (!g->in_grown[binind] || bin.ncached_max() <= g_tcache_geo.ncached_max[binind]) return false;
  if (bin.nlow_water() == 0) {
    g->idle_visits[binind] = 0;
  } else {
    g->ran_dry[binind] = false;
    if (g->idle_visits[binind] < kGrowIdleVisits) {
      g->idle_visits[binind]++;
    } else {
      shrink(t, binind, bin.ncached_max() / 2 & ~1u);
    }
  }
  bin.reset_low_water();
  return true;
}

void note_ran_dry(Tcache* t, szind_t binind) {
  if (TcacheGrow* g = t->slow().grow) g->ran_dry[binind] = true;
}

}  // namespace

void tcache_large_miss(Tcache* t, szind_t binind) {
  if (t->cold != nullptr) note_ran_dry(t, binind);
}

void* tcache_alloc_small_hard(Tcache* t, Arena* arena, szind_t binind) {
  CacheBin& bin = t->bins[binind];
  if (void* p = bin.pop_slow()) return p;
  note_ran_dry(t, binind);
  unsigned nmax = bin.ncached_max();
  unsigned nfill = nmax >> t->slow().lg_fill_div[binind];
  if (nfill == 0) nfill = 1;
  // The bin is empty: fill straight into the top of its slot array.
  void** dst = bin.bottom() - nfill;
  unsigned got = arena->fill_small(binind, dst, nfill, bin.nrequests);
  bin.nrequests = 0;
  if (got == 0) return nullptr;
  if (got < nfill) std::memmove(bin.bottom() - got, dst, got * sizeof(void*));
  bin.head = bin.bottom() - got;
  t->slow().bin_refilled[binind] = true;
  // The low-water mark stays at "empty" (the bin did run dry since the last GC), so the
  // fresh items pop on the fast path.
  return *bin.head++;
}

void tcache_flush_small(Tcache* t, szind_t binind, unsigned rem) {
  CacheBin& bin = t->bins[binind];
  unsigned n = bin.ncached();
  unsigned nflush = rem >= n ? 0 : n - rem;
  // Statistics as 5.3.0 keeps them: every flush, even one with nothing to return, counts once,
  // in the cache's own arena, together with the requests the cache served since the last one;
  // the arenas that only take regions back count their ndalloc alone.
  void** items = bin.bottom() - nflush;  // the oldest
  bool merged = false;
  for (unsigned done = 0; done < nflush; done += kFlushChunk) {
    unsigned cnt = nflush - done < kFlushChunk ? nflush - done : kFlushChunk;
    // The chunk is grouped in place: these slots are dropped below (remove_oldest), so only the
    // slabs need a stack array. A thread's exit flushes its cache from the bottom of its stack
    // frames; 4 KiB of arrays here took one more page of every new thread's stack (mleak).
    void** ptrs = items + done;
    Edata* slabs[kFlushChunk];
    for (unsigned i = 0; i < cnt; i++) slabs[i] = g_emap.lookup(ptrs[i]);
    // Group by owning bin (arena and shard): one bin lock per bin per chunk.
    for (unsigned first = 0; first < cnt;) {
      const unsigned ind = slabs[first]->arena_ind;
      const unsigned shard = slabs[first]->binshard;
      unsigned end = first;
      // A stable partition: the others keep their order for the next bins' batches, as 5.3.0
      // flushes them (which slab a bin refills from next, and so nreslabs, follows that order).
      for (unsigned i = first; i < cnt; i++) {
        if (slabs[i]->arena_ind != ind || slabs[i]->binshard != shard) continue;
        if (i != end) {
          std::rotate(ptrs + end, ptrs + i, ptrs + i + 1);
          std::rotate(slabs + end, slabs + i, slabs + i + 1);
        }
        end++;
      }
      Arena* a = arena_get(ind, false);
      bool merge = a == t->slow().arena && !merged;
      a->dalloc_small_batch(binind, ptrs + first, slabs + first, end - first, merge, bin.nrequests);
      if (merge) {
        bin.nrequests = 0;
        merged = true;
      }
      first = end;
    }
  }
  if (!merged && t->slow().arena != nullptr) {
    t->slow().arena->merge_small_tcache_stats(binind, bin.nrequests, /*flush=*/true);
    bin.nrequests = 0;
  }
  if (nflush != 0) bin.remove_oldest(nflush);
}

void tcache_flush_large(Tcache* t, szind_t binind, unsigned rem) {
  CacheBin& bin = t->bin(binind);
  unsigned n = bin.ncached();
  unsigned nflush = rem >= n ? 0 : n - rem;
  void** items = bin.bottom() - nflush;
  for (unsigned i = 0; i < nflush; i++) {
    Edata* e = g_emap.lookup(items[i]);
    owner_arena(e)->dalloc_large(e);
  }
  // One flush per call (empty ones included), counted in the cache's arena with its requests,
  // whichever arenas the extents went back to (5.3.0's large.nflushes).
  if (t->slow().arena != nullptr) {
    t->slow().arena->merge_large_tcache_stats(binind, bin.nrequests);
    bin.nrequests = 0;
  }
  if (nflush != 0) bin.remove_oldest(nflush);
}

void tcache_dalloc_small_hard(Tcache* t, szind_t binind, void* ptr) {
  CacheBin& bin = t->bins[binind];
  if (!try_grow(t, binind)) {
    tcache_flush_small(t, binind, bin.ncached_max() >> g_thread_opt.lg_tcache_flush_small_div);
  }
  bin.push_fast(ptr);
}

void tcache_dalloc_large_hard(Tcache* t, szind_t binind, void* ptr) {
  CacheBin& bin = t->bin(binind);
  if (!try_grow(t, binind)) {
    tcache_flush_large(t, binind, bin.ncached_max() >> g_thread_opt.lg_tcache_flush_large_div);
  }
  bin.push_fast(ptr);
}

void tcache_release_grown(Tcache* t) {
  g_release_requests.fetch_add(1, std::memory_order_relaxed);
  if (t == nullptr || t->cold == nullptr || t->slow().grow == nullptr) return;
  t->slow().grow->seen_growths = release_epoch();
  release_grown(t);
}

void tcache_flush_all(Tcache* t) {
  TcacheGrow* g = t->cold != nullptr ? t->slow().grow : nullptr;
  for (szind_t i = 0; i < g_tcache_geo.nhbins; i++) {
    flush_bin(t, i, 0);
    // Everything went back: grown bins start over from 5.3.0's capacity.
    if (g != nullptr) {
      shrink(t, i, 0);
      g->ran_dry[i] = false;
      g->idle_visits[i] = 0;
    }
  }
}

namespace {

// One GC visit of bin `binind` by 5.3.0's rule: 3/4 of what stayed unused since the last visit
// is flushed and the fill size adapts.
JE_ALWAYS_INLINE void gc_visit(Tcache* t, TcacheSlow& s, szind_t binind) {
  CacheBin& bin = t->bin(binind);
  unsigned low_water = bin.nlow_water();
  unsigned ncached = bin.ncached();
  if (low_water > 0) {
    if (TcacheGrow* g = s.grow) g->ran_dry[binind] = false;
    // Unused since the last visit: flush (ceiling) 3/4 of it.
    unsigned rem = ncached - low_water + (low_water >> 2);
    if (binind < sc::kNBins) {
      unsigned nflush = ncached - rem;
      if (nflush < s.flush_delay_items[binind]) {
        // Still within the configured delay: count it down instead of flushing.
        s.flush_delay_items[binind] = static_cast<uint8_t>(s.flush_delay_items[binind] - nflush);
        bin.reset_low_water();
        if (++s.next_gc_bin >= g_tcache_geo.nhbins) s.next_gc_bin = 0;
        return;
      }
      s.flush_delay_items[binind] = gc_delay_items(binind);
      tcache_flush_small(t, binind, rem);
      // ...and fill less next time, keeping fills at least one region.
      if ((bin.ncached_max() >> (s.lg_fill_div[binind] + 1)) >= 1) s.lg_fill_div[binind]++;
    } else {
      tcache_flush_large(t, binind, rem);
    }
  } else if (binind < sc::kNBins && s.bin_refilled[binind]) {
    // Fully used and refilled: fill more next time.
    if (s.lg_fill_div[binind] > 1) s.lg_fill_div[binind]--;
    s.bin_refilled[binind] = false;
  }
  bin.reset_low_water();
  if (++s.next_gc_bin >= g_tcache_geo.nhbins) s.next_gc_bin = 0;
}

// The GC step of a cache with grown bins (ours): gc_grown's rule for a grown bin, 5.3.0's for
// the others.
JE_NOINLINE_COLD void gc_step_grown(Tcache* t) {
  TcacheSlow& s = t->slow();
  const szind_t binind = s.next_gc_bin;
  if (!gc_grown(t, binind)) {
    gc_visit(t, s, binind);
    return;
  }
  if (++s.next_gc_bin >= g_tcache_geo.nhbins) s.next_gc_bin = 0;
}

}  // namespace

void tcache_gc_step(Tcache* t) {
  if (t->cold == nullptr) return;
  TcacheSlow& s = t->slow();
  // One flag test while no bin is grown (the GC step runs every 64 KiB of a thread's traffic).
  if (JE_UNLIKELY(s.any_grown)) {
    gc_step_grown(t);
    return;
  }
  gc_visit(t, s, s.next_gc_bin);
}

size_t tcache_bytes(const Arena* arena) {
  size_t bytes = 0;
  MutexGuard guard(g_tcaches_mtx);
  for (TcacheSlow* s = g_live.front(); s != nullptr; s = decltype(g_live)::next(s)) {
    if (s->arena != arena) continue;
    for (szind_t i = 0; i < g_tcache_geo.nhbins; i++) {
      bytes += s->owner->bin(i).ncached() * sz::index2size(i);
    }
  }
  return bytes;
}

void tcache_grown_items(const Arena* arena, size_t items[kTcacheMaxBins]) {
  const TcacheGeometry& geo = g_tcache_geo;
  MutexGuard guard(g_tcaches_mtx);
  for (TcacheSlow* s = g_live.front(); s != nullptr; s = decltype(g_live)::next(s)) {
    // Only automatic caches grow; a bin that never grew cannot hold more than 5.3.0's capacity.
    if (s->arena != arena || s->grow == nullptr) continue;
    for (szind_t i = 0; i < geo.nhbins; i++) {
      if (geo.grow_max[i] == 0) continue;
      unsigned n = s->owner->bin(i).ncached();
      if (n > geo.grow_max[i]) n = geo.grow_max[i];  // a read torn by the owner's relocation
      if (n > geo.ncached_max[i]) items[i] += n - geo.ncached_max[i];
    }
  }
}

bool tcaches_create(Arena* arena, unsigned* ind) {
  // One internal block holds the cache and its slots, as in 5.3.0 (one allocation, and the
  // same size class: stats.arenas.0.{internal,small,large} match).
  // Here the cold part follows the cache, then the slots (16 bytes more than before the split:
  // the `cold` pointer and the free-list link; the block's size class is the same).
  constexpr size_t kHead = (sizeof(Tcache) + alignof(void*) - 1) & ~(alignof(void*) - 1);
  constexpr size_t kCold = (sizeof(TcacheCold) + alignof(void*) - 1) & ~(alignof(void*) - 1);
  void* block = internal_alloc(kHead + kCold + g_tcache_geo.stack_bytes);
  if (block == nullptr) return false;
  Tcache* t = static_cast<Tcache*>(block);
  std::memset(block, 0, sizeof(Tcache));
  char* base = static_cast<char*>(block);
  if (!tcache_init(t, arena, reinterpret_cast<void**>(base + kHead + kCold),
                   reinterpret_cast<TcacheCold*>(base + kHead))) {
    internal_free(t);
    return false;
  }
  {
    // The most recently destroyed index first, then a never-used one (5.3.0's free list).
    MutexGuard guard(g_tcaches_mtx);
    unsigned i = kTcachesMax;
    if (g_navail > 0) {
      i = g_avail[--g_navail];
    } else if (g_past < kTcachesMax) {
      i = g_past++;
    }
    if (i != kTcachesMax) {
      g_explicit[i] = t;
      *ind = i;
      return true;
    }
  }
  // No index: undo quietly (5.3.0 finds out before building the cache, so nothing decays).
  teardown(t);
  internal_free(t);
  return false;
}

Tcache* tcaches_get(unsigned ind) {
  if (ind >= kTcachesMax) return nullptr;
  MutexGuard guard(g_tcaches_mtx);
  return g_explicit[ind];
}

bool tcaches_flush(unsigned ind) {
  Tcache* t = tcaches_get(ind);
  if (t == nullptr) return false;
  tcache_flush_all(t);
  // 5.3.0 destroys the cache here (and rebuilds it on next use); we keep it
  // (doc/compat.md#explicit-tcache-flush) but run the decay pass its destruction runs, so the
  // pages come back the same way.
  arena_decay_after_cache_teardown(t->slow().arena);
  return true;
}

bool tcaches_destroy(unsigned ind) {
  Tcache* t;
  {
    MutexGuard guard(g_tcaches_mtx);
    if (ind >= kTcachesMax || g_explicit[ind] == nullptr) return false;
    t = g_explicit[ind];
    g_explicit[ind] = nullptr;
    g_avail[g_navail++] = ind;
  }
  tcache_destroy(t);
  internal_free(t);
  return true;
}

MutexStats tcaches_mutex_stats() {
  MutexGuard guard(g_tcaches_mtx);
  return g_tcaches_mtx.stats();
}

void tcaches_reset_mutex_stats() {
  MutexGuard guard(g_tcaches_mtx);
  g_tcaches_mtx.reset_stats();
}

void tcaches_prefork() { g_tcaches_mtx.prefork(); }
void tcaches_postfork_parent() { g_tcaches_mtx.postfork_parent(); }
void tcaches_postfork_child(Tcache* own) {
  g_tcaches_mtx.postfork_child();
  // The other threads' caches are gone with their threads: what their grown bins counted
  // toward the process-wide bound is no longer kept by anyone.
  for (TcacheSlow* s = g_live.front(); s != nullptr; s = decltype(g_live)::next(s)) {
    if (s->grow != nullptr && s->owner != own) kept::cache_publish(s->grow->grown_bytes, 0, 0);
  }
  g_live.clear();
  if (own != nullptr && own->cold != nullptr) {
    own->slow().link = {};
    g_live.push_back(&own->slow());
  }
  for (Tcache* t : g_explicit) {
    if (t == nullptr || t->cold == nullptr) continue;
    t->slow().link = {};
    g_live.push_back(&t->slow());
  }
}

}  // namespace je
