// prof_dump_test: heap profiling end to end, on ours and on Debian's 5.3.0. A child started
// with prof:true,lg_prof_sample:12 allocates known amounts from distinct functions -- in the
// main thread, in a thread still alive at dump time, in a thread that has exited -- and frees
// everything one more function allocated; it writes a profile with mallctl("prof.dump", path),
// reads the file back (heap_v2), attributes each backtrace to the known function whose call
// site is nearest below one of its frames, unsamples each count line as jeprof does
// (scale = 1 / (1 - e^(-(s/n)/R))) and prints the estimates. The parent checks each within
// 10% of the truth and the freed function absent. Known difference: 5.3.0 never samples a
// second thread (doc/profiling.md), so the two threads' functions are checked on ours only.
// A second child forks while profiling: the fork child allocates and dumps, the parent too.
#include <dirent.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>

#include "child.h"

using namespace jt::subproc;

namespace {

constexpr const char* kConf = "prof:true,lg_prof_sample:12";

// The return address of this call: an address inside the calling function, just before its
// allocations.
__attribute__((noinline)) uintptr_t here() {
  return reinterpret_cast<uintptr_t>(__builtin_return_address(0));
}

enum Fn { kSmall, kLarge, kAlive, kExited, kFreed, kNFn };
const char* const kFnName[kNFn] = {"live_small", "live_large", "thread_alive", "thread_exited",
                                   "freed_all"};
uintptr_t g_site[kNFn];
size_t g_truth[kNFn];

void* g_small[32768];
void* g_large[128];
void* g_alive[16384];
void* g_exited[2048];
void* g_freed[4096];

__attribute__((noinline)) void live_small() {
  g_site[kSmall] = here();
  for (void*& p : g_small) p = malloc(128);
  g_truth[kSmall] = sizeof(g_small) / sizeof(void*) * 128;  // 4 MiB
}

__attribute__((noinline)) void live_large() {
  g_site[kLarge] = here();
  for (void*& p : g_large) p = malloc(32768);
  g_truth[kLarge] = sizeof(g_large) / sizeof(void*) * 32768;  // 4 MiB
}

__attribute__((noinline)) void thread_alive_allocs() {
  g_site[kAlive] = here();
  for (void*& p : g_alive) p = malloc(256);
  g_truth[kAlive] = sizeof(g_alive) / sizeof(void*) * 256;  // 4 MiB
}

__attribute__((noinline)) void thread_exited_allocs() {
  g_site[kExited] = here();
  for (void*& p : g_exited) p = malloc(2048);
  g_truth[kExited] = sizeof(g_exited) / sizeof(void*) * 2048;  // 4 MiB
}

__attribute__((noinline)) void freed_all() {
  g_site[kFreed] = here();
  for (void*& p : g_freed) p = malloc(1024);
  for (void* p : g_freed) free(p);
  g_truth[kFreed] = 0;
}

pthread_mutex_t g_mtx = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
int g_stage = 0;  // 1: the alive thread allocated; 2: the dump is done

void* alive_main(void*) {
  thread_alive_allocs();
  pthread_mutex_lock(&g_mtx);
  g_stage = 1;
  pthread_cond_broadcast(&g_cv);
  while (g_stage != 2) pthread_cond_wait(&g_cv, &g_mtx);
  pthread_mutex_unlock(&g_mtx);
  return nullptr;
}

void* exited_main(void*) {
  thread_exited_allocs();
  return nullptr;
}

char g_dump[8 << 20];

void mode_known(const char*);
void mode_fork(const char*);
void mode_churn(const char*);
uint64_t read_dump(const char* path, double* est, int* nthread_lines);

// Where known function f's frames can be: from its site (an address inside it) up to the next
// function of this file that starts after it, and at most 2 KiB. Without the first bound a
// sampled allocation of a neighbouring function -- pthread_create's, called from mode_known
// right after freed_all in the binary -- would be credited to f.
uintptr_t site_end(int f) {
  const uintptr_t fns[] = {
      reinterpret_cast<uintptr_t>(&here),          reinterpret_cast<uintptr_t>(&live_small),
      reinterpret_cast<uintptr_t>(&live_large),    reinterpret_cast<uintptr_t>(&thread_alive_allocs),
      reinterpret_cast<uintptr_t>(&thread_exited_allocs), reinterpret_cast<uintptr_t>(&freed_all),
      reinterpret_cast<uintptr_t>(&alive_main),    reinterpret_cast<uintptr_t>(&exited_main),
      reinterpret_cast<uintptr_t>(&mode_known),
      reinterpret_cast<uintptr_t>(&mode_fork),     reinterpret_cast<uintptr_t>(&mode_churn),
      reinterpret_cast<uintptr_t>(&read_dump)};
  uintptr_t end = g_site[f] + 2048;
  for (uintptr_t a : fns) {
    if (a > g_site[f] && a < end) end = a;
  }
  return end;
}

// Reads the dump at `path` and sums each known function's unsampled live bytes into est[];
// returns the sample period, 0 when the file is not a heap_v2 profile.
uint64_t read_dump(const char* path, double* est, int* nthread_lines) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return 0;
  size_t n = slurp(fd, g_dump, sizeof(g_dump));
  close(fd);
  unsigned long long period = 0;
  if (n == 0 || std::sscanf(g_dump, "heap_v2/%llu", &period) != 1 || period == 0) return 0;
  *nthread_lines = 0;
  int cur = -1;  // function of the current backtrace, -1 none/unknown
  bool in_header = true;
  for (char* line = g_dump; line != nullptr && *line != '\0';) {
    char* next = std::strchr(line, '\n');
    if (next != nullptr) *next++ = '\0';
    if (line[0] == '@') {
      in_header = false;
      cur = -1;
      uintptr_t best = UINTPTR_MAX;
      for (char* p = line + 1; *p != '\0';) {
        char* end;
        unsigned long long a = std::strtoull(p, &end, 16);
        if (end == p) break;
        p = end;
        for (int f = 0; f < kNFn; f++) {
          if (a >= g_site[f] && a < site_end(f) && a - g_site[f] < best) {
            best = a - g_site[f];
            cur = f;
          }
        }
        if (cur >= 0) break;  // the innermost frame in a known function decides
      }
    } else if (std::strncmp(line, "MAPPED_LIBRARIES:", 17) == 0) {
      break;
    } else {
      unsigned long long c, s;
      const char* t = line;
      while (*t == ' ') t++;
      if (in_header && t[0] == 't' && t[1] != '*') ++*nthread_lines;
      if (!in_header && cur >= 0 && std::strncmp(t, "t*:", 3) == 0 &&
          std::sscanf(t + 3, " %llu: %llu", &c, &s) == 2 && c > 0) {
        double ratio = (static_cast<double>(s) / static_cast<double>(c)) / period;
        est[cur] += static_cast<double>(s) / (1.0 - std::exp(-ratio));
      }
    }
    line = next;
  }
  return period;
}

void mode_known(const char* path) {
  live_small();
  live_large();
  pthread_t exited, alive;
  pthread_create(&exited, nullptr, exited_main, nullptr);
  pthread_join(exited, nullptr);
  pthread_create(&alive, nullptr, alive_main, nullptr);
  pthread_mutex_lock(&g_mtx);
  while (g_stage != 1) pthread_cond_wait(&g_cv, &g_mtx);
  pthread_mutex_unlock(&g_mtx);
  freed_all();
  int err = mallctl("prof.dump", nullptr, nullptr, &path, sizeof(path));
  emit("dump_err", err);
  pthread_mutex_lock(&g_mtx);
  g_stage = 2;
  pthread_cond_broadcast(&g_cv);
  pthread_mutex_unlock(&g_mtx);
  pthread_join(alive, nullptr);
  double est[kNFn] = {};
  int nthreads = 0;
  emit("period", static_cast<long long>(read_dump(path, est, &nthreads)));
  emit("thread_lines", nthreads);
  for (int f = 0; f < kNFn; f++) {
    char key[64];
    std::snprintf(key, sizeof(key), "%s.est", kFnName[f]);
    emit(key, std::llround(est[f]));
    std::snprintf(key, sizeof(key), "%s.truth", kFnName[f]);
    emit(key, static_cast<long long>(g_truth[f]));
  }
}

void mode_fork(const char* path) {
  live_small();
  std::fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    // The fork child: profiling state consistent, allocation and dumps work.
    live_large();
    char p2[512];
    std::snprintf(p2, sizeof(p2), "%s.child", path);
    const char* pp = p2;
    int err = mallctl("prof.dump", nullptr, nullptr, &pp, sizeof(pp));
    double est[kNFn] = {};
    int nt = 0;
    _exit(err == 0 && read_dump(p2, est, &nt) != 0 && est[kLarge] > 0 ? 0 : 3);
  }
  int status = -1;
  waitpid(pid, &status, 0);
  emit("fork_child_ok", WIFEXITED(status) && WEXITSTATUS(status) == 0);
  int err = mallctl("prof.dump", nullptr, nullptr, &path, sizeof(path));
  double est[kNFn] = {};
  int nt = 0;
  emit("parent_dump_ok", err == 0 && read_dump(path, est, &nt) != 0 && est[kSmall] > 0);
}

// Allocates and frees 80 MiB, 4 KiB at a time (interval dumps), leaving 64 KiB leaked.
void mode_churn(const char*) {
  for (int i = 0; i < 20480; i++) {
    void* volatile p = malloc(4096);
    free(p);
  }
  for (int i = 0; i < 16; i++) jt::escape(malloc(4096));
  emit("pid", getpid());
  std::fflush(stdout);  // prof_leak_error ends the process with _exit(1)
}

// A sampled small block freed with its size (sdallocx). It is promoted to a 16 KiB extent, and
// the sized-free fast path must never push it into a small bin: ours tells the two apart by
// page alignment, so a sampled block stays page aligned even when its extent comes from the
// thread cache, whose other 16 KiB blocks have cacheline offsets (5.3.0 looks every sized free
// up under opt.prof). Each round leaves such a block on top of the 16 KiB bin (profiling
// inactive), samples a 64-byte allocation (lg_prof_sample:0), frees it with its size, and
// checks that the next unsampled 64-byte allocation is not that block.
void set_active(bool on) { mallctl("prof.active", nullptr, nullptr, &on, sizeof(on)); }

void mode_sized(const char*) {
  int reused = 0;
  for (int i = 0; i < 256; i++) {
    set_active(false);
    void* big = malloc(16384);
    jt::escape(big);
    free(big);
    set_active(true);
    void* p = malloc(64);
    jt::escape(p);
    sdallocx(p, 64, 0);
    set_active(false);
    void* q = malloc(64);
    jt::escape(q);
    if (q == p) reused++;
    free(q);
  }
  set_active(true);
  emit("sampled_reused_as_small", reused);
}

constexpr Mode kModes[] = {{"noop", mode_noop},
                           {"known", mode_known},
                           {"fork", mode_fork},
                           {"churn", mode_churn},
                           {"sized", mode_sized}};

// Where the dumps go: $TMPDIR, else /tmp.
const char* dump_dir() { return scratch_dir(); }

// Removes the files <dump_dir>/<stem>.<pid>.<seq>.<kind>*.heap and returns how many there were.
int take_dumps(const char* stem, long long pid, char kind) {
  char head[256];
  std::snprintf(head, sizeof(head), "%s.%lld.", stem, pid);
  DIR* d = opendir(dump_dir());
  if (d == nullptr) return -1;
  int n = 0;
  while (dirent* e = readdir(d)) {
    size_t hl = std::strlen(head);
    if (std::strncmp(e->d_name, head, hl) != 0) continue;
    const char* dot = std::strchr(e->d_name + hl, '.');  // past <seq>
    char path[512];
    std::snprintf(path, sizeof(path), "%s/%s", dump_dir(), e->d_name);
    if (dot != nullptr && dot[1] == kind) {
      n++;
      unlink(path);
    }
  }
  closedir(d);
  return n;
}

void dump_path(char (&buf)[256], const char* tag) {
  std::snprintf(buf, sizeof(buf), "%s/prof_dump_test.%d.%s.heap", dump_dir(), static_cast<int>(getpid()),
                tag);
}

}  // namespace

TEST(prof_dump_attributes_known_functions_within_10_percent) {
  if (!profiling_built()) return;
  char path[256];
  dump_path(path, "known");
  Child c;
  bool ran = child(&c, "known", kConf, path);
  unlink(path);
  if (!ran) return;
  EXPECT_CHILD(c, "dump_err", kEq, 0);
  EXPECT_CHILD(c, "period", kEq, 4096);
  const bool ref = jt::is_reference();
  for (int f = 0; f < kNFn; f++) {
    // 5.3.0 samples no thread but the first (profiling-facts.md).
    if (ref && (f == kAlive || f == kExited)) continue;
    char key[64];
    std::snprintf(key, sizeof(key), "%s.truth", kFnName[f]);
    long long truth = value(c, key);
    std::snprintf(key, sizeof(key), "%s.est", kFnName[f]);
    long long est = value(c, key);
    if (f == kFreed) {
      EXPECT_EQ(est, 0);
    } else if (std::llabs(est - truth) > truth / 10) {
      FAIL_MSG("%s: %lld bytes estimated, truth %lld (more than 10%% off)", kFnName[f], est, truth);
    }
  }
  // The whole-process line names each thread with live samples: main, the exited one and the
  // one alive at dump time.
  if (!ref) EXPECT_CHILD(c, "thread_lines", kGe, 3);
}

TEST(prof_dump_after_fork_in_parent_and_child) {
  if (!profiling_built()) return;
  char path[256], child_path[300];
  dump_path(path, "fork");
  std::snprintf(child_path, sizeof(child_path), "%s.child", path);
  Child c;
  bool ran = child(&c, "fork", "prof:true,lg_prof_sample:10", path);
  unlink(path);
  unlink(child_path);
  if (!ran) return;
  EXPECT_CHILD(c, "fork_child_ok", kEq, 1);
  EXPECT_CHILD(c, "parent_dump_ok", kEq, 1);
}

TEST(prof_interval_final_and_leak_error) {
  if (!profiling_built()) return;
  char stem[64], conf[256];
  std::snprintf(stem, sizeof(stem), "prof_dump_test_%d", static_cast<int>(getpid()));
  // 80 MiB at lg_prof_interval:24 (16 MiB): 4 interval dumps (5.3.0 writes 4 too), then the
  // final dump at exit.
  std::snprintf(conf, sizeof(conf),
                "prof:true,lg_prof_interval:24,prof_final:true,prof_prefix:%s/%s", dump_dir(), stem);
  Child c;
  if (child(&c, "churn", conf)) {
    long long pid = value(c, "pid");
    int ni = take_dumps(stem, pid, 'i');
    if (ni < 3 || ni > 5) FAIL_MSG("%d interval dumps, expected about 4", ni);
    EXPECT_EQ(take_dumps(stem, pid, 'f'), 1);
  }
  // prof_leak_error: the 64 KiB left allocated make the process exit with status 1, at every
  // sample rate where it is sampled (lg_prof_sample:0: every allocation).
  std::snprintf(
      conf, sizeof(conf),
      "prof:true,lg_prof_sample:0,prof_final:true,prof_leak_error:true,prof_prefix:%s/%s",
      dump_dir(), stem);
  const char* argv[] = {program_name(), "--child", "churn", nullptr};
  Child l = run_program(g_self, argv, conf);
  if (!l.exited(1)) {
    FAIL_MSG("prof_leak_error: expected exit status 1");
    show(l);
  }
  EXPECT_TRUE(contains(l.err, "<jemalloc>: Leak approximation summary: "));
  EXPECT_EQ(take_dumps(stem, value(l, "pid"), 'f'), 1);
}

TEST(prof_sampled_small_blocks_and_sized_frees) {
  if (!profiling_built()) return;
  Child c;
  if (!child(&c, "sized", "prof:true,lg_prof_sample:0")) return;
  EXPECT_CHILD(c, "sampled_reused_as_small", kEq, 0);
}

int main(int argc, char** argv) { return run_main(argc, argv, kModes); }
