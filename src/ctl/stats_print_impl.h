// stats_print_impl.h: pieces shared by the parts of the statistics report.
//
// Purpose: the report reads every value through the mallctl interface (ctl_nametomib /
// ctl_bymib), like jemalloc's stats.c, so it shows exactly what a client would read. Mib
// resolves a name once and re-reads it with other arena / class indices; MutexReader does the
// same for the seven counters of one mutex. Sections holds the option letters.
// A value that cannot be read (only in a build without statistics, where stats.* answer
// ENOENT) prints as 0; options that do not exist (opt.prof*, opt.utrace...) are left out, as
// 5.3.0 does.
// Layer: ctl (internal to the stats printer). Callers: stats_print.cc, stats_print_arena.cc.
// Concurrency: each read takes and drops the ctl mutex; the values come from the snapshot of
// the `epoch` write at the start of the report, so they are mutually consistent.
// Invariants: nothing here allocates.
// jemalloc mapping: the CTL_GET / CTL_M2_GET / CTL_LEAF_PREPARE / CTL_LEAF macros and the
// mutex_stats_* helpers of stats.c, the STATS_PRINT_OPTIONS letters.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "ctl/ctl.h"
#include "ctl/ctl_stats.h"
#include "ctl/ctl_tree.h"
#include "ctl/stats_print_emitter.h"

namespace je::stats {

/// What the option letters select (each letter except J turns its section off).
struct Sections {
  bool json = false;      // J: JSON instead of text
  bool general = true;    // g: version, config.*, opt.*, arenas.*
  bool merged = true;     // m: the merged view of all arenas
  bool destroyed = true;  // d: the accumulated view of destroyed arenas
  bool unmerged = true;   // a: one section per arena
  bool bins = true;       // b: small size classes
  bool large = true;      // l: large size classes
  bool mutex = true;      // x: mutex counters
  bool extents = true;    // e: free extents by size
  bool hpa = true;        // h: the HPA shard
};

/// Reads `name` as a T. False (and *out zeroed) when the name cannot be read as a T.
template <class T>
bool get(const char* name, T* out) {
  size_t len = sizeof(T);
  if (ctl_byname(name, out, &len, nullptr, 0) == 0 && len == sizeof(T)) return true;
  memset(static_cast<void*>(out), 0, sizeof(T));
  return false;
}

/// A name translated once into a MIB whose integer components are set before each read.
class Mib {
 public:
  Mib() = default;
  explicit Mib(const char* name) { init(name); }
  void init(const char* name) {
    len_ = ctl::kMaxDepth;
    ok_ = ctl_nametomib(name, mib_, &len_) == 0;
  }
  Mib& set(size_t pos, size_t v) {
    if (pos < len_) mib_[pos] = v;
    return *this;
  }
  /// False (and *out zeroed) when the node cannot be read as a T.
  template <class T>
  bool read(T* out) const {
    size_t len = sizeof(T);
    if (ok_ && ctl_bymib(mib_, len_, out, &len, nullptr, 0) == 0 && len == sizeof(T)) {
      return true;
    }
    memset(static_cast<void*>(out), 0, sizeof(T));
    return false;
  }
  template <class T>
  T get() const {
    T v;
    read(&v);
    return v;
  }

 private:
  size_t mib_[ctl::kMaxDepth] = {};
  size_t len_ = 0;
  bool ok_ = false;
};

/// The counters of one mutex, as `*.mutexes.<m>.*` / `bins.<j>.mutex.*` report them.
struct MutexCounters {
  uint64_t num_ops;
  uint64_t num_wait;
  uint64_t num_spin_acq;
  uint64_t num_owner_switch;
  uint64_t total_wait_time;
  uint64_t max_wait_time;
  uint32_t max_num_thds;
};

/// The seven counter leaves below one mutex node (`prefix` names the mutex node, with 0 for
/// the integer components that set() replaces).
class MutexReader {
 public:
  explicit MutexReader(const char* prefix);
  MutexReader& set(size_t pos, size_t v);
  void read(MutexCounters* out) const;

 private:
  Mib leaf_[7];
};

/// Events per second over `uptime_ns`, as 5.3.0 computes its "(#/sec)" columns: 0 without
/// uptime, the count itself during the first second, else count / whole seconds.
inline uint64_t rate_per_second(uint64_t value, uint64_t uptime_ns) {
  constexpr uint64_t kBillion = 1000000000;
  if (uptime_ns == 0 || value == 0) return 0;
  if (uptime_ns < kBillion) return value;
  return value / (uptime_ns / kBillion);
}

/// Appends the twelve mutex columns (counters and rates) to `row` with their titles; returns
/// the index of the first.
unsigned mutex_columns(Row& row);
/// Fills the mutex columns starting at `first` with `m` and its rates.
void mutex_fill(Row& row, unsigned first, const MutexCounters& m, uint64_t uptime_ns);
/// The seven counters as JSON keys of the current object.
void mutex_json(Emitter& e, const MutexCounters& m);

/// One arena section (an arena index, ctl::kArenasAll or ctl::kArenasDestroyed): 5.3.0's
/// content in its order, then our dirty-path counters.
void print_arena(Emitter& e, size_t ind, const Sections& s);

}  // namespace je::stats
