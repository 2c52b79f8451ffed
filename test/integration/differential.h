// differential.h: differential testing against jemalloc 5.3.0 -- run one deterministic stream
// of calls in two CHILD processes, one on this library and one on the reference, record what
// each call answered as one text line, and compare the two records line by line.  Header-only,
// on top of harness.h, for the fuzz programs (mallctl_fuzz_test, alloc_fuzz_test).
//
// Why two children: both libraries define the same names, so they cannot share a process.  The
// program re-executes itself (/proc/self/exe) as `PROGRAM --record` twice, with an environment
// built from scratch: LD_PRELOAD of the library file (the preloaded soname satisfies the
// program's NEEDED entry, so no second copy loads), MALLOC_CONF unset, and DIFF_LIB naming the
// file so the child can verify that the entry points really come from it (LD_PRELOAD fails
// silently).  Each child's stdout goes to a memfd the parent reads after the child ended, into
// static buffers: nothing here allocates through the library under test.
//
// The record: one line per call, `SEQ OP NAME | arguments -> results`, where NAME is a canonical
// name for what was called (a mallctl name with its indices, an API function with the class of
// its arguments) and everything after it is whatever the program chose to record.  A line must
// never contain what legitimately differs between two correct allocators (addresses, statistics
// values); the program prints symbolic forms instead.  Lines are built with put() and ended
// with finish(); a line that already shows a broken guarantee (finish(true)) fails the run.
//
// The comparison (compare_with_reference): identical lines pass; a differing pair is excused by
// the first entry of the program's kDocumented table (differences doc/compat.md documents; each
// entry cites its anchor) whose glob matches the NAME of either line, whose `args` substring
// (if any) occurs in either line, and whose `unless` substring (if any) does not occur in ours;
// then by its kKnownBugs table (bugs of this library not yet fixed: each is to be removed with
// its fix).  Anything else is an unexplained difference and fails the test; the first 30 are
// printed.  The counts per entry are printed as notes so excused lines stay visible.
//
// Usage, one program per .cc file:
//   #include "differential.h"
//   bool run_stream(FILE *out) { jt::diff::begin(out); ...; jt::diff::put("%05d call %s | ...",
//                                 seq, name); jt::diff::finish(bad); ...; return !failures; }
//   constexpr jt::diff::Excl kDocumented[] = {{"prof.*", nullptr, nullptr, "profiling-partial"}};
//   constexpr jt::diff::Excl kKnownBugs[] = {{nullptr, nullptr, nullptr, nullptr}};
//   TEST(stream_in_process) { run_stream(nullptr); }
//   TEST(same_results_as_5_3_0) { jt::diff::compare_with_reference(kDocumented, kKnownBugs); }
//   constexpr const char *kConfs[] = {"junk:true", "narenas:1"};  // optional: option variants
//   TEST(same_under_options) {
//     jt::diff::compare_with_reference_under(kConfs, kDocumented, kKnownBugs);
//   }
//   int main(int argc, char **argv) { return jt::diff::main(argc, argv, run_stream); }
// main() dispatches `--record` to the stream (exit 0, 1 when a line showed a failure, 2 when
// the wrong library is loaded) and skips the whole program (exit 77) under run.sh's non-default
// MALLOC_CONF variants: the children run with MALLOC_CONF unset, so a variant would only repeat
// the same comparison (JT_OPTIONS_ALL_VARIANTS=1: run anyway).  REF_LIB names the reference
// (default Debian's libjemalloc.so.2; empty: no comparison).  On the reference itself only the
// in-process part runs.
//
// Option variants (compare_with_reference_under): the same stream recorded under each of a
// list of MALLOC_CONF strings, once per library and variant (the pair runs at once), each
// variant compared on its own exactly as above; a failure names the variant.  The program's own
// malloc_conf global still applies underneath a variant (MALLOC_CONF comes after it) and its
// malloc_conf_2_conf_harder on top (our library only), so a program lists only variants that
// keep its stream deterministic.  An excuse whose `conf` is set applies only under that exact
// variant string (a difference one option causes); conf null: in every run.
//
// Programs that need a fresh process per case instead of one stream (options are read once, at
// the first allocation, so conf_diff_test runs one child per MALLOC_CONF string) use the
// single-run helpers: spawn() starts `PROGRAM ARGS...` on one library with a chosen MALLOC_CONF,
// collect() waits for it and returns its stdout and stderr; libraries() finds the pair to compare,
// find_one() matches one line against an excuse table (for records where one library prints a
// line the other does not).  Such a program has its own child dispatch before calling main() with
// a null stream (no --record mode).
//
// Layout: a program whose records show extent sizes (page counts, mapped bytes, in-place
// resizes) passes Layout::kSame to compare_with_reference(_under) or libraries(). It is then
// skipped when the two libraries differ in config.cache_oblivious (this one configured
// --disable-cache-oblivious against Debian's default build, say): every large extent differs
// by a page and every such line would differ. The reference's value comes from a child run
// with `--config-probe`, which main() answers before anything else.
#ifndef JT_DIFFERENTIAL_H_
#define JT_DIFFERENTIAL_H_

#if defined(JT_HARNESS_H_) && !defined(JT_NO_MAIN)
#error "differential.h supplies main() through jt::diff::main(): include it before harness.h"
#endif
#ifndef JT_NO_MAIN
#define JT_NO_MAIN
#endif

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "harness.h"

namespace jt::diff {

// ===========================================================================
// Recording: the stream's generator, the line in progress, and where finished lines go.

/// splitmix64.  A stream seeds one per call (seed and call number), so a call that goes
/// differently in one library does not shift the rest of the stream.
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  uint64_t below(uint64_t n) { return n ? next() % n : 0; }
  bool chance(unsigned pct) { return below(100) < pct; }
  template <class T, size_t N>
  T pick(const T (&a)[N]) {
    return a[below(N)];
  }
};

inline FILE* g_out;             // the record (stdout of a --record child), or null: checks only
inline int g_failures;          // lines that showed a broken guarantee
inline char g_line[2048];       // the line in progress
inline char g_crash_ctx[2050];  // the call in progress, for the crash report

/// Starts a stream: finished lines go to out (null: only failures are reported, in-process).
inline void begin(FILE* out) {
  g_out = out;
  g_failures = 0;
  g_line[0] = '\0';
}

/// Appends printf-style text to the line in progress.
inline void put(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
inline void put(const char* fmt, ...) {
  size_t o = std::strlen(g_line);
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(g_line + o, sizeof(g_line) - o, fmt, ap);
  va_end(ap);
}

/// Appends s in double quotes, bytes outside printable ASCII (and quote, backslash) as \xNN.
inline void put_escaped(const char* s) {
  put("\"");
  for (const unsigned char* p = (const unsigned char*)s; *p; p++) {
    put(*p < 0x20 || *p >= 0x7f || *p == '"' || *p == '\\' ? "\\x%02x" : "%c", *p);
  }
  put("\"");
}

/// Ends the line: prints it (record mode), or reports it as a failure when bad (in-process).
inline void finish(bool bad) {
  g_failures += bad;
  if (g_out != nullptr)
    std::fprintf(g_out, "%s\n", g_line);
  else if (bad)
    FAIL_MSG("%s", g_line);
  g_line[0] = '\0';
}

/// Names the call about to run for the crash report: the line so far, or what.
inline void mark(const char* what = nullptr) {
  std::snprintf(g_crash_ctx, sizeof(g_crash_ctx), "%s", what ? what : g_line);
}

inline void on_crash(int sig) {  // installed with SA_RESETHAND: raise() takes the default action
  std::strcat(g_crash_ctx, "\n");
  (void)!write(1, "CRASH during: ", 14);
  (void)!write(1, g_crash_ctx, std::strlen(g_crash_ctx));
  raise(sig);
}

/// While alive, a SIGSEGV, SIGBUS or SIGABRT first prints "CRASH during: " and the marked call
/// (the parent shows a failed child's last lines).
struct CrashReport {
  static constexpr int kSigs[3] = {SIGSEGV, SIGBUS, SIGABRT};
  struct sigaction old[3];
  CrashReport() {
    struct sigaction sa {};
    sa.sa_handler = on_crash;
    sa.sa_flags = SA_RESETHAND;
    for (int i = 0; i < 3; i++) sigaction(kSigs[i], &sa, &old[i]);
  }
  ~CrashReport() {
    for (int i = 0; i < 3; i++) sigaction(kSigs[i], &old[i], nullptr);
  }
};

// ===========================================================================
// The comparison.

/// An excuse for differing lines: glob on the NAME (third field) of either line; args: a
/// substring either line must also contain (or null); unless: a substring that, in our line,
/// keeps the entry from applying (or null); why: the doc/compat.md anchor, or the bug; conf:
/// the MALLOC_CONF variant it is confined to (exact string; null: every run, the default one
/// included).  Four-field initializers leave conf null.
struct Excl {
  const char *glob, *args, *unless, *why, *conf = nullptr;
};

/// The MALLOC_CONF variant being compared (null: the default run); Excl::conf is matched with it.
inline const char* g_variant;

/// Whether x may apply in the run being compared (its conf, if any, is that run's variant).
inline bool in_scope(const Excl& x) {
  return x.conf == nullptr || (g_variant != nullptr && std::strcmp(x.conf, g_variant) == 0);
}

/// Whether s matches pattern p, where '*' matches any run of characters (dots included).
inline bool glob(const char* p, const char* s) {
  if (*p == '\0') return *s == '\0';
  if (*p == '*') return glob(p + 1, s) || (*s != '\0' && glob(p, s + 1));
  return *s == *p && glob(p + 1, s + 1);
}

/// The index of the entry of tab[0..n) that excuses the differing lines a (ours) and b, or -1.
/// Null globs are skipped (they only keep a table non-empty).
inline int find(const Excl* tab, size_t n, const char* a, const char* b) {
  char ca[256], cb[256];
  for (int k = 0; k < 2; k++) {  // the canonical name: the third field
    const char* p = std::strchr(k ? b : a, ' ');
    p = p ? std::strchr(p + 1, ' ') : nullptr;
    std::snprintf(k ? cb : ca, 256, "%.*s", p ? (int)std::strcspn(p + 1, " ") : 0, p ? p + 1 : "");
  }
  for (size_t i = 0; i < n; i++) {
    if (tab[i].glob == nullptr || !in_scope(tab[i]) ||
        !(glob(tab[i].glob, ca) || glob(tab[i].glob, cb)) ||
        (tab[i].unless && std::strstr(a, tab[i].unless)) ||
        (tab[i].args && !std::strstr(a, tab[i].args) && !std::strstr(b, tab[i].args))) {
      continue;
    }
    return (int)i;
  }
  return -1;
}

/// The index of the entry of tab[0..n) that matches the single line `line` (ours: printed by
/// this library; `unless` applies only then), or -1.  The same rules as find() for one line.
inline int find_one(const Excl* tab, size_t n, const char* line, bool ours) {
  const char* p = std::strchr(line, ' ');
  p = p ? std::strchr(p + 1, ' ') : nullptr;
  char name[256];
  std::snprintf(name, sizeof(name), "%.*s", p ? (int)std::strcspn(p + 1, " ") : 0, p ? p + 1 : "");
  for (size_t i = 0; i < n; i++) {
    if (tab[i].glob != nullptr && in_scope(tab[i]) && glob(tab[i].glob, name) &&
        !(ours && tab[i].unless && std::strstr(line, tab[i].unless)) &&
        !(tab[i].args && !std::strstr(line, tab[i].args))) {
      return (int)i;
    }
  }
  return -1;
}

inline char g_self[PATH_MAX];  // this program (main() fills it in)
inline char g_outbuf[2][4 << 20];

// ---------------------------------------------------------------------------
// Children: this program re-executed on one library.

/// A child started by spawn(): its pid, and the memfds that receive its stdout and stderr (-1:
/// the stream is the parent's).
struct Spawned {
  pid_t pid = -1;
  int out = -1, err = -1;
};

/// Starts `g_self args...` (args null-terminated, at most 14) with an environment built from
/// scratch: LD_PRELOAD=lib, DIFF_LIB=lib, and MALLOC_CONF=conf unless conf is null (any bytes
/// but NUL, up to 64 KiB).  Its stdout goes to a memfd, its stderr too when capture_err.  False
/// when it did not start (nothing to collect).  Children of several spawn() calls may run at
/// once; each is collected once.
inline bool spawn(Spawned* c, const char* lib, const char* const* args, const char* conf,
                  bool capture_err) {
  static char env_pre[PATH_MAX + 16], env_lib[PATH_MAX + 16], env_conf[(64 << 10) + 16];
  const char *envp[4] = {env_pre, env_lib, nullptr, nullptr}, *argv[16] = {g_self};
  *c = Spawned{};
  for (int i = 0; args[i] != nullptr; i++) {
    if (i == 14) return false;
    argv[i + 1] = args[i];
  }
  if (conf != nullptr && std::strlen(conf) > (64u << 10)) return false;
  std::snprintf(env_pre, sizeof(env_pre), "LD_PRELOAD=%s", lib);
  std::snprintf(env_lib, sizeof(env_lib), "DIFF_LIB=%s", lib);
  if (conf != nullptr) {
    std::snprintf(env_conf, sizeof(env_conf), "MALLOC_CONF=%s", conf);
    envp[2] = env_conf;
  }
  c->out = memfd_create("diff-out", MFD_CLOEXEC);
  c->err = capture_err ? memfd_create("diff-err", MFD_CLOEXEC) : -1;
  if (c->out < 0 || (capture_err && c->err < 0)) {
    if (c->out >= 0) close(c->out);
    if (c->err >= 0) close(c->err);
    return false;
  }
  std::fflush(stdout);  // the child (until execve) must not repeat what the parent buffered
  std::fflush(stderr);
  c->pid = fork();
  if (c->pid == 0) {
    dup2(c->out, 1);
    if (capture_err) dup2(c->err, 2);
    execve(g_self, const_cast<char* const*>(argv), const_cast<char* const*>(envp));
    _exit(127);
  }
  if (c->pid < 0) {
    close(c->out);
    if (c->err >= 0) close(c->err);
    return false;
  }
  return true;
}

/// Copies what the memfd holds into buf (NUL-terminated, cut at cap - 1 bytes); returns the
/// length.  cap 0: nothing.
inline size_t read_memfd(int fd, char* buf, size_t cap) {
  size_t n = 0;
  for (ssize_t r; cap > 0 && n + 1 < cap && (r = pread(fd, buf + n, cap - 1 - n, n)) > 0;) {
    n += r;
  }
  if (cap > 0) buf[n] = '\0';
  return n;
}

/// Waits for a spawned child (killed after timeout_ms), reads its stdout into out and its
/// stderr, when captured, into err (both NUL-terminated, cut at cap - 1 bytes; err may be null
/// when not captured), closes the memfds.  Returns the wait status.
inline int collect(Spawned* c, char* out, size_t outcap, char* err, size_t errcap, int timeout_ms) {
  int st = -1;
  for (long us = 0; waitpid(c->pid, &st, WNOHANG) != c->pid; us += 200) {
    if (us > (long)timeout_ms * 1000) kill(c->pid, SIGKILL);
    usleep(200);
  }
  read_memfd(c->out, out, outcap);
  close(c->out);
  if (c->err >= 0) {
    read_memfd(c->err, err, errcap);
    close(c->err);
  } else if (err != nullptr && errcap > 0) {
    err[0] = '\0';
  }
  *c = Spawned{};
  return st;
}

/// Runs `g_self --record` with LD_PRELOAD=lib and MALLOC_CONF=conf (null: unset); its stdout
/// into buf (its stderr is the parent's).  Returns the wait status (-1 if it never ran).
inline int record_child(const char* lib, char* buf, size_t cap, const char* conf = nullptr) {
  const char* args[] = {"--record", nullptr};
  Spawned c;
  buf[0] = '\0';
  if (!spawn(&c, lib, args, conf, false)) return -1;
  return collect(&c, buf, cap, nullptr, 0, 60000);  // a stream takes a few seconds at most
}

/// Records the stream on both libraries under MALLOC_CONF=conf, the two children at once, into
/// g_outbuf[0] (libs[0]) and g_outbuf[1]; their wait statuses into st (-1: never ran).
inline void record_pair(const char* const libs[2], const char* conf, int st[2]) {
  const char* args[] = {"--record", nullptr};
  Spawned c[2];
  for (int k = 0; k < 2; k++) {
    g_outbuf[k][0] = '\0';
    st[k] = spawn(&c[k], libs[k], args, conf, false) ? 0 : -1;
  }
  for (int k = 0; k < 2; k++) {
    if (st[k] == 0) st[k] = collect(&c[k], g_outbuf[k], sizeof(g_outbuf[k]), nullptr, 0, 60000);
  }
}

/// The next line of the text at *p (cut in place), or null at its end.
inline const char* next_line(char** p) {
  char *s = *p, *e = std::strchr(s, '\n');
  if (*s == '\0') return nullptr;
  *p = e ? (*e = '\0', e + 1) : s + std::strlen(s);
  return s;
}

/// The file mallctl comes from (resolved), or "".
inline const char* library_file() {
  static char path[PATH_MAX];
  Dl_info info;
  void* addr = dlsym(RTLD_DEFAULT, "mallctl");
  if (!addr || !dladdr(addr, &info) || !realpath(info.dli_fname, path)) path[0] = '\0';
  return path;
}

using StreamFn = bool (*)(FILE* out);

/// --record: the stream, on the library DIFF_LIB names; its lines on stdout.
inline int record_main(StreamFn run) {
  static char buf[1 << 16], want[PATH_MAX];
  std::setvbuf(stdout, buf, _IOLBF, sizeof(buf));
  const char* lib = std::getenv("DIFF_LIB");
  if (lib && (!realpath(lib, want) || std::strcmp(library_file(), want) != 0)) {
    std::printf("FAIL: mallctl comes from %s, not %s\n", library_file(), lib);
    return 2;
  }
  return run(stdout) ? 0 : 1;
}

/// Whether a comparison needs the two libraries to lay out large extents alike.
enum class Layout { kAny, kSame };

/// config.cache_oblivious as this process's library answers it: "1", "0", or "?" (no mallctl,
/// or no such name).
inline const char* cache_oblivious_here() {
  bool v;
  size_t sz = sizeof(v);
  if (mallctl == nullptr || mallctl("config.cache_oblivious", &v, &sz, nullptr, 0) != 0) return "?";
  return v ? "1" : "0";
}

/// --config-probe: what Layout::kSame compares, on stdout.
inline int config_probe_main() {
  std::printf("cache_oblivious=%s\n", cache_oblivious_here());
  return 0;
}

/// config.cache_oblivious of the library at `lib` (a child started on it answers), as
/// cache_oblivious_here() spells it; "?" when the child did not answer.
inline const char* cache_oblivious_of(const char* lib) {
  static char out[64];
  const char* args[] = {"--config-probe", nullptr};
  Spawned c;
  if (!spawn(&c, lib, args, nullptr, false)) return "?";
  collect(&c, out, sizeof(out), nullptr, 0, 10000);
  const char* v = std::strstr(out, "cache_oblivious=");
  return v == nullptr ? "?" : v[16] == '1' ? "1" : v[16] == '0' ? "0" : "?";
}

/// The two libraries a comparison runs: libs[0] this one (the file mallctl comes from), libs[1]
/// the reference (REF_LIB, default Debian's 5.3.0), both resolved.  False when there is nothing
/// to compare (or, with Layout::kSame, the two lay out large extents differently): the test is
/// then marked skipped (or failed) and the caller returns.
inline bool libraries(const char* libs[2], Layout layout = Layout::kAny) {
  static char ours[PATH_MAX], refp[PATH_MAX];
  const char* ref = std::getenv("REF_LIB");
  if (ref == nullptr) ref = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2";
  std::snprintf(ours, sizeof(ours), "%s", library_file());
  if (is_reference()) {
    skip("the library under test is the reference itself");
  } else if (*ref == '\0') {
    skip("REF_LIB is empty: comparison turned off");
  } else if (realpath(ref, refp) == nullptr) {
    skip("no reference library at %s", ref);
  } else if (ours[0] == '\0') {
    FAIL_MSG("no loaded file defines mallctl");
  } else if (std::strcmp(ours, refp) == 0) {
    skip("running on the reference library");
  } else if (const char* there = layout == Layout::kSame ? cache_oblivious_of(refp) : nullptr;
             there != nullptr && std::strcmp(cache_oblivious_here(), there) != 0) {
    // (Only Layout::kSame starts the probe child.)
    skip("config.cache_oblivious is %s here and %s in %s: every large extent differs by a page "
         "(a build configured --disable-cache-oblivious is compared only with one configured so)",
         cache_oblivious_here(), there, refp);
  } else {
    libs[0] = ours, libs[1] = refp;
    return true;
  }
  return false;
}

/// Compares the records in g_outbuf (ours, 5.3.0) recorded under conf (null: the default
/// run): prints the first 30 unexplained differences and notes the excused ones; returns the
/// number of unexplained differences (-1: the records differ in length).
inline int compare_records(const char* conf, const Excl* doc, size_t ndoc, const Excl* bugs,
                           size_t nbugs) {
  constexpr size_t kMaxExcl = 64;
  const char *in = conf ? " under MALLOC_CONF=" : "", *cs = conf ? conf : "";
  int nlines = 0, same = 0, unexplained = 0, count[2 * kMaxExcl] = {};
  if (ndoc > kMaxExcl || nbugs > kMaxExcl) {
    FAIL_MSG("more than %zu entries in an excuse table", kMaxExcl);
    return -1;
  }
  g_variant = conf;
  for (char *pa = g_outbuf[0], *pb = g_outbuf[1];; nlines++) {
    const char *a = next_line(&pa), *b = next_line(&pb);
    int d = -1, k = -1;
    if (a == nullptr && b == nullptr) break;
    if (a == nullptr || b == nullptr) {
      FAIL_MSG("the outputs%s%s differ in length at line %d:\n    ours:  %s\n    5.3.0: %s", in, cs,
               nlines, a ? a : "(end)", b ? b : "(end)");
      unexplained = -1;
      break;
    }
    if (std::strcmp(a, b) == 0) {
      same++;
    } else if ((d = find(doc, ndoc, a, b)) >= 0) {
      count[d]++;
    } else if ((k = find(bugs, nbugs, a, b)) >= 0) {
      count[kMaxExcl + k]++;
    } else if (++unexplained <= 30) {
      std::printf("  difference%s%s:\n    ours:  %s\n    5.3.0: %s\n", in, cs, a, b);
    }
  }
  g_variant = nullptr;
  note("%s%s%s%d lines: %d identical, %d unexplained differences", conf ? "MALLOC_CONF=" : "", cs,
       conf ? ": " : "", nlines, same, unexplained < 0 ? 0 : unexplained);
  for (size_t i = 0; i < ndoc + nbugs; i++) {
    bool is_doc = i < ndoc;
    const Excl& x = is_doc ? doc[i] : bugs[i - ndoc];
    int n = is_doc ? count[i] : count[kMaxExcl + i - ndoc];
    if (n)
      note("  %d %s: %s%s%s (%s)", n, is_doc ? "documented" : "KNOWN BUG", x.glob,
           x.args ? " with " : "", x.args ? x.args : "", x.why);
  }
  if (unexplained > 0) {
    FAIL_MSG("%d lines differ from 5.3.0%s%s (at most 30 shown)", unexplained, in, cs);
  }
  return unexplained;
}

/// Whether both record runs ended well (status 0); else a failure showing the last lines.
inline bool records_ok(const char* const libs[2], const int st[2], const char* conf) {
  const char* who[2] = {"ours", "5.3.0"};
  bool ok = true;
  for (int k = 0; k < 2; k++) {
    if (std::strlen(g_outbuf[k]) + 1 >= sizeof(g_outbuf[k])) FAIL_MSG("output buffer too small");
    if (WIFEXITED(st[k]) && WEXITSTATUS(st[k]) == 0) continue;
    // On 5.3.0: the stream did something it cannot take, or it broke a guard. See the output.
    const char* p = g_outbuf[k] + std::strlen(g_outbuf[k]);
    for (int lines = 0; p > g_outbuf[k] && lines < 4; p--) lines += p[-1] == '\n';
    FAIL_MSG("the record run on %s (%s)%s%s ended with status %#x; its last lines:\n%s", who[k],
             libs[k], conf ? " under MALLOC_CONF=" : "", conf ? conf : "", st[k], p);
    ok = false;
  }
  return ok;
}

/// The body of a test: records the stream on this library and on the reference (MALLOC_CONF
/// unset), compares.
inline void compare_with_reference(const Excl* doc, size_t ndoc, const Excl* bugs, size_t nbugs,
                                   Layout layout = Layout::kAny) {
  const char* libs[2];
  int st[2];
  if (!libraries(libs, layout)) return;
  for (int k = 0; k < 2; k++) st[k] = record_child(libs[k], g_outbuf[k], sizeof(g_outbuf[k]));
  records_ok(libs, st, nullptr);
  compare_records(nullptr, doc, ndoc, bugs, nbugs);
}

/// The body of a test that runs the stream under option variants: for each of confs[0..n) (a
/// MALLOC_CONF string each), records the stream on both libraries under it and compares the
/// records as compare_with_reference does; Excl entries with a conf apply only under that
/// variant.  Every variant runs even when an earlier one failed; the failures name the variant,
/// and a last note lists the variants that failed.
inline void compare_with_reference_under(const char* const* confs, size_t n, const Excl* doc,
                                         size_t ndoc, const Excl* bugs, size_t nbugs,
                                         Layout layout = Layout::kAny) {
  const char* libs[2];
  static char failed[4096];
  size_t nfailed = 0;
  failed[0] = '\0';
  if (!libraries(libs, layout)) return;
  for (size_t v = 0; v < n; v++) {
    int st[2];
    record_pair(libs, confs[v], st);
    bool ok = records_ok(libs, st, confs[v]);
    ok = compare_records(confs[v], doc, ndoc, bugs, nbugs) == 0 && ok;
    if (!ok) {
      size_t o = std::strlen(failed);
      std::snprintf(failed + o, sizeof(failed) - o, " %s", confs[v]);
      nfailed++;
    }
  }
  note("%zu variants, %zu failed%s%s", n, nfailed, nfailed ? ":" : "", failed);
}

template <size_t V, size_t N, size_t M>
inline void compare_with_reference_under(const char* const (&confs)[V], const Excl (&doc)[N],
                                         const Excl (&bugs)[M], Layout layout = Layout::kAny) {
  compare_with_reference_under(confs, V, doc, N, bugs, M, layout);
}

template <size_t N, size_t M>
inline void compare_with_reference(const Excl (&doc)[N], const Excl (&bugs)[M],
                                   Layout layout = Layout::kAny) {
  compare_with_reference(doc, N, bugs, M, layout);
}

/// The program's main: --record dispatch (run null: the program has no stream), the variant
/// skip, then the registered tests.
inline int main(int argc, char** argv, StreamFn run) {
  if (argc >= 2 && std::strcmp(argv[1], "--config-probe") == 0) return config_probe_main();
  if (run != nullptr && argc >= 2 && std::strcmp(argv[1], "--record") == 0) {
    return record_main(run);
  }
  // As child.h's run_main: only under the default configuration (JT_OPTIONS_ALL_VARIANTS=1:
  // always); the children set their own anyway.
  const char *conf = std::getenv("MALLOC_CONF"), *all = std::getenv("JT_OPTIONS_ALL_VARIANTS");
  if (conf != nullptr && *conf != '\0' && (all == nullptr || *all != '1')) {
    std::printf(
        "skipped: the children set their own MALLOC_CONF; the variants would repeat "
        "the same comparison\n");
    return preflight() ? 77 : 1;
  }
  ssize_t n = readlink("/proc/self/exe", g_self, sizeof(g_self) - 1);
  g_self[n > 0 ? n : 0] = '\0';
  return run_all(argc, argv);
}

}  // namespace jt::diff

#endif  // JT_DIFFERENTIAL_H_
