// conf.cc: the MALLOC_CONF parser (see conf.h for the rules it reproduces).
#include "ctl/conf.h"

#include <limits.h>  // PATH_MAX
#include <stdlib.h>  // abort

#include <cstdint>
#include <cstring>
#include <iterator>

#include "arena/arena_options.h"
#include "arena/bin_info.h"
#include "ctl/opt.h"
#include "meta/sc.h"
#include "meta/sz.h"
#include "os/sysinfo.h"
#include "thread/thread_options.h"
#include "support/config.h"
#include "support/malloc_io.h"

namespace je {

static_assert(kOptNBins == sc::kNBins, "ctl/opt.h's bin count must follow the size classes");
static_assert(kOptLargeMaxClass == sc::kLargeMaxClass);
static_assert(kOptPage == config::kPage && kOptHugepage == config::kHugepage);
static_assert(kOptTcacheMaxLimit <= sc::kLargeMaxClass);

namespace {

/// Set by every diagnostic except those about experimental_* keys; read after each source.
constinit bool g_had_error = false;

/// Descriptions of the five sources in confirm_conf's headers (5.3.0's wording).
constexpr const char* kSourceExplain[kConfNSources] = {
    "string specified via --with-malloc-conf",
    "string pointed to by the global variable malloc_conf",
    "\"name\" of the file referenced by the symbolic link named /etc/malloc.conf",
    "value of the environment variable MALLOC_CONF",
    "string pointed to by the global variable malloc_conf_2_conf_harder",
};

/// One `key:value` pair; neither part is NUL-terminated.
struct Pair {
  const char* k;
  size_t klen;
  const char* v;
  size_t vlen;
};

bool is_key_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

/// Digit value of c in bases up to 36, or 36 when c is not a digit at all.
unsigned digit_of(char c) {
  if (c >= '0' && c <= '9') return static_cast<unsigned>(c - '0');
  if (c >= 'a' && c <= 'z') return static_cast<unsigned>(c - 'a') + 10;
  if (c >= 'A' && c <= 'Z') return static_cast<unsigned>(c - 'A') + 10;
  return 36;
}

/// Writes a fixed diagnostic and records the error (syntax errors have no key to excuse them).
void syntax_error(const char* msg) {
  io_write(msg);
  g_had_error = true;
}

/// Prints "<jemalloc>: <msg>: key:value" and records an error unless the key is experimental.
void pair_error(const char* msg, const Pair& p) {
  io_printf("<jemalloc>: %s: %.*s:%.*s\n", msg, static_cast<int>(p.klen), p.k,
            static_cast<int>(p.vlen), p.v);
  // The key is followed by the rest of the NUL-terminated string, so comparing past klen is
  // safe; "experimental_" itself ends before ':' could matter.
  constexpr char kExperimental[] = "experimental_";
  if (strncmp(p.k, kExperimental, sizeof(kExperimental) - 1) != 0) g_had_error = true;
}

bool key_is(const Pair& p, const char* key) {
  return strlen(key) == p.klen && memcmp(key, p.k, p.klen) == 0;
}

bool value_is(const Pair& p, const char* lit) {
  return strlen(lit) == p.vlen && memcmp(lit, p.v, p.vlen) == 0;
}

/// Splits the next pair off *cursor. Returns false when there is none (end of string, or a
/// syntax error, which it reports). "ends with comma" is reported by look-ahead but the pair
/// before it is still returned, which is why that message precedes the pair's own output.
bool next_pair(const char** cursor, Pair* p) {
  const char* s = *cursor;
  const char* c = s;
  while (is_key_char(*c)) c++;
  if (*c == '\0') {
    if (c != s) syntax_error("<jemalloc>: Conf string ends with key\n");
    return false;
  }
  if (*c != ':') {
    syntax_error("<jemalloc>: Malformed conf string\n");
    return false;
  }
  p->k = s;
  p->klen = static_cast<size_t>(c - s);
  p->v = ++c;
  while (*c != ',' && *c != '\0') c++;
  p->vlen = static_cast<size_t>(c - p->v);
  if (*c == ',') {
    c++;
    if (*c == '\0') syntax_error("<jemalloc>: Conf string ends with comma\n");
  }
  *cursor = c;
  return true;
}

// ---- Value parsers ---------------------------------------------------------------------------

/// jemalloc's malloc_strtoumax(s, &end, 0), re-derived from its observable behaviour: skips
/// whitespace, takes one sign ('-' negates modulo 2^64), picks base 16 for "0x"/"0X" followed by
/// a hex digit, base 8 for '0' followed by an octal digit, and otherwise stops right after a
/// leading '0'. Overflow is caught only when an accumulation step wraps to a smaller value.
/// Returns false (no digits, or overflow); on success *end is just past the last digit.
bool parse_umax(const char* s, uint64_t* out, const char** end) {
  const char* p = s;
  while (is_space(*p)) p++;
  bool neg = false;
  if (*p == '-') {
    neg = true;
    p++;
  } else if (*p == '+') {
    p++;
  }
  const char* digits = p;
  unsigned base = 10;
  if (p[0] == '0') {
    if (p[1] >= '0' && p[1] <= '7') {
      base = 8;
      p++;
    } else if ((p[1] == 'x' || p[1] == 'X') && digit_of(p[2]) < 16) {
      base = 16;
      p += 2;
    } else {
      *out = 0;
      *end = p + 1;
      return true;
    }
  }
  uint64_t v = 0;
  for (unsigned d; (d = digit_of(*p)) < base; p++) {
    const uint64_t prev = v;
    v = v * base + d;
    if (v < prev) return false;
  }
  if (p == digits) return false;
  *out = neg ? uint64_t{0} - v : v;
  *end = p;
  return true;
}

/// Number spanning exactly the value.
bool parse_whole_umax(const Pair& p, uint64_t* out) {
  const char* end;
  return parse_umax(p.v, out, &end) && end == p.v + p.vlen;
}

/// 16.16 fixed point "I", "I.F" or ".F": I < 65536; a '.' must be followed by a digit; only the
/// first 14 fractional digits count, the fraction is truncated (jemalloc's fxp_parse).
bool parse_fxp(const char* s, uint32_t* out, const char** end) {
  const char* p = s;
  if (!is_digit(*p) && *p != '.') return false;
  uint32_t ip = 0;
  for (; is_digit(*p); p++) {
    ip = ip * 10 + static_cast<uint32_t>(*p - '0');
    if (ip >= (uint32_t{1} << 16)) return false;
  }
  uint64_t frac = 0;
  uint64_t div = 1;
  if (*p == '.') {
    p++;
    if (!is_digit(*p)) return false;
    constexpr uint64_t kMaxDiv = 100000000000000;  // 10^14: frac << 16 stays below 2^64
    for (; is_digit(*p); p++) {
      if (div < kMaxDiv) {
        frac = frac * 10 + static_cast<uint64_t>(*p - '0');
        div *= 10;
      }
    }
  }
  *out = (ip << 16) + static_cast<uint32_t>((frac << 16) / div);
  *end = p;
  return true;
}

bool parse_whole_fxp(const Pair& p, uint32_t* out) {
  const char* end;
  return parse_fxp(p.v, out, &end) && end == p.v + p.vlen;
}

// ---- Typed stores ----------------------------------------------------------------------------

/// The current value of a numeric option as 64 bits (sign-extended for signed kinds).
uint64_t load_number(const OptInfo& o) {
  switch (o.kind) {
    case OptKind::kUnsigned: return *static_cast<const unsigned*>(o.ptr);
    case OptKind::kSizeT: return *static_cast<const size_t*>(o.ptr);
    case OptKind::kUint64: return *static_cast<const uint64_t*>(o.ptr);
    case OptKind::kSSizeT:
      return static_cast<uint64_t>(static_cast<int64_t>(*static_cast<const ssize_t*>(o.ptr)));
    case OptKind::kInt64: return static_cast<uint64_t>(*static_cast<const int64_t*>(o.ptr));
    default: return 0;
  }
}

/// Stores a 64-bit value into a numeric option, truncating to its width like a C cast.
void store_number(const OptInfo& o, uint64_t v) {
  switch (o.kind) {
    case OptKind::kUnsigned: *static_cast<unsigned*>(o.ptr) = static_cast<unsigned>(v); break;
    case OptKind::kSizeT: *static_cast<size_t*>(o.ptr) = static_cast<size_t>(v); break;
    case OptKind::kUint64: *static_cast<uint64_t*>(o.ptr) = v; break;
    case OptKind::kSSizeT: *static_cast<ssize_t*>(o.ptr) = static_cast<ssize_t>(v); break;
    case OptKind::kInt64: *static_cast<int64_t*>(o.ptr) = static_cast<int64_t>(v); break;
    default: break;
  }
}

bool is_signed(OptKind k) { return k == OptKind::kSSizeT || k == OptKind::kInt64; }

/// Keeps the typed companion of a choice option in step with its string.
void set_choice_companion(OptId id, unsigned m) {
  switch (id) {
    case OptId::dss: g_opt.dss_prec = static_cast<DssPrec>(m); break;
    case OptId::percpu_arena: g_opt.percpu_arena_mode = static_cast<PercpuArenaMode>(m); break;
    case OptId::thp: g_opt.thp_mode = static_cast<ThpOpt>(m); break;
    case OptId::metadata_thp: g_opt.metadata_thp_mode = static_cast<MetadataThpMode>(m); break;
    case OptId::zero_realloc: g_opt.zero_realloc_action = static_cast<ZeroReallocAction>(m); break;
    case OptId::prof_time_resolution: g_opt.prof_time_res = static_cast<ProfTimeRes>(m); break;
    case OptId::junk:  // "true", "false", "alloc", "free"
      g_opt.junk_alloc = m == 0 || m == 2;
      g_opt.junk_free = m == 0 || m == 3;
      break;
    default: break;
  }
}

// ---- Handlers by kind (each returns whether the pair was accepted) ---------------------------

bool handle_bool(const OptInfo& o, const Pair& p) {
  bool* dst = static_cast<bool*>(o.ptr);
  if (value_is(p, "true")) {
    *dst = true;
  } else if (value_is(p, "false")) {
    *dst = false;
  } else {
    pair_error("Invalid conf value", p);
    return false;
  }
  return true;
}

bool handle_number(const OptInfo& o, const Pair& p) {
  const OptDomain& d = o.domain;
  if ((d.rules & kOptDefaultKeyword) != 0 && value_is(p, "default")) {
    memcpy(o.ptr, o.def, o.size);
    return true;
  }
  uint64_t v;
  if (!parse_whole_umax(p, &v)) {
    pair_error("Invalid conf value", p);
    return false;
  }
  const uint64_t hi = (d.rules & kOptMaxIsCurrent) != 0 ? load_number(o) : d.hi;
  bool below;
  bool above;
  if (is_signed(o.kind)) {
    below = static_cast<int64_t>(v) < static_cast<int64_t>(d.lo);
    above = static_cast<int64_t>(v) > static_cast<int64_t>(hi);
  } else {
    below = v < d.lo;
    above = v > hi;
  }
  below = below && (d.checks & kOptCheckMin) != 0;
  above = above && (d.checks & kOptCheckMax) != 0;
  if ((d.checks & kOptClip) != 0) {
    store_number(o, below ? d.lo : above ? hi : v);
    return true;
  }
  if (below || above) {
    pair_error("Out-of-range conf value", p);
    return false;
  }
  store_number(o, v);
  return true;
}

bool handle_fxp(const OptInfo& o, const Pair& p) {
  uint32_t* dst = static_cast<uint32_t*>(o.ptr);
  if ((o.domain.rules & kOptMinusOne) != 0 && value_is(p, "-1")) {
    *dst = UINT32_MAX;
    return true;
  }
  uint32_t v;
  const char* end;
  const bool parsed = parse_fxp(p.v, &v, &end);
  // 5.3.0 quirk kept: narenas_ratio is parsed straight into the option, so a number followed by
  // garbage ("1x", "2 ") is reported as invalid *and* stored.
  if (parsed && o.id == OptId::narenas_ratio) *dst = v;
  if (!parsed || end != p.v + p.vlen) {
    pair_error("Invalid conf value", p);
    return false;
  }
  *dst = v;
  return true;
}

bool handle_choice(const OptInfo& o, const Pair& p) {
  const bool prefix = (o.domain.rules & kOptValuePrefix) != 0;
  for (unsigned m = 0; m < o.domain.nnames; m++) {
    const char* name = o.domain.names[m];
    const size_t n = strlen(name);
    if ((prefix ? p.vlen <= n : p.vlen == n) && memcmp(name, p.v, p.vlen) == 0) {
      *static_cast<const char**>(o.ptr) = name;
      set_choice_companion(o.id, m);
      return true;
    }
  }
  pair_error("Invalid conf value", p);
  return false;
}

/// Adds the known, not yet present letters of the value to the option's buffer; unknown letters
/// are ignored and nothing is ever rejected (5.3.0 accumulates across pairs and sources).
bool handle_letters(const OptInfo& o, const Pair& p) {
  char* buf =
      o.id == OptId::stats_print_opts ? g_opt.stats_print_opts_buf : g_opt.stats_interval_opts_buf;
  size_t len = strlen(buf);
  for (size_t i = 0; i < p.vlen; i++) {
    const char c = p.v[i];
    if (c == '\0' || strchr(kStatsLetters, c) == nullptr) continue;
    if (memchr(buf, c, len) != nullptr) continue;
    buf[len++] = c;
    buf[len] = '\0';
  }
  return true;
}

/// A free-text option (prof_prefix): the value, cut to the buffer (5.3.0's CONF_HANDLE_CHAR_P).
bool handle_string(const Pair& p) {
  const size_t n = p.vlen < kOptPathMax - 1 ? p.vlen : kOptPathMax - 1;
  memcpy(g_opt.prof_prefix_buf, p.v, n);
  g_opt.prof_prefix_buf[n] = '\0';
  return true;
}

/// One "start-end:n" segment of bin_shards / slab_sizes, optionally followed by '|'. Advances
/// *cur and decrements *left by what it consumed. Numbers use the strtoumax rules (so a segment
/// may not run past the value: ',' and NUL end every number).
bool next_segment(const char** cur, size_t* left, uint64_t* start, uint64_t* end, uint64_t* n) {
  const char* s = *cur;
  const char* e;
  if (!parse_umax(s, start, &e) || *e != '-') return false;
  if (!parse_umax(e + 1, end, &e) || *e != ':') return false;
  if (!parse_umax(e + 1, n, &e)) return false;
  if (*e == '|') e++;
  const size_t used = static_cast<size_t>(e - s);
  if (used > *left) return false;  // cannot happen for a well-delimited value; stay safe
  *left -= used;
  *cur = e;
  return true;
}

/// bin_shards: each segment sets the shard count of the bins whose classes cover [start, end]
/// (end clipped to the largest small class; a start above it is ignored). A count of 0 or above
/// 64, or a syntax error, stops with "Invalid settings" after earlier segments took effect.
bool handle_bin_shards(const Pair& p) {
  const char* cur = p.v;
  size_t left = p.vlen;
  do {
    uint64_t start;
    uint64_t end;
    uint64_t n;
    if (!next_segment(&cur, &left, &start, &end, &n) || n == 0 || n > kOptBinShardsMax) {
      pair_error("Invalid settings for bin_shards", p);
      return false;
    }
    if (start > sc::kSmallMaxClass) continue;
    if (end > sc::kSmallMaxClass) end = sc::kSmallMaxClass;
    const szind_t i1 = sz::size2index(static_cast<size_t>(start));
    const szind_t i2 = sz::size2index(static_cast<size_t>(end));
    for (szind_t i = i1; i <= i2; i++) g_opt.bin_shards[i] = static_cast<uint8_t>(n);
  } while (left > 0);
  return true;
}

/// slab_sizes: "default" restores every bin's geometry; each segment sets the slab pages of the
/// bins whose region size lies in [start, end], clamped to what the bin can use (at least one
/// region, at most kSlabMaxRegs regions). The page count goes through an int first, as in 5.3.0.
bool handle_slab_sizes(const Pair& p) {
  if (value_is(p, "default")) {
    g_opt.slab_sizes.fill(0);
    return true;
  }
  const char* cur = p.v;
  size_t left = p.vlen;
  do {
    uint64_t start;
    uint64_t end;
    uint64_t pgs;
    if (!next_segment(&cur, &left, &start, &end, &pgs)) {
      pair_error("Invalid settings for slab_sizes", p);
      return false;
    }
    const size_t guess = static_cast<size_t>(static_cast<int64_t>(static_cast<int>(pgs)));
    for (unsigned i = 0; i < sc::kNBins; i++) {
      const size_t reg = sc::kBinInfo[i].reg_size;
      if (reg < start || reg > end) continue;
      g_opt.slab_sizes[i] = static_cast<uint16_t>(bin_slab_pages_clamp(i, guess));
    }
  } while (left > 0);
  return true;
}

/// lg_tcache_max:N sets tcache_max = 2^min(N, 23).
bool handle_lg_tcache_max(const Pair& p) {
  uint64_t lg;
  if (!parse_whole_umax(p, &lg)) {
    pair_error("Invalid conf value", p);
    return false;
  }
  if (lg > kOptLgTcacheMaxLimit) lg = kOptLgTcacheMaxLimit;
  g_opt.tcache_max = size_t{1} << lg;
  return true;
}

/// hpa_hugification_threshold_ratio:R (0 <= R <= 1) sets the threshold to R x hugepage.
bool handle_hugification_ratio(const Pair& p) {
  uint32_t ratio;
  if (!parse_whole_fxp(p, &ratio) || ratio > kOptFxpOne) {
    pair_error("Invalid conf value", p);
    return false;
  }
  g_opt.hpa_hugification_threshold = static_cast<size_t>((uint64_t{kOptHugepage} * ratio) >> 16);
  return true;
}

/// preset:NAME (ours) writes every option of ours that places, keeps or returns memory from one
/// of the typed presets (Placement, ReturnPolicy and the thread caches' growth), as if each key
/// had been given at this point of the string: keys after it override single options.
bool handle_preset(const Pair& p) {
  struct Preset {
    Placement placement;
    ReturnPolicy policy;
    size_t tcache_grow_bytes;
  };
  static constexpr Preset kPresets[] = {
      {Placement::ours(), ReturnPolicy::ours(), ThreadOptions{}.tcache_grow_bytes},
      {Placement::jemalloc530(), ReturnPolicy::jemalloc530(), 0},
  };
  static_assert(std::size(kPresets) == std::size(kPresetNames));
  for (size_t i = 0; i < std::size(kPresets); i++) {
    if (!value_is(p, kPresetNames[i])) continue;
    const Preset& x = kPresets[i];
    g_opt.bounded_coalesce = x.placement.bounded_coalesce;
    g_opt.extent_best_fit = x.placement.best_fit;
    g_opt.reuse_before_grow = x.placement.reuse_before_grow;
    g_opt.borrow_dirty = x.placement.borrow_dirty;
    g_opt.extent_cache_bytes = x.placement.extent_cache_bytes;
    g_opt.decay_hold_peak = x.policy.hold_peak;
    g_opt.oversize_hold = x.policy.oversize_hold;
    g_opt.idle_arena_decay = x.policy.idle_arena_decay;
    g_opt.purge_on_grow = x.policy.purge_on_grow;
    g_opt.idle_return = x.policy.idle_return;
    g_opt.tcache_grow_bytes = x.tcache_grow_bytes;
    return true;
  }
  pair_error("Invalid conf value", p);
  return false;
}

/// The entry a key selects: an exact parseable key, else the first prefix-key entry the key is
/// a prefix of (5.3.0 compared those three keys with strncmp over the key's length only).
const OptInfo* lookup(const Pair& p) {
  const OptInfo* o = opt_info_find(p.k, p.klen);
  if (o != nullptr && (o->flags & kOptParse) != 0) return o;
  size_t n;
  const OptInfo* all = opt_info_table(&n);
  for (size_t i = 0; i < n; i++) {
    const OptInfo& e = all[i];
    if ((e.flags & kOptPrefixKey) != 0 && p.klen <= strlen(e.name) &&
        memcmp(e.name, p.k, p.klen) == 0) {
      return &e;
    }
  }
  return nullptr;
}

/// Applies one pair (second pass). Returns whether it was accepted.
bool apply_pair(const Pair& p) {
  const OptInfo* o = lookup(p);
  if (o == nullptr) {
    pair_error("Invalid conf pair", p);
    return false;
  }
  switch (o->kind) {
    case OptKind::kBool: return handle_bool(*o, p);
    case OptKind::kUnsigned:
    case OptKind::kSizeT:
    case OptKind::kSSizeT:
    case OptKind::kUint64:
    case OptKind::kInt64: return handle_number(*o, p);
    case OptKind::kFxp: return handle_fxp(*o, p);
    case OptKind::kChoice: return handle_choice(*o, p);
    case OptKind::kLetters: return handle_letters(*o, p);
    case OptKind::kString: return handle_string(p);
    case OptKind::kBinShards: return handle_bin_shards(p);
    case OptKind::kSlabPages: return handle_slab_sizes(p);
    case OptKind::kAlias:
      if (o->id == OptId::lg_tcache_max) return handle_lg_tcache_max(p);
      if (o->id == OptId::hpa_hugification_threshold_ratio) return handle_hugification_ratio(p);
      if (o->id == OptId::preset) return handle_preset(p);
      break;
    case OptKind::kNotBuilt: break;
  }
  pair_error("Invalid conf pair", p);
  return false;
}

/// First pass over one source: only confirm_conf, and without value diagnostics (syntax
/// messages still print, as in 5.3.0).
void first_pass(const char* opts) {
  Pair p;
  while (*opts != '\0' && next_pair(&opts, &p)) {
    if (!key_is(p, "confirm_conf")) continue;
    if (value_is(p, "true")) {
      g_opt.confirm_conf = true;
    } else if (value_is(p, "false")) {
      g_opt.confirm_conf = false;
    }
  }
}

/// Second pass over one source: every pair, with diagnostics and confirm_conf echo.
void second_pass(const char* opts) {
  Pair p;
  while (*opts != '\0' && next_pair(&opts, &p)) {
    if (apply_pair(p) && g_opt.confirm_conf) {
      io_printf("<jemalloc>: -- Set conf value: %.*s:%.*s\n", static_cast<int>(p.klen), p.k,
                static_cast<int>(p.vlen), p.v);
    }
  }
}

}  // namespace

void conf_process_sources(const char* const (&sources)[kConfNSources]) {
  g_had_error = false;
  for (const char* s : sources) {
    if (s != nullptr) first_pass(s);
  }
  for (unsigned i = 0; i < kConfNSources; i++) {
    const char* s = sources[i];
    if (g_opt.confirm_conf) {
      io_printf("<jemalloc>: malloc_conf #%u (%s): \"%s\"\n", i + 1, kSourceExplain[i],
                s != nullptr ? s : "");
    }
    if (s == nullptr) continue;
    second_pass(s);
    if (g_opt.abort_conf && g_had_error) {
      io_write("<jemalloc>: Abort (abort_conf:true) on invalid conf value (see above).\n");
      abort();
    }
  }
}

void conf_init(const ConfSources& s) {
  // --with-jemalloc-prefix=<p> renames both sources: /etc/<p>malloc.conf and <P>MALLOC_CONF.
  // The link's target is the option string; its buffer must outlive both passes.
  char link[PATH_MAX + 1];
  if (sysinfo::read_link("/etc/" JE_PUBLIC_PREFIX_STR "malloc.conf", link, sizeof(link)) < 0)
    link[0] = '\0';
  const char* sources[kConfNSources] = {s.built_in, s.global_malloc_conf, link,
                                        sysinfo::get_env(JE_ENV_PREFIX_STR "MALLOC_CONF"),
                                        s.conf_2_conf_harder};
  conf_process_sources(sources);
  // 5.3.0, after reading every source: prof_leak_error implies prof_leak, and it warns (once)
  // when no final dump will show the leaks.
  if (config::kProf && g_opt.prof_leak_error) {
    g_opt.prof_leak = true;
    if (!g_opt.prof_final) io_write("<jemalloc>: prof_leak_error is set w/o prof_final.\n");
  }
}

bool conf_parse_string(const char* s) {
  g_had_error = false;
  second_pass(s);
  return !g_had_error;
}

void conf_adopt_boot_values() {
  g_opt.narenas = g_arena_opt.narenas;
  g_opt.oversize_threshold = g_arena_opt.oversize_threshold;
  g_opt.max_background_threads = g_arena_opt.max_background_threads;
  // On in every --enable-debug build, whatever MALLOC_CONF says: opt.safety_checks shows it.
  g_opt.safety_checks = g_arena_opt.safety_checks;
}

}  // namespace je
