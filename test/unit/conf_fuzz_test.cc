// Randomized robustness test of src/ctl/conf, the MALLOC_CONF parser: bad input never corrupts
// the option state; a bad pair gets a one-line warning and is otherwise ignored.
//
// Deterministic (fixed seeds, our own generator). Inputs: random bytes; lists of real and garbage
// keys with values made for the key's kind (bounds, 2^64, signs, 0x/octal, spaces, long fractions,
// choice-name prefixes, bin_shards/slab_sizes range lists, stats letters); odd separators,
// truncation, non-ASCII and control bytes, values of several KiB. Each input goes through
// conf_parse_string (raw: it never aborts, so `abort_conf:true` is just a value, reset before the
// next parse), conf_process_sources (defused: no pair can set abort_conf) and now and then
// conf_init with MALLOC_CONF. Checked after each parse:
//   * each message (one writer call) starts with "<jemalloc>: ", has one of the parser's forms and
//     ends with "\n"; its only variable part echoes a whole pair (or, in confirm_conf headers, a
//     whole source) of the input, so a newline inside a message can only be an echoed input byte
//     (5.3.0 echoes raw); a message cut by io_printf's 4 KiB buffer has 4095 bytes and may lack
//     the newline (as in 5.3.0; conf_test checks it);
//   * every option lies in the domain ctl/opt.h declares for it, or holds its default;
//   * parsing is deterministic; one bad pair changes nothing (but 5.3.0's quirks: narenas_ratio
//     stores "1x", bin_shards/slab_sizes keep the segments before a bad one); one accepted pair
//     changes only the option its key selects;
//   * "A,B" (A a syntax-clean pair list, B non-empty) equals A then B, as two conf_parse_string
//     calls (state and messages) and as two sources (state); five sources equal parsing them in
//     order (the later wins key by key).
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "arena/bin_info.h"
#include "ctl/conf.h"
#include "ctl/opt.h"
#include "support/malloc_io.h"

namespace {

using je::g_opt;
using je::OptId;
using je::OptInfo;
using je::OptKind;

// ---- Known bugs ------------------------------------------------------------------------------
// Inputs that currently break an invariant because of a bug in src/ctl/conf. The fuzz loop skips
// inputs matching is_known_bug() so that it stays green for everything else, and
// KnownBugsAreFixed checks each listed input, failing until the bug is fixed. Empty both when
// fixing. (None found so far.)
const char* const kKnownBugInputs[] = {nullptr};  // nullptr-terminated
bool is_known_bug(const std::string& /*input*/) { return false; }

// ---- Generator -------------------------------------------------------------------------------

struct Rng {
  uint64_t s;
  uint64_t next() {  // splitmix64
    uint64_t z = (s += 0x9e3779b97f4a7c15);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9;
    z = (z ^ (z >> 27)) * 0x94d049bb133111eb;
    return z ^ (z >> 31);
  }
  size_t below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(next() % n); }
  bool one_in(size_t n) { return below(n) == 0; }
  template <class T, size_t N>
  const T& pick(const T (&a)[N]) {
    return a[below(N)];
  }
};

std::string u64s(uint64_t v) { return std::to_string(v); }
std::string i64s(uint64_t v) { return std::to_string(static_cast<int64_t>(v)); }

char random_byte(Rng& r) { return static_cast<char>(1 + r.below(255)); }
char odd_byte(Rng& r) {  // non-ASCII or control: the bytes a parser is least likely to expect
  static const char kOdd[] = "\n\t\r\v\x01\x7f\x80\xc3\xa9\xff\xfe";
  return kOdd[r.below(sizeof(kOdd) - 1)];
}

std::string digits(Rng& r, size_t n) {
  std::string s;
  for (size_t i = 0; i < n; i++) s += static_cast<char>('0' + r.below(10));
  return s;
}

std::string number_value(Rng& r, const OptInfo* o) {
  // clang-format off
  static const char* const kSpecial[] = {
      "", "0", "1", "-1", "+1", "-0", "+0", "0x", "0x10", "0X1f", "0xg", "010", "08", "0777",
      "-0x10", "18446744073709551615", "18446744073709551616", "99999999999999999999",
      "27670116110564327420", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
      "-9223372036854775809", "4294967295", "4294967296", "4294967297", " 7", "\t7", "\n7", "7 ",
      "++1", "+-1", "--1", "- 1", "1e3", "1.5", "default", "Default", "0x1ffffffffffffffff",
      "18446744072000", "18446744072001", "-", "+", " "
  };
  // clang-format on
  char buf[40];
  const uint64_t x = r.next() >> r.below(64);
  switch (r.below(6)) {
    case 0: return r.pick(kSpecial);
    case 1: {  // around the declared bounds
      const uint64_t b = o != nullptr ? (r.one_in(2) ? o->domain.lo : o->domain.hi) : 0;
      const uint64_t v = b + r.below(3) - 1;
      snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
      return r.one_in(3) ? std::string(buf) : r.one_in(2) ? i64s(v) : u64s(v);
    }
    case 2: return std::string(r.pick({"", "-", "+", " ", " -"})) + u64s(x);
    case 3: snprintf(buf, sizeof(buf), r.one_in(2) ? "0x%" PRIx64 : "0%" PRIo64, x); return buf;
    case 4: return digits(r, 19 + r.below(r.one_in(20) ? 5000 : 40));
    default: return std::string(r.pick({"", "", "+", "-", " "})) + u64s(r.below(100));
  }
}

std::string fxp_value(Rng& r) {
  // clang-format off
  static const char* const kSpecial[] = {
      "", ".", "0.", ".5", "1.5", "65535.99999", "65535", "65536", "-1", "-0", "+1", " 1", "1 ",
      "1x", "1.5.", "0.3333333333333333333333333333", "00000000000000000000001", "1e3", "0x1",
      "..5", "1..5", "-1.5", "4294967295", "0.00001525878907"
  };
  // clang-format on
  if (r.one_in(3)) return r.pick(kSpecial);
  std::string s = r.one_in(8) ? "" : u64s(r.below(r.one_in(4) ? 100000 : 10));
  if (r.one_in(2)) s += "." + digits(r, r.below(r.one_in(10) ? 3000 : 60));
  return s;
}

std::string choice_value(Rng& r, const OptInfo* o) {
  static const char* const kOther[] = {"",        "true",       "default", "DISABLED", "Always",
                                       "percpux", "secondaryy", "auto,",   "never "};
  if (o == nullptr || o->domain.nnames == 0 || r.one_in(5)) return r.pick(kOther);
  const std::string name = o->domain.names[r.below(o->domain.nnames)];
  switch (r.below(4)) {
    case 0: return name.substr(0, r.below(name.size() + 1));  // prefixes, empty included
    case 1: return name + (r.one_in(2) ? 'x' : odd_byte(r));
    default: return name;
  }
}

std::string letters_value(Rng& r) {
  static const char kAlphabet[] = "JgmdablxehJgmdablxehzZ!c \x80\xff";
  std::string s;
  for (size_t n = r.one_in(20) ? 5000 : r.below(30); n > 0; n--) {
    s += kAlphabet[r.below(sizeof(kAlphabet) - 1)];
  }
  return s;
}

std::string range_number(Rng& r) {
  // clang-format off
  static const char* const kNums[] = {
      "0", "1", "8", "16", "17", "1024", "14336", "14337", "16384", "100000", "-1", "0x10", "010",
      "18446744073709551615", "9223372036854775808", "4294967296", "4294967297", "", " 8", "63",
      "64", "65", "255", "256", "1792", "1793", "2147483648", "99999999999999999999"
  };
  // clang-format on
  return r.one_in(4) ? u64s(r.next() >> r.below(64)) : r.pick(kNums);
}

// bin_shards / slab_sizes: "lo-hi:n|..." with swapped, huge, zero and missing parts.
std::string ranges_value(Rng& r) {
  if (r.one_in(15)) return r.pick({"default", "Default", "default|1-2:3"});
  std::string s;
  const size_t n = r.one_in(30) ? 1000 : 1 + r.below(5);
  for (size_t i = 0; i < n; i++) {
    std::string lo = range_number(r), hi = range_number(r);
    if (r.one_in(4)) std::swap(lo, hi);
    switch (r.below(12)) {
      case 0: s += lo + "-" + hi; break;
      case 1: s += lo + ":" + hi; break;
      case 2: s += "-" + hi + ":" + range_number(r); break;
      default: s += lo + "-" + hi + ":" + range_number(r); break;
    }
    if (i + 1 < n || r.one_in(6)) s += r.one_in(10) ? "||" : "|";
  }
  return s;
}

// A value for option `o` (of a random kind when null); now and then truncated, with an odd byte
// inside, or several KiB long.
std::string value_for(Rng& r, const OptInfo* o) {
  const OptKind k = o != nullptr ? o->kind : static_cast<OptKind>(r.below(12));
  std::string v;
  if (k == OptKind::kBool) {
    v = r.pick({"true", "false", "True", "", "1", "0", "tru", "truee", "false ", " true", "yes"});
  } else if (k == OptKind::kFxp || (o && o->id == OptId::hpa_hugification_threshold_ratio)) {
    v = fxp_value(r);
  } else if (k == OptKind::kChoice) {
    v = choice_value(r, o);
  } else if (k == OptKind::kLetters) {
    v = letters_value(r);
  } else if (k == OptKind::kBinShards || k == OptKind::kSlabPages) {
    v = ranges_value(r);
  } else {
    v = number_value(r, o);
  }
  if (r.one_in(12) && !v.empty()) v.resize(r.below(v.size()));
  if (r.one_in(12)) v.insert(r.below(v.size() + 1), 1, odd_byte(r));
  if (r.one_in(30)) v = std::string(4000 + r.below(4000), v.empty() ? '0' : v[0]) + v;
  return v;
}

// A key: mostly a table key (*o set), else garbage, a prefix/extension of one, or a tricky one.
std::string key_for(Rng& r, const OptInfo** o) {
  size_t n;
  const OptInfo* all = je::opt_info_table(&n);
  *o = nullptr;
  switch (r.below(10)) {
    case 0: {
      static const char kKeyish[] = "abcdefghijklmnopqrstuvwxyz_ABZ0129";
      std::string k;
      for (size_t i = r.below(20); i > 0; i--) k += kKeyish[r.below(sizeof(kKeyish) - 1)];
      return k;
    }
    case 1: {
      const std::string name = all[r.below(n)].name;
      return r.one_in(2) ? name.substr(0, r.below(name.size())) : name + r.pick({"_", "x", "0"});
    }
    case 2:
      return r.pick({"experimental_", "experimental_x", "Narenas", "abort_conf", "confirm_conf",
                     "lg_tcache_max", "d", "p", "m", "prof"});
    default: *o = &all[r.below(n)]; return (*o)->name;
  }
}

std::string pair_list(Rng& r, size_t max_pairs) {
  std::string s;
  for (size_t i = 0, n = 1 + r.below(max_pairs); i < n; i++) {
    const OptInfo* o;
    const std::string k = key_for(r, &o);
    s += k + ":" + value_for(r, o);
    if (i + 1 < n) s += r.one_in(15) ? r.pick({":", ",,", "", ";", " ,", ",\n"}) : ",";
  }
  return s;
}

std::string random_bytes(Rng& r) {
  static const char kBiased[] = ":,,||--_0123456789abcdefxtrue";
  std::string s;
  for (size_t n = r.one_in(25) ? 3000 + r.below(3000) : r.below(80); n > 0; n--) {
    s += r.one_in(2) ? kBiased[r.below(sizeof(kBiased) - 1)] : random_byte(r);
  }
  return s;
}

std::string mutate(Rng& r, std::string s) {
  for (size_t m = 1 + r.below(3); m > 0 && !s.empty(); m--) {
    const size_t at = r.below(s.size());
    switch (r.below(4)) {
      case 0: s.resize(at); break;
      case 1: s[at] = random_byte(r); break;
      case 2: s.insert(at, 1, odd_byte(r)); break;
      default: s.erase(at, 1); break;
    }
  }
  return s;
}

// One input of each family in turn; *single_pair when it is exactly one pair (no ',').
std::string generate(Rng& r, unsigned i, bool* single_pair) {
  *single_pair = false;
  switch (i % 7) {
    case 0: return random_bytes(r);
    case 1:
    case 2: return pair_list(r, 8);
    case 3: return mutate(r, pair_list(r, 6));
    default: {
      const OptInfo* o;
      const std::string k = key_for(r, &o);
      const std::string v = value_for(r, o);
      *single_pair = v.find(',') == std::string::npos;
      return k + ":" + v;
    }
  }
}

// For conf_process_sources: no pair can set abort_conf (the key stays a key, now unknown).
std::string defuse(std::string s) {
  for (size_t p = 0; (p = s.find("abort_conf", p)) != std::string::npos; p += 10) s[p + 9] = 'F';
  return s;
}

std::string escaped(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < 300; i++) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    char buf[8];
    snprintf(buf, sizeof(buf), c >= 0x20 && c < 0x7f && c != '\\' && c != '"' ? "%c" : "\\x%02x",
             c);
    out += buf;
  }
  return s.size() > 300 ? out + "...(" + std::to_string(s.size()) + " bytes)" : out;
}

// ---- Messages --------------------------------------------------------------------------------

std::vector<std::string> g_msgs;  // one element per writer call, i.e. per message
void capture(const char* s) { g_msgs.emplace_back(s); }

// What the inputs exercised (printed per seed, to show the generator reaches every path).
struct Stats {
  unsigned messages, multiline, cut, accepted, rejected, joined, inits;
} g_stats;

constexpr char kPrefix[] = "<jemalloc>: ";
constexpr size_t kCut = 4095;  // io_printf's 4 KiB buffer less the NUL
const char* const kSourceExplain[je::kConfNSources] = {
    "string specified via --with-malloc-conf",
    "string pointed to by the global variable malloc_conf",
    "\"name\" of the file referenced by the symbolic link named /etc/malloc.conf",
    "value of the environment variable MALLOC_CONF",
    "string pointed to by the global variable malloc_conf_2_conf_harder",
};
const char* const kPairTags[] = {"Invalid conf pair: ",
                                 "Invalid conf value: ",
                                 "Out-of-range conf value: ",
                                 "Invalid settings for bin_shards: ",
                                 "Invalid settings for slab_sizes: ",
                                 "-- Set conf value: "};
const char* const kSyntax[] = {"Conf string ends with key", "Malformed conf string",
                               "Conf string ends with comma"};

bool is_key_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

// Whether `echo` is a whole pair of `src` (at the start or after ',', ending at ',' or the end,
// with a key of key characters); a cut echo need only start a pair.
bool is_pair_of(const std::string& echo, const char* src, bool cut) {
  const size_t colon = echo.find(':');
  if (!cut && colon == std::string::npos) return false;
  if (!std::all_of(echo.begin(), echo.begin() + std::min(colon, echo.size()), is_key_char)) {
    return false;
  }
  const std::string s = src;
  for (size_t p = s.find(echo); p != std::string::npos; p = s.find(echo, p + 1)) {
    const size_t end = p + echo.size();
    if ((p == 0 || s[p - 1] == ',') && (cut || end == s.size() || s[end] == ',')) return true;
  }
  return false;
}

// Whether `m` is one of the parser's messages about sources `srcs`, read as complete or, when
// `cut`, as the first 4095 bytes of a longer one.
bool is_form(const std::string& m, const char* const* srcs, unsigned nsrcs, bool headers,
             bool cut) {
  const size_t from = sizeof(kPrefix) - 1;
  const std::string body = m.substr(from, m.size() - from - (cut ? 0 : 1));
  for (const char* syntax : kSyntax) {
    if (!cut && body == syntax) return true;
  }
  for (const char* tag : kPairTags) {
    if (body.rfind(tag, 0) != 0) continue;
    for (unsigned i = 0; i < nsrcs; i++) {
      if (srcs[i] != nullptr && is_pair_of(body.substr(strlen(tag)), srcs[i], cut)) return true;
    }
    return false;
  }
  for (unsigned i = 0; headers && i < nsrcs; i++) {
    const std::string h = std::string(kPrefix) + "malloc_conf #" + std::to_string(i + 1) + " (" +
                          kSourceExplain[i] + "): \"" + (srcs[i] ? srcs[i] : "") + "\"\n";
    if (m == (cut ? h.substr(0, kCut) : h)) return true;
  }
  return false;
}

// What is wrong with message `m` ("" when nothing). `srcs`: the strings the parse saw, by slot;
// `headers` allows confirm_conf's source headers. A 4095-byte message may be complete or cut
// (and a cut one may end in an echoed newline), so both readings are tried.
std::string check_message(const std::string& m, const char* const* srcs, unsigned nsrcs,
                          bool headers) {
  if (m.rfind(kPrefix, 0) != 0) return "no \"<jemalloc>: \" prefix";
  const bool cut = m.size() == kCut;
  if (m.back() != '\n' && !cut) return "no trailing newline";
  if (m.back() == '\n' && is_form(m, srcs, nsrcs, headers, false)) return "";
  if (cut && is_form(m, srcs, nsrcs, headers, true)) return "";
  return "not a parser message about this input";
}

void check_messages(const std::vector<std::string>& msgs, const char* const* srcs, unsigned nsrcs,
                    bool headers, std::string* why) {
  for (const std::string& m : msgs) {
    const std::string w = check_message(m, srcs, nsrcs, headers);
    if (!w.empty()) *why += "message \"" + escaped(m.substr(0, 200)) + "\": " + w + "; ";
  }
}

// ---- Option state ----------------------------------------------------------------------------

const char* letters_of(const OptInfo& o) { return *static_cast<const char* const*>(o.ptr); }

bool differs_from_default(const OptInfo& o) {
  if (o.kind == OptKind::kLetters || o.kind == OptKind::kString) {
    return strcmp(letters_of(o), *static_cast<const char* const*>(o.def)) != 0;
  }
  return memcmp(o.ptr, o.def, o.size) != 0;
}

// Every stored value (letters by content, not address) plus the typed companions.
std::string snapshot() {
  size_t n;
  const OptInfo* all = je::opt_info_table(&n);
  std::string s;
  for (size_t i = 0; i < n; i++) {
    if (all[i].kind == OptKind::kLetters || all[i].kind == OptKind::kString) {
      s += std::string(letters_of(all[i])) + '\0';
    } else if (all[i].ptr != nullptr) {
      s.append(static_cast<const char*>(all[i].ptr), all[i].size);
    }
  }
  const auto add = [&s](const auto& v) { s.append(reinterpret_cast<const char*>(&v), sizeof(v)); };
  add(g_opt.dss_prec), add(g_opt.percpu_arena_mode), add(g_opt.thp_mode);
  add(g_opt.metadata_thp_mode), add(g_opt.zero_realloc_action), add(g_opt.prof_time_res);
  add(g_opt.junk_alloc), add(g_opt.junk_free);
  return s;
}

uint64_t load(const OptInfo& o, const void* p) {  // signed kinds sign-extended
  switch (o.kind) {
    case OptKind::kUnsigned: return *static_cast<const unsigned*>(p);
    case OptKind::kSizeT: return *static_cast<const size_t*>(p);
    case OptKind::kUint64: return *static_cast<const uint64_t*>(p);
    case OptKind::kSSizeT: return static_cast<uint64_t>(int64_t{*static_cast<const ssize_t*>(p)});
    case OptKind::kInt64: return static_cast<uint64_t>(*static_cast<const int64_t*>(p));
    default: return 0;
  }
}

int companion(OptId id) {  // the name index the typed companion of a choice option says
  switch (id) {
    case OptId::dss: return static_cast<int>(g_opt.dss_prec);
    case OptId::percpu_arena: return static_cast<int>(g_opt.percpu_arena_mode);
    case OptId::thp: return static_cast<int>(g_opt.thp_mode);
    case OptId::metadata_thp: return static_cast<int>(g_opt.metadata_thp_mode);
    case OptId::zero_realloc: return static_cast<int>(g_opt.zero_realloc_action);
    case OptId::prof_time_resolution: return static_cast<int>(g_opt.prof_time_res);
    case OptId::junk:  // "true", "false", "alloc", "free"
      return g_opt.junk_alloc ? (g_opt.junk_free ? 0 : 2) : (g_opt.junk_free ? 3 : 1);
    default: return -1;
  }
}

// Appends to *why every option outside its domain.
void check_domains(std::string* why) {
  const auto bad = [why](const char* name, const std::string& what) {
    *why += std::string(name) + " " + what + "; ";
  };
  size_t n;
  const OptInfo* all = je::opt_info_table(&n);
  for (size_t i = 0; i < n; i++) {
    const OptInfo& o = all[i];
    const je::OptDomain& d = o.domain;
    switch (o.kind) {
      case OptKind::kBool:
        if (*static_cast<const uint8_t*>(o.ptr) > 1) bad(o.name, "is not a bool");
        break;
      case OptKind::kUnsigned:
      case OptKind::kSizeT:
      case OptKind::kSSizeT:
      case OptKind::kUint64:
      case OptKind::kInt64: {
        const uint64_t v = load(o, o.ptr);
        if (v == load(o, o.def)) break;  // defaults may lie outside (narenas 0 = "computed")
        // The ratio alias writes the threshold unclipped, R x 2 MiB with R in [0, 1] (5.3.0).
        const uint64_t lo = o.id == OptId::hpa_hugification_threshold ? 0 : d.lo;
        // "At most the current value" can only lower the default.
        const uint64_t hi = (d.rules & je::kOptMaxIsCurrent) != 0 ? load(o, o.def) : d.hi;
        const bool sgn = o.kind == OptKind::kSSizeT || o.kind == OptKind::kInt64;
        const bool below = sgn ? static_cast<int64_t>(v) < static_cast<int64_t>(lo) : v < lo;
        const bool above = sgn ? static_cast<int64_t>(v) > static_cast<int64_t>(hi) : v > hi;
        if (((d.checks & je::kOptCheckMin) != 0 && below) ||
            ((d.checks & je::kOptCheckMax) != 0 && above)) {
          bad(o.name, "= " + (sgn ? i64s(v) : u64s(v)) + " out of its domain");
        }
        break;
      }
      case OptKind::kChoice: {
        const char* v = *static_cast<const char* const*>(o.ptr);
        int m = -1;
        for (unsigned j = 0; j < d.nnames; j++) m = v == d.names[j] ? static_cast<int>(j) : m;
        if (m < 0) bad(o.name, "is not one of its names");
        if (m != companion(o.id)) bad(o.name, "disagrees with its typed companion");
        break;
      }
      case OptKind::kLetters: {
        const char* buf = o.id == OptId::stats_print_opts ? g_opt.stats_print_opts_buf
                                                          : g_opt.stats_interval_opts_buf;
        if (letters_of(o) != buf) bad(o.name, "does not point at its buffer");
        const size_t len = strnlen(buf, je::kStatsLettersMax + 1);
        if (len > je::kStatsLettersMax) bad(o.name, "overflows its buffer");
        for (size_t j = 0; j < len; j++) {
          if (strchr(je::kStatsLetters, buf[j]) == nullptr || memchr(buf, buf[j], j) != nullptr) {
            bad(o.name, "holds a foreign or repeated letter");
          }
        }
        break;
      }
      case OptKind::kString: {
        if (letters_of(o) != g_opt.prof_prefix_buf) bad(o.name, "does not point at its buffer");
        if (strnlen(g_opt.prof_prefix_buf, je::kOptPathMax) == je::kOptPathMax) {
          bad(o.name, "overflows its buffer");
        }
        break;
      }
      default: break;
    }
  }
  for (unsigned i = 0; i < je::kOptNBins; i++) {
    if (g_opt.bin_shards[i] < 1 || g_opt.bin_shards[i] > je::kOptBinShardsMax) {
      bad("bin_shards", "[" + std::to_string(i) + "] out of 1..64");
    }
    const uint16_t pg = g_opt.slab_sizes[i];
    if (pg != 0 && je::bin_slab_pages_clamp(i, pg) != pg) {
      bad("slab_sizes", "[" + std::to_string(i) + "] outside the class clamp");
    }
  }
  // Belt and braces, independent of the table's metadata.
  if (g_opt.tcache_max > (size_t{8} << 20)) bad("tcache_max", "above 8 MiB");
  if (g_opt.lg_extent_max_active_fit > 64) bad("lg_extent_max_active_fit", "above 64");
  if (g_opt.max_background_threads < 1) bad("max_background_threads", "is 0");
  for (ssize_t ms : {g_opt.dirty_decay_ms, g_opt.muzzy_decay_ms}) {
    if (ms < -1 || ms > je::kOptDecayMsMax) bad("*_decay_ms", "outside [-1, max]");
  }
}

// ---- The invariants --------------------------------------------------------------------------

// The entry a key selects (doc/options.md): an exact parseable key, else the first prefix-key
// entry (metadata_thp, dss, percpu_arena) that starts with the key.
const OptInfo* selected(const std::string& key) {
  const OptInfo* o = je::opt_info_find(key.data(), key.size());
  if (o != nullptr && (o->flags & je::kOptParse) != 0) return o;
  size_t n;
  const OptInfo* all = je::opt_info_table(&n);
  for (size_t i = 0; i < n; i++) {
    if ((all[i].flags & je::kOptPrefixKey) != 0 && std::string(all[i].name).rfind(key, 0) == 0) {
      return &all[i];
    }
  }
  return nullptr;
}

struct Result {
  std::vector<std::string> msgs;
  std::string state;
  bool ok;
};

Result parse_one(const std::string& s) {  // from defaults, like conf_test
  je::opt_reset();
  g_msgs.clear();
  const bool ok = je::conf_parse_string(s.c_str());
  return Result{g_msgs, snapshot(), ok};
}

Result process(const char* const (&src)[je::kConfNSources]) {  // sources must be defused
  je::opt_reset();
  g_msgs.clear();
  je::conf_process_sources(src);
  return Result{g_msgs, snapshot(), true};
}

// One pair from defaults (`a`): at most one message; rejected means unchanged (but for the
// quirks), accepted means only the selected option (or an alias's target) changed.
void check_single_pair(const std::string& s, const Result& a, std::string* why) {
  const std::string key = s.substr(0, s.find(':'));
  const OptInfo* sel = selected(key);
  const bool rejected = !a.msgs.empty() && a.msgs[0].find("-- Set conf value") == std::string::npos;
  (rejected ? g_stats.rejected : g_stats.accepted)++;
  if (a.msgs.size() > 1) *why += "several messages for one pair; ";
  if (rejected == a.ok && key.rfind("experimental_", 0) != 0) *why += "return value disagrees; ";
  size_t n;
  const OptInfo* all = je::opt_info_table(&n);
  for (size_t i = 0; i < n; i++) {
    const OptInfo& o = all[i];
    if (o.ptr == nullptr || !differs_from_default(o)) continue;
    const bool mine =
        sel != nullptr &&
        (&o == sel || (sel->id == OptId::lg_tcache_max && o.id == OptId::tcache_max) ||
         (sel->id == OptId::hpa_hugification_threshold_ratio &&
          o.id == OptId::hpa_hugification_threshold));
    const bool quirk =
        o.id == OptId::narenas_ratio || o.id == OptId::bin_shards || o.id == OptId::slab_sizes;
    if (!mine || (rejected && !quirk)) *why += std::string("pair changed ") + o.name + "; ";
  }
}

// "A,B" == A then B, for a syntax-clean non-empty A (`a` its result) and a non-empty B.
void check_join(const std::string& s, const Result& a, const std::string& other, std::string* why) {
  if (s.empty() || other.empty()) return;
  for (const std::string& m : a.msgs) {
    for (const char* syntax : kSyntax) {
      if (m == std::string(kPrefix) + syntax + "\n") return;
    }
  }
  g_stats.joined++;
  const std::string ab = s + "," + other;
  const Result joined = parse_one(ab);
  je::opt_reset();
  g_msgs.clear();
  je::conf_parse_string(s.c_str());
  je::conf_parse_string(other.c_str());
  if (joined.state != snapshot() || joined.msgs != g_msgs) *why += "\"A,B\" != A then B; ";
  const std::string da = defuse(s), db = defuse(other), dab = defuse(ab);
  const char* two[je::kConfNSources] = {nullptr, da.c_str(), nullptr, db.c_str(), nullptr};
  const char* cat[je::kConfNSources] = {nullptr, nullptr, nullptr, dab.c_str(), nullptr};
  if (process(two).state != process(cat).state) *why += "\"A,B\" != sources A, B; ";
}

// Everything checked on string `s`; `other` is a second input for the multi-source invariants.
std::string check_all(Rng& r, const std::string& s, const std::string& other, bool single_pair) {
  std::string why;
  const char* one[1] = {s.c_str()};
  const Result a = parse_one(s);
  for (const std::string& m : a.msgs) {
    g_stats.messages++;
    g_stats.multiline += m.find('\n') + 1 < m.size();
    g_stats.cut += m.size() == kCut;
  }
  check_messages(a.msgs, one, 1, false, &why);
  check_domains(&why);
  const Result again = parse_one(s);
  if (again.msgs != a.msgs || again.state != a.state || again.ok != a.ok) {
    why += "not deterministic; ";
  }
  if (single_pair) check_single_pair(s, a, &why);
  check_join(s, a, other, &why);

  // Five sources, `s` in a random slot: messages (headers allowed), domains, and the state of
  // parsing the sources one after another.
  const std::string ds = defuse(s), dother = defuse(other);
  const char* src[je::kConfNSources] = {};
  for (const char*& x : src) {
    const size_t c = r.below(4);
    x = c == 0 ? ds.c_str() : c == 1 ? dother.c_str() : c == 2 ? "" : nullptr;
  }
  src[r.below(je::kConfNSources)] = ds.c_str();
  const Result p = process(src);
  check_messages(p.msgs, src, je::kConfNSources, true, &why);
  check_domains(&why);
  if (g_opt.abort_conf) why += "defused sources set abort_conf; ";
  je::opt_reset();
  for (const char* x : src) je::conf_parse_string(x != nullptr ? x : "");
  if (snapshot() != p.state) why += "sources != parsing them in order; ";

  // Now and then conf_init with MALLOC_CONF as source #4 (when /etc/malloc.conf is absent).
  char link[8];
  if (r.one_in(64) && readlink("/etc/malloc.conf", link, sizeof(link)) < 0) {
    g_stats.inits++;
    setenv("MALLOC_CONF", ds.c_str(), 1);
    je::opt_reset();
    je::conf_init(je::ConfSources{src[0], src[1], src[4]});
    const std::string got = snapshot();
    unsetenv("MALLOC_CONF");
    const char* same[je::kConfNSources] = {src[0], src[1], "", ds.c_str(), src[4]};
    process(same);
    // conf_init then applies 5.3.0's one implication between options: prof_leak_error sets
    // prof_leak (its warning goes to the writer, not into the state compared).
    if (je::config::kProf && g_opt.prof_leak_error) g_opt.prof_leak = true;
    if (got != snapshot()) why += "conf_init != its sources; ";
  }
  return why;
}

class ConfFuzzTest : public ::testing::Test {
 protected:
  void SetUp() override {
    je::opt_reset();
    je::io_set_writer(&capture);
  }
  void TearDown() override {
    je::io_set_writer(nullptr);
    je::opt_reset();
  }
};

void run_seed(uint64_t seed, unsigned count) {
  g_stats = Stats{};
  Rng r{seed};
  unsigned failures = 0, skipped = 0;
  std::string report;
  for (unsigned i = 0; i < count; i++) {
    bool single, unused;
    const std::string s = generate(r, i, &single);
    const std::string other = r.one_in(2) ? pair_list(r, 4) : generate(r, i + 1, &unused);
    if (is_known_bug(s) || is_known_bug(other)) {
      skipped++;
      continue;
    }
    const std::string why = check_all(r, s, other, single);
    if (!why.empty() && ++failures <= 10) {
      report += "  input \"" + escaped(s) + "\" (other \"" + escaped(other) + "\"): " + why + "\n";
    }
  }
  EXPECT_EQ(failures, 0u) << "seed " << seed << ", first failures:\n" << report;
  printf("seed %" PRIu64
         ": %u inputs (%u skipped as known bugs); %u messages (%u multi-line "
         "by an echoed newline, %u cut at 4095 bytes); single pairs: %u accepted, %u rejected; "
         "%u \"A,B\" checks; %u conf_init runs\n",
         seed, count, skipped, g_stats.messages, g_stats.multiline, g_stats.cut, g_stats.accepted,
         g_stats.rejected, g_stats.joined, g_stats.inits);
}

TEST_F(ConfFuzzTest, Seed1) { run_seed(1, 5000); }
TEST_F(ConfFuzzTest, Seed2) { run_seed(0x5eed2, 5000); }
TEST_F(ConfFuzzTest, Seed3) { run_seed(0xc0ffee, 5000); }
TEST_F(ConfFuzzTest, Seed4) { run_seed(0x530, 5000); }

// The checkers themselves must reject what they are meant to catch.
TEST_F(ConfFuzzTest, CheckersCatchWhatTheyShould) {
  const char* s[1] = {"narenas:x,bogus:1"};
  EXPECT_EQ(check_message("<jemalloc>: Invalid conf value: narenas:x\n", s, 1, false), "");
  EXPECT_EQ(check_message("<jemalloc>: Invalid conf pair: bogus:1\n", s, 1, false), "");
  EXPECT_NE(check_message("<jemalloc>: Invalid conf pair: bogus:1", s, 1, false), "");
  EXPECT_NE(check_message("Invalid conf pair: bogus:1\n", s, 1, false), "");
  EXPECT_NE(check_message("<jemalloc>: Invalid conf pair: bogus\n", s, 1, false), "");
  EXPECT_NE(check_message("<jemalloc>: Invalid conf pair: x,bogus:1\n", s, 1, false), "");
  EXPECT_NE(check_message("<jemalloc>: Invalid conf value: narenas:x\nmore\n", s, 1, false), "");
  EXPECT_NE(check_message("<jemalloc>: Something else\n", s, 1, false), "");
  EXPECT_NE(check_message("<jemalloc>: malloc_conf #1 (x): \"narenas:x,bogus:1\"\n", s, 1, true),
            "");
  std::string why;
  check_domains(&why);
  EXPECT_EQ(why, "");  // the defaults
  g_opt.tcache_max = (size_t{8} << 20) + 1;
  g_opt.bin_shards[3] = 0;
  g_opt.dss_prec = je::DssPrec::kPrimary;  // g_opt.dss still says "secondary"
  g_opt.stats_print_opts_buf[0] = 'z';
  check_domains(&why);
  for (const char* name : {"tcache_max", "bin_shards", "dss", "stats_print_opts"}) {
    EXPECT_NE(why.find(name), std::string::npos) << name << ": " << why;
  }
}

TEST_F(ConfFuzzTest, KnownBugsAreFixed) {
  Rng r{42};
  for (const char* const* p = kKnownBugInputs; *p != nullptr; p++) {
    EXPECT_EQ(check_all(r, *p, "narenas:2", false), "") << "[" << escaped(*p) << "]";
  }
}

}  // namespace
