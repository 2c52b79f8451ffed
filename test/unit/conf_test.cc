// Unit tests for src/ctl/conf: the MALLOC_CONF parser. Expected outputs and values were read off
// Debian's libjemalloc.so.2 (5.3.0-1) with MALLOC_CONF and small programs reading opt.* (see the
// comments); prof* keys as in Debian's profiling build (or its --disable-prof twin, config::kProf).
#include "ctl/conf.h"

#include <gtest/gtest.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "ctl/opt.h"
#include "extent/hold.h"
#include "extent/placement.h"
#include "support/config.h"
#include "meta/sc.h"
#include "support/malloc_io.h"

namespace {

using je::g_opt;
using je::OptInfo;
using je::OptKind;

std::string g_out;

void capture(const char* s) { g_out += s; }

// The value of option `key`, formatted: bools as true/false, numbers in decimal (signed kinds
// signed, fxp as its raw 32-bit value), strings as-is.
std::string value_of(const char* key) {
  const OptInfo* o = je::opt_info_find(key, strlen(key));
  if (o == nullptr || o->ptr == nullptr) return "<no storage>";
  char buf[64];
  switch (o->kind) {
    case OptKind::kBool: return *static_cast<const bool*>(o->ptr) ? "true" : "false";
    case OptKind::kUnsigned:
      snprintf(buf, sizeof(buf), "%u", *static_cast<unsigned*>(o->ptr));
      break;
    case OptKind::kFxp:
      snprintf(buf, sizeof(buf), "%" PRIu32, *static_cast<uint32_t*>(o->ptr));
      break;
    case OptKind::kSizeT: snprintf(buf, sizeof(buf), "%zu", *static_cast<size_t*>(o->ptr)); break;
    case OptKind::kSSizeT: snprintf(buf, sizeof(buf), "%zd", *static_cast<ssize_t*>(o->ptr)); break;
    case OptKind::kUint64:
      snprintf(buf, sizeof(buf), "%" PRIu64, *static_cast<uint64_t*>(o->ptr));
      break;
    case OptKind::kInt64:
      snprintf(buf, sizeof(buf), "%" PRId64, *static_cast<int64_t*>(o->ptr));
      break;
    case OptKind::kChoice:
    case OptKind::kString:
    case OptKind::kLetters: return *static_cast<const char* const*>(o->ptr);
    default: return "<array>";
  }
  return buf;
}

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < s.size()) {
    size_t nl = s.find('\n', start);
    if (nl == std::string::npos) nl = s.size();
    out.push_back(s.substr(start, nl - start));
    start = nl + 1;
  }
  return out;
}

class ConfTest : public ::testing::Test {
 protected:
  void SetUp() override {
    je::opt_reset();
    g_out.clear();
    je::io_set_writer(&capture);
  }
  void TearDown() override {
    je::io_set_writer(nullptr);
    je::opt_reset();
  }
  // Parses `s` from defaults and returns the output.
  std::string parse(const char* s) {
    je::opt_reset();
    g_out.clear();
    je::conf_parse_string(s);
    return g_out;
  }
};

// ---- Every option
// --------------------------------------------------------------------------------

// A valid, non-default value for each parseable table entry, and the value it must read back as.
struct Valid {
  const char* key;
  const char* value;
  const char* read_key;  // option to read back (differs for aliases)
  const char* expect;
};
constexpr Valid kValid[] = {
    {"abort", "true", "abort", "true"},
    {"abort_conf", "true", "abort_conf", "true"},
    {"confirm_conf", "false", "confirm_conf", "false"},
    {"trust_madvise", "true", "trust_madvise", "true"},
    {"metadata_thp", "auto", "metadata_thp", "auto"},
    {"retain", "false", "retain", "false"},
    {"dss", "primary", "dss", "primary"},
    {"narenas", "3", "narenas", "3"},
    {"narenas_ratio", "2.5", "narenas_ratio", "163840"},
    {"bin_shards", "1-16:2", "bin_shards", "<array>"},
    {"mutex_max_spin", "-1", "mutex_max_spin", "-1"},
    {"dirty_decay_ms", "5000", "dirty_decay_ms", "5000"},
    {"muzzy_decay_ms", "10000", "muzzy_decay_ms", "10000"},
    {"stats_print", "true", "stats_print", "true"},
    {"stats_print_opts", "Jg", "stats_print_opts", "Jg"},
    {"stats_interval", "1048576", "stats_interval", "1048576"},
    {"stats_interval_opts", "xe", "stats_interval_opts", "xe"},
    {"junk", "alloc", "junk", "alloc"},
    {"zero", "true", "zero", "true"},
    {"experimental_infallible_new", "true", "experimental_infallible_new", "true"},
    {"tcache", "false", "tcache", "false"},
    {"tcache_max", "4096", "tcache_max", "4096"},
    {"lg_tcache_max", "20", "tcache_max", "1048576"},
    {"lg_tcache_nslots_mul", "-2", "lg_tcache_nslots_mul", "-2"},
    {"tcache_nslots_small_min", "10", "tcache_nslots_small_min", "10"},
    {"tcache_nslots_small_max", "100", "tcache_nslots_small_max", "100"},
    {"tcache_nslots_large", "40", "tcache_nslots_large", "40"},
    {"tcache_gc_incr_bytes", "131072", "tcache_gc_incr_bytes", "131072"},
    {"tcache_gc_delay_bytes", "4096", "tcache_gc_delay_bytes", "4096"},
    {"lg_tcache_flush_small_div", "3", "lg_tcache_flush_small_div", "3"},
    {"lg_tcache_flush_large_div", "4", "lg_tcache_flush_large_div", "4"},
    {"oversize_threshold", "0", "oversize_threshold", "0"},
    {"lg_extent_max_active_fit", "8", "lg_extent_max_active_fit", "8"},
    {"percpu_arena", "percpu", "percpu_arena", "percpu"},
    {"background_thread", "true", "background_thread", "true"},
    {"max_background_threads", "2", "max_background_threads", "2"},
    {"hpa", "true", "hpa", "true"},
    {"hpa_slab_max_alloc", "131072", "hpa_slab_max_alloc", "131072"},
    {"hpa_hugification_threshold", "1048576", "hpa_hugification_threshold", "1048576"},
    {"hpa_hugification_threshold_ratio", "0.95", "hpa_hugification_threshold", "1992288"},
    {"hpa_hugify_delay_ms", "1", "hpa_hugify_delay_ms", "1"},
    {"hpa_min_purge_interval_ms", "2", "hpa_min_purge_interval_ms", "2"},
    {"hpa_dirty_mult", "0.5", "hpa_dirty_mult", "32768"},
    {"hpa_sec_nshards", "0", "hpa_sec_nshards", "0"},
    {"hpa_sec_max_alloc", "65536", "hpa_sec_max_alloc", "65536"},
    {"hpa_sec_max_bytes", "1048576", "hpa_sec_max_bytes", "1048576"},
    {"hpa_sec_bytes_after_flush", "65536", "hpa_sec_bytes_after_flush", "65536"},
    {"hpa_sec_batch_fill_extra", "4", "hpa_sec_batch_fill_extra", "4"},
    {"slab_sizes", "16-16:2", "slab_sizes", "<array>"},
    {"thp", "never", "thp", "never"},
    {"zero_realloc", "alloc", "zero_realloc", "alloc"},
    {"san_guard_small", "3", "san_guard_small", "3"},
    {"san_guard_large", "4", "san_guard_large", "4"},
    {"bounded_coalesce", "false", "bounded_coalesce", "false"},
    {"idle_arena_decay", "false", "idle_arena_decay", "false"},
    {"reuse_before_grow", "false", "reuse_before_grow", "false"},
    {"purge_on_grow", "true", "purge_on_grow", "true"},
    {"extent_best_fit", "false", "extent_best_fit", "false"},
    {"borrow_dirty", "false", "borrow_dirty", "false"},
    {"decay_hold_peak", "false", "decay_hold_peak", "false"},
    {"oversize_hold", "false", "oversize_hold", "false"},
    {"safety_checks", "true", "safety_checks", "true"},
    {"extent_cache_bytes", "0", "extent_cache_bytes", "0"},
    {"tcache_grow_bytes", "0", "tcache_grow_bytes", "0"},
    {"idle_return", "false", "idle_return", "false"},
    {"kept_max_bytes", "16777216", "kept_max_bytes", "16777216"},
    {"process_madvise_max_batch", "16", "process_madvise_max_batch", "16"},
    {"calloc_madvise_threshold", "65536", "calloc_madvise_threshold", "65536"},
    {"prof_bt_max", "64", "prof_bt_max", "64"},
    {"preset", "jemalloc-5.3.0", "extent_cache_bytes", "0"},
    {"prof", "true", "prof", "true"},
    {"prof_prefix", "dumps/x", "prof_prefix", "dumps/x"},
    {"prof_active", "false", "prof_active", "false"},
    {"prof_thread_active_init", "false", "prof_thread_active_init", "false"},
    {"lg_prof_sample", "12", "lg_prof_sample", "12"},
    {"lg_prof_interval", "30", "lg_prof_interval", "30"},
    {"prof_gdump", "true", "prof_gdump", "true"},
    {"prof_final", "true", "prof_final", "true"},
    {"prof_leak", "true", "prof_leak", "true"},
    {"prof_leak_error", "true", "prof_leak_error", "true"},
    {"prof_accum", "true", "prof_accum", "true"},
    {"prof_recent_alloc_max", "-1", "prof_recent_alloc_max", "-1"},
    {"prof_stats", "true", "prof_stats", "true"},
    {"prof_sys_thread_name", "true", "prof_sys_thread_name", "true"},
    {"prof_time_resolution", "high", "prof_time_resolution", "high"},
    {"prof_unbias", "false", "prof_unbias", "false"},
    {"prof_log", "true", "prof_log", "true"},
};

TEST_F(ConfTest, EveryParseableKeyAcceptsAValidValue) {
  size_t n;
  const OptInfo* all = je::opt_info_table(&n);
  size_t covered = 0;
  for (size_t i = 0; i < n; i++) {
    if ((all[i].flags & je::kOptParse) == 0) continue;
    const Valid* v = nullptr;
    for (const Valid& c : kValid) {
      if (strcmp(c.key, all[i].name) == 0) v = &c;
    }
    ASSERT_NE(v, nullptr) << "no test value for " << all[i].name;
    covered++;
    const std::string s = std::string(v->key) + ":" + v->value;
    je::opt_reset();
    const std::string before = value_of(v->read_key);
    EXPECT_EQ(parse(s.c_str()), "") << s;
    EXPECT_EQ(value_of(v->read_key), v->expect) << s;
    // (confirm_conf:true would echo itself; its test value is the default.)
    if (strcmp(v->expect, "<array>") != 0 && strcmp(v->key, "confirm_conf") != 0) {
      EXPECT_NE(before, v->expect) << s;
    }
  }
  // Every test value is used, but for the prof* keys of a --disable-prof build.
  size_t parseable = 0;
  for (const Valid& c : kValid) {
    const OptInfo* o = je::opt_info_find(c.key, strlen(c.key));
    parseable += o != nullptr && (o->flags & je::kOptParse) != 0;
  }
  EXPECT_EQ(covered, parseable);
  if (je::config::kProf) {
    EXPECT_EQ(covered, sizeof(kValid) / sizeof(kValid[0]));
  }
  parse("bin_shards:1-16:2");
  EXPECT_EQ(g_opt.bin_shards[0], 2);
  EXPECT_EQ(g_opt.bin_shards[1], 2);
  EXPECT_EQ(g_opt.bin_shards[2], 1);
  parse("slab_sizes:16-16:2");
  EXPECT_EQ(g_opt.slab_sizes[1], 2);
  EXPECT_EQ(g_opt.slab_sizes[0], 0);
}

// 5.3.0's list of keys (doc/options.md): each is known to the table; Debian accepts all but these,
// which 5.3.0 itself rejects on Debian's build (cache_oblivious, utrace, xmalloc, lg_san_uaf_align,
// log) or, in a --disable-prof build, as 5.3.0's --disable-prof does (prof*).
TEST_F(ConfTest, Every530KeyIsKnownAndTreatedAsDebianMinusProf) {
  // clang-format off
  const char* keys[] = {
      "abort", "abort_conf", "cache_oblivious", "confirm_conf", "trust_madvise", "retain", "dss",
      "narenas", "narenas_ratio", "percpu_arena", "oversize_threshold", "background_thread",
      "max_background_threads", "dirty_decay_ms", "muzzy_decay_ms", "lg_extent_max_active_fit",
      "mutex_max_spin", "metadata_thp", "thp", "hpa", "hpa_slab_max_alloc",
      "hpa_hugification_threshold", "hpa_hugification_threshold_ratio", "hpa_hugify_delay_ms",
      "hpa_min_purge_interval_ms", "hpa_dirty_mult", "hpa_sec_nshards", "hpa_sec_max_alloc",
      "hpa_sec_max_bytes", "hpa_sec_bytes_after_flush", "hpa_sec_batch_fill_extra", "bin_shards",
      "slab_sizes", "junk", "zero", "utrace", "xmalloc", "experimental_infallible_new", "tcache",
      "tcache_max", "lg_tcache_max", "tcache_nslots_small_min", "tcache_nslots_small_max",
      "tcache_nslots_large", "lg_tcache_nslots_mul", "tcache_gc_incr_bytes",
      "tcache_gc_delay_bytes", "lg_tcache_flush_small_div", "lg_tcache_flush_large_div",
      "stats_print", "stats_print_opts", "stats_interval", "stats_interval_opts", "zero_realloc",
      "san_guard_small", "san_guard_large", "lg_san_uaf_align", "log", "prof", "prof_prefix",
      "prof_active", "prof_thread_active_init", "lg_prof_sample", "lg_prof_interval", "prof_gdump",
      "prof_final", "prof_leak", "prof_leak_error", "prof_accum", "prof_recent_alloc_max",
      "prof_stats", "prof_sys_thread_name", "prof_time_resolution", "prof_unbias", "prof_log"
  };
  // clang-format on
  for (const char* k : keys) {
    const OptInfo* o = je::opt_info_find(k, strlen(k));
    ASSERT_NE(o, nullptr) << k;
    const std::string key = k;
    const bool rejected = key == "cache_oblivious" || key == "utrace" || key == "xmalloc" ||
                          key == "lg_san_uaf_align" || key == "log" ||
                          (!je::config::kProf && key.find("prof") != std::string::npos);
    EXPECT_EQ((o->flags & je::kOptParse) == 0, rejected) << k;
    const Valid* v = nullptr;
    for (const Valid& c : kValid) {
      if (key == c.key) v = &c;
    }
    const std::string s = key + ":" + (v != nullptr ? v->value : "true");
    const std::string out = parse(s.c_str());
    if (rejected) {
      EXPECT_EQ(out, "<jemalloc>: Invalid conf pair: " + s + "\n");
    } else {
      EXPECT_EQ(out, "") << s;
    }
  }
}

// ---- Strings real projects ship (in their start scripts, builds and documentation)
// ---------------------------------------------------------

TEST_F(ConfTest, ShippedStringsParseWithOnlyProfWarnings) {
  const char* shipped[] = {
      "percpu_arena:percpu,oversize_threshold:0",
      "percpu_arena:percpu,oversize_threshold:0,muzzy_decay_ms:10000",
      "percpu_arena:percpu,oversize_threshold:0,muzzy_decay_ms:5000,dirty_decay_ms:5000",
      "percpu_arena:percpu,oversize_threshold:0,muzzy_decay_ms:0,dirty_decay_ms:5000,prof:true,"
      "prof_active:true,prof_thread_active_init:false,background_thread:true,"
      "lg_extent_max_active_fit:8",
      "percpu_arena:percpu,oversize_threshold:67108864,muzzy_decay_ms:0,dirty_decay_ms:5000,"
      "background_thread:true,lg_extent_max_active_fit:6",
      "background_thread:true,prof:true",
      "percpu_arena:percpu,background_thread:true,metadata_thp:auto,muzzy_decay_ms:15000,"
      "dirty_decay_ms:15000,oversize_threshold:0,lg_tcache_max:20,prof:false,lg_prof_interval:32,"
      "lg_prof_sample:19,prof_gdump:false,prof_accum:false,prof_leak:false,prof_final:false",
      "percpu_arena:percpu,background_thread:true,metadata_thp:auto,muzzy_decay_ms:30000,"
      "dirty_decay_ms:30000,oversize_threshold:0,lg_tcache_max:16,prof:true,"
      "prof_prefix:jeprof.out",
      "percpu_arena:percpu,oversize_threshold:0,muzzy_decay_ms:5000,dirty_decay_ms:5000,"
      "metadata_thp:auto,background_thread:true",
      "percpu_arena:percpu,oversize_threshold:134217728,muzzy_decay_ms:5000,dirty_decay_ms:5000,"
      "metadata_thp:auto,background_thread:true",
      "oversize_threshold:0,dirty_decay_ms:1000,muzzy_decay_ms:1000,background_thread:true",
      "oversize_threshold:0,dirty_decay_ms:0,muzzy_decay_ms:0",
      "oversize_threshold:0,dirty_decay_ms:1000,muzzy_decay_ms:1000,background_thread:true,"
      "junk:true",
      "prof:true,prof_active:false,prof_prefix:/var/lib/tikv/jeprof",
      "percpu_arena:percpu,oversize_threshold:0,background_thread:true,dirty_decay_ms:5000,"
      "muzzy_decay_ms:5000",
      "prof:true,prof_active:false,lg_prof_sample:19",
      // TUNING.md recipes.
      "background_thread:true,metadata_thp:auto,dirty_decay_ms:30000,muzzy_decay_ms:30000",
      "background_thread:true,tcache_max:4096,dirty_decay_ms:5000,muzzy_decay_ms:5000,narenas:2",
      "narenas:1,tcache_max:1024,dirty_decay_ms:1000,muzzy_decay_ms:0",
      "narenas:1,tcache:false,dirty_decay_ms:0,muzzy_decay_ms:0,abort_conf:true",
  };
  for (const char* s : shipped) {
    const std::string out = parse(s);
    size_t prof_keys = 0;
    // A profiling build takes them all; a --disable-prof one reports each prof key.
    if (je::config::kProf) {
      EXPECT_EQ(out, "") << s;
      continue;
    }
    for (const char* p = s; (p = strstr(p, "prof")) != nullptr; p++) {
      if (p == s || p[-1] == ',' || (p >= s + 3 && strncmp(p - 3, "lg_", 3) == 0)) prof_keys++;
    }
    const std::vector<std::string> got = lines(out);
    EXPECT_EQ(got.size(), prof_keys) << s << "\n" << out;
    for (const std::string& l : got) {
      EXPECT_TRUE(l.rfind("<jemalloc>: Invalid conf pair: prof", 0) == 0 ||
                  l.rfind("<jemalloc>: Invalid conf pair: lg_prof", 0) == 0)
          << l;
    }
  }
  parse(shipped[6]);  // Doris
  EXPECT_EQ(g_opt.percpu_arena_mode, je::PercpuArenaMode::kPercpu);
  EXPECT_TRUE(g_opt.background_thread);
  EXPECT_EQ(g_opt.metadata_thp_mode, je::MetadataThpMode::kAuto);
  EXPECT_EQ(g_opt.muzzy_decay_ms, 15000);
  EXPECT_EQ(g_opt.dirty_decay_ms, 15000);
  EXPECT_EQ(g_opt.oversize_threshold, 0u);
  EXPECT_EQ(g_opt.tcache_max, size_t{1} << 20);
  parse(shipped[12]);  // Arrow debug
  EXPECT_TRUE(g_opt.junk_alloc);
  EXPECT_TRUE(g_opt.junk_free);
}

// ---- Invalid pairs
// -------------------------------------------------------------------------------

// Each bad pair prints exactly one line (Debian's text) and leaves the option unchanged.
struct Bad {
  const char* conf;
  const char* message;
  const char* key;
};
constexpr Bad kBad[] = {
    {"bogus:1", "Invalid conf pair", nullptr},
    {"Narenas:1", "Invalid conf pair", nullptr},
    {"t:always", "Invalid conf pair", nullptr},
    {"n:3", "Invalid conf pair", nullptr},
    {"cache_oblivious:false", "Invalid conf pair", "cache_oblivious"},
    {"xmalloc:true", "Invalid conf pair", nullptr},
    {"experimental_foo:1", "Invalid conf pair", nullptr},
    {"tcache:1", "Invalid conf value", "tcache"},
    {"tcache:True", "Invalid conf value", "tcache"},
    {"tcache:", "Invalid conf value", "tcache"},
    {"confirm_conf:yes", "Invalid conf value", "confirm_conf"},
    {"dirty_decay_ms:x", "Invalid conf value", "dirty_decay_ms"},
    {"dirty_decay_ms:-2", "Out-of-range conf value", "dirty_decay_ms"},
    {"dirty_decay_ms:18446744072001", "Out-of-range conf value", "dirty_decay_ms"},
    {"dirty_decay_ms:9223372036854775807", "Out-of-range conf value", "dirty_decay_ms"},
    {"dirty_decay_ms:9223372036854775808", "Out-of-range conf value", "dirty_decay_ms"},
    {"dirty_decay_ms:-9223372036854775808", "Out-of-range conf value", "dirty_decay_ms"},
    {"dirty_decay_ms:-0x10", "Out-of-range conf value", "dirty_decay_ms"},
    {"muzzy_decay_ms:--1", "Invalid conf value", "muzzy_decay_ms"},
    {"muzzy_decay_ms:+-1", "Invalid conf value", "muzzy_decay_ms"},
    {"muzzy_decay_ms:-+1", "Invalid conf value", "muzzy_decay_ms"},
    {"muzzy_decay_ms: -5", "Out-of-range conf value", "muzzy_decay_ms"},
    {"mutex_max_spin:-2", "Out-of-range conf value", "mutex_max_spin"},
    {"mutex_max_spin:9223372036854775808", "Out-of-range conf value", "mutex_max_spin"},
    {"stats_interval:-2", "Out-of-range conf value", "stats_interval"},
    {"narenas:0", "Out-of-range conf value", "narenas"},
    {"narenas:08", "Invalid conf value", "narenas"},
    {"narenas:7 ", "Invalid conf value", "narenas"},
    {"narenas:0x", "Invalid conf value", "narenas"},
    {"narenas:18446744073709551616", "Invalid conf value", "narenas"},
    {"narenas:1:2", "Invalid conf value", "narenas"},
    {"narenas:Default", "Invalid conf value", "narenas"},
    {"tcache_max:99999999999999999999", "Invalid conf value", "tcache_max"},
    {"lg_tcache_max:x", "Invalid conf value", "tcache_max"},
    {"preset:5.3.0", "Invalid conf value", "bounded_coalesce"},
    {"lg_tcache_max:0x", "Invalid conf value", "tcache_max"},
    {"lg_tcache_nslots_mul:-17", "Out-of-range conf value", "lg_tcache_nslots_mul"},
    {"lg_tcache_nslots_mul:17", "Out-of-range conf value", "lg_tcache_nslots_mul"},
    {"oversize_threshold:8070450532247928833", "Out-of-range conf value", "oversize_threshold"},
    {"oversize_threshold:-1", "Out-of-range conf value", "oversize_threshold"},
    {"lg_extent_max_active_fit:65", "Out-of-range conf value", "lg_extent_max_active_fit"},
    {"lg_extent_max_active_fit:-1", "Out-of-range conf value", "lg_extent_max_active_fit"},
    {"dss:primaryXX", "Invalid conf value", "dss"},
    {"dss:x", "Invalid conf value", "dss"},
    {":primary", "Invalid conf value", "metadata_thp"},
    {"::", "Invalid conf value", "metadata_thp"},
    {"thp:x", "Invalid conf value", "thp"},
    {"percpu_arena:percpux", "Invalid conf value", "percpu_arena"},
    {"junk:", "Invalid conf value", "junk"},
    {"junk:tru", "Invalid conf value", "junk"},
    {"junk:TRUE", "Invalid conf value", "junk"},
    {"zero_realloc:", "Invalid conf value", "zero_realloc"},
    {"zero_realloc:al", "Invalid conf value", "zero_realloc"},
    {"hpa_dirty_mult:", "Invalid conf value", "hpa_dirty_mult"},
    {"hpa_dirty_mult:.", "Invalid conf value", "hpa_dirty_mult"},
    {"hpa_dirty_mult:0.", "Invalid conf value", "hpa_dirty_mult"},
    {"hpa_dirty_mult:1.5x", "Invalid conf value", "hpa_dirty_mult"},
    {"hpa_dirty_mult: 1", "Invalid conf value", "hpa_dirty_mult"},
    {"hpa_dirty_mult:+1", "Invalid conf value", "hpa_dirty_mult"},
    {"hpa_dirty_mult:65536", "Invalid conf value", "hpa_dirty_mult"},
    {"hpa_dirty_mult:-2", "Invalid conf value", "hpa_dirty_mult"},
    {"hpa_dirty_mult:-0", "Invalid conf value", "hpa_dirty_mult"},
    {"hpa_dirty_mult:1e3", "Invalid conf value", "hpa_dirty_mult"},
    {"hpa_dirty_mult:1.5.", "Invalid conf value", "hpa_dirty_mult"},
    {"hpa_dirty_mult:0.5 ", "Invalid conf value", "hpa_dirty_mult"},
    {"hpa_hugification_threshold_ratio:1.01", "Invalid conf value", "hpa_hugification_threshold"},
    {"hpa_hugification_threshold_ratio:2", "Invalid conf value", "hpa_hugification_threshold"},
    {"hpa_hugification_threshold_ratio:-1", "Invalid conf value", "hpa_hugification_threshold"},
    {"narenas_ratio:65536", "Invalid conf value", "narenas_ratio"},
    {"narenas_ratio:1.", "Invalid conf value", "narenas_ratio"},
    {"san_guard_large:x", "Invalid conf value", "san_guard_large"},
    {"bin_shards:0-10:65", "Invalid settings for bin_shards", nullptr},
    {"bin_shards:0-10:0", "Invalid settings for bin_shards", nullptr},
    {"bin_shards:", "Invalid settings for bin_shards", nullptr},
    {"bin_shards: 1 - 16 : 4", "Invalid settings for bin_shards", nullptr},
    {"slab_sizes:0-16:0|x", "Invalid settings for slab_sizes", nullptr},
    {"slab_sizes:1-2", "Invalid settings for slab_sizes", nullptr},
    {"experimental_infallible_new:maybe", "Invalid conf value", "experimental_infallible_new"},
};

TEST_F(ConfTest, InvalidPairsPrintOneLineAndKeepTheOldValue) {
  for (const Bad& b : kBad) {
    je::opt_reset();
    const std::string before = b.key != nullptr ? value_of(b.key) : "";
    g_out.clear();
    const bool ok = je::conf_parse_string(b.conf);
    EXPECT_EQ(g_out, std::string("<jemalloc>: ") + b.message + ": " + b.conf + "\n");
    if (b.key != nullptr) {
      EXPECT_EQ(value_of(b.key), before) << b.conf;
    }
    // experimental_* keys are reported but never count as errors.
    EXPECT_EQ(ok, strncmp(b.conf, "experimental_", 13) == 0) << b.conf;
  }
}

// ---- Values jemalloc accepts, with the value it stores
// -------------------------------------------

struct Accepted {
  const char* conf;
  const char* key;
  const char* expect;
};
constexpr Accepted kAccepted[] = {
    // Numbers: strtoumax rules (whitespace, one sign, 0x, leading-0 octal, weak overflow).
    {"narenas:0x10", "narenas", "16"},
    {"narenas:010", "narenas", "8"},
    {"narenas: 7", "narenas", "7"},
    {"narenas:\t7", "narenas", "7"},
    {"narenas:+7", "narenas", "7"},
    {"narenas:-1", "narenas", "4294967295"},
    {"narenas:5000000000", "narenas", "705032704"},
    {"narenas:4294967296", "narenas", "0"},
    {"narenas:4294967297", "narenas", "1"},
    {"narenas:3,narenas:default", "narenas", "0"},
    {"tcache_gc_delay_bytes:27670116110564327420", "tcache_gc_delay_bytes", "9223372036854775804"},
    {"tcache_gc_delay_bytes:0x1ffffffffffffffff", "tcache_gc_delay_bytes", "18446744073709551615"},
    {"tcache_gc_delay_bytes:-0", "tcache_gc_delay_bytes", "0"},
    {"tcache_gc_delay_bytes:0X1f", "tcache_gc_delay_bytes", "31"},
    {"tcache_gc_delay_bytes:-1", "tcache_gc_delay_bytes", "18446744073709551615"},
    {"dirty_decay_ms:-1", "dirty_decay_ms", "-1"},
    {"dirty_decay_ms:0", "dirty_decay_ms", "0"},
    {"dirty_decay_ms:18446744072000", "dirty_decay_ms", "18446744072000"},
    {"dirty_decay_ms:18446744073709551615", "dirty_decay_ms", "-1"},
    {"mutex_max_spin:9223372036854775807", "mutex_max_spin", "9223372036854775807"},
    {"lg_tcache_nslots_mul:-16", "lg_tcache_nslots_mul", "-16"},
    {"lg_tcache_nslots_mul:16", "lg_tcache_nslots_mul", "16"},
    // Silent clipping.
    {"tcache_max:0", "tcache_max", "0"},
    {"tcache_max:8388609", "tcache_max", "8388608"},
    {"tcache_max:-1", "tcache_max", "8388608"},
    {"lg_tcache_max:0", "tcache_max", "1"},
    {"lg_tcache_max:23", "tcache_max", "8388608"},
    {"lg_tcache_max:65", "tcache_max", "8388608"},
    {"lg_tcache_max:-1", "tcache_max", "8388608"},
    {"tcache_nslots_small_min:0", "tcache_nslots_small_min", "1"},
    {"tcache_nslots_small_min:2049", "tcache_nslots_small_min", "2048"},
    {"tcache_nslots_small_min:-1", "tcache_nslots_small_min", "2048"},
    {"tcache_nslots_large:5000", "tcache_nslots_large", "2048"},
    {"tcache_gc_incr_bytes:0", "tcache_gc_incr_bytes", "1024"},
    {"tcache_gc_incr_bytes:-1", "tcache_gc_incr_bytes", "18446744073709551615"},
    {"lg_tcache_flush_small_div:0", "lg_tcache_flush_small_div", "1"},
    {"lg_tcache_flush_large_div:17", "lg_tcache_flush_large_div", "16"},
    {"oversize_threshold:8070450532247928832", "oversize_threshold", "8070450532247928832"},
    {"lg_extent_max_active_fit:64", "lg_extent_max_active_fit", "64"},
    {"max_background_threads:0", "max_background_threads", "1"},
    {"max_background_threads:4096", "max_background_threads", "4096"},
    {"max_background_threads:-1", "max_background_threads", "4096"},
    {"max_background_threads:10,max_background_threads:20", "max_background_threads", "10"},
    {"hpa_slab_max_alloc:0", "hpa_slab_max_alloc", "4096"},
    {"hpa_slab_max_alloc:2097153", "hpa_slab_max_alloc", "2097152"},
    {"hpa_hugification_threshold:0", "hpa_hugification_threshold", "4096"},
    {"hpa_hugification_threshold_ratio:0", "hpa_hugification_threshold", "0"},
    {"hpa_hugification_threshold_ratio:1.0", "hpa_hugification_threshold", "2097152"},
    {"hpa_hugification_threshold_ratio:.5", "hpa_hugification_threshold", "1048576"},
    {"hpa_hugification_threshold_ratio:0.3333333333333333333333", "hpa_hugification_threshold",
     "699040"},
    {"hpa_hugify_delay_ms:-1", "hpa_hugify_delay_ms", "18446744073709551615"},
    {"hpa_sec_nshards:-1", "hpa_sec_nshards", "18446744073709551615"},
    {"hpa_sec_max_alloc:0", "hpa_sec_max_alloc", "4096"},
    {"hpa_sec_batch_fill_extra:513", "hpa_sec_batch_fill_extra", "512"},
    // Fixed point: 14 fractional digits, truncated.
    {"hpa_dirty_mult:-1", "hpa_dirty_mult", "4294967295"},
    {"hpa_dirty_mult:0", "hpa_dirty_mult", "0"},
    {"hpa_dirty_mult:1", "hpa_dirty_mult", "65536"},
    {"hpa_dirty_mult:00.5", "hpa_dirty_mult", "32768"},
    {"hpa_dirty_mult:.5", "hpa_dirty_mult", "32768"},
    {"hpa_dirty_mult:0.3333333333333333333333333", "hpa_dirty_mult", "21845"},
    {"hpa_dirty_mult:65535.99999", "hpa_dirty_mult", "4294967295"},
    {"hpa_dirty_mult:065535", "hpa_dirty_mult", "4294901760"},
    {"hpa_dirty_mult:000000000000000000001", "hpa_dirty_mult", "65536"},
    {"hpa_dirty_mult:0.0000152587890625", "hpa_dirty_mult", "0"},
    {"hpa_dirty_mult:0.000015258789063", "hpa_dirty_mult", "0"},
    {"hpa_dirty_mult:0.00001525878907", "hpa_dirty_mult", "1"},
    {"hpa_dirty_mult:0.99999999999999999999999999999999", "hpa_dirty_mult", "65535"},
    {"hpa_dirty_mult:1.0000000000000000000000000000000000000000001", "hpa_dirty_mult", "65536"},
    {"narenas_ratio:0", "narenas_ratio", "0"},
    // Choices, including 5.3.0's prefix matching of keys and values.
    {"d:primary", "dss", "primary"},
    {"dss:prim", "dss", "primary"},
    {"dss:", "dss", "disabled"},
    {"m:auto", "metadata_thp", "auto"},
    {":auto", "metadata_thp", "auto"},
    {"metadata_thp:a", "metadata_thp", "auto"},
    {"percpu:percpu", "percpu_arena", "percpu"},
    {"p:phy", "percpu_arena", "phycpu"},
    {"percpu_arena:", "percpu_arena", "percpu"},
    {"percpu_arena:d", "percpu_arena", "disabled"},
    {"thp:al", "thp", "always"},
    {"thp:n", "thp", "never"},
    {"thp:never,thp:", "thp", "default"},
    {"junk:true", "junk", "true"},
    {"junk:free", "junk", "free"},
    {"zero_realloc:abort", "zero_realloc", "abort"},
    // Letters accumulate and ignore unknown ones.
    {"stats_print_opts:", "stats_print_opts", ""},
    {"stats_print_opts:zzJgJ", "stats_print_opts", "Jg"},
    {"stats_print_opts:gm,stats_print_opts:Jg", "stats_print_opts", "gmJ"},
    {"stats_print_opts:abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", "stats_print_opts",
     "abdeghlmxJ"},
    {"stats_interval_opts:x", "stats_interval_opts", "x"},
    // Not errors: silently selects metadata_thp:disabled (empty key and value).
    {":", "metadata_thp", "disabled"},
};

TEST_F(ConfTest, AcceptedValuesStoreWhatJemallocStores) {
  for (const Accepted& a : kAccepted) {
    EXPECT_EQ(parse(a.conf), "") << a.conf;
    EXPECT_EQ(value_of(a.key), a.expect) << a.conf;
  }
}

// Debian: narenas_ratio:1x is reported and yet applied (opt.narenas becomes 1 x 2 CPUs).
TEST_F(ConfTest, NarenasRatioKeepsANumberFollowedByGarbage) {
  EXPECT_EQ(parse("narenas_ratio:1x"), "<jemalloc>: Invalid conf value: narenas_ratio:1x\n");
  EXPECT_EQ(g_opt.narenas_ratio, 1u << 16);
  EXPECT_EQ(parse("narenas_ratio:.5.5"), "<jemalloc>: Invalid conf value: narenas_ratio:.5.5\n");
  EXPECT_EQ(g_opt.narenas_ratio, 1u << 15);
  EXPECT_EQ(parse("hpa_dirty_mult:1x"), "<jemalloc>: Invalid conf value: hpa_dirty_mult:1x\n");
  EXPECT_EQ(g_opt.hpa_dirty_mult, 1u << 14);  // unchanged: the other fxp options are not
}

// Ours: preset:jemalloc-5.3.0 sets the ten keys of ours to 5.3.0's behaviour, exactly as the
// typed presets say; preset:ours sets them back; a key after the preset overrides it.
TEST_F(ConfTest, PresetSetsEveryOptionOfOursAtOnce) {
  EXPECT_EQ(parse("preset:jemalloc-5.3.0"), "");
  const je::Placement pl = je::Placement::jemalloc530();
  const je::ReturnPolicy rp = je::ReturnPolicy::jemalloc530();
  EXPECT_EQ(g_opt.bounded_coalesce, pl.bounded_coalesce);
  EXPECT_EQ(g_opt.extent_best_fit, pl.best_fit);
  EXPECT_EQ(g_opt.reuse_before_grow, pl.reuse_before_grow);
  EXPECT_EQ(g_opt.borrow_dirty, pl.borrow_dirty);
  EXPECT_EQ(g_opt.extent_cache_bytes, pl.extent_cache_bytes);
  EXPECT_EQ(g_opt.decay_hold_peak, rp.hold_peak);
  EXPECT_EQ(g_opt.oversize_hold, rp.oversize_hold);
  EXPECT_EQ(g_opt.idle_arena_decay, rp.idle_arena_decay);
  EXPECT_EQ(g_opt.purge_on_grow, rp.purge_on_grow);
  EXPECT_EQ(g_opt.idle_return, rp.idle_return);
  EXPECT_EQ(g_opt.tcache_grow_bytes, 0u);
  // The nine keys the differential tests used before the preset, and oversize_hold, say the same.
  const je::Options by_preset = g_opt;
  parse(
      "bounded_coalesce:false,reuse_before_grow:false,extent_best_fit:false,purge_on_grow:false,"
      "borrow_dirty:false,decay_hold_peak:false,idle_arena_decay:false,extent_cache_bytes:0,"
      "tcache_grow_bytes:0,oversize_hold:false,idle_return:false");
  EXPECT_EQ(by_preset.bounded_coalesce, g_opt.bounded_coalesce);
  EXPECT_EQ(by_preset.extent_best_fit, g_opt.extent_best_fit);
  EXPECT_EQ(by_preset.reuse_before_grow, g_opt.reuse_before_grow);
  EXPECT_EQ(by_preset.borrow_dirty, g_opt.borrow_dirty);
  EXPECT_EQ(by_preset.extent_cache_bytes, g_opt.extent_cache_bytes);
  EXPECT_EQ(by_preset.decay_hold_peak, g_opt.decay_hold_peak);
  EXPECT_EQ(by_preset.oversize_hold, g_opt.oversize_hold);
  EXPECT_EQ(by_preset.idle_arena_decay, g_opt.idle_arena_decay);
  EXPECT_EQ(by_preset.purge_on_grow, g_opt.purge_on_grow);
  EXPECT_EQ(by_preset.tcache_grow_bytes, g_opt.tcache_grow_bytes);
  EXPECT_EQ(by_preset.idle_return, g_opt.idle_return);
  // Back to ours: the option table's defaults.
  EXPECT_EQ(parse("preset:jemalloc-5.3.0,preset:ours"), "");
  const je::Options defaults{};
  EXPECT_EQ(g_opt.bounded_coalesce, defaults.bounded_coalesce);
  EXPECT_EQ(g_opt.extent_cache_bytes, defaults.extent_cache_bytes);
  EXPECT_EQ(g_opt.tcache_grow_bytes, defaults.tcache_grow_bytes);
  EXPECT_EQ(g_opt.idle_return, defaults.idle_return);
  EXPECT_EQ(g_opt.decay_hold_peak, defaults.decay_hold_peak);
  EXPECT_EQ(g_opt.oversize_hold, defaults.oversize_hold);
  EXPECT_EQ(g_opt.purge_on_grow, defaults.purge_on_grow);
  // Later keys win.
  EXPECT_EQ(parse("preset:jemalloc-5.3.0,bounded_coalesce:true"), "");
  EXPECT_TRUE(g_opt.bounded_coalesce);
  EXPECT_FALSE(g_opt.reuse_before_grow);
}

TEST_F(ConfTest, TypedCompanionsFollowTheStrings) {
  parse("dss:disabled,percpu_arena:phycpu,thp:always,metadata_thp:always,zero_realloc:abort");
  EXPECT_EQ(g_opt.dss_prec, je::DssPrec::kDisabled);
  EXPECT_EQ(g_opt.percpu_arena_mode, je::PercpuArenaMode::kPhycpu);
  EXPECT_EQ(g_opt.thp_mode, je::ThpOpt::kAlways);
  EXPECT_EQ(g_opt.metadata_thp_mode, je::MetadataThpMode::kAlways);
  EXPECT_EQ(g_opt.zero_realloc_action, je::ZeroReallocAction::kAbort);
  const struct {
    const char* v;
    bool alloc;
    bool free;
  } junk[] = {
      {"true", true, true}, {"false", false, false}, {"alloc", true, false}, {"free", false, true}};
  for (const auto& j : junk) {
    const std::string s = std::string("junk:") + j.v;
    parse(s.c_str());
    EXPECT_STREQ(g_opt.junk, j.v);
    EXPECT_EQ(g_opt.junk_alloc, j.alloc) << s;
    EXPECT_EQ(g_opt.junk_free, j.free) << s;
  }
}

// Shard and slab geometry observed through arenas.bin.<i>.{nshards,slab_size} on Debian.
TEST_F(ConfTest, BinShardsAndSlabSizes) {
  EXPECT_EQ(parse("bin_shards:1-2:16|3-4:8"), "");
  EXPECT_EQ(g_opt.bin_shards[0], 8);
  for (unsigned i = 1; i < je::kOptNBins; i++) EXPECT_EQ(g_opt.bin_shards[i], 1);
  EXPECT_EQ(parse("bin_shards:0-100000:64"), "");
  for (unsigned i = 0; i < je::kOptNBins; i++) EXPECT_EQ(g_opt.bin_shards[i], 64);
  EXPECT_EQ(parse("bin_shards:20000-30000:5|16-1:4"), "");
  for (unsigned i = 0; i < je::kOptNBins; i++) EXPECT_EQ(g_opt.bin_shards[i], 1);
  EXPECT_EQ(parse("bin_shards:1-16:3|"), "");
  EXPECT_EQ(g_opt.bin_shards[1], 3);
  // A bad segment stops the value, after the earlier segments took effect.
  EXPECT_EQ(parse("bin_shards:1-16:3|20-30:0|40-50:2"),
            "<jemalloc>: Invalid settings for bin_shards: bin_shards:1-16:3|20-30:0|40-50:2\n");
  EXPECT_EQ(g_opt.bin_shards[0], 3);
  EXPECT_EQ(g_opt.bin_shards[3], 1);
  EXPECT_EQ(parse("bin_shards:1-16:3x"),
            "<jemalloc>: Invalid settings for bin_shards: bin_shards:1-16:3x\n");
  EXPECT_EQ(g_opt.bin_shards[1], 3);

  EXPECT_EQ(parse("slab_sizes:1-2:16|3-4:8"), "");
  for (unsigned i = 0; i < je::kOptNBins; i++) EXPECT_EQ(g_opt.slab_sizes[i], 0);
  EXPECT_EQ(parse("slab_sizes:1-16:3|20-30:0|40-50:2"), "");
  EXPECT_EQ(g_opt.slab_sizes[0], 1);  // 8-byte regions: at most 512 per slab = 1 page
  EXPECT_EQ(g_opt.slab_sizes[1], 2);
  EXPECT_EQ(g_opt.slab_sizes[3], 2);  // 48
  EXPECT_EQ(g_opt.slab_sizes[2], 0);
  EXPECT_EQ(parse("slab_sizes:0-20000:100000"), "");
  EXPECT_EQ(g_opt.slab_sizes[0], 1);
  EXPECT_EQ(g_opt.slab_sizes[9], 20);
  EXPECT_EQ(g_opt.slab_sizes[35], 1792);
  EXPECT_EQ(parse("slab_sizes:0-20000:-1"), "");
  EXPECT_EQ(g_opt.slab_sizes[35], 1792);
  EXPECT_EQ(parse("slab_sizes:0-20000:4294967297"), "");  // (int) 1 -> the minimum
  EXPECT_EQ(g_opt.slab_sizes[28], 1);
  EXPECT_EQ(g_opt.slab_sizes[29], 2);
  EXPECT_EQ(g_opt.slab_sizes[35], 4);
  EXPECT_EQ(parse("slab_sizes:0-20000:100000,slab_sizes:default"), "");
  for (unsigned i = 0; i < je::kOptNBins; i++) EXPECT_EQ(g_opt.slab_sizes[i], 0);
}

// jemalloc 5.3.1's keys: its types, defaults and bounds (doc/compat.md#jemalloc-531-api).
TEST_F(ConfTest, Jemalloc531Keys) {
  EXPECT_EQ(g_opt.process_madvise_max_batch, 0u);
  EXPECT_EQ(g_opt.calloc_madvise_threshold, size_t{8} << 20);
  EXPECT_EQ(parse("process_madvise_max_batch:64"), "");
  EXPECT_EQ(g_opt.process_madvise_max_batch, 64u);
  EXPECT_EQ(parse("process_madvise_max_batch:100000"), "");  // clipped to 128
  EXPECT_EQ(g_opt.process_madvise_max_batch, 128u);
  EXPECT_EQ(parse("calloc_madvise_threshold:0"), "");
  EXPECT_EQ(g_opt.calloc_madvise_threshold, 0u);
  EXPECT_EQ(parse("calloc_madvise_threshold:9223372036854775808"),
            "<jemalloc>: Out-of-range conf value: "
            "calloc_madvise_threshold:9223372036854775808\n");
  EXPECT_EQ(g_opt.calloc_madvise_threshold, size_t{8} << 20);  // parse() reset; kept
  // Not supported: refused as 5.3.0 refuses it (our capacities cannot follow it).
  EXPECT_EQ(parse("tcache_ncached_max:1-1024:100|2048-8192:0"),
            "<jemalloc>: Invalid conf pair: tcache_ncached_max:1-1024:100|2048-8192:0\n");
  if (je::config::kProf) {
    EXPECT_EQ(g_opt.prof_bt_max, 128u);
    EXPECT_EQ(parse("prof_bt_max:0"), "");  // clipped to 1
    EXPECT_EQ(g_opt.prof_bt_max, 1u);
    EXPECT_EQ(parse("prof_bt_max:300"), "");
    EXPECT_EQ(g_opt.prof_bt_max, 300u);
  }
}

// ---- Malformed strings
// -----------------------------------------------------------------------------

TEST_F(ConfTest, MalformedStrings) {
  const struct {
    const char* conf;
    const char* out;
    unsigned narenas;
  } cases[] = {
      {"", "", 0},
      {",", "<jemalloc>: Malformed conf string\n", 0},
      {"abc", "<jemalloc>: Conf string ends with key\n", 0},
      {"narenas", "<jemalloc>: Conf string ends with key\n", 0},
      {"abc,narenas:3", "<jemalloc>: Malformed conf string\n", 0},
      {"a b:1", "<jemalloc>: Malformed conf string\n", 0},
      {"a-b:3,narenas:2", "<jemalloc>: Malformed conf string\n", 0},
      {"narenas:3,,narenas:4", "<jemalloc>: Malformed conf string\n", 3},
      {"narenas:3,x", "<jemalloc>: Conf string ends with key\n", 3},
      {"narenas:1,", "<jemalloc>: Conf string ends with comma\n", 1},
      {"narenas:1,,", "<jemalloc>: Malformed conf string\n", 1},
      {"narenas:", "<jemalloc>: Invalid conf value: narenas:\n", 0},
      {"narenas:2,:,narenas:3", "", 3},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(parse(c.conf), c.out) << "[" << c.conf << "]";
    EXPECT_EQ(g_opt.narenas, c.narenas) << "[" << c.conf << "]";
    EXPECT_EQ(je::conf_parse_string(c.conf), c.out[0] == '\0') << "[" << c.conf << "]";
  }
}

TEST_F(ConfTest, LongAndOddStringsAreSafe) {
  // A 10 KiB value: the message is cut at 4095 bytes like 5.3.0's 4 KiB printf buffer.
  std::string big = "x" + std::string(5000, 'y') + ":" + std::string(10240, 'v');
  std::string out = parse(big.c_str());
  EXPECT_EQ(out.size(), 4095u);
  EXPECT_EQ(out.rfind("<jemalloc>: Invalid conf pair: xyyy", 0), 0u);
  big = "stats_print_opts:" + std::string(10240, 'J') + ",narenas:5";
  EXPECT_EQ(parse(big.c_str()), "");
  EXPECT_STREQ(g_opt.stats_print_opts, "J");
  EXPECT_EQ(g_opt.narenas, 5u);
  big = "bin_shards:" + std::string(10000, '1');
  EXPECT_EQ(parse(big.c_str()).substr(0, 45), "<jemalloc>: Invalid settings for bin_shards: ");
  std::string many;
  for (int i = 0; i < 2000; i++) many += "narenas:" + std::to_string(i + 1) + ",";
  out = parse(many.c_str());
  EXPECT_EQ(out, "<jemalloc>: Conf string ends with comma\n");
  EXPECT_EQ(g_opt.narenas, 2000u);
  // Every byte value in keys and values; the parser must simply stop or reject.
  std::string all;
  for (int c = 1; c < 256; c++) all += static_cast<char>(c);
  parse(all.c_str());
  parse(("narenas:" + all).c_str());
  parse(("dss:" + all).c_str());
  parse(("bin_shards:1-2:" + all).c_str());
  parse(("hpa_dirty_mult:" + all).c_str());
  parse(("stats_print_opts:" + all).c_str());
  EXPECT_STREQ(g_opt.stats_print_opts, "");  // the value stops at ',' (0x2c), before any letter
  for (const char* s : {":", "::", ":::", ",,,", ":,:", "narenas::", "_:_", "0:0"}) parse(s);
  SUCCEED();
}

// ---- Sources, confirm_conf, abort_conf
// --------------------------------------------------------------

TEST_F(ConfTest, LaterSourcesOverrideEarlierOnes) {
  const char* src[je::kConfNSources] = {"narenas:1,retain:false", "narenas:2,muzzy_decay_ms:3",
                                        "narenas:3,dirty_decay_ms:4", "narenas:4,tcache:false",
                                        "narenas:5,stats_print_opts:J"};
  je::conf_process_sources(src);
  EXPECT_EQ(g_out, "");
  EXPECT_EQ(g_opt.narenas, 5u);
  EXPECT_FALSE(g_opt.retain);
  EXPECT_EQ(g_opt.muzzy_decay_ms, 3);
  EXPECT_EQ(g_opt.dirty_decay_ms, 4);
  EXPECT_FALSE(g_opt.tcache);
  EXPECT_STREQ(g_opt.stats_print_opts, "J");
  for (unsigned drop = 0; drop < je::kConfNSources; drop++) {
    je::opt_reset();
    const char* some[je::kConfNSources] = {src[0], src[1], src[2], src[3], src[4]};
    some[drop] = nullptr;
    je::conf_process_sources(some);
    EXPECT_EQ(g_opt.narenas, drop == 4 ? 4u : 5u);
  }
}

TEST_F(ConfTest, ConfInitReadsTheEnvironmentBetweenTheGlobals) {
  char link[64];
  if (readlink("/etc/malloc.conf", link, sizeof(link)) >= 0)
    GTEST_SKIP() << "/etc/malloc.conf exists";
  setenv("MALLOC_CONF", "narenas:4,dirty_decay_ms:7", 1);
  je::conf_init(je::ConfSources{"narenas:1,retain:false", "narenas:2,muzzy_decay_ms:3", nullptr});
  EXPECT_EQ(g_opt.narenas, 4u);
  EXPECT_EQ(g_opt.dirty_decay_ms, 7);
  EXPECT_EQ(g_opt.muzzy_decay_ms, 3);
  EXPECT_FALSE(g_opt.retain);
  je::opt_reset();
  je::conf_init(je::ConfSources{"", nullptr, "narenas:6"});
  EXPECT_EQ(g_opt.narenas, 6u);
  unsetenv("MALLOC_CONF");
  EXPECT_EQ(g_out, "");
}

// Byte-for-byte Debian output: MALLOC_CONF='confirm_conf:true,narenas:3,bogus:1,dirty_decay_ms:x'
// with no malloc_conf in the program.
TEST_F(ConfTest, ConfirmConfOutputMatchesDebian) {
  const char* src[je::kConfNSources] = {
      "", nullptr, "", "confirm_conf:true,narenas:3,bogus:1,dirty_decay_ms:x", nullptr};
  je::conf_process_sources(src);
  EXPECT_EQ(g_out,
            "<jemalloc>: malloc_conf #1 (string specified via --with-malloc-conf): \"\"\n"
            "<jemalloc>: malloc_conf #2 (string pointed to by the global variable malloc_conf): "
            "\"\"\n"
            "<jemalloc>: malloc_conf #3 (\"name\" of the file referenced by the symbolic link "
            "named /etc/malloc.conf): \"\"\n"
            "<jemalloc>: malloc_conf #4 (value of the environment variable MALLOC_CONF): "
            "\"confirm_conf:true,narenas:3,bogus:1,dirty_decay_ms:x\"\n"
            "<jemalloc>: -- Set conf value: confirm_conf:true\n"
            "<jemalloc>: -- Set conf value: narenas:3\n"
            "<jemalloc>: Invalid conf pair: bogus:1\n"
            "<jemalloc>: Invalid conf value: dirty_decay_ms:x\n"
            "<jemalloc>: malloc_conf #5 (string pointed to by the global variable "
            "malloc_conf_2_conf_harder): \"\"\n");
  EXPECT_EQ(g_opt.narenas, 3u);
}

// Debian: malloc_conf="confirm_conf:true,narenas:2,bogus:1,abort:true,abort:false" and
// MALLOC_CONF="confirm_conf:false" -- the first pass leaves confirm_conf false, the second turns
// it on inside source #2 and off inside #4.
TEST_F(ConfTest, ConfirmConfFollowsTheSecondPass) {
  const char* src[je::kConfNSources] = {
      "", "confirm_conf:true,narenas:2,bogus:1,abort:true,abort:false", "", "confirm_conf:false",
      nullptr};
  je::conf_process_sources(src);
  EXPECT_EQ(g_out,
            "<jemalloc>: -- Set conf value: confirm_conf:true\n"
            "<jemalloc>: -- Set conf value: narenas:2\n"
            "<jemalloc>: Invalid conf pair: bogus:1\n"
            "<jemalloc>: -- Set conf value: abort:true\n"
            "<jemalloc>: -- Set conf value: abort:false\n"
            "<jemalloc>: malloc_conf #3 (\"name\" of the file referenced by the symbolic link "
            "named /etc/malloc.conf): \"\"\n"
            "<jemalloc>: malloc_conf #4 (value of the environment variable MALLOC_CONF): "
            "\"confirm_conf:false\"\n");
}

// Debian: MALLOC_CONF='confirm_conf:true,narenas:3,' -- syntax errors print in both passes, and
// the look-ahead message comes before the pair it follows.
TEST_F(ConfTest, SyntaxMessagesPrintInBothPasses) {
  const char* src[je::kConfNSources] = {"", nullptr, "", "confirm_conf:true,narenas:3,", nullptr};
  je::conf_process_sources(src);
  const std::vector<std::string> got = lines(g_out);
  const std::vector<std::string> want = {
      "<jemalloc>: Conf string ends with comma",
      "<jemalloc>: malloc_conf #1 (string specified via --with-malloc-conf): \"\"",
      "<jemalloc>: malloc_conf #2 (string pointed to by the global variable malloc_conf): \"\"",
      "<jemalloc>: malloc_conf #3 (\"name\" of the file referenced by the symbolic link named "
      "/etc/malloc.conf): \"\"",
      "<jemalloc>: malloc_conf #4 (value of the environment variable MALLOC_CONF): "
      "\"confirm_conf:true,narenas:3,\"",
      "<jemalloc>: -- Set conf value: confirm_conf:true",
      "<jemalloc>: Conf string ends with comma",
      "<jemalloc>: -- Set conf value: narenas:3",
      "<jemalloc>: malloc_conf #5 (string pointed to by the global variable "
      "malloc_conf_2_conf_harder): \"\"",
  };
  EXPECT_EQ(got, want);
  g_out.clear();
  je::opt_reset();
  const char* bad[je::kConfNSources] = {nullptr, nullptr, nullptr, "confirm_conf:yes", nullptr};
  je::conf_process_sources(bad);
  EXPECT_EQ(g_out, "<jemalloc>: Invalid conf value: confirm_conf:yes\n");
}

TEST_F(ConfTest, ConfirmConfEchoesAcceptedPairsOfParseString) {
  g_opt.confirm_conf = true;
  EXPECT_FALSE(je::conf_parse_string("narenas:2,bogus:1"));
  EXPECT_EQ(g_out,
            "<jemalloc>: -- Set conf value: narenas:2\n<jemalloc>: Invalid conf pair: bogus:1\n");
}

void run_sources(const char* a, const char* b, const char* c, const char* d, const char* e) {
  je::io_set_writer(nullptr);  // the death-test child reports on stderr
  const char* src[je::kConfNSources] = {a, b, c, d, e};
  je::conf_process_sources(src);
  fprintf(stderr, "survived\n");
  exit(0);
}

using ConfDeathTest = ConfTest;

TEST_F(ConfDeathTest, AbortConfAbortsAfterTheSource) {
  EXPECT_DEATH(run_sources("", "abort_conf:true,bogus:1", "", "confirm_conf:true", nullptr),
               "Invalid conf pair: bogus:1\n<jemalloc>: Abort \\(abort_conf:true\\) on invalid "
               "conf value \\(see above\\).\n$");
  // The abort comes right after source #2: #3's header never prints.
  EXPECT_DEATH(run_sources("", "abort_conf:true,bogus:1,confirm_conf:true", "", "", nullptr),
               "bogus:1\n<jemalloc>: -- Set conf value: confirm_conf:true\n<jemalloc>: Abort");
  // An error before abort_conf is remembered: it aborts after the source that sets abort_conf.
  EXPECT_DEATH(run_sources("bogus:1", "", "", "narenas:4,abort_conf:true", "narenas:5"),
               "Invalid conf pair: bogus:1\n<jemalloc>: Abort");
  // Syntax errors count too.
  EXPECT_DEATH(run_sources(nullptr, nullptr, nullptr, "abort_conf:true,narenas:3,", nullptr),
               "Conf string ends with comma\n<jemalloc>: Conf string ends with comma\n"
               "<jemalloc>: Abort");
  // experimental_* keys and a clean configuration never abort.
  EXPECT_EXIT(run_sources("", "abort_conf:true,experimental_x:2", "", "", nullptr),
              ::testing::ExitedWithCode(0), "Invalid conf pair: experimental_x:2\nsurvived");
  EXPECT_EXIT(run_sources("abort_conf:true", "narenas:2", "", "", "tcache_max:-1"),
              ::testing::ExitedWithCode(0), "^survived\n$");
}

}  // namespace
