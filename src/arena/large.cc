// large.cc: arena choice for large requests and the in-place resize rules (see large.h).
#include "arena/large.h"

#include "arena/arenas.h"
#include "meta/sz.h"

namespace je {

Arena* large_huge_arena_for(const Arena* bound, size_t huge_key) {
  // The huge arena serves automatic selection only: not a thread bound to a manual arena
  // (5.3.0's arena_choose_maybe_huge).
  if (JE_LIKELY(huge_key < arenas_oversize_threshold())) return nullptr;
  if (bound != nullptr && bound->manual()) return nullptr;
  return arena_huge();
}

void* large_malloc_in(Arena* a, size_t usize, size_t alignment, bool zero, bool automatic) {
  return a->malloc_large(usize, alignment < kCacheline ? kCacheline : alignment, zero,
                         /*may_borrow=*/automatic);
}

namespace {

// Whether a small allocation of class `oldsize` can stay where it is for [size, size+extra].
bool small_stays(size_t oldsize, size_t size, size_t usize_max) {
  bool same_class =
      usize_max <= sc::kSmallMaxClass && sz::size2index(usize_max) == sz::size2index(oldsize);
  return same_class || (size <= oldsize && usize_max >= oldsize);
}

}  // namespace

bool arena_ralloc_no_move(void* ptr, const EmapEntry& ent, size_t size, size_t extra,
                          size_t alignment, bool zero, size_t* newsize) {
  size_t oldsize = sz::index2size(ent.szind);
  *newsize = oldsize;
  if (size > sc::kLargeMaxClass) return false;
  if (sc::kLargeMaxClass - size < extra) extra = sc::kLargeMaxClass - size;
  if (alignment != 0 && (addr_of(ptr) & (alignment - 1)) != 0) return false;
  size_t usize_min = sz::s2u(size);
  size_t usize_max = sz::s2u(size + extra);
  Arena* a = arena_get(ent.edata->arena_ind, false);
  if (oldsize <= sc::kSmallMaxClass && usize_min <= sc::kSmallMaxClass) {
    if (!small_stays(oldsize, size, usize_max)) return false;
    a->decay_tick();
    return true;
  }
  if (oldsize >= sc::kLargeMinClass && usize_max >= sc::kLargeMinClass) {
    Edata* e = ent.edata;
    bool ok = a->ralloc_large_no_move(
        e, usize_min < sc::kLargeMinClass ? sc::kLargeMinClass : usize_min, usize_max, zero);
    *newsize = sz::index2size(e->szind);
    return ok;
  }
  return false;
}

}  // namespace je
