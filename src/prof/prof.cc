// prof.cc: heap profiling's run-time switches and per-thread data (see prof.h).
#include "prof/prof.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "extent/extent.h"
#include "meta/base.h"
#include "meta/sc.h"
#include "prof/prof_backtrace.h"
#include "prof/prof_ctx.h"
#include "prof/prof_dump.h"
#include "prof/prof_log.h"
#include "prof/prof_recent.h"
#include "prof/prof_tctx.h"
#include "support/malloc_io.h"
#include "support/compiler.h"
#include "support/mutex.h"
#include "thread/tsd.h"
#include "support/reentrancy.h"

namespace je {

namespace prof_detail {
constinit bool g_enabled = false;
constinit std::atomic<uint64_t> g_reset_epoch{0};
}  // namespace prof_detail

namespace {

constinit ProfOptions g_opts{};
constinit std::atomic<bool> g_active{false};
constinit std::atomic<bool> g_thread_active_init{false};
constinit std::atomic<bool> g_gdump{false};
constinit std::atomic<size_t> g_lg_sample{0};
constinit uint64_t g_interval = 0;
// prof_boot_late ran: the context table exists, so dumps may be written.
constinit std::atomic<bool> g_booted_late{false};

// prof.stats: per size class, live and accumulated {requested bytes, samples}. Relaxed atomics:
// a reader may see a pair from two moments of a concurrent update, which a statistic tolerates.
struct StatsCell {
  std::atomic<uint64_t> live_req, live_count, accum_req, accum_count;
};
constinit StatsCell g_stats[sc::kNSizes]{};

// Guards g_tdata_list, g_next_thr_uid and g_prefix.
constinit Mutex g_prof_mtx{LockRank::kProf, "prof"};
constinit ProfTdata* g_tdata_list = nullptr;
constinit uint64_t g_next_thr_uid = 0;
constinit char g_prefix[kProfPathMax + 1] = "";

// The calling thread's data (created on first use, never freed).
constinit thread_local ProfTdata* t_tdata JE_TLS_IE = nullptr;

// A name buffer of at least `need` bytes from base memory (never freed: a name handed out by
// thread.prof.name stays readable).
char* name_buffer(size_t need, size_t* cap) {
  size_t c = 32;
  while (c < need) c *= 2;
  Base* b = base_global();
  char* p = b == nullptr ? nullptr : static_cast<char*>(b->alloc(c, 16));
  if (p != nullptr) *cap = c;
  return p;
}

void prof_at_exit();

void copy_prefix(const char* s) {
  size_t n = strnlen(s, kProfPathMax);
  memcpy(g_prefix, s, n);
  g_prefix[n] = '\0';
}

}  // namespace

bool ProfOptions::operator==(const ProfOptions& o) const {
  return prof == o.prof && strcmp(prefix, o.prefix) == 0 && active == o.active &&
         thread_active_init == o.thread_active_init && lg_sample == o.lg_sample &&
         lg_interval == o.lg_interval && gdump == o.gdump && final_dump == o.final_dump &&
         leak == o.leak && leak_error == o.leak_error && accum == o.accum && unbias == o.unbias &&
         sys_thread_name == o.sys_thread_name && stats == o.stats &&
         recent_alloc_max == o.recent_alloc_max && log == o.log && time_high == o.time_high &&
         bt_max == o.bt_max;
}

bool prof_boot(const ProfOptions& o) {
  if constexpr (!config::kProf) return true;
  g_opts = o;
  copy_prefix(o.prefix);
  g_opts.prefix = g_prefix;  // the option string need not outlive boot
  if (!o.prof) return true;
  // As in 5.3.0, the run-time values exist only when profiling is on (prof.lg_sample and
  // prof.interval read 0 otherwise).
  g_active.store(o.active, std::memory_order_relaxed);
  g_thread_active_init.store(o.thread_active_init, std::memory_order_relaxed);
  g_gdump.store(o.gdump, std::memory_order_relaxed);
  g_lg_sample.store(o.lg_sample, std::memory_order_relaxed);
  g_interval = o.lg_interval >= 0 ? uint64_t{1} << o.lg_interval : 0;
  // The high-water mark counts from the start, as 5.3.0's does whenever opt.prof is on, so a
  // prof.gdump switched on later dumps only beyond the largest footprint seen so far.
  extent::gdump_boot(o.gdump);
  // As in 5.3.0, the backtrace hook reads as the default unwinder only with opt.prof.
  prof_backtrace_hook_set(&prof_backtrace_default_hook);
  prof_backtrace_set_depth(o.bt_max);
  prof_recent_boot(o.recent_alloc_max);
  prof_detail::g_enabled = true;
  return true;
}

bool prof_boot_late() {
  if (!prof_enabled()) return true;
  if (!prof_ctx_boot()) return false;
  prof_backtrace_boot();  // an empty walk is no failure: sampling then records short stacks
  prof_tctx_boot();
  if (g_opts.final_dump) atexit(prof_at_exit);
  g_booted_late.store(true, std::memory_order_release);
  prof_log_boot(g_opts.log);
  return true;
}

const ProfOptions& prof_options() { return g_opts; }

bool prof_active_get() { return prof_enabled() && g_active.load(std::memory_order_relaxed); }
bool prof_active_set(bool v) { return g_active.exchange(v, std::memory_order_relaxed); }
bool prof_thread_active_init_get() {
  return prof_enabled() && g_thread_active_init.load(std::memory_order_relaxed);
}
bool prof_thread_active_init_set(bool v) {
  return g_thread_active_init.exchange(v, std::memory_order_relaxed);
}
bool prof_gdump_get() { return prof_enabled() && g_gdump.load(std::memory_order_relaxed); }
bool prof_gdump_set(bool v) {
  extent::gdump_switch(v);
  return g_gdump.exchange(v, std::memory_order_relaxed);
}
size_t prof_lg_sample() { return g_lg_sample.load(std::memory_order_relaxed); }
uint64_t prof_interval() { return g_interval; }

bool prof_prefix_set(const char* prefix) {
  if (prefix == nullptr) return false;
  MutexGuard g(g_prof_mtx);
  copy_prefix(prefix);
  return true;
}

void prof_prefix_get(char* buf, size_t size) {
  if (size == 0) return;
  MutexGuard g(g_prof_mtx);
  size_t n = strnlen(g_prefix, size - 1);
  memcpy(buf, g_prefix, n);
  buf[n] = '\0';
}

void prof_reset(size_t lg_sample) {
  if (lg_sample > kProfLgSampleMax) lg_sample = kProfLgSampleMax;
  g_lg_sample.store(lg_sample, std::memory_order_relaxed);
  prof_detail::g_reset_epoch.fetch_add(1, std::memory_order_release);
  // The calling thread takes the new rate at its very next allocation: its threshold is due
  // now, so that allocation leaves the fast path and redraws (the epoch is stale). Other
  // threads redraw on their next allocation slow path (a cache miss or a thread event, at
  // least every few tens of KiB).
  if (prof_enabled()) {
    Tsd& tsd = tsd_fetch();
    if (tsd.prof_armed) tsd_set_prof_next_sample(tsd, tsd.allocated);
  }
  // Every count restarts from zero; blocks sampled before stay sampled, and their frees credit
  // what is left (the table clamps at zero).
  if (prof_enabled()) prof_ctx_reset();
}

bool prof_stats_enabled() { return prof_enabled() && g_opts.stats; }

void prof_stats_get(unsigned szind, ProfStats* live, ProfStats* accum) {
  *live = {};
  *accum = {};
  if (szind >= sc::kNSizes) return;
  const StatsCell& c = g_stats[szind];
  live->req_sum = c.live_req.load(std::memory_order_relaxed);
  live->count = c.live_count.load(std::memory_order_relaxed);
  accum->req_sum = c.accum_req.load(std::memory_order_relaxed);
  accum->count = c.accum_count.load(std::memory_order_relaxed);
}

void prof_stats_sampled(unsigned szind, size_t req) {
  if (!g_opts.stats || szind >= sc::kNSizes) return;
  StatsCell& c = g_stats[szind];
  c.live_req.fetch_add(req, std::memory_order_relaxed);
  c.live_count.fetch_add(1, std::memory_order_relaxed);
  c.accum_req.fetch_add(req, std::memory_order_relaxed);
  c.accum_count.fetch_add(1, std::memory_order_relaxed);
}

void prof_stats_freed(unsigned szind, size_t req) {
  if (!g_opts.stats || szind >= sc::kNSizes) return;
  StatsCell& c = g_stats[szind];
  c.live_req.fetch_sub(req, std::memory_order_relaxed);
  c.live_count.fetch_sub(1, std::memory_order_relaxed);
}

namespace {

// Dumps, one at a time (kProfDump, outside kProf). The per-thread totals of the header lines
// are summed into a buffer indexed by thread id, grown from base memory (never freed).
constinit Mutex g_dump_mtx{LockRank::kProfDump, "prof_dump"};
constinit uint64_t g_dump_seq = 0;  // 5.3.0's prof_dump_seq: every automatic name
constinit uint64_t g_mdump_n = 0;   // the m<n> counter of prof.dump
constinit uint64_t g_idump_n = 0;   // i<n>, interval dumps
constinit uint64_t g_udump_n = 0;   // u<n>, gdump
constinit ProfCnt* g_thr_tot = nullptr;
constinit size_t g_thr_cap = 0;
constexpr unsigned kCopyMax = 1024;  // per-thread counters copied per context
constinit ProfThreadCnt g_copy[kCopyMax] = {};

bool cnt_shown(const ProfCnt& c) { return c.curobjs != 0 || (g_opts.accum && c.accumobjs != 0); }

// Counts as written: whole objects (the table keeps them in kProfObjsOne fixed point). A line
// with bytes keeps at least one object.
ProfCnt whole(const ProfCnt& c) {
  auto objs = [](uint64_t o, uint64_t bytes) {
    uint64_t n = (o + kProfObjsOne / 2) / kProfObjsOne;
    return n == 0 && bytes != 0 ? uint64_t{1} : n;
  };
  // The bracketed (accumulated) counts are 0 unless prof_accum, as in 5.3.0.
  if (!g_opts.accum) return ProfCnt{objs(c.curobjs, c.curbytes), c.curbytes, 0, 0};
  return ProfCnt{objs(c.curobjs, c.curbytes), c.curbytes, objs(c.accumobjs, c.accumbytes),
                 c.accumbytes};
}

void cnt_add(ProfCnt* to, const ProfCnt& c) {
  to->curobjs += c.curobjs;
  to->curbytes += c.curbytes;
  to->accumobjs += c.accumobjs;
  to->accumbytes += c.accumbytes;
}

// Whole-process totals and the number of contexts with live samples (g_dump_mtx held).
bool sum_threads(ProfCnt* all, size_t* nctx, uint64_t nthreads) {
  if (nthreads > g_thr_cap) {
    Base* b = base_global();
    size_t cap = g_thr_cap == 0 ? 64 : g_thr_cap;
    while (cap < nthreads) cap *= 2;
    auto* p = b == nullptr ? nullptr : static_cast<ProfCnt*>(b->alloc(cap * sizeof(ProfCnt), 64));
    if (p == nullptr) return false;
    g_thr_tot = p;
    g_thr_cap = cap;
  }
  memset(g_thr_tot, 0, g_thr_cap * sizeof(ProfCnt));
  *all = {};
  *nctx = 0;
  for (ProfCtx* c = prof_ctx_first(); c != nullptr; c = prof_ctx_next(c)) {
    ProfCnt tot;
    unsigned n = prof_ctx_copy(c, &tot, g_copy, kCopyMax);
    if (!cnt_shown(tot)) continue;
    ++*nctx;
    cnt_add(all, tot);
    for (unsigned i = 0; i < n && i < kCopyMax; i++) {
      if (g_copy[i].thr_uid < g_thr_cap) cnt_add(&g_thr_tot[g_copy[i].thr_uid], g_copy[i].cnt);
    }
  }
  return true;
}

// Writes the whole heap_v2 profile to `fd` (g_dump_mtx held). *all gets the totals.
bool write_profile(int fd, ProfCnt* all, size_t* nctx) {
  const uint64_t period = uint64_t{1} << prof_lg_sample();
  const bool unbias = g_opts.unbias;
  uint64_t nthreads;
  {
    MutexGuard g(g_prof_mtx);
    nthreads = g_next_thr_uid;
  }
  if (!sum_threads(all, nctx, nthreads)) return false;
  ProfDumpWriter w(fd);
  prof_dump_header(w, period);
  prof_dump_cnt_line(w, -1, whole(*all), period, unbias, nullptr);
  // Thread lines in id order. The thread list is prepend-only, and a thread's name buffer is
  // never freed, so it is walked without the registry lock once its head is read.
  ProfTdata* head;
  {
    MutexGuard g(g_prof_mtx);
    head = g_tdata_list;
  }
  for (uint64_t id = 0; id < nthreads && id < g_thr_cap; id++) {
    if (!cnt_shown(g_thr_tot[id])) continue;
    const char* name = nullptr;
    for (ProfTdata* td = head; td != nullptr; td = td->next) {
      if (td->thr_uid == id) {
        name = td->name;
        break;
      }
    }
    prof_dump_cnt_line(w, static_cast<int64_t>(id), whole(g_thr_tot[id]), period, unbias, name);
  }
  for (ProfCtx* c = prof_ctx_first(); c != nullptr; c = prof_ctx_next(c)) {
    ProfCnt tot;
    unsigned n = prof_ctx_copy(c, &tot, g_copy, kCopyMax);
    if (!cnt_shown(tot)) continue;
    prof_dump_bt_line(w, c->vec, c->len);
    prof_dump_cnt_line(w, -1, whole(tot), period, unbias, nullptr);
    for (unsigned i = 0; i < n && i < kCopyMax; i++) {
      if (!cnt_shown(g_copy[i].cnt)) continue;
      prof_dump_cnt_line(w, static_cast<int64_t>(g_copy[i].thr_uid), whole(g_copy[i].cnt), period,
                         unbias, nullptr);
    }
  }
  prof_dump_maps(w);
  return w.flush();
}

constinit std::atomic<ProfDumpHook> g_dump_hook{nullptr};

// Tells experimental.hooks.prof_dump's hook, if any, that `path` was dumped (g_dump_mtx held).
void call_dump_hook(const char* path) {
  if (ProfDumpHook h = g_dump_hook.load(std::memory_order_acquire)) {
    ReentrancyGuard guard;  // the hook's own allocations are not sampled
    h(path);
  }
}

// One dump to `path` (g_dump_mtx held). The dump hook hears of it even when it failed, as in
// 5.3.0.
bool dump_to(const char* path, ProfCnt* all, size_t* nctx) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    io_printf("<jemalloc>: failed to open \"%s\"\n", path);
    call_dump_hook(path);
    return false;
  }
  bool ok = write_profile(fd, all, nctx);
  if (close(fd) != 0) ok = false;
  call_dump_hook(path);
  return ok;
}

// An automatic dump of `kind` ('m', 'i', 'u' with counter *n; 'f' without).
bool dump_auto(char kind, uint64_t* n, ProfCnt* all, size_t* nctx) {
  char prefix[kProfPathMax + 1];
  prof_prefix_get(prefix, sizeof(prefix));
  if (prefix[0] == '\0') return false;
  char path[kProfPathMax + 1];
  uint64_t k = n != nullptr ? (*n)++ : 0;
  if (!prof_dump_filename(path, sizeof(path), prefix, getpid(), g_dump_seq++, kind, k)) {
    return false;
  }
  return dump_to(path, all, nctx);
}

// At exit: prof_final's dump and, with prof_leak, the leak summary (5.3.0's prof_fdump).
void prof_at_exit() {
  if (!prof_enabled()) return;
  ProfCnt all{};
  size_t nctx = 0;
  bool dumped;
  {
    MutexGuard g(g_dump_mtx);
    dumped = dump_auto('f', nullptr, &all, &nctx);
  }
  if (!dumped || !g_opts.leak || all.curbytes == 0) return;
  all = whole(all);
  io_printf(
      "<jemalloc>: Leak approximation summary: ~%llu byte%s, ~%llu object%s, >= %zu context%s\n",
      static_cast<unsigned long long>(all.curbytes), all.curbytes != 1 ? "s" : "",
      static_cast<unsigned long long>(all.curobjs), all.curobjs != 1 ? "s" : "", nctx,
      nctx != 1 ? "s" : "");
  io_printf("<jemalloc>: Run jeprof on dump output for leak detail\n");
  if (g_opts.leak_error) {
    io_printf("<jemalloc>: Exiting with error code because memory leaks were detected\n");
    _exit(1);
  }
}

}  // namespace

ProfDumpHook prof_dump_hook_get() { return g_dump_hook.load(std::memory_order_acquire); }
void prof_dump_hook_set(ProfDumpHook hook) { g_dump_hook.store(hook, std::memory_order_release); }

uint64_t prof_time_ns() {
  timespec ts;
  clock_gettime(g_opts.time_high ? CLOCK_REALTIME : CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

bool prof_mdump(const char* filename) {
  if (!prof_enabled()) return false;
  ProfCnt all;
  size_t nctx;
  MutexGuard g(g_dump_mtx);
  if (filename == nullptr) return dump_auto('m', &g_mdump_n, &all, &nctx);
  return dump_to(filename, &all, &nctx);
}

bool prof_idump() {
  if (!prof_enabled()) return false;
  ProfCnt all;
  size_t nctx;
  MutexGuard g(g_dump_mtx);
  return dump_auto('i', &g_idump_n, &all, &nctx);
}

void prof_interval_account(uint64_t bytes) {
  static constinit std::atomic<uint64_t> accum{0};
  const uint64_t interval = g_interval;
  if (interval == 0 || bytes == 0) return;
  uint64_t cur = accum.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  while (cur >= interval) {
    if (accum.compare_exchange_weak(cur, cur - interval, std::memory_order_relaxed)) {
      prof_idump();
      return;
    }
  }
}

bool prof_gdump() {
  // 5.3.0 writes high-water dumps only while prof.active is on.
  if (!prof_enabled() || !g_booted_late.load(std::memory_order_acquire) || !prof_active_get()) {
    return false;
  }
  ProfCnt all;
  size_t nctx;
  MutexGuard g(g_dump_mtx);
  return dump_auto('u', &g_udump_n, &all, &nctx);
}

ProfTdata* prof_tdata_get() {
  if (!prof_enabled()) return nullptr;
  if (JE_LIKELY(t_tdata != nullptr)) return t_tdata;
  Base* b = base_global();
  if (b == nullptr) return nullptr;
  auto* td = static_cast<ProfTdata*>(b->alloc(sizeof(ProfTdata), alignof(ProfTdata)));
  if (td == nullptr) return nullptr;
  size_t cap = 0;
  char* name = name_buffer(1, &cap);
  if (name == nullptr) return nullptr;
  name[0] = '\0';
  td->name = name;
  td->name_cap = cap;
  td->active = prof_thread_active_init_get();
  td->log_epoch = 0;
  td->log_index = 0;
  td->spare_rec = nullptr;
  td->exited.store(false, std::memory_order_relaxed);
  {
    MutexGuard g(g_prof_mtx);
    td->thr_uid = g_next_thr_uid++;
    td->next = g_tdata_list;
    g_tdata_list = td;
  }
  t_tdata = td;
  return td;
}

ProfTdata* prof_tdata_peek() { return prof_enabled() ? t_tdata : nullptr; }

bool prof_thread_active_get() {
  ProfTdata* td = prof_tdata_get();
  return td != nullptr && td->active;
}

bool prof_thread_active_set(bool v) {
  ProfTdata* td = prof_tdata_get();
  if (td == nullptr) return false;
  td->active = v;
  return true;
}

const char* prof_thread_name_get() {
  ProfTdata* td = prof_tdata_get();
  return td != nullptr ? td->name : "";
}

namespace {

int thread_name_set(const char* name) {
  if (name == nullptr) return EFAULT;
  size_t n = 0;
  for (; name[n] != '\0'; n++) {
    // 5.3.0 accepts isgraph() or isblank() characters of the C locale.
    unsigned char c = static_cast<unsigned char>(name[n]);
    if (!((c > 0x20 && c < 0x7f) || c == ' ' || c == '\t')) return EFAULT;
  }
  ProfTdata* td = prof_tdata_get();
  if (td == nullptr) return EAGAIN;
  if (n + 1 > td->name_cap) {
    // A new buffer; the old one stays valid (a reader may still hold it).
    size_t cap = 0;
    char* p = name_buffer(n + 1, &cap);
    if (p == nullptr) return EAGAIN;
    memcpy(p, name, n + 1);
    td->name = p;
    td->name_cap = cap;
    return 0;
  }
  memcpy(td->name, name, n + 1);
  return 0;
}

}  // namespace

int prof_thread_name_set(const char* name) {
  // Under prof_sys_thread_name the system's name rules (5.3.0 answers ENOENT).
  if (g_opts.sys_thread_name) return ENOENT;
  return thread_name_set(name);
}

void prof_thread_name_refresh() {
  if (!g_opts.sys_thread_name) return;
  // PR_GET_NAME fills at most 16 bytes (the kernel's TASK_COMM_LEN) with a terminated name; it
  // needs neither malloc nor a file descriptor. A name with characters thread.prof.name would
  // refuse is not taken, as in 5.3.0.
  char buf[17] = {};
  if (prctl(PR_GET_NAME, buf, 0, 0, 0) != 0) return;
  buf[16] = '\0';
  thread_name_set(buf);
}

void prof_thread_exit() {
  ProfTdata* td = t_tdata;
  if (td == nullptr) return;
  td->exited.store(true, std::memory_order_release);
  // Its spare record back to the shared list (an exited thread keeps none: see
  // prof_tctx_free).
  if (ProfTctx* t = td->spare_rec) {
    td->spare_rec = nullptr;
    prof_tctx_recycle(t);
  }
}

void prof_prefork() {
  // In rank order: kProfRecentDump, kProfDump, then the kProf ones.
  prof_recent_dump_prefork();
  g_dump_mtx.prefork();
  prof_recent_prefork();
  prof_log_prefork();
  g_prof_mtx.prefork();
  prof_tctx_prefork();
}
void prof_postfork_parent() {
  prof_tctx_postfork_parent();
  g_prof_mtx.postfork_parent();
  prof_log_postfork_parent();
  prof_recent_postfork_parent();
  g_dump_mtx.postfork_parent();
  prof_recent_dump_postfork_parent();
}
void prof_postfork_child() {
  prof_tctx_postfork_child();
  g_prof_mtx.postfork_child();
  prof_log_postfork_child();
  prof_recent_postfork_child();
  g_dump_mtx.postfork_child();
  prof_recent_dump_postfork_child();
}

}  // namespace je
