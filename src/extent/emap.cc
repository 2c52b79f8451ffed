// emap.cc: extent map maintenance (see emap.h for the protocol).
#include "extent/emap.h"

#include <atomic>

namespace je {

constinit Emap g_emap;

namespace {
constexpr size_t kPage = config::kPage;
}  // namespace

bool Emap::register_boundary(Edata* e) {
  Rtree::Entry* first = rtree_.entry(e->base_addr(), true);
  Rtree::Entry* last = rtree_.entry(e->last_page_addr(), true);
  if (first == nullptr || last == nullptr) return false;
  uint64_t v = pack(e);
  write(first, v);
  write(last, v);
  return true;
}

bool Emap::register_interior(Edata* e) {
  uint64_t v = pack(e);
  for (uintptr_t a = e->base_addr() + kPage; a < e->last_page_addr(); a += kPage) {
    Rtree::Entry* entry = rtree_.entry(a, true);
    if (entry == nullptr) {
      // Undo what was written so the "no interior entries" invariant holds on failure.
      for (uintptr_t b = e->base_addr() + kPage; b < a; b += kPage)
        write(rtree_.entry(b, false), 0);
      return false;
    }
    write(entry, v);
  }
  return true;
}

void Emap::deregister_boundary(Edata* e) {
  write(rtree_.entry(e->base_addr(), false), 0);
  write(rtree_.entry(e->last_page_addr(), false), 0);
}

void Emap::deregister_interior(Edata* e) {
  for (uintptr_t a = e->base_addr() + kPage; a < e->last_page_addr(); a += kPage) {
    write(rtree_.entry(a, false), 0);
  }
}

void Emap::remap(Edata* e, szind_t szind, bool slab) {
  e->szind = static_cast<uint8_t>(szind);
  e->slab = slab;
  uint64_t v = pack(e);
  write(rtree_.entry(e->base_addr(), false), v);
  write(rtree_.entry(e->last_page_addr(), false), v);
}

void Emap::update_state(Edata* e, ExtentState state) {
  e->state = state;
  uint64_t v = pack(e);
  write(rtree_.entry(e->base_addr(), false), v);
  if (e->size > kPage) write(rtree_.entry(e->last_page_addr(), false), v);
}

Edata* Emap::try_acquire_neighbor(Edata* e, ExtentState expected, bool forward, bool expanding) {
  uintptr_t base = e->base_addr();
  if (!forward && base < kPage) return nullptr;
  uintptr_t probe = forward ? e->past_addr() : base - kPage;
  EmapEntry n = unpack(rtree_.read(probe));
  if (n.edata == nullptr) return nullptr;
  // Head boundaries separate regions obtained from the OS: never merge across one. Forward,
  // the neighbour must not start a region; backward, we must not.
  if (forward ? n.is_head : e->is_head) return nullptr;
  // Only the entry is safe to read until its state proves the neighbour is guarded by the lock
  // we hold (the caller's ecache).
  if (n.state != expected) return nullptr;
  Edata* nb = n.edata;
  // Atomic: a neighbour another arena holds may be lent and adopted meanwhile (Pac::adopt
  // changes its index under the borrower's ecache mutex, not necessarily ours).
  if (std::atomic_ref<uint16_t>(nb->arena_ind).load(std::memory_order_relaxed) != e->arena_ind) {
    return nullptr;
  }
  if (!expanding && nb->committed != e->committed) return nullptr;
  update_state(nb, ExtentState::kMerging);
  return nb;
}

bool Emap::split_prepare(SplitPlan* plan, Edata* lead, size_t size_a, Edata* trail, size_t size_b) {
  uintptr_t base = lead->base_addr();
  plan->lead_last = rtree_.entry(base + size_a - kPage, true);
  plan->trail_first = rtree_.entry(base + size_a, true);
  plan->trail_last = rtree_.entry(base + size_a + size_b - kPage, true);
  (void)trail;
  return plan->lead_last != nullptr && plan->trail_first != nullptr && plan->trail_last != nullptr;
}

void Emap::split_commit(const SplitPlan& plan, Edata* lead, Edata* trail) {
  uint64_t vt = pack(trail);
  write(plan.trail_first, vt);
  write(plan.trail_last, vt);
  write(plan.lead_last, pack(lead));
}

void Emap::merge_commit(Edata* lead, Edata* trail) {
  // The lead's old last page and the trail's first page become interior (unless they are also
  // the merged extent's first or last page).
  if (lead->size > kPage) write(rtree_.entry(lead->last_page_addr(), false), 0);
  if (trail->size > kPage) write(rtree_.entry(trail->base_addr(), false), 0);
  write(rtree_.entry(trail->last_page_addr(), false), pack(lead));
}

}  // namespace je
