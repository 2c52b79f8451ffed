// mallctl.cc: the control entry points (mallctl, mallctlnametomib, mallctlbymib) and
// malloc_stats_print; the work is done by src/ctl.
#include <cerrno>

#include "api/alloc_path.h"
#include "ctl/ctl.h"
#include "ctl/stats_print.h"
#include "jemalloc/jemalloc.h"

using namespace je;

namespace {

// Every entry point sets the calling thread up on its first call (its arena and automatic
// cache), as 5.3.0's do: a thread that reads statistics before it allocates then sees its
// allocations alone move stats.allocated, not also its cache's slot array (an internal
// allocation, counted as allocated in 5.3.0 too).
JE_ALWAYS_INLINE bool enter() {
  if (JE_UNLIKELY(!api::ensure_init())) return false;
  tsd_fetch();
  return true;
}

}  // namespace

extern "C" {

JE_EXPORT int JE_PUBLIC(mallctl)(const char* name, void* oldp, size_t* oldlenp, void* newp,
                                 size_t newlen) {
  if (JE_UNLIKELY(!enter())) return EAGAIN;
  return ctl_byname(name, oldp, oldlenp, newp, newlen);
}

JE_EXPORT int JE_PUBLIC(mallctlnametomib)(const char* name, size_t* mibp, size_t* miblenp) {
  if (JE_UNLIKELY(!enter())) return EAGAIN;
  return ctl_nametomib(name, mibp, miblenp);
}

JE_EXPORT int JE_PUBLIC(mallctlbymib)(const size_t* mib, size_t miblen, void* oldp, size_t* oldlenp,
                                      void* newp, size_t newlen) {
  if (JE_UNLIKELY(!enter())) return EAGAIN;
  return ctl_bymib(mib, miblen, oldp, oldlenp, newp, newlen);
}

JE_EXPORT void JE_PUBLIC(malloc_stats_print)(void (*write_cb)(void*, const char*), void* cbopaque,
                                             const char* opts) {
  if (JE_UNLIKELY(!enter())) return;
  stats_print(write_cb, cbopaque, opts);
}

}  // extern "C"
