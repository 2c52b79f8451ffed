// fork_test: fork() while other threads allocate and free.  The allocator's
// locks must be taken around fork and usable in the child: the child
// allocates, frees, reads statistics through mallctl, starts a thread, and
// sometimes execs /bin/true.  A child that hangs (a lock inherited in the
// locked state) is killed by alarm() and reported.
#include <signal.h>
#include <sys/wait.h>

#include "stress.h"

namespace {

constexpr int kWorkers = 4;
std::atomic<bool> g_stop{false};
std::atomic<long> g_worker_bad{0};
std::atomic<long> g_worker_ops{0};

void* worker(void* arg) {
  jt::Rng rng((uintptr_t)arg);
  void* slots[256] = {};
  size_t sizes[256] = {};
  while (!g_stop.load(std::memory_order_relaxed)) {
    int s = (int)rng.below(256);
    if (slots[s] != nullptr) {
      if (stress::verify(slots[s], sizes[s]) != sizes[s]) g_worker_bad++;
      free(slots[s]);
    }
    sizes[s] = stress::skewed_size(rng);
    slots[s] = rng.below(2) ? malloc(sizes[s]) : mallocx(sizes[s], MALLOCX_TCACHE_NONE);
    if (slots[s] != nullptr) stress::fill(slots[s], sizes[s]);
    if (rng.below(64) == 0) jt::refresh_stats();  // takes the ctl lock
    g_worker_ops.fetch_add(1, std::memory_order_relaxed);
  }
  for (void* p : slots) free(p);
  return nullptr;
}

void* child_thread(void*) {
  void* p = malloc(5000);
  if (p == nullptr) return (void*)1;
  stress::fill(p, 5000);
  void* ok = stress::verify(p, 5000) == 5000 ? nullptr : (void*)1;
  free(p);
  return ok;
}

// Runs in the child; returns the exit status (0 = fine).
int child_work(int round, void* inherited, size_t inherited_size) {
  alarm(20);
  // Memory allocated before the fork is intact and can be freed here.
  if (stress::verify(inherited, inherited_size) != inherited_size) return 2;
  free(inherited);
  jt::Rng rng(round);
  void* blocks[200];
  size_t sizes[200];
  for (int i = 0; i < 200; i++) {
    sizes[i] = stress::skewed_size(rng);
    blocks[i] = malloc(sizes[i]);
    if (blocks[i] == nullptr) return 3;
    stress::fill(blocks[i], sizes[i]);
  }
  for (int i = 0; i < 200; i++) {
    if (stress::verify(blocks[i], sizes[i]) != sizes[i]) return 4;
    free(blocks[i]);
  }
  if (!jt::refresh_stats()) return 5;
  size_t allocated = 0;
  if (jt::ctl_get("stats.allocated", &allocated) != 0 || allocated == 0) return 6;
  unsigned a = UINT_MAX;
  size_t len = sizeof(a);
  if (mallctl("arenas.create", &a, &len, nullptr, 0) != 0) return 7;
  void* p = mallocx(100000, MALLOCX_ARENA(a));
  if (p == nullptr) return 8;
  dallocx(p, 0);
  pthread_t t;
  if (pthread_create(&t, nullptr, child_thread, nullptr) != 0) return 9;
  void* tr = nullptr;
  pthread_join(t, &tr);
  if (tr != nullptr) return 10;
  if (round % 5 == 0) {
    // Allocate, then replace the process image.
    char* arg0 = static_cast<char*>(malloc(16));
    if (arg0 == nullptr) return 11;
    std::strcpy(arg0, "true");
    char* argv[] = {arg0, nullptr};
    execv("/bin/true", argv);
    return 12;  // exec failed
  }
  if (round % 7 == 0) {
    // A fork from the child (now single-threaded plus nothing running).
    pid_t g = fork();
    if (g == 0) {
      void* q = malloc(777);
      _exit(q == nullptr ? 1 : 0);
    }
    int st = 0;
    if (g < 0 || waitpid(g, &st, 0) != g || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return 13;
  }
  return 0;
}

}  // namespace

TEST(fork_while_threads_allocate) {
  g_stop = false;
  g_worker_bad = 0;
  pthread_t ts[kWorkers];
  for (int i = 0; i < kWorkers; i++) {
    ASSERT_EQ(pthread_create(&ts[i], nullptr, worker, (void*)(uintptr_t)(i + 1)), 0);
  }
  const int rounds = 40 * stress::scale();
  int bad = 0;
  for (int r = 0; r < rounds; r++) {
    // Let the workers get going between forks.
    long ops0 = g_worker_ops.load();
    while (g_worker_ops.load() - ops0 < 200) sched_yield();
    size_t isz = 1000 + (size_t)r * 13;
    void* inherited = malloc(isz);
    ASSERT_NOT_NULL(inherited);
    stress::fill(inherited, isz);
    std::fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) _exit(child_work(r, inherited, isz));
    ASSERT_GT(pid, 0);
    free(inherited);
    int st = 0;
    ASSERT_EQ(waitpid(pid, &st, 0), pid);
    if (WIFSIGNALED(st)) {
      FAIL_MSG("round %d: child killed by signal %d%s", r, WTERMSIG(st),
               WTERMSIG(st) == SIGALRM ? " (hung: deadlock after fork?)" : "");
      bad++;
    } else if (WEXITSTATUS(st) != 0) {
      FAIL_MSG("round %d: child exited with %d", r, WEXITSTATUS(st));
      bad++;
    }
    if (bad > 3) break;
  }
  g_stop = true;
  for (pthread_t t : ts) pthread_join(t, nullptr);
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(g_worker_bad.load(), 0);
}

TEST(fork_then_exec_from_child) {
  // exec of /bin/true straight after fork, and after allocating in the child.
  for (int i = 0; i < 4; i++) {
    pid_t pid = fork();
    if (pid == 0) {
      alarm(20);
      if (i % 2 == 1) {
        void* p = malloc(12345);
        if (p == nullptr) _exit(3);
        free(p);
      }
      execl("/bin/true", "true", (char*)nullptr);
      _exit(12);
    }
    ASSERT_GT(pid, 0);
    int st = 0;
    ASSERT_EQ(waitpid(pid, &st, 0), pid);
    EXPECT_TRUE(WIFEXITED(st));
    EXPECT_EQ(WEXITSTATUS(st), 0);
  }
}
