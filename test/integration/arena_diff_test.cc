// arena_diff_test: a differential test of ARENA CHOICE and thread binding against jemalloc 5.3.0.
//
//
//   spawn     the main thread and three workers created one after another, all kept alive;
//   reuse     a worker exits, a new one comes (it takes the emptied arena);
//   wrap      more threads than arenas (each new one picks the least loaded, lowest index);
//   manual    arenas.create; a worker writes thread.arena to it (a cached small block still
//             comes from the old arena until the cache is flushed), huge requests there, an
//             index past arenas.narenas, destroying a bound manual arena, back again;
//   huge      7 MiB and 7 MiB + 1 (both rules use the usable size: 8 MiB), 8 and 16 MiB, from
//             automatic threads, with MALLOCX_ARENA of an automatic and a manual arena, and
//             thread.arena set to the huge arena itself;
//   fork      fork in the main thread and in a worker: the child's thread.arena, its
//             allocations, its nthreads, and a thread the child creates. percpu (its own child per
//             library, MALLOC_CONF=percpu_arena:percpu added to malloc_conf below; run only when
//             both libraries report opt.percpu_arena "percpu"): a worker pinned with
//             sched_setaffinity to the first allowed CPU, then the second (skipped with a note when
//             fewer than two are allowed), then back; thread.arena writes below and above the
//             per-CPU range.
//
#include <sched.h>
#include <semaphore.h>

#include "differential.h"

// Read by both libraries: four automatic arenas whatever the CPU count (huge arena = index 4),
// decay off so no purging runs on a clock while threads wait.
const char* malloc_conf = "narenas:4,dirty_decay_ms:-1,muzzy_decay_ms:-1";
// Read by this library only (doc/compat.md#conf-2-conf-harder): with borrow_dirty (our default,
// doc/compat.md#borrow-dirty) a fresh arena's first 64 KiB block is served from the dirty pages
// another arena holds, so arenas.lookup names that arena; off, arenas serve their own threads
// as in 5.3.0, which is what this test compares. options_test covers the borrowing.
const char* malloc_conf_2_conf_harder = "borrow_dirty:false";

namespace {

using jt::diff::finish;
using jt::diff::put;

constexpr size_t kSmall = 64, kLarge = 65536;
int g_seq;

unsigned read_u(const char* name, int* rc) {
  unsigned v = ~0u;
  size_t len = sizeof(v);
  *rc = mallctl(name, &v, &len, nullptr, 0);
  return v;
}

unsigned lookup(void* p) {
  unsigned v = ~0u;
  size_t len = sizeof(v);
  if (p == nullptr || mallctl("arenas.lookup", &v, &len, &p, sizeof(p)) != 0) return ~0u;
  return v;
}

// Starts a line: `SEQ arena NAME | `.
void head(const char* name) { put("%03d arena %s | ", g_seq++, name); }

void emit(bool bad);

// thread.arena and where fresh blocks come from.
void report(const char* name) {
  head(name);
  int rc;
  unsigned ta = read_u("thread.arena", &rc);
  void* s = malloc(kSmall);
  void* n = mallocx(kSmall, MALLOCX_TCACHE_NONE);
  void* l = malloc(kLarge);
  unsigned sa = lookup(s), na = lookup(n), la = lookup(l);
  put("-> thread.arena=%u small=%u small_nocache=%u large=%u", ta, sa, na, la);
  free(s);
  dallocx(n, MALLOCX_TCACHE_NONE);
  free(l);
  emit(rc != 0 || sa == ~0u || na == ~0u || la == ~0u);
}

// arenas.narenas and every index's nthreads, after an epoch.
void nthreads(const char* name) {
  uint64_t e = 1;
  mallctl("epoch", nullptr, nullptr, &e, sizeof(e));
  head(name);
  int rc;
  unsigned n = read_u("arenas.narenas", &rc);
  put("-> narenas=%u nthreads=", n);
  for (unsigned i = 0; rc == 0 && i < n && i < 64; i++) {
    char key[64];
    int r;
    std::snprintf(key, sizeof(key), "stats.arenas.%u.nthreads", i);
    unsigned t = read_u(key, &r);
    put(r == 0 ? "%s%u" : "%s-", i ? "," : "", t);
  }
  emit(rc != 0);
}

// The arena that serves mallocx(size, flags) (freed at once).
void where(const char* name, size_t size, int flags, const char* flagname) {
  head(name);
  void* p = mallocx(size, flags);
  unsigned a = lookup(p);
  put("%zu %s -> arena=%u", size, flagname, a);
  if (p) dallocx(p, flags & ~MALLOCX_ZERO);
  finish(a == ~0u);
}

void write_thread_arena(const char* name, unsigned ind) {
  head(name);
  int rc = mallctl("thread.arena", nullptr, nullptr, &ind, sizeof(ind));
  int r2;
  unsigned now = read_u("thread.arena", &r2);
  put("%u -> rc=%d thread.arena=%u", ind, rc, now);
  finish(r2 != 0);
}

// --- Workers: threads that run one command at a time on the main thread's request.
enum Cmd { kReport, kSetArena, kFlush, kHuge, kFork, kPin, kExit };
struct Worker {
  pthread_t th;
  sem_t go, done;
  Cmd cmd;
  unsigned arg;
  const char* name;
  bool alive;
};
Worker g_w[12];

void do_fork(const char* name);
void huge_steps(const char* name, unsigned manual);
void pin(unsigned cpu);

void* worker_main(void* arg) {
  Worker* w = static_cast<Worker*>(arg);
  for (;;) {
    sem_wait(&w->go);
    switch (w->cmd) {
      case kReport: report(w->name); break;
      case kSetArena: write_thread_arena(w->name, w->arg); break;
      case kFlush: mallctl("thread.tcache.flush", nullptr, nullptr, nullptr, 0); break;
      case kHuge: huge_steps(w->name, w->arg); break;
      case kFork: do_fork(w->name); break;
      case kPin: pin(w->arg); break;
      case kExit: sem_post(&w->done); return nullptr;
    }
    sem_post(&w->done);
  }
}

void run(int k, Cmd c, const char* name, unsigned arg = 0) {
  g_w[k].cmd = c, g_w[k].arg = arg, g_w[k].name = name;
  sem_post(&g_w[k].go);
  sem_wait(&g_w[k].done);
}

// Creates worker k and has it report (its first allocation binds it).
void start(int k, const char* name) {
  sem_init(&g_w[k].go, 0, 0);
  sem_init(&g_w[k].done, 0, 0);
  g_w[k].alive = pthread_create(&g_w[k].th, nullptr, worker_main, &g_w[k]) == 0;
  if (g_w[k].alive) run(k, kReport, name);
}

// Ends worker k and waits until its thread state is gone (the join follows its destructors).
void stop(int k) {
  if (!g_w[k].alive) return;
  run(k, kExit, "exit");
  pthread_join(g_w[k].th, nullptr);
  g_w[k].alive = false;
}

void huge_steps(const char* name, unsigned manual) {
  char n[64];
  std::snprintf(n, sizeof(n), "%s.huge", name);
  where(n, 7 << 20, 0, "plain");
  where(n, (7 << 20) + 1, 0, "plain");
  where(n, 8 << 20, 0, "plain");
  where(n, 16 << 20, 0, "plain");
  where(n, 8 << 20, MALLOCX_ARENA(1), "arena1");
  where(n, 8 << 20, MALLOCX_ARENA(manual) | MALLOCX_TCACHE_NONE, "arenaM");
  where(n, kLarge, MALLOCX_ARENA(manual) | MALLOCX_TCACHE_NONE, "arenaM");
}

// Forks; the child reports, prints its counts, starts a worker that reports, prints the counts
// again and exits. Its lines go to a shared buffer the parent prints after it ended (killed after
// a second: a child that hangs still yields one line per step, "missing" for those it did not
// reach, so the records keep their length and each difference is classified on its own).
char* g_child_buf;  // while in a fork child: where finished lines go
constexpr size_t kChildBuf = 1 << 14;
constexpr int kChildLines = 4;

void emit(bool bad) {
  if (g_child_buf == nullptr) return finish(bad);
  size_t o = std::strlen(g_child_buf);
  std::snprintf(g_child_buf + o, kChildBuf - o, "%s\n", jt::diff::g_line);
  jt::diff::g_line[0] = '\0';
}

void do_fork(const char* name) {
  char n[64];
  void* shm = mmap(nullptr, kChildBuf, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shm == MAP_FAILED) return;
  std::memset(shm, 0, kChildBuf);
  std::fflush(stdout);
  int seq0 = g_seq;
  pid_t pid = fork();
  if (pid == 0) {
    g_child_buf = static_cast<char*>(shm);
    signal(SIGSEGV, SIG_DFL);  // the parent reports the status; no crash text on the record
    signal(SIGBUS, SIG_DFL);
    signal(SIGABRT, SIG_DFL);
    std::snprintf(n, sizeof(n), "%s.child", name);
    report(n);
    nthreads(n);
    std::snprintf(n, sizeof(n), "%s.child.thread", name);
    start(11, n);
    stop(11);
    nthreads(n);
    _exit(0);
  }
  // A child that hangs (a lock left held across fork) is killed after at least 10 s of
  // waiting; a loaded machine may hold a healthy one back for a good part of a second.
  int st = -1;
  for (int us = 0; pid > 0 && waitpid(pid, &st, WNOHANG) != pid; us += 500) {
    if (us == 10000000) kill(pid, SIGKILL);
    usleep(500);
  }
  char* p = static_cast<char*>(shm);
  int lines = 0;
  for (const char* l; (l = jt::diff::next_line(&p)) != nullptr && lines < kChildLines; lines++) {
    put("%s", l);
    finish(false);
  }
  for (; lines < kChildLines; lines++) {
    put("%03d arena %s.child.missing | -> child status %#x", seq0 + lines, name, st);
    finish(false);
  }
  munmap(shm, kChildBuf);
  g_seq = seq0 + kChildLines;
  std::snprintf(n, sizeof(n), "%s.forked", name);
  head(n);
  put("-> child status %#x", st);
  finish(false);
}

void pin(unsigned cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  sched_setaffinity(0, sizeof(set), &set);
  sched_yield();
}

unsigned create_manual(const char* name) {
  head(name);
  unsigned m = ~0u;
  size_t len = sizeof(m);
  int rc = mallctl("arenas.create", &m, &len, nullptr, 0);
  put("-> rc=%d index=%u", rc, m);
  finish(rc != 0);
  return m;
}

void destroy(const char* name, unsigned m) {
  char key[64];
  std::snprintf(key, sizeof(key), "arena.%u.destroy", m);
  head(name);
  put("%u -> rc=%d", m, mallctl(key, nullptr, nullptr, nullptr, 0));
  finish(false);
}

bool run_stream(FILE* out) {
  jt::diff::begin(out);
  g_seq = 0;
  jt::diff::CrashReport crash;
  int rc;
  head("opt");
  put("-> narenas=%u", read_u("opt.narenas", &rc));
  finish(rc != 0);

  // spawn: main (bound at start-up) and workers 0..2, one after another, all alive.
  report("spawn.main");
  nthreads("spawn.start");
  start(0, "spawn.w0");
  nthreads("spawn.w0");
  start(1, "spawn.w1");
  nthreads("spawn.w1");
  start(2, "spawn.w2");
  nthreads("spawn.w2");
  run(0, kReport, "spawn.w0.again");

  // reuse: the worker on the middle arena leaves; the next thread takes its arena.
  stop(1);
  nthreads("reuse.exit.w1");
  start(3, "reuse.w3");
  nthreads("reuse.w3");
  stop(0);
  stop(2);
  nthreads("reuse.exit.w0w2");
  start(4, "reuse.w4");
  start(5, "reuse.w5");
  nthreads("reuse.w4w5");

  // wrap: more threads than arenas.
  start(6, "wrap.w6");
  start(7, "wrap.w7");
  start(8, "wrap.w8");
  nthreads("wrap.w6-w8");
  start(9, "wrap.w9");
  nthreads("wrap.w9");
  stop(7);
  stop(4);
  nthreads("wrap.exit.w7w4");
  start(0, "wrap.w0b");
  nthreads("wrap.w0b");

  // manual: worker 3 moves to a new manual arena and back.
  unsigned m = create_manual("manual.create");
  nthreads("manual.created");
  run(3, kSetArena, "manual.w3.to_manual", m);
  run(3, kReport, "manual.w3.cached");  // its cached small class was filled by the old arena
  run(3, kFlush, "flush");
  run(3, kReport, "manual.w3.flushed");
  nthreads("manual.bound");
  run(3, kHuge, "manual.w3", m);
  destroy("manual.destroy_bound", m);
  run(3, kSetArena, "manual.w3.past_end", m + 1);
  run(3, kSetArena, "manual.w3.back", 2);
  run(3, kFlush, "flush");
  run(3, kReport, "manual.w3.back");
  nthreads("manual.unbound");

  // huge: from automatic threads.
  run(5, kHuge, "huge.w5", m);
  report("huge.main");
  huge_steps("huge.main", m);
  nthreads("huge.after");
  run(5, kSetArena, "huge.w5.to_huge", 4);
  run(5, kFlush, "flush");
  run(5, kReport, "huge.w5.on_huge");
  run(5, kHuge, "huge.w5.on_huge", m);
  nthreads("huge.bound");
  run(5, kSetArena, "huge.w5.back", 1);
  destroy("huge.destroy_unbound", m);
  unsigned m2 = create_manual("huge.recreate");
  (void)m2;
  nthreads("huge.recreated");

  // fork: in the main thread, then in a worker.
  do_fork("fork.main");
  run(6, kFork, "fork.w6");
  nthreads("fork.after");

  for (int k = 0; k < 11; k++) stop(k);
  nthreads("end");
  return jt::diff::g_failures == 0;
}

// --- percpu_arena: its own child (--percpu), MALLOC_CONF=percpu_arena:percpu.
int percpu_main() {
  static char buf[1 << 16];
  std::setvbuf(stdout, buf, _IOLBF, sizeof(buf));
  jt::diff::begin(stdout);
  char mode[32] = "?";
  const char* s = nullptr;
  size_t len = sizeof(s);
  if (mallctl("opt.percpu_arena", &s, &len, nullptr, 0) == 0 && s) {
    std::snprintf(mode, sizeof(mode), "%s", s);
  }
  head("percpu.opt");
  put("-> percpu_arena=%s", mode);
  finish(false);
  if (std::strcmp(mode, "percpu") != 0) {
    std::printf("unsupported\n");
    return 0;
  }
  int rc;
  head("percpu.narenas");
  put("-> opt.narenas=%u", read_u("opt.narenas", &rc));
  put(" arenas.narenas=%u", read_u("arenas.narenas", &rc));
  finish(false);
  cpu_set_t set;
  unsigned cpu[2], ncpu = 0;
  CPU_ZERO(&set);
  sched_getaffinity(0, sizeof(set), &set);
  for (unsigned c = 0; c < CPU_SETSIZE && ncpu < 2; c++) {
    if (CPU_ISSET(c, &set)) cpu[ncpu++] = c;
  }
  // The main thread bound itself at start-up on whatever CPU it ran: only threads created
  // after pinning are reported.
  pin(cpu[0]);
  head("percpu.cpus");
  put("-> first=%u second=%s", cpu[0], ncpu >= 2 ? "yes" : "none (the CPU 1 part is skipped)");
  finish(false);
  start(0, "percpu.w0.cpu0");
  run(0, kReport, "percpu.w0.cpu0.again");
  if (ncpu >= 2) {
    run(0, kPin, "pin", cpu[1]);
    head("percpu.w0.getcpu");
    put("-> %d", sched_getcpu() == (int)cpu[0] ? 0 : -1);  // main, unchanged
    finish(false);
    run(0, kReport, "percpu.w0.cpu1");
    run(0, kFlush, "flush");
    run(0, kReport, "percpu.w0.cpu1.flushed");
    run(0, kPin, "pin", cpu[0]);
    run(0, kReport, "percpu.w0.cpu0.back");
    pin(cpu[1]);
    start(1, "percpu.w1.cpu1");
    pin(cpu[0]);
  }
  run(0, kSetArena, "percpu.w0.set1", 1);  // inside the per-CPU range
  run(0, kSetArena, "percpu.w0.set3", 3);  // above it
  run(0, kReport, "percpu.w0.on3");
  stop(0);
  stop(1);
  std::fflush(stdout);
  return jt::diff::g_failures == 0 ? 0 : 1;
}

// Differences doc/compat.md documents (by anchor): none of its sections concerns arena choice.
// Nothing is dropped as implementation-dependent either: every line printed follows from the
// binding rules for these step-by-step scenarios.
constexpr jt::diff::Excl kDocumented[] = {{nullptr, nullptr, nullptr, nullptr}};

// Bugs of this library (remove each entry with its fix).
constexpr jt::diff::Excl kKnownBugs[] = {{nullptr, nullptr, nullptr, nullptr}};

char g_pc[2][1 << 16], g_pcerr[2][4096];

TEST(stream_in_process) {
  run_stream(nullptr);
  jt::note("%d failures", jt::diff::g_failures);
}

TEST(same_arena_choice_as_5_3_0) { jt::diff::compare_with_reference(kDocumented, kKnownBugs); }

TEST(same_percpu_arena_choice_as_5_3_0) {
  const char* libs[2];
  if (!jt::diff::libraries(libs)) return;
  const char* args[] = {"--percpu", nullptr};
  for (int k = 0; k < 2; k++) {
    jt::diff::Spawned c;
    ASSERT_TRUE(jt::diff::spawn(&c, libs[k], args, "percpu_arena:percpu", true));
    int st = jt::diff::collect(&c, g_pc[k], sizeof(g_pc[k]), g_pcerr[k], sizeof(g_pcerr[k]), 20000);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      FAIL_MSG("percpu child on %s: status %#x\n%s%s", libs[k], st, g_pc[k], g_pcerr[k]);
      return;
    }
  }
  if (std::strstr(g_pc[0], "unsupported") || std::strstr(g_pc[1], "unsupported")) {
    jt::skip("percpu_arena not enabled by both libraries:\n%s%s", g_pc[0], g_pc[1]);
    return;
  }
  int diffs = 0, lines = 0;
  for (char *pa = g_pc[0], *pb = g_pc[1];; lines++) {
    const char *a = jt::diff::next_line(&pa), *b = jt::diff::next_line(&pb);
    if (a == nullptr && b == nullptr) break;
    if (a == nullptr || b == nullptr) {
      FAIL_MSG("percpu outputs differ in length at line %d", lines);
      return;
    }
    if (std::strcmp(a, b) == 0 || jt::diff::find(kDocumented, std::size(kDocumented), a, b) >= 0 ||
        jt::diff::find(kKnownBugs, std::size(kKnownBugs), a, b) >= 0) {
      continue;
    }
    diffs++;
    std::printf("  difference:\n    ours:  %s\n    5.3.0: %s\n", a, b);
  }
  jt::note("percpu: %d lines, %d unexplained differences", lines, diffs);
  if (diffs) FAIL_MSG("%d percpu lines differ from 5.3.0", diffs);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "--percpu") == 0) return percpu_main();
  return jt::diff::main(argc, argv, run_stream);
}
