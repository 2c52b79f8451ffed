// ctl_prof.cc: the `prof.*`, `thread.prof.*`, `experimental.hooks.prof_*` and
// `experimental.prof_recent.*` mallctl handlers.
//
// Each handler follows jemalloc 5.3.0's checks in its order, so that error codes match for
// every combination of arguments (verified against Debian's profiling build): with opt.prof
// false a profiling build still answers the reads (false / 0) but refuses a write with ENOENT,
// except prof.active:false, which is accepted as a no-op; prof.dump, prof.prefix, prof.reset
// and thread.prof.name answer ENOENT outright. A --disable-prof build answers ENOENT everywhere.
// Layer: ctl (internal to src/ctl). Concurrency: the prof module's own (src/prof/prof.h);
// prof.prefix holds the ctl mutex as 5.3.0 does.
#include <cerrno>

#include "ctl/ctl_handlers.h"
#include "meta/sc.h"
#include "prof/prof.h"
#include "prof/prof_backtrace.h"
#include "prof/prof_log.h"
#include "prof/prof_recent.h"
#include "support/config.h"

namespace je::ctl {

int node_prof_thread_active_init(Req& r) {
  if constexpr (!config::kProf) return ENOENT;
  bool old;
  if (r.writing()) {
    if (!prof_enabled()) return ENOENT;
    bool v;
    if (r.newlen != sizeof(bool)) return EINVAL;
    if (int e = write_in(r, &v)) return e;
    old = prof_thread_active_init_set(v);
  } else {
    old = prof_thread_active_init_get();
  }
  return read_out(r, old);
}

int node_prof_active(Req& r) {
  if constexpr (!config::kProf) return ENOENT;
  bool old;
  if (r.writing()) {
    if (r.newlen != sizeof(bool)) return EINVAL;
    bool v;
    if (int e = write_in(r, &v)) return e;
    if (!prof_enabled()) {
      if (v) return ENOENT;
      old = false;  // already off
    } else {
      old = prof_active_set(v);
    }
  } else {
    old = prof_active_get();
  }
  return read_out(r, old);
}

int node_prof_dump(Req& r) {
  if constexpr (!config::kProf) return ENOENT;
  if (!prof_enabled()) return ENOENT;
  if (int e = writeonly(r)) return e;
  const char* filename = nullptr;
  if (int e = write_in(r, &filename)) return e;
  return prof_mdump(filename) ? 0 : EFAULT;
}

int node_prof_gdump(Req& r) {
  if constexpr (!config::kProf) return ENOENT;
  bool old;
  if (r.writing()) {
    if (!prof_enabled()) return ENOENT;
    if (r.newlen != sizeof(bool)) return EINVAL;
    bool v;
    if (int e = write_in(r, &v)) return e;
    old = prof_gdump_set(v);
  } else {
    old = prof_gdump_get();
  }
  return read_out(r, old);
}

int node_prof_prefix(Req& r) {
  if constexpr (!config::kProf) return ENOENT;
  if (!prof_enabled()) return ENOENT;
  MutexGuard g(g_ctl_mtx);
  if (int e = writeonly(r)) return e;
  const char* prefix = nullptr;
  if (int e = write_in(r, &prefix)) return e;
  // 5.3.0 dereferences a NULL prefix; we refuse it as a failed set.
  return prof_prefix_set(prefix) ? 0 : EFAULT;
}

int node_prof_reset(Req& r) {
  if constexpr (!config::kProf) return ENOENT;
  if (!prof_enabled()) return ENOENT;
  if (int e = writeonly(r)) return e;
  size_t lg = prof_lg_sample();
  if (int e = write_in(r, &lg)) return e;
  if (lg > kProfLgSampleMax) lg = kProfLgSampleMax;
  prof_reset(lg);
  return 0;
}

int node_prof_interval(Req& r) {
  if constexpr (!config::kProf) return ENOENT;
  if (int e = readonly(r)) return e;
  uint64_t v = prof_interval();
  return read_out(r, v);
}

int node_prof_lg_sample(Req& r) {
  if constexpr (!config::kProf) return ENOENT;
  if (int e = readonly(r)) return e;
  size_t v = prof_lg_sample();
  return read_out(r, v);
}

int node_thread_prof_name(Req& r) {
  if constexpr (!config::kProf) return ENOENT;
  if (!prof_enabled()) return ENOENT;
  if (int e = read_xor_write(r)) return e;
  if (r.writing()) {
    const char* name;
    if (r.newlen != sizeof(const char*)) return EINVAL;
    if (int e = write_in(r, &name)) return e;
    return prof_thread_name_set(name);
  }
  const char* name = prof_thread_name_get();
  return read_out(r, name);
}

int node_thread_prof_active(Req& r) {
  if constexpr (!config::kProf) return ENOENT;
  bool old = prof_enabled() ? prof_thread_active_get() : false;
  if (r.writing()) {
    if (!prof_enabled()) return ENOENT;
    bool v;
    if (r.newlen != sizeof(bool)) return EINVAL;
    if (int e = write_in(r, &v)) return e;
    if (!prof_thread_active_set(v)) return EAGAIN;
  }
  return read_out(r, old);
}

}  // namespace je::ctl

// ---- prof.stats.{bins,lextents}.<i>.{live,accum} -----------------------------------------------
// They exist only under opt.prof and opt.prof_stats (5.3.0 answers ENOENT for every name,
// mallctlnametomib included, otherwise). Read-only; the value is ProfStats, 5.3.0's
// prof_stats_t {req_sum, count}.

namespace je::ctl {

bool index_prof_stats_bin(const size_t*, size_t, size_t i) {
  return config::kProf && prof_stats_enabled() && i < sc::kNBins;
}
bool index_prof_stats_lextent(const size_t*, size_t, size_t i) {
  return config::kProf && prof_stats_enabled() && i < sc::kNLExtents;
}

namespace {

int prof_stats_read(Req& r, unsigned szind, bool accum) {
  if constexpr (!config::kProf) return ENOENT;
  if (int e = readonly(r)) return e;
  ProfStats live, acc;
  prof_stats_get(szind, &live, &acc);
  return read_out(r, accum ? acc : live);
}

}  // namespace

int node_prof_stats_bins_live(Req& r) {
  return prof_stats_read(r, static_cast<unsigned>(r.mib[3]), false);
}
int node_prof_stats_bins_accum(Req& r) {
  return prof_stats_read(r, static_cast<unsigned>(r.mib[3]), true);
}
int node_prof_stats_lextents_live(Req& r) {
  return prof_stats_read(r, static_cast<unsigned>(sc::kNBins + r.mib[3]), false);
}
int node_prof_stats_lextents_accum(Req& r) {
  return prof_stats_read(r, static_cast<unsigned>(sc::kNBins + r.mib[3]), true);
}

}  // namespace je::ctl

// ---- experimental.hooks.prof_*, experimental.prof_recent.*, prof.log_* ------------------------
// The hooks answer reads in every build (nullptr when opt.prof is off, as 5.3.0's handlers,
// which do not depend on config.prof); writing needs opt.prof.

namespace je::ctl {

namespace {

// One hook name: the installed hook read out (nullptr without opt.prof), a new one written with
// opt.prof only; neither old nor new value is EINVAL. `null_ok`: whether writing nullptr
// removes the hook (prof_dump) or is refused with EINVAL (prof_backtrace).
template <class Hook>
int hook_rw(Req& r, Hook (*get)(), void (*set)(Hook), bool null_ok) {
  if (r.oldp == nullptr && r.newp == nullptr) return EINVAL;
  if (r.oldp != nullptr) {
    Hook old = nullptr;
    if constexpr (config::kProf) old = get();
    if (int e = read_out(r, old)) return e;
  }
  if (r.newp != nullptr) {
    if (!prof_enabled()) return ENOENT;
    Hook hook = nullptr;
    if (int e = write_in(r, &hook)) return e;
    if (hook == nullptr && !null_ok) return EINVAL;
    set(hook);
  }
  return 0;
}

}  // namespace

int node_experimental_hooks_prof_backtrace(Req& r) {
  return hook_rw(r, &prof_backtrace_hook_get, &prof_backtrace_hook_set, /*null_ok=*/false);
}

int node_experimental_hooks_prof_dump(Req& r) {
  return hook_rw(r, &prof_dump_hook_get, &prof_dump_hook_set, /*null_ok=*/true);
}

int node_experimental_prof_recent_alloc_max(Req& r) {
  if constexpr (!config::kProf) return ENOENT;
  if (!prof_enabled()) return ENOENT;
  ssize_t old;
  if (r.newp != nullptr) {
    if (r.newlen != sizeof(ssize_t)) return EINVAL;
    ssize_t max;
    if (int e = write_in(r, &max)) return e;
    if (max < -1) return EINVAL;
    // Set before the old value is handed out: a wrong *oldlenp still changes the limit and
    // then answers EINVAL, as in 5.3.0.
    old = prof_recent_max_set(max);
  } else {
    old = prof_recent_max_get();
  }
  return read_out(r, old);
}

int node_experimental_prof_recent_alloc_dump(Req& r) {
  if constexpr (!config::kProf) return ENOENT;
  if (!prof_enabled()) return ENOENT;
  if (int e = writeonly(r)) return e;
  // 5.3.0's write_cb_packet_t: the callback, then its opaque argument.
  struct Packet {
    ProfWriteCb cb;
    void* opaque;
  } packet;
  static_assert(sizeof(Packet) == 2 * sizeof(void*));
  if (int e = assured_write(r, &packet)) return e;
  prof_recent_dump(packet.cb, packet.opaque);
  return 0;
}

int node_prof_log_start(Req& r) {
  if constexpr (!config::kProf) return ENOENT;
  if (!prof_enabled()) return ENOENT;
  if (int e = writeonly(r)) return e;
  const char* filename = nullptr;
  if (int e = write_in(r, &filename)) return e;
  return prof_log_start(filename) ? 0 : EFAULT;
}

int node_prof_log_stop(Req&) {
  if constexpr (!config::kProf) return ENOENT;
  if (!prof_enabled()) return ENOENT;
  // 5.3.0 checks no argument here.
  return prof_log_stop() ? 0 : EFAULT;
}

}  // namespace je::ctl
