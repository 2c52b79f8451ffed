// mallctl_names_test: every name of jemalloc 5.3.0's mallctl tree (golden list read off Debian's
// 5.3.0, in test/integration/data) through the public mallctl API: it
// resolves, reads with jemalloc's length rules, and refuses writes where the node is read-only.
// Names we answer ENOENT on purpose are listed in doc/compat.md (profiling-partial,
// mallctl-unavailable); that part runs on our library only.
#include <string>
#include <vector>

#include "harness.h"

#ifndef JT_DATA_DIR
#define JT_DATA_DIR "test/integration/data"
#endif

namespace {

std::vector<std::string> g_names;

bool load_names() {
  if (!g_names.empty()) return true;
  char path[512];
  std::snprintf(path, sizeof(path), "%s/mallctl-names-5.3.0.txt", JT_DATA_DIR);
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) {
    FAIL_MSG("cannot open %s", path);
    return false;
  }
  char line[256];
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    std::string s(line);
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
    if (!s.empty() && s[0] != '#') g_names.push_back(s);
  }
  std::fclose(f);
  return g_names.size() == 395;
}

std::string concrete(const std::string& n) {
  std::string out;
  for (size_t i = 0; i < n.size(); i++) {
    if (n.compare(i, 3, "<i>") == 0) {
      out += '0';
      i += 2;
    } else {
      out += n[i];
    }
  }
  return out;
}

bool starts(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

bool read_bool(const char* name) {
  bool b = false;
  size_t len = sizeof(b);
  return mallctl(name, &b, &len, nullptr, 0) == 0 && b;
}

bool is_prof_name(const std::string& n) {
  return starts(n, "prof.") || starts(n, "opt.prof") || starts(n, "thread.prof.") ||
         starts(n, "opt.lg_prof_") || starts(n, "experimental.prof_recent.");
}

// 5.3.0's own build answers ENOENT for these (prof.stats needs --enable-prof-stats; utrace,
// xmalloc and UAF detection are features Debian's build lacks; without opt.prof the profiling
// actions, experimental.prof_recent.* and thread.prof.name are ENOENT too).
bool absent_in_reference(const std::string& n) {
  if (starts(n, "prof.stats.") || n == "opt.utrace" || n == "opt.xmalloc" ||
      n == "opt.lg_san_uaf_align") {
    return true;
  }
  static const bool opt_prof = read_bool("opt.prof");
  return !opt_prof && (n == "prof.dump" || n == "prof.prefix" || n == "prof.reset" ||
                       n == "prof.log_start" || n == "prof.log_stop" || n == "thread.prof.name" ||
                       starts(n, "experimental.prof_recent."));
}

// The experimental names not implemented here (doc/mallctl.md).
bool unimplemented_experimental(const std::string& n) {
  return n == "experimental.hooks.install" || n == "experimental.hooks.remove" ||
         n == "experimental.thread.activity_callback" || starts(n, "experimental.arenas.");
}

// Experimental names whose use needs an input (a packet, a configuration, a hook); a bare read
// says nothing about them (experimental_test covers them).
bool experimental_with_input(const std::string& n) {
  return n == "experimental.arenas_create_ext" || n == "experimental.batch_alloc" ||
         n == "experimental.hooks.safety_check_abort";
}

// doc/compat.md "mallctl-unavailable" (and every profiling name in a --disable-prof build).
bool absent_here(const std::string& n) {
  static const bool prof_built = read_bool("config.prof");
  return absent_in_reference(n) || (!prof_built && is_prof_name(n)) ||
         unimplemented_experimental(n);
}

// Reads `name` trying the widths a mallctl value can have; returns the rc of the last try and
// the width that worked (0 if none).
int read_any(const std::string& name, size_t* width) {
  *width = 0;
  int rc = ENOENT;
  for (size_t w : {sizeof(bool), sizeof(uint32_t), sizeof(uint64_t)}) {
    unsigned char buf[16];
    size_t len = w;
    rc = mallctl(name.c_str(), buf, &len, nullptr, 0);
    if (rc == 0) {
      *width = w;
      return 0;
    }
    if (rc != EINVAL) return rc;
  }
  return rc;
}

}  // namespace

TEST(every_golden_name_resolves) {
  ASSERT_TRUE(load_names());
  for (const std::string& n : g_names) {
    size_t mib[8];
    size_t miblen = 8;
    int rc = mallctlnametomib(concrete(n).c_str(), mib, &miblen);
    if (absent_in_reference(n) && starts(n, "prof.stats.")) {
      EXPECT_EQ(rc, ENOENT);
    } else {
      if (rc != 0) FAIL_MSG("mallctlnametomib(%s) = %d", n.c_str(), rc);
      EXPECT_GE(miblen, 1u);
    }
  }
}

TEST(every_readable_name_reads_with_its_width) {
  ASSERT_TRUE(load_names());
  int readable = 0;
  int actions = 0;
  for (const std::string& n : g_names) {
    // arenas.lookup takes a pointer as its input; reading it alone is not meaningful (5.3.0
    // dereferences the missing input). The utilization queries need input pointers and a
    // result of their struct's size; mallctl_test covers them.
    if (absent_here(n) || absent_in_reference(n) || n == "arenas.lookup" ||
        starts(n, "experimental.utilization.") || experimental_with_input(n)) {
      continue;
    }
    size_t width;
    int rc = read_any(concrete(n), &width);
    // A read is harmless for every node: an action or write-only node answers EPERM to it
    // without acting.
    if (rc == 0) {
      readable++;
    } else if (rc == EPERM) {
      actions++;
    } else if (!(rc == EFAULT && (n == "thread.tcache.flush" || n == "prof.log_stop"))) {
      // prof.log_stop takes no value: a "read" stops the log, EFAULT when none runs (5.3.0).
      FAIL_MSG("reading %s returned %d", n.c_str(), rc);
    }
  }
  EXPECT_GT(readable, 250);
  EXPECT_GT(actions, 5);
}

TEST_COMPAT(names_absent_on_purpose_answer_enoent, "mallctl-unavailable") {
  ASSERT_TRUE(load_names());
  int absent = 0;
  for (const std::string& n : g_names) {
    if (!absent_here(n)) continue;
    absent++;
    size_t width;
    int rc = read_any(concrete(n), &width);
    if (rc != ENOENT) FAIL_MSG("%s returned %d, expected ENOENT (doc/compat.md)", n.c_str(), rc);
  }
  EXPECT_GT(absent, 10);
}

TEST(opt_values_have_5_3_0_widths) {
  char path[512];
  std::snprintf(path, sizeof(path), "%s/opt-defaults-5.3.0.tsv", JT_DATA_DIR);
  FILE* f = std::fopen(path, "r");
  ASSERT_TRUE(f != nullptr);
  char line[256];
  int checked = 0;
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    if (line[0] == '#') continue;
    char name[128];
    char kind[32];
    if (std::sscanf(line, "%127s %31[^\t]", name, kind) != 2) continue;
    std::string n(name);
    if (absent_here(n)) continue;
    size_t want = std::strcmp(kind, "bool") == 0  ? sizeof(bool)
                  : std::strcmp(kind, "u32") == 0 ? sizeof(uint32_t)
                                                  : sizeof(uint64_t);  // 8 bytes or a string
    size_t width;
    int rc = read_any(n, &width);
    if (rc != 0 || width != want) {
      FAIL_MSG("%s: rc %d width %zu, 5.3.0 has width %zu", name, rc, width, want);
    }
    checked++;
  }
  std::fclose(f);
  EXPECT_GT(checked, 40);
}

TEST(read_only_nodes_refuse_writes) {
  ASSERT_TRUE(load_names());
  int checked = 0;
  for (const std::string& n : g_names) {
    bool read_only = starts(n, "config.") || starts(n, "opt.") || n == "version" ||
                     starts(n, "arenas.bin.") || starts(n, "arenas.lextent.") ||
                     n == "arenas.quantum" || n == "arenas.page" || n == "arenas.nbins" ||
                     n == "arenas.nhbins" || n == "arenas.nlextents" || n == "arenas.narenas" ||
                     n == "arenas.tcache_max" || n == "arena.<i>.initialized" ||
                     (starts(n, "stats.") && n != "stats.mutexes.reset" &&
                      n.find(".reset") == std::string::npos);
    if (!read_only || absent_here(n) || absent_in_reference(n)) continue;
    size_t width;
    if (read_any(concrete(n), &width) != 0) continue;
    unsigned char val[16] = {0};
    size_t len = width;
    unsigned char old[16];
    int rc = mallctl(concrete(n).c_str(), old, &len, val, width);
    if (rc != EPERM) FAIL_MSG("writing read-only %s returned %d, expected EPERM", n.c_str(), rc);
    checked++;
  }
  EXPECT_GT(checked, 200);
}
