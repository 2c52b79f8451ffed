// Unit tests for src/ctl/opt: the option table's integrity, the opt.* view against jemalloc
// 5.3.0's golden names/widths/defaults, opt_reset, and doc/options.md regenerated from the table.
#include "ctl/opt.h"
#include "support/config.h"

#include <gtest/gtest.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#ifndef OPT_TEST_SRCDIR
#define OPT_TEST_SRCDIR "."
#endif

namespace {

using je::OptDesc;
using je::OptInfo;
using je::OptKind;
using je::OptType;

// Read off Debian's 5.3.0-1 (x86-64, 2 CPUs) through mallctl("opt.*"):
// name, width ("bool", "u32", "8", "string", "-" = ENOENT), value.
struct Golden {
  const char* name;
  const char* width;
  const char* value;
};
constexpr Golden kGolden[] = {
    {"abort", "bool", "false"},
    {"abort_conf", "bool", "false"},
    {"background_thread", "bool", "false"},
    {"cache_oblivious", "bool", "true"},
    {"confirm_conf", "bool", "false"},
    {"dirty_decay_ms", "8", "10000"},
    {"dss", "string", "secondary"},
    {"experimental_infallible_new", "bool", "false"},
    {"hpa", "bool", "false"},
    {"hpa_dirty_mult", "u32", "16384"},
    {"hpa_hugification_threshold", "8", "1992294"},
    {"hpa_hugify_delay_ms", "8", "10000"},
    {"hpa_min_purge_interval_ms", "8", "5000"},
    {"hpa_sec_batch_fill_extra", "8", "0"},
    {"hpa_sec_bytes_after_flush", "8", "131072"},
    {"hpa_sec_max_alloc", "8", "32768"},
    {"hpa_sec_max_bytes", "8", "262144"},
    {"hpa_sec_nshards", "8", "4"},
    {"hpa_slab_max_alloc", "8", "65536"},
    {"junk", "string", "false"},
    {"lg_extent_max_active_fit", "8", "6"},
    {"lg_prof_interval", "8", "-1"},
    {"lg_prof_sample", "8", "19"},
    {"lg_san_uaf_align", "-", ""},
    {"lg_tcache_flush_large_div", "u32", "1"},
    {"lg_tcache_flush_small_div", "u32", "1"},
    {"lg_tcache_nslots_mul", "8", "1"},
    {"max_background_threads", "8", "4"},
    {"metadata_thp", "string", "disabled"},
    {"mutex_max_spin", "8", "600"},
    {"muzzy_decay_ms", "8", "0"},
    {"narenas", "u32", "8"},
    {"oversize_threshold", "8", "8388608"},
    {"percpu_arena", "string", "disabled"},
    {"prof", "bool", "false"},
    {"prof_accum", "bool", "false"},
    {"prof_active", "bool", "true"},
    {"prof_final", "bool", "false"},
    {"prof_gdump", "bool", "false"},
    {"prof_leak", "bool", "false"},
    {"prof_leak_error", "bool", "false"},
    {"prof_prefix", "string", "jeprof"},
    {"prof_recent_alloc_max", "8", "0"},
    {"prof_stats", "bool", "false"},
    {"prof_sys_thread_name", "bool", "false"},
    {"prof_thread_active_init", "bool", "true"},
    {"prof_time_resolution", "string", "default"},
    {"retain", "bool", "true"},
    {"stats_interval", "8", "-1"},
    {"stats_interval_opts", "string", ""},
    {"stats_print", "bool", "false"},
    {"stats_print_opts", "string", ""},
    {"tcache", "bool", "true"},
    {"tcache_gc_delay_bytes", "8", "0"},
    {"tcache_gc_incr_bytes", "8", "65536"},
    {"tcache_max", "8", "32768"},
    {"tcache_nslots_large", "u32", "20"},
    {"tcache_nslots_small_max", "u32", "200"},
    {"tcache_nslots_small_min", "u32", "20"},
    {"thp", "string", "default"},
    {"trust_madvise", "bool", "false"},
    {"utrace", "-", ""},
    {"xmalloc", "-", ""},
    {"zero", "bool", "false"},
    {"zero_realloc", "string", "free"},
};

// A prof* name that this build leaves out (all of them with --disable-prof, none otherwise).
bool is_prof_name(const std::string& n) {
  return !je::config::kProf && (n.rfind("prof", 0) == 0 || n.rfind("lg_prof", 0) == 0);
}

// The value at a descriptor, formatted like the golden file (strings unquoted).
std::string format_scalar(OptType t, const void* p) {
  char buf[64];
  switch (t) {
    case OptType::kBool: return *static_cast<const bool*>(p) ? "true" : "false";
    case OptType::kUnsigned:
      snprintf(buf, sizeof(buf), "%u", *static_cast<const unsigned*>(p));
      break;
    case OptType::kFxp:
      snprintf(buf, sizeof(buf), "%" PRIu32, *static_cast<const uint32_t*>(p));
      break;
    case OptType::kSizeT: snprintf(buf, sizeof(buf), "%zu", *static_cast<const size_t*>(p)); break;
    case OptType::kSSizeT:
      snprintf(buf, sizeof(buf), "%zd", *static_cast<const ssize_t*>(p));
      break;
    case OptType::kUint64:
      snprintf(buf, sizeof(buf), "%" PRIu64, *static_cast<const uint64_t*>(p));
      break;
    case OptType::kInt64:
      snprintf(buf, sizeof(buf), "%" PRId64, *static_cast<const int64_t*>(p));
      break;
    case OptType::kString: return *static_cast<const char* const*>(p);
    case OptType::kNone: return "?";
  }
  return buf;
}

const char* width_of(const OptDesc& d) {
  switch (d.type) {
    case OptType::kBool: return d.size == 1 ? "bool" : "?";
    case OptType::kUnsigned:
    case OptType::kFxp: return d.size == 4 ? "u32" : "?";
    case OptType::kString: return d.size == sizeof(const char*) ? "string" : "?";
    default: return d.size == 8 ? "8" : "?";
  }
}

class OptTest : public ::testing::Test {
 protected:
  void SetUp() override { je::opt_reset(); }
  void TearDown() override { je::opt_reset(); }
};

TEST_F(OptTest, TableNamesAreUniqueAndIdsFollowOrder) {
  size_t n;
  const OptInfo* all = je::opt_info_table(&n);
  ASSERT_EQ(n, static_cast<size_t>(je::OptId::kCount));
  std::set<std::string> names;
  for (size_t i = 0; i < n; i++) {
    EXPECT_EQ(static_cast<size_t>(all[i].id), i);
    EXPECT_TRUE(names.insert(all[i].name).second) << all[i].name;
    EXPECT_EQ(&je::opt_info(all[i].id), &all[i]);
    EXPECT_EQ(je::opt_info_find(all[i].name, strlen(all[i].name)), &all[i]);
    EXPECT_NE(all[i].doc[0], '\0') << all[i].name;
    EXPECT_NE(all[i].status[0], '\0') << all[i].name;
    const bool stored = all[i].kind != OptKind::kAlias && all[i].kind != OptKind::kNotBuilt;
    EXPECT_EQ(all[i].ptr != nullptr, stored) << all[i].name;
    EXPECT_EQ(all[i].def != nullptr, stored) << all[i].name;
    if (all[i].kind == OptKind::kLetters || all[i].kind == OptKind::kString) {
      // Each copy points at its own buffer; compare the strings.
      EXPECT_STREQ(*static_cast<const char* const*>(all[i].ptr),
                   *static_cast<const char* const*>(all[i].def));
    } else if (stored) {
      EXPECT_EQ(memcmp(all[i].ptr, all[i].def, all[i].size), 0) << all[i].name;
    }
  }
}

// opt.* holds exactly 5.3.0's readable names (minus prof* in a --disable-prof build, which
// answers ENOENT for them, as 5.3.0's does) and minus the three ENOENT ones, plus the options of ours (doc/options.md).
TEST_F(OptTest, MallctlViewMatchesGoldenNames) {
  size_t n;
  const OptDesc* view = je::opt_table(&n);
  std::set<std::string> ours;
  for (size_t i = 0; i < n; i++) ours.insert(view[i].name);
  std::set<std::string> expected = {"bounded_coalesce", "idle_arena_decay", "reuse_before_grow",
                                    "borrow_dirty",     "extent_best_fit",  "purge_on_grow",
                                    "decay_hold_peak",  "oversize_hold",   "safety_checks",
                                    "extent_cache_bytes", "tcache_grow_bytes", "idle_return", "kept_max_bytes",
                                    // jemalloc 5.3.1's (doc/compat.md#jemalloc-531-api).
                                    "process_madvise_max_batch"};
  if (je::config::kProf) expected.insert("prof_bt_max");
  for (const Golden& g : kGolden) {
    if (strcmp(g.width, "-") == 0 || is_prof_name(g.name)) continue;
    expected.insert(g.name);
  }
  EXPECT_EQ(ours, expected);
  EXPECT_EQ(n, ours.size());
}

TEST_F(OptTest, WidthsAndDefaultsMatchGolden) {
  for (const Golden& g : kGolden) {
    const OptDesc* d = je::opt_find(g.name, strlen(g.name));
    if (strcmp(g.width, "-") == 0 || is_prof_name(g.name)) {
      EXPECT_EQ(d, nullptr) << g.name;
      continue;
    }
    ASSERT_NE(d, nullptr) << g.name;
    EXPECT_STREQ(width_of(*d), g.width) << g.name;
    // Both are machine-dependent and computed at boot (see the table's status column).
    if (strcmp(g.name, "narenas") == 0 || strcmp(g.name, "max_background_threads") == 0) continue;
    // 5.3.0's debug builds default junk to "true" too (its golden values are a release build's).
    if (je::config::kDebug && strcmp(g.name, "junk") == 0) {
      EXPECT_EQ(format_scalar(d->type, d->ptr), "true");
      continue;
    }
    // A build property: false in a --disable-cache-oblivious build (as 5.3.0 configured so).
    if (!je::config::kCacheOblivious && strcmp(g.name, "cache_oblivious") == 0) {
      EXPECT_EQ(format_scalar(d->type, d->ptr), "false");
      continue;
    }
    EXPECT_EQ(format_scalar(d->type, d->ptr), g.value) << g.name;
  }
  EXPECT_EQ(je::g_opt.narenas, 0u);
  EXPECT_EQ(je::g_opt.max_background_threads, je::kOptMaxBackgroundThreadsUnset);
  EXPECT_EQ(je::kOptMaxBackgroundThreadsDefault, 4u);
}

TEST_F(OptTest, FindTakesALengthAndRejectsNonMallctlKeys) {
  const char* s = "tcache_max,rest";
  const OptDesc* d = je::opt_find(s, 10);
  ASSERT_NE(d, nullptr);
  EXPECT_STREQ(d->name, "tcache_max");
  EXPECT_EQ(d->ptr, &je::g_opt.tcache_max);
  EXPECT_EQ(d->size, sizeof(size_t));
  const OptDesc* t = je::opt_find(s, 6);  // "tcache", a different option
  ASSERT_NE(t, nullptr);
  EXPECT_STREQ(t->name, "tcache");
  EXPECT_EQ(je::opt_find("tcache_maxx", 11), nullptr);
  EXPECT_EQ(je::opt_find("", 0), nullptr);
  for (const char* k : {"lg_tcache_max", "narenas_ratio", "bin_shards", "slab_sizes",
                        "san_guard_small", "hpa_hugification_threshold_ratio", "utrace", "xmalloc",
                        "lg_san_uaf_align", "log", "prof_unbias", "prof_log"}) {
    EXPECT_EQ(je::opt_find(k, strlen(k)), nullptr) << k;
    EXPECT_NE(je::opt_info_find(k, strlen(k)), nullptr) << k;
  }
  const OptDesc* b = je::opt_find("bounded_coalesce", 16);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->type, OptType::kBool);
  EXPECT_TRUE(*static_cast<const bool*>(b->ptr));
}

TEST_F(OptTest, StringOptionsPointAtTheirChoiceLiteralsOrBuffers) {
  EXPECT_EQ(je::g_opt.dss, je::kDssNames[2]);
  EXPECT_EQ(je::g_opt.stats_print_opts, je::g_opt.stats_print_opts_buf);
  EXPECT_EQ(je::g_opt.stats_interval_opts, je::g_opt.stats_interval_opts_buf);
  const OptDesc* d = je::opt_find("stats_print_opts", 16);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(*static_cast<const char* const*>(d->ptr), je::g_opt.stats_print_opts_buf);
  EXPECT_EQ(je::g_opt.bin_shards[0], 1);
  EXPECT_EQ(je::g_opt.bin_shards[je::kOptNBins - 1], 1);
  EXPECT_EQ(je::g_opt.slab_sizes[0], 0);
  EXPECT_EQ(je::g_opt.narenas_ratio, 4u << 16);
  EXPECT_TRUE(je::g_opt.bounded_coalesce);
  EXPECT_TRUE(je::g_opt.reuse_before_grow);
  EXPECT_FALSE(je::g_opt.purge_on_grow);
  EXPECT_TRUE(je::g_opt.extent_best_fit);
  EXPECT_TRUE(je::g_opt.borrow_dirty);
  EXPECT_TRUE(je::g_opt.decay_hold_peak);
  EXPECT_TRUE(je::g_opt.oversize_hold);
}

TEST_F(OptTest, ResetRestoresDefaultsAndBufferPointers) {
  je::g_opt.dirty_decay_ms = 5;
  je::g_opt.dss = je::kDssNames[0];
  je::g_opt.dss_prec = je::DssPrec::kDisabled;
  strcpy(je::g_opt.stats_print_opts_buf, "Jg");
  je::g_opt.stats_print_opts = "elsewhere";
  je::g_opt.bin_shards[3] = 9;
  je::opt_reset();
  EXPECT_EQ(je::g_opt.dirty_decay_ms, 10000);
  EXPECT_EQ(je::g_opt.dss, je::kDssNames[2]);
  EXPECT_EQ(je::g_opt.dss_prec, je::DssPrec::kSecondary);
  EXPECT_STREQ(je::g_opt.stats_print_opts, "");
  EXPECT_EQ(je::g_opt.stats_print_opts, je::g_opt.stats_print_opts_buf);
  EXPECT_EQ(je::g_opt.bin_shards[3], 1);
  strcpy(je::g_opt.prof_prefix_buf, "x");
  je::g_opt.prof_prefix = "elsewhere";
  je::opt_reset();
  EXPECT_STREQ(je::g_opt.prof_prefix, "jeprof");
  EXPECT_EQ(je::g_opt.prof_prefix, je::g_opt.prof_prefix_buf);
}

// ---- doc/options.md ---------------------------------------------------------------------------

std::string md_escape(std::string s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

std::string type_text(const OptInfo& o) {
  if ((o.flags & je::kOptMallctl) == 0) return "—";
  switch (o.type) {
    case OptType::kBool: return "bool";
    case OptType::kUnsigned: return "unsigned";
    case OptType::kSizeT: return "size_t";
    case OptType::kSSizeT: return "ssize_t";
    case OptType::kUint64: return "uint64_t";
    case OptType::kInt64: return "int64_t";
    case OptType::kFxp: return "uint32_t (16.16 fixed point)";
    case OptType::kString: return "const char *";
    case OptType::kNone: return "—";
  }
  return "?";
}

// Exact decimal of a 16.16 fixed-point value ("0.25", "4").
std::string fxp_text(uint32_t v) {
  if (v == UINT32_MAX) return "-1";
  std::string s = std::to_string(v >> 16);
  uint64_t frac = v & 0xffff;
  if (frac != 0) {
    s += '.';
    while (frac != 0) {
      frac *= 10;
      s += static_cast<char>('0' + (frac >> 16));
      frac &= 0xffff;
    }
  }
  return s;
}

std::string default_text(const OptInfo& o) {
  switch (o.kind) {
    case OptKind::kAlias:
    case OptKind::kNotBuilt: return "—";
    case OptKind::kFxp: return fxp_text(*static_cast<const uint32_t*>(o.def));
    case OptKind::kChoice:
    case OptKind::kString:
    case OptKind::kLetters:
      return "\"" + std::string(*static_cast<const char* const*>(o.def)) + "\"";
    case OptKind::kBinShards: return "1 per bin";
    case OptKind::kSlabPages: return "0 (class geometry)";
    default: break;
  }
  const OptType t = o.kind == OptKind::kBool ? OptType::kBool : o.type;
  return format_scalar(t, o.def);
}

std::string number_text(const OptInfo& o, uint64_t v) {
  const bool sgn = o.kind == OptKind::kSSizeT || o.kind == OptKind::kInt64;
  return sgn ? std::to_string(static_cast<int64_t>(v)) : std::to_string(v);
}

std::string domain_text(const OptInfo& o) {
  const je::OptDomain& d = o.domain;
  std::string s;
  if ((o.flags & je::kOptParse) == 0) return "— (Invalid conf pair)";
  switch (o.kind) {
    case OptKind::kBool: return "true, false";
    case OptKind::kNotBuilt: return "—";
    case OptKind::kAlias: return "see description";
    case OptKind::kString: return "any text, cut to 4095 bytes";
    case OptKind::kLetters:
      return "letters of " + std::string(je::kStatsLetters) + ", others ignored";
    case OptKind::kBinShards: return "lo-hi:n|..., 1 <= n <= 64";
    case OptKind::kSlabPages: return "lo-hi:pages|..., or default";
    case OptKind::kFxp:
      s = "decimal I[.F], I < 65536";
      if (d.rules & je::kOptMinusOne) s += ", or -1";
      return s;
    case OptKind::kChoice:
      for (unsigned i = 0; i < d.nnames; i++) s += (i ? ", " : "") + std::string(d.names[i]);
      if (d.rules & je::kOptValuePrefix) s += " (any prefix)";
      return s;
    default: break;
  }
  const bool lo = d.checks & je::kOptCheckMin;
  const bool hi = d.checks & je::kOptCheckMax;
  const std::string hs = (d.rules & je::kOptMaxIsCurrent) ? "current value" : number_text(o, d.hi);
  if (lo && hi) {
    s = "[" + number_text(o, d.lo) + ", " + hs + "]";
  } else if (lo) {
    s = ">= " + number_text(o, d.lo);
  } else if (hi) {
    s = "<= " + hs;
  } else {
    s = "any integer";
  }
  if (lo || hi) s += (d.checks & je::kOptClip) ? ", clipped" : ", else Out-of-range";
  if (d.rules & je::kOptDefaultKeyword) s += "; or default";
  return s;
}

std::string generate_table() {
  std::ostringstream out;
  out << "| key | `opt.*` type | default | accepted values | status | description |\n";
  out << "|---|---|---|---|---|---|\n";
  size_t n;
  const OptInfo* all = je::opt_info_table(&n);
  for (size_t i = 0; i < n; i++) {
    const OptInfo& o = all[i];
    out << "| `" << o.name << "` | " << md_escape(type_text(o)) << " | "
        << md_escape(default_text(o)) << " | " << md_escape(domain_text(o)) << " | "
        << md_escape(o.status) << " | " << md_escape(o.doc) << " |\n";
  }
  return out.str();
}

std::string doc_path() {
  const char* top = getenv("top_srcdir");
  return std::string(top != nullptr ? top : OPT_TEST_SRCDIR) + "/doc/options.md";
}

TEST_F(OptTest, DocListsEveryEntryExactlyAsTheTable) {
  const std::string path = doc_path();
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << "cannot read " << path;
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string doc = ss.str();
  const std::string begin = "<!-- BEGIN GENERATED OPTION TABLE -->\n";
  const std::string end = "<!-- END GENERATED OPTION TABLE -->";
  const size_t b = doc.find(begin);
  const size_t e = doc.find(end);
  ASSERT_NE(b, std::string::npos);
  ASSERT_NE(e, std::string::npos);
  ASSERT_LT(b, e);
  const std::string actual = doc.substr(b + begin.size(), e - b - begin.size());
  // The document describes the default build; a --disable-prof one shows the prof* keys as
  // Invalid conf pairs, which its status column says.
  if (!je::config::kProf) GTEST_SKIP() << "doc/options.md describes the profiling build";
  // ... and a release one: --enable-debug changes junk's default.
  if (je::config::kDebug) GTEST_SKIP() << "doc/options.md describes the release build";
  // ... with the cache-oblivious pad (cache_oblivious's default column).
  if (!je::config::kCacheOblivious) {
    GTEST_SKIP() << "doc/options.md describes the cache-oblivious build";
  }
  const std::string expected = generate_table();
  if (actual != expected) {
    const char* out = "options_table.generated.md";
    std::ofstream(out) << expected;
    ADD_FAILURE() << path << " is out of date with JE_OPTION_TABLE; the expected table was "
                  << "written to " << out << " (paste it between the markers)";
  }
  // Independently of the exact layout: every entry has its own row.
  size_t n;
  const OptInfo* all = je::opt_info_table(&n);
  for (size_t i = 0; i < n; i++) {
    EXPECT_NE(doc.find(std::string("| `") + all[i].name + "` |"), std::string::npos) << all[i].name;
  }
}

}  // namespace
