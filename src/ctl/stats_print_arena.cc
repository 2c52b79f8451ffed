// stats_print_arena.cc: one arena's section of the statistics report (see stats_print.h):
// decay, allocation counts, memory, mutexes, bins, large classes, free extents, the HPA shard,
// then our dirty-path counters. Layouts (column widths, labels, gap markers) are 5.3.0's.
#include <sys/types.h>

#include <cstdint>

#include "ctl/stats_print_emitter.h"
#include "ctl/stats_print_impl.h"
#include "extent/pac_stats.h"
#include "meta/sc.h"
#include "meta/sz.h"
#include "support/config.h"
#include "support/malloc_io.h"

namespace je::stats {

namespace {

/// The marker a table prints where it skips a run of empty rows.
constexpr const char* kGap = "                     ---\n";

/// 5.3.0's per-arena mutexes, in its order (`stats.arenas.<i>.mutexes.<m>`).
constexpr const char* kArenaMutexNames[] = {
    "large",          "extent_avail", "extents_dirty", "extents_muzzy", "extents_retained",
    "decay_dirty",    "decay_muzzy",  "base",          "tcache_list",   "hpa_shard",
    "hpa_shard_grow", "hpa_sec"};

/// Size classes the HPA's page-slab sets distinguish (psset's PSSET_NPSIZES).
constexpr unsigned kHpaNPSizes = 64;
constexpr size_t kHugepagePages = config::kHugepage / config::kPage;

/// A "stats.arenas.<ind>.<leaf>" reader.
template <class T>
T astat(size_t ind, const char* leaf) {
  char name[128];
  je_snprintf(name, sizeof(name), "stats.arenas.0.%s", leaf);
  return Mib(name).set(2, ind).get<T>();
}

/// util column of the bins table: curregs / (nregs * curslabs) with three decimals, "1" when
/// full or without slabs, " race" when the counters disagree (read at different times).
void bin_util(char* out, size_t size, uint64_t curregs, uint64_t availregs) {
  if (availregs == 0) {
    je_snprintf(out, size, "1");
    return;
  }
  if (curregs > availregs) {
    je_snprintf(out, size, " race");
    return;
  }
  unsigned permille = static_cast<unsigned>(curregs * 1000 / availregs);
  if (permille >= 1000) {
    je_snprintf(out, size, "1");
  } else {
    je_snprintf(out, size, "0.%03u", permille);
  }
}

void print_decay(Emitter& e, size_t ind) {
  ssize_t dirty_decay_ms = astat<ssize_t>(ind, "dirty_decay_ms");
  ssize_t muzzy_decay_ms = astat<ssize_t>(ind, "muzzy_decay_ms");
  size_t pactive = astat<size_t>(ind, "pactive");
  size_t pdirty = astat<size_t>(ind, "pdirty");
  size_t pmuzzy = astat<size_t>(ind, "pmuzzy");
  uint64_t dirty_npurge = astat<uint64_t>(ind, "dirty_npurge");
  uint64_t dirty_nmadvise = astat<uint64_t>(ind, "dirty_nmadvise");
  uint64_t dirty_purged = astat<uint64_t>(ind, "dirty_purged");
  uint64_t muzzy_npurge = astat<uint64_t>(ind, "muzzy_npurge");
  uint64_t muzzy_nmadvise = astat<uint64_t>(ind, "muzzy_nmadvise");
  uint64_t muzzy_purged = astat<uint64_t>(ind, "muzzy_purged");

  e.json_kv("dirty_decay_ms", Value::sgn(dirty_decay_ms));
  e.json_kv("muzzy_decay_ms", Value::sgn(muzzy_decay_ms));
  e.json_kv("pactive", Value::uns(pactive));
  e.json_kv("pdirty", Value::uns(pdirty));
  e.json_kv("pmuzzy", Value::uns(pmuzzy));
  e.json_kv("dirty_npurge", Value::uns(dirty_npurge));
  e.json_kv("dirty_nmadvise", Value::uns(dirty_nmadvise));
  e.json_kv("dirty_purged", Value::uns(dirty_purged));
  e.json_kv("muzzy_npurge", Value::uns(muzzy_npurge));
  e.json_kv("muzzy_nmadvise", Value::uns(muzzy_nmadvise));
  e.json_kv("muzzy_purged", Value::uns(muzzy_purged));

  Row row;
  row.add(Justify::kRight, 9, Value::title("decaying:"));
  row.add(Justify::kRight, 6, Value::title("time"));
  row.add(Justify::kRight, 13, Value::title("npages"));
  row.add(Justify::kRight, 13, Value::title("sweeps"));
  row.add(Justify::kRight, 13, Value::title("madvises"));
  row.add(Justify::kRight, 13, Value::title("purged"));
  e.table_row(row);
  auto line = [&](const char* label, ssize_t ms, size_t npages, uint64_t sweeps, uint64_t madvises,
                  uint64_t purged) {
    row.cols[0].value = Value::title(label);
    row.cols[1].value = ms >= 0 ? Value::sgn(ms) : Value::title("N/A");
    row.cols[2].value = Value::uns(npages);
    row.cols[3].value = Value::uns(sweeps);
    row.cols[4].value = Value::uns(madvises);
    row.cols[5].value = Value::uns(purged);
    e.table_row(row);
  };
  line("dirty:", dirty_decay_ms, pdirty, dirty_npurge, dirty_nmadvise, dirty_purged);
  line("muzzy:", muzzy_decay_ms, pmuzzy, muzzy_npurge, muzzy_nmadvise, muzzy_purged);
}

/// small:, large: and total: rows (JSON: the "small" and "large" objects).
void print_counts(Emitter& e, size_t ind, uint64_t uptime) {
  static constexpr const char* kLeaves[6] = {"allocated", "nmalloc", "ndalloc",
                                             "nrequests", "nfills",  "nflushes"};
  Row row;
  row.add(Justify::kLeft, 21, Value::title(""));
  row.add(Justify::kRight, 16, Value::title("allocated"));
  static constexpr const char* kTitles[5] = {"nmalloc", "ndalloc", "nrequests", "nfill", "nflush"};
  for (const char* t : kTitles) {
    row.add(Justify::kRight, 16, Value::title(t));
    row.add(Justify::kRight, 10, Value::title("(#/sec)"));
  }
  e.table_row(row);

  uint64_t total[6] = {};
  auto fill = [&](const char* label, const uint64_t v[6]) {
    row.cols[0].value = Value::title(label);
    row.cols[1].value = Value::uns(v[0]);
    for (unsigned k = 1; k < 6; k++) {
      row.cols[2 * k].value = Value::uns(v[k]);
      row.cols[2 * k + 1].value = Value::uns(rate_per_second(v[k], uptime));
    }
    e.table_row(row);
  };
  for (const char* kind : {"small", "large"}) {
    uint64_t v[6];
    e.json_object_kv_begin(kind);
    for (unsigned k = 0; k < 6; k++) {
      char leaf[32];
      je_snprintf(leaf, sizeof(leaf), "%s.%s", kind, kLeaves[k]);
      // allocated is a size_t, the event counters uint64_t: both 8 bytes here.
      v[k] = k == 0 ? astat<size_t>(ind, leaf) : astat<uint64_t>(ind, leaf);
      e.json_kv(kLeaves[k], Value::uns(v[k]));
      total[k] += v[k];
    }
    e.json_object_end();
    fill(kind[0] == 's' ? "small:" : "large:", v);
  }
  fill("total:", total);
}

void print_memory(Emitter& e, size_t ind, size_t page, size_t pactive) {
  Row row;
  row.add(Justify::kLeft, 21, Value::title(""));
  row.add(Justify::kRight, 16, Value::title(""));
  e.table_row(row);  // a blank separator line of 37 spaces
  row.cols[0].value = Value::title("active:");
  row.cols[1].value = Value::uns(pactive * page);
  e.table_row(row);  // text only: JSON has pactive
  // clang-format off
  static constexpr const char* kLeaves[] = {
      "mapped", "retained", "base", "internal", "metadata_thp",
      "tcache_bytes", "tcache_stashed_bytes", "resident", "abandoned_vm", "extent_avail"};
  // clang-format on
  for (const char* leaf : kLeaves) {
    size_t v = astat<size_t>(ind, leaf);
    e.json_kv(leaf, Value::uns(v));
    char label[32];
    je_snprintf(label, sizeof(label), "%s:", leaf);
    row.cols[0].value = Value::title(label);
    row.cols[1].value = Value::uns(v);
    e.table_row(row);
  }
}

void print_mutexes(Emitter& e, size_t ind, uint64_t uptime) {
  Row row;
  row.add(Justify::kLeft, 21, Value::title(""));
  unsigned first = mutex_columns(row);
  e.json_object_kv_begin("mutexes");
  e.table_row(row);
  for (const char* m : kArenaMutexNames) {
    char prefix[64];
    je_snprintf(prefix, sizeof(prefix), "stats.arenas.0.mutexes.%s", m);
    MutexCounters c;
    MutexReader(prefix).set(2, ind).read(&c);
    e.json_object_kv_begin(m);
    row.cols[0].value = Value::title(m);
    mutex_fill(row, first, c, uptime);
    e.table_row(row);
    mutex_json(e, c);
    e.json_object_end();
  }
  e.json_object_end();
}

/// The columns the bins and large tables share: size, ind, allocated and the three counters
/// with their rates (the tables differ only in the width of the last rate).
void add_count_titles(Row& row, int nrequests_rate_width) {
  row.add(Justify::kRight, 20, Value::title("size"));
  row.add(Justify::kRight, 4, Value::title("ind"));
  row.add(Justify::kRight, 13, Value::title("allocated"));
  row.add(Justify::kRight, 13, Value::title("nmalloc"));
  row.add(Justify::kRight, 8, Value::title("(#/sec)"));
  row.add(Justify::kRight, 13, Value::title("ndalloc"));
  row.add(Justify::kRight, 8, Value::title("(#/sec)"));
  row.add(Justify::kRight, 13, Value::title("nrequests"));
  row.add(Justify::kRight, nrequests_rate_width, Value::title("(#/sec)"));
}

void print_bins(Emitter& e, size_t ind, bool mutex, uint64_t uptime, size_t page) {
  unsigned nbins;
  get("arenas.nbins", &nbins);
  // clang-format off
  enum : unsigned {
    kSize, kInd, kAllocated, kNmalloc, kNmallocPs, kNdalloc, kNdallocPs, kNrequests,
    kNrequestsPs, kNshards, kCurregs, kCurslabs, kNonfull, kRegs, kPgs, kSpacer, kUtil,
    kNfills, kNfillsPs, kNflushes, kNflushesPs, kNslabs, kNreslabs, kNreslabsPs
  };
  // clang-format on
  Row row;
  add_count_titles(row, 10);
  row.add(Justify::kRight, 9, Value::title("nshards"));
  row.add(Justify::kRight, 13, Value::title("curregs"));
  row.add(Justify::kRight, 13, Value::title("curslabs"));
  row.add(Justify::kRight, 15, Value::title("nonfull_slabs"));
  row.add(Justify::kRight, 5, Value::title("regs"));
  row.add(Justify::kRight, 4, Value::title("pgs"));
  row.add(Justify::kRight, 1, Value::title(" "));  // keeps util clear of pgs
  row.add(Justify::kRight, 6, Value::title("util"));
  row.add(Justify::kRight, 13, Value::title("nfills"));
  row.add(Justify::kRight, 8, Value::title("(#/sec)"));
  row.add(Justify::kRight, 13, Value::title("nflushes"));
  row.add(Justify::kRight, 8, Value::title("(#/sec)"));
  row.add(Justify::kRight, 13, Value::title("nslabs"));
  row.add(Justify::kRight, 13, Value::title("nreslabs"));
  row.add(Justify::kRight, 8, Value::title("(#/sec)"));
  unsigned mfirst = mutex ? mutex_columns(row) : 0;

  // The header row starts with the "bins:" label, which the size column makes room for.
  row.cols[kSize].width -= 5;
  e.table_printf("bins:");
  e.table_row(row);
  row.cols[kSize].width += 5;
  e.json_array_kv_begin("bins");

  Mib nslabs_m("stats.arenas.0.bins.0.nslabs"), nmalloc_m("stats.arenas.0.bins.0.nmalloc"),
      ndalloc_m("stats.arenas.0.bins.0.ndalloc"), curregs_m("stats.arenas.0.bins.0.curregs"),
      nrequests_m("stats.arenas.0.bins.0.nrequests"), nfills_m("stats.arenas.0.bins.0.nfills"),
      nflushes_m("stats.arenas.0.bins.0.nflushes"), nreslabs_m("stats.arenas.0.bins.0.nreslabs"),
      curslabs_m("stats.arenas.0.bins.0.curslabs"),
      nonfull_m("stats.arenas.0.bins.0.nonfull_slabs");
  Mib size_m("arenas.bin.0.size"), nregs_m("arenas.bin.0.nregs"),
      slab_size_m("arenas.bin.0.slab_size"), nshards_m("arenas.bin.0.nshards");
  MutexReader mutex_r("stats.arenas.0.bins.0.mutex");

  bool in_gap = false;
  for (unsigned j = 0; j < nbins; j++) {
    auto at = [&](Mib& m) -> Mib& { return m.set(2, ind).set(4, j); };
    uint64_t nslabs = at(nslabs_m).get<uint64_t>();
    bool in_gap_prev = in_gap;
    in_gap = nslabs == 0;
    if (in_gap_prev && !in_gap) e.table_printf("%s", kGap);
    if (in_gap && !e.json()) continue;  // JSON lists every class

    size_t reg_size = size_m.set(2, j).get<size_t>();
    uint32_t nregs = nregs_m.set(2, j).get<uint32_t>();
    size_t slab_size = slab_size_m.set(2, j).get<size_t>();
    uint32_t nshards = nshards_m.set(2, j).get<uint32_t>();
    uint64_t nmalloc = at(nmalloc_m).get<uint64_t>();
    uint64_t ndalloc = at(ndalloc_m).get<uint64_t>();
    size_t curregs = at(curregs_m).get<size_t>();
    uint64_t nrequests = at(nrequests_m).get<uint64_t>();
    uint64_t nfills = at(nfills_m).get<uint64_t>();
    uint64_t nflushes = at(nflushes_m).get<uint64_t>();
    uint64_t nreslabs = at(nreslabs_m).get<uint64_t>();
    size_t curslabs = at(curslabs_m).get<size_t>();
    size_t nonfull = at(nonfull_m).get<size_t>();
    MutexCounters mc{};
    if (mutex) mutex_r.set(2, ind).set(4, j).read(&mc);

    e.json_object_begin();
    e.json_kv("nmalloc", Value::uns(nmalloc));
    e.json_kv("ndalloc", Value::uns(ndalloc));
    e.json_kv("curregs", Value::uns(curregs));
    e.json_kv("nrequests", Value::uns(nrequests));
    e.json_kv("nfills", Value::uns(nfills));
    e.json_kv("nflushes", Value::uns(nflushes));
    e.json_kv("nreslabs", Value::uns(nreslabs));
    e.json_kv("curslabs", Value::uns(curslabs));
    e.json_kv("nonfull_slabs", Value::uns(nonfull));
    if (mutex) {
      e.json_object_kv_begin("mutex");
      mutex_json(e, mc);
      e.json_object_end();
    }
    e.json_object_end();
    if (e.json()) continue;

    char util[8];
    bin_util(util, sizeof(util), curregs, uint64_t{nregs} * curslabs);
    row.cols[kSize].value = Value::uns(reg_size);
    row.cols[kInd].value = Value::uns(j);
    row.cols[kAllocated].value = Value::uns(curregs * reg_size);
    row.cols[kNmalloc].value = Value::uns(nmalloc);
    row.cols[kNmallocPs].value = Value::uns(rate_per_second(nmalloc, uptime));
    row.cols[kNdalloc].value = Value::uns(ndalloc);
    row.cols[kNdallocPs].value = Value::uns(rate_per_second(ndalloc, uptime));
    row.cols[kNrequests].value = Value::uns(nrequests);
    row.cols[kNrequestsPs].value = Value::uns(rate_per_second(nrequests, uptime));
    row.cols[kNshards].value = Value::uns(nshards);
    row.cols[kCurregs].value = Value::uns(curregs);
    row.cols[kCurslabs].value = Value::uns(curslabs);
    row.cols[kNonfull].value = Value::uns(nonfull);
    row.cols[kRegs].value = Value::uns(nregs);
    row.cols[kPgs].value = Value::uns(slab_size / page);
    row.cols[kUtil].value = Value::title(util);
    row.cols[kNfills].value = Value::uns(nfills);
    row.cols[kNfillsPs].value = Value::uns(rate_per_second(nfills, uptime));
    row.cols[kNflushes].value = Value::uns(nflushes);
    row.cols[kNflushesPs].value = Value::uns(rate_per_second(nflushes, uptime));
    row.cols[kNslabs].value = Value::uns(nslabs);
    row.cols[kNreslabs].value = Value::uns(nreslabs);
    row.cols[kNreslabsPs].value = Value::uns(rate_per_second(nreslabs, uptime));
    if (mutex) mutex_fill(row, mfirst, mc, uptime);
    e.table_row(row);
  }
  e.json_array_end();
  if (in_gap) e.table_printf("%s", kGap);
}

void print_lextents(Emitter& e, size_t ind, uint64_t uptime) {
  unsigned nbins, nlextents;
  get("arenas.nbins", &nbins);
  get("arenas.nlextents", &nlextents);
  Row row;
  add_count_titles(row, 8);
  row.add(Justify::kRight, 13, Value::title("curlextents"));
  row.cols[0].width -= 6;  // room for the "large:" label
  e.table_printf("large:");
  e.table_row(row);
  row.cols[0].width += 6;
  e.json_array_kv_begin("lextents");

  Mib nmalloc_m("stats.arenas.0.lextents.0.nmalloc"),
      ndalloc_m("stats.arenas.0.lextents.0.ndalloc"),
      nrequests_m("stats.arenas.0.lextents.0.nrequests"),
      cur_m("stats.arenas.0.lextents.0.curlextents"), size_m("arenas.lextent.0.size");
  bool in_gap = false;
  for (unsigned j = 0; j < nlextents; j++) {
    auto at = [&](Mib& m) -> Mib& { return m.set(2, ind).set(4, j); };
    uint64_t nmalloc = at(nmalloc_m).get<uint64_t>();
    uint64_t ndalloc = at(ndalloc_m).get<uint64_t>();
    uint64_t nrequests = at(nrequests_m).get<uint64_t>();
    bool in_gap_prev = in_gap;
    in_gap = nrequests == 0;
    if (in_gap_prev && !in_gap) e.table_printf("%s", kGap);
    size_t size = size_m.set(2, j).get<size_t>();
    size_t cur = at(cur_m).get<size_t>();

    e.json_object_begin();
    e.json_kv("curlextents", Value::uns(cur));
    e.json_object_end();

    if (in_gap || e.json()) continue;
    row.cols[0].value = Value::uns(size);
    row.cols[1].value = Value::uns(nbins + j);
    row.cols[2].value = Value::uns(cur * size);
    row.cols[3].value = Value::uns(nmalloc);
    row.cols[4].value = Value::uns(rate_per_second(nmalloc, uptime));
    row.cols[5].value = Value::uns(ndalloc);
    row.cols[6].value = Value::uns(rate_per_second(ndalloc, uptime));
    row.cols[7].value = Value::uns(nrequests);
    row.cols[8].value = Value::uns(rate_per_second(nrequests, uptime));
    row.cols[9].value = Value::uns(cur);
    e.table_row(row);
  }
  e.json_array_end();
  if (in_gap) e.table_printf("%s", kGap);
}

void print_extents(Emitter& e, size_t ind) {
  static constexpr const char* kTitles[] = {"size",  "ind",       "ndirty",   "dirty",  "nmuzzy",
                                            "muzzy", "nretained", "retained", "ntotal", "total"};
  Row row;
  for (const char* t : kTitles) {
    row.add(Justify::kRight, row.n == 0 ? 20 : row.n == 1 ? 4 : 13, Value::title(t));
  }
  row.cols[0].width -= 8;  // room for the "extents:" label
  e.table_printf("extents:");
  e.table_row(row);
  row.cols[0].width += 8;
  e.json_array_kv_begin("extents");

  static constexpr const char* kLeaves[6] = {"ndirty",      "nmuzzy",      "nretained",
                                             "dirty_bytes", "muzzy_bytes", "retained_bytes"};
  Mib leaves[6];
  for (unsigned k = 0; k < 6; k++) {
    char name[64];
    je_snprintf(name, sizeof(name), "stats.arenas.0.extents.0.%s", kLeaves[k]);
    leaves[k].init(name);
  }
  bool in_gap = false;
  for (unsigned j = 0; j < sc::kNPSizes; j++) {
    size_t v[6];
    for (unsigned k = 0; k < 6; k++) v[k] = leaves[k].set(2, ind).set(4, j).get<size_t>();
    size_t n = v[0] + v[1] + v[2];
    size_t bytes = v[3] + v[4] + v[5];
    bool in_gap_prev = in_gap;
    in_gap = n == 0;
    if (in_gap_prev && !in_gap) e.table_printf("%s", kGap);

    e.json_object_begin();
    for (unsigned k = 0; k < 6; k++) e.json_kv(kLeaves[k], Value::uns(v[k]));
    e.json_object_end();

    if (in_gap || e.json()) continue;
    row.cols[0].value = Value::uns(sz::pind2sz(j));
    row.cols[1].value = Value::uns(j);
    row.cols[2].value = Value::uns(v[0]);
    row.cols[3].value = Value::uns(v[3]);
    row.cols[4].value = Value::uns(v[1]);
    row.cols[5].value = Value::uns(v[4]);
    row.cols[6].value = Value::uns(v[2]);
    row.cols[7].value = Value::uns(v[5]);
    row.cols[8].value = Value::uns(n);
    row.cols[9].value = Value::uns(bytes);
    e.table_row(row);
  }
  e.json_array_end();
  if (in_gap) e.table_printf("%s", kGap);
}

/// The HPA shard: all zero in this build (no HPA, like 5.3.0 with hpa:false), printed with
/// 5.3.0's layout and keys -- including its quirk of listing nactive_huge twice (and no
/// ndirty_huge) in the JSON full_slabs/empty_slabs objects.
void print_hpa(Emitter& e, size_t ind, uint64_t uptime) {
  uint64_t npurge_passes = astat<uint64_t>(ind, "hpa_shard.npurge_passes");
  uint64_t npurges = astat<uint64_t>(ind, "hpa_shard.npurges");
  uint64_t nhugifies = astat<uint64_t>(ind, "hpa_shard.nhugifies");
  uint64_t ndehugifies = astat<uint64_t>(ind, "hpa_shard.ndehugifies");
  size_t sec_bytes = astat<size_t>(ind, "hpa_sec_bytes");
  e.kv("sec_bytes", "Bytes in small extent cache", Value::uns(sec_bytes));

  auto ull = [](uint64_t v) { return static_cast<unsigned long long>(v); };
  e.table_printf("HPA shard stats:\n");
  e.table_printf("  Purge passes: %llu (%llu / sec)\n", ull(npurge_passes),
                 ull(rate_per_second(npurge_passes, uptime)));
  e.table_printf("  Purges: %llu (%llu / sec)\n", ull(npurges),
                 ull(rate_per_second(npurges, uptime)));
  e.table_printf("  Hugeifies: %llu (%llu / sec)\n", ull(nhugifies),
                 ull(rate_per_second(nhugifies, uptime)));
  e.table_printf("  Dehugifies: %llu (%llu / sec)\n\n", ull(ndehugifies),
                 ull(rate_per_second(ndehugifies, uptime)));

  e.json_object_kv_begin("hpa_shard");
  e.json_kv("npurge_passes", Value::uns(npurge_passes));
  e.json_kv("npurges", Value::uns(npurges));
  e.json_kv("nhugifies", Value::uns(nhugifies));
  e.json_kv("ndehugifies", Value::uns(ndehugifies));

  for (const char* set : {"full_slabs", "empty_slabs"}) {
    char leaf[64];
    size_t v[6];  // npageslabs, nactive, ndirty: huge, then nonhuge
    static constexpr const char* kLeaves[6] = {"npageslabs_huge", "nactive_huge",
                                               "ndirty_huge",     "npageslabs_nonhuge",
                                               "nactive_nonhuge", "ndirty_nonhuge"};
    for (unsigned k = 0; k < 6; k++) {
      je_snprintf(leaf, sizeof(leaf), "hpa_shard.%s.%s", set, kLeaves[k]);
      v[k] = astat<size_t>(ind, leaf);
    }
    size_t nretained_nonhuge = v[3] * kHugepagePages - v[4] - v[5];
    e.table_printf("  In %s slabs:\n", set[0] == 'f' ? "full" : "empty");
    e.table_printf("      npageslabs: %zu huge, %zu nonhuge\n", v[0], v[3]);
    e.table_printf("      nactive: %zu huge, %zu nonhuge \n", v[1], v[4]);
    e.table_printf("      ndirty: %zu huge, %zu nonhuge \n", v[2], v[5]);
    e.table_printf("      nretained: 0 huge, %zu nonhuge \n", nretained_nonhuge);
    e.json_object_kv_begin(set);
    e.json_kv("npageslabs_huge", Value::uns(v[0]));
    e.json_kv("nactive_huge", Value::uns(v[1]));
    e.json_kv("nactive_huge", Value::uns(v[1]));
    e.json_kv("npageslabs_nonhuge", Value::uns(v[3]));
    e.json_kv("nactive_nonhuge", Value::uns(v[4]));
    e.json_kv("ndirty_nonhuge", Value::uns(v[5]));
    e.json_object_end();
  }
  e.table_printf("\n");

  // clang-format off
  static constexpr const char* kCols[] = {
      "size", "ind", "npageslabs_huge", "nactive_huge", "ndirty_huge", "npageslabs_nonhuge",
      "nactive_nonhuge", "ndirty_nonhuge", "nretained_nonhuge"
  };
  // clang-format on
  static constexpr int kWidths[] = {20, 4, 16, 16, 16, 20, 20, 20, 20};
  Row row;
  for (unsigned k = 0; k < 9; k++) row.add(Justify::kRight, kWidths[k], Value::title(kCols[k]));
  e.table_row(row);
  e.json_array_kv_begin("nonfull_slabs");
  Mib leaves[6];
  for (unsigned k = 0; k < 6; k++) {
    char name[96];
    je_snprintf(name, sizeof(name), "stats.arenas.0.hpa_shard.nonfull_slabs.0.%s", kCols[k + 2]);
    leaves[k].init(name);
  }
  bool in_gap = false;
  for (unsigned j = 0; j < kHpaNPSizes && j < sc::kNPSizes; j++) {
    size_t v[6];
    for (unsigned k = 0; k < 6; k++) v[k] = leaves[k].set(2, ind).set(5, j).get<size_t>();
    size_t nretained_nonhuge = v[3] * kHugepagePages - v[4] - v[5];
    bool in_gap_prev = in_gap;
    in_gap = v[0] == 0 && v[3] == 0;
    if (in_gap_prev && !in_gap) e.table_printf("%s", kGap);
    if (!in_gap && !e.json()) {
      row.cols[0].value = Value::uns(sz::pind2sz(j));
      row.cols[1].value = Value::uns(j);
      for (unsigned k = 0; k < 6; k++) row.cols[2 + k].value = Value::uns(v[k]);
      row.cols[8].value = Value::uns(nretained_nonhuge);
      e.table_row(row);
    }
    e.json_object_begin();
    for (unsigned k = 0; k < 6; k++) e.json_kv(kCols[k + 2], Value::uns(v[k]));
    e.json_object_end();
  }
  e.json_array_end();
  e.json_object_end();  // "hpa_shard"
  if (in_gap) e.table_printf("%s", kGap);
}

/// Ours, after everything 5.3.0 prints: how freed extents were coalesced and where the page
/// allocator found pages (doc/mallctl.md, "the dirty path made observable") -- one line per row
/// of the page allocator's counter table (extent/pac_stats.h), in its order. JSON keys and text
/// labels are the mallctl leaf names.
void print_dirty_path(Emitter& e, size_t ind) {
  e.table_printf("Dirty path (this allocator's counters; not in jemalloc 5.3.0):\n");
  static constexpr const char* kLeaves[] = {
#define JE_COUNTER_NAME(name, meaning) #name,
      JE_PAC_COUNTERS_OURS(JE_COUNTER_NAME)
#undef JE_COUNTER_NAME
  };
  for (const char* leaf : kLeaves) {
    uint64_t v = astat<uint64_t>(ind, leaf);
    e.json_kv(leaf, Value::uns(v));
    e.table_printf("  %s: %llu\n", leaf, static_cast<unsigned long long>(v));
  }
}

}  // namespace

void print_arena(Emitter& e, size_t ind, const Sections& s) {
  size_t page;
  get("arenas.page", &page);
  unsigned nthreads = astat<unsigned>(ind, "nthreads");
  e.kv("nthreads", "assigned threads", Value::uns(nthreads));
  uint64_t uptime = astat<uint64_t>(ind, "uptime");
  e.kv("uptime_ns", "uptime", Value::uns(uptime));
  const char* dss = astat<const char*>(ind, "dss");
  e.kv("dss", "dss allocation precedence", Value::str(dss != nullptr ? dss : "N/A"));
  print_decay(e, ind);
  print_counts(e, ind, uptime);
  print_memory(e, ind, page, astat<size_t>(ind, "pactive"));
  if (s.mutex) print_mutexes(e, ind, uptime);
  if (s.bins) print_bins(e, ind, s.mutex, uptime, page);
  if (s.large) print_lextents(e, ind, uptime);
  if (s.extents) print_extents(e, ind);
  if (s.hpa) print_hpa(e, ind, uptime);
  print_dirty_path(e, ind);
}

}  // namespace je::stats
