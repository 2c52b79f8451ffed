// arena.cc: small bins, large allocations, decay driving, reset (see arena.h).
#include "arena/arena.h"

#include <algorithm>

#include <cstring>
#include <new>

#include "arena/arena_options.h"
#include "arena/arenas.h"
#include "arena/background_thread.h"
#include "arena/large.h"
#include "extent/emap.h"
#include "extent/hold.h"
#include "meta/sz.h"
#include "support/nstime.h"
#include "support/prng.h"
#include "support/safety_check.h"

namespace je {

namespace {

constexpr size_t kPage = config::kPage;
constexpr size_t kArena0OversizeThreshold = size_t{8} << 20;
/// The oversize arena's first retained region with opt.oversize_hold and opt.decay_hold_peak
/// (PacOptions::grow_start).
constexpr size_t kOversizeGrowStart = size_t{256} << 20;

/// Per-thread arena state: decay pacing (arenas advance decay every ~1000 allocation events of a
/// thread, a uniformly random period with that mean so threads do not fire in lock step) and the
/// random state behind the cache-oblivious offsets. Kept here rather than in the thread layer
/// because every arena path uses it.
struct DecayTicker {
  int32_t tick;
  uint64_t prng;
};
constinit thread_local DecayTicker t_decay_ticker JE_TLS_IE = {0, 0};
constexpr uint64_t kDecayTicksMean = 1000;

void bump(std::atomic<uint64_t>& c, uint64_t n = 1) { c.fetch_add(n, std::memory_order_relaxed); }

}  // namespace

Arena* Arena::create(unsigned ind, extent_hooks_t* hooks, bool manual, bool metadata_use_hooks) {
  Base* base = Base::create(ind, g_arena_opt.metadata_thp,
                            metadata_use_hooks && hooks != nullptr ? hooks : nullptr);
  if (base == nullptr) return nullptr;
  void* mem = base->alloc(sizeof(Arena), alignof(Arena));
  if (mem == nullptr) {
    base->destroy();
    return nullptr;
  }
  void* bins_mem = base->alloc(sizeof(Bin) * g_nbins_total, alignof(Bin));
  if (bins_mem == nullptr) {
    base->destroy();
    return nullptr;
  }
  Arena* a = new (mem) Arena();
  a->bins_ = static_cast<Bin*>(bins_mem);
  for (unsigned i = 0; i < g_nbins_total; i++) new (&a->bins_[i]) Bin();
  a->ind_ = ind;
  a->manual_ = manual;
  a->base_ = base;
  a->create_ns_ = nstime_now_ns();
  a->set_default_name(arenas_huge_enabled() && ind == arenas_huge_ind() && !manual);
  PacOptions o;
  o.ind = ind;
  o.base = base;
  o.hooks = hooks;
  o.retain = g_arena_opt.retain;
  o.lg_max_fit = static_cast<unsigned>(g_arena_opt.lg_extent_max_active_fit);
  const ReturnPolicy& policy = g_arena_opt.policy;
  o.placement = g_arena_opt.placement;
  o.placement.bounded_coalesce = arenas_bounded_coalesce_default();
  o.purge_on_grow = policy.purge_on_grow;
  o.hold.on = policy.hold_peak;
  o.hold.shares_budget = !manual;
  // The huge arena's decay is set to 0 once created (arena_huge); with opt.oversize_hold its
  // frees stay within the hold, over the window the other arenas decay in.
  if (policy.oversize_hold && arenas_huge_enabled() && ind == arenas_huge_ind() && !manual) {
    o.hold.immediate_ms = arenas_dirty_decay_ms_default();
    // Held blocks serve the next round only where they lie side by side: a free merges with
    // its neighbours, and the round's bigger blocks fit into what its smaller ones freed. The
    // growth series from 2 MiB would map about one region per block; one big reservation
    // (address space, no pages) keeps a round's blocks together. Only where the hold is on
    // (it needs decay_hold_peak): the placement-530 options give back 5.3.0's placement.
    if (policy.hold_peak) o.grow_start = kOversizeGrowStart;
  }
  // Arena 0 is made before 5.3.0 applies opt.oversize_threshold, so it keeps the built-in
  // 8 MiB whatever the option says (arena.0.oversize_threshold reads 8388608 there too).
  o.oversize_threshold = ind == 0 ? kArena0OversizeThreshold : arenas_oversize_threshold();
  o.dirty_decay_ms = arenas_dirty_decay_ms_default();
  o.muzzy_decay_ms = arenas_muzzy_decay_ms_default();
  o.now_ns = a->create_ns_;
  if (!a->pac_.init(o)) {
    base->destroy();
    return nullptr;
  }
  return a;
}

void Arena::set_name(const char* s) {
  size_t n = 0;
  while (n + 1 < kNameLen && s[n] != '\0') {
    name_[n] = s[n];
    n++;
  }
  name_[n] = '\0';
}

void Arena::set_default_name(bool huge) {
  if (huge) {
    set_name("auto_oversize");
    return;
  }
  // "auto_<ind>" / "manual_<ind>", without a formatting library (core code does not allocate).
  char buf[kNameLen] = {};
  const char* prefix = manual_ ? "manual_" : "auto_";
  size_t n = 0;
  while (prefix[n] != '\0') {
    buf[n] = prefix[n];
    n++;
  }
  char digits[12];
  size_t nd = 0;
  unsigned v = ind_;
  do {
    digits[nd++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  while (nd > 0) buf[n++] = digits[--nd];
  buf[n] = '\0';
  set_name(buf);
}

// ---- small -------------------------------------------------------------------------------

Edata* Arena::slab_alloc(szind_t binind, unsigned shard) {
  Edata* slab;
  return slab_alloc_batch(binind, shard, &slab, 1) == 1 ? slab : nullptr;
}

unsigned Arena::slab_alloc_batch(szind_t binind, unsigned shard, Edata** out, unsigned k) {
  const size_t size = g_bin_geo[binind].slab_size;
  // Ours (opt.borrow_dirty): before this arena grows, another automatic arena's cached pages
  // of the slab's size -- emptied slabs, most often, of a thread that frees what others
  // allocated -- become this arena's.
  // Borrowing, this arena's own search stops short of growth (every cached page it holds has
  // been looked at when it gives up); what it could not find is borrowed, else grown.
  const bool borrow = pac_.placement().borrow_dirty && may_share_pages();
  const Pac::Reach own = borrow ? Pac::Reach::kFlushed : Pac::Reach::kGrow;
  unsigned got = k == 1 ? (out[0] = pac_.alloc(size, kPage, /*zero=*/false, own)) != nullptr
                        : pac_.alloc_batch(size, out, k, own);
  for (; borrow && got < k; got++) {
    Edata* e = arenas_borrow_slab(this, size);
    if (e == nullptr) e = pac_.grow(size, kPage, /*zero=*/false);
    if (e == nullptr) break;
    out[got] = e;
  }
  unsigned n = 0;
  for (unsigned i = 0; i < got; i++) {
    if (init_slab(out[i], binind, shard)) out[n++] = out[i];
  }
  return n;
}

bool Arena::init_slab(Edata* slab, szind_t binind, unsigned shard) {
  g_emap.remap(slab, binind, /*slab=*/true);
  if (!g_emap.register_interior(slab)) {
    pac_.dalloc(slab);
    return false;
  }
  slab::init(slab, binind);
  slab->binshard = static_cast<uint8_t>(shard);
  // opt.safety_checks with junk on free: every free region of a slab holds the free junk, so
  // the allocation path can tell a region written after its free from an untouched one.
  if (JE_UNLIKELY(g_arena_opt.safety_checks && g_arena_opt.junk_free)) {
    std::memset(slab->addr, kJunkFreeByte, g_bin_geo[binind].slab_size);
  }
  return true;
}

void* Arena::malloc_small(szind_t binind, bool zero) {
  const unsigned shard = t_bin_shards.shard[binind];
  Bin& bin = this->bin(binind, shard);
  void* p;
  {
    MutexGuard g(bin.mtx);
    p = bin.alloc_locked(binind, manual_);
    if (p != nullptr) {
      bin.stats.nmalloc++;
      bin.stats.nrequests++;
      bin.stats.curregs++;
    }
  }
  if (p == nullptr) {
    Edata* fresh = slab_alloc(binind, shard);
    MutexGuard g(bin.mtx);
    // Another thread may have refilled the bin while the lock was dropped.
    p = bin.alloc_locked(binind, manual_);
    if (p == nullptr) {
      if (fresh == nullptr) return nullptr;
      bin.install_fresh(fresh, manual_);
      fresh = nullptr;
      p = slab::reg_alloc(bin.slabcur, binind);
    }
    bin.stats.nmalloc++;
    bin.stats.nrequests++;
    bin.stats.curregs++;
    if (fresh != nullptr) {
      // Unused fresh slab: keep it as a non-full slab rather than returning it.
      bin.insert_nonfull(fresh);
      bin.stats.nslabs++;
      bin.stats.curslabs++;
    }
  }
  if (zero) std::memset(p, 0, g_bin_geo[binind].reg_size);
  decay_tick();
  return p;
}

unsigned Arena::fill_small(szind_t binind, void** out, unsigned n, uint64_t nrequests) {
  const unsigned shard = t_bin_shards.shard[binind];
  Bin& bin = this->bin(binind, shard);
  unsigned filled = 0;
  Edata* fresh[kSlabBatch];
  unsigned nfresh = 0;
  unsigned used = 0;
  bin.mtx.lock();
  while (filled < n) {
    if (bin.slabcur != nullptr && bin.slabcur->nfree > 0) {
      filled += slab::reg_alloc_batch(bin.slabcur, binind, out + filled, n - filled);
      continue;
    }
    if (bin.refill_slabcur(manual_)) continue;
    // Our new slabs become current one at a time, as each would have been got (nreslabs
    // counts only slabs taken back from the nonfull heap, as in 5.3.0).
    if (used < nfresh) {
      bin.install_fresh(fresh[used++], manual_);
      continue;
    }
    // No free region anywhere: get slabs with the lock dropped, as many as the rest of the
    // fill needs (one per region in one-region classes such as 4 KiB) in one trip.
    const unsigned nregs = g_bin_geo[binind].nregs;
    const unsigned want = std::min((n - filled + nregs - 1) / nregs, kSlabBatch);
    bin.mtx.unlock();
    nfresh = slab_alloc_batch(binind, shard, fresh, want);
    used = 0;
    bin.mtx.lock();
    if (nfresh == 0) break;
  }
  // Slabs left over because someone refilled the bin while the lock was dropped.
  for (; used < nfresh; used++) {
    bin.insert_nonfull(fresh[used]);
    bin.stats.nslabs++;
    bin.stats.curslabs++;
  }
  bin.stats.nmalloc += filled;
  bin.stats.nrequests += nrequests;
  bin.stats.curregs += filled;
  bin.stats.nfills++;
  bin.mtx.unlock();
  decay_tick();
  return filled;
}

void Arena::dalloc_small(Edata* slab, szind_t binind, void* ptr) {
  Bin& bin = this->bin(binind, slab->binshard);
  bool empty;
  {
    MutexGuard g(bin.mtx);
    debug_assert(bin.stats.curregs > 0, "arena: a bin with regions in use frees one");
    empty = bin.dalloc_locked(slab, binind, ptr, manual_);
    bin.stats.ndalloc++;
    bin.stats.curregs--;
  }
  if (empty) {
    pac_.dalloc(slab);
    dirty_added();
  }
  decay_tick();
}

bool Arena::small_region_in_use(const Edata* slab, szind_t binind, const void* ptr) {
  Bin& bin = this->bin(binind, slab->binshard);
  MutexGuard g(bin.mtx);
  return slab::reg_in_use(slab, slab::regind(slab, binind, ptr));
}

void Arena::dalloc_small_batch(szind_t binind, void* const* ptrs, Edata* const* slabs, unsigned n,
                               bool merge_stats, uint64_t nrequests) {
  Bin& bin = this->bin(binind, slabs[0]->binshard);
  // Emptied slabs are collected under the lock and returned after it, so page-allocator work
  // (possibly coalescing, possibly purging) never runs under a bin lock.
  Edata* empty_head = nullptr;
  {
    MutexGuard g(bin.mtx);
    for (unsigned i = 0; i < n; i++) {
      if (bin.dalloc_locked(slabs[i], binind, ptrs[i], manual_)) {
        slabs[i]->ql_link.next = empty_head;
        empty_head = slabs[i];
      }
    }
    bin.stats.ndalloc += n;
    bin.stats.curregs -= n;
    if (merge_stats) {
      bin.stats.nrequests += nrequests;
      bin.stats.nflushes++;
    }
  }
  bool dirtied = empty_head != nullptr;
  Edata* batch[kSlabBatch];
  unsigned nbatch = 0;
  while (empty_head != nullptr) {
    Edata* next = empty_head->ql_link.next;
    empty_head->ql_link = {};
    batch[nbatch++] = empty_head;
    empty_head = next;
    if (nbatch == kSlabBatch || empty_head == nullptr) {
      pac_.dalloc_batch(batch, nbatch);
      nbatch = 0;
    }
  }
  if (dirtied) dirty_added();
  decay_tick();
}

void Arena::merge_small_tcache_stats(szind_t binind, uint64_t nrequests, bool flush) {
  Bin& bin = thread_bin(binind);
  MutexGuard g(bin.mtx);
  bin.stats.nrequests += nrequests;
  if (flush) bin.stats.nflushes++;
}

// ---- large -------------------------------------------------------------------------------

void Arena::randomize_offset(Edata* e, size_t alignment) {
  // The pad page lets the returned pointer start at a random cache line of the first page, so
  // that large allocations do not all alias in the same cache sets. The random state is
  // per thread (seeded from its TLS address, so it also differs between processes).
  if constexpr (!config::kCacheOblivious) return;
  if (alignment >= kPage) return;
  size_t align = alignment < kCacheline ? kCacheline : alignment;
  unsigned lg_range = config::kLgPage - lg_floor(align);
  DecayTicker& t = t_decay_ticker;
  if (t.prng == 0) t.prng = addr_of(&t) | 1;
  uint64_t r = prng_lg_range_u64(&t.prng, lg_range);
  e->addr = ptr_of(e->base_addr() + (r << (config::kLgPage - lg_range)));
}

bool Arena::may_share_pages() const {
  // percpu_arena asks for CPU-local arenas: their pages stay theirs.
  return !manual_ && ind_ < arenas_narenas_auto() && pac_.default_hooks() &&
         g_arena_opt.percpu == PercpuArena::kDisabled;
}

void* Arena::malloc_large(size_t usize, size_t alignment, bool zero, bool may_borrow) {
  szind_t szind = sz::size2index(usize);
  const size_t size = usize + sz::kLargePad;
  Arena* owner = this;
  Edata* e;
  if (may_borrow && pac_.placement().borrow_dirty && may_share_pages()) {
    // Ours (opt.borrow_dirty): all of this arena's own cached pages first (small extent cache
    // flushed, as before any growth); then, rather than grow (new pages, a fault each, while
    // other arenas hold resident free pages -- a producer's arena filling up while its
    // consumers' arenas hold what they freed), a fitting cached extent of another automatic
    // arena. The block stays that arena's: it is freed back there, merges with its neighbours
    // there, and counts in its stats.
    e = pac_.alloc(size, alignment, zero, Pac::Reach::kFlushed);
    if (e == nullptr) e = arenas_borrow_large(this, size, alignment, zero, &owner);
    if (e == nullptr) e = pac_.grow(size, alignment, zero);
  } else {
    e = pac_.alloc(size, alignment, zero);
  }
  if (e == nullptr) return nullptr;
  e->prof_rec = nullptr;
  g_emap.remap(e, szind, /*slab=*/false);
  if (manual_) {
    MutexGuard g(large_mtx_);
    large_.push_back(e);
  }
  LargeStats& ls = owner->lstats_[szind - sc::kNBins];
  bump(ls.nmalloc);
  bump(ls.nrequests);
  ls.curlextents.fetch_add(1, std::memory_order_relaxed);
  randomize_offset(e, alignment);
  owner->decay_tick();
  return e->addr;
}

void Arena::dalloc_large(Edata* e) {
  if (manual_) {
    MutexGuard g(large_mtx_);
    large_.remove(e);
  }
  LargeStats& ls = lstats_[e->szind - sc::kNBins];
  bump(ls.ndalloc);
  ls.curlextents.fetch_sub(1, std::memory_order_relaxed);
  pac_.dalloc(e);
  dirty_added();
  decay_tick();
}

void Arena::merge_large_tcache_stats(szind_t szind, uint64_t n) {
  LargeStats& ls = lstats_[szind - sc::kNBins];
  bump(ls.nrequests, n);
  bump(ls.nflushes);
}

bool Arena::ralloc_large_no_move(Edata* e, size_t usize_min, size_t usize_max, bool zero) {
  size_t oldusize = sz::index2size(e->szind);
  auto resized = [&](size_t usize) {
    LargeStats& old_ls = lstats_[e->szind - sc::kNBins];
    bump(old_ls.ndalloc);
    old_ls.curlextents.fetch_sub(1, std::memory_order_relaxed);
    szind_t szind = sz::size2index(usize);
    g_emap.remap(e, szind, false);
    LargeStats& ls = lstats_[szind - sc::kNBins];
    bump(ls.nmalloc);
    bump(ls.nrequests);
    ls.curlextents.fetch_add(1, std::memory_order_relaxed);
  };
  auto expand = [&](size_t usize) {
    size_t old_size = e->size;
    if (!pac_.expand(e, old_size, usize + sz::kLargePad, zero)) return false;
    if (zero && config::kCacheOblivious) {
      // The old allocation's last page is partly beyond its usable end (the random offset);
      // those bytes were never promised zero, so clear them up to the page boundary.
      uintptr_t zbase = addr_of(e->addr) + oldusize;
      uintptr_t zpast = page_floor(zbase + kPage);
      std::memset(ptr_of(zbase), 0, zpast - zbase);
    }
    resized(usize);
    return true;
  };
  if (usize_max > oldusize) {
    if (expand(usize_max)) {
      decay_tick();
      return true;
    }
    if (usize_min < usize_max && usize_min > oldusize && expand(usize_min)) {
      decay_tick();
      return true;
    }
  }
  if (oldusize >= usize_min && oldusize <= usize_max) {
    decay_tick();
    return true;
  }
  if (oldusize > usize_max) {
    if (pac_.shrink(e, e->size, usize_max + sz::kLargePad)) {
      resized(usize_max);
      dirty_added();
      decay_tick();
      return true;
    }
  }
  return false;
}

// ---- decay -------------------------------------------------------------------------------

void Arena::dirty_added() {
  // With dirty_decay_ms 0 freed pages are purged at once, skipping muzzy (jemalloc's deferred
  // work after a free) -- down to the hold where the arena holds its frees (opt.oversize_hold);
  // otherwise a background thread may need waking. The free goes down to this arena's own
  // hold, within the process-wide bound (kept::); the share of the dip (arenas_hold_cap) is
  // applied by its later decay steps (the idle sweep, a background thread). At the end of a round the arenas free one after another,
  // and the oversize arena, freeing first, would find the budget still spent on the dips the
  // others had earlier in the round, and purge blocks the next round asks for again.
  if (pac_.immediate_hold()) {
    bool advanced;
    pac_.try_decay(ExtentState::kDirty, nstime_now_ns(), Pac::Eagerness::kAlways, &advanced,
                   kept::hold_room_pages());
  } else if (pac_.decay_ms_get(ExtentState::kDirty) == 0) {
    pac_.decay_all(ExtentState::kDirty, /*fully=*/true);
  }
  background_thread_dirty_added(this);
}

void Arena::decay(bool is_background_thread, bool all) {
  // With background threads on, only they purge on schedule (as 5.3.0, explicit
  // arena.<i>.decay included); other callers keep the epochs current and report bursts.
  const bool deferred = !all && !is_background_thread && background_thread_enabled();
  for (ExtentState which : {ExtentState::kDirty, ExtentState::kMuzzy}) {
    if (all) {
      pac_.decay_all(which, /*fully=*/true);
      continue;
    }
    Pac::Eagerness eagerness = is_background_thread ? Pac::Eagerness::kAlways
                               : deferred           ? Pac::Eagerness::kNever
                                                    : Pac::Eagerness::kOnEpochAdvance;
    bool advanced;
    const uint64_t now = nstime_now_ns();
    const size_t cap = which == ExtentState::kDirty ? arenas_hold_cap(this, now) : SIZE_MAX;
    pac_.try_decay(which, now, eagerness, &advanced, cap);
    if (deferred && advanced && which == ExtentState::kDirty) {
      background_thread_epoch_advanced(this);
    }
  }
}

uint64_t Arena::decay_ns_until_purge(ExtentState which, uint64_t now_ns,
                                     uint64_t npages_threshold) {
  const size_t cap = which == ExtentState::kDirty ? arenas_hold_cap(this, now_ns) : SIZE_MAX;
  return pac_.decay_ns_until_purge(which, now_ns, npages_threshold, cap);
}

void Arena::decay_tick() {
  DecayTicker& t = t_decay_ticker;
  if (JE_LIKELY(--t.tick > 0)) return;
  if (t.prng == 0) t.prng = addr_of(&t) | 1;
  t.tick = static_cast<int32_t>(1 + prng_range_u64(&t.prng, 2 * kDecayTicksMean - 1));
  decay(false, false);
  arenas_decay_sweep(this);
  idle_return_maybe_start(/*exiting_thread=*/false);
}

// ---- lifecycle ---------------------------------------------------------------------------

void Arena::reset() {
  // Large allocations (manual arenas keep them on a list).
  for (;;) {
    Edata* e;
    {
      MutexGuard g(large_mtx_);
      e = large_.pop_front();
    }
    if (e == nullptr) break;
    LargeStats& ls = lstats_[e->szind - sc::kNBins];
    bump(ls.ndalloc);
    ls.curlextents.fetch_sub(1, std::memory_order_relaxed);
    pac_.dalloc(e);
  }
  // Slabs: everything the bins own goes back at once.
  for (Bin* b = bins_begin(); b != bins_end(); b++) {
    Bin& bin = *b;
    bin.mtx.lock();
    Edata* owned_head = nullptr;
    auto take = [&](Edata* s) {
      s->ql_link.next = owned_head;
      owned_head = s;
    };
    if (bin.slabcur != nullptr) take(bin.slabcur);
    bin.slabcur = nullptr;
    while (Edata* s = bin.nonfull.remove_first()) take(s);
    while (Edata* s = bin.full.pop_front()) take(s);
    bin.stats.curregs = 0;
    bin.stats.curslabs = 0;
    bin.stats.nonfull_slabs = 0;
    bin.mtx.unlock();
    while (owned_head != nullptr) {
      Edata* next = owned_head->ql_link.next;
      owned_head->ql_link = {};
      pac_.dalloc(owned_head);
      owned_head = next;
    }
  }
  // The memory stays dirty, as in 5.3.0: reset does not purge (arena.<i>.purge or decay will).
}

void Arena::destroy() {
  reset();
  decay(false, true);  // everything to retained, then unmapped with the rest
  pac_.destroy_retained();
  Base* b = base_;
  b->destroy();
}

void BinStatsSnap::add(const BinStatsSnap& s, bool current) {
  nmalloc += s.nmalloc;
  ndalloc += s.ndalloc;
  nrequests += s.nrequests;
  nfills += s.nfills;
  nflushes += s.nflushes;
  nslabs += s.nslabs;
  nreslabs += s.nreslabs;
  if (current) {
    curregs += s.curregs;
    curslabs += s.curslabs;
    nonfull_slabs += s.nonfull_slabs;
  }
  mutex_stats_merge(&mutex, s.mutex);
}

void Arena::read_stats(ArenaStatsSnap* out) {
  out->nthreads = nthreads();
  out->create_ns = create_ns_;
  out->internal = internal_bytes();
  out->base = base_->stats();
  out->mutex_base = base_->mutex_stats();
  {
    MutexGuard g(large_mtx_);
    out->mutex_large = large_mtx_.stats();
  }
  pac_.read_stats(&out->pac);
  for (unsigned i = 0; i < sc::kNBins; i++) {
    BinStatsSnap& b = out->bins[i];
    b = BinStatsSnap{};
    // A class's shards report as one bin (5.3.0 merges them the same way).
    for (unsigned shard = 0; shard < g_bin_geo[i].nshards; shard++) {
      Bin& bin = this->bin(i, shard);
      MutexGuard g(bin.mtx);
      const BinStats& st = bin.stats;
      b.add(BinStatsSnap{st.nmalloc, st.ndalloc, st.nrequests, st.curregs, st.nfills, st.nflushes,
                         st.nslabs, st.reslabs, st.curslabs, st.nonfull_slabs, bin.mtx.stats()},
            /*current=*/true);
    }
  }
  for (unsigned i = 0; i < sc::kNLExtents; i++) {
    const LargeStats& ls = lstats_[i];
    LargeStatsSnap& l = out->lextents[i];
    l.nmalloc = ls.nmalloc.load(std::memory_order_relaxed);
    l.ndalloc = ls.ndalloc.load(std::memory_order_relaxed);
    l.nrequests = ls.nrequests.load(std::memory_order_relaxed);
    l.nflushes = ls.nflushes.load(std::memory_order_relaxed);
    l.curlextents = ls.curlextents.load(std::memory_order_relaxed);
  }
}

void Arena::reset_mutex_stats() {
  {
    MutexGuard g(large_mtx_);
    large_mtx_.reset_stats();
  }
  pac_.reset_mutex_stats();
  base_->reset_mutex_stats();
  for (Bin* b = bins_begin(); b != bins_end(); b++) {
    MutexGuard g(b->mtx);
    b->mtx.reset_stats();
  }
}

void Arena::prefork(unsigned stage) {
  switch (stage) {
    case 0: pac_.prefork_decay(); break;
    case 1: pac_.prefork_grow(); break;
    case 2: pac_.prefork_ecaches(); break;
    case 3: base_->prefork(); break;
    case 4: large_mtx_.prefork(); break;
    case 5:
      for (Bin* b = bins_begin(); b != bins_end(); b++) b->mtx.prefork();
      break;
    default: break;
  }
}
void Arena::postfork_parent() {
  for (Bin* b = bins_begin(); b != bins_end(); b++) b->mtx.postfork_parent();
  large_mtx_.postfork_parent();
  pac_.postfork_parent();
  base_->postfork_parent();
}
void Arena::postfork_child() {
  for (Bin* b = bins_begin(); b != bins_end(); b++) b->mtx.postfork_child();
  large_mtx_.postfork_child();
  pac_.postfork_child();
  base_->postfork_child();
}

}  // namespace je
