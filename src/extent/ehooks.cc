// ehooks.cc: default extent hooks and the wrapper (see ehooks.h).
#include "extent/ehooks.h"

#include <cstring>

#include "extent/dss.h"
#include "os/pages.h"
#include "support/reentrancy.h"
#include "support/util.h"

namespace je {

namespace {

constinit bool g_thp_always = false;
constinit bool g_thp_never = false;

// The arena's dss precedence orders the two sources: sbrk before mmap ("primary"), after it
// ("secondary"), or never ("disabled"), as 5.3.0's default hooks do.
void* default_alloc(extent_hooks_t*, void* new_addr, size_t size, size_t alignment, bool* zero,
                    bool* commit, unsigned arena_ind) {
  alignment = align_up(alignment, config::kPage);
  DssPrec prec = dss_prec_get(arena_ind);
  if (prec == DssPrec::kPrimary) {
    if (void* d = dss_alloc(new_addr, size, alignment, zero, commit)) return d;
  }
  void* p = pages::map(new_addr, size, alignment, commit);
  if (p == nullptr) {
    if (prec == DssPrec::kSecondary) return dss_alloc(new_addr, size, alignment, zero, commit);
    return nullptr;
  }
  *zero = true;  // fresh anonymous memory
  // opt.thp overrides the system setting for our mappings, where the system leaves room.
  pages::ThpMode sys = pages::system_thp_mode();
  if (g_thp_always && sys == pages::ThpMode::kDefault) {
    pages::huge(p, size);
  } else if (g_thp_never && (sys == pages::ThpMode::kDefault || sys == pages::ThpMode::kAlways)) {
    pages::nohuge(p, size);
  }
  return p;
}

// sbrk memory is never unmapped: declining keeps it as a retained extent, to be reused.
bool default_dalloc(extent_hooks_t*, void* addr, size_t size, bool, unsigned) {
  if (dss_contains(addr)) return true;
  pages::unmap(addr, size);
  return false;
}

void default_destroy(extent_hooks_t*, void* addr, size_t size, bool, unsigned) {
  if (!dss_contains(addr)) pages::unmap(addr, size);
}

bool default_commit(extent_hooks_t*, void* addr, size_t, size_t offset, size_t length, unsigned) {
  return !pages::commit(static_cast<char*>(addr) + offset, length);
}

bool default_decommit(extent_hooks_t*, void* addr, size_t, size_t offset, size_t length, unsigned) {
  return !pages::decommit(static_cast<char*>(addr) + offset, length);
}

bool default_purge_lazy(extent_hooks_t*, void* addr, size_t, size_t offset, size_t length,
                        unsigned) {
  return !pages::purge_lazy(static_cast<char*>(addr) + offset, length);
}

bool default_purge_forced(extent_hooks_t*, void* addr, size_t, size_t offset, size_t length,
                          unsigned) {
  // Callers treat a successful forced purge as "now reads as zeros"; where the kernel's
  // DONTNEED was found not to zero (e.g. some emulators), report failure instead.
  if (!pages::purge_forced_zeroes()) return true;
  return !pages::purge_forced(static_cast<char*>(addr) + offset, length);
}

// Linux mappings can be split and merged freely; an sbrk extent only merges with another one
// (the break's top can touch an mmap region, which must stay apart: one is never unmapped).
bool default_split(extent_hooks_t*, void*, size_t, size_t, size_t, bool, unsigned) { return false; }
bool default_merge(extent_hooks_t*, void* addr_a, size_t, void* addr_b, size_t, bool, unsigned) {
  return !dss_mergeable(addr_a, addr_b);
}

}  // namespace

const extent_hooks_t kDefaultExtentHooks = {
    default_alloc,      default_dalloc,       default_destroy, default_commit, default_decommit,
    default_purge_lazy, default_purge_forced, default_split,   default_merge,
};

void ehooks_set_thp(bool always, bool never) {
  g_thp_always = always;
  g_thp_never = never;
}

// Calls into user hooks run with the thread marked reentrant: a hook that allocates must not
// recurse into this thread's cache or arena locks (see support/reentrancy.h).
class HookScope {
 public:
  explicit HookScope(const extent_hooks_t* h) : user_(h != &kDefaultExtentHooks) {
    if (user_) t_reentrancy++;
  }
  ~HookScope() {
    if (user_) t_reentrancy--;
  }

 private:
  bool user_;
};

void* Ehooks::alloc(void* new_addr, size_t size, size_t alignment, bool* zero, bool* commit) {
  extent_hooks_t* h = get();
  HookScope scope(h);
  return h->alloc(h, new_addr, size, alignment, zero, commit, ind_);
}

bool Ehooks::dalloc(void* addr, size_t size, bool committed) {
  extent_hooks_t* h = get();
  HookScope scope(h);
  return h->dalloc != nullptr && !h->dalloc(h, addr, size, committed, ind_);
}

void Ehooks::destroy(void* addr, size_t size, bool committed) {
  extent_hooks_t* h = get();
  HookScope scope(h);
  if (h->destroy != nullptr) h->destroy(h, addr, size, committed, ind_);
}

bool Ehooks::commit(void* addr, size_t size, size_t offset, size_t length) {
  extent_hooks_t* h = get();
  HookScope scope(h);
  return h->commit != nullptr && !h->commit(h, addr, size, offset, length, ind_);
}

bool Ehooks::decommit(void* addr, size_t size, size_t offset, size_t length) {
  extent_hooks_t* h = get();
  HookScope scope(h);
  return h->decommit != nullptr && !h->decommit(h, addr, size, offset, length, ind_);
}

bool Ehooks::purge_lazy(void* addr, size_t size, size_t offset, size_t length) {
  extent_hooks_t* h = get();
  HookScope scope(h);
  return h->purge_lazy != nullptr && !h->purge_lazy(h, addr, size, offset, length, ind_);
}

bool Ehooks::purge_forced(void* addr, size_t size, size_t offset, size_t length) {
  extent_hooks_t* h = get();
  HookScope scope(h);
  return h->purge_forced != nullptr && !h->purge_forced(h, addr, size, offset, length, ind_);
}

bool Ehooks::split(void* addr, size_t size, size_t size_a, size_t size_b, bool committed) {
  extent_hooks_t* h = get();
  HookScope scope(h);
  return h->split != nullptr && !h->split(h, addr, size, size_a, size_b, committed, ind_);
}

bool Ehooks::merge(void* addr_a, size_t size_a, void* addr_b, size_t size_b, bool committed) {
  extent_hooks_t* h = get();
  HookScope scope(h);
  return h->merge != nullptr && !h->merge(h, addr_a, size_a, addr_b, size_b, committed, ind_);
}

void Ehooks::zero(void* addr, size_t size) {
  // With our hooks, DONTNEED yields demand-zero pages without touching them -- unless THP is
  // forced on, where purging would break huge pages. User hooks' purge cost is unknown: memset.
  if (is_default() && !g_thp_always && pages::purge_forced_zeroes() &&
      pages::purge_forced(addr, size)) {
    return;
  }
  std::memset(addr, 0, size);
}

bool Ehooks::dalloc_will_fail(bool retain) const {
  return is_default() ? retain : get()->dalloc == nullptr;
}

}  // namespace je
