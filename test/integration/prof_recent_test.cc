// prof_recent_test: the profiler's hooks, recent-allocation records and allocation log
// (experimental.hooks.prof_backtrace / prof_dump, experimental.prof_recent.alloc_max /
// alloc_dump, opt.prof_recent_alloc_max, prof.log_start / log_stop, prof_log), on ours and on
// Debian's 5.3.0 through the same expectations.
//   - names: a child under prof:false and one under prof:true try every read/write rule of
//     these names; each answer (error code, value) must be the one 5.3.0 gives.
//   - recent: a child at lg_prof_sample:0 (every allocation sampled) allocates known sizes
//     from known functions in the main thread and in a named thread, frees some of them from
//     other functions and threads, and dumps the records (alloc_dump) to files, shrinking the
//     limit between dumps. data/prof_json_check.py parses each file and checks sizes, usable
//     sizes, released flags, threads (uid, name), times, and that each trace holds the call
//     site of the function that allocated (or freed) the block.
//   - log: the same for prof.log_start(path) / log_stop and for a log started by prof_log:true
//     and written at exit under the default name <prefix>.<pid>.0.json; a block still live at
//     log_stop is not in the log.
//   - hooks: a backtrace hook's frames replace the unwinder's in the records; the dump hook
//     hears of every prof.dump, also a failed one.
// Known differences from 5.3.0 (the checks avoid them): 5.3.0 keeps its own frames at the top
// of each trace (ours drops them, as in dumps), and does not record a free made by a thread
// whose first allocator call it is. Thread names are JSON-escaped here, raw in 5.3.0.
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include "child.h"

using namespace jt::subproc;

namespace {

// ---- child: the names' rules --------------------------------------------------------------

using BtHook = void (*)(void**, unsigned*, unsigned);
using DumpHook = void (*)(const char*);
using WriteCb = void (*)(void*, const char*);
struct WritePacket {
  WriteCb cb;
  void* opaque;
};

void fake_bt(void** vec, unsigned* len, unsigned max_len) {
  static void* const kFrames[] = {reinterpret_cast<void*>(0x1234), reinterpret_cast<void*>(0x5678)};
  unsigned n = max_len < 2 ? max_len : 2;
  for (unsigned i = 0; i < n; i++) vec[i] = kFrames[i];
  *len = n;
}

int g_dump_hook_calls = 0;
char g_dump_hook_last[256];
void dump_hook(const char* filename) {
  g_dump_hook_calls++;
  std::snprintf(g_dump_hook_last, sizeof(g_dump_hook_last), "%s", filename);
}

void discard(void*, const char*) {}

void mode_names(const char*) {
  void* h = reinterpret_cast<void*>(1);
  size_t sz = sizeof(h);
  emit("bt_read", mallctl("experimental.hooks.prof_backtrace", &h, &sz, nullptr, 0));
  emit("bt_read_nonnull", h != nullptr);
  h = reinterpret_cast<void*>(1);
  sz = sizeof(h);
  emit("dump_read", mallctl("experimental.hooks.prof_dump", &h, &sz, nullptr, 0));
  emit("dump_read_nonnull", h != nullptr);
  emit("bt_none", mallctl("experimental.hooks.prof_backtrace", nullptr, nullptr, nullptr, 0));
  emit("dump_none", mallctl("experimental.hooks.prof_dump", nullptr, nullptr, nullptr, 0));
  sz = 1;
  emit("bt_read_short", mallctl("experimental.hooks.prof_backtrace", &h, &sz, nullptr, 0));
  void* nul = nullptr;
  emit("bt_write_null",
       mallctl("experimental.hooks.prof_backtrace", nullptr, nullptr, &nul, sizeof(nul)));
  emit("bt_write_short", mallctl("experimental.hooks.prof_backtrace", nullptr, nullptr, &nul, 4));
  emit("dump_write_null",
       mallctl("experimental.hooks.prof_dump", nullptr, nullptr, &nul, sizeof(nul)));

  ssize_t m = 99;
  sz = sizeof(m);
  emit("opt_recent", mallctl("opt.prof_recent_alloc_max", &m, &sz, nullptr, 0));
  emit("opt_recent_value", m);
  emit("opt_recent_write", mallctl("opt.prof_recent_alloc_max", nullptr, nullptr, &m, sizeof(m)));
  bool b = false;
  sz = sizeof(b);
  emit("opt_prof_log", mallctl("opt.prof_log", &b, &sz, nullptr, 0));
  m = 99;
  sz = sizeof(m);
  emit("max_read", mallctl("experimental.prof_recent.alloc_max", &m, &sz, nullptr, 0));
  emit("max_value", m);
  ssize_t bad = -2;
  emit("max_write_m2",
       mallctl("experimental.prof_recent.alloc_max", nullptr, nullptr, &bad, sizeof(bad)));
  int small = 3;
  emit("max_write_int",
       mallctl("experimental.prof_recent.alloc_max", nullptr, nullptr, &small, sizeof(small)));
  // A wrong *oldlenp with a new value: 5.3.0 sets the limit, then answers EINVAL.
  ssize_t seven = 7;
  sz = 1;
  emit("max_write_short_old",
       mallctl("experimental.prof_recent.alloc_max", &m, &sz, &seven, sizeof(seven)));
  m = 0;
  sz = sizeof(m);
  ssize_t minus1 = -1;
  emit("max_write_m1",
       mallctl("experimental.prof_recent.alloc_max", &m, &sz, &minus1, sizeof(minus1)));
  emit("max_old", m);
  sz = sizeof(m);
  mallctl("experimental.prof_recent.alloc_max", &m, &sz, nullptr, 0);
  emit("max_now", m);
  WritePacket pk{discard, nullptr};
  sz = sizeof(pk);
  emit("dump_with_old", mallctl("experimental.prof_recent.alloc_dump", &pk, &sz, &pk, sizeof(pk)));
  emit("dump_no_new", mallctl("experimental.prof_recent.alloc_dump", nullptr, nullptr, nullptr, 0));
  emit("dump_short",
       mallctl("experimental.prof_recent.alloc_dump", nullptr, nullptr, &pk, sizeof(void*)));
  emit("dump_ok",
       mallctl("experimental.prof_recent.alloc_dump", nullptr, nullptr, &pk, sizeof(pk)));

  emit("stop_idle", mallctl("prof.log_stop", nullptr, nullptr, nullptr, 0));
  const char* path = "/nonexistent-dir/prof_recent_test.json";
  sz = sizeof(path);
  emit("start_with_old", mallctl("prof.log_start", &path, &sz, &path, sizeof(path)));
  emit("start_short", mallctl("prof.log_start", nullptr, nullptr, &path, 4));
  emit("start", mallctl("prof.log_start", nullptr, nullptr, &path, sizeof(path)));
  emit("start_again", mallctl("prof.log_start", nullptr, nullptr, &path, sizeof(path)));
  // The directory does not exist: the log cannot be written.
  emit("stop_unwritable", mallctl("prof.log_stop", nullptr, nullptr, nullptr, 0));
}

// ---- child: recent records and the log ------------------------------------------------------

// The return address of this call: an address inside the calling function, just before its
// allocator calls. noipa: GCC would otherwise find it "const" and merge two calls into one.
__attribute__((noipa)) uintptr_t here() {
  return reinterpret_cast<uintptr_t>(__builtin_return_address(0));
}

// Keeps the allocator call before it out of tail position, so that the calling function's own
// frame stays in the backtrace.
#define NO_TAIL_CALL() __asm__ volatile("" ::: "memory")

void* g_p[8];

// Each function reports its call site (an address inside it) once.
__attribute__((noinline)) void alloc_main() {
  emit("site.alloc_main", static_cast<long long>(here()));
  g_p[0] = malloc(1000);
  g_p[1] = malloc(70000);
  g_p[2] = malloc(100);
}

__attribute__((noinline)) void free_main(void* p) {
  emit("site.free_main", static_cast<long long>(here()));
  free(p);
  NO_TAIL_CALL();
}

uintptr_t g_thread_sites[2];

__attribute__((noinline)) void free_in_thread(void* p) {
  g_thread_sites[0] = here();
  free(p);
  NO_TAIL_CALL();
}

__attribute__((noinline)) void* alloc_in_thread() {
  g_thread_sites[1] = here();
  void* p = malloc(5000);
  NO_TAIL_CALL();
  return p;
}

void* worker(void* arg) {
  // Named first: the thread's profiling data exists before its free (5.3.0 records no free by
  // a thread whose first allocator call it is).
  const char* name = static_cast<const char*>(arg);
  mallctl("thread.prof.name", nullptr, nullptr, &name, sizeof(name));
  free_in_thread(g_p[1]);
  return alloc_in_thread();
}

// Writes through a file descriptor: stdio would allocate (and so add records) around dumps.
void fd_write(void* opaque, const char* s) {
  int fd = *static_cast<int*>(opaque);
  for (size_t n = std::strlen(s); n > 0;) {
    ssize_t w = write(fd, s, n);
    if (w <= 0) return;
    s += w;
    n -= static_cast<size_t>(w);
  }
}

// Dumps the recent records to <stem>.<n>.json; returns mallctl's answer.
int dump_recent(const char* stem, int n) {
  char path[512];
  std::snprintf(path, sizeof(path), "%s.%d.json", stem, n);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return -1;
  WritePacket pk{fd_write, &fd};
  int r = mallctl("experimental.prof_recent.alloc_dump", nullptr, nullptr, &pk, sizeof(pk));
  close(fd);
  return r;
}

void emit_thread_sites() {
  // The worker's functions are found through the sites recorded around their calls.
  emit("site.free_in_thread", static_cast<long long>(g_thread_sites[0]));
  emit("site.alloc_in_thread", static_cast<long long>(g_thread_sites[1]));
}

void mode_recent(const char* stem) {
  ssize_t m = 0;
  size_t sz = sizeof(m);
  mallctl("opt.prof_recent_alloc_max", &m, &sz, nullptr, 0);
  emit("opt_recent", m);
  ssize_t eight = 8;
  sz = sizeof(m);
  emit("set_rc", mallctl("experimental.prof_recent.alloc_max", &m, &sz, &eight, sizeof(eight)));
  emit("set_old", m);
  // stdout is flushed now and then (its buffer is static): nothing of ours allocates below but
  // the calls under test.
  std::fflush(stdout);
  alloc_main();
  free_main(g_p[0]);
  pthread_t t;
  pthread_create(&t, nullptr, worker, const_cast<char*>("rc_worker"));
  void* tp = nullptr;
  pthread_join(t, &tp);
  emit_thread_sites();
  emit("dump1", dump_recent(stem, 1));
  // Shrink: the two newest records stay.
  ssize_t two = 2;
  sz = sizeof(m);
  emit("shrink_rc", mallctl("experimental.prof_recent.alloc_max", &m, &sz, &two, sizeof(two)));
  emit("shrink_old", m);
  emit("dump2", dump_recent(stem, 2));
  ssize_t zero = 0;
  mallctl("experimental.prof_recent.alloc_max", nullptr, nullptr, &zero, sizeof(zero));
  emit("dump3", dump_recent(stem, 3));
  free(tp);
  free(g_p[2]);
}

void mode_hooks(const char* stem) {
  ssize_t eight = 8;
  mallctl("experimental.prof_recent.alloc_max", nullptr, nullptr, &eight, sizeof(eight));
  BtHook old = nullptr;
  size_t sz = sizeof(old);
  BtHook mine = fake_bt;
  emit("bt_set", mallctl("experimental.hooks.prof_backtrace", &old, &sz, &mine, sizeof(mine)));
  emit("bt_old_nonnull", old != nullptr);
  BtHook now = nullptr;
  sz = sizeof(now);
  mallctl("experimental.hooks.prof_backtrace", &now, &sz, nullptr, 0);
  emit("bt_now_is_mine", now == mine);
  DumpHook dh = dump_hook;
  emit("dump_set", mallctl("experimental.hooks.prof_dump", nullptr, nullptr, &dh, sizeof(dh)));
  std::fflush(stdout);
  void* p = malloc(3000);
  free(p);
  emit("dump1", dump_recent(stem, 1));
  // The old hook (our unwinder / 5.3.0's) back in place: real frames again.
  emit("bt_restore",
       mallctl("experimental.hooks.prof_backtrace", nullptr, nullptr, &old, sizeof(old)));
  char path[512];
  std::snprintf(path, sizeof(path), "%s.heap", stem);
  const char* pp = path;
  emit("pdump", mallctl("prof.dump", nullptr, nullptr, &pp, sizeof(pp)));
  emit("hook_calls", g_dump_hook_calls);
  emit("hook_named_it", std::strcmp(g_dump_hook_last, path) == 0);
  unlink(path);
  const char* bad = "/nonexistent-dir/prof_recent_test.heap";
  emit("pdump_bad", mallctl("prof.dump", nullptr, nullptr, &bad, sizeof(bad)));
  emit("hook_calls_after_bad", g_dump_hook_calls);
  emit("hook_named_bad", std::strcmp(g_dump_hook_last, bad) == 0);
  DumpHook none = nullptr;
  emit("dump_unset",
       mallctl("experimental.hooks.prof_dump", nullptr, nullptr, &none, sizeof(none)));
  pp = path;
  mallctl("prof.dump", nullptr, nullptr, &pp, sizeof(pp));
  unlink(path);
  emit("hook_calls_after_unset", g_dump_hook_calls);
}

__attribute__((noinline)) void* alloc_log(size_t n) {
  emit("site.alloc_log", static_cast<long long>(here()));
  void* p = malloc(n);
  NO_TAIL_CALL();
  return p;
}

__attribute__((noinline)) void free_log(void* p) {
  emit("site.free_log", static_cast<long long>(here()));
  free(p);
  NO_TAIL_CALL();
}

void mode_log(const char* stem) {
  char path[512];
  std::snprintf(path, sizeof(path), "%s.log.json", stem);
  const char* pp = path;
  void* before = malloc(30000);  // sampled before the log starts, freed while it runs
  emit("start", mallctl("prof.log_start", nullptr, nullptr, &pp, sizeof(pp)));
  std::fflush(stdout);
  void* a = alloc_log(4096);
  void* live = malloc(2000);  // still live at log_stop: not in the log
  free_log(a);
  g_p[1] = before;
  pthread_t t;
  pthread_create(&t, nullptr, worker, const_cast<char*>("lg_worker"));
  void* tp = nullptr;
  pthread_join(t, &tp);
  emit_thread_sites();
  emit("stop", mallctl("prof.log_stop", nullptr, nullptr, nullptr, 0));
  emit("stop_again", mallctl("prof.log_stop", nullptr, nullptr, nullptr, 0));
  free(live);  // after the log: not in it
  free(tp);
  // A second session under the default name <prefix>.<pid>.0.json (the log's own counter).
  emit("pid", getpid());
  emit("start_default", mallctl("prof.log_start", nullptr, nullptr, nullptr, 0));
  free_log(alloc_log(512));
  emit("stop_default", mallctl("prof.log_stop", nullptr, nullptr, nullptr, 0));
}

// prof_log:true: the log runs from boot and is written at exit.
void mode_log_at_exit(const char*) {
  emit("pid", getpid());
  std::fflush(stdout);
  for (int i = 0; i < 4; i++) free_log(alloc_log(1024));
}

// Threads allocate and free (every allocation sampled) while another changes the limit, dumps
// the records and starts and stops logs: nothing may deadlock or crash, and the last dump and
// log must still be valid JSON.
std::atomic<bool> g_stop{false};
std::atomic<unsigned> g_churned{0};

void* churn(void*) {
  void* keep[64] = {};
  for (unsigned i = 0; !g_stop.load(std::memory_order_relaxed) && i < 200000; i++) {
    unsigned k = i % 64;
    free(keep[k]);
    keep[k] = malloc(16 + (i * 37) % 3000);
    g_churned.fetch_add(1, std::memory_order_relaxed);
  }
  for (void* p : keep) free(p);
  return nullptr;
}

void mode_stress(const char* stem) {
  pthread_t t[4];
  for (pthread_t& x : t) pthread_create(&x, nullptr, churn, nullptr);
  char path[512];
  std::snprintf(path, sizeof(path), "%s.log.json", stem);
  const char* pp = path;
  int fd = open("/dev/null", O_WRONLY);
  WritePacket pk{fd_write, &fd};
  int bad = 0;
  // At least 200 rounds, and on until the threads have made 40000 allocations among them.
  for (int round = 0; round < 200 || (g_churned.load() < 40000 && round < 100000); round++) {
    ssize_t max = round % 7 == 0 ? -1 : round % 13;
    bad += mallctl("experimental.prof_recent.alloc_max", nullptr, nullptr, &max, sizeof(max)) != 0;
    bad += mallctl("experimental.prof_recent.alloc_dump", nullptr, nullptr, &pk, sizeof(pk)) != 0;
    if (round % 10 == 0) {
      bad += mallctl("prof.log_start", nullptr, nullptr, &pp, sizeof(pp)) != 0;
    } else if (round % 10 == 5) {
      bad += mallctl("prof.log_stop", nullptr, nullptr, nullptr, 0) != 0;
    }
  }
  g_stop.store(true);
  for (pthread_t x : t) pthread_join(x, nullptr);
  close(fd);
  // Whichever round it ended on, stop a running log (EFAULT if none) so the file is complete.
  mallctl("prof.log_stop", nullptr, nullptr, nullptr, 0);
  emit("bad", bad);
  emit("churned", g_churned.load());
  emit("dump_last", dump_recent(stem, 1));
}

constexpr Mode kModes[] = {{"stress", mode_stress}, {"names", mode_names},
                           {"recent", mode_recent}, {"hooks", mode_hooks},
                           {"log", mode_log},       {"log_at_exit", mode_log_at_exit}};

// ---- parent -----------------------------------------------------------------------------------

const char* const kPython = "/usr/bin/python3";

void stem_for(char* buf, size_t cap, const char* what) {
  std::snprintf(buf, cap, "%s/prof_recent_test_%d_%s", scratch_dir(), static_cast<int>(getpid()),
                what);
}

// The child's stdout, kept: running the checker reuses the Child output buffers.
char g_kept[1 << 14];
const char* keep(const Child& c) {
  std::snprintf(g_kept, sizeof(g_kept), "%s", c.out);
  return g_kept;
}

// Runs data/prof_json_check.py CHECK FILE [key=value...] with the sites (and pid) the child
// printed in `out` and `extra`; fails the test with the checker's output unless it exits 0.
// The checker is not what is tested: it runs on the system allocator (env drops LD_PRELOAD),
// so that a problem of the library under test elsewhere cannot fail these checks.
void json_check(const char* out, const char* check, const char* file, const char* extra = nullptr) {
  if (access(kPython, X_OK) != 0) {
    jt::note("%s missing: %s not checked", kPython, file);
    return;
  }
  static char args[32][160];
  const char* argv[48];
  int n = 0;
  argv[n++] = "/usr/bin/env";
  argv[n++] = "-u";
  argv[n++] = "LD_PRELOAD";
  argv[n++] = kPython;
  argv[n++] = JT_DATA_DIR "/prof_json_check.py";
  argv[n++] = check;
  argv[n++] = file;
  int k = 0;
  for (const char* p = out; p != nullptr && *p != '\0' && k < 30;) {
    const char* e = std::strchr(p, '\n');
    size_t len = e ? static_cast<size_t>(e - p) : std::strlen(p);
    if (std::strncmp(p, "site.", 5) == 0 || std::strncmp(p, "pid=", 4) == 0) {
      std::snprintf(args[k], sizeof(args[k]), "%.*s", static_cast<int>(len), p);
      argv[n++] = args[k++];
    }
    p = e ? e + 1 : nullptr;
  }
  if (extra != nullptr) argv[n++] = extra;
  argv[n] = nullptr;
  Child py = run_program("/usr/bin/env", argv, "");
  if (!py.exited(0)) {
    FAIL_MSG("%s check of %s failed", check, file);
    show(py);
  }
}

void remove_file(const char* stem, const char* suffix) {
  char path[512];
  std::snprintf(path, sizeof(path), "%s%s", stem, suffix);
  unlink(path);
}

}  // namespace

TEST(prof_names_without_opt_prof) {
  if (!profiling_built()) return;
  Child c;
  if (!child(&c, "names", "prof:false")) return;
  // Hooks: readable (null) without opt.prof, not writable.
  EXPECT_CHILD(c, "bt_read", kEq, 0);
  EXPECT_CHILD(c, "bt_read_nonnull", kEq, 0);
  EXPECT_CHILD(c, "dump_read", kEq, 0);
  EXPECT_CHILD(c, "dump_read_nonnull", kEq, 0);
  EXPECT_CHILD(c, "bt_none", kEq, EINVAL);
  EXPECT_CHILD(c, "dump_none", kEq, EINVAL);
  EXPECT_CHILD(c, "bt_read_short", kEq, EINVAL);
  EXPECT_CHILD(c, "bt_write_null", kEq, ENOENT);
  EXPECT_CHILD(c, "dump_write_null", kEq, ENOENT);
  EXPECT_CHILD(c, "opt_recent", kEq, 0);
  EXPECT_CHILD(c, "opt_recent_value", kEq, 0);
  EXPECT_CHILD(c, "opt_recent_write", kEq, EPERM);
  EXPECT_CHILD(c, "opt_prof_log", kEq, ENOENT);  // no such name in 5.3.0
  for (const char* k :
       {"max_read", "max_write_m2", "max_write_int", "max_write_short_old", "max_write_m1",
        "dump_with_old", "dump_no_new", "dump_short", "dump_ok", "stop_idle", "start_with_old",
        "start_short", "start", "start_again", "stop_unwritable"}) {
    EXPECT_CHILD(c, k, kEq, ENOENT);
  }
}

TEST(prof_names_with_opt_prof) {
  if (!profiling_built()) return;
  Child c;
  if (!child(&c, "names", "prof:true,prof_recent_alloc_max:5")) return;
  EXPECT_CHILD(c, "bt_read", kEq, 0);
  EXPECT_CHILD(c, "bt_read_nonnull", kEq, 1);  // the built-in unwinder
  EXPECT_CHILD(c, "dump_read", kEq, 0);
  EXPECT_CHILD(c, "dump_read_nonnull", kEq, 0);
  EXPECT_CHILD(c, "bt_none", kEq, EINVAL);
  EXPECT_CHILD(c, "dump_none", kEq, EINVAL);
  EXPECT_CHILD(c, "bt_read_short", kEq, EINVAL);
  EXPECT_CHILD(c, "bt_write_null", kEq, EINVAL);
  EXPECT_CHILD(c, "bt_write_short", kEq, EINVAL);
  EXPECT_CHILD(c, "dump_write_null", kEq, 0);  // removes the dump hook
  EXPECT_CHILD(c, "opt_recent", kEq, 0);
  EXPECT_CHILD(c, "opt_recent_value", kEq, 5);
  EXPECT_CHILD(c, "opt_recent_write", kEq, EPERM);
  EXPECT_CHILD(c, "opt_prof_log", kEq, ENOENT);
  EXPECT_CHILD(c, "max_read", kEq, 0);
  EXPECT_CHILD(c, "max_value", kEq, 5);
  EXPECT_CHILD(c, "max_write_m2", kEq, EINVAL);
  EXPECT_CHILD(c, "max_write_int", kEq, EINVAL);
  EXPECT_CHILD(c, "max_write_short_old", kEq, EINVAL);
  EXPECT_CHILD(c, "max_write_m1", kEq, 0);
  EXPECT_CHILD(c, "max_old", kEq, 7);  // the write with the short old length took effect
  EXPECT_CHILD(c, "max_now", kEq, -1);
  EXPECT_CHILD(c, "dump_with_old", kEq, EPERM);
  EXPECT_CHILD(c, "dump_no_new", kEq, EINVAL);
  EXPECT_CHILD(c, "dump_short", kEq, EINVAL);
  EXPECT_CHILD(c, "dump_ok", kEq, 0);
  EXPECT_CHILD(c, "stop_idle", kEq, EFAULT);
  EXPECT_CHILD(c, "start_with_old", kEq, EPERM);
  EXPECT_CHILD(c, "start_short", kEq, EINVAL);
  EXPECT_CHILD(c, "start", kEq, 0);
  EXPECT_CHILD(c, "start_again", kEq, EFAULT);
  EXPECT_CHILD(c, "stop_unwritable", kEq, EFAULT);
}

TEST(prof_recent_records_known_allocations) {
  if (!profiling_built()) return;
  char stem[128];
  stem_for(stem, sizeof(stem), "recent");
  Child c;
  bool ran = child(&c, "recent", "prof:true,lg_prof_sample:0,prof_recent_alloc_max:3", stem);
  if (ran) {
    EXPECT_CHILD(c, "opt_recent", kEq, 3);
    EXPECT_CHILD(c, "set_rc", kEq, 0);
    EXPECT_CHILD(c, "set_old", kEq, 3);
    EXPECT_CHILD(c, "dump1", kEq, 0);
    EXPECT_CHILD(c, "shrink_rc", kEq, 0);
    EXPECT_CHILD(c, "shrink_old", kEq, 8);
    EXPECT_CHILD(c, "dump2", kEq, 0);
    EXPECT_CHILD(c, "dump3", kEq, 0);
    char f1[160], f2[160], f3[160], prev[200];
    std::snprintf(f1, sizeof(f1), "%s.1.json", stem);
    std::snprintf(f2, sizeof(f2), "%s.2.json", stem);
    std::snprintf(f3, sizeof(f3), "%s.3.json", stem);
    const char* out = keep(c);
    json_check(out, "recent", f1);
    std::snprintf(prev, sizeof(prev), "prev=%s", f1);
    json_check(out, "recent_shrunk", f2, prev);
    json_check(out, "recent_empty", f3);
  }
  for (const char* s : {".1.json", ".2.json", ".3.json"}) remove_file(stem, s);
}

TEST(prof_hooks_replace_backtraces_and_hear_dumps) {
  if (!profiling_built()) return;
  char stem[128];
  stem_for(stem, sizeof(stem), "hooks");
  Child c;
  bool ran = child(&c, "hooks", "prof:true,lg_prof_sample:0", stem);
  if (ran) {
    EXPECT_CHILD(c, "bt_set", kEq, 0);
    EXPECT_CHILD(c, "bt_old_nonnull", kEq, 1);
    EXPECT_CHILD(c, "bt_now_is_mine", kEq, 1);
    EXPECT_CHILD(c, "dump_set", kEq, 0);
    EXPECT_CHILD(c, "dump1", kEq, 0);
    EXPECT_CHILD(c, "bt_restore", kEq, 0);
    EXPECT_CHILD(c, "pdump", kEq, 0);
    EXPECT_CHILD(c, "hook_calls", kEq, 1);
    EXPECT_CHILD(c, "hook_named_it", kEq, 1);
    EXPECT_CHILD(c, "pdump_bad", kEq, EFAULT);
    EXPECT_CHILD(c, "hook_calls_after_bad", kEq, 2);  // also told of the failed dump
    EXPECT_CHILD(c, "hook_named_bad", kEq, 1);
    EXPECT_CHILD(c, "dump_unset", kEq, 0);
    EXPECT_CHILD(c, "hook_calls_after_unset", kEq, 2);
    char f1[160];
    std::snprintf(f1, sizeof(f1), "%s.1.json", stem);
    json_check(keep(c), "recent_hooked", f1);
  }
  remove_file(stem, ".1.json");
}

TEST(prof_log_start_stop_and_default_name) {
  if (!profiling_built()) return;
  char stem[128], conf[256];
  stem_for(stem, sizeof(stem), "log");
  std::snprintf(conf, sizeof(conf), "prof:true,lg_prof_sample:0,prof_prefix:%s", stem);
  Child c;
  bool ran = child(&c, "log", conf, stem);
  long long pid = ran ? value(c, "pid") : -1;
  char deflt[200];
  std::snprintf(deflt, sizeof(deflt), "%s.%lld.0.json", stem, pid);
  if (ran) {
    EXPECT_CHILD(c, "start", kEq, 0);
    EXPECT_CHILD(c, "stop", kEq, 0);
    EXPECT_CHILD(c, "stop_again", kEq, EFAULT);
    EXPECT_CHILD(c, "start_default", kEq, 0);
    EXPECT_CHILD(c, "stop_default", kEq, 0);
    char f[160];
    std::snprintf(f, sizeof(f), "%s.log.json", stem);
    const char* out = keep(c);
    json_check(out, "log", f);
    json_check(out, "log_small", deflt);
  }
  remove_file(stem, ".log.json");
  unlink(deflt);
}

TEST(prof_log_option_writes_at_exit) {
  if (!profiling_built()) return;
  char stem[128], conf[256];
  stem_for(stem, sizeof(stem), "logexit");
  std::snprintf(conf, sizeof(conf), "prof:true,lg_prof_sample:0,prof_log:true,prof_prefix:%s",
                stem);
  Child c;
  if (!child(&c, "log_at_exit", conf)) return;
  char path[200];
  std::snprintf(path, sizeof(path), "%s.%lld.0.json", stem, value(c, "pid"));
  struct stat st;
  if (stat(path, &st) != 0) {
    FAIL_MSG("prof_log:true wrote no %s at exit", path);
    return;
  }
  json_check(keep(c), "log_at_exit", path);
  unlink(path);
}

TEST(prof_recent_and_log_under_concurrent_churn) {
  if (!profiling_built()) return;
  char stem[128];
  stem_for(stem, sizeof(stem), "stress");
  Child c;
  bool ran = child(&c, "stress", "prof:true,lg_prof_sample:0,prof_recent_alloc_max:5", stem);
  if (ran) {
    EXPECT_CHILD(c, "bad", kEq, 0);
    EXPECT_CHILD(c, "churned", kGe, 40000);
    EXPECT_CHILD(c, "dump_last", kEq, 0);
    char f[160];
    std::snprintf(f, sizeof(f), "%s.1.json", stem);
    json_check(keep(c), "valid", f);
    std::snprintf(f, sizeof(f), "%s.log.json", stem);
    json_check(keep(c), "valid", f);
  }
  remove_file(stem, ".1.json");
  remove_file(stem, ".log.json");
}

int main(int argc, char** argv) { return run_main(argc, argv, kModes); }
