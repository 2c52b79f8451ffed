// stats_print.cc: malloc_stats_print -- option letters, general information, global statistics
// and the arena views (see stats_print.h; one arena's section is in stats_print_arena.cc).
#include "ctl/stats_print.h"

#include <cerrno>
#include <cstdint>
#include <sys/types.h>

#include "ctl/ctl.h"
#include "ctl/stats_print_emitter.h"
#include "ctl/stats_print_impl.h"
#include "support/malloc_io.h"

namespace je {

namespace stats {

// ---- Mutex counters (shared with the arena tables) ---------------------------------------------

namespace {

constexpr const char* kMutexCounterNames[7] = {
    "num_ops",         "num_wait",      "num_spin_acq", "num_owner_switch",
    "total_wait_time", "max_wait_time", "max_num_thds"};

/// 5.3.0's global mutexes, in its order (`stats.mutexes.<m>`).
constexpr const char* kGlobalMutexNames[] = {
    "background_thread", "max_per_bg_thd",   "ctl",       "prof", "prof_thds_data", "prof_dump",
    "prof_recent_alloc", "prof_recent_dump", "prof_stats"};

}  // namespace

MutexReader::MutexReader(const char* prefix) {
  char name[128];
  for (unsigned k = 0; k < 7; k++) {
    je_snprintf(name, sizeof(name), "%s.%s", prefix, kMutexCounterNames[k]);
    leaf_[k].init(name);
  }
}

MutexReader& MutexReader::set(size_t pos, size_t v) {
  for (Mib& m : leaf_) m.set(pos, v);
  return *this;
}

void MutexReader::read(MutexCounters* out) const {
  leaf_[0].read(&out->num_ops);
  leaf_[1].read(&out->num_wait);
  leaf_[2].read(&out->num_spin_acq);
  leaf_[3].read(&out->num_owner_switch);
  leaf_[4].read(&out->total_wait_time);
  leaf_[5].read(&out->max_wait_time);
  leaf_[6].read(&out->max_num_thds);
}

unsigned mutex_columns(Row& row) {
  unsigned first = row.n;
  // Counter columns are 16 wide (the 32-bit one 12), rate columns 8 (total_wait's 10).
  row.add(Justify::kRight, 16, Value::title("n_lock_ops"));
  row.add(Justify::kRight, 8, Value::title("(#/sec)"));
  row.add(Justify::kRight, 16, Value::title("n_waiting"));
  row.add(Justify::kRight, 8, Value::title("(#/sec)"));
  row.add(Justify::kRight, 16, Value::title("n_spin_acq"));
  row.add(Justify::kRight, 8, Value::title("(#/sec)"));
  row.add(Justify::kRight, 16, Value::title("n_owner_switch"));
  row.add(Justify::kRight, 8, Value::title("(#/sec)"));
  row.add(Justify::kRight, 16, Value::title("total_wait_ns"));
  row.add(Justify::kRight, 10, Value::title("(#/sec)"));
  row.add(Justify::kRight, 16, Value::title("max_wait_ns"));
  row.add(Justify::kRight, 12, Value::title("max_n_thds"));
  return first;
}

void mutex_fill(Row& row, unsigned first, const MutexCounters& m, uint64_t uptime_ns) {
  const uint64_t counted[5] = {m.num_ops, m.num_wait, m.num_spin_acq, m.num_owner_switch,
                               m.total_wait_time};
  for (unsigned k = 0; k < 5; k++) {
    row.cols[first + 2 * k].value = Value::uns(counted[k]);
    row.cols[first + 2 * k + 1].value = Value::uns(rate_per_second(counted[k], uptime_ns));
  }
  row.cols[first + 10].value = Value::uns(m.max_wait_time);
  row.cols[first + 11].value = Value::uns(m.max_num_thds);
}

void mutex_json(Emitter& e, const MutexCounters& m) {
  e.json_kv("num_ops", Value::uns(m.num_ops));
  e.json_kv("num_wait", Value::uns(m.num_wait));
  e.json_kv("num_spin_acq", Value::uns(m.num_spin_acq));
  e.json_kv("num_owner_switch", Value::uns(m.num_owner_switch));
  e.json_kv("total_wait_time", Value::uns(m.total_wait_time));
  e.json_kv("max_wait_time", Value::uns(m.max_wait_time));
  e.json_kv("max_num_thds", Value::uns(m.max_num_thds));
}

namespace {

// ---- General information -----------------------------------------------------------------------

enum class OptType : uint8_t { kBool, kStr, kUnsigned, kSize, kSsize, kInt64, kUint64, kFxp };

struct OptLine {
  const char* name;
  OptType type;
  const char* note;  // the run-time setting shown next to the option in the text form
};

/// 5.3.0's option lines in its order (stats_print and stats_print_opts do appear twice there),
/// then ours. An option that cannot be read is left out, as 5.3.0 does for absent features.
constexpr OptLine kOptLines[] = {
    {"abort", OptType::kBool, nullptr},
    {"abort_conf", OptType::kBool, nullptr},
    {"cache_oblivious", OptType::kBool, nullptr},
    {"confirm_conf", OptType::kBool, nullptr},
    {"retain", OptType::kBool, nullptr},
    {"dss", OptType::kStr, nullptr},
    {"narenas", OptType::kUnsigned, nullptr},
    {"percpu_arena", OptType::kStr, nullptr},
    {"oversize_threshold", OptType::kSize, nullptr},
    {"hpa", OptType::kBool, nullptr},
    {"hpa_slab_max_alloc", OptType::kSize, nullptr},
    {"hpa_hugification_threshold", OptType::kSize, nullptr},
    {"hpa_hugify_delay_ms", OptType::kUint64, nullptr},
    {"hpa_min_purge_interval_ms", OptType::kUint64, nullptr},
    {"hpa_dirty_mult", OptType::kFxp, nullptr},
    {"hpa_sec_nshards", OptType::kSize, nullptr},
    {"hpa_sec_max_alloc", OptType::kSize, nullptr},
    {"hpa_sec_max_bytes", OptType::kSize, nullptr},
    {"hpa_sec_bytes_after_flush", OptType::kSize, nullptr},
    {"hpa_sec_batch_fill_extra", OptType::kSize, nullptr},
    {"metadata_thp", OptType::kStr, nullptr},
    {"mutex_max_spin", OptType::kInt64, nullptr},
    {"background_thread", OptType::kBool, "background_thread"},
    {"dirty_decay_ms", OptType::kSsize, "arenas.dirty_decay_ms"},
    {"muzzy_decay_ms", OptType::kSsize, "arenas.muzzy_decay_ms"},
    {"lg_extent_max_active_fit", OptType::kSize, nullptr},
    {"junk", OptType::kStr, nullptr},
    {"zero", OptType::kBool, nullptr},
    {"utrace", OptType::kBool, nullptr},
    {"xmalloc", OptType::kBool, nullptr},
    {"experimental_infallible_new", OptType::kBool, nullptr},
    {"tcache", OptType::kBool, nullptr},
    {"tcache_max", OptType::kSize, nullptr},
    {"tcache_nslots_small_min", OptType::kUnsigned, nullptr},
    {"tcache_nslots_small_max", OptType::kUnsigned, nullptr},
    {"tcache_nslots_large", OptType::kUnsigned, nullptr},
    {"lg_tcache_nslots_mul", OptType::kSsize, nullptr},
    {"tcache_gc_incr_bytes", OptType::kSize, nullptr},
    {"tcache_gc_delay_bytes", OptType::kSize, nullptr},
    {"lg_tcache_flush_small_div", OptType::kUnsigned, nullptr},
    {"lg_tcache_flush_large_div", OptType::kUnsigned, nullptr},
    {"thp", OptType::kStr, nullptr},
    {"prof", OptType::kBool, nullptr},
    {"prof_prefix", OptType::kStr, nullptr},
    {"prof_active", OptType::kBool, "prof.active"},
    {"prof_thread_active_init", OptType::kBool, "prof.thread_active_init"},
    {"lg_prof_sample", OptType::kSsize, "prof.lg_sample"},
    {"prof_accum", OptType::kBool, nullptr},
    {"lg_prof_interval", OptType::kSsize, nullptr},
    {"prof_gdump", OptType::kBool, nullptr},
    {"prof_final", OptType::kBool, nullptr},
    {"prof_leak", OptType::kBool, nullptr},
    {"prof_leak_error", OptType::kBool, nullptr},
    {"stats_print", OptType::kBool, nullptr},
    {"stats_print_opts", OptType::kStr, nullptr},
    {"stats_print", OptType::kBool, nullptr},
    {"stats_print_opts", OptType::kStr, nullptr},
    {"stats_interval", OptType::kInt64, nullptr},
    {"stats_interval_opts", OptType::kStr, nullptr},
    {"zero_realloc", OptType::kStr, nullptr},
    // Ours (doc/options.md): whether the coalescing bound is on, whether quiet arenas decay on
    // other threads' ticks, whether dirty reuse may ignore lg_extent_max_active_fit before
    // growing, whether extents are reused best fit, whether growth purges idle dirty pages,
    // whether large allocations may use another arena's cached pages, whether dirty decay
    // spares the dip below the recent peak (and the oversize arena's frees with it), whether
    // misuse is detected (safety_checks).
    {"bounded_coalesce", OptType::kBool, nullptr},
    {"idle_arena_decay", OptType::kBool, nullptr},
    {"reuse_before_grow", OptType::kBool, nullptr},
    {"extent_best_fit", OptType::kBool, nullptr},
    {"purge_on_grow", OptType::kBool, nullptr},
    {"borrow_dirty", OptType::kBool, nullptr},
    {"decay_hold_peak", OptType::kBool, nullptr},
    {"oversize_hold", OptType::kBool, nullptr},
    {"safety_checks", OptType::kBool, nullptr},
    {"extent_cache_bytes", OptType::kSize, nullptr},
    {"tcache_grow_bytes", OptType::kSize, nullptr},
    {"idle_return", OptType::kBool, nullptr},
    {"kept_max_bytes", OptType::kSize, nullptr},
};

/// A 16.16 fixed-point option as 5.3.0 prints it: "-1" for the all-ones "unlimited" value,
/// else "<integer>.<fraction>" with the fraction's first 14 decimal digits (truncated, trailing
/// zeros dropped, "0" when there is none): 0.1 shows as "0.09999084472656".
void format_fxp(uint32_t v, char* buf, size_t size) {
  if (v == UINT32_MAX) {
    je_snprintf(buf, size, "-1");
    return;
  }
  // frac / 2^16 == frac * 5^16 / 10^16 exactly; keep 14 digits.
  constexpr uint64_t kFive16 = 152587890625ull;
  uint64_t digits = (uint64_t{v & 0xffffu} * kFive16) / 100;
  unsigned width = 14;
  while (digits != 0 && digits % 10 == 0) {
    digits /= 10;
    width--;
  }
  if (digits == 0) {
    je_snprintf(buf, size, "%u.0", v >> 16);
  } else {
    je_snprintf(buf, size, "%u.%0*llu", v >> 16, static_cast<int>(width),
                static_cast<unsigned long long>(digits));
  }
}

/// Reads `name` as an option of type t; false when it cannot be read.
bool read_opt(const char* name, OptType t, Value* out, char* strbuf, size_t strsize) {
  switch (t) {
    case OptType::kBool: {
      bool b;
      if (!get(name, &b)) return false;
      *out = Value::boolean(b);
      return true;
    }
    case OptType::kStr: {
      const char* s;
      if (!get(name, &s)) return false;
      *out = Value::str(s);
      return true;
    }
    case OptType::kUnsigned: {
      unsigned u;
      if (!get(name, &u)) return false;
      *out = Value::uns(u);
      return true;
    }
    case OptType::kSize: {
      size_t z;
      if (!get(name, &z)) return false;
      *out = Value::uns(z);
      return true;
    }
    case OptType::kSsize: {
      ssize_t z;
      if (!get(name, &z)) return false;
      *out = Value::sgn(z);
      return true;
    }
    case OptType::kInt64: {
      int64_t i;
      if (!get(name, &i)) return false;
      *out = Value::sgn(i);
      return true;
    }
    case OptType::kUint64: {
      uint64_t u;
      if (!get(name, &u)) return false;
      *out = Value::uns(u);
      return true;
    }
    case OptType::kFxp: {
      uint32_t f;
      if (!get(name, &f)) return false;
      format_fxp(f, strbuf, strsize);
      *out = Value::str(strbuf);
      return true;
    }
  }
  return false;
}

void print_opts(Emitter& e) {
  e.dict_begin("opt", "Run-time option settings");
  for (const OptLine& o : kOptLines) {
    char name[64];
    char fxp[32];
    char note_fxp[32];
    Value v;
    je_snprintf(name, sizeof(name), "opt.%s", o.name);
    if (!read_opt(name, o.type, &v, fxp, sizeof(fxp))) continue;
    if (o.note == nullptr) {
      e.kv(o.name, name, v);
      continue;
    }
    Value note;
    if (!read_opt(o.note, o.type, &note, note_fxp, sizeof(note_fxp))) continue;
    e.kv_note(o.name, name, v, o.note, note);
  }
  e.dict_end();
}

void print_general(Emitter& e) {
  const char* version;
  get("version", &version);
  e.kv("version", "Version", Value::str(version));

  e.dict_begin("config", "Build-time option settings");
  // clang-format off
  static constexpr const char* kConfig[] = {
      "cache_oblivious", "debug", "fill", "lazy_lock", "malloc_conf", "opt_safety_checks", "prof",
      "prof_libgcc", "prof_libunwind", "stats", "utrace", "xmalloc"
  };
  // clang-format on
  for (const char* c : kConfig) {
    char name[64];
    je_snprintf(name, sizeof(name), "config.%s", c);
    if (strcmp(c, "malloc_conf") == 0) {
      const char* conf;
      get(name, &conf);
      e.kv(c, name, Value::str(conf != nullptr ? conf : ""));
    } else {
      bool b;
      get(name, &b);
      e.kv(c, name, Value::boolean(b));
    }
  }
  e.dict_end();

  print_opts(e);

  bool prof;
  get("config.prof", &prof);
  if (prof) {
    // Only a build with profiling compiled in has these (never this one; kept so the report
    // follows the tree if that changes).
    e.dict_begin("prof", "Profiling settings");
    bool b;
    get("prof.thread_active_init", &b);
    e.kv("thread_active_init", "prof.thread_active_init", Value::boolean(b));
    get("prof.active", &b);
    e.kv("active", "prof.active", Value::boolean(b));
    get("prof.gdump", &b);
    e.kv("gdump", "prof.gdump", Value::boolean(b));
    uint64_t interval;
    get("prof.interval", &interval);
    e.kv("interval", "prof.interval", Value::uns(interval));
    size_t lg_sample;
    get("prof.lg_sample", &lg_sample);
    e.kv("lg_sample", "prof.lg_sample", Value::uns(lg_sample));
    e.dict_end();
  }

  // JSON keeps these under "arenas"; the text form prints them at the top level.
  e.json_object_kv_begin("arenas");
  unsigned u;
  size_t z;
  ssize_t ss;
  get("arenas.narenas", &u);
  e.kv("narenas", "Arenas", Value::uns(u));
  get("arenas.dirty_decay_ms", &ss);
  e.json_kv("dirty_decay_ms", Value::sgn(ss));  // text: shown as notes of the options
  get("arenas.muzzy_decay_ms", &ss);
  e.json_kv("muzzy_decay_ms", Value::sgn(ss));
  get("arenas.quantum", &z);
  e.kv("quantum", "Quantum size", Value::uns(z));
  get("arenas.page", &z);
  e.kv("page", "Page size", Value::uns(z));
  if (get("arenas.tcache_max", &z)) {
    e.kv("tcache_max", "Maximum thread-cached size class", Value::uns(z));
  }
  unsigned nbins;
  get("arenas.nbins", &nbins);
  e.kv("nbins", "Number of bin size classes", Value::uns(nbins));
  get("arenas.nhbins", &u);
  e.kv("nhbins", "Number of thread-cache bin size classes", Value::uns(u));
  if (e.json()) {
    // Per-class geometry only in JSON (the text form shows it in the bins table).
    Mib size("arenas.bin.0.size");
    Mib nregs("arenas.bin.0.nregs");
    Mib slab_size("arenas.bin.0.slab_size");
    Mib nshards("arenas.bin.0.nshards");
    e.json_array_kv_begin("bin");
    for (unsigned j = 0; j < nbins; j++) {
      e.json_object_begin();
      e.json_kv("size", Value::uns(size.set(2, j).get<size_t>()));
      e.json_kv("nregs", Value::uns(nregs.set(2, j).get<uint32_t>()));
      e.json_kv("slab_size", Value::uns(slab_size.set(2, j).get<size_t>()));
      e.json_kv("nshards", Value::uns(nshards.set(2, j).get<uint32_t>()));
      e.json_object_end();
    }
    e.json_array_end();
  }
  unsigned nlextents;
  get("arenas.nlextents", &nlextents);
  e.kv("nlextents", "Number of large size classes", Value::uns(nlextents));
  if (e.json()) {
    Mib size("arenas.lextent.0.size");
    e.json_array_kv_begin("lextent");
    for (unsigned j = 0; j < nlextents; j++) {
      e.json_object_begin();
      e.json_kv("size", Value::uns(size.set(2, j).get<size_t>()));
      e.json_object_end();
    }
    e.json_array_end();
  }
  e.json_object_end();  // "arenas"
}

// ---- Global statistics and the arena views -----------------------------------------------------

void print_global_mutexes(Emitter& e) {
  Row row;
  row.add(Justify::kLeft, 21, Value::title(""));
  unsigned first = mutex_columns(row);
  e.table_row(row);  // the header
  e.json_object_kv_begin("mutexes");
  uint64_t uptime;
  get("stats.arenas.0.uptime", &uptime);
  for (const char* m : kGlobalMutexNames) {
    char prefix[64];
    je_snprintf(prefix, sizeof(prefix), "stats.mutexes.%s", m);
    MutexCounters c;
    MutexReader(prefix).read(&c);
    row.cols[0].value = Value::title(m);
    mutex_fill(row, first, c, uptime);
    e.table_row(row);
    e.json_object_kv_begin(m);
    mutex_json(e, c);
    e.json_object_end();
  }
  e.json_object_end();  // "mutexes"
}

void print_stats(Emitter& e, const Sections& s) {
  size_t allocated, active, metadata, metadata_thp, resident, mapped, retained, zero_reallocs;
  get("stats.allocated", &allocated);
  get("stats.active", &active);
  get("stats.metadata", &metadata);
  get("stats.metadata_thp", &metadata_thp);
  get("stats.resident", &resident);
  get("stats.mapped", &mapped);
  get("stats.retained", &retained);
  get("stats.zero_reallocs", &zero_reallocs);
  size_t bg_threads;
  uint64_t bg_runs, bg_interval;
  get("stats.background_thread.num_threads", &bg_threads);
  get("stats.background_thread.num_runs", &bg_runs);
  get("stats.background_thread.run_interval", &bg_interval);

  e.json_object_kv_begin("stats");
  e.json_kv("allocated", Value::uns(allocated));
  e.json_kv("active", Value::uns(active));
  e.json_kv("metadata", Value::uns(metadata));
  e.json_kv("metadata_thp", Value::uns(metadata_thp));
  e.json_kv("resident", Value::uns(resident));
  e.json_kv("mapped", Value::uns(mapped));
  e.json_kv("retained", Value::uns(retained));
  e.json_kv("zero_reallocs", Value::uns(zero_reallocs));
  e.table_printf(
      "Allocated: %zu, active: %zu, metadata: %zu (n_thp %zu), resident: %zu, mapped: %zu, "
      "retained: %zu\n",
      allocated, active, metadata, metadata_thp, resident, mapped, retained);
  e.table_printf("Count of realloc(non-null-ptr, 0) calls: %zu\n", zero_reallocs);
  e.json_object_kv_begin("background_thread");
  e.json_kv("num_threads", Value::uns(bg_threads));
  e.json_kv("num_runs", Value::uns(bg_runs));
  e.json_kv("run_interval", Value::uns(bg_interval));
  e.json_object_end();
  e.table_printf("Background threads: %zu, num_runs: %llu, run_interval: %llu ns\n", bg_threads,
                 static_cast<unsigned long long>(bg_runs),
                 static_cast<unsigned long long>(bg_interval));
  if (s.mutex) print_global_mutexes(e);
  e.json_object_end();  // "stats"

  if (!s.merged && !s.destroyed && !s.unmerged) return;
  e.json_object_kv_begin("stats.arenas");
  unsigned narenas;
  get("arenas.narenas", &narenas);
  Mib initialized("arena.0.initialized");
  unsigned ninitialized = 0;
  for (unsigned i = 0; i < narenas; i++) {
    if (initialized.set(1, i).get<bool>()) ninitialized++;
  }
  bool destroyed_initialized = initialized.set(1, ctl::kArenasDestroyed).get<bool>();

  // The merged view repeats the only arena when there is one (unless it is printed alone).
  if (s.merged && (ninitialized > 1 || !s.unmerged)) {
    e.table_printf("Merged arenas stats:\n");
    e.json_object_kv_begin("merged");
    print_arena(e, ctl::kArenasAll, s);
    e.json_object_end();
  }
  if (s.destroyed && destroyed_initialized) {
    e.table_printf("Destroyed arenas stats:\n");
    e.json_object_kv_begin("destroyed");
    print_arena(e, ctl::kArenasDestroyed, s);
    e.json_object_end();
  }
  if (s.unmerged) {
    // arena.<i>.initialized comes from the snapshot taken at the start, so this is the same
    // set of arenas as counted above.
    for (unsigned i = 0; i < narenas; i++) {
      if (!initialized.set(1, i).get<bool>()) continue;
      char ind[16];
      je_snprintf(ind, sizeof(ind), "%u", i);
      e.json_object_kv_begin(ind);
      e.table_printf("arenas[%s]:\n", ind);
      print_arena(e, i, s);
      e.json_object_end();
    }
  }
  e.json_object_end();  // "stats.arenas"
}

void default_writer(void*, const char* s) { io_write(s); }

}  // namespace

}  // namespace stats

void stats_print(void (*write_cb)(void*, const char*), void* cbopaque, const char* opts) {
  using namespace stats;
  // Refresh the snapshot so the report shows the present, not the last epoch a client wrote.
  uint64_t epoch = 1;
  int err = ctl_byname("epoch", nullptr, nullptr, &epoch, sizeof(epoch));
  if (err == EAGAIN) {
    io_write("<jemalloc>: Memory allocation failure in mallctl(\"epoch\", ...)\n");
    return;
  }
  if (err != 0) je_abort_msg("Failure in mallctl(\"epoch\", ...)");

  bool config_stats;
  get("config.stats", &config_stats);
  Sections s;
  s.merged = s.destroyed = s.unmerged = s.hpa = config_stats;
  for (const char* p = opts; p != nullptr && *p != '\0'; p++) {
    switch (*p) {
      case 'J': s.json = true; break;
      case 'g': s.general = false; break;
      case 'm': s.merged = false; break;
      case 'd': s.destroyed = false; break;
      case 'a': s.unmerged = false; break;
      case 'b': s.bins = false; break;
      case 'l': s.large = false; break;
      case 'x': s.mutex = false; break;
      case 'e': s.extents = false; break;
      case 'h': s.hpa = false; break;
      default: break;  // unknown letters are ignored, as in 5.3.0
    }
  }

  Emitter e(s.json, write_cb != nullptr ? write_cb : default_writer, cbopaque);
  e.begin();
  e.table_printf("___ Begin jemalloc statistics ___\n");
  e.json_object_kv_begin("jemalloc");
  if (s.general) print_general(e);
  if (config_stats) print_stats(e, s);
  e.json_object_end();  // "jemalloc"
  e.table_printf("--- End jemalloc statistics ---\n");
  e.end();
}

}  // namespace je
