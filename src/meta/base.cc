// base.cc: see base.h.
#include "meta/base.h"

#include <atomic>
#include <cstring>
#include <new>

#include "jemalloc/jemalloc.h"
#include "os/pages.h"
#include "support/config.h"
#include "support/reentrancy.h"
#include "support/util.h"

namespace je {
namespace {

constexpr size_t kHugepage = config::kHugepage;
constexpr unsigned kLgHugepage = config::kLgHugepage;

// metadata_thp:auto switches to MADV_HUGEPAGE once a base reaches this many blocks. The global
// base waits longer because every process has one and most never grow it past a few blocks.
constexpr unsigned kAutoThpThreshold = 2;
constexpr unsigned kAutoThpThresholdGlobal = 5;

constexpr size_t hugepage_ceil(size_t x) { return align_up(x, kHugepage); }

// Size of the block after one of `last` bytes: x1.25, rounded up to the hugepage, strictly larger.
// Saturates instead of wrapping (such a request fails in pages::map anyway).
constexpr size_t next_block_size(size_t last) {
  const size_t limit = ~size_t{0} - 2 * kHugepage;
  if (last > limit / 2) return limit & ~(kHugepage - 1);
  size_t next = hugepage_ceil(last + last / 4);
  return next > last ? next : last + kHugepage;
}
static_assert(next_block_size(2 << 20) == 4 << 20);
static_assert(next_block_size(4 << 20) == 6 << 20);
static_assert(next_block_size(8 << 20) == 10 << 20);

// Header at the start of every block after the first, rounded so bump pointers stay
// quantum-aligned.
template <typename T>
constexpr size_t header_size() {
  return align_up(sizeof(T), config::kQuantum);
}

}  // namespace

Base::Base(unsigned ind, MetadataThp thp, extent_hooks_s* hooks, uintptr_t start, size_t size)
    : ind_(ind), thp_(thp), hooks_(hooks), last_block_size_(size) {
  const size_t self = header_size<Base>();
  first_ = Block{nullptr, start, start + self, start + size, false};
  blocks_ = &first_;
  open_[0] = &first_;
  stats_.allocated = self;
  stats_.resident = page_ceil(self);
  stats_.mapped = size;
  stats_.n_thp = 0;
}

void* Base::map_block(extent_hooks_s* hooks, unsigned ind, size_t size) {
  bool commit = true;
  if (hooks == nullptr) return pages::map(nullptr, size, kHugepage, &commit);
  // User hooks (experimental.arenas_create_ext, metadata_use_hooks): a hook that allocates must
  // not come back into this arena (support/reentrancy.h).
  ReentrancyGuard reentrant;
  bool zero = true;
  void* p = hooks->alloc(hooks, nullptr, size, kHugepage, &zero, &commit, ind);
  if (p == nullptr) return nullptr;
  if (!commit && (hooks->commit == nullptr || hooks->commit(hooks, p, size, 0, size, ind))) {
    unmap_block(hooks, ind, p, size);
    return nullptr;
  }
  if (!zero) std::memset(p, 0, size);  // a Base hands out zero-filled memory
  return p;
}

void Base::unmap_block(extent_hooks_s* hooks, unsigned ind, void* addr, size_t size) {
  if (hooks == nullptr) {
    pages::unmap(addr, size);
    return;
  }
  // As 5.3.0 gives metadata back: dalloc, else at least decommit or purge what it cannot take.
  ReentrancyGuard reentrant;
  if (hooks->dalloc != nullptr && !hooks->dalloc(hooks, addr, size, true, ind)) return;
  if (hooks->decommit != nullptr && !hooks->decommit(hooks, addr, size, 0, size, ind)) return;
  if (hooks->purge_forced != nullptr && !hooks->purge_forced(hooks, addr, size, 0, size, ind)) {
    return;
  }
  if (hooks->purge_lazy != nullptr) hooks->purge_lazy(hooks, addr, size, 0, size, ind);
}

Base* Base::create(unsigned ind, MetadataThp thp, extent_hooks_s* hooks) {
  static_assert(header_size<Base>() < kHugepage);
  void* p = map_block(hooks, ind, kHugepage);
  if (p == nullptr) return nullptr;
  Base* base = new (p) Base(ind, thp, hooks, addr_of(p), kHugepage);
  if (thp == MetadataThp::kAlways && base->thp_madvise_allowed()) base->advise_huge(&base->first_);
  return base;
}

bool Base::thp_madvise_allowed() const {
  // Memory from user hooks is theirs to advise.
  return hooks_ == nullptr && thp_ != MetadataThp::kDisabled &&
         pages::system_thp_mode() == pages::ThpMode::kDefault;
}

void Base::advise_huge(Block* b) {
  if (b->huge) return;
  if (!pages::huge(ptr_of(b->start), b->end - b->start)) return;
  b->huge = true;
  // Count the hugepages the used prefix already covers; carve() adds the rest as it grows.
  stats_.n_thp += (hugepage_ceil(b->bump) - b->start) >> kLgHugepage;
}

Base::Block* Base::new_block(size_t usize, size_t alignment) {
  const size_t header = header_size<Block>();
  // Worst-case room: header, then padding up to `alignment`, then the request.
  if (usize > ~size_t{0} - header - alignment - kHugepage) return nullptr;
  const size_t needed = hugepage_ceil(header + alignment + usize);
  const size_t grown = next_block_size(last_block_size_);
  const size_t size = needed > grown ? needed : grown;

  void* p = map_block(hooks_, ind_, size);
  if (p == nullptr) return nullptr;

  const uintptr_t start = addr_of(p);
  Block* b = new (p) Block{blocks_, start, start + header, start + size, false};
  blocks_ = b;
  n_blocks_++;
  last_block_size_ = size;
  stats_.allocated += header;
  stats_.resident += page_ceil(header);
  stats_.mapped += size;

  if (thp_madvise_allowed()) {
    if (thp_ == MetadataThp::kAlways || auto_thp_switched_) {
      advise_huge(b);
    } else {
      const unsigned threshold = ind_ == 0 ? kAutoThpThresholdGlobal : kAutoThpThreshold;
      if (n_blocks_ >= threshold) {
        // The switch: from now on metadata is worth hugepages, including what exists already.
        auto_thp_switched_ = true;
        for (Block* it = blocks_; it != nullptr; it = it->next) advise_huge(it);
      }
    }
  }

  // The new block replaces the open block with the least room left (or an empty slot).
  unsigned victim = 0;
  for (unsigned i = 0; i < kOpenBlocks; i++) {
    if (open_[i] == nullptr) {
      victim = i;
      break;
    }
    if (open_[i]->end - open_[i]->bump < open_[victim]->end - open_[victim]->bump) victim = i;
  }
  open_[victim] = b;
  return b;
}

void* Base::carve(Block* b, uintptr_t at, size_t usize) {
  const uintptr_t old_bump = b->bump;
  const uintptr_t new_bump = at + usize;
  b->bump = new_bump;
  stats_.allocated += usize;
  // Pages (and hugepages) first touched by this request: the stretch from the old bump's
  // ceiling to the new one. Alignment padding is counted as touched but not allocated.
  stats_.resident += page_ceil(new_bump) - page_ceil(old_bump);
  if (b->huge) stats_.n_thp += (hugepage_ceil(new_bump) - hugepage_ceil(old_bump)) >> kLgHugepage;
  return ptr_of(at);
}

void* Base::alloc(size_t size, size_t alignment) {
  if (!is_pow2(alignment) || alignment > kHugepage) return nullptr;
  if (alignment < config::kQuantum) alignment = config::kQuantum;
  if (size > (~size_t{0} >> 1)) return nullptr;
  // Sizes are rounded to the alignment so consecutive same-alignment requests pack without gaps.
  const size_t usize = align_up(size == 0 ? 1 : size, alignment);

  MutexGuard guard(mtx_);
  Block* best = nullptr;
  uintptr_t best_at = 0;
  size_t best_left = 0;
  for (Block* b : open_) {
    if (b == nullptr) continue;
    const uintptr_t at = align_up(b->bump, alignment);
    if (at > b->end || b->end - at < usize) continue;
    const size_t left = b->end - at - usize;
    if (best == nullptr || left < best_left) {
      best = b;
      best_at = at;
      best_left = left;
    }
  }
  if (best == nullptr) {
    best = new_block(usize, alignment);
    if (best == nullptr) return nullptr;
    best_at = align_up(best->bump, alignment);
  }
  return carve(best, best_at, usize);
}

Base::Stats Base::stats() {
  MutexGuard guard(mtx_);
  return stats_;
}

void Base::destroy() {
  // Every field needed is read before the block holding `this` goes away (it goes last).
  const uintptr_t first_start = first_.start;
  const size_t first_size = first_.end - first_.start;
  extent_hooks_s* const hooks = hooks_;
  const unsigned ind = ind_;
  Block* b = blocks_;
  while (b != &first_) {
    Block* older = b->next;
    unmap_block(hooks, ind, ptr_of(b->start), b->end - b->start);
    b = older;
  }
  unmap_block(hooks, ind, ptr_of(first_start), first_size);
}

MutexStats Base::mutex_stats() {
  MutexGuard g(mtx_);
  return mtx_.stats();
}

void Base::reset_mutex_stats() {
  MutexGuard g(mtx_);
  mtx_.reset_stats();
}

void Base::prefork() { mtx_.prefork(); }
void Base::postfork_parent() { mtx_.postfork_parent(); }
void Base::postfork_child() { mtx_.postfork_child(); }

namespace {
constinit std::atomic<Base*> g_base_global{nullptr};
}  // namespace

Base* base_global(MetadataThp thp_if_created) {
  Base* b = g_base_global.load(std::memory_order_acquire);
  if (b != nullptr) return b;
  // Racing first callers each build a candidate; one wins the CAS and the others unmap theirs.
  // This needs no lock, so it works before any mutex or option is set up.
  Base* fresh = Base::create(0, thp_if_created);
  if (fresh == nullptr) return g_base_global.load(std::memory_order_acquire);
  Base* expected = nullptr;
  if (g_base_global.compare_exchange_strong(expected, fresh, std::memory_order_acq_rel,
                                            std::memory_order_acquire)) {
    return fresh;
  }
  fresh->destroy();
  return expected;
}

}  // namespace je
