// prof_gdump_test: the heap profiler's high-water dumps (prof_gdump / prof.gdump), system
// thread names in dumps (prof_sys_thread_name), the per-size-class sample statistics
// (prof.stats.*) and prof.reset's new sample rate, on ours and on Debian's 5.3.0.
//
// Each test starts a child under its own MALLOC_CONF (child.h). What 5.3.0 does, found by
// running these very children against Debian's library:
//   - gdump: a `.u<n>.heap` file each time the mapped-extent footprint passes its largest value
//     so far; none while prof.gdump or prof.active is off, and the maximum keeps growing while
//     gdump is off (so switching it back on dumps only beyond it); n counts 0, 1, 2, ...
//   - prof_sys_thread_name: a thread's name in the dump is its system name as of its latest
//     sampled allocation; writing thread.prof.name answers ENOENT.
//   - prof.stats: {requested bytes summed, number of samples} per size class of the usable
//     size, live and accumulated, raw sample counts; ENOENT unless prof:true,prof_stats:true.
// Known difference: prof.reset(lg) takes effect at the calling thread's next allocation in
// ours; 5.3.0 keeps the distance drawn with the old rate (doc/compat.md#profiling-partial).
#include <dirent.h>
#include <pthread.h>
#include <unistd.h>

#include "child.h"

using namespace jt::subproc;

namespace {

// Files named <stem>.<pid>.<seq>.u<n>.heap in `dir`: how many, and the largest n (-1: none);
// with `remove`, they are deleted. `ok_order` is cleared unless larger seq means larger n.
int count_udumps(const char* dir, const char* stem, long long pid, long long* max_n,
                 bool* ok_order, bool remove) {
  char head[256];
  std::snprintf(head, sizeof(head), "%s.%lld.", stem, pid);
  const size_t hl = std::strlen(head);
  DIR* d = opendir(dir);
  if (d == nullptr) return -1;
  int n = 0;
  *max_n = -1;
  long long seqs[256], ns[256];
  while (dirent* e = readdir(d)) {
    if (std::strncmp(e->d_name, head, hl) != 0) continue;
    long long seq, un;
    char tail[16];
    if (std::sscanf(e->d_name + hl, "%lld.u%lld.%15s", &seq, &un, tail) != 3 ||
        std::strcmp(tail, "heap") != 0) {
      continue;
    }
    if (n < 256) {
      seqs[n] = seq;
      ns[n] = un;
    }
    n++;
    if (un > *max_n) *max_n = un;
    if (remove) {
      char path[512];
      std::snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
      unlink(path);
    }
  }
  closedir(d);
  if (ok_order != nullptr) {
    for (int i = 0; i < n && i < 256; i++) {
      for (int j = 0; j < n && j < 256; j++) {
        if (seqs[i] < seqs[j] && ns[i] >= ns[j]) *ok_order = false;
      }
    }
  }
  return n;
}

char g_dir[256];   // where the child's dumps go (its argument)
char g_stem[128];  // their prefix's last component

int udumps_now() {
  long long max_n;
  return count_udumps(g_dir, g_stem, getpid(), &max_n, nullptr, false);
}

void* volatile g_sink[64];

// Grows the heap in steps with prof_gdump on, then switches prof.gdump off and on, then
// prof.active off. Emits the number of .u files after each phase.
void mode_gdump(const char* prefix) {
  const char* slash = std::strrchr(prefix, '/');
  std::snprintf(g_dir, sizeof(g_dir), "%.*s", static_cast<int>(slash - prefix), prefix);
  std::snprintf(g_stem, sizeof(g_stem), "%s", slash + 1);
  emit("pid", getpid());
  emit("start", udumps_now());
  int k = 0;
  int grew = 0;
  for (int i = 0; i < 6; i++) {
    int before = udumps_now();
    g_sink[k++] = malloc(static_cast<size_t>(i + 1) << 20);
    if (udumps_now() > before) grew++;
  }
  emit("steps_that_dumped", grew);  // out of 6: each step passes the previous maximum
  for (int i = 0; i < k; i++) free(g_sink[i]);
  k = 0;
  int before = udumps_now();
  g_sink[k++] = malloc(1 << 20);  // below the maximum: no dump
  emit("below_max_dumps", udumps_now() - before);
  bool off = false, on = true, old = true;
  size_t sz = sizeof(old);
  emit("gdump_off_err", mallctl("prof.gdump", &old, &sz, &off, sizeof(off)));
  emit("gdump_was", old);
  before = udumps_now();
  g_sink[k++] = malloc(64 << 20);  // a new maximum, but gdump is off
  emit("off_dumps", udumps_now() - before);
  mallctl("prof.gdump", nullptr, nullptr, &on, sizeof(on));
  before = udumps_now();
  g_sink[k++] = malloc(128 << 20);  // beyond the maximum the 64 MiB block set
  emit("on_again_dumps", udumps_now() - before);
  mallctl("prof.active", nullptr, nullptr, &off, sizeof(off));
  before = udumps_now();
  g_sink[k++] = malloc(256 << 20);  // 5.3.0 dumps only while prof.active
  emit("inactive_dumps", udumps_now() - before);
  for (int i = 0; i < k; i++) free(g_sink[i]);
}

// prof_prefix:"" : no automatic dump at all. Grows the heap; the parent looks for files.
void mode_grow(const char*) {
  emit("pid", getpid());
  for (int i = 0; i < 6; i++) g_sink[i] = malloc(static_cast<size_t>(i + 1) << 20);
  for (int i = 0; i < 6; i++) free(g_sink[i]);
}

// ---- thread names ------------------------------------------------------------------------------

char g_dump[1 << 20];

// The name on the header line "  t<id>: ... <name>" of the thread whose name starts with
// `want_prefix` ("" when none); writes it into out.
void header_name(const char* path, const char* want_prefix, char* out, size_t cap) {
  out[0] = '\0';
  int fd = open(path, O_RDONLY);
  if (fd < 0) return;
  size_t n = slurp(fd, g_dump, sizeof(g_dump) - 1);
  close(fd);
  g_dump[n] = '\0';
  for (char* line = g_dump; line != nullptr && *line != '\0' && *line != '@';) {
    char* next = std::strchr(line, '\n');
    if (next != nullptr) *next++ = '\0';
    const char* t = line;
    while (*t == ' ') t++;
    if (t[0] == 't' && t[1] != '*') {
      const char* br = std::strchr(t, ']');  // the name follows the bracketed counts
      if (br != nullptr && br[1] == ' ' &&
          std::strncmp(br + 2, want_prefix, std::strlen(want_prefix)) == 0) {
        std::snprintf(out, cap, "%s", br + 2);
        return;
      }
    }
    line = next;
  }
}

struct NameArgs {
  const char* path;
  char first[64], second[64];
  int set_err;
};

void* named_thread(void* arg) {
  auto* a = static_cast<NameArgs*>(arg);
  pthread_setname_np(pthread_self(), "jt-worker");
  g_sink[0] = malloc(4096);  // sampled at lg_prof_sample:0: the name is taken now
  const char* custom = "custom";
  a->set_err = mallctl("thread.prof.name", nullptr, nullptr, &custom, sizeof(custom));
  int err = mallctl("prof.dump", nullptr, nullptr, &a->path, sizeof(a->path));
  if (err == 0) header_name(a->path, "jt-", a->first, sizeof(a->first));
  pthread_setname_np(pthread_self(), "jt-renamed");
  g_sink[1] = malloc(4096);  // taken again at this sample
  err = mallctl("prof.dump", nullptr, nullptr, &a->path, sizeof(a->path));
  if (err == 0) header_name(a->path, "jt-", a->second, sizeof(a->second));
  return nullptr;
}

void mode_names(const char* path) {
  NameArgs a{};
  a.path = path;
  pthread_t t;
  pthread_create(&t, nullptr, named_thread, &a);
  pthread_join(t, nullptr);
  emit_str("first", a.first);
  emit_str("second", a.second);
  emit("set_err", a.set_err);
  const char* name = nullptr;
  size_t sz = sizeof(name);
  emit("read_err", mallctl("thread.prof.name", &name, &sz, nullptr, 0));
  free(g_sink[0]);
  free(g_sink[1]);
}

// ---- prof.stats --------------------------------------------------------------------------------

struct Stats {
  uint64_t req_sum;
  uint64_t count;
};

int read_stats(const char* name, Stats* s) {
  size_t sz = sizeof(*s);
  *s = {};
  return mallctl(name, s, &sz, nullptr, 0);
}

// Class 48 is bin 3 and 20480 is large class 1 in both libraries (same size classes).
void mode_stats(const char*) {
  Stats l0, a0, l1, a1, ll, la;
  emit("bin_err", read_stats("prof.stats.bins.3.live", &l0));
  read_stats("prof.stats.bins.3.accum", &a0);
  read_stats("prof.stats.lextents.1.live", &ll);
  void* p[10];
  for (void*& q : p) q = malloc(41);
  void* big = malloc(20000);
  for (int i = 0; i < 5; i++) free(p[i]);
  read_stats("prof.stats.bins.3.live", &l1);
  read_stats("prof.stats.bins.3.accum", &a1);
  emit("bin_live_count", static_cast<long long>(l1.count - l0.count));
  emit("bin_live_req", static_cast<long long>(l1.req_sum - l0.req_sum));
  emit("bin_accum_count", static_cast<long long>(a1.count - a0.count));
  emit("bin_accum_req", static_cast<long long>(a1.req_sum - a0.req_sum));
  Stats l2;
  read_stats("prof.stats.lextents.1.live", &l2);
  emit("lext_live_count", static_cast<long long>(l2.count - ll.count));
  emit("lext_live_req", static_cast<long long>(l2.req_sum - ll.req_sum));
  free(big);
  read_stats("prof.stats.lextents.1.live", &l2);
  read_stats("prof.stats.lextents.1.accum", &la);
  emit("lext_live_after_free", static_cast<long long>(l2.count - ll.count));
  emit("lext_accum_after_free", static_cast<long long>(la.count));
  // Read-only, exact length, bounded indices.
  Stats s;
  size_t sz = sizeof(s) - 1;
  emit("short_len_err", mallctl("prof.stats.bins.3.live", &s, &sz, nullptr, 0));
  sz = sizeof(s);
  emit("write_err", mallctl("prof.stats.bins.3.live", &s, &sz, &s, sizeof(s)));
  emit("bin_oob_err", read_stats("prof.stats.bins.36.live", &s));
  emit("lext_last_err", read_stats("prof.stats.lextents.195.live", &s));
  emit("lext_oob_err", read_stats("prof.stats.lextents.196.live", &s));
  size_t mib[5], miblen = 5;
  emit("mib_err", mallctlnametomib("prof.stats.bins.0.live", mib, &miblen));
  for (int i = 5; i < 10; i++) free(p[i]);
}

// ---- prof.reset with a new rate ------------------------------------------------------------------

void mode_reset(const char*) {
  void* keep[1000];
  for (void*& q : keep) q = malloc(24);  // the thread's cache is warm: fast paths from here
  size_t lg = 0;
  emit("reset_err", mallctl("prof.reset", nullptr, nullptr, &lg, sizeof(lg)));
  Stats a0, a1;
  read_stats("prof.stats.bins.3.accum", &a0);
  void* p[100];
  for (void*& q : p) q = malloc(41);
  read_stats("prof.stats.bins.3.accum", &a1);
  emit("sampled_of_100", static_cast<long long>(a1.count - a0.count));
  size_t cur = 99;
  size_t sz = sizeof(cur);
  mallctl("prof.lg_sample", &cur, &sz, nullptr, 0);
  emit("lg_sample", static_cast<long long>(cur));
  for (void* q : p) free(q);
  for (void* q : keep) free(q);
}

constexpr Mode kModes[] = {{"noop", mode_noop},   {"gdump", mode_gdump}, {"grow", mode_grow},
                           {"names", mode_names}, {"stats", mode_stats}, {"reset", mode_reset}};

}  // namespace

TEST(prof_gdump_dumps_at_each_new_high_water_mark) {
  if (!profiling_built()) return;
  char stem[64], prefix[512], conf[768];
  std::snprintf(stem, sizeof(stem), "prof_gdump_test_%d", static_cast<int>(getpid()));
  std::snprintf(prefix, sizeof(prefix), "%s/%s", scratch_dir(), stem);
  std::snprintf(conf, sizeof(conf), "prof:true,prof_gdump:true,prof_prefix:%s", prefix);
  Child c;
  bool ran = child(&c, "gdump", conf, prefix);
  long long pid = ran ? value(c, "pid") : -1;
  long long max_n = -1;
  bool ordered = true;
  int n = pid < 0 ? 0 : count_udumps(scratch_dir(), stem, pid, &max_n, &ordered, true);
  if (!ran) return;
  EXPECT_CHILD(c, "steps_that_dumped", kEq, 6);
  EXPECT_CHILD(c, "below_max_dumps", kEq, 0);
  EXPECT_CHILD(c, "gdump_off_err", kEq, 0);
  EXPECT_CHILD(c, "gdump_was", kEq, 1);
  EXPECT_CHILD(c, "off_dumps", kEq, 0);
  EXPECT_CHILD(c, "on_again_dumps", kEq, 1);
  EXPECT_CHILD(c, "inactive_dumps", kEq, 0);
  // u<n> numbers every high-water dump from 0, in the order of the shared seq counter.
  EXPECT_TRUE(n >= 7);
  EXPECT_EQ(max_n, static_cast<long long>(n) - 1);
  EXPECT_TRUE(ordered);
}

TEST(prof_gdump_off_by_default_and_with_empty_prefix) {
  if (!profiling_built()) return;
  char stem[64], conf[768];
  std::snprintf(stem, sizeof(stem), "prof_gdump_test_%d", static_cast<int>(getpid()));
  // prof_gdump false (the default): no .u files.
  std::snprintf(conf, sizeof(conf), "prof:true,prof_prefix:%s/%s", scratch_dir(), stem);
  Child c;
  if (child(&c, "grow", conf)) {
    long long max_n;
    EXPECT_EQ(count_udumps(scratch_dir(), stem, value(c, "pid"), &max_n, nullptr, true), 0);
  }
  // prof_prefix:"" turns every automatic dump off: the names would start with ".<pid>." in
  // the working directory.
  Child e;
  if (child(&e, "grow", "prof:true,prof_gdump:true,prof_prefix:")) {
    long long max_n;
    EXPECT_EQ(count_udumps(".", "", value(e, "pid"), &max_n, nullptr, true), 0);
  }
}

TEST(prof_sys_thread_name_names_threads_in_dumps) {
  if (!profiling_built()) return;
  char path[256];
  std::snprintf(path, sizeof(path), "%s/prof_gdump_test.%d.names.heap", scratch_dir(),
                static_cast<int>(getpid()));
  Child c;
  bool ran = child(&c, "names", "prof:true,lg_prof_sample:0,prof_sys_thread_name:true", path);
  unlink(path);
  if (!ran) return;
  char buf[64];
  EXPECT_STREQ(text_value(c, "first", buf, sizeof(buf)), "jt-worker");
  EXPECT_STREQ(text_value(c, "second", buf, sizeof(buf)), "jt-renamed");
  EXPECT_CHILD(c, "set_err", kEq, ENOENT);  // the system's name rules
  EXPECT_CHILD(c, "read_err", kEq, 0);
  // Without the option, the system name does not show and thread.prof.name is writable.
  Child d;
  ran = child(&d, "names", "prof:true,lg_prof_sample:0", path);
  unlink(path);
  if (!ran) return;
  EXPECT_STREQ(text_value(d, "first", buf, sizeof(buf)), "");
  EXPECT_CHILD(d, "set_err", kEq, 0);
}

TEST(prof_stats_count_sampled_requests_per_size_class) {
  if (!profiling_built()) return;
  Child c;
  if (!child(&c, "stats", "prof:true,prof_stats:true,lg_prof_sample:0")) return;
  EXPECT_CHILD(c, "bin_err", kEq, 0);
  EXPECT_CHILD(c, "bin_live_count", kEq, 5);
  EXPECT_CHILD(c, "bin_live_req", kEq, 5 * 41);  // requested bytes, not the 48-byte class
  EXPECT_CHILD(c, "bin_accum_count", kEq, 10);
  EXPECT_CHILD(c, "bin_accum_req", kEq, 10 * 41);
  EXPECT_CHILD(c, "lext_live_count", kEq, 1);
  EXPECT_CHILD(c, "lext_live_req", kEq, 20000);
  EXPECT_CHILD(c, "lext_live_after_free", kEq, 0);
  EXPECT_CHILD(c, "lext_accum_after_free", kGe, 1);
  EXPECT_CHILD(c, "short_len_err", kEq, EINVAL);
  EXPECT_CHILD(c, "write_err", kEq, EPERM);
  EXPECT_CHILD(c, "bin_oob_err", kEq, ENOENT);
  EXPECT_CHILD(c, "lext_last_err", kEq, 0);
  EXPECT_CHILD(c, "lext_oob_err", kEq, ENOENT);
  EXPECT_CHILD(c, "mib_err", kEq, 0);
  // Without prof_stats (or without prof) the names do not exist.
  for (const char* conf : {"prof:true", "prof_stats:true"}) {
    Child d;
    if (!child(&d, "stats", conf)) return;
    EXPECT_CHILD(d, "bin_err", kEq, ENOENT);
    EXPECT_CHILD(d, "mib_err", kEq, ENOENT);
    EXPECT_CHILD(d, "lext_last_err", kEq, ENOENT);
  }
}

TEST_COMPAT(prof_reset_new_rate_applies_at_once, "profiling-partial") {
  if (!profiling_built()) return;
  Child c;
  if (!child(&c, "reset", "prof:true,prof_stats:true")) return;
  EXPECT_CHILD(c, "reset_err", kEq, 0);
  EXPECT_CHILD(c, "lg_sample", kEq, 0);
  // lg_prof_sample 0 samples every allocation, from the first one after the reset.
  EXPECT_CHILD(c, "sampled_of_100", kEq, 100);
}

int main(int argc, char** argv) { return run_main(argc, argv, kModes); }
