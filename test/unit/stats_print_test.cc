// stats_print_test.cc: malloc_stats_print's report (src/ctl/stats_print) -- 5.3.0's text
// sections and column layout, JSON that parses with 5.3.0's key paths, the option letters, our
// dirty-path counters in both forms, and output through many callback calls without malloc.
//
// The library internals are booted directly and driven through the Arena API (libcore has no
// public allocation names), so the test's own allocations stay on glibc; this file counts
// glibc's malloc while a report is printed.
#include <gtest/gtest.h>
#include <malloc.h>

#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "arena/arena.h"
#include "arena/arenas.h"
#include "ctl/ctl.h"
#include "ctl/stats_print.h"
#include "extent/emap.h"
#include "extent/pac_stats.h"
#include "meta/base.h"
#include "meta/sc.h"
#include "os/pages.h"
#include "support/config.h"
#include "support/malloc_io.h"
#include "thread/core_boot.h"
#include "thread/tcache.h"
#include "thread/tsd.h"

// ---- glibc malloc counting ---------------------------------------------------------------------
// The test program's definitions interpose glibc's malloc family for the whole process and
// forward to glibc's own entry points; while g_counting is set every call is counted.

extern "C" void* __libc_malloc(size_t);
extern "C" void* __libc_calloc(size_t, size_t);
extern "C" void* __libc_realloc(void*, size_t);

namespace {
volatile bool g_counting = false;
volatile unsigned g_malloc_calls = 0;
}  // namespace

extern "C" void* malloc(size_t n) noexcept {
  if (g_counting) g_malloc_calls = g_malloc_calls + 1;
  return __libc_malloc(n);
}
extern "C" void* calloc(size_t k, size_t n) noexcept {
  if (g_counting) g_malloc_calls = g_malloc_calls + 1;
  return __libc_calloc(k, n);
}
extern "C" void* realloc(void* p, size_t n) noexcept {
  if (g_counting) g_malloc_calls = g_malloc_calls + 1;
  return __libc_realloc(p, n);
}

namespace je {
namespace {

// ---- Output capture ----------------------------------------------------------------------------

struct Capture {
  std::string text;
  unsigned calls = 0;
  size_t longest_chunk = 0;
};

void capture_cb(void* opaque, const char* s) {
  auto* c = static_cast<Capture*>(opaque);
  c->calls++;
  size_t n = strlen(s);
  if (n > c->longest_chunk) c->longest_chunk = n;
  c->text.append(s, n);
}

std::string report(const char* opts, Capture* out = nullptr) {
  Capture c;
  stats_print(capture_cb, &c, opts);
  if (out != nullptr) *out = c;
  return c.text;
}

/// The report with every digit run replaced by "N": equal for two reports of the same state
/// up to counters that move between them (uptime, the ctl mutex's operations).
std::string shape(const std::string& s) {
  std::string r;
  for (size_t i = 0; i < s.size(); i++) {
    if (isdigit(static_cast<unsigned char>(s[i]))) {
      while (i + 1 < s.size() && isdigit(static_cast<unsigned char>(s[i + 1]))) i++;
      r += 'N';
    } else if (s[i] != ' ') {
      r += s[i];
    }
  }
  return r;
}

bool has(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

// ---- A small JSON parser: validates and lists leaf key paths -----------------------------------

class Json {
 public:
  explicit Json(const std::string& s) : s_(s) {}
  /// Parses the whole text; on success fills leaves ("a.b[].c" -> last value as text) and the
  /// element counts of arrays ("a.b[]" -> n, the last seen).
  bool parse() {
    pos_ = 0;
    if (!value("")) return false;
    ws();
    return pos_ == s_.size();
  }
  std::map<std::string, std::string> leaves;
  std::map<std::string, size_t> arrays;
  std::string error_at() const { return s_.substr(pos_ < 40 ? 0 : pos_ - 40, 80); }

 private:
  void ws() {
    while (pos_ < s_.size() && isspace(static_cast<unsigned char>(s_[pos_]))) pos_++;
  }
  bool lit(const char* w) {
    size_t n = strlen(w);
    if (s_.compare(pos_, n, w) != 0) return false;
    pos_ += n;
    return true;
  }
  bool string(std::string* out) {
    if (pos_ >= s_.size() || s_[pos_] != '"') return false;
    pos_++;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      unsigned char c = s_[pos_];
      if (c < 0x20) return false;
      if (c == '\\') {
        pos_++;
        if (pos_ >= s_.size() || strchr("\"\\/bfnrtu", s_[pos_]) == nullptr) return false;
        if (s_[pos_] == 'u') {
          for (int k = 0; k < 4; k++) {
            if (++pos_ >= s_.size() || !isxdigit(static_cast<unsigned char>(s_[pos_]))) {
              return false;
            }
          }
        }
      }
      out->push_back(s_[pos_]);
      pos_++;
    }
    if (pos_ >= s_.size()) return false;
    pos_++;
    return true;
  }
  bool number(std::string* out) {
    size_t start = pos_;
    if (pos_ < s_.size() && s_[pos_] == '-') pos_++;
    size_t digits = pos_;
    while (pos_ < s_.size() && isdigit(static_cast<unsigned char>(s_[pos_]))) pos_++;
    if (pos_ == digits) return false;
    if (s_[digits] == '0' && pos_ - digits > 1) return false;  // no leading zeros
    *out = s_.substr(start, pos_ - start);
    return true;
  }
  bool value(const std::string& path) {
    ws();
    if (pos_ >= s_.size()) return false;
    char c = s_[pos_];
    if (c == '{') {
      pos_++;
      ws();
      if (pos_ < s_.size() && s_[pos_] == '}') return ++pos_, true;
      for (;;) {
        ws();
        std::string key;
        if (!string(&key)) return false;
        ws();
        if (!lit(":")) return false;
        if (!value(path.empty() ? key : path + "." + key)) return false;
        ws();
        if (lit("}")) return true;
        if (!lit(",")) return false;
      }
    }
    if (c == '[') {
      pos_++;
      size_t n = 0;
      ws();
      if (pos_ < s_.size() && s_[pos_] == ']') {
        arrays[path + "[]"] = 0;
        return ++pos_, true;
      }
      for (;;) {
        if (!value(path + "[]")) return false;
        n++;
        ws();
        if (lit("]")) break;
        if (!lit(",")) return false;
      }
      arrays[path + "[]"] = n;
      return true;
    }
    std::string v;
    if (c == '"') {
      if (!string(&v)) return false;
    } else if (lit("true")) {
      v = "true";
    } else if (lit("false")) {
      v = "false";
    } else if (lit("null")) {
      v = "null";
    } else if (!number(&v)) {
      return false;
    }
    leaves[path] = v;
    return true;
  }

  const std::string s_;
  size_t pos_ = 0;
};

// ---- Fixture -----------------------------------------------------------------------------------

class StatsPrint : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_TRUE(core_boot(CoreConfig{}));
    populate();
  }
  void SetUp() override {
    if (!config::kStats) GTEST_SKIP() << "built with --disable-stats";
  }

  /// Activity for every section: small and large allocations in a manual arena (some freed,
  /// so the dirty cache and its counters are non-empty), arena 0 in use, and one destroyed
  /// arena so the destroyed view exists.
  static void populate() {
    unsigned ind = 0;
    size_t len = sizeof(ind);
    ASSERT_EQ(ctl_byname("arenas.create", &ind, &len, nullptr, 0), 0);
    g_ind = ind;
    Arena* a = arena_get(ind, false);
    ASSERT_NE(a, nullptr);
    std::vector<void*> larges;
    for (size_t sz : {16384, 20480, 32768, 65536, 65536, 1 << 20}) {
      larges.push_back(a->malloc_large(sz, 64, false));
    }
    for (int i = 0; i < 40; i++) g_small.push_back(a->malloc_small(3, false));
    // Free neighbours so they can merge in the dirty cache, then allocate again from it.
    a->dalloc_large(g_emap.lookup(larges[3]));
    a->dalloc_large(g_emap.lookup(larges[4]));
    a->dalloc_large(g_emap.lookup(larges[1]));
    g_large = a->malloc_large(20480, 64, false);
    Arena* a0 = arena_get(0, true);
    ASSERT_NE(a0, nullptr);
    g_small0 = a0->malloc_small(10, false);

    unsigned gone = 0;
    len = sizeof(gone);
    ASSERT_EQ(ctl_byname("arenas.create", &gone, &len, nullptr, 0), 0);
    Arena* g = arena_get(gone, false);
    ASSERT_NE(g, nullptr);
    void* p = g->malloc_large(40960, 64, false);
    g->dalloc_large(g_emap.lookup(p));
    std::string name = "arena." + std::to_string(gone) + ".destroy";
    ASSERT_EQ(ctl_byname(name.c_str(), nullptr, nullptr, nullptr, 0), 0);
  }

  static inline unsigned g_ind = 0;
  static inline std::vector<void*> g_small;
  static inline void* g_large = nullptr;
  static inline void* g_small0 = nullptr;
};

// The text sections of a default report, in 5.3.0's order.
constexpr const char* kTextSections[] = {
    "___ Begin jemalloc statistics ___\n",
    "Version: \"5.3.0-",
    je::config::kCacheOblivious ? "Build-time option settings\n  config.cache_oblivious: true\n"
                                : "Build-time option settings\n  config.cache_oblivious: false\n",
    je::config::kProf ? "  config.prof: true\n" : "  config.prof: false\n",
    "Run-time option settings\n  opt.abort: false\n",
    "  opt.dirty_decay_ms: 10000 (arenas.dirty_decay_ms: 10000)\n",
    "  opt.zero_realloc: \"free\"\n",
    "  opt.bounded_coalesce: ",
    "  opt.reuse_before_grow: ",
    "  opt.extent_best_fit: ",
    "  opt.purge_on_grow: ",
    "  opt.borrow_dirty: ",
    "  opt.decay_hold_peak: ",
    "  opt.oversize_hold: ",
    "  opt.safety_checks: false\n",
    "  opt.extent_cache_bytes: 8388608\n",
    "  opt.tcache_grow_bytes: 8388608\n",
    "  opt.idle_return: true\n",
    "  opt.kept_max_bytes: 0\n",
    "\nArenas: ",
    "\nQuantum size: 16\nPage size: 4096\n",
    "\nNumber of bin size classes: 36\n",
    "\nNumber of large size classes: 196\n",
    "\nAllocated: ",
    "\nCount of realloc(non-null-ptr, 0) calls: ",
    "\nBackground threads: 0, num_runs: 0, run_interval: 0 ns\n",
    "\nctl                ",
    "\nprof_stats         ",
    "\nMerged arenas stats:\nassigned threads: ",
    "\nDestroyed arenas stats:\n",
    "\narenas[0]:\n",
    "\ndss allocation precedence: \"secondary\"\n",
    "\ndecaying:  time       npages       sweeps     madvises       purged\n",
    "\nbins:           size ind    allocated      nmalloc",
    "\nlarge:          size ind    allocated      nmalloc",
    "\nextents:        size ind       ndirty        dirty",
    "\nBytes in small extent cache: 0\nHPA shard stats:\n",
    "\nDirty path (",
    "\n--- End jemalloc statistics ---\n",
};

TEST_F(StatsPrint, TextHasTheSectionsInOrder) {
  std::string t = report("");
  size_t at = 0;
  for (const char* sec : kTextSections) {
    size_t f = t.find(sec, at);
    ASSERT_NE(f, std::string::npos) << "missing or out of order: " << sec;
    at = f;
  }
  // A build without profiling prints no profiling lines (5.3.0 --disable-prof); a profiling
  // build prints the options and the settings, as Debian's 5.3.0 does.
  EXPECT_EQ(has(t, "Profiling settings"), config::kProf);
  EXPECT_EQ(has(t, "opt.prof: false"), config::kProf);
  EXPECT_TRUE(has(t, "arenas[" + std::to_string(g_ind) + "]:\n"));
  const std::string end = "--- End jemalloc statistics ---\n";
  EXPECT_EQ(t.substr(t.size() - end.size()), end);
}

TEST_F(StatsPrint, TextColumnLayoutIs53) {
  std::string t = report("");
  // Header lines exactly as 5.3.0 prints them.
  EXPECT_TRUE(has(
      t,
      "\n                           n_lock_ops (#/sec)       n_waiting (#/sec)      n_spin_acq "
      "(#/sec)  n_owner_switch (#/sec)   total_wait_ns   (#/sec)     max_wait_ns  max_n_thds\n"));
  EXPECT_TRUE(has(
      t,
      "\n                            allocated         nmalloc   (#/sec)         ndalloc   "
      "(#/sec)       nrequests   (#/sec)           nfill   (#/sec)          nflush   (#/sec)\n"));
  EXPECT_TRUE(has(t, "\n                                     \nactive: "));
  EXPECT_TRUE(has(
      t,
      "\nbins:           size ind    allocated      nmalloc (#/sec)      ndalloc (#/sec)    "
      "nrequests   (#/sec)  nshards      curregs     curslabs  nonfull_slabs regs pgs   util    "
      "   nfills (#/sec)     nflushes (#/sec)       nslabs     nreslabs (#/sec)      n_lock_ops"));
  EXPECT_TRUE(
      has(t,
          "\nlarge:          size ind    allocated      nmalloc (#/sec)      ndalloc (#/sec)    "
          "nrequests (#/sec)  curlextents\n"));
  EXPECT_TRUE(
      has(t,
          "\nextents:        size ind       ndirty        dirty       nmuzzy        muzzy    "
          "nretained     retained       ntotal        total\n"));
  EXPECT_TRUE(
      has(t,
          "\n                size ind npageslabs_huge    nactive_huge     ndirty_huge  "
          "npageslabs_nonhuge     nactive_nonhuge      ndirty_nonhuge   nretained_nonhuge\n"));
  EXPECT_TRUE(has(t, "\n                     ---\n"));
  // Bin 3 (48 bytes) of our arena: 40 regions in one 3-page slab of 256.
  EXPECT_TRUE(has(t, "\n                  48   3         1920           40"));
  EXPECT_TRUE(has(t, "  256   3  0.156"));
  // Without x the bins header stops after nreslabs' rate.
  std::string nx = report("x");
  EXPECT_TRUE(has(nx, "     nreslabs (#/sec)\n"));
}

TEST_F(StatsPrint, EachLetterOmitsItsSection) {
  struct Case {
    const char* opts;
    const char* gone;
  };
  const Case cases[] = {
      {"g", "Version: "},
      {"g", "Run-time option settings"},
      {"g", "\nArenas: "},
      {"m", "Merged arenas stats"},
      {"d", "Destroyed arenas stats"},
      {"a", "arenas[0]:"},
      {"b", "bins:"},
      {"l", "large:          size"},
      {"x", "n_lock_ops"},
      {"e", "extents:"},
      {"h", "HPA shard stats"},
      {"h", "Bytes in small"},
  };
  std::string all = report("");
  for (const Case& c : cases) {
    EXPECT_TRUE(has(all, c.gone)) << c.gone;
    std::string t = report(c.opts);
    EXPECT_FALSE(has(t, c.gone)) << c.opts << ": " << c.gone;
    EXPECT_TRUE(has(t, "Allocated: ")) << c.opts;
    EXPECT_TRUE(has(t, "--- End jemalloc statistics ---")) << c.opts;
  }
  // Without per-arena sections the merged view is printed even for one arena; the arena
  // sections still end with our counters.
  std::string na = report("a");
  EXPECT_TRUE(has(na, "Merged arenas stats:"));
  EXPECT_TRUE(has(na, "Dirty path ("));
  std::string nobins = report("blxeh");
  EXPECT_TRUE(has(nobins, "arenas[0]:"));
  EXPECT_TRUE(has(nobins, "extent_avail: "));
  EXPECT_TRUE(has(nobins, "dirty_merges: "));
}

TEST_F(StatsPrint, AllLettersAndUnknownLetters) {
  std::string t = report("gmdablxeh");
  // Only the global statistics remain.
  EXPECT_EQ(shape(t), shape("___ Begin jemalloc statistics ___\n"
                            "Allocated: 1, active: 1, metadata: 1 (n_thp 0), resident: 1, "
                            "mapped: 1, retained: 1\n"
                            "Count of realloc(non-null-ptr, 0) calls: 0\n"
                            "Background threads: 0, num_runs: 0, run_interval: 0 ns\n"
                            "--- End jemalloc statistics ---\n"));
  // Unknown letters are ignored; a null opts is the default report.
  EXPECT_EQ(shape(report("zqZ?!1 ")), shape(report("")));
  EXPECT_EQ(shape(report(nullptr)), shape(report("")));
  EXPECT_EQ(shape(report("gmdablxehyyy")), shape(t));
  EXPECT_EQ(shape(report("hexlbadmg")), shape(t));
}

TEST_F(StatsPrint, JsonParsesWith53KeyPaths) {
  std::string j = report("J");
  ASSERT_FALSE(j.empty());
  EXPECT_EQ(j.front(), '{');
  EXPECT_EQ(j.back(), '}');  // compact, like 5.3.0
  EXPECT_FALSE(has(j, "\n"));
  Json p(j);
  ASSERT_TRUE(p.parse()) << "near: " << p.error_at();

  const std::string ours = "jemalloc.stats.arenas." + std::to_string(g_ind) + ".";
  const std::vector<std::string> expected = {
      "jemalloc.version", "jemalloc.config.cache_oblivious", "jemalloc.config.malloc_conf",
      "jemalloc.config.prof", "jemalloc.config.xmalloc", "jemalloc.opt.abort",
      "jemalloc.opt.hpa_dirty_mult", "jemalloc.opt.dirty_decay_ms",
      "jemalloc.opt.stats_interval_opts", "jemalloc.opt.zero_realloc", "jemalloc.arenas.narenas",
      "jemalloc.arenas.dirty_decay_ms", "jemalloc.arenas.quantum", "jemalloc.arenas.page",
      "jemalloc.arenas.tcache_max", "jemalloc.arenas.nbins", "jemalloc.arenas.nhbins",
      "jemalloc.arenas.bin[].size", "jemalloc.arenas.bin[].nregs",
      "jemalloc.arenas.bin[].slab_size", "jemalloc.arenas.bin[].nshards",
      "jemalloc.arenas.nlextents", "jemalloc.arenas.lextent[].size", "jemalloc.stats.allocated",
      "jemalloc.stats.zero_reallocs", "jemalloc.stats.background_thread.run_interval",
      "jemalloc.stats.mutexes.background_thread.num_ops", "jemalloc.stats.mutexes.ctl.max_num_thds",
      "jemalloc.stats.mutexes.prof_stats.num_wait", "jemalloc.stats.arenas.merged.nthreads",
      "jemalloc.stats.arenas.merged.uptime_ns", "jemalloc.stats.arenas.merged.dss",
      "jemalloc.stats.arenas.merged.small.nflushes", "jemalloc.stats.arenas.merged.large.allocated",
      "jemalloc.stats.arenas.destroyed.muzzy_purged",
      "jemalloc.stats.arenas.destroyed.bins[].nonfull_slabs", "jemalloc.stats.arenas.0.pactive",
      "jemalloc.stats.arenas.0.internal", "jemalloc.stats.arenas.0.extent_avail",
      "jemalloc.stats.arenas.0.mutexes.extents_dirty.num_owner_switch",
      "jemalloc.stats.arenas.0.mutexes.hpa_sec.total_wait_time",
      "jemalloc.stats.arenas.0.bins[].nmalloc", "jemalloc.stats.arenas.0.bins[].mutex.num_ops",
      "jemalloc.stats.arenas.0.lextents[].curlextents",
      "jemalloc.stats.arenas.0.extents[].retained_bytes", "jemalloc.stats.arenas.0.sec_bytes",
      "jemalloc.stats.arenas.0.hpa_shard.npurge_passes",
      "jemalloc.stats.arenas.0.hpa_shard.full_slabs.nactive_huge",
      "jemalloc.stats.arenas.0.hpa_shard.empty_slabs.ndirty_nonhuge",
      "jemalloc.stats.arenas.0.hpa_shard.nonfull_slabs[].ndirty_huge",
      // Ours, after 5.3.0's keys.
      "jemalloc.opt.bounded_coalesce", "jemalloc.opt.idle_arena_decay",
      "jemalloc.opt.reuse_before_grow", "jemalloc.opt.purge_on_grow",
      "jemalloc.opt.extent_best_fit", "jemalloc.opt.borrow_dirty", "jemalloc.opt.decay_hold_peak",
      "jemalloc.opt.oversize_hold", "jemalloc.opt.safety_checks", "jemalloc.opt.extent_cache_bytes",
      "jemalloc.opt.tcache_grow_bytes", "jemalloc.opt.idle_return", "jemalloc.opt.kept_max_bytes", ours + "dirty_merges", ours + "dirty_merges_refused",
      ours + "evict_merges", ours + "dirty_allocs", ours + "muzzy_allocs", ours + "retained_allocs",
      ours + "fresh_allocs", ours + "dirty_alloc_pages", ours + "muzzy_alloc_pages",
      ours + "retained_alloc_pages", ours + "fresh_alloc_pages",
      "jemalloc.stats.arenas.merged.fresh_alloc_pages",
      "jemalloc.stats.arenas.destroyed.evict_merges"};
  for (const std::string& k : expected) EXPECT_EQ(p.leaves.count(k), 1u) << k;
  // Profiling appears exactly when built in, as in 5.3.0's two builds.
  EXPECT_EQ(p.leaves.count("jemalloc.opt.prof"), config::kProf ? 1u : 0u);
  EXPECT_EQ(p.leaves.count("jemalloc.prof.active"), config::kProf ? 1u : 0u);
  // Arrays list every class.
  EXPECT_EQ(p.arrays["jemalloc.arenas.bin[]"], 36u);
  EXPECT_EQ(p.arrays["jemalloc.arenas.lextent[]"], 196u);
  EXPECT_EQ(p.arrays["jemalloc.stats.arenas.0.bins[]"], 36u);
  EXPECT_EQ(p.arrays["jemalloc.stats.arenas.0.lextents[]"], 196u);
  EXPECT_EQ(p.arrays["jemalloc.stats.arenas.0.extents[]"], sc::kNPSizes);
  EXPECT_EQ(p.arrays["jemalloc.stats.arenas.0.hpa_shard.nonfull_slabs[]"], 64u);
  EXPECT_EQ(p.leaves["jemalloc.config.prof"], config::kProf ? "true" : "false");
  EXPECT_EQ(p.leaves["jemalloc.arenas.page"], "4096");
  EXPECT_EQ(p.leaves["jemalloc.stats.arenas.merged.dss"], "N/A");
  EXPECT_EQ(p.leaves["jemalloc.stats.arenas.merged.dirty_decay_ms"], "-1");

  // The key order inside an arena: 5.3.0's, ours last.
  const std::string arena0 = "\"0\":{\"nthreads\":";
  ASSERT_TRUE(has(j, arena0));
  std::string a0 = j.substr(j.find(arena0));
  size_t prev = 0;
  for (const char* k :
       {"\"uptime_ns\"", "\"dss\"", "\"dirty_decay_ms\"", "\"muzzy_purged\"", "\"small\"",
        "\"large\"", "\"mapped\"", "\"extent_avail\"", "\"mutexes\"", "\"bins\"", "\"lextents\"",
        "\"extents\"", "\"sec_bytes\"", "\"hpa_shard\":{\"npurge_passes\"", "\"dirty_merges\"",
        "\"fresh_alloc_pages\""}) {
    size_t f = a0.find(k);
    ASSERT_NE(f, std::string::npos) << k;
    EXPECT_GT(f, prev) << k;
    prev = f;
  }
}

TEST_F(StatsPrint, JsonParsesWithPython) {
  if (system("command -v python3 >/dev/null 2>&1") != 0) GTEST_SKIP() << "no python3";
  for (const char* opts : {"J", "Jgmdablxeh", "Jx", "Jbl", "Ja", "Jmd?z"}) {
    std::string j = report(opts);
    FILE* f = popen("python3 -c 'import json,sys; json.load(sys.stdin)'", "w");
    ASSERT_NE(f, nullptr);
    fwrite(j.data(), 1, j.size(), f);
    EXPECT_EQ(pclose(f), 0) << opts;
  }
}

TEST_F(StatsPrint, JsonLettersOmitKeys) {
  Json all(report("J"));
  ASSERT_TRUE(all.parse());
  Json none(report("Jgmdablxeh"));
  ASSERT_TRUE(none.parse());
  EXPECT_EQ(none.leaves.count("jemalloc.version"), 0u);
  EXPECT_EQ(none.leaves.count("jemalloc.stats.mutexes.ctl.num_ops"), 0u);
  EXPECT_EQ(none.leaves.count("jemalloc.stats.allocated"), 1u);
  EXPECT_EQ(none.leaves.count("jemalloc.stats.background_thread.num_threads"), 1u);
  for (const auto& [k, v] : none.leaves)
    EXPECT_EQ(k.rfind("jemalloc.stats.arenas", 0), std::string::npos) << k;
  Json nb(report("Jblxeh"));
  ASSERT_TRUE(nb.parse());
  EXPECT_EQ(nb.leaves.count("jemalloc.stats.arenas.0.pactive"), 1u);
  EXPECT_EQ(nb.leaves.count("jemalloc.stats.arenas.0.dirty_merges"), 1u);
  EXPECT_EQ(nb.arrays.count("jemalloc.stats.arenas.0.bins[]"), 0u);
  EXPECT_EQ(nb.leaves.count("jemalloc.stats.arenas.0.sec_bytes"), 0u);
  EXPECT_EQ(nb.leaves.count("jemalloc.stats.arenas.0.mutexes.base.num_ops"), 0u);
}

TEST_F(StatsPrint, DirtyPathCountersMatchCtl) {
  Json p(report("J"));
  ASSERT_TRUE(p.parse());
  std::string t = report("");
  // No epoch since the report: ctl reads the report's snapshot.
  const std::string base = "stats.arenas." + std::to_string(g_ind) + ".";
  uint64_t total_allocs = 0;
  // Every row of our part of the page allocator's counter table has its leaf, its JSON key and
  // its text line, with the same value.
  static constexpr const char* kOurs[] = {
#define JE_COUNTER_NAME(name, meaning) #name,
      JE_PAC_COUNTERS_OURS(JE_COUNTER_NAME)
#undef JE_COUNTER_NAME
  };
  std::vector<std::pair<std::string, uint64_t>> values;
  for (const char* leaf : kOurs) {
    uint64_t v = 0;
    size_t len = sizeof(v);
    ASSERT_EQ(ctl_byname((base + leaf).c_str(), &v, &len, nullptr, 0), 0) << leaf;
    EXPECT_EQ(p.leaves["jemalloc." + base + leaf], std::to_string(v)) << leaf;
    if (strstr(leaf, "_allocs") != nullptr) total_allocs += v;
    values.emplace_back(leaf, v);
  }
  EXPECT_GT(total_allocs, 0u);
  // The reuse after freeing came from the dirty cache.
  EXPECT_NE(p.leaves["jemalloc." + base + "dirty_allocs"], "0");
  // Text: the arena's section ends with the block.
  size_t sec = t.find("arenas[" + std::to_string(g_ind) + "]:\n");
  ASSERT_NE(sec, std::string::npos);
  size_t dp = t.find("\nDirty path (", sec);
  ASSERT_NE(dp, std::string::npos);
  std::string block = t.substr(dp, t.find("\narenas[", dp + 1) - dp);
  for (const auto& [leaf, v] : values) {
    std::string line = "\n  " + leaf + ": " + std::to_string(v) + "\n";
    EXPECT_TRUE(has(block, line)) << line;
  }
}

TEST_F(StatsPrint, ManyCallbackCallsAndNoMalloc) {
  // Warm up anything lazily set up (none expected), and size the output.
  Capture warm;
  report("J", &warm);  // the larger of the two forms
  ASSERT_GT(warm.text.size(), 20000u);

  // A callback that only copies into memory reserved beforehand.
  struct Sink {
    char* buf;
    size_t cap;
    size_t len;
    unsigned calls;
    size_t longest;
  };
  static Sink sink;
  std::vector<char> storage(warm.text.size() * 2 + 65536);
  sink = Sink{storage.data(), storage.size(), 0, 0, 0};
  auto cb = [](void*, const char* s) {
    size_t n = strlen(s);
    sink.calls++;
    if (n > sink.longest) sink.longest = n;
    if (sink.len + n <= sink.cap) memcpy(sink.buf + sink.len, s, n);
    sink.len += n;
  };
  // The counter does see glibc allocations (operator new reaches the interposed malloc).
  g_malloc_calls = 0;
  g_counting = true;
  delete new std::string(1000, 'x');
  g_counting = false;
  ASSERT_GE(g_malloc_calls, 1u);

  for (const char* opts : {"", "J"}) {
    sink.len = sink.calls = sink.longest = 0;
    struct mallinfo2 before = mallinfo2();
    g_malloc_calls = 0;
    g_counting = true;
    stats_print(cb, nullptr, opts);
    g_counting = false;
    struct mallinfo2 after = mallinfo2();
    EXPECT_EQ(g_malloc_calls, 0u) << opts;
    EXPECT_EQ(after.uordblks, before.uordblks) << opts;
    EXPECT_EQ(after.hblks, before.hblks) << opts;
    ASSERT_LE(sink.len, sink.cap);
    // Many calls, each a NUL-terminated chunk that fits the internal buffer.
    EXPECT_GE(sink.calls, sink.len / 4095) << opts;
    EXPECT_GE(sink.calls, 5u) << opts;
    EXPECT_LE(sink.longest, 4095u) << opts;
    std::string out(sink.buf, sink.len);
    EXPECT_TRUE(opts[0] == 'J' ? out.back() == '}' : has(out, "--- End jemalloc statistics"));
  }
}

std::string g_writer_text;
void capture_writer(const char* s) { g_writer_text += s; }

TEST_F(StatsPrint, NullCallbackUsesTheMessageWriter) {
  g_writer_text.clear();
  io_set_writer(capture_writer);
  stats_print(nullptr, nullptr, "gblxe");
  io_set_writer(nullptr);
  EXPECT_EQ(g_writer_text.rfind("___ Begin jemalloc statistics ___\n", 0), 0u);
  EXPECT_TRUE(has(g_writer_text, "--- End jemalloc statistics ---\n"));
}

}  // namespace
}  // namespace je
