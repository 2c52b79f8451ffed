// ehooks.h: the extent-hook boundary between the page allocator and the memory source.
//
// Purpose: every page-level operation (map, unmap, commit, purge, split, merge) of an arena
// goes through its `extent_hooks_t` -- ours by default (src/os/pages), or a table the user
// installed with `arenas.create` / `arena.<i>.extent_hooks`. This wrapper is the one place that
// knows the public convention (hooks return true on failure / opt-out; a NULL member means "not
// supported") and translates it to ours (true on success).
// Layer: extent. Callers: extent.cc, pac.
// Concurrency: the hooks pointer is an atomic (it can be swapped at run time); the wrapper holds
// no lock. User hooks run with no allocator lock held by the calling path except ecache or
// grow locks on the recycle/record paths, exactly where jemalloc calls them.
// jemalloc mapping: ehooks (src/ehooks.c), extent_hooks_t, `arena.<i>.extent_hooks`.
#pragma once

#include <atomic>
#include <cstddef>

#include "jemalloc/jemalloc.h"

namespace je {

/// Our default hooks (mmap/munmap/madvise); the value `arena.<i>.extent_hooks` reads back.
extern const extent_hooks_t kDefaultExtentHooks;

class Ehooks {
 public:
  constexpr Ehooks() = default;

  void init(unsigned arena_ind, extent_hooks_t* hooks) {
    ind_ = arena_ind;
    hooks_.store(hooks, std::memory_order_release);
  }
  extent_hooks_t* get() const { return hooks_.load(std::memory_order_acquire); }
  /// Install new hooks, returning the previous ones.
  extent_hooks_t* exchange(extent_hooks_t* h) {
    return hooks_.exchange(h, std::memory_order_acq_rel);
  }
  bool is_default() const { return get() == &kDefaultExtentHooks; }
  unsigned ind() const { return ind_; }

  /// Map `size` bytes aligned to `alignment` (at exactly `new_addr` if non-null). On success
  /// *zero / *commit report whether the memory is known zeroed / committed.
  void* alloc(void* new_addr, size_t size, size_t alignment, bool* zero, bool* commit);
  /// Give the range back to the source. False if the hook declines (the caller keeps it).
  bool dalloc(void* addr, size_t size, bool committed);
  void destroy(void* addr, size_t size, bool committed);
  bool commit(void* addr, size_t size, size_t offset, size_t length);
  bool decommit(void* addr, size_t size, size_t offset, size_t length);
  /// Lazy purge (MADV_FREE): pages may keep their contents until the kernel reclaims them.
  bool purge_lazy(void* addr, size_t size, size_t offset, size_t length);
  /// Forced purge (MADV_DONTNEED): contents are gone (reads return zeros).
  bool purge_forced(void* addr, size_t size, size_t offset, size_t length);
  bool split(void* addr, size_t size, size_t size_a, size_t size_b, bool committed);
  bool merge(void* addr_a, size_t size_a, void* addr_b, size_t size_b, bool committed);
  /// Make the range read as zeros: demand-zero pages via purge where cheap, else memset.
  void zero(void* addr, size_t size);

  /// Whether dalloc would certainly decline: with our hooks, when address space is retained;
  /// with user hooks, when they have no dalloc.
  bool dalloc_will_fail(bool retain) const;
  bool split_will_fail() const { return get()->split == nullptr; }
  bool merge_will_fail() const { return get()->merge == nullptr; }

 private:
  std::atomic<extent_hooks_t*> hooks_{nullptr};
  unsigned ind_ = 0;
};

/// opt.thp: `always` advises MADV_HUGEPAGE on new mappings (where the system mode is
/// "madvise") and makes zeroing use memset instead of purging (which would split huge pages);
/// `never` advises MADV_NOHUGEPAGE. Set once at init.
void ehooks_set_thp(bool always, bool never);

}  // namespace je
