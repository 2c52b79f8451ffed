// ctl_tree.cc: the mallctl name tree of jemalloc 5.3.0 (plus our names) and its lookups.
//
// The tables below are the single definition of the namespace: name lookup, MIB lookup and
// the enumeration compared with the golden name list all walk them. Children are listed in
// 5.3.0's order, so a MIB obtained here equals the real library's (verified against Debian's
// libjemalloc2 with mallctlnametomib). The `stats` subtree lives in ctl_stats.cc and the
// `arena.<i>` one in ctl_arena.cc, next to their handlers.
#include "ctl/ctl_tree.h"

#include <array>
#include <cstdint>
#include <cstring>

#include "arena/bin_info.h"
#include "ctl/ctl_handlers.h"
#include "ctl/ctl_stats.h"
#include "meta/sc.h"
#include "support/config.h"

namespace je::ctl {

namespace {

// ---- small generic handlers --------------------------------------------------------------------

/// A read-only constant.
template <class T, T V>
int ro_const(Req& r) {
  if (int e = readonly(r)) return e;
  T v = V;
  return read_out(r, v);
}

template <bool V>
int config_bool(Req& r) {
  return ro_const<bool, V>(r);
}

/// arenas.bin.<j>.<field>: one field of the run-time bin geometry, read as T.
template <class T, uint32_t BinGeometry::*Field>
int arenas_bin_field(Req& r) {
  if (int e = readonly(r)) return e;
  T v = g_bin_geo[r.mib[2]].*Field;
  return read_out(r, v);
}

// ---- index checks ------------------------------------------------------------------------------

bool index_bin(const size_t*, size_t, size_t i) { return i < sc::kNBins; }
bool index_lextent(const size_t*, size_t, size_t i) { return i < sc::kNLExtents; }
bool index_stats_arena(const size_t*, size_t, size_t i) { return stats_arena_valid(i); }

// ---- version, epoch, background threads: leaves of the root -------------------------------------

// ---- thread.* --------------------------------------------------------------------------------

constexpr Node kThreadTcache[] = {
    leaf("enabled", &node_thread_tcache_enabled),
    leaf("flush", &node_thread_tcache_flush),
};
constexpr Node kThreadPeak[] = {
    leaf("read", &node_thread_peak_read),
    leaf("reset", &node_thread_peak_reset),
};
constexpr Node kThreadProf[] = {
    leaf("name", &node_thread_prof_name),
    leaf("active", &node_thread_prof_active),
};
constexpr Node kThread[] = {
    leaf("arena", &node_thread_arena),
    leaf("allocated", &node_thread_allocated),
    leaf("allocatedp", &node_thread_allocatedp),
    leaf("deallocated", &node_thread_deallocated),
    leaf("deallocatedp", &node_thread_deallocatedp),
    named("tcache", kThreadTcache),
    named("peak", kThreadPeak),
    named("prof", kThreadProf),
    leaf("idle", &node_thread_idle),
};

// ---- config.* (build properties) -------------------------------------------------------------

constexpr Node kConfig[] = {
    leaf("cache_oblivious", &config_bool<config::kCacheOblivious>),
    leaf("debug", &config_bool<config::kDebug>),
    leaf("fill", &config_bool<true>),  // opt.junk / opt.zero are supported
    leaf("lazy_lock", &config_bool<false>),
    leaf("malloc_conf", &node_config_malloc_conf),
    leaf("opt_safety_checks", &config_bool<config::kDebug>),
    leaf("prof", &config_bool<config::kProf>),
    leaf("prof_libgcc", &config_bool<config::kProf>),
    leaf("prof_libunwind", &config_bool<false>),
    leaf("stats", &config_bool<config::kStats>),
    leaf("utrace", &config_bool<false>),
    leaf("xmalloc", &config_bool<false>),
};

// ---- opt.* --------------------------------------------------------------------------------------
// 5.3.0's order, then ours. Every leaf reads the option table (ctl/opt.h) at call time; a
// name the table does not export (prof*, utrace, xmalloc, lg_san_uaf_align) answers ENOENT,
// like a 5.3.0 build without those features.

// clang-format off
constexpr const char* kOptNames[] = {
    "abort", "abort_conf", "cache_oblivious", "trust_madvise", "confirm_conf", "hpa",
    "hpa_slab_max_alloc", "hpa_hugification_threshold", "hpa_hugify_delay_ms",
    "hpa_min_purge_interval_ms", "hpa_dirty_mult", "hpa_sec_nshards", "hpa_sec_max_alloc",
    "hpa_sec_max_bytes", "hpa_sec_bytes_after_flush", "hpa_sec_batch_fill_extra", "metadata_thp",
    "retain", "dss", "narenas", "percpu_arena", "oversize_threshold", "mutex_max_spin",
    "background_thread", "max_background_threads", "dirty_decay_ms", "muzzy_decay_ms",
    "stats_print", "stats_print_opts", "stats_interval", "stats_interval_opts", "junk", "zero",
    "utrace", "xmalloc", "experimental_infallible_new", "tcache", "tcache_max",
    "tcache_nslots_small_min", "tcache_nslots_small_max", "tcache_nslots_large",
    "lg_tcache_nslots_mul", "tcache_gc_incr_bytes", "tcache_gc_delay_bytes",
    "lg_tcache_flush_small_div", "lg_tcache_flush_large_div", "thp", "lg_extent_max_active_fit",
    "prof", "prof_prefix", "prof_active", "prof_thread_active_init", "lg_prof_sample",
    "lg_prof_interval", "prof_gdump", "prof_final", "prof_leak", "prof_leak_error", "prof_accum",
    "prof_recent_alloc_max", "prof_stats", "prof_sys_thread_name", "prof_time_resolution",
    "lg_san_uaf_align", "zero_realloc",
    // Ours.
    "bounded_coalesce", "idle_arena_decay", "reuse_before_grow", "extent_best_fit",
    "purge_on_grow", "borrow_dirty", "decay_hold_peak", "oversize_hold", "safety_checks",
    "extent_cache_bytes", "tcache_grow_bytes", "idle_return", "kept_max_bytes",
    // jemalloc 5.3.1's (the two it exports as opt.*).
    "prof_bt_max", "process_madvise_max_batch",
};
// clang-format on
constexpr size_t kNOpt = sizeof(kOptNames) / sizeof(kOptNames[0]);

constexpr std::array<Node, kNOpt> build_opt_nodes() {
  std::array<Node, kNOpt> a{};
  for (size_t i = 0; i < kNOpt; i++) a[i] = leaf(kOptNames[i], &node_opt);
  return a;
}
constexpr std::array<Node, kNOpt> kOpt = build_opt_nodes();

// ---- tcache.* --------------------------------------------------------------------------------

constexpr Node kTcache[] = {
    leaf("create", &node_tcache_create),
    leaf("flush", &node_tcache_flush),
    leaf("destroy", &node_tcache_destroy),
};

// ---- arenas.* --------------------------------------------------------------------------------

constexpr Node kArenasBinElem[] = {
    leaf("size", &arenas_bin_field<size_t, &BinGeometry::reg_size>),
    leaf("nregs", &arenas_bin_field<uint32_t, &BinGeometry::nregs>),
    leaf("slab_size", &arenas_bin_field<size_t, &BinGeometry::slab_size>),
    leaf("nshards", &arenas_bin_field<uint32_t, &BinGeometry::nshards>),
};
constexpr Node kArenasBinI = named("", kArenasBinElem);
constexpr Node kArenasLextentElem[] = {
    leaf("size", &node_arenas_lextent_size),
};
constexpr Node kArenasLextentI = named("", kArenasLextentElem);
constexpr Node kArenas[] = {
    leaf("narenas", &node_arenas_narenas),
    leaf("dirty_decay_ms", &node_arenas_dirty_decay_ms),
    leaf("muzzy_decay_ms", &node_arenas_muzzy_decay_ms),
    leaf("quantum", &ro_const<size_t, config::kQuantum>),
    leaf("page", &ro_const<size_t, config::kPage>),
    leaf("tcache_max", &node_arenas_tcache_max),
    leaf("nbins", &ro_const<unsigned, sc::kNBins>),
    leaf("nhbins", &node_arenas_nhbins),
    indexed("bin", &index_bin, kArenasBinI),
    leaf("nlextents", &ro_const<unsigned, sc::kNLExtents>),
    indexed("lextent", &index_lextent, kArenasLextentI),
    leaf("create", &node_arenas_create),
    leaf("lookup", &node_arenas_lookup),
    // Ours, after 5.3.0's names so that their MIBs stay the same.
    leaf("bounded_coalesce", &node_arenas_bounded_coalesce),
    // jemalloc 5.3.1's, likewise after 5.3.0's (5.3.1 has it after `page`).
    leaf("hugepage", &ro_const<size_t, config::kHugepage>),
};

// ---- arena.<i> ---------------------------------------------------------------------------------

constexpr Node kArenaI = named("", kArenaChildren);

// ---- prof.* (ctl_prof.cc) ----------------------------------------------------------------------

// prof.stats.{bins,lextents}.<i> exist only with prof:true,prof_stats:true (the index checks).
constexpr Node kProfStatsBinElem[] = {
    leaf("live", &node_prof_stats_bins_live),
    leaf("accum", &node_prof_stats_bins_accum),
};
constexpr Node kProfStatsLextentElem[] = {
    leaf("live", &node_prof_stats_lextents_live),
    leaf("accum", &node_prof_stats_lextents_accum),
};
constexpr Node kProfStatsBinI = named("", kProfStatsBinElem);
constexpr Node kProfStatsLextentI = named("", kProfStatsLextentElem);
constexpr Node kProfStats[] = {
    indexed("bins", &index_prof_stats_bin, kProfStatsBinI),
    indexed("lextents", &index_prof_stats_lextent, kProfStatsLextentI),
};
constexpr Node kProf[] = {
    leaf("thread_active_init", &node_prof_thread_active_init),
    leaf("active", &node_prof_active),
    leaf("dump", &node_prof_dump),
    leaf("gdump", &node_prof_gdump),
    leaf("prefix", &node_prof_prefix),
    leaf("reset", &node_prof_reset),
    leaf("interval", &node_prof_interval),
    leaf("lg_sample", &node_prof_lg_sample),
    leaf("log_start", &node_prof_log_start),
    leaf("log_stop", &node_prof_log_stop),
    named("stats", kProfStats),
};

// ---- experimental.* (every leaf but hooks.install/remove, arenas.<i>.pactivep and
// thread.activity_callback, which answer ENOENT) ----

constexpr Node kExpHooks[] = {
    leaf("install", &node_absent),
    leaf("remove", &node_absent),
    leaf("prof_backtrace", &node_experimental_hooks_prof_backtrace),
    leaf("prof_dump", &node_experimental_hooks_prof_dump),
    leaf("safety_check_abort", &node_experimental_hooks_safety_check_abort),
};
constexpr Node kExpUtilization[] = {
    leaf("query", &node_experimental_utilization_query),
    leaf("batch_query", &node_experimental_utilization_batch_query),
};
constexpr Node kExpArenasElem[] = {
    leaf("pactivep", &node_absent),
};
constexpr Node kExpArenasI = named("", kExpArenasElem);
constexpr Node kExpProfRecent[] = {
    leaf("alloc_max", &node_experimental_prof_recent_alloc_max),
    leaf("alloc_dump", &node_experimental_prof_recent_alloc_dump),
};
constexpr Node kExpThread[] = {
    leaf("activity_callback", &node_absent),
};
constexpr Node kExperimental[] = {
    named("hooks", kExpHooks),
    named("utilization", kExpUtilization),
    indexed("arenas", &index_stats_arena, kExpArenasI),
    leaf("arenas_create_ext", &node_experimental_arenas_create_ext),
    named("prof_recent", kExpProfRecent),
    leaf("batch_alloc", &node_experimental_batch_alloc),
    named("thread", kExpThread),
};

// ---- approximate_stats.* (jemalloc 5.3.1) ------------------------------------------------------

constexpr Node kApproximateStats[] = {
    leaf("active", &node_approximate_stats_active),
};

// ---- the root ----------------------------------------------------------------------------------

constexpr Node kRootChildren[] = {
    leaf("version", &node_version),
    leaf("epoch", &node_epoch),
    leaf("background_thread", &node_background_thread),
    leaf("max_background_threads", &node_max_background_threads),
    named("thread", kThread),
    named("config", kConfig),
    named("opt", kOpt),
    named("tcache", kTcache),
    indexed("arena", &index_arena, kArenaI),
    named("arenas", kArenas),
    named("prof", kProf),
    named("stats", kStatsChildren),
    named("experimental", kExperimental),
    // jemalloc 5.3.1's, after 5.3.0's names so that their MIBs stay the same.
    named("approximate_stats", kApproximateStats),
};
constexpr Node kRoot = named("", kRootChildren);

// ---- lookups -----------------------------------------------------------------------------------

const char* component_end(const char* s) {
  while (*s != '\0' && *s != '.') s++;
  return s;
}

bool name_matches(const char* child, const char* elm, size_t elen) {
  return std::strlen(child) == elen && std::strncmp(child, elm, elen) == 0;
}

void walk(const Node* node, char* buf, size_t len, void (*visit)(const char*, void*), void* ctx) {
  if (node->handler != nullptr) {
    buf[len] = '\0';
    visit(buf, ctx);
    return;
  }
  auto descend = [&](const char* part, const Node* child) {
    size_t n = len;
    if (n > 0) buf[n++] = '.';
    size_t plen = std::strlen(part);
    std::memcpy(buf + n, part, plen);
    walk(child, buf, n + plen, visit, ctx);
  };
  if (node->index != nullptr) {
    descend("<i>", node->children);
    return;
  }
  for (size_t j = 0; j < node->nchildren; j++) descend(node->children[j].name, &node->children[j]);
}

}  // namespace

uint64_t parse_index(const char* s) {
  constexpr uint64_t kInvalid = UINT64_MAX;
  const char* p = s;
  bool neg = false;
  while (*p == '\t' || *p == '\n' || *p == '\v' || *p == '\f' || *p == '\r' || *p == ' ') p++;
  if (*p == '-' || *p == '+') {
    neg = *p == '-';
    p++;
  }
  const char* digits = p;
  if (*p == '0') {
    // 5.3.0's parser sniffs an octal/hex prefix even in base 10: "0" followed by anything but
    // 0-7 or "x<hex digit>" ends the number at 0 (so "08" reads as 0).
    char c = p[1];
    bool octal_digit = c >= '0' && c <= '7';
    bool hex_prefix =
        (c == 'x' || c == 'X') && ((p[2] >= '0' && p[2] <= '9') || (p[2] >= 'a' && p[2] <= 'f') ||
                                   (p[2] >= 'A' && p[2] <= 'F'));
    if (!octal_digit && !hex_prefix) return 0;
  }
  uint64_t v = 0;
  while (*p >= '0' && *p <= '9') {
    uint64_t prev = v;
    v = v * 10 + static_cast<uint64_t>(*p - '0');
    if (v < prev) return kInvalid;  // overflow, detected the way 5.3.0 does
    p++;
  }
  if (p == digits) return kInvalid;
  return neg ? uint64_t{0} - v : v;
}

int lookup_name(const char* name, const Node** out, size_t* mib, size_t* depth) {
  const char* elm = name;
  const char* dot = component_end(elm);
  if (dot == elm) return ENOENT;
  const Node* node = &kRoot;
  for (size_t i = 0; i < *depth; i++) {
    if (node->handler != nullptr) return ENOENT;
    if (node->index == nullptr) {
      const Node* found = nullptr;
      size_t elen = static_cast<size_t>(dot - elm);
      for (size_t j = 0; j < node->nchildren; j++) {
        if (name_matches(node->children[j].name, elm, elen)) {
          found = &node->children[j];
          mib[i] = j;
          break;
        }
      }
      if (found == nullptr) return ENOENT;
      node = found;
    } else {
      uint64_t index = parse_index(elm);
      if (index == UINT64_MAX || !node->index(mib, i, index)) return ENOENT;
      mib[i] = index;
      node = node->children;
    }
    if (node->handler != nullptr || *dot == '\0') {
      if (*dot != '\0') return ENOENT;  // more components than this path has
      *depth = i + 1;
      break;
    }
    elm = dot + 1;
    dot = component_end(elm);
  }
  *out = node;
  return 0;
}

int lookup_mib(const size_t* mib, size_t miblen, const Node** out) {
  const Node* node = &kRoot;
  for (size_t i = 0; i < miblen; i++) {
    if (node->handler != nullptr) return ENOENT;
    if (node->index == nullptr) {
      if (mib[i] >= node->nchildren) return ENOENT;
      node = &node->children[mib[i]];
    } else {
      if (!node->index(mib, i, mib[i])) return ENOENT;
      node = node->children;
    }
  }
  *out = node;
  return 0;
}

void walk_names(void (*visit)(const char* name, void* ctx), void* ctx) {
  char buf[256];
  walk(&kRoot, buf, 0, visit, ctx);
}

}  // namespace je::ctl
