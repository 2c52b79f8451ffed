// prof.h: heap profiling -- the run-time state behind `prof.*` and `thread.prof.*`.
//
// Purpose: the switches jemalloc 5.3.0 keeps for its heap profiler (prof.active,
// prof.thread_active_init, prof.gdump, the dump prefix, the sample rate) and the per-thread
// profiling data (thread.prof.active, thread.prof.name, the thread's id in dumps), the dump
// drivers (prof.dump, interval, high-water and final dumps), the prof.reset epoch and the
// per-size-class sample statistics (prof.stats, opt.prof_stats). Options come once, at boot, in ProfOptions (src/api/init.cc fills it from the option table); afterwards the
// ctl layer reads and changes the run-time values through the functions below.
// Layer: prof, between thread (below: tsd, base memory) and ctl (above: the mallctl handlers).
// Callers: src/api/init (prof_boot), src/api/alloc_path (the reset epoch, high-water dumps at
// the end of an allocation slow path), src/ctl (prof.*, thread.prof.*), prof_tctx (stats,
// system thread names). Below it, the extent layer keeps the high-water mark (extent.h).
// Concurrency: the global switches are atomics (relaxed: a switch only needs to be seen
// eventually by allocating threads). `g_prof_mtx` (LockRank::kProf, taken with no other
// allocator lock held) guards the list of thread data and the dump prefix. A thread's own
// ProfTdata is written only by that thread, except `exited`.
// Invariants: with config::kProf false or opt.prof false nothing here is ever allocated and
// every query answers "off"; prof.stats cells are relaxed atomics (a read may pair a count and
// a sum from either side of a concurrent update); a ProfTdata, once created, lives (in base memory) until the
// process ends, so the name pointer thread.prof.name hands out stays valid.
// jemalloc mapping: prof.c (prof_active_*, prof_thread_active_init_*, prof_gdump_*,
// prof_prefix_set, lg_prof_sample, prof_interval, prof_gdump), prof_data.c (prof_tdata_t,
// thread names), prof_sys.c (prof_sys_thread_name_fetch), prof_stats.c.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "support/config.h"

namespace je {

struct ProfTctx;  // prof_tctx.h

/// The profiling options (opt.prof*), as the option table holds them.
struct ProfOptions {
  bool prof = false;
  const char* prefix = "jeprof";
  bool active = true;
  bool thread_active_init = true;
  size_t lg_sample = 19;
  ssize_t lg_interval = -1;
  bool gdump = false;
  bool final_dump = false;
  bool leak = false;
  bool leak_error = false;
  bool accum = false;
  bool unbias = true;
  bool sys_thread_name = false;
  bool stats = false;            // opt.prof_stats
  ssize_t recent_alloc_max = 0;  // prof_recent_alloc_max (-1: unlimited)
  bool log = false;              // prof_log: start the allocation log at boot
  bool time_high = false;        // prof_time_resolution:high (CLOCK_REALTIME)
  unsigned bt_max = 128;         // prof_bt_max (5.3.1): frames kept, clipped to kProfBtMax

  bool operator==(const ProfOptions&) const;
};

/// Largest lg sample rate (prof.reset clips to it, as lg_prof_sample's parser does).
inline constexpr size_t kProfLgSampleMax = 63;
/// Longest dump prefix / file name kept (5.3.0's PROF_DUMP_FILENAME_LEN - 1).
inline constexpr size_t kProfPathMax = 4095;

/// Once, at boot, after the core: stores the options. True on success.
bool prof_boot(const ProfOptions& o);
/// After initialization, with the allocator usable (opt.prof only): sets up the context table
/// and warms the unwinder up (its first walk may allocate and take the loader lock), so that
/// sampling never meets either for the first time. False on OOM.
bool prof_boot_late();
/// The options prof_boot stored (defaults before it runs).
const ProfOptions& prof_options();
/// opt.prof: whether profiling was switched on at start-up (never with config::kProf false).
inline bool prof_enabled();

// ---- global switches (prof.*) ----------------------------------------------------------------

/// prof.active.
bool prof_active_get();
/// Sets prof.active, returns the previous value.
bool prof_active_set(bool v);
/// prof.thread_active_init: thread.prof.active of threads that start from now on.
bool prof_thread_active_init_get();
bool prof_thread_active_init_set(bool v);
/// prof.gdump.
bool prof_gdump_get();
bool prof_gdump_set(bool v);
/// prof.lg_sample: the current mean sample interval, log2 (0 when opt.prof is false).
size_t prof_lg_sample();
/// prof.interval: bytes between interval dumps, 0 when off.
uint64_t prof_interval();
/// prof.prefix: copies the new dump prefix (cut to kProfPathMax). False for nullptr.
bool prof_prefix_set(const char* prefix);
/// Copies the current dump prefix into buf (NUL-terminated, at most `size` bytes).
void prof_prefix_get(char* buf, size_t size);
/// prof.reset: the new sample rate (clipped to kProfLgSampleMax); every count to zero. The
/// reset epoch advances, so that every thread redraws its distance to the next sample with the
/// new rate on its next allocation slow path; the calling thread's next allocation takes it.
void prof_reset(size_t lg_sample);
/// Counts prof.reset calls: a thread whose armed distance was drawn in an older epoch redraws.
inline uint64_t prof_reset_epoch();
/// prof.dump: writes a heap profile to `filename` (nullptr: <prefix>.<pid>.<seq>.m<n>.heap).
/// True on success; false (prof.dump's EFAULT, 5.3.0's "dump failed") when profiling is off,
/// the prefix is empty, or the file cannot be written.
bool prof_mdump(const char* filename);
/// Interval dump (lg_prof_interval): <prefix>.<pid>.<seq>.i<n>.heap.
bool prof_idump();
/// lg_prof_interval: `bytes` more were allocated (by one thread, in a batch); writes an interval
/// dump each time the process-wide count passes a multiple of prof.interval. No lock held.
void prof_interval_account(uint64_t bytes);
/// experimental.hooks.prof_dump's type (5.3.0's prof_dump_hook_t): called with the file name
/// after each dump (prof.dump, interval, gdump, final) has been written -- or has failed to
/// be -- under the dump mutex, as a reentrant call (its allocations are never sampled).
using ProfDumpHook = void (*)(const char* filename);
ProfDumpHook prof_dump_hook_get();
/// Installs `hook`; nullptr removes it.
void prof_dump_hook_set(ProfDumpHook hook);
/// High-water dump (prof.gdump): <prefix>.<pid>.<seq>.u<n>.heap, when prof.active is on (as
/// in 5.3.0). Called at a safe point (no allocator lock held, not reentrant) by the thread
/// whose extent growth raised the high-water mark (extent::gdump_take_pending).
bool prof_gdump();

// ---- prof.stats (opt.prof_stats) ---------------------------------------------------------------

/// One size class's sampled allocations: the requested bytes summed and their number (raw
/// samples, not unbiased; 5.3.0's prof_stats_t).
struct ProfStats {
  uint64_t req_sum;
  uint64_t count;
};
/// Whether prof.stats.* exist (opt.prof and opt.prof_stats).
bool prof_stats_enabled();
/// Size class `szind`'s live (sampled and not yet freed) and accumulated (ever sampled, since
/// boot) counts.
void prof_stats_get(unsigned szind, ProfStats* live, ProfStats* accum);
/// A sampled allocation of class `szind` asked for `req` bytes / was freed (prof module).
void prof_stats_sampled(unsigned szind, size_t req);
void prof_stats_freed(unsigned szind, size_t req);

// ---- per-thread data (thread.prof.*) ---------------------------------------------------------

/// One thread's profiling data. Lives in base memory for the rest of the process.
struct ProfTdata {
  ProfTdata* next;   // all thread data, newest first (g_prof_mtx)
  uint64_t thr_uid;  // the thread's number in dumps ("t<id>"), in creation order from 0
  bool active;       // thread.prof.active
  std::atomic<bool> exited;
  char* name;       // thread.prof.name; "" until set
  size_t name_cap;  // bytes at name
  // The allocation log's index of this thread in its current session (src/prof/prof_log.cc,
  // under its mutex): valid while log_epoch equals the session's number.
  uint64_t log_epoch;
  size_t log_index;
  // A sampled-allocation record this thread freed, kept for its next sample (prof_tctx.cc):
  // the round trip through the shared free list and its mutex cost each sample two lock
  // acquisitions. Touched only by this thread; handed back to the shared list at its exit.
  ProfTctx* spare_rec;
};

/// The calling thread's data, created on first use; nullptr when profiling is off or memory
/// is short.
ProfTdata* prof_tdata_get();
/// The calling thread's data if it has any yet (never creates it).
ProfTdata* prof_tdata_peek();
/// thread.prof.active of the calling thread (false when profiling is off).
bool prof_thread_active_get();
/// Sets it; false when the thread's data cannot be created.
bool prof_thread_active_set(bool v);
/// thread.prof.name of the calling thread ("" when unset).
const char* prof_thread_name_get();
/// Sets it: 0, EFAULT (nullptr, or a character that is neither printable nor blank), EAGAIN
/// (no memory), or ENOENT under opt.prof_sys_thread_name (the system's name rules, 5.3.0).
int prof_thread_name_set(const char* name);
/// opt.prof_sys_thread_name: the calling thread's name becomes its system name (PR_GET_NAME,
/// no malloc). Called on each of its sampled allocations, so a later pthread_setname_np shows
/// in the next dump, as in 5.3.0. No-op without the option.
void prof_thread_name_refresh();
/// Marks the calling thread's data as belonging to an exited thread.
void prof_thread_exit();

/// Timestamps of the recent-allocation records and the allocation log, in nanoseconds: the
/// coarse monotonic clock (5.3.0's prof_time_resolution:default), or the real-time clock with
/// prof_time_resolution:high.
uint64_t prof_time_ns();

/// Fork protocol for the profiling mutex (src/api/fork.cc).
void prof_prefork();
void prof_postfork_parent();
void prof_postfork_child();

// ---- inline ------------------------------------------------------------------------------------

namespace prof_detail {
extern constinit bool g_enabled __attribute__((visibility("hidden")));
extern constinit std::atomic<uint64_t> g_reset_epoch __attribute__((visibility("hidden")));
}  // namespace prof_detail

inline bool prof_enabled() { return config::kProf && prof_detail::g_enabled; }
// Relaxed: a thread that sees the new epoch late only samples a little longer at the old rate.
inline uint64_t prof_reset_epoch() {
  return prof_detail::g_reset_epoch.load(std::memory_order_relaxed);
}

}  // namespace je
