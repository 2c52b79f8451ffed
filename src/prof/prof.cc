// prof.cc: heap profiling's run-time switches and per-thread data (see prof.h).
#include "prof/prof.h"

#include <cerrno>
#include <cstring>

#include "meta/base.h"
#include "prof/prof_backtrace.h"
#include "prof/prof_ctx.h"
#include "support/compiler.h"
#include "support/mutex.h"

namespace je {

namespace prof_detail {
constinit bool g_enabled = false;
}  // namespace prof_detail

namespace {

constinit ProfOptions g_opts{};
constinit std::atomic<bool> g_active{false};
constinit std::atomic<bool> g_thread_active_init{false};
constinit std::atomic<bool> g_gdump{false};
constinit std::atomic<size_t> g_lg_sample{0};
constinit uint64_t g_interval = 0;

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
         sys_thread_name == o.sys_thread_name;
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
  prof_detail::g_enabled = true;
  return true;
}

bool prof_boot_late() {
  if (!prof_enabled()) return true;
  if (!prof_ctx_boot()) return false;
  prof_backtrace_boot();  // an empty walk is no failure: sampling then records short stacks
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
bool prof_gdump_set(bool v) { return g_gdump.exchange(v, std::memory_order_relaxed); }
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
}

bool prof_mdump(const char*) { return false; }

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

int prof_thread_name_set(const char* name) {
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

void prof_thread_exit() {
  if (t_tdata != nullptr) t_tdata->exited.store(true, std::memory_order_release);
}

void prof_prefork() { g_prof_mtx.prefork(); }
void prof_postfork_parent() { g_prof_mtx.postfork_parent(); }
void prof_postfork_child() { g_prof_mtx.postfork_child(); }

}  // namespace je
