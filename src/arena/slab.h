// slab.h: regions inside a slab.
//
// Purpose: a slab is an extent of g_bin_geo[i].slab_size bytes (by default LCM(page, region
// size), so nothing is left over; `slab_sizes` may leave a tail) carved into nregs equal
// regions; its Edata carries a bitmap (bit set = region in use) and the free count. These
// helpers find, take and return regions, and turn a pointer into a region index without
// dividing.
// Layer: arena. Callers: bin/arena code, under the owning bin's lock.
// Invariants: nfree == nregs - popcount(bitmap); a region's pointer is slab base + i * size.
// jemalloc mapping: arena_slab_reg_alloc(_batch), arena_slab_regind (div_info), slab_data_t.
#pragma once

#include <bit>
#include <cstdint>

#include "arena/bin_info.h"
#include "extent/edata.h"
#include "support/safety_check.h"

namespace je::slab {

/// Region index without dividing: offset * ceil(2^32 / size) >> 32 (exact, see bin_info.cc).
inline size_t regind(const Edata* slab, szind_t binind, const void* ptr) {
  uint64_t offset = addr_of(ptr) - slab->base_addr();
  return static_cast<size_t>((offset * g_bin_geo[binind].div_magic) >> 32);
}

/// Fresh slab: every region free.
inline void init(Edata* slab, szind_t binind) {
  for (uint64_t& w : slab->slab_bitmap) w = 0;
  slab->nfree = static_cast<uint16_t>(g_bin_geo[binind].nregs);
}

/// Take the lowest free region (slab must have one; as in the batch version, the lowest clear
/// bit is then always a real region).
inline void* reg_alloc(Edata* slab, szind_t binind) {
  debug_assert(slab->nfree > 0, "slab: allocating from a slab with a free region");
  for (unsigned w = 0;; w++) {
    uint64_t word = slab->slab_bitmap[w];
    if (word != ~uint64_t{0}) {
      unsigned bit = static_cast<unsigned>(std::countr_one(word));
      slab->slab_bitmap[w] = word | (uint64_t{1} << bit);
      slab->nfree--;
      return ptr_of(slab->base_addr() + (w * 64 + bit) * size_t{g_bin_geo[binind].reg_size});
    }
  }
}

/// Take up to n regions into out[]; returns how many (min(n, nfree)).
inline unsigned reg_alloc_batch(Edata* slab, szind_t binind, void** out, unsigned n) {
  unsigned take = n < slab->nfree ? n : slab->nfree;
  const size_t reg_size = g_bin_geo[binind].reg_size;
  const uintptr_t base = slab->base_addr();
  unsigned got = 0;
  for (unsigned w = 0; got < take; w++) {
    uint64_t free_bits = ~slab->slab_bitmap[w];
    while (free_bits != 0 && got < take) {
      unsigned bit = static_cast<unsigned>(std::countr_zero(free_bits));
      free_bits &= free_bits - 1;
      slab->slab_bitmap[w] |= uint64_t{1} << bit;
      out[got++] = ptr_of(base + (w * 64 + bit) * reg_size);
    }
  }
  // Regions go lowest first and take <= nfree, so the (clear) bits past nregs are never reached.
  slab->nfree = static_cast<uint16_t>(slab->nfree - take);
  return take;
}

/// Whether the region of `ptr` is currently allocated (double-free checks).
inline bool reg_in_use(const Edata* slab, size_t ind) {
  return (slab->slab_bitmap[ind / 64] >> (ind % 64)) & 1;
}

inline void reg_free(Edata* slab, size_t ind) {
  slab->slab_bitmap[ind / 64] &= ~(uint64_t{1} << (ind % 64));
  slab->nfree++;
  debug_assert(slab->nfree <= kSlabMaxRegs, "slab: nfree within the bitmap");
}

}  // namespace je::slab
