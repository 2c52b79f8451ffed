// bin_info.cc: run-time bin geometry (see bin_info.h).
#include "arena/bin_info.h"

namespace je {

namespace {

constexpr uint64_t div_magic(uint64_t d) { return ((uint64_t{1} << kDivShift) + d - 1) / d; }
static_assert(uint64_t{7} * config::kPage * sc::kSmallMaxClass < (uint64_t{1} << kDivShift));

constexpr BinGeometry geometry(const sc::BinInfo& b, uint32_t slab_size, uint32_t nshards,
                               uint32_t shard_base) {
  return BinGeometry{b.reg_size, slab_size / b.reg_size, slab_size, nshards,
                     shard_base, div_magic(b.reg_size)};
}

constexpr auto kDefaultGeometry = [] {
  std::array<BinGeometry, sc::kNBins> t{};
  for (unsigned i = 0; i < sc::kNBins; i++) {
    t[i] = geometry(sc::kBinInfo[i], sc::kBinInfo[i].slab_size, 1, i);
  }
  return t;
}();

// Exactness of the multiply-shift region index: for offset = k * d < 2^32, the rounding error of
// ceil(2^32 / d) adds less than offset / 2^32 < 1 to k. The largest slab (a 14 KiB class at
// kSlabMaxRegs regions) is 7 MiB.
static_assert(uint64_t{sc::kSmallMaxClass} * kSlabMaxRegs < (uint64_t{1} << 32));

}  // namespace

constinit std::array<BinGeometry, sc::kNBins> g_bin_geo = kDefaultGeometry;
constinit unsigned g_nbins_total = sc::kNBins;
constinit thread_local ThreadBinShards t_bin_shards JE_TLS_IE = {};

size_t bin_slab_pages_clamp(szind_t binind, size_t pages) {
  const size_t reg = sc::kBinInfo[binind].reg_size;
  const size_t min_pgs = (reg + config::kPage - 1) / config::kPage;
  const size_t max_pgs = kSlabMaxRegs * reg / config::kPage;
  return pages < min_pgs ? min_pgs : pages > max_pgs ? max_pgs : pages;
}

void bin_info_boot(const uint16_t* slab_pages, const uint8_t* nshards) {
  unsigned base = 0;
  for (unsigned i = 0; i < sc::kNBins; i++) {
    const sc::BinInfo& b = sc::kBinInfo[i];
    const uint32_t slab =
        slab_pages[i] == 0
            ? b.slab_size
            : static_cast<uint32_t>(bin_slab_pages_clamp(i, slab_pages[i]) * config::kPage);
    g_bin_geo[i] = geometry(b, slab, nshards[i], base);
    base += nshards[i];
  }
  g_nbins_total = base;
}

}  // namespace je
