// bin.h: one small size class of one arena.
//
// Purpose: owns the slabs of a size class: `slabcur` (where regions are taken from), a heap of
// non-full slabs ordered oldest/lowest first (so allocation packs into old memory and young
// slabs drain and go back to the page allocator), and, for manual arenas only, a list of full
// slabs so `arena.<i>.reset/destroy` can find everything.
// Layer: arena. Callers: arena.cc (alloc/fill/dalloc), ctl (stats).
// Concurrency: `mtx` (rank kBin). Slab allocation from the page allocator happens with the
// lock dropped (the arena re-checks after re-locking).
// Invariants: slabcur, if set, is not in the heap; a slab with free regions is slabcur or in
// the heap; a full slab is in neither (and in `full` for manual arenas); an empty slab leaves
// the bin at once (returned dirty to the page allocator).
// jemalloc mapping: bin_t (src/bin.c) and the arena_bin_* helpers; stats.arenas.<i>.bins.<j>.*.
#pragma once

#include <cstdint>

#include "arena/arena_options.h"
#include "arena/slab.h"
#include "extent/edata.h"
#include "support/malloc_io.h"
#include "support/mutex.h"
#include "support/safety_check.h"

namespace je {

struct BinStats {
  uint64_t nmalloc = 0;    // regions handed out (to tcaches or directly)
  uint64_t ndalloc = 0;    // regions returned
  uint64_t nrequests = 0;  // allocation requests served (tcache hits are merged in at flush)
  size_t curregs = 0;      // regions in use
  uint64_t nfills = 0;     // tcache fills
  uint64_t nflushes = 0;   // tcache flushes
  uint64_t nslabs = 0;     // slabs created
  uint64_t reslabs = 0;    // slabcur taken from the non-full heap or switched to an older slab
  size_t curslabs = 0;     // slabs owned
  size_t nonfull_slabs = 0;
};

struct Bin {
  Mutex mtx{LockRank::kBin, "bin"};
  Edata* slabcur = nullptr;
  EdataHeap nonfull;
  EdataList full;  // manual arenas only
  BinStats stats;

  /// Region from slabcur or the oldest non-full slab; nullptr when the bin has no free region.
  void* alloc_locked(szind_t binind, bool track_full) {
    if (slabcur == nullptr || slabcur->nfree == 0) {
      if (!refill_slabcur(track_full)) return nullptr;
    }
    return slab::reg_alloc(slabcur, binind);
  }

  /// Make slabcur a slab with free regions, from the heap. False if there is none. Taking a
  /// slab from the heap counts as a reslab (5.3.0's bins.<j>.nreslabs counts these as well as
  /// the switches to an older slab in lower_slab).
  bool refill_slabcur(bool track_full) {
    if (slabcur != nullptr) {  // full
      if (track_full) full.push_back(slabcur);
    }
    slabcur = nonfull.remove_first();
    if (slabcur == nullptr) return false;
    stats.nonfull_slabs--;
    stats.reslabs++;
    return true;
  }

  /// Adopt a fresh slab as slabcur (the old slabcur, if any, goes where it belongs).
  void install_fresh(Edata* slab, bool track_full) {
    if (slabcur != nullptr) {
      if (slabcur->nfree > 0) {
        insert_nonfull(slabcur);
      } else if (track_full) {
        full.push_back(slabcur);
      }
    }
    slabcur = slab;
    stats.nslabs++;
    stats.curslabs++;
  }

  void insert_nonfull(Edata* slab) {
    nonfull.insert(slab);
    stats.nonfull_slabs++;
  }

  /// Return a region; true if the slab became empty and was detached from the bin (the caller
  /// hands it back to the page allocator after unlocking).
  bool dalloc_locked(Edata* slab, szind_t binind, const void* ptr, bool track_full) {
    const size_t ind = slab::regind(slab, binind, ptr);
    if (JE_UNLIKELY(g_arena_opt.safety_checks) && !slab::reg_in_use(slab, ind)) {
      // A region already free in its slab: freed twice, the second time from a thread cache
      // that could not see the first (another thread's, or the flush of an explicit one).
      je_abort_msg("double free of %p (small block of %u bytes, already free in its slab)", ptr,
                   g_bin_geo[binind].reg_size);
    }
    debug_assert(slab::reg_in_use(slab, ind), "bin: freed region is allocated in its slab");
    debug_assert(slab->state == ExtentState::kActive, "bin: slab extent is active");
    slab::reg_free(slab, ind);
    unsigned nregs = g_bin_geo[binind].nregs;
    if (slab->nfree == nregs) {
      detach(slab, nregs, track_full);
      stats.curslabs--;
      return true;
    }
    if (slab->nfree == 1 && slab != slabcur) {
      // Was full: back among the non-full ones, or as slabcur if it is older than slabcur.
      if (track_full) full.remove(slab);
      lower_slab(slab, track_full);
    }
    return false;
  }

 private:
  void detach(Edata* slab, unsigned nregs, bool track_full) {
    if (slab == slabcur) {
      slabcur = nullptr;
    } else if (nregs == 1) {
      if (track_full) full.remove(slab);  // a one-region slab goes from full to empty directly
    } else {
      nonfull.remove(slab);
      stats.nonfull_slabs--;
    }
  }

  // Keeps slabcur the oldest/lowest non-full slab when it is set.
  void lower_slab(Edata* slab, bool track_full) {
    if (slabcur != nullptr && EdataSnAddrLess{}(slab, slabcur)) {
      if (slabcur->nfree > 0) {
        insert_nonfull(slabcur);
      } else if (track_full) {
        full.push_back(slabcur);
      }
      slabcur = slab;
      stats.reslabs++;
    } else {
      insert_nonfull(slab);
    }
  }
};

}  // namespace je
