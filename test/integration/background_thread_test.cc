// background_thread_test: purging threads through the public API (jemalloc 5.3.0's
// background_thread option and mallctls). Switching them on with mallctl("background_thread") makes
// an idle process return its dirty pages once dirty_decay_ms has passed, without any allocation
// activity; the stats.background_thread.* counters move; switching off stops (joins) them; a fork()
// child reports them off and works; MALLOC_CONF=background_thread:true starts them at init (checked
// in a re-executed copy of this program).
//
#define JT_NO_MAIN
#include <dirent.h>
#include <fcntl.h>
#include <sys/wait.h>

#include <unistd.h>

#include "harness.h"

namespace {

constexpr size_t kLarge = 64 * 1024;
constexpr int kNLarge = 32;
// Environment marker of the re-executed child (see malloc_conf_starts_threads).
constexpr const char* kConfChildEnv = "JT_BG_CONF_CHILD";

bool bg_enabled() {
  bool on = false;
  jt::ctl_get("background_thread", &on);
  return on;
}

int bg_set(bool on) { return jt::ctl_set("background_thread", on); }

struct BgStats {
  size_t num_threads = 0;
  uint64_t num_runs = 0;
  uint64_t run_interval = 0;
};

BgStats bg_stats() {
  BgStats s;
  jt::refresh_stats();
  jt::ctl_get("stats.background_thread.num_threads", &s.num_threads);
  jt::ctl_get("stats.background_thread.num_runs", &s.num_runs);
  jt::ctl_get("stats.background_thread.run_interval", &s.run_interval);
  return s;
}

size_t max_threads() {
  size_t m = 0;
  jt::ctl_get("max_background_threads", &m);
  return m;
}

// Threads of this process named as jemalloc names its purging threads.
int count_bg_threads() {
  DIR* d = opendir("/proc/self/task");
  if (d == nullptr) return -1;
  int n = 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    char path[64];
    std::snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
    int fd = open(path, O_RDONLY);
    if (fd < 0) continue;
    char comm[32] = {};
    ssize_t len = read(fd, comm, sizeof(comm) - 1);
    close(fd);
    if (len > 0 && std::strncmp(comm, "jemalloc_bg_thd", 15) == 0) n++;
  }
  closedir(d);
  return n;
}

// The waits below return as soon as what they wait for happens; their limits only bound a
// failing run. They are generous because `make check` runs tests side by side, often on a
// machine busy with other work at a higher priority, where this process may not run for
// hundreds of milliseconds at a time.
constexpr int kWaitMs = 10000;

// Whether at least one such thread shows up (a new thread names itself, so a count taken right
// after switching on may still miss it).
bool bg_threads_appear() {
  for (int waited = 0; waited < kWaitMs; waited += 10) {
    if (count_bg_threads() >= 1) return true;
    usleep(10 * 1000);
  }
  return false;
}

// Whether they are all gone: pthread_join returns once the thread's stack is free, but the
// kernel may list the exiting task a little longer.
bool bg_threads_vanish() {
  for (int waited = 0; waited < kWaitMs; waited += 10) {
    if (count_bg_threads() == 0) return true;
    usleep(10 * 1000);
  }
  return false;
}

unsigned create_arena() {
  unsigned a = UINT_MAX;
  size_t len = sizeof(a);
  if (mallctl("arenas.create", &a, &len, nullptr, 0) != 0) return UINT_MAX;
  return a;
}

size_t arena_pdirty(unsigned a) {
  char name[128];
  size_t v = SIZE_MAX;
  jt::refresh_stats();
  jt::ctl_get(jt::ctl_name(name, "stats.arenas.%u.pdirty", a), &v);
  return v;
}

uint64_t arena_dirty_purged(unsigned a) {
  char name[128];
  uint64_t v = 0;
  jt::refresh_stats();
  jt::ctl_get(jt::ctl_name(name, "stats.arenas.%u.dirty_purged", a), &v);
  return v;
}

// Frees kNLarge large blocks of arena a, bypassing the thread cache: their pages become dirty.
bool make_dirty(unsigned a) {
  void* ps[kNLarge];
  int flags = MALLOCX_ARENA(a) | MALLOCX_TCACHE_NONE;
  for (int i = 0; i < kNLarge; i++) {
    ps[i] = mallocx(kLarge, flags);
    if (ps[i] == nullptr) return false;
    std::memset(ps[i], 1, kLarge);
  }
  for (int i = 0; i < kNLarge; i++) dallocx(ps[i], flags);
  return true;
}

// Pages of arena a that went dirty since its dirty_purged counter read purged_before: those
// still dirty plus those purged since, once they add up to `want` or kWaitMs passes (returns the
// last sum). The purged ones count because a test that does not run for longer than the 100 ms
// decay time (see kWaitMs) finds some or all of its freed pages purged already. The two are
// read again until they add up: a purge run takes pages out of pdirty before it adds them to
// dirty_purged (when it finishes), so a page being purged is in neither for a while.
size_t wait_dirtied(unsigned a, uint64_t purged_before, size_t want) {
  size_t n = 0;
  for (int waited = 0;; waited += 10) {
    n = arena_pdirty(a) + static_cast<size_t>(arena_dirty_purged(a) - purged_before);
    if (n >= want || waited >= kWaitMs) return n;
    usleep(10 * 1000);
  }
}

// How long the purge of an idle arena may take. One thread serves several arenas (index modulo
// max_background_threads), and a burst of fewer than 1024 new dirty pages wakes it early only
// from a sleep without a deadline (as in 5.3.0); while another of its arenas -- arena 0, with
// the default dirty_decay_ms of 10 s -- keeps it on a deadline, the test arena's pages wait for
// that deadline, which can lie a little beyond 10 s after a few pages were freed there.
constexpr int kPurgeWaitMs = 25000;

// Sleeps in 20 ms steps (mallctl reads only, no allocation) until arena a has no dirty pages,
// or kPurgeWaitMs passes. Returns the last pdirty seen.
size_t wait_clean(unsigned a) {
  size_t pd = arena_pdirty(a);
  for (int waited = 0; pd != 0 && waited < kPurgeWaitMs; waited += 20) {
    usleep(20 * 1000);
    pd = arena_pdirty(a);
  }
  return pd;
}

// A manual arena whose dirty pages decay in 100 ms (the MALLOC_CONF variant may say otherwise
// for new arenas).
unsigned short_decay_arena() {
  unsigned a = create_arena();
  if (a == UINT_MAX) return a;
  char name[128];
  ssize_t ms = 100;
  if (jt::ctl_set(jt::ctl_name(name, "arena.%u.dirty_decay_ms", a), ms) != 0) return UINT_MAX;
  return a;
}

}  // namespace

TEST(switch_on_and_off) {
  ASSERT_FALSE(bg_enabled());
  EXPECT_EQ(max_threads(), 4u);
  BgStats s = bg_stats();
  EXPECT_EQ(s.num_threads, 0u);
  EXPECT_EQ(s.num_runs, 0u);
  // The old value comes back with the write.
  bool old = true, on = true;
  size_t len = sizeof(old);
  ASSERT_EQ(mallctl("background_thread", &old, &len, &on, sizeof(on)), 0);
  EXPECT_FALSE(old);
  EXPECT_TRUE(bg_enabled());
  EXPECT_EQ(bg_set(true), 0);  // no change
  s = bg_stats();
  EXPECT_GE(s.num_threads, 1u);  // arena 0 exists
  EXPECT_LE(s.num_threads, max_threads());
  EXPECT_TRUE(bg_threads_appear());
  // A wrong size is refused and changes nothing.
  EXPECT_EQ(mallctl("background_thread", nullptr, nullptr, &on, 4), EINVAL);
  EXPECT_TRUE(bg_enabled());
  // Off: the threads are stopped and joined before mallctl returns.
  ASSERT_EQ(bg_set(false), 0);
  EXPECT_FALSE(bg_enabled());
  EXPECT_TRUE(bg_threads_vanish());
  s = bg_stats();
  EXPECT_EQ(s.num_threads, 0u);
  EXPECT_EQ(s.num_runs, 0u);
  EXPECT_EQ(s.run_interval, 0u);
  // And on again.
  ASSERT_EQ(bg_set(true), 0);
  EXPECT_TRUE(bg_enabled());
  ASSERT_EQ(bg_set(false), 0);
}

TEST(idle_process_purges) {
  unsigned a = short_decay_arena();
  ASSERT_NE(a, UINT_MAX);
  ASSERT_EQ(bg_set(true), 0);
  BgStats s0 = bg_stats();
  uint64_t purged0 = arena_dirty_purged(a);
  ASSERT_TRUE(make_dirty(a));
  EXPECT_GE(wait_dirtied(a, purged0, kNLarge * kLarge / 4096), kNLarge * kLarge / 4096);
  // Nothing allocates from here on: only the background thread can purge.
  EXPECT_EQ(wait_clean(a), 0u);
  // The pages leave the dirty cache before the purge run updates its counters and finishes:
  // give the thread a moment to get there.
  BgStats s = bg_stats();
  for (int i = 0; i < kWaitMs / 10 && (arena_dirty_purged(a) - purged0 < kNLarge * kLarge / 4096 ||
                                       s.num_runs <= s0.num_runs);
       i++) {
    usleep(10000);
    s = bg_stats();
  }
  EXPECT_GE(arena_dirty_purged(a) - purged0, kNLarge * kLarge / 4096);
  EXPECT_GE(s.num_threads, 1u);
  EXPECT_GT(s.num_runs, s0.num_runs);
  // A second burst, freed while the owner sleeps, goes the same way.
  const uint64_t purged1 = arena_dirty_purged(a);
  ASSERT_TRUE(make_dirty(a));
  EXPECT_GT(wait_dirtied(a, purged1, 1), 0u);
  EXPECT_EQ(wait_clean(a), 0u);
  // run_interval averages the time slept per run, and a sleep counts once it ends: a thread
  // that got its first run late (a loaded machine) and purged everything there is still in its
  // first sleep, and reads 0 in 5.3.0 as here. The second burst ends that sleep.
  s = bg_stats();
  for (int i = 0; i < kWaitMs / 10 && s.run_interval == 0; i++) {
    usleep(10000);
    s = bg_stats();
  }
  EXPECT_GT(s.run_interval, 0u);
  ASSERT_EQ(bg_set(false), 0);
}

TEST(arena_created_while_on_is_served) {
  ASSERT_EQ(bg_set(true), 0);
  unsigned a = short_decay_arena();
  ASSERT_NE(a, UINT_MAX);
  ASSERT_TRUE(make_dirty(a));
  EXPECT_EQ(wait_clean(a), 0u);
  ASSERT_EQ(bg_set(false), 0);
}

TEST(max_background_threads_write) {
  EXPECT_EQ(max_threads(), 4u);
  size_t opt = 0;
  ASSERT_EQ(jt::ctl_get("opt.max_background_threads", &opt), 0);
  EXPECT_EQ(opt, 4u);
  EXPECT_EQ(jt::ctl_set("max_background_threads", size_t{5}), EINVAL);
  EXPECT_EQ(jt::ctl_set("max_background_threads", unsigned{2}), EINVAL);  // wrong size
  ASSERT_EQ(bg_set(true), 0);
  unsigned a = short_decay_arena();
  ASSERT_NE(a, UINT_MAX);
  ASSERT_TRUE(make_dirty(a));
  ASSERT_EQ(jt::ctl_set("max_background_threads", size_t{1}), 0);  // restarts them
  EXPECT_EQ(max_threads(), 1u);
  EXPECT_TRUE(bg_enabled());
  EXPECT_EQ(bg_stats().num_threads, 1u);
  // The one thread left serves every arena. (The pages were freed before the restart: 5.3.0
  // occasionally misses pages freed while a freshly restarted thread 0 sleeps.)
  EXPECT_EQ(wait_clean(a), 0u);
  ASSERT_EQ(jt::ctl_set("max_background_threads", size_t{4}), 0);
  EXPECT_TRUE(bg_enabled());
  ASSERT_EQ(bg_set(false), 0);
}

TEST(fork_child_has_them_off) {
  ASSERT_EQ(bg_set(true), 0);
  std::fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    int bad = 0;
    if (bg_enabled()) bad |= 1;
    if (bg_stats().num_threads != 0) bad |= 2;
    void* p = malloc(100000);
    if (p == nullptr) bad |= 4;
    free(p);
    // The child may start its own.
    if (bg_set(true) != 0 || !bg_enabled() || !bg_threads_appear()) bad |= 8;
    if (bg_set(false) != 0 || !bg_threads_vanish()) bad |= 16;
    _exit(bad);
  }
  ASSERT_GT(pid, 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_TRUE(bg_enabled());  // the parent keeps its threads
  EXPECT_TRUE(bg_threads_appear());
  ASSERT_EQ(bg_set(false), 0);
}

TEST(malloc_conf_starts_threads) {
  // Re-run this program with background_thread:true appended to MALLOC_CONF (keeping the
  // runner's variant and its LD_PRELOAD); the child checks from the inside.
  std::fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    const char* conf = std::getenv("MALLOC_CONF");
    char buf[512];
    std::snprintf(buf, sizeof(buf), "%s%sbackground_thread:true", conf ? conf : "",
                  conf && *conf ? "," : "");
    setenv("MALLOC_CONF", buf, 1);
    setenv(kConfChildEnv, "1", 1);
    char* argv[] = {const_cast<char*>("background_thread_test"), nullptr};
    execv("/proc/self/exe", argv);
    _exit(127);
  }
  ASSERT_GT(pid, 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

namespace {

// The re-executed child of malloc_conf_starts_threads: prints what is wrong, exits non-zero.
int conf_child() {
  int bad = 0;
  auto check = [&bad](bool ok, const char* what) {
    if (!ok) {
      std::printf("conf child: %s\n", what);
      bad = 1;
    }
  };
  void* p = malloc(10);  // initializes the library
  free(p);
  bool opt = false;
  check(jt::ctl_get("opt.background_thread", &opt) == 0 && opt, "opt.background_thread");
  check(bg_enabled(), "background_thread reads true");
  check(bg_stats().num_threads >= 1, "num_threads >= 1");
  check(bg_threads_appear(), "a jemalloc_bg_thd thread runs");
  // And it purges an idle process.
  unsigned a = short_decay_arena();
  check(a != UINT_MAX && make_dirty(a), "dirty a fresh arena");
  if (a != UINT_MAX) check(wait_clean(a) == 0, "idle purge");
  check(bg_set(false) == 0 && bg_threads_vanish(), "switch off");
  return bad;
}

}  // namespace

int main(int argc, char** argv) {
  if (std::getenv(kConfChildEnv) != nullptr) return conf_child();
  return jt::run_all(argc, argv);
}
