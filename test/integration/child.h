// child.h: run this very program again as a CHILD process under a MALLOC_CONF the test
// chooses, and read back what the child observed.  Header-only, on top of harness.h, for the
// integration programs that test run-time options (options_test, conf_sources_test).
//
// Why children: the library reads its options once per process, at the first allocation, so a
// test of what `narenas:3` or `junk:true` does needs a process started with that setting.  The
// parent cannot change its own configuration; it starts `PROGRAM --child MODE [ARG]` (PROGRAM is
// this executable, found through /proc/self/exe) with an environment built from scratch: only
// MALLOC_CONF as the test chooses, plus LD_PRELOAD and JT_REFERENCE passed through so the child
// runs the same library as the parent.  The MALLOC_CONF run.sh gives the parent does not reach
// the children.
//
// Child side: a MODE is a function that does some work and prints what it observed as
// `key=value` lines on stdout (emit, emit_str).  Its stdout buffer is a static array, not the
// allocator's: a child measures the caches the library keeps.  After the mode returned, the
// child writes "child: returning from main" to stderr (tests of exit-time output order on it)
// and exits 0, or 1 when a harness check inside the mode failed.
//
// Parent side: child() runs a mode and fails the test unless it exits 0; run_program() runs any
// program (another helper, or a child expected to abort) and leaves the verdict to the caller.
// The child's stdout and stderr go to memfds the parent reads after it ended; value(),
// text_value(), EXPECT_CHILD() read its key=value lines, contains() / offset() / count() its
// raw output.  Each spawn reuses the same output buffers: a Child is valid until the next one.
//
// Usage, one program per .cc file:
//   #include "child.h"
//   using namespace jt::subproc;
//   void mode_foo(const char *arg) { mode_noop(nullptr); emit("narenas", ...); }
//   constexpr Mode kModes[] = {{"noop", mode_noop}, {"foo", mode_foo}};
//   TEST(foo) { Child c; if (!child(&c, "foo", "narenas:3")) return;
//               EXPECT_CHILD(c, "narenas", kEq, 3); }
//   int main(int argc, char **argv) { return run_main(argc, argv, kModes); }
// run_main() does the `--child` dispatch, finds the program's path, and skips the whole program
// (exit 77) under run.sh's non-default MALLOC_CONF variants: the children choose their own
// configuration, so those variants would only repeat the same runs.  JT_OPTIONS_ALL_VARIANTS=1
// runs anyway.
//
// Like harness.h, this allocates nothing through the library itself: the buffers for a child's
// output and its environment are static.
#ifndef JT_CHILD_H_
#define JT_CHILD_H_

#if defined(JT_HARNESS_H_) && !defined(JT_NO_MAIN)
#error "child.h supplies main() through run_main(): include it before harness.h"
#endif
#ifndef JT_NO_MAIN
#define JT_NO_MAIN
#endif

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

#include "harness.h"

namespace jt::subproc {

// ===========================================================================
// Child side.

inline constexpr unsigned kAllArenas = 4096;  // MALLCTL_ARENAS_ALL

inline char g_stdout_buf[1 << 14];

/// Prints `key=v` on its own line of stdout (read by value() in the parent).
/// Where tests put their scratch files (profile dumps): $TMPDIR, else /tmp.
inline const char* scratch_dir() {
  const char* d = std::getenv("TMPDIR");
  return d != nullptr && d[0] != '\0' ? d : "/tmp";
}

inline void emit(const char* key, long long v) { std::printf("%s=%lld\n", key, v); }
/// Prints `key=v` with a text value ("(null)" for a null one); read by text_value().
inline void emit_str(const char* key, const char* v) {
  std::printf("%s=%s\n", key, v ? v : "(null)");
}

// The harness's arena helpers (arenas.lookup, stats.arenas.<i>.<leaf>), for the programs that
// say `using namespace jt::subproc`.
using ::jt::arena_stat;
using ::jt::arena_stat64;
using ::jt::lookup_arena;

/// The calling thread's arena (thread.arena), UINT_MAX if it cannot be read.
inline unsigned thread_arena() {
  unsigned a = UINT_MAX;
  ctl_get("thread.arena", &a);
  return a;
}

/// Runs the void control arena.<arena>.<what> (decay, purge...); true when it succeeded.
inline bool arena_action(unsigned arena, const char* what) {
  char name[128];
  return mallctl(ctl_name(name, "arena.%u.%s", arena, what), nullptr, nullptr, nullptr, 0) == 0;
}

/// Empties the calling thread's cache (thread.tcache.flush).
inline void tcache_flush() { mallctl("thread.tcache.flush", nullptr, nullptr, nullptr, 0); }

/// Writes one byte in every page of [p, p + n) so the pages are resident.
inline void touch(void* p, size_t n) {
  auto* b = static_cast<volatile unsigned char*>(p);
  for (size_t i = 0; i < n; i += 4096) b[i] = 1;
  if (n > 0) b[n - 1] = 1;
}

/// Bytes in [p, p + n) that differ from c (through volatile reads: p may have been freed, which
/// is the point of the junk tests, so UBSan's object-size check is off here).
__attribute__((no_sanitize("undefined"))) inline size_t count_not(const void* p, size_t n,
                                                                  unsigned char c) {
  auto* b = static_cast<const volatile unsigned char*>(p);
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) bad += b[i] != c;
  return bad;
}

/// Reads a /proc (or /sys) file into buf with plain system calls (no stdio: its buffer would
/// come from the allocator under test and could take the very pages being looked for).
/// Returns the length; buf is NUL-terminated (empty when the file cannot be read).
inline size_t read_proc(const char* path, char* buf, size_t cap) {
  buf[0] = '\0';
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  size_t n = 0;
  while (n + 1 < cap) {
    ssize_t r = read(fd, buf + n, cap - 1 - n);
    if (r <= 0) break;
    n += (size_t)r;
  }
  close(fd);
  buf[n] = '\0';
  return n;
}

// --- What the kernel shows of this process and machine (/proc, /sys).

// Holds the /proc file being parsed: smaps of a process with many mappings is large.
inline char g_proc_buf[4 << 20];

/// True when some line of /proc/self/maps covers addr.
inline bool is_mapped(const void* addr) {
  read_proc("/proc/self/maps", g_proc_buf, sizeof(g_proc_buf));
  uintptr_t a = (uintptr_t)addr;
  for (char* line = g_proc_buf; *line != '\0';) {
    char* end = std::strchr(line, '\n');
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line, "%lx-%lx", &lo, &hi) == 2 && lo <= a && a < hi) return true;
    if (end == nullptr) break;
    line = end + 1;
  }
  return false;
}

/// Walks /proc/self/smaps: for each mapping, whether its VmFlags hold "hg" / "nh".  With
/// addr != 0, only the mapping covering addr counts.  Returns the number of mappings seen.
inline int smaps_flags(uintptr_t addr, int* nhg, int* nnh) {
  read_proc("/proc/self/smaps", g_proc_buf, sizeof(g_proc_buf));
  *nhg = 0;
  *nnh = 0;
  int seen = 0;
  bool in_range = false;
  for (char* line = g_proc_buf; *line != '\0';) {
    char* end = std::strchr(line, '\n');
    if (end != nullptr) *end = '\0';
    unsigned long lo = 0, hi = 0;
    char dash = 0;
    if (std::sscanf(line, "%lx%c%lx", &lo, &dash, &hi) == 3 && dash == '-') {
      in_range = addr == 0 || (lo <= addr && addr < hi);
      if (in_range) seen++;
    } else if (in_range && std::strncmp(line, "VmFlags:", 8) == 0) {
      // Flags are two-letter words separated by spaces.
      for (const char* f = line + 8; *f != '\0'; f++) {
        if (f[0] == ' ' && f[1] != '\0' && f[2] != '\0' && (f[3] == ' ' || f[3] == '\0')) {
          if (f[1] == 'h' && f[2] == 'g') (*nhg)++;
          if (f[1] == 'n' && f[2] == 'h') (*nnh)++;
        }
      }
    }
    if (end == nullptr) break;
    line = end + 1;
  }
  return seen;
}

/// Whether the system THP mode is [madvise] (the THP option tests need it).
inline bool thp_mode_is_madvise() {
  static char buf[256];
  read_proc("/sys/kernel/mm/transparent_hugepage/enabled", buf, sizeof(buf));
  return std::strstr(buf, "[madvise]") != nullptr;
}

/// The profiling tests' guard: false (and the test skipped) in a --disable-prof build, which
/// has no profiler to test.
inline bool profiling_built() {
  bool on = false;
  size_t sz = sizeof(on);
  if (mallctl("config.prof", &on, &sz, nullptr, 0) != 0 || !on) {
    jt::skip("config.prof is false (configure --disable-prof)");
    return false;
  }
  return true;
}

/// The mode every program has: one allocation, so the configuration is read (and any
/// configuration message printed), then `ok=1`.  Other modes start by calling it.
inline void mode_noop(const char*) {
  void* p = malloc(100);
  escape(p);
  free(p);
  emit("ok", 1);
}

/// A child mode: `PROGRAM --child name [arg]` runs fn(arg) (arg null when not given).
struct Mode {
  const char* name;
  void (*fn)(const char* arg);
};

/// The child process's main: runs the mode named `mode` from modes[0, n).  Returns the exit
/// status: 0, 1 (a check in the mode failed) or 2 (no such mode).
inline int child_main(const Mode* modes, size_t n, const char* mode, const char* arg) {
  // stdio's buffer must not come from the allocator: a child measures its caches.
  std::setvbuf(stdout, g_stdout_buf, _IOLBF, sizeof(g_stdout_buf));
  g_current = mode;
  for (size_t i = 0; i < n; i++) {
    if (std::strcmp(modes[i].name, mode) == 0) {
      modes[i].fn(arg);
      std::fflush(stdout);
      std::fprintf(stderr, "child: returning from main\n");
      return failed() ? 1 : 0;
    }
  }
  std::printf("unknown child mode %s\n", mode);
  return 2;
}

// ===========================================================================
// Parent side.

/// This program's path (from /proc/self/exe; set by run_main before the tests run).
inline char g_self[PATH_MAX];

// Output buffers for the latest child (reused by every spawn).
inline char g_out[1 << 16];
inline char g_err[8 << 20];

/// What a finished child left: how it ended and its output.
struct Child {
  const char* what;  // "argv... [MALLOC_CONF=...]" for messages
  int status;        // waitpid status; -1 if it never ran
  bool timed_out;
  const char* out;  // stdout, NUL-terminated
  const char* err;  // stderr, NUL-terminated
  size_t err_len;

  bool exited(int code) const {
    return status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == code;
  }
  bool signaled(int sig) const {
    return status != -1 && WIFSIGNALED(status) && WTERMSIG(status) == sig;
  }
};

inline char g_what[512];
/// How long run_program waits for a child before killing it (a test may raise it briefly).
inline int g_child_timeout_ms = 60000;

/// The basename of g_self: argv[0] for the children.
inline const char* program_name() {
  const char* slash = std::strrchr(g_self, '/');
  return slash != nullptr ? slash + 1 : g_self;
}

/// Reads all of fd (from offset 0) into buf, NUL-terminated; returns the length.
inline size_t slurp(int fd, char* buf, size_t cap) {
  size_t n = 0;
  while (n + 1 < cap) {
    ssize_t r = pread(fd, buf + n, cap - 1 - n, (off_t)n);
    if (r <= 0) break;
    n += (size_t)r;
  }
  buf[n] = '\0';
  return n;
}

/// Runs `path argv...` with an environment holding only MALLOC_CONF=conf (none when conf is
/// null) and the pass-through variables; waits up to g_child_timeout_ms, then kills it.
inline Child run_program(const char* path, const char* const* argv, const char* conf) {
  Child c{g_what, -1, false, g_out, g_err, 0};
  size_t wl = 0;
  for (int i = 0; argv[i] != nullptr && wl < sizeof(g_what) - 1; i++) {
    wl += (size_t)std::snprintf(g_what + wl, sizeof(g_what) - wl, "%s ", argv[i]);
  }
  if (wl < sizeof(g_what) - 1) {
    std::snprintf(g_what + wl, sizeof(g_what) - wl, "[MALLOC_CONF=%s]", conf ? conf : "(unset)");
  }
  g_out[0] = g_err[0] = '\0';
  static char env_conf[1024], env_preload[PATH_MAX + 16], env_ref[64];
  const char* envp[4] = {};
  int ne = 0;
  if (conf != nullptr) {
    std::snprintf(env_conf, sizeof(env_conf), "MALLOC_CONF=%s", conf);
    envp[ne++] = env_conf;
  }
  if (const char* pre = std::getenv("LD_PRELOAD"); pre != nullptr && *pre != '\0') {
    std::snprintf(env_preload, sizeof(env_preload), "LD_PRELOAD=%s", pre);
    envp[ne++] = env_preload;
  }
  if (const char* ref = std::getenv("JT_REFERENCE"); ref != nullptr && *ref != '\0') {
    std::snprintf(env_ref, sizeof(env_ref), "JT_REFERENCE=%s", ref);
    envp[ne++] = env_ref;
  }
  int ofd = memfd_create("child-stdout", MFD_CLOEXEC);
  int efd = memfd_create("child-stderr", MFD_CLOEXEC);
  if (ofd < 0 || efd < 0) {
    FAIL_MSG("memfd_create: %s", std::strerror(errno));
    return c;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(ofd, 1);
    dup2(efd, 2);
    rlimit no_core{0, 0};
    setrlimit(RLIMIT_CORE, &no_core);  // expected aborts leave no core files
    execve(path, const_cast<char* const*>(argv), const_cast<char* const*>(envp));
    _exit(127);
  }
  if (pid < 0) {
    FAIL_MSG("fork: %s", std::strerror(errno));
    close(ofd);
    close(efd);
    return c;
  }
  int st = 0;
  for (int ms = 0;; ms++) {
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid) break;
    if (ms >= g_child_timeout_ms) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      c.timed_out = true;
      break;
    }
    timespec ts{0, 1000000};
    nanosleep(&ts, nullptr);
  }
  c.status = st;
  slurp(ofd, g_out, sizeof(g_out));
  c.err_len = slurp(efd, g_err, sizeof(g_err));
  close(ofd);
  close(efd);
  return c;
}

/// Prints the child's output (for a failure report), at most a few lines of each stream.
inline void show(const Child& c) {
  std::printf("    child %s: status %#x%s\n", c.what, c.status, c.timed_out ? " (timed out)" : "");
  for (int s = 0; s < 2; s++) {
    const char* text = s == 0 ? c.out : c.err;
    int lines = 0;
    for (const char* p = text; *p != '\0' && lines < 25; lines++) {
      const char* e = std::strchr(p, '\n');
      int len = e ? (int)(e - p) : (int)std::strlen(p);
      std::printf("    | %s %.*s\n", s == 0 ? "out" : "err", len, p);
      p = e ? e + 1 : p + len;
    }
  }
}

/// Runs `PROGRAM --child mode [arg]` under conf; fails the test (showing the output) unless
/// the child exits 0.
inline bool child(Child* c, const char* mode, const char* conf, const char* arg = nullptr) {
  const char* argv[] = {program_name(), "--child", mode, arg, nullptr};
  *c = run_program(g_self, argv, conf);
  if (c->exited(0)) return true;
  FAIL_MSG("child did not exit 0");
  show(*c);
  return false;
}

/// The integer the child printed as key=..., or LLONG_MIN (after recording a failure).
inline long long value(const Child& c, const char* key) {
  size_t klen = std::strlen(key);
  for (const char* p = c.out; p != nullptr && *p != '\0';) {
    if (std::strncmp(p, key, klen) == 0 && p[klen] == '=') {
      return std::strtoll(p + klen + 1, nullptr, 10);
    }
    p = std::strchr(p, '\n');
    if (p) p++;
  }
  FAIL_MSG("child %s printed no %s", c.what, key);
  show(c);
  return LLONG_MIN;
}

/// The text after key= on its line (copied into buf), or "" when the child printed no key.
inline const char* text_value(const Child& c, const char* key, char* buf, size_t cap) {
  size_t klen = std::strlen(key);
  for (const char* p = c.out; p != nullptr && *p != '\0';) {
    if (std::strncmp(p, key, klen) == 0 && p[klen] == '=') {
      const char* v = p + klen + 1;
      const char* e = std::strchr(v, '\n');
      size_t n = e ? (size_t)(e - v) : std::strlen(v);
      if (n >= cap) n = cap - 1;
      std::memcpy(buf, v, n);
      buf[n] = '\0';
      return buf;
    }
    p = std::strchr(p, '\n');
    if (p) p++;
  }
  return "";
}

/// Non-overlapping occurrences of needle in hay.
inline int count(const char* hay, const char* needle) {
  int n = 0;
  size_t len = std::strlen(needle);
  for (const char* p = std::strstr(hay, needle); p != nullptr; p = std::strstr(p + len, needle)) {
    n++;
  }
  return n;
}

/// Whether needle occurs in hay.
inline bool contains(const char* hay, const char* needle) {
  return std::strstr(hay, needle) != nullptr;
}

/// Offset of needle in hay, or -1.
inline long offset(const char* hay, const char* needle) {
  const char* p = std::strstr(hay, needle);
  return p ? (long)(p - hay) : -1;
}

/// main() of a program built on this header.  With `--child MODE [ARG]` it runs that mode
/// (child_main).  Otherwise it reads /proc/self/exe into g_self, skips the program (77) under
/// a non-default MALLOC_CONF unless JT_OPTIONS_ALL_VARIANTS=1, calls setup (when given: e.g.
/// to locate a helper program next to g_self) and runs the tests (jt::run_all).
inline int run_main(int argc, char** argv, const Mode* modes, size_t n, void (*setup)() = nullptr) {
  if (argc >= 3 && std::strcmp(argv[1], "--child") == 0) {
    return child_main(modes, n, argv[2], argc >= 4 ? argv[3] : nullptr);
  }
  ssize_t len = readlink("/proc/self/exe", g_self, sizeof(g_self) - 1);
  if (len <= 0) {
    std::printf("FAIL: cannot read /proc/self/exe\n");
    return 1;
  }
  g_self[len] = '\0';
  // The children choose their own configuration, so the runner's MALLOC_CONF variants would
  // only repeat the same runs (and, in conf_sources_test, re-create /etc/malloc.conf each
  // time): run under the default variant only.  JT_OPTIONS_ALL_VARIANTS=1 runs anyway.
  const char* conf = std::getenv("MALLOC_CONF");
  const char* all = std::getenv("JT_OPTIONS_ALL_VARIANTS");
  if (conf != nullptr && *conf != '\0' && (all == nullptr || *all != '1')) {
    if (!preflight()) return 1;
    std::printf("skipped: the children set their own MALLOC_CONF; the parent's changes nothing\n");
    return 77;
  }
  if (setup != nullptr) setup();
  return run_all(argc, argv);
}

/// run_main over a whole table of modes.
template <size_t N>
inline int run_main(int argc, char** argv, const Mode (&modes)[N], void (*setup)() = nullptr) {
  return run_main(argc, argv, modes, N, setup);
}

}  // namespace jt::subproc

/// Expects the child's value for key to satisfy OP (kEq, kLt...) against want; the message
/// names the child.
#define EXPECT_CHILD(c, key, OP, want)                         \
  do {                                                         \
    long long v_ = ::jt::subproc::value(c, key);               \
    if (v_ != LLONG_MIN && !JT_OP(OP, v_, (want))) {           \
      std::printf("    (%s, from child %s)\n", key, (c).what); \
    }                                                          \
  } while (0)

#endif  // JT_CHILD_H_
