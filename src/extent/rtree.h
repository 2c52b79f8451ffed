// rtree.h: radix tree from page address to a packed 64-bit entry.
//
// Purpose: the address -> extent map under `free()`, `sallocx()` and coalescing. Keys are page
// numbers of a 48-bit address space (36 bits), split 18 + 18 over two levels: a static root of
// 2^18 leaf pointers (2 MiB of .bss, touched sparsely) and leaves of 2^18 entries (2 MiB each,
// from the global base, created on first use, never freed).
// Layer: extent. Callers: emap only.
// Concurrency: reads are lock-free (acquire loads of the leaf pointer and of the entry). Leaf
// creation takes the file-static leaf mutex in rtree.cc (rank kRtree) and publishes with a
// release store. Entry writes are
// single 64-bit stores made by the thread that owns the extent (or holds its ecache lock).
// Invariants: an entry, once its leaf exists, is always a whole packed value (never torn).
// jemalloc mapping: rtree (src/rtree.c, include/jemalloc/internal/rtree.h), "compact" layout.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "support/compiler.h"
#include "support/config.h"
#include "support/mutex.h"

namespace je {

class Rtree {
 public:
  static constexpr unsigned kKeyBits = config::kLgVaddr - config::kLgPage;  // 36
  static constexpr unsigned kLeafBits = kKeyBits / 2;                       // 18
  static constexpr unsigned kRootBits = kKeyBits - kLeafBits;               // 18
  static constexpr size_t kLeafEntries = size_t{1} << kLeafBits;
  static constexpr size_t kRootEntries = size_t{1} << kRootBits;

  using Entry = std::atomic<uint64_t>;
  struct Leaf {
    Entry entries[kLeafEntries];
  };

  constexpr Rtree() = default;

  /// Entry for `addr`, or nullptr when its leaf does not exist (and `create` is false) or
  /// cannot be created (metadata OOM). Addresses at or above 2^48 have no entry.
  Entry* entry(uintptr_t addr, bool create) {
    uint64_t key = addr >> config::kLgPage;
    if (JE_UNLIKELY(key >> kKeyBits)) return nullptr;
    Leaf* leaf = root_[key >> kLeafBits].load(std::memory_order_acquire);
    if (JE_UNLIKELY(leaf == nullptr)) {
      if (!create) return nullptr;
      leaf = create_leaf(key >> kLeafBits);
      if (leaf == nullptr) return nullptr;
    }
    return &leaf->entries[key & (kLeafEntries - 1)];
  }

  /// Lock-free read; 0 when there is no entry.
  uint64_t read(uintptr_t addr) {
    Entry* e = entry(addr, false);
    return e == nullptr ? 0 : e->load(std::memory_order_acquire);
  }

  /// fork(): the leaf-creation mutex (one for every Rtree; see rtree.cc).
  void prefork();
  void postfork_parent();
  void postfork_child();

 private:
  Leaf* create_leaf(uint64_t root_index);

  // The only member, all zero: a constinit Rtree (and the Emap around it) then lives in .bss,
  // so the root's pages are anonymous and resident only once touched. A non-zero member (the
  // mutex used to be one) moves the whole 2 MiB into .data, whose file-backed pages the kernel
  // may map in large folios on first read -- ~1 MiB of RSS for a handful of root entries.
  std::atomic<Leaf*> root_[kRootEntries] = {};
};

}  // namespace je
