// sec.cc: the small extent cache (see sec.h).
#include "extent/sec.h"

#include <atomic>

#include "extent/hold.h"
#include "support/config.h"

namespace je {

namespace {
constexpr size_t kPage = config::kPage;

// `cached` is written under the owning cache's mutex but read by Pac::expand under another
// arena's (a neighbour may belong to any arena): relaxed atomic access keeps that read defined.
void set_cached(Edata* e, bool v) {
  std::atomic_ref<bool>(e->cached).store(v, std::memory_order_relaxed);
}
bool is_cached(Edata* e) {
  return std::atomic_ref<bool>(e->cached).load(std::memory_order_relaxed);
}
}  // namespace

void Sec::init(size_t max_bytes) { max_bytes_ = max_bytes; }

Edata* Sec::take(size_t size, size_t alignment) {
  const size_t npages = size / kPage;
  if (npages == 0 || npages > kMaxPages || npages_.load(std::memory_order_relaxed) == 0) {
    return nullptr;
  }
  EdataList& l = lists_[npages - 1];
  MutexGuard g(mtx_);
  // Page-aligned requests take the first extent. A stricter alignment looks at a few only:
  // the list may hold thousands, and the ecache's aligned search serves such requests anyway.
  unsigned looked = 0;
  for (Edata* e = l.front(); e != nullptr && looked < kMaxAlignedScan;
       e = EdataList::next(e), looked++) {
    if ((reinterpret_cast<uintptr_t>(e->addr) & (alignment - 1)) != 0) continue;
    unlink_locked(l, e);
    return e;
  }
  return nullptr;
}

unsigned Sec::take_batch(size_t size, Edata** out, unsigned k) {
  const size_t npages = size / kPage;
  if (npages == 0 || npages > kMaxPages || npages_.load(std::memory_order_relaxed) == 0) return 0;
  EdataList& l = lists_[npages - 1];
  MutexGuard g(mtx_);
  unsigned got = 0;
  while (got < k) {
    Edata* e = l.front();
    if (e == nullptr) break;
    unlink_locked(l, e);
    out[got++] = e;
  }
  return got;
}

void Sec::put_batch(Edata* const* es, unsigned n, EdataList* evicted) {
  MutexGuard g(mtx_);
  for (unsigned i = 0; i < n; i++) link_locked(es[i]);
  trim_locked(evicted);
}

void Sec::link_locked(Edata* e) {
  set_cached(e, true);
  lists_[e->size / kPage - 1].push_front(e);
  set_bytes_locked(bytes_ + e->size);
}

void Sec::set_bytes_locked(size_t bytes) {
  kept::cache_publish(bytes_, bytes, kept::kLgGranule);
  bytes_ = bytes;
  npages_.store(bytes_ / kPage, std::memory_order_relaxed);
}

void Sec::trim_locked(EdataList* evicted) {
  // The caches of all arenas and threads together over their process-wide room (kept::): this
  // one gives up half of what it has, as when it overflows its own capacity.
  const bool crowded = kept::cache_room() == 0;
  if (bytes_ <= max_bytes_ && !crowded) return;
  // Over capacity: give up whole lists, round robin, down to half the capacity, so that an
  // overflowing burst pays one flush per half capacity rather than one per free.
  const size_t target = (crowded && bytes_ < max_bytes_ ? bytes_ : max_bytes_) / 2;
  for (size_t n = 0; n < kMaxPages && bytes_ > target; n++) {
    drain_list_locked(next_evict_, evicted);
    next_evict_ = (next_evict_ + 1) % kMaxPages;
  }
}

bool Sec::remove(Edata* e, unsigned arena_ind) {
  MutexGuard g(mtx_);
  if (!is_cached(e) || e->arena_ind != arena_ind) return false;
  unlink_locked(lists_[e->size / kPage - 1], e);
  return true;
}

void Sec::flush(EdataList* out, FlushOrder order) {
  if (npages_.load(std::memory_order_relaxed) == 0) return;
  MutexGuard g(mtx_);
  // Counted in transit before npages_ drops (the read-modify-write orders the stores below
  // after it): a reader of npages() and then in_transit() sees every page at least once.
  in_transit_.fetch_add(bytes_ / kPage, std::memory_order_seq_cst);
  if (order == FlushOrder::kSmallFirst) {
    for (size_t i = 0; i < kMaxPages; i++) drain_list_locked(i, out);
  } else {
    for (size_t i = kMaxPages; i-- > 0;) drain_list_locked(i, out);
  }
}

void Sec::unlink_locked(EdataList& l, Edata* e) {
  l.remove(e);
  set_cached(e, false);
  set_bytes_locked(bytes_ - e->size);
}

void Sec::drain_list_locked(size_t i, EdataList* out) {
  EdataList& l = lists_[i];
  while (Edata* e = l.front()) {
    unlink_locked(l, e);
    out->push_back(e);
  }
}

}  // namespace je
