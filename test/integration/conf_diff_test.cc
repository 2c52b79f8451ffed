// conf_diff_test: a deterministic, differential test of MALLOC_CONF handling against jemalloc
// 5.3.0.
//
// A fixed-seed generator builds ~300 configuration strings: hand-picked edge cases, then pairs
// and lists of the real keys (5.3.0's opt.* list in test/integration/data plus the keys without
// an opt.* name) with valid, boundary, out-of-range and malformed values, garbage keys, syntax
// errors (missing ':', trailing or doubled ',', empty key or value, stray characters), prefixes
// of choice values and keys, bin_shards / slab_sizes lists, stats letters, huge numbers, signs,
// radix prefixes, mutated lists. For each string the program re-executes itself (`PROGRAM
// --conf-child`, differential.h's spawn()) on each library with MALLOC_CONF set to it; the child
// initializes the allocator and prints every opt.* of the golden list, typed as 5.3.0 reports it
// (or ENOENT), opt.bounded_coalesce and the arenas.* values options shape. The parent captures the
// child's stderr (every message written while reading options and booting) and compares both
// libraries' messages and values, string by string. Excused are only the differences
// doc/compat.md documents (kDocumented, by anchor) and our known bugs (kKnownBugs); anything else
// fails and prints both outputs for that string (the first 20 strings).
//
// Never generated (the filter safe() rejects such strings, so no child aborts or prints reports):
// abort, abort_conf, confirm_conf, stats_print, background_thread or prof set to true, and any
// stats_interval but -1 or an invalid value (0 already prints a report on every allocation in
// 5.3.0); hpa:true together with hpa_sec_nshards (5.3.0 would size its caches from any value).
// Their invalid values ("abort_conf:maybe") are kept: they only warn.
//
// Under the reference, or without it, only the generator check runs; under run.sh's non-default
// MALLOC_CONF variants the program skips (77): the children choose their own configuration.
#include <algorithm>

#include "differential.h"

#ifndef JT_DATA_DIR
#define JT_DATA_DIR "test/integration/data"
#endif

namespace {

using jt::diff::Excl;
using jt::diff::Rng;

constexpr uint64_t kSeed = 0x636f6e66646966ull;
constexpr int kStrings = 300;

// CONF_DIFF_SEED / CONF_DIFF_STRINGS override the seed and the count (to explore; the test as
// registered uses the defaults).
uint64_t env_or(const char* name, uint64_t dflt) {
  const char* e = std::getenv(name);
  return e && *e ? std::strtoull(e, nullptr, 0) : dflt;
}
uint64_t seed() { return env_or("CONF_DIFF_SEED", kSeed); }
int nstrings() { return (int)std::clamp<uint64_t>(env_or("CONF_DIFF_STRINGS", kStrings), 1, 1e5); }
constexpr size_t kMaxConf = 12000;  // bytes of one generated string, at most

// ===========================================================================
// Keys and their values.

enum Kind : uint8_t { kBool, kNum, kChoice, kLetters, kRanges, kFxp, kText, kInterval };

struct Key {
  char name[48];
  Kind kind;
  const char* const* choices;  // kChoice: the names, in 5.3.0's order
  int nchoices;
};
Key g_keys[96];
int g_nkeys;

constexpr const char* kDss[] = {"disabled", "primary", "secondary"};
constexpr const char* kMetaThp[] = {"disabled", "auto", "always"};
constexpr const char* kPercpu[] = {"disabled", "percpu", "phycpu"};
constexpr const char *kThp[] = {"default", "always", "never"}, *kProfRes[] = {"default", "high"};
constexpr const char* kJunk[] = {"true", "false", "alloc", "free"};
constexpr const char* kZeroRealloc[] = {"alloc", "free", "abort"};
constexpr struct {
  const char* key;
  const char* const* names;
  int n;
} kChoices[] = {{"dss", kDss, 3},
                {"metadata_thp", kMetaThp, 3},
                {"percpu_arena", kPercpu, 3},
                {"thp", kThp, 3},
                {"junk", kJunk, 4},
                {"zero_realloc", kZeroRealloc, 3},
                {"prof_time_resolution", kProfRes, 2}};

// MALLOC_CONF keys without an opt.* name in 5.3.0 (doc/options.md).
constexpr struct {
  const char* key;
  Kind kind;
} kExtraKeys[] = {{"narenas_ratio", kFxp},     {"hpa_hugification_threshold_ratio", kFxp},
                  {"bin_shards", kRanges},     {"slab_sizes", kRanges},
                  {"lg_tcache_max", kNum},     {"san_guard_small", kNum},
                  {"san_guard_large", kNum},   {"log", kText},
                  {"bounded_coalesce", kBool}, {"idle_arena_decay", kBool},
                  {"decay_hold_peak", kBool},  {"prof_log", kBool},
                  {"prof_unbias", kBool}};

// Bounds of the numeric options (doc/options.md), for values just inside and outside them.
constexpr struct {
  const char* key;
  uint64_t lo, hi;
} kBounds[] = {{"narenas", 1, UINT32_MAX},
               {"mutex_max_spin", (uint64_t)-1, INT64_MAX},
               {"dirty_decay_ms", (uint64_t)-1, 18446744072000ull},
               {"muzzy_decay_ms", (uint64_t)-1, 18446744072000ull},
               {"lg_tcache_nslots_mul", (uint64_t)-16, 16},
               {"tcache_nslots_small_min", 1, 2048},
               {"tcache_nslots_small_max", 1, 2048},
               {"tcache_nslots_large", 1, 2048},
               {"tcache_gc_incr_bytes", 1024, UINT64_MAX},
               {"lg_tcache_flush_small_div", 1, 16},
               {"lg_tcache_flush_large_div", 1, 16},
               {"oversize_threshold", 16384, 8070450532247928832ull},
               {"lg_extent_max_active_fit", 0, 64},
               {"tcache_max", 0, 8388608},
               {"lg_tcache_max", 0, 23},
               {"max_background_threads", 1, 4096},
               {"hpa_slab_max_alloc", 4096, 2097152},
               {"hpa_hugification_threshold", 4096, 2097152},
               {"hpa_sec_max_alloc", 4096, 65536},
               {"hpa_sec_max_bytes", 4096, 262144},
               {"hpa_sec_bytes_after_flush", 4096, 131072},
               {"hpa_sec_batch_fill_extra", 0, 512},
               {"hpa_sec_nshards", 0, 4},
               {"lg_prof_sample", 0, 63},
               {"lg_prof_interval", (uint64_t)-1, 63},
               {"prof_recent_alloc_max", (uint64_t)-1, INT64_MAX}};

// Calls fn(name, type) for each entry of the golden list (opt.<key>, 5.3.0's type: bool, string,
// u32, "8 bytes" or -); false when the list cannot be read.
template <class F>
bool for_each_golden(F fn) {
  char path[512], line[256], name[64], type[32];
  std::snprintf(path, sizeof(path), "%s/opt-defaults-5.3.0.tsv", JT_DATA_DIR);
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return false;
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    if (line[0] != '#' && std::sscanf(line, "%63[^\t]\t%31[^\t]", name, type) == 2) fn(name, type);
  }
  std::fclose(f);
  return true;
}

// The keys: every opt.<key> of the golden list, kinds from its types, then kExtraKeys.
bool load_keys() {
  g_nkeys = 0;
  bool read = for_each_golden([](const char* opt, const char* type) {
    const char* name = opt + 4;
    if (g_nkeys == 80 || std::strncmp(opt, "opt.", 4) != 0) return;
    Key& k = g_keys[g_nkeys++];
    k = Key{};
    std::snprintf(k.name, sizeof(k.name), "%s", name);
    k.kind = !std::strcmp(type, "bool") ? kBool : !std::strcmp(type, "string") ? kText : kNum;
    for (const auto& c : kChoices) {
      if (std::strcmp(c.key, name) == 0) k.kind = kChoice, k.choices = c.names, k.nchoices = c.n;
    }
    if (std::strstr(name, "_opts") != nullptr) k.kind = kLetters;
    if (std::strcmp(name, "hpa_dirty_mult") == 0) k.kind = kFxp;
    if (std::strcmp(name, "stats_interval") == 0) k.kind = kInterval;
  });
  for (const auto& x : kExtraKeys) {
    g_keys[g_nkeys] = Key{{}, x.kind, nullptr, 0};
    std::snprintf(g_keys[g_nkeys++].name, sizeof(g_keys[0].name), "%s", x.key);
  }
  return read && g_nkeys > 70;
}

// A string under construction (cut at kMaxConf).
struct Str {
  char s[kMaxConf + 1];
  size_t n;
  void clear() { n = 0, s[0] = '\0'; }
  void add(const char* t, size_t len) {
    len = std::min(len, kMaxConf - n);
    std::memcpy(s + n, t, len);
    s[n += len] = '\0';
  }
  void add(const char* t) { add(t, std::strlen(t)); }
  void addc(char c) { add(&c, 1); }
  void addf(const char* fmt, ...) __attribute__((format(printf, 2, 3))) {
    char buf[128];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    add(buf);
  }
};

char odd_byte(Rng& r) {  // control and non-ASCII bytes
  static const char kOdd[] = "\t\n\r\x01\x7f\x80\xc3\xa9\xff";
  return kOdd[r.below(sizeof(kOdd) - 1)];
}

void digits(Rng& r, Str& o, size_t n) {
  while (n-- > 0) o.addc((char)('0' + r.below(10)));
}

void number_value(Rng& r, const Key* k, Str& o) {
  // clang-format off
  static const char* const kSpecial[] = {
      "", "0", "1", "-1", "+1", "-0", "+0", "0x", "0x10", "0X1f", "0xg", "010", "08", "0777",
      "-0x10", "18446744073709551615", "18446744073709551616", "99999999999999999999",
      "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
      "4294967295", "4294967296", "4294967297", " 7", "\t7", "7 ", "++1", "+-1", "--1", "- 1",
      "1e3", "1.5", "default", "-", "+", " ", "16383", "16384", "8388609", "2049", "4095",
      "2097153", "18446744072000", "18446744072001", "0x1ffffffffffffffff", "-18446744073709551615"
  };
  // clang-format on
  uint64_t b = 0;
  bool bounded = false;
  for (const auto& x : kBounds) {
    if (k && !std::strcmp(x.key, k->name)) b = r.chance(50) ? x.lo : x.hi, bounded = true;
  }
  const uint64_t x = r.next() >> r.below(64);
  switch (r.below(bounded ? 6 : 5)) {
    case 0: return o.add(r.pick(kSpecial));
    case 1: return o.addf("%s%llu", r.pick({"", "", "-", "+", " "}), (unsigned long long)x);
    case 2: return o.addf(r.chance(50) ? "0x%llx" : "0%llo", (unsigned long long)x);
    case 3: return digits(r, o, 19 + r.below(r.chance(5) ? 3000 : 30));
    case 4: return o.addf("%s%llu", r.pick({"", "", "+", "-"}), (unsigned long long)r.below(100));
    default: {  // around a bound
      uint64_t v = b + r.below(3) - 1;
      if (r.chance(25)) return o.addf("0x%llx", (unsigned long long)v);
      return o.addf((int64_t)v < 0 && r.chance(70) ? "%lld" : "%llu", (long long)v);
    }
  }
}

void fxp_value(Rng& r, Str& o) {
  // clang-format off
  static const char* const kSpecial[] = {
      "", ".", "0.", ".5", "1.5", "65535.99999", "65535", "65536", "-1", "-0", "+1", " 1", "1 ",
      "1x", "1.5.", "0.3333333333333333333333333333", "00000000000000000000001", "1e3", "0x1",
      "..5", "1..5", "-1.5", "4294967295", "0.00001525878907", "0.5", "2", "0.25", "1"
  };
  // clang-format on
  if (r.chance(40)) return o.add(r.pick(kSpecial));
  if (!r.chance(12)) o.addf("%llu", (unsigned long long)r.below(r.chance(25) ? 100000 : 10));
  if (r.chance(50)) o.addc('.'), digits(r, o, r.below(r.chance(10) ? 300 : 30));
}

void choice_value(Rng& r, const Key* k, Str& o) {
  static const char* const kOther[] = {"",        "true",       "default", "DISABLED", "Always",
                                       "percpux", "secondaryy", "never ",  "alloc",    "abort"};
  if (k == nullptr || k->nchoices == 0 || r.chance(20)) return o.add(r.pick(kOther));
  const char* name = k->choices[r.below(k->nchoices)];
  switch (r.below(4)) {
    case 0: return o.add(name, r.below(std::strlen(name) + 1));  // a prefix, maybe empty
    case 1: o.add(name); return o.addc(r.chance(50) ? 'x' : odd_byte(r));
    default: return o.add(name);
  }
}

void letters_value(Rng& r, Str& o) {
  static const char kAbc[] = "JgmdablxehJgmdablxehzZ!c \x80\xff";
  size_t n = r.chance(4) ? 3000 : r.below(20);
  while (n-- > 0) o.addc(kAbc[r.below(sizeof(kAbc) - 1)]);
}

void range_number(Rng& r, Str& o) {
  // clang-format off
  static const char* const kNums[] = {
      "0", "1", "8", "16", "17", "1024", "14336", "14337", "16384", "100000", "-1", "0x10", "010",
      "18446744073709551615", "9223372036854775808", "4294967296", "", " 8", "63", "64", "65",
      "255", "256", "1792", "1793", "2147483648", "99999999999999999999", "4096", "3", "2"
  };
  // clang-format on
  if (r.chance(20)) return o.addf("%llu", (unsigned long long)(r.next() >> r.below(64)));
  o.add(r.pick(kNums));
}

// bin_shards / slab_sizes: "lo-hi:n|..." with swapped, huge, zero and missing parts.
void ranges_value(Rng& r, Str& o) {
  if (r.chance(8)) return o.add(r.pick({"default", "Default", "default|1-2:3"}));
  for (size_t i = 0, n = 1 + r.below(4); i < n; i++) {
    switch (r.below(12)) {
      case 0: range_number(r, o), o.addc('-'), range_number(r, o); break;
      case 1: range_number(r, o), o.addc(':'), range_number(r, o); break;
      case 2: o.addc('-'), range_number(r, o), o.addc(':'), range_number(r, o); break;
      default: range_number(r, o), o.addc('-'), range_number(r, o), o.addc(':'), range_number(r, o);
    }
    if (i + 1 < n || r.chance(10)) o.add(r.chance(10) ? "||" : "|");
  }
}

// stats_interval: -1 or a value 5.3.0 rejects (any other prints reports); safe() allows no other.
constexpr const char* kIntervalOk[] = {"-1",     " -1",
                                       "-2",     "-100",
                                       "",       "x",
                                       "1x",     "-1x",
                                       "+",      "-",
                                       "0x",     "99999999999999999999",
                                       "1.5",    "-9223372036854775808",
                                       "default"};

// A value for key k (of a random kind when null), now and then with an odd byte or truncated.
void value_for(Rng& r, const Key* k, Str& o) {
  size_t from = o.n;
  switch (k ? k->kind : (Kind)r.below(7)) {
    case kBool:
      o.add(r.pick({"true", "false", "True", "", "1", "0", "tru", "truee", "false ", " true", "yes",
                    "FALSE", "maybe"}));
      break;
    case kNum: number_value(r, k, o); break;
    case kChoice: choice_value(r, k, o); break;
    case kLetters: letters_value(r, o); break;
    case kRanges: ranges_value(r, o); break;
    case kFxp: fxp_value(r, o); break;
    case kInterval: return o.add(r.pick(kIntervalOk));
    default:  // text: a choice name, or printable bytes
      if (r.chance(30)) {
        choice_value(r, nullptr, o);
      } else {
        for (size_t n = r.below(r.chance(10) ? 5000 : 24); n > 0; n--) o.addc(33 + r.below(94));
      }
  }
  size_t len = o.n - from;
  if (r.chance(6) && len > 0) o.s[o.n = from + r.below(len)] = '\0';
  if (r.chance(6)) o.addc(odd_byte(r));
}

void garbage_key(Rng& r, Str& o) {
  static const char kKeyish[] = "abcdefghijklmnopqrstuvwxyz_ABZ0129";
  for (size_t n = r.below(20); n > 0; n--) o.addc(kKeyish[r.below(sizeof(kKeyish) - 1)]);
}

// A key: mostly a real one (*k set), else garbage, a prefix or extension of one, or a tricky one.
void key_for(Rng& r, const Key** k, Str& o) {
  *k = nullptr;
  switch (r.below(12)) {
    case 0: return garbage_key(r, o);
    case 1: {
      const char* name = g_keys[r.below(g_nkeys)].name;
      if (r.chance(50)) return o.add(name, r.below(std::strlen(name)));
      o.add(name);
      return o.add(r.pick({"_", "x", "0", "s"}));
    }
    case 2:
      return o.add(r.pick({"experimental_", "experimental_x", "Narenas", "NARENAS", "d", "p", "m",
                           "", "percpu", "meta", "ds", "thp_", "prof", "opt.narenas"}));
    default: *k = &g_keys[r.below(g_nkeys)]; return o.add((*k)->name);
  }
}

void pair(Rng& r, Str& o) {
  const Key* k;
  key_for(r, &k, o), o.addc(':'), value_for(r, k, o);
}

// 1..max pairs; odd: now and then a separator that is a syntax error.
void pair_list(Rng& r, Str& o, size_t max, bool odd) {
  for (size_t i = 0, n = 1 + r.below(max); i < n; i++) {
    pair(r, o);
    if (i + 1 < n) o.add(odd && r.chance(15) ? r.pick({":", ",,", "", ";", " ,", ",\n"}) : ",");
  }
}

// Replaces, inserts or deletes bytes, or cuts the string short.
void mutate(Rng& r, Str& o) {
  for (size_t m = 1 + r.below(3); m > 0 && o.n > 0; m--) {
    size_t at = r.below(o.n);
    switch (r.below(4)) {
      case 0: o.s[o.n = at] = '\0'; break;
      case 1: o.s[at] = r.chance(50) ? odd_byte(r) : r.pick({':', ',', ' ', '=', '-', 'x'}); break;
      case 2:
        std::memmove(o.s + at + 1, o.s + at, o.n - at + 1);
        o.s[at] = r.pick({':', ',', odd_byte(r)});
        o.n += o.n < kMaxConf;
        o.s[o.n] = '\0';
        break;
      default: std::memmove(o.s + at, o.s + at + 1, o.n - at), o.n--; break;
    }
  }
}

// Syntax errors around valid pairs.
void syntax_case(Rng& r, Str& o) {
  Str tmp;
  tmp.clear();
  pair_list(r, tmp, 3, false);
  const char* colon = std::strchr(tmp.s, ':');
  size_t at = colon ? (size_t)(colon - tmp.s) : 0;
  switch (r.below(9)) {
    case 0: o.add(tmp.s, at), o.add(tmp.s + at + (colon != nullptr)); break;      // missing ':'
    case 1: o.add(tmp.s), o.add(r.pick({",", ",,", ", "})); break;                // trailing ','
    case 2: o.add(r.pick({",", ",,", ":", ":,"})), o.add(tmp.s); break;           // leading
    case 3: o.add(":"), o.add(tmp.s + at + (colon != nullptr)); break;            // empty key
    case 4: o.add(tmp.s, at + 1), o.add(r.pick({"", ",", ",narenas:2"})); break;  // empty value
    case 5:  // a stray character at the colon, or another separator
      o.add(tmp.s, at), o.add(r.pick({" :", "=", ": ", "-:", ".:", "::"}));
      o.add(colon ? colon + 1 : "");
      break;
    case 6:  // inside the key
      o.add(tmp.s, at / 2), o.addc(r.pick({' ', '-', '.', '\xc3', '\t', '/'}));
      o.add(tmp.s + at / 2);
      break;
    case 7: o.add(tmp.s, at); break;  // ends with a key
    default: o.add(tmp.s), o.add(r.pick({";tcache:false", " ,narenas:2", ",\n", ",narenas"}));
  }
}

// Prefixes of choice values, and the keys 5.3.0 matches by prefix.
void prefix_case(Rng& r, Str& o) {
  // clang-format off
  static const char* const kKeys[] = {
      "", "d", "ds", "dss", "dssx", "m", "meta", "metadata_thp", "metadata_thpx", "p", "per",
      "percpu", "percpu_arena", "percpu_arenas", "t", "th", "thp", "j", "junk", "zero_r",
      "zero_realloc", "prof_time_res", "prof_time_resolution"
  };
  // clang-format on
  for (size_t i = 0, n = 1 + r.below(3); i < n; i++) {
    const char* key = r.pick(kKeys);
    const Key* k = nullptr;
    for (int j = 0; j < g_nkeys; j++) {
      if (g_keys[j].kind == kChoice && !std::strncmp(g_keys[j].name, key, std::strlen(key))) {
        k = &g_keys[j];
      }
    }
    if (i > 0) o.addc(',');
    o.add(key), o.addc(':');
    choice_value(r, k ? k : &g_keys[r.below(g_nkeys)], o);
  }
}

// A pair of the given kind: a random key of it.
void kind_pair(Rng& r, Str& o, Kind want) {
  for (;;) {
    const Key& k = g_keys[r.below(g_nkeys)];
    if (k.kind != want) continue;
    o.add(k.name), o.addc(':');
    return value_for(r, &k, o);
  }
}

// String number i. The first ones are hand-picked.
// clang-format off
constexpr const char* kFixed[] = {
    "", ":", ",", ",,", "narenas", "narenas:", ":3", "narenas:3,", ",narenas:3",
    "narenas:3,,tcache:false", "narenas=3", "narenas :3", "d:p", "p:ph", "m:al", ":a", "dss:",
    "thp:", "junk:", "junk:a", "zero_realloc:fre", "tcache_max:-1", "narenas:-1",
    "narenas:4294967297", "narenas:0", "lg_tcache_max:30", "narenas_ratio:1x", "narenas_ratio:0.5",
    "bin_shards:1-160:16|0-8:64", "bin_shards:1-160:65", "slab_sizes:default",
    "slab_sizes:1-4096:17|100-200:1|128-128:2", "stats_print_opts:Jgmz,stats_print_opts:gJa",
    "oversize_threshold:16383", "experimental_foo:1", "abort_conf:maybe", "abort:yes",
    "stats_print:1", "confirm_conf:tru", "background_thread:TRUE", "stats_interval:-2",
    "prof:maybe", "prof_active:false", "lg_prof_sample:99", "bounded_coalesce:false",
    "bounded_coalesce:maybe", "percpu_arena:percpu", "percpu_arena:phycpu,narenas:1", "hpa:true",
    "dss:primary", "retain:false", "max_background_threads:0", "dirty_decay_ms:18446744072001",
    "mutex_max_spin:-2", "tcache_nslots_small_min:0", "lg_tcache_nslots_mul:-17",
    "narenas_ratio:65535", "narenas_ratio:32769", "narenas_ratio:32768", "utrace:true",
    "xmalloc:true", "log:arena", "cache_oblivious:false", "hpa_dirty_mult:-1",
    "hpa_hugification_threshold_ratio:0.5", "tcache:false,tcache_max:0", "zero:true,junk:true",
    "metadata_thp:always,thp:never", "oversize_threshold:0", "lg_extent_max_active_fit:65"
};
// clang-format on
constexpr int kNFixed = sizeof(kFixed) / sizeof(kFixed[0]);
constexpr const char* kFamilies[] = {"fixed",  "pair",    "list",    "syntax",  "prefix",
                                     "ranges", "numbers", "letters", "mutated", "garbage"};

int generate(Rng& r, int i, Str& o) {
  o.clear();
  if (i < kNFixed) return o.add(kFixed[i]), 0;
  int fam = 1 + (i - kNFixed) % 9;
  switch (fam) {
    case 1: pair(r, o); break;
    case 2: pair_list(r, o, 8, false); break;
    case 3: syntax_case(r, o); break;
    case 4: prefix_case(r, o); break;
    case 5:
      kind_pair(r, o, kRanges);
      if (r.chance(40)) o.addc(','), kind_pair(r, o, kRanges);
      if (r.chance(30)) o.addc(','), pair(r, o);
      break;
    case 6:
      for (size_t n = 1 + r.below(3); n > 0; n--) {
        if (o.n > 0) o.addc(',');
        kind_pair(r, o, r.chance(80) ? kNum : kFxp);
      }
      break;
    case 7:
      kind_pair(r, o, kLetters), o.addc(',');
      kind_pair(r, o, r.chance(50) ? kLetters : kBool);
      break;
    case 8: pair_list(r, o, 5, true), mutate(r, o); break;
    default:
      for (size_t n = 1 + r.below(3); n > 0; n--) {  // garbage keys, values of any kind
        garbage_key(r, o), o.addc(':'), value_for(r, nullptr, o);
        if (n > 1) o.add(r.chance(80) ? "," : r.pick({",,", ";", "\xff,"}));
      }
  }
  return fam;
}

// Whether 5.3.0 survives s without aborting or printing reports (see the top of the file). Every
// ','-separated segment counts as a pair, whether or not the parser would reach it.
bool safe(const char* s) {
  static const char* const kNoTrue[] = {"abort",       "abort_conf",        "confirm_conf",
                                        "stats_print", "background_thread", "prof"};
  bool hpa = false, sec = false;
  for (const char* p = s;; p++) {
    size_t len = std::strcspn(p, ",");
    const char* colon = static_cast<const char*>(std::memchr(p, ':', len));
    if (colon != nullptr) {
      size_t kl = colon - p, vl = len - kl - 1;
      auto key = [&](const char* k) { return std::strlen(k) == kl && !std::strncmp(k, p, kl); };
      auto val = [&](const char* v) {
        return std::strlen(v) == vl && !std::strncmp(v, colon + 1, vl);
      };
      for (const char* k : kNoTrue) {
        if (key(k) && val("true")) return false;
      }
      bool interval_ok = std::any_of(std::begin(kIntervalOk), std::end(kIntervalOk), val);
      if (key("stats_interval") && !interval_ok) return false;
      hpa |= key("hpa") && val("true");
      sec |= key("hpa_sec_nshards");
    }
    if (p[len] == '\0') break;
    p += len;
  }
  return !(hpa && sec);
}

// String i (its own generator: a change to one family does not shift the others); returns its
// family, or -1 when no safe string came out.
int make_string(int i, Str& o, int* rejected) {
  Rng r{seed() * 1000003 + (uint64_t)i};
  for (int tries = 0; tries < 1000; tries++) {
    int fam = generate(r, i, o);
    if (safe(o.s)) return fam;
    ++*rejected;
  }
  return -1;
}

// Writes n bytes of s to dst (NUL-terminated, cut to fit): control and non-ASCII bytes and
// backslash as \xNN.
void escape_to(char* dst, size_t cap, const char* s, size_t n) {
  size_t o = 0;
  for (size_t i = 0; i < n && o + 5 < cap; i++) {
    unsigned char c = (unsigned char)s[i];
    bool hex = c < 0x20 || c >= 0x7f || c == '\\';
    o += std::snprintf(dst + o, cap - o, hex ? "\\x%02x" : "%c", c);
  }
  dst[o] = '\0';
}

// ===========================================================================
// The child: `PROGRAM --conf-child`, under MALLOC_CONF and the library the parent chose.

enum Ty : uint8_t { kTBool, kTStr, kTU32, kTU64, kTI64 };

void print_ctl(const char* name, Ty t) {
  union {
    bool b;
    unsigned u;
    uint64_t q;
    const char* s;
  } v;
  std::memset(&v, 0, sizeof(v));
  size_t want = t == kTBool ? 1 : t == kTU32 ? 4 : 8, len = want;
  int rc = mallctl(name, &v, &len, nullptr, 0);
  std::printf("ctl %s | ", name);
  static char buf[1024];
  if (rc == 0 && len == want && t == kTStr) {
    escape_to(buf, sizeof(buf), v.s ? v.s : "(null)", v.s ? std::strlen(v.s) : 6);
  }
  if (rc == ENOENT)
    std::printf("ENOENT\n");
  else if (rc != 0 || len != want)
    std::printf("rc=%d len=%zu\n", rc, len);
  else if (t == kTStr)
    std::printf("\"%s\"\n", buf);
  else if (t == kTBool)
    std::printf("%s\n", v.b ? "true" : "false");
  else if (t == kTI64)
    std::printf("%lld\n", (long long)v.q);
  else
    std::printf("%llu\n", (unsigned long long)(t == kTU32 ? v.u : v.q));
}

int child_main() {
  static char obuf[1 << 16], want[PATH_MAX];
  std::setvbuf(stdout, obuf, _IOFBF, sizeof(obuf));
  void* p = std::malloc(1);  // the library reads its options (if nothing did before main)
  jt::escape(p);
  std::free(p);
  const char* lib = std::getenv("DIFF_LIB");
  if (lib == nullptr || !realpath(lib, want) || std::strcmp(jt::diff::library_file(), want)) {
    std::printf("FAIL: mallctl comes from %s, not %s\n", jt::diff::library_file(), lib);
    return 2;
  }
  static constexpr const char* kSigned[] = {"opt.dirty_decay_ms",       "opt.muzzy_decay_ms",
                                            "opt.mutex_max_spin",       "opt.stats_interval",
                                            "opt.lg_tcache_nslots_mul", "opt.lg_prof_interval",
                                            "opt.prof_recent_alloc_max"};
  bool read = for_each_golden([](const char* name, const char* type) {
    bool sgn = std::any_of(std::begin(kSigned), std::end(kSigned),
                           [&](const char* s) { return std::strcmp(s, name) == 0; });
    print_ctl(name, !std::strcmp(type, "bool")     ? kTBool
                    : !std::strcmp(type, "string") ? kTStr
                    : !std::strcmp(type, "u32")    ? kTU32
                    : sgn                          ? kTI64
                                                   : kTU64);
  });
  if (!read) return std::printf("FAIL: cannot read the golden list in %s\n", JT_DATA_DIR), 3;
  print_ctl("opt.bounded_coalesce", kTBool);
  print_ctl("opt.idle_arena_decay", kTBool);
  print_ctl("opt.decay_hold_peak", kTBool);
  for (const char* n : {"arenas.narenas", "arenas.nbins", "arenas.nhbins"}) print_ctl(n, kTU32);
  print_ctl("arenas.tcache_max", kTU64);
  for (const char* n : {"arenas.dirty_decay_ms", "arenas.muzzy_decay_ms"}) print_ctl(n, kTI64);
  for (unsigned j : {0u, 1u, 8u, 17u, 27u, 35u}) {
    char name[128];
    print_ctl(jt::ctl_name(name, "arenas.bin.%u.nregs", j), kTU32);
    print_ctl(jt::ctl_name(name, "arenas.bin.%u.slab_size", j), kTU64);
    print_ctl(jt::ctl_name(name, "arenas.bin.%u.nshards", j), kTU32);
  }
  return 0;
}

// ===========================================================================
// The parent: one child per library and string, and the comparison.

// Differences doc/compat.md documents, by anchor (differential.h's Excl: glob on the line's
// name -- opt.<key> for a value, conf.<key> for a message about the pair key:value; args; unless;
// the anchor). A message line matching an entry may be missing on the other side.
constexpr Excl kDocumented[] = {
    // compat.md#bounded-coalesce: our own key, an "Invalid conf pair" in 5.3.0, and its opt.*.
    {"conf.bounded_coalesce", nullptr, nullptr, "bounded-coalesce"},
    {"opt.bounded_coalesce", nullptr, nullptr, "bounded-coalesce"},
    {"conf.idle_arena_decay", nullptr, nullptr, "idle-arena-decay"},
    {"opt.idle_arena_decay", nullptr, nullptr, "idle-arena-decay"},
    {"conf.decay_hold_peak", nullptr, nullptr, "decay-hold-peak"},
    {"opt.decay_hold_peak", nullptr, nullptr, "decay-hold-peak"},
};

// KNOWN BUGS of this library: differences from 5.3.0 that doc/compat.md does not document. Each
// entry is a bug to fix in src/; delete the entry with the fix. The null entry only keeps the
// array non-empty.
constexpr Excl kKnownBugs[] = {
    {nullptr, nullptr, nullptr, nullptr},
};

constexpr int kMaxLines = 192;
struct Side {
  int status;
  char out[1 << 16], err[1 << 18], text[1 << 19];  // text: the lines below
  size_t used;
  const char *msg[kMaxLines], *ctl[kMaxLines];
  int nmsg, nctl;
};
Side g_side[2];  // ours, 5.3.0

const char* add_line(Side& s, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
const char* add_line(Side& s, const char* fmt, ...) {
  char* at = s.text + s.used;
  va_list ap;
  va_start(ap, fmt);
  int n = std::vsnprintf(at, sizeof(s.text) - s.used, fmt, ap);
  va_end(ap);
  s.used = std::min(sizeof(s.text) - 1, s.used + (size_t)std::max(n, 0) + 1);
  return at;
}

constexpr char kKeyChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789";

// The name of a message: conf.<key> for one about a pair, conf.- for a syntax error, init.- else.
void msg_name(const char* m, size_t n, char* name, size_t cap) {
  static const char* const kTags[] = {
      "Invalid conf pair: ", "Invalid conf value: ", "Out-of-range conf value: ",
      "Invalid settings for bin_shards: ", "Invalid settings for slab_sizes: "};
  const char *body = m + (std::strncmp(m, "<jemalloc>: ", 12) == 0 ? 12 : 0), *end = m + n;
  for (const char* tag : kTags) {
    size_t tl = std::strlen(tag);
    if (body + tl > end || std::strncmp(body, tag, tl) != 0) continue;
    size_t kl = std::strspn(body + tl, kKeyChars);
    kl = std::min<size_t>({kl, (size_t)(end - body - tl), 48});
    std::snprintf(name, cap, "conf.%.*s", (int)kl, body + tl);
    return;
  }
  bool syntax = !std::strncmp(body, "Conf string", 11) || !std::strncmp(body, "Malformed", 9);
  std::snprintf(name, cap, syntax ? "conf.-" : "init.-");
}

// Cuts the child's stderr into messages (a message may hold echoed newlines: the next one starts
// a line with "<jemalloc>") and its stdout into lines; all prefixed with the string's number.
void build_side(Side& s, int i) {
  static char esc[1 << 16];
  char name[64];
  s.used = 0, s.nmsg = s.nctl = 0;
  for (char *p = s.err, *next; *p != '\0' && s.nmsg < kMaxLines; p = next) {
    char* nx = std::strstr(p, "\n<jemalloc>");
    size_t n = nx ? nx - p : std::strlen(p);
    next = p + n + (nx != nullptr);
    n -= nx == nullptr && p[n - 1] == '\n';  // the last message's newline
    msg_name(p, n, name, sizeof(name));
    escape_to(esc, sizeof(esc), p, n);
    s.msg[s.nmsg++] = add_line(s, "%03d msg %s | %s", i, name, esc);
  }
  for (char* p = s.out; *p != '\0' && s.nctl < kMaxLines - 1;) {
    s.ctl[s.nctl++] = add_line(s, "%03d %s", i, jt::diff::next_line(&p));
  }
  int st = s.status;
  s.ctl[s.nctl++] = add_line(s, "%03d exit status | %s %d", i,
                             WIFEXITED(st)     ? "exit"
                             : WIFSIGNALED(st) ? "signal"
                                               : "wait",
                             WIFEXITED(st)     ? WEXITSTATUS(st)
                             : WIFSIGNALED(st) ? WTERMSIG(st)
                                               : st);
}

constexpr size_t kNDoc = sizeof(kDocumented) / sizeof(kDocumented[0]);
constexpr size_t kNBugs = sizeof(kKnownBugs) / sizeof(kKnownBugs[0]);
int g_doc_count[kNDoc], g_bug_count[kNBugs];

// Whether the message lists are the same once the lines the tables excuse are left out (and
// then counts them).
bool msgs_match(bool with_bugs) {
  const char* kept[2][kMaxLines];
  int n[2] = {}, doc[kNDoc] = {}, bug[kNBugs] = {};
  for (int k = 0; k < 2; k++) {
    for (int j = 0; j < g_side[k].nmsg; j++) {
      const char* l = g_side[k].msg[j];
      int d = jt::diff::find_one(kDocumented, kNDoc, l, k == 0);
      int b = with_bugs && d < 0 ? jt::diff::find_one(kKnownBugs, kNBugs, l, k == 0) : -1;
      if (d >= 0)
        doc[d]++;
      else if (b >= 0)
        bug[b]++;
      else
        kept[k][n[k]++] = l;
    }
  }
  if (n[0] != n[1]) return false;
  for (int j = 0; j < n[0]; j++) {
    if (std::strcmp(kept[0][j], kept[1][j]) != 0) return false;
  }
  for (size_t d = 0; d < kNDoc; d++) g_doc_count[d] += doc[d];
  for (size_t b = 0; b < kNBugs; b++) g_bug_count[b] += bug[b];
  return true;
}

// How a string's outputs compare.
enum Verdict { kVSame, kVDoc, kVBug, kVBad, kNVerdicts };
constexpr const char* kVerdicts[] = {"identical", "the same but for documented differences",
                                     "with known bugs", "unexplained"};

// Compares string i's outputs; prints them (the first 20 times) when a difference is left
// unexplained.
int g_same_msgs, g_same_some;  // strings with the same messages (and some)

Verdict compare_case(int i, const char* conf, int* shown) {
  const Side &a = g_side[0], &b = g_side[1];
  bool msgs_same = a.nmsg == b.nmsg, ok = true, doc = false, bug = false;
  for (int j = 0; msgs_same && j < a.nmsg; j++) msgs_same = !std::strcmp(a.msg[j], b.msg[j]);
  g_same_msgs += msgs_same, g_same_some += msgs_same && a.nmsg > 0;
  bool msgs_ok = msgs_same || (doc = msgs_match(false)) || (bug = msgs_match(true));
  bool bad_ctl[kMaxLines] = {};
  bool ctl_ok = a.nctl == b.nctl;
  for (int j = 0; ctl_ok && j < a.nctl; j++) {
    if (!std::strcmp(a.ctl[j], b.ctl[j])) continue;
    int d = jt::diff::find(kDocumented, kNDoc, a.ctl[j], b.ctl[j]);
    int k = d < 0 ? jt::diff::find(kKnownBugs, kNBugs, a.ctl[j], b.ctl[j]) : -1;
    if (d >= 0)
      g_doc_count[d]++, doc = true;
    else if (k >= 0)
      g_bug_count[k]++, bug = true;
    else
      bad_ctl[j] = true, ok = false;
  }
  bool ref_ok = WIFEXITED(b.status) && WEXITSTATUS(b.status) == 0;
  ok = ok && ctl_ok && msgs_ok && ref_ok;
  if (ok) return bug ? kVBug : doc ? kVDoc : kVSame;
  if (++*shown > 20) return kVBad;
  static char esc[1024];
  escape_to(esc, sizeof(esc), conf, std::min<size_t>(std::strlen(conf), 300));
  std::printf("  difference for string %03d \"%s\"%s%s%s:\n", i, esc,
              std::strlen(conf) > 300 ? "..." : "", ref_ok ? "" : " (5.3.0's child failed)",
              msgs_ok ? "" : " (messages differ)");
  for (int k = 0; k < 2; k++) {
    const Side& s = g_side[k];
    for (int j = 0; j < s.nmsg; j++) {
      std::printf("    %-6s %.600s\n", k ? "5.3.0:" : "ours:", s.msg[j]);
    }
    for (int j = 0; j < s.nctl; j++) {
      if (!ctl_ok || bad_ctl[j]) std::printf("    %-6s %s\n", k ? "5.3.0:" : "ours:", s.ctl[j]);
    }
  }
  return kVBad;
}

Str g_conf;

TEST(generator_is_deterministic_and_safe) {
  ASSERT_TRUE(load_keys());
  for (const char* s : {"abort_conf:true", "x:1,abort:true", "stats_print:true,", "prof:true",
                        "stats_interval:0", "stats_interval:5", "narenas:2,background_thread:true",
                        "confirm_conf:true", "hpa:true,hpa_sec_nshards:9"}) {
    EXPECT_FALSE(safe(s));
  }
  for (const char* s : {"abort_conf:maybe", "abort_conf:truex", "stats_interval:-1",
                        "stats_interval:x", "prof:maybe", "hpa:true", "stats_print:false", ""}) {
    EXPECT_TRUE(safe(s));
  }
  int rejected = 0, fams[10] = {}, pairs = 0, n = nstrings();
  size_t longest = 0;
  uint64_t hash[2] = {14695981039346656037ull, 14695981039346656037ull};  // FNV-1a
  for (int pass = 0; pass < 2; pass++) {
    for (int i = 0; i < n; i++) {
      int fam = make_string(i, g_conf, &rejected);
      ASSERT_TRUE(fam >= 0);
      for (size_t j = 0; j <= g_conf.n; j++) {
        hash[pass] = (hash[pass] ^ (unsigned char)g_conf.s[j]) * 1099511628211ull;
      }
      if (pass == 1) continue;
      fams[fam]++;
      longest = std::max(longest, g_conf.n);
      for (const char* p = g_conf.s; *p; p++) pairs += *p == ':';
    }
  }
  EXPECT_EQ(hash[0], hash[1]);
  jt::note("%d strings (%d ':'), longest %zu bytes; %d unsafe drafts regenerated", n, pairs,
           longest, rejected / 2);
  for (int f = 0; f < 10; f++) jt::note("  family %-8s %d", kFamilies[f], fams[f]);
}

TEST(same_messages_and_values_as_5_3_0) {
  const char* libs[2];
  // Every string's record lists opt.cache_oblivious, a build property.
  if (!jt::diff::libraries(libs, jt::diff::Layout::kSame)) return;
  ASSERT_TRUE(load_keys());
  int rejected = 0, shown = 0, verdicts[kNVerdicts] = {}, with_msgs = 0, nmsgs = 0, n = nstrings();
  for (int i = 0; i < n; i++) {
    ASSERT_TRUE(make_string(i, g_conf, &rejected) >= 0);
    const char* args[] = {"--conf-child", nullptr};
    jt::diff::Spawned c[2];
    bool started[2];
    for (int k = 0; k < 2; k++) started[k] = jt::diff::spawn(&c[k], libs[k], args, g_conf.s, true);
    for (int k = 0; k < 2; k++) {
      Side& s = g_side[k];
      s.status = -1, s.out[0] = s.err[0] = '\0';
      if (started[k]) {
        s.status = jt::diff::collect(&c[k], s.out, sizeof(s.out), s.err, sizeof(s.err), 20000);
      }
      build_side(s, i);
    }
    with_msgs += g_side[1].nmsg > 0, nmsgs += g_side[1].nmsg;
    verdicts[compare_case(i, g_conf.s, &shown)]++;
  }
  jt::note("%d strings; 5.3.0 printed %d messages, for %d of them", n, nmsgs, with_msgs);
  jt::note("  %d with the same messages (%d not empty)", g_same_msgs, g_same_some);
  for (int v = 0; v < kNVerdicts; v++) {
    if (verdicts[v]) jt::note("  %d %s", verdicts[v], kVerdicts[v]);
  }
  for (size_t e = 0; e < kNDoc + kNBugs; e++) {
    const Excl& x = e < kNDoc ? kDocumented[e] : kKnownBugs[e - kNDoc];
    int c = e < kNDoc ? g_doc_count[e] : g_bug_count[e - kNDoc];
    const char* what = e < kNDoc ? "documented" : "KNOWN BUG";
    if (c && x.glob) jt::note("  %d lines %s: %s (%s)", c, what, x.glob, x.why);
  }
  if (verdicts[kVBad]) FAIL_MSG("%d strings differ from 5.3.0 (at most 20 shown)", verdicts[kVBad]);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "--conf-child") == 0) return child_main();
  return jt::diff::main(argc, argv, nullptr);
}
