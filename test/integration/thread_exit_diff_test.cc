// thread_exit_diff_test: a differential test of what THREAD EXIT and idle threads give back,
// against jemalloc 5.3.0.
//
// 5.3.0's rule, which programs that run short-lived worker threads depend on for their RSS:
// when a thread's cache is torn down (thread exit, thread.tcache.enabled false, tcache.destroy,
// and tcache.flush, which 5.3.0 implements as a destruction), the cache's blocks go back to the
// arenas and one decay step follows on arena 0 and on the cache's arena; if no thread is bound
// to that arena any more and background threads are off, the step purges ALL of its dirty and
// muzzy pages (as arena.<i>.purge does), whatever the decay times -- dirty_decay_ms:-1 included.
// A thread without a cache (tcache:false, or switched off earlier) tears nothing down at exit,
// so nothing is purged then. thread.idle flushes the cache and, when opt.narenas > 2 x CPUs,
// purges the thread's arena.
//
// The stream (differential.h: run once per library in a child, records compared line by line,
// also under the option variants below) drives worker threads ONE STEP AT A TIME (the main
// thread hands a worker a command and waits for it), so nothing races. A worker's `work` step
// allocates and touches ~40 MiB of small (16 B .. 3 KiB) and large (40 KiB .. 2 MiB) blocks,
// frees them all (the cache keeps some), and checks its arena has free pages left. Lines never
// hold byte counts or addresses, only:
//   state    of an arena: "clean" (stats.arenas.<i>.pdirty == 0 and pmuzzy == 0) or "kept";
//   purged   "yes"/"no": whether dirty_npurge + muzzy_npurge went up since the worker's work
//            (printed only with state clean; otherwise whether a timed decay step happened to
//            purge a little is not deterministic);
//   rss      at the exit of an arena's last thread: "released" (VmRSS fell by at least 4 MiB
//            and by at least half of the dirty + muzzy bytes the arena held just before) or
//            "held"; "-" where threads remain, where the arena held less than 8 MiB, and
//            with background threads;
//   thread.arena indices and stats.arenas.<i>.nthreads (arena choice is itself deterministic,
//            arena_diff_test).
// Scenarios: alone (a worker on its own arena exits), shared (two workers on one arena via
// thread.arena: the first to exit is not the last), main (a worker moved to the main thread's
// arena), nocache (thread.tcache.enabled false from the start), disable (a worker that worked
// with its cache switches it off, then exits), idle (thread.idle, then exit), explicit (a
// worker fills two explicit caches from its arena and exits; the main thread then flushes one
// and destroys the other).
// In-process checks (the stream_in_process test, on either library): a thread that tears down
// a cache as its arena's last thread, background threads off, leaves the arena clean; the
// same for tcache.flush / tcache.destroy of an explicit cache whose arena has no thread.
// Skipped (77) under run.sh's non-default MALLOC_CONF variants like the other differential
// tests (the children set their own).
#include <semaphore.h>

#include "differential.h"

// Read by this library only (doc/compat.md#conf-2-conf-harder): the stream compares 5.3.0's
// teardown purge, which ours keeps with idle_return:false; by default an exiting thread's memory
// goes back by time instead (doc/compat.md#idle-return, test/stress/idle_return_test).
const char* malloc_conf_2_conf_harder = "idle_return:false";

namespace {

using jt::diff::finish;
using jt::diff::put;

int g_seq;

// ---- reading the allocator and the process ---------------------------------------------------

template <class T>
T read_ctl(const char* name, int* rc = nullptr) {
  T v{};
  size_t len = sizeof(v);
  int r = mallctl(name, &v, &len, nullptr, 0);
  if (rc != nullptr) *rc = r;
  return v;
}

template <class T>
T arena_stat(unsigned ind, const char* leaf) {
  char key[96];
  std::snprintf(key, sizeof(key), "stats.arenas.%u.%s", ind, leaf);
  return read_ctl<T>(key);
}

void refresh() {
  uint64_t e = 1;
  mallctl("epoch", nullptr, nullptr, &e, sizeof(e));
}

/// What an arena holds besides its active pages, and its purge count so far.
struct ArenaView {
  unsigned nthreads;
  size_t free_pages;  // dirty + muzzy (never printed: its value is placement-dependent)
  bool clean;         // no dirty and no muzzy pages
  uint64_t npurge;    // dirty_npurge + muzzy_npurge
};

ArenaView view(unsigned ind) {
  refresh();
  ArenaView v;
  v.nthreads = arena_stat<unsigned>(ind, "nthreads");
  v.free_pages = arena_stat<size_t>(ind, "pdirty") + arena_stat<size_t>(ind, "pmuzzy");
  v.clean = v.free_pages == 0;
  v.npurge = arena_stat<uint64_t>(ind, "dirty_npurge") + arena_stat<uint64_t>(ind, "muzzy_npurge");
  return v;
}

long rss_kib() {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return -1;
  char line[256];
  long kib = -1;
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    if (std::strncmp(line, "VmRSS:", 6) == 0) kib = std::atol(line + 6);
  }
  std::fclose(f);
  return kib;
}

bool background_threads_on() { return read_ctl<bool>("background_thread"); }

void head(const char* name) { put("%03d exit %s | ", g_seq++, name); }

// ---- workers -----------------------------------------------------------------------------------

enum Cmd { kBind, kWork, kJoinArena, kCacheOff, kIdle, kExplicit, kExit };

struct Worker {
  pthread_t th;
  sem_t go, done;
  Cmd cmd;
  unsigned arg;
  const char* name;
  bool alive;
  // Filled in by the worker for the main thread's report.
  unsigned arena;
  bool cache_on;          // its automatic cache is on (read just before exiting)
  uint64_t npurge_after;  // its arena's purge count after its last work step
  unsigned tc[2];         // explicit caches (kExplicit)
};
Worker g_w[8];

constexpr size_t kSmallSizes[] = {16,  32,  48,  64,   96,   128,  192, 256,
                                  384, 512, 768, 1024, 1536, 2048, 3072};
constexpr size_t kLargeSizes[] = {40 << 10, 96 << 10, 200 << 10, 512 << 10, 1 << 20, 2 << 20};
constexpr int kNSmall = 30000, kNLarge = 24;
void* g_blocks[kNSmall + kNLarge];  // one worker works at a time

unsigned thread_arena() { return read_ctl<unsigned>("thread.arena"); }

void bind_step(Worker* w) {
  void* p = malloc(64);  // the first allocation binds the thread
  free(p);
  w->arena = thread_arena();
  head(w->name);
  put("bound -> thread.arena=%u nthreads=%u", w->arena, view(w->arena).nthreads);
  finish(false);
}

// ~40 MiB allocated, touched and freed; the arena must then hold free pages.
void work_step(Worker* w) {
  for (int i = 0; i < kNSmall; i++) {
    size_t n = kSmallSizes[i % std::size(kSmallSizes)];
    g_blocks[i] = malloc(n);
    if (g_blocks[i] != nullptr) std::memset(g_blocks[i], 0x5a, n);
  }
  for (int i = 0; i < kNLarge; i++) {
    size_t n = kLargeSizes[i % std::size(kLargeSizes)];
    g_blocks[kNSmall + i] = malloc(n);
    if (g_blocks[kNSmall + i] != nullptr) std::memset(g_blocks[kNSmall + i], 0x5a, n);
  }
  for (void* p : g_blocks) free(p);
  ArenaView v = view(w->arena);
  w->npurge_after = v.npurge;
  head(w->name);
  put("worked -> state=%s", v.clean ? "clean" : "kept");
  finish(v.clean);  // the work must leave free pages, or the later lines would prove nothing
}

void join_arena_step(Worker* w) {
  unsigned ind = w->arg;
  int rc = mallctl("thread.arena", nullptr, nullptr, &ind, sizeof(ind));
  w->arena = thread_arena();
  head(w->name);
  put("thread.arena=%u -> rc=%d nthreads=%u", ind, rc, view(w->arena).nthreads);
  finish(rc != 0);
}

void cache_off_step(Worker* w) {
  bool off = false;
  int rc = mallctl("thread.tcache.enabled", nullptr, nullptr, &off, sizeof(off));
  ArenaView v = view(w->arena);
  head(w->name);
  put("tcache.enabled=false -> rc=%d nthreads=%u state=%s", rc, v.nthreads,
      v.clean ? "clean" : "kept");
  finish(rc != 0);
}

void idle_step(Worker* w) {
  int rc = mallctl("thread.idle", nullptr, nullptr, nullptr, 0);
  ArenaView v = view(w->arena);
  head(w->name);
  put("thread.idle -> rc=%d state=%s", rc, v.clean ? "clean" : "kept");
  if (v.clean) put(" purged=%s", v.npurge > w->npurge_after ? "yes" : "no");
  finish(rc != 0);
}

// Two explicit caches, each filled with 20 blocks of 16 KiB and 20 of 32 KiB (large classes
// the cache holds, 20 per class) from this thread's arena, all freed back into the cache.
void explicit_step(Worker* w) {
  int rc = 0;
  for (unsigned& tc : w->tc) {
    size_t len = sizeof(tc);
    rc |= mallctl("tcache.create", &tc, &len, nullptr, 0);
    void* p[40];
    for (int i = 0; i < 40; i++) p[i] = mallocx(i < 20 ? 16 << 10 : 32 << 10, MALLOCX_TCACHE(tc));
    for (void* q : p) {
      if (q != nullptr) dallocx(q, MALLOCX_TCACHE(tc));
    }
  }
  head(w->name);
  put("explicit caches -> rc=%d", rc);
  finish(rc != 0);
}

void* worker_main(void* arg) {
  Worker* w = static_cast<Worker*>(arg);
  for (;;) {
    sem_wait(&w->go);
    switch (w->cmd) {
      case kBind: bind_step(w); break;
      case kWork: work_step(w); break;
      case kJoinArena: join_arena_step(w); break;
      case kCacheOff: cache_off_step(w); break;
      case kIdle: idle_step(w); break;
      case kExplicit: explicit_step(w); break;
      case kExit:
        w->cache_on = read_ctl<bool>("thread.tcache.enabled");
        sem_post(&w->done);
        return nullptr;
    }
    sem_post(&w->done);
  }
}

void run(int k, Cmd c, unsigned arg = 0) {
  g_w[k].cmd = c, g_w[k].arg = arg;
  sem_post(&g_w[k].go);
  sem_wait(&g_w[k].done);
}

void start(int k, const char* name) {
  Worker& w = g_w[k];
  w.name = name;
  sem_init(&w.go, 0, 0);
  sem_init(&w.done, 0, 0);
  w.alive = pthread_create(&w.th, nullptr, worker_main, &w) == 0;
  if (w.alive) run(k, kBind);
}

// The worker exits (its thread-exit destructors have run once the join returns); the main thread
// reports its arena.
void stop(int k) {
  Worker& w = g_w[k];
  if (!w.alive) return;
  ArenaView before = view(w.arena);
  long free_kib = static_cast<long>(before.free_pages * read_ctl<size_t>("arenas.page") >> 10);
  long rss_before = rss_kib();
  run(k, kExit);
  pthread_join(w.th, nullptr);
  w.alive = false;
  ArenaView v = view(w.arena);
  long dropped = rss_before - rss_kib();
  head(w.name);
  put("exited -> nthreads=%u state=%s", v.nthreads, v.clean ? "clean" : "kept");
  if (v.clean) put(" purged=%s", v.npurge > w.npurge_after ? "yes" : "no");
  // Each work step leaves tens of MiB free in the arena, so a purge of it shows plainly. Only
  // for a last thread: where threads remain, a timed decay step at the exit may purge pages
  // freed seconds before, and how many depends on how fast the stream ran. Not when the arena
  // had (next to) nothing to give: the step on arena 0 alone may release a few MiB then. Not
  // with background threads: how much they purged of older pages by then depends on timing.
  if (v.nthreads == 0 && free_kib >= 8192 && !background_threads_on()) {
    put(" rss=%s", dropped >= 4096 && dropped >= free_kib / 2 ? "released" : "held");
  } else {
    put(" rss=-");
  }
  // 5.3.0's rule: the last thread of an arena, tearing down its cache, background threads off,
  // purges everything.
  finish(w.cache_on && v.nthreads == 0 && !background_threads_on() && !v.clean);
}

// The main thread flushes or destroys worker k's explicit cache i.
void explicit_teardown(int k, int i, bool destroy) {
  Worker& w = g_w[k];
  unsigned tc = w.tc[i];
  int rc = mallctl(destroy ? "tcache.destroy" : "tcache.flush", nullptr, nullptr, &tc, sizeof(tc));
  ArenaView v = view(w.arena);
  head(w.name);
  put("main %s -> rc=%d nthreads=%u state=%s", destroy ? "tcache.destroy" : "tcache.flush", rc,
      v.nthreads, v.clean ? "clean" : "kept");
  finish(rc != 0 || (v.nthreads == 0 && !background_threads_on() && !v.clean));
}

bool run_stream(FILE* out) {
  jt::diff::begin(out);
  g_seq = 0;
  jt::diff::CrashReport crash;
  void* warm = malloc(64);  // binds the main thread
  free(warm);
  head("setup");
  put("-> tcache=%d background_thread=%d main.thread.arena=%u", (int)read_ctl<bool>("opt.tcache"),
      (int)background_threads_on(), thread_arena());
  finish(false);
  const unsigned main_arena = thread_arena();

  // alone: the only thread of its arena.
  start(0, "alone");
  run(0, kWork);
  stop(0);

  // shared: two workers on one arena; the first to leave is not the last.
  start(1, "shared.first");
  start(2, "shared.second");
  run(2, kJoinArena, g_w[1].arena);
  run(1, kWork);
  stop(1);
  run(2, kWork);
  stop(2);

  // main: a worker moved to the main thread's arena.
  start(3, "main");
  run(3, kJoinArena, main_arena);
  run(3, kWork);
  stop(3);

  // nocache: no cache from the start, so nothing is torn down at exit.
  start(4, "nocache");
  run(4, kCacheOff);
  run(4, kWork);
  stop(4);

  // disable: the cache goes away while the thread is still bound; then the exit.
  start(5, "disable");
  run(5, kWork);
  run(5, kCacheOff);
  stop(5);

  // idle: thread.idle, then the exit. Not with background threads: one of them may be purging
  // the arena when thread.idle asks for the full purge, which then leaves it alone (in 5.3.0
  // too), so the outcome depends on timing.
  if (background_threads_on()) {
    head("idle");
    put("skipped: background threads");
    finish(false);
  } else {
    start(6, "idle");
    run(6, kWork);
    run(6, kIdle);
    stop(6);
  }

  // explicit: caches filled from the worker's arena outlive the worker.
  start(7, "explicit");
  run(7, kWork);
  run(7, kExplicit);
  stop(7);
  explicit_teardown(7, 0, /*destroy=*/false);
  explicit_teardown(7, 1, /*destroy=*/true);
  return jt::diff::g_failures == 0;
}

// Differences doc/compat.md documents: none concerns what thread exit gives back.
constexpr jt::diff::Excl kDocumented[] = {{nullptr, nullptr, nullptr, nullptr}};

// Bugs of this library (remove each entry with its fix).
constexpr jt::diff::Excl kKnownBugs[] = {{nullptr, nullptr, nullptr, nullptr}};

TEST(stream_in_process) {
  run_stream(nullptr);
  jt::note("%d failures", jt::diff::g_failures);
}

TEST(same_thread_exit_as_5_3_0) { jt::diff::compare_with_reference(kDocumented, kKnownBugs); }

// One arena for everything (no worker is ever its arena's last thread), decay off (purging
// only by the forced path, never on a clock), muzzy decay on (the forced purge empties muzzy
// too), no thread caches, background threads (they own purging: nothing is forced).
constexpr const char* kConfs[] = {"narenas:1", "dirty_decay_ms:-1,muzzy_decay_ms:-1",
                                  "muzzy_decay_ms:1000", "tcache:false", "background_thread:true"};

TEST(same_thread_exit_under_options) {
  jt::diff::compare_with_reference_under(kConfs, kDocumented, kKnownBugs);
}

}  // namespace

int main(int argc, char** argv) { return jt::diff::main(argc, argv, run_stream); }
