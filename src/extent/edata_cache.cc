// edata_cache.cc: recycled extent descriptors (see edata_cache.h).
#include "extent/edata_cache.h"

#include <new>

namespace je {

Edata* EdataCache::get() {
  {
    MutexGuard guard(mtx_);
    Edata* e = free_.pop_front();
    if (e != nullptr) {
      count_.store(count_.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
      return e;
    }
  }
  void* mem = base_->alloc(sizeof(Edata), alignof(Edata));
  return mem == nullptr ? nullptr : new (mem) Edata();
}

void EdataCache::put(Edata* e) {
  MutexGuard guard(mtx_);
  free_.push_front(e);
  count_.store(count_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

}  // namespace je
