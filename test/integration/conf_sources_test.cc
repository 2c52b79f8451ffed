// conf_sources_test: the configuration sources override each other in jemalloc 5.3.0's order
// (doc/options.md, "Sources and syntax"), and the library reports its configuration as 5.3.0
// does: invalid pairs (abort_conf), the sources and pairs it read (confirm_conf), statistics at
// exit and at intervals (stats_print, stats_print_opts, stats_interval).  What each option
// does is options_test's part.
//
// Options are read once per process, so each test starts CHILD processes: this binary again
// (`conf_sources_test --child MODE [ARG]`, see child.h) or the helper program
// malloc_conf_global, with an environment built from scratch (only MALLOC_CONF as the test
// chooses, plus LD_PRELOAD and JT_REFERENCE passed through so the child runs the same library
// as the parent).  The MALLOC_CONF that run.sh gives the parent does not reach the children.  A
// child prints what it observed as `key=value` lines on stdout; its stdout and stderr go to
// memfds the parent reads after the child ended.  The parent checks opt.* and the effects
// through mallctl, and the library's messages and reports on the child's stderr, their text and
// their order, along with the exit status.
//
// Tests that need something the machine may not offer (permission to create /etc/malloc.conf,
// a library built with --with-malloc-conf) skip with the reason.
#include <sys/stat.h>

#include "child.h"

using namespace jt::subproc;

namespace {

// ===========================================================================
// Child side (mode_noop is in child.h).

// What opt.* reports for the keys the priority tests set.
void mode_opts(const char*) {
  mode_noop(nullptr);
  unsigned u = 0;
  size_t sz = 0;
  uint64_t u64 = 0;
  if (jt::ctl_get("opt.narenas", &u) == 0) emit("opt_narenas", u);
  if (jt::ctl_get("arenas.narenas", &u) == 0) emit("arenas_narenas", u);
  if (jt::ctl_get("arenas.tcache_max", &sz) == 0) emit("tcache_max", (long long)sz);
  if (jt::ctl_get("opt.hpa_min_purge_interval_ms", &u64) == 0) {
    emit("opt_hpa_min_purge_interval_ms", (long long)u64);
  }
  if (jt::ctl_get("opt.hpa_hugify_delay_ms", &u64) == 0) {
    emit("opt_hpa_hugify_delay_ms", (long long)u64);
  }
}

// stats_interval: allocation traffic between two markers on stderr.
void mode_interval(const char*) {
  mode_noop(nullptr);
  std::fprintf(stderr, "child: traffic starts\n");
  for (int i = 0; i < 16; i++) {
    void* p = malloc(1 << 20);
    touch(p, 4096);
    free(p);
  }
  std::fprintf(stderr, "child: traffic ends\n");
}

constexpr Mode kModes[] = {
    {"noop", mode_noop},
    {"opts", mode_opts},
    {"interval", mode_interval},
};

}  // namespace

// ---------------------------------------------------------------------------
// Configuration errors and output.

TEST(abort_conf_aborts_on_invalid_pair) {
  const char* argv[] = {program_name(), "--child", "noop", nullptr};
  Child c = run_program(g_self, argv, "no_such_option:1");
  if (!EXPECT_TRUE(c.exited(0))) show(c);
  EXPECT_TRUE(contains(c.err, "<jemalloc>: Invalid conf pair: no_such_option:1\n"));
  EXPECT_TRUE(contains(c.out, "ok=1"));

  c = run_program(g_self, argv, "abort_conf:true,no_such_option:1");
  if (!EXPECT_TRUE(c.signaled(SIGABRT))) show(c);
  EXPECT_TRUE(contains(c.err, "<jemalloc>: Invalid conf pair: no_such_option:1\n"));
  EXPECT_FALSE(contains(c.out, "ok=1"));

  // An invalid value counts too; abort_conf set after the error still applies.
  c = run_program(g_self, argv, "narenas:many,abort_conf:true");
  if (!EXPECT_TRUE(c.signaled(SIGABRT))) show(c);
  EXPECT_TRUE(contains(c.err, "<jemalloc>: Invalid conf value: narenas:many\n"));
}

TEST(confirm_conf_prints_sources_and_pairs) {
  Child c;
  if (!child(&c, "noop", "confirm_conf:true,narenas:3")) return;
  long o1 =
      offset(c.err, "<jemalloc>: malloc_conf #1 (string specified via --with-malloc-conf): \"");
  long o2 = offset(c.err,
                   "<jemalloc>: malloc_conf #2 (string pointed to by the global variable "
                   "malloc_conf): \"\"\n");
  long o3 = offset(c.err,
                   "<jemalloc>: malloc_conf #3 (\"name\" of the file referenced by the symbolic "
                   "link named /etc/malloc.conf): \"");
  long o4 = offset(c.err,
                   "<jemalloc>: malloc_conf #4 (value of the environment variable MALLOC_CONF): "
                   "\"confirm_conf:true,narenas:3\"\n"
                   "<jemalloc>: -- Set conf value: confirm_conf:true\n"
                   "<jemalloc>: -- Set conf value: narenas:3\n");
  long o5 = offset(c.err,
                   "<jemalloc>: malloc_conf #5 (string pointed to by the global variable "
                   "malloc_conf_2_conf_harder): \"\"\n");
  EXPECT_GE(o1, 0);
  EXPECT_GT(o2, o1);
  EXPECT_GT(o3, o2);
  EXPECT_GT(o4, o3);
  EXPECT_GT(o5, o4);
  if (jt::failed()) show(c);
  // Without it, a valid configuration prints nothing.
  if (!child(&c, "noop", "narenas:3")) return;
  EXPECT_FALSE(contains(c.err, "<jemalloc>"));
}

TEST(stats_print_reports_at_exit) {
  Child c;
  if (!child(&c, "noop", "stats_print:true")) return;
  long begin = offset(c.err, "___ Begin jemalloc statistics ___\n");
  long end = offset(c.err, "--- End jemalloc statistics ---\n");
  long returning = offset(c.err, "child: returning from main\n");
  EXPECT_GE(returning, 0);
  EXPECT_GT(begin, returning);  // printed at exit, after main returned
  EXPECT_GT(end, begin);
  EXPECT_EQ(count(c.err, "___ Begin jemalloc statistics ___"), 1);
  EXPECT_TRUE(contains(c.err, "Version: \"5.3.0-"));
  if (!child(&c, "noop", nullptr)) return;
  EXPECT_FALSE(contains(c.err, "jemalloc statistics"));
}

TEST(stats_print_opts_select_report) {
  Child c;
  // J: the JSON form.
  if (!child(&c, "noop", "stats_print:true,stats_print_opts:J")) return;
  EXPECT_FALSE(contains(c.err, "___ Begin jemalloc statistics ___"));
  EXPECT_TRUE(contains(c.err, "{\"jemalloc\":{\"version\":\"5.3.0-"));
  // g omits the general section (version, options), a the per-arena ones.
  if (!child(&c, "noop", "stats_print:true,stats_print_opts:g")) return;
  EXPECT_TRUE(contains(c.err, "___ Begin jemalloc statistics ___"));
  EXPECT_FALSE(contains(c.err, "Version: "));
  EXPECT_TRUE(contains(c.err, "arenas[0]:"));
  if (!child(&c, "noop", "stats_print:true,stats_print_opts:a")) return;
  EXPECT_TRUE(contains(c.err, "Version: "));
  EXPECT_FALSE(contains(c.err, "arenas[0]:"));
}

TEST(stats_interval_prints_during_run) {
  Child c;
  if (!child(&c, "interval", "stats_interval:1048576,stats_interval_opts:mdablxe")) return;
  long start = offset(c.err, "child: traffic starts\n");
  long stop = offset(c.err, "child: traffic ends\n");
  ASSERT_GE(start, 0);
  ASSERT_GT(stop, start);
  // Reports between the markers: the 16 MiB allocated cross the 1 MiB interval many times.
  int inside = 0;
  const char* needle = "___ Begin jemalloc statistics ___";
  for (const char* p = std::strstr(c.err, needle); p != nullptr; p = std::strstr(p + 1, needle)) {
    if (p - c.err > start && p - c.err < stop) inside++;
  }
  EXPECT_GE(inside, 4);
  EXPECT_FALSE(contains(c.err, "arenas[0]:"));  // the interval opts apply
  if (jt::failed()) show(c);
  if (!child(&c, "interval", nullptr)) return;
  EXPECT_FALSE(contains(c.err, "jemalloc statistics"));
}

// ---------------------------------------------------------------------------
// Sources and their priority.  The malloc_conf_global helper defines the program's own
// strings; see the key plan at its top.

namespace {

char g_helper[PATH_MAX];

// The helper lies next to this program (run_main calls this once g_self is known).
void find_helper() {
  std::snprintf(g_helper, sizeof(g_helper), "%s", g_self);
  if (char* slash = std::strrchr(g_helper, '/'); slash != nullptr) {
    std::snprintf(slash + 1, sizeof(g_helper) - (size_t)(slash + 1 - g_helper),
                  "malloc_conf_global");
  }
}

// Runs the malloc_conf_global helper under conf.
bool helper(Child* c, const char* conf) {
  const char* argv[] = {"malloc_conf_global", nullptr};
  *c = run_program(g_helper, argv, conf);
  if (c->exited(0)) return true;
  FAIL_MSG("helper did not exit 0");
  show(*c);
  return false;
}

constexpr const char* kEtcConf = "/etc/malloc.conf";
// Only keys without any effect while the HPA is off: every jemalloc process started while the
// link exists (other test runs on the machine included) reads it too.
constexpr const char* kEtcTarget = "hpa_min_purge_interval_ms:200,hpa_hugify_delay_ms:12345";

volatile sig_atomic_t g_etc_linked = 0;

// A runner timeout (SIGTERM) or ^C while the link exists must not leave it behind.
void etc_signal(int sig) {
  if (g_etc_linked) unlink(kEtcConf);
  signal(sig, SIG_DFL);
  raise(sig);
}

// Points /etc/malloc.conf at kEtcTarget only while fn runs.  Returns false (with the reason in
// why) when the test may not do it.
bool with_etc_malloc_conf(void (*fn)(), char* why, size_t cap) {
  struct stat st;
  if (geteuid() != 0) {
    std::snprintf(why, cap, "needs root to create %s", kEtcConf);
    return false;
  }
  if (lstat(kEtcConf, &st) == 0) {
    char target[256] = {};
    ssize_t n = readlink(kEtcConf, target, sizeof(target) - 1);
    bool ours = n > 0 && std::strcmp(target, kEtcTarget) == 0;
    std::snprintf(why, cap, "%s exists%s; not touching it", kEtcConf,
                  ours ? " (with this test's target: another run is using it, or a killed "
                         "run left it behind)"
                       : "");
    return false;
  }
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) signal(sig, etc_signal);
  if (symlink(kEtcTarget, kEtcConf) != 0) {
    std::snprintf(why, cap, "symlink %s: %s", kEtcConf, std::strerror(errno));
    return false;
  }
  g_etc_linked = 1;
  int saved = g_child_timeout_ms;
  g_child_timeout_ms = 10000;
  fn();
  g_child_timeout_ms = saved;
  unlink(kEtcConf);
  g_etc_linked = 0;
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) signal(sig, SIG_DFL);
  return true;
}

// The four runs made while the link exists; their stdout copied out of the shared buffer.
Child g_etc_runs[4];
char g_etc_out[4][1024];

void etc_runs() {
  const char* self_argv[] = {program_name(), "--child", "opts", nullptr};
  const char* helper_argv[] = {"malloc_conf_global", nullptr};
  for (int i = 0; i < 4; i++) {
    const char* conf = i % 2 == 0 ? nullptr : "hpa_min_purge_interval_ms:300";
    Child c =
        i < 2 ? run_program(g_self, self_argv, conf) : run_program(g_helper, helper_argv, conf);
    std::snprintf(g_etc_out[i], sizeof(g_etc_out[i]), "%s", c.out);
    g_etc_runs[i] = c;
    g_etc_runs[i].out = g_etc_out[i];
    g_etc_runs[i].err = "";
  }
}

}  // namespace

TEST(conf_source_builtin) {
  const char* builtin = nullptr;
  if (jt::ctl_get("config.malloc_conf", &builtin) != 0 || builtin == nullptr || *builtin == '\0') {
    SKIP_TEST("the library was built without --with-malloc-conf");
  }
  Child c;
  if (!child(&c, "noop", "confirm_conf:true")) return;
  // The built-in string is source #1, and its first pair is applied before source #2.
  char line[512];
  std::snprintf(line, sizeof(line),
                "<jemalloc>: malloc_conf #1 (string specified via --with-malloc-conf): \"%s\"\n"
                "<jemalloc>: -- Set conf value: %.*s\n",
                builtin, (int)std::strcspn(builtin, ","), builtin);
  long o1 = offset(c.err, line);
  long o2 = offset(c.err, "<jemalloc>: malloc_conf #2 ");
  EXPECT_GE(o1, 0);
  EXPECT_GT(o2, o1);
  if (jt::failed()) show(c);
}

TEST(conf_source_global_malloc_conf) {
  Child c;
  if (!helper(&c, nullptr)) return;
  EXPECT_CHILD(c, "opt_narenas", kEq, 3);
  EXPECT_CHILD(c, "arenas_narenas", kEq, 4);  // 3 + the huge arena
  // MALLOC_CONF overrides it key by key.
  if (!helper(&c, "narenas:5,confirm_conf:true")) return;
  EXPECT_CHILD(c, "opt_narenas", kEq, 5);
  EXPECT_CHILD(c, "arenas_narenas", kEq, 6);
  long o2 = offset(c.err,
                   "<jemalloc>: malloc_conf #2 (string pointed to by the global variable "
                   "malloc_conf): \"narenas:3,hpa_min_purge_interval_ms:100\"\n"
                   "<jemalloc>: -- Set conf value: narenas:3\n");
  long o4 = offset(c.err, "<jemalloc>: -- Set conf value: narenas:5\n");
  EXPECT_GE(o2, 0);
  EXPECT_GT(o4, o2);
  if (jt::failed()) show(c);
}

TEST(conf_source_etc_malloc_conf) {
  char why[256];
  if (!with_etc_malloc_conf(etc_runs, why, sizeof(why))) SKIP_TEST("%s", why);
  for (const Child& c : g_etc_runs) {
    if (!EXPECT_TRUE(c.exited(0))) show(c);
  }
  if (jt::failed()) return;
  const Child &plain = g_etc_runs[0], &env = g_etc_runs[1];
  const Child &global = g_etc_runs[2], &global_env = g_etc_runs[3];
  // The link's target name is a source of its own...
  EXPECT_CHILD(plain, "opt_hpa_min_purge_interval_ms", kEq, 200);
  EXPECT_CHILD(plain, "opt_hpa_hugify_delay_ms", kEq, 12345);
  // ...below MALLOC_CONF...
  EXPECT_CHILD(env, "opt_hpa_min_purge_interval_ms", kEq, 300);
  EXPECT_CHILD(env, "opt_hpa_hugify_delay_ms", kEq, 12345);
  // ...and above the program's malloc_conf.
  EXPECT_CHILD(global, "opt_hpa_min_purge_interval_ms", kEq, 200);
  EXPECT_CHILD(global, "opt_narenas", kEq, 3);
  EXPECT_CHILD(global_env, "opt_hpa_min_purge_interval_ms", kEq, 300);
}

// Debian's shared libjemalloc.so.2 keeps its own malloc_conf_2_conf_harder hidden (it is not
// in the dynamic symbol table), so a program's definition never reaches it and the fifth
// source is always empty there; this library reads the program's definition.
TEST_COMPAT(conf_source_conf_harder_overrides_env, "conf-2-conf-harder") {
  Child c;
  if (!helper(&c, nullptr)) return;
  EXPECT_CHILD(c, "tcache_max", kEq, 131072);
  EXPECT_CHILD(c, "opt_hpa_hugify_delay_ms", kEq, 54321);
  if (!helper(&c, "tcache_max:16384,hpa_hugify_delay_ms:7,narenas:5")) return;
  EXPECT_CHILD(c, "tcache_max", kEq, 131072);
  EXPECT_CHILD(c, "opt_hpa_hugify_delay_ms", kEq, 54321);
  EXPECT_CHILD(c, "opt_narenas", kEq, 5);  // keys it does not name keep MALLOC_CONF's value
}

int main(int argc, char** argv) { return run_main(argc, argv, kModes, find_helper); }
