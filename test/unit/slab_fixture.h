// slab_fixture.h: slab descriptors for the unit tests of slab.h and bin.h (slab_test,
// bin_test). Header-only; the descriptors describe made-up, well separated addresses: slab and
// bin code only compute with a slab's address, they never touch its memory.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>

#include "arena/bin_info.h"
#include "arena/slab.h"
#include "extent/edata.h"

namespace je {

/// Where the made-up slabs live: slot i at kSlabRegion + i MiB (larger than any slab).
inline constexpr uintptr_t kSlabRegion = uintptr_t{0x2b} << 30;
inline constexpr uintptr_t kSlabSlot = uintptr_t{1} << 20;

/// Describes a fresh slab of class `binind` (every region free) at slot `slot`, serial `sn`.
inline void init_slab(Edata* e, szind_t binind, unsigned slot, uint64_t sn) {
  e->init(/*arena=*/1, ptr_of(kSlabRegion + slot * kSlabSlot), g_bin_geo[binind].slab_size,
          /*is_slab=*/true, binind, sn, ExtentState::kActive, /*is_zeroed=*/false,
          /*is_committed=*/true, /*head=*/false);
  slab::init(e, binind);
}

/// The first small class whose slabs hold `nregs` regions (the default geometry has classes
/// with 1, 2, 4, ... 512 regions).
inline szind_t class_with_nregs(unsigned nregs) {
  for (szind_t i = 0; i < sc::kNBins; i++) {
    if (g_bin_geo[i].nregs == nregs) return i;
  }
  ADD_FAILURE() << "no class with " << nregs << " regions per slab";
  return 0;
}

/// Set bits of the slab's bitmap (regions in use).
inline unsigned bitmap_popcount(const Edata* e) {
  unsigned n = 0;
  for (uint64_t w : e->slab_bitmap) n += static_cast<unsigned>(std::popcount(w));
  return n;
}

}  // namespace je
