// idle_return_test: what a process keeps goes back when its threads stop calling the allocator
// (opt.idle_return, doc/design/memory-return.md). Each case runs in a child process with a
// half-second dirty decay window, so the policy's bound -- two windows after the last free --
// is one second:
//   - an idle pool: four threads build and free about 128 MiB of blocks of 16 B - 230 KiB,
//     twice, then block on a condition variable (alive, no allocator calls), or the main thread
//     keeps a trickle of one 64-byte malloc/free every 100 ms, or the four threads exit; RSS
//     must come back to within a quarter of what the work added to the process's own baseline
//     within 2.5 seconds, where with idle_return:false it keeps at least half;
//   - a single-threaded program never gets a thread of ours, and unshare(CLONE_NEWUSER) (which
//     a multi-threaded process may not call) still works in it;
//   - once everything is returned, the returning thread sleeps: its voluntary context switches
//     stay flat over ten seconds;
//   - fork() from a process whose threads allocate while memory is being returned, many times:
//     no hang, and each child starts with one thread and can allocate.
#include "child.h"
#include "stress.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/wait.h>
#include <time.h>

using namespace jt::subproc;

namespace {

constexpr int kThreads = 4;
constexpr size_t kPerThread = size_t{32} << 20;
constexpr int kMaxBlocks = 1 << 14;
constexpr const char* kConf = "dirty_decay_ms:500,muzzy_decay_ms:0";
constexpr int kWaitMs = 2500;

// /proc files are read with open/read into static buffers: stdio would allocate, and an
// allocation that reaches the page allocator is activity the returning thread wakes for.
char g_file[4096];

const char* read_file(const char* path) {
  const int fd = open(path, O_RDONLY);
  if (fd < 0) return nullptr;
  const ssize_t n = read(fd, g_file, sizeof(g_file) - 1);
  close(fd);
  if (n < 0) return nullptr;
  g_file[n] = '\0';
  return g_file;
}

long rss_kib() {
  const char* s = read_file("/proc/self/statm");
  if (s == nullptr) return -1;
  while (*s != '\0' && *s != ' ') s++;
  return std::atol(s) * (sysconf(_SC_PAGESIZE) / 1024);
}

// A "Key:" line's number in a /proc status file, -1 when absent.
long status_field(const char* path, const char* key) {
  const char* s = read_file(path);
  const char* at = s != nullptr ? std::strstr(s, key) : nullptr;
  return at != nullptr ? std::atol(at + std::strlen(key)) : -1;
}

long nthreads() { return status_field("/proc/self/status", "Threads:"); }

// The status file of the thread named "jemalloc_return" into `path`; false when there is none.
bool returner_status_path(char (&path)[128]) {
  DIR* d = opendir("/proc/self/task");
  if (d == nullptr) return false;
  bool found = false;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
    const char* comm = read_file(path);
    if (comm == nullptr || std::strncmp(comm, "jemalloc_return", 15) != 0) continue;
    std::snprintf(path, sizeof(path), "/proc/self/task/%s/status", e->d_name);
    found = true;
    break;
  }
  closedir(d);
  return found;
}

void sleep_ms(long ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1000000};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

// ---- the work ---------------------------------------------------------------------------

pthread_mutex_t g_mtx = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t g_cond = PTHREAD_COND_INITIALIZER;
int g_done = 0;
bool g_release = false;
bool g_exit_after = false;
bool g_churn = false;  // fork case: keep allocating until released
void* g_blocks[kThreads][kMaxBlocks];

// Mostly small blocks, one in ten between 4 KiB and 230 KiB.
size_t block_size(jt::Rng& rng) {
  return rng.below(10) != 0 ? 16 + rng.below(1008) : 4096 + rng.below(231 * 1024 - 4096);
}

void build_and_free(int id, jt::Rng& rng, size_t budget) {
  void** b = g_blocks[id];
  size_t used = 0;
  int n = 0;
  while (used < budget && n < kMaxBlocks) {
    const size_t sz = block_size(rng);
    b[n] = malloc(sz);
    if (b[n] == nullptr) break;
    std::memset(b[n], 1, sz);
    used += sz;
    n++;
  }
  for (int i = 0; i < n; i++) free(b[i]);
}

void* worker(void* arg) {
  const int id = static_cast<int>(reinterpret_cast<uintptr_t>(arg));
  jt::Rng rng(0x1d1e + id);
  for (int round = 0; round < 2; round++) build_and_free(id, rng, kPerThread);
  pthread_mutex_lock(&g_mtx);
  g_done++;
  pthread_cond_broadcast(&g_cond);
  while (!g_exit_after && !g_release) {
    if (g_churn) {
      pthread_mutex_unlock(&g_mtx);
      build_and_free(id, rng, size_t{2} << 20);
      pthread_mutex_lock(&g_mtx);
    } else {
      pthread_cond_wait(&g_cond, &g_mtx);
    }
  }
  pthread_mutex_unlock(&g_mtx);
  return nullptr;
}

pthread_t g_threads[kThreads];

void start_workers(bool exit_after, bool churn) {
  g_exit_after = exit_after;
  g_churn = churn;
  for (int i = 0; i < kThreads; i++) {
    pthread_create(&g_threads[i], nullptr, &worker, reinterpret_cast<void*>(uintptr_t(i)));
  }
  pthread_mutex_lock(&g_mtx);
  while (g_done < kThreads) pthread_cond_wait(&g_cond, &g_mtx);
  pthread_mutex_unlock(&g_mtx);
}

void release_workers() {
  pthread_mutex_lock(&g_mtx);
  g_release = true;
  pthread_cond_broadcast(&g_cond);
  pthread_mutex_unlock(&g_mtx);
  for (int i = 0; i < kThreads; i++) pthread_join(g_threads[i], nullptr);
}

// ---- child modes ------------------------------------------------------------------------

// arg: "blocked", "trickle" or "exit". RSS before, right after and kWaitMs after the work.
void mode_pool(const char* arg) {
  mode_noop(nullptr);
  const bool exit_after = std::strcmp(arg, "exit") == 0;
  const bool trickle = std::strcmp(arg, "trickle") == 0;
  const long base = rss_kib();
  start_workers(exit_after, /*churn=*/false);
  if (exit_after) {
    for (int i = 0; i < kThreads; i++) pthread_join(g_threads[i], nullptr);
  }
  const long work = rss_kib();
  // Five windows: the policy's bound is two.
  for (int waited = 0; waited < kWaitMs; waited += 100) {
    if (trickle) {
      void* p = malloc(64);
      jt::escape(p);
      free(p);
    }
    sleep_ms(100);
  }
  emit("rss_base_kib", base);
  emit("rss_work_kib", work);
  emit("rss_after_kib", rss_kib());
  if (!exit_after) release_workers();
}

void mode_single(const char*) {
  mode_noop(nullptr);
  static void* p[256];
  for (int round = 0; round < 16; round++) {
    for (int i = 0; i < 256; i++) {
      const size_t sz = i % 8 == 0 ? size_t{1} << 20 : 64 + i * 40;
      p[i] = malloc(sz);
      std::memset(p[i], 1, sz);
    }
    for (int i = 0; i < 256; i++) free(p[i]);
  }
  sleep_ms(200);
  emit("threads", nthreads());
  const int rc = unshare(CLONE_NEWUSER);
  // EINVAL is what a multi-threaded caller gets; EPERM and ENOSPC: the system forbids it.
  emit("unshare", rc == 0 ? 0 : errno == EINVAL ? 1 : -1);
}

void mode_quiet(const char*) {
  mode_noop(nullptr);
  const long base = rss_kib();
  start_workers(/*exit_after=*/false, /*churn=*/false);
  const long work = rss_kib();
  long now = work;
  for (int waited = 0; waited < kWaitMs && now - base > (work - base) / 4; waited += 100) {
    sleep_ms(100);
    now = rss_kib();
  }
  static char path[128];
  const bool found = returner_status_path(path);
  sleep_ms(1500);  // three more windows: the hold's peak and slack age out
  const long before = found ? status_field(path, "voluntary_ctxt_switches:") : -1;
  sleep_ms(10000);
  const long after = found ? status_field(path, "voluntary_ctxt_switches:") : -1;
  emit("returner", found ? 1 : 0);
  emit("switches", after - before);
  release_workers();
}

void mode_fork(const char*) {
  mode_noop(nullptr);
  start_workers(/*exit_after=*/false, /*churn=*/true);
  int ok = 0;
  constexpr int kForks = 40;
  for (int i = 0; i < kForks; i++) {
    sleep_ms(25);
    const pid_t pid = fork();
    if (pid == 0) {
      const long threads = nthreads();
      void* p = malloc(size_t{1} << 20);
      if (p != nullptr) std::memset(p, 1, size_t{1} << 20);
      free(p);
      _exit(threads == 1 && p != nullptr ? 0 : 3);
    }
    int status = 0;
    if (pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
        WEXITSTATUS(status) == 0) {
      ok++;
    }
  }
  emit("forks", kForks);
  emit("forks_ok", ok);
  release_workers();
}

constexpr Mode kModes[] = {{"noop", mode_noop},
                           {"pool", mode_pool},
                           {"single", mode_single},
                           {"quiet", mode_quiet},
                           {"fork", mode_fork}};

std::string conf_with(const char* extra) {
  std::string s = kConf;
  if (extra != nullptr) s = s + "," + extra;
  return s;
}

// RSS after the wait, as a share of what the work added, in percent.
long long kept_percent(const Child& c) {
  const long long base = value(c, "rss_base_kib");
  const long long added = value(c, "rss_work_kib") - base;
  if (added <= 0) return 0;
  return (value(c, "rss_after_kib") - base) * 100 / added;
}

void pool_case(const char* how) {
  Child c;
  if (!child(&c, "pool", kConf, how)) return;
  EXPECT_CHILD(c, "rss_work_kib", kGe, value(c, "rss_base_kib") + 64 * 1024);
  EXPECT_TRUE(kept_percent(c) <= 25);
  if (!child(&c, "pool", conf_with("idle_return:false").c_str(), how)) return;
  // Without it nothing runs decay in a quiet process -- but exiting threads' arenas are purged
  // at their exit, as in 5.3.0.
  if (std::strcmp(how, "exit") != 0) EXPECT_TRUE(kept_percent(c) >= 50);
}

}  // namespace

TEST_COMPAT(idle_pool_returns_memory, "idle-return") { pool_case("blocked"); }
TEST_COMPAT(trickle_pool_returns_memory, "idle-return") { pool_case("trickle"); }
TEST_COMPAT(exited_threads_memory_returns_by_time, "idle-return") { pool_case("exit"); }

TEST_COMPAT(single_threaded_program_gets_no_thread, "idle-return") {
  Child c;
  if (!child(&c, "single", kConf)) return;
  EXPECT_CHILD(c, "threads", kEq, 1);
  EXPECT_CHILD(c, "unshare", kLe, 0);
}

TEST_COMPAT(returning_thread_sleeps_when_nothing_is_left, "idle-return") {
  Child c;
  if (!child(&c, "quiet", kConf)) return;
  EXPECT_CHILD(c, "returner", kEq, 1);
  EXPECT_CHILD(c, "switches", kLe, 1);
}

TEST_COMPAT(fork_while_memory_is_returned, "idle-return") {
  Child c;
  if (!child(&c, "fork", "dirty_decay_ms:100,muzzy_decay_ms:0")) return;
  EXPECT_CHILD(c, "forks_ok", kEq, value(c, "forks"));
}

int main(int argc, char** argv) { return run_main(argc, argv, kModes); }
