// rtree.cc: leaf creation for the radix tree (the only slow path of the map).
#include "extent/rtree.h"

#include "meta/base.h"

namespace je {

namespace {
// Outside the Rtree so that a constinit tree is all zeros (.bss); see rtree.h.
constinit Mutex g_leaf_mtx{LockRank::kRtree, "rtree"};
}  // namespace

void Rtree::prefork() { g_leaf_mtx.prefork(); }
void Rtree::postfork_parent() { g_leaf_mtx.postfork_parent(); }
void Rtree::postfork_child() { g_leaf_mtx.postfork_child(); }

Rtree::Leaf* Rtree::create_leaf(uint64_t root_index) {
  MutexGuard guard(g_leaf_mtx);
  Leaf* leaf = root_[root_index].load(std::memory_order_relaxed);
  if (leaf != nullptr) return leaf;  // another thread won the race
  Base* b0 = base_global();
  if (b0 == nullptr) return nullptr;
  // Base memory is zero-filled, and a zero entry means "no extent".
  void* mem = b0->alloc(sizeof(Leaf), config::kPage);
  if (mem == nullptr) return nullptr;
  leaf = static_cast<Leaf*>(mem);
  root_[root_index].store(leaf, std::memory_order_release);
  return leaf;
}

}  // namespace je
