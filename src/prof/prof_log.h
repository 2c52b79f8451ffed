// prof_log.h: the allocation log (prof_log, prof.log_start, prof.log_stop).
//
// Purpose: 5.3.0's sampled-allocation log. Between log_start and log_stop, every sampled
// block that is freed (whenever it was allocated) adds one event: allocating and freeing
// thread, both backtraces, both times, usable size. Blocks still live at log_stop are not in
// the log, as in 5.3.0. log_stop writes the session as one compact JSON object:
//   {"info":{"duration":ns,"version":"..","lg_sample_rate":N,"prof_time_resolution":"..",
//    "pid":P},"threads":[{"thr_uid":U,"thr_name":".."},..],"stack_traces":[["0x..",..],..],
//    "allocations":[{"alloc_thread":i,"free_thread":i,"alloc_trace":i,"free_trace":i,
//    "alloc_timestamp":ns,"free_timestamp":ns,"usize":n},..]}
// where thread and trace numbers index "threads" and "stack_traces" (each listed once, in
// order of first use). log_start takes a file name, or none for <prefix>.<pid>.<seq>.json
// (seq counts the log's own default names from 0); opt.prof_log starts a log so named at
// boot. A log still running at exit is written then.
// Answers (prof.log_*'s EFAULT): start fails when a log is running or being written, or the
// name is 4096 bytes or longer; stop fails when no log runs or the file cannot be written.
// Unlike 5.3.0, a failed write leaves the log stopped (5.3.0 stays "dumping" and refuses
// every later start).
// Memory: events, thread entries (with a copy of the name) and trace entries (pointers to the
// immortal contexts) are carved from chunks of base memory that every session reuses; a
// thread's / context's index in the session is kept on it (log_epoch, log_index), so no hash
// table is needed.
// Layer: prof. Callers: prof.cc (boot), prof_tctx.cc (sampled frees), src/ctl (prof.log_*).
// Concurrency: `g_log_mtx` (LockRank::kProf, held alone) guards the state and the session;
// writing the file happens with the state "dumping" and the lock released. The state is also
// read without the lock (relaxed) so that frees cost nothing while no log runs.
// jemalloc mapping: prof_log.c.
#pragma once

#include <cstdint>

namespace je {

struct ProfCtx;
struct ProfTctx;
struct ProfTdata;

/// At boot, after the context table (opt.prof): starts the log when opt.prof_log.
void prof_log_boot(bool start);
/// prof.log_start. False (EFAULT) when refused.
bool prof_log_start(const char* filename);
/// prof.log_stop: writes the log. False (EFAULT) when no log runs or writing failed.
bool prof_log_stop();
/// Whether a log is running (lock-free precheck).
bool prof_log_running();
/// The sampled block `t` is being freed by thread `td` with backtrace `ctx`, at `time_ns`.
void prof_log_free(const ProfTctx* t, ProfTdata* td, ProfCtx* ctx, uint64_t time_ns);

/// Fork protocol.
void prof_log_prefork();
void prof_log_postfork_parent();
void prof_log_postfork_child();

}  // namespace je
