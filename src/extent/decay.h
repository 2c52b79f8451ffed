// decay.h: the time-based purge schedule of one ecache (dirty or muzzy).
//
// Purpose: decide how many unused pages an ecache may keep right now, so that pages which stopped
// being used are handed back to the OS gradually over a window of T = decay_ms milliseconds
// instead of all at once (madvise churn) or never (RSS bloat). The object only does arithmetic
// on page counts and times supplied by the caller; it never reads a clock and never purges.
//
// Model. The window T is cut into kNSteps = 200 epochs of T/200 ns. The backlog holds, per
// epoch, how many unused pages *appeared* during that epoch (slot 0 = oldest, slot 199 = the
// epoch that just ended). A page that appeared t ago is allowed to stay with weight
// 1 - s(t/T), where s(x) = 6x^5 - 15x^4 + 10x^3 is the smootherstep curve, so
//     npages_limit = sum_i backlog[i] * h[i],   h[i] = s((i+1)/200)  (24-bit fixed point)
// (s is symmetric, s(1-x) = 1 - s(x), hence the newest slot has weight h[199] = 1 and the
// oldest almost 0). Smootherstep has zero first *and* second derivative at both ends: right
// after a burst of frees almost nothing is purged (the pages are likely to be reused soon), the
// purge rate then rises smoothly and falls back to zero as the last pages of the burst go, so
// the madvise rate has no step at either end of the window. Pages above npages_limit are what
// the caller purges. After T (+ one epoch, because a page's arrival time is only known to the
// epoch) every page of a burst is purgeable.
//
// The epoch grid is fixed (epoch start advances by whole intervals). When the grid crossing is
// *noticed* is jittered: the next deadline is epoch start + interval + a random fraction of an
// interval, so that many arenas created at the same moment do not all purge in the same
// instant. The jitter PRNG is seeded from the object's address.
//
// "New pages" are measured as growth over nunpurged: after each advance nunpurged becomes
// max(npages_limit, current pages), i.e. the number of pages that were already accounted for
// (either counted in the backlog or left over because the caller had not purged yet).
//
// Special values of decay_ms: 0 = no backlog, every check is an epoch and the limit is 0
// (purge everything at once); -1 = never purge (limit SIZE_MAX, never advances).
//
// Layer: extent. Callers: pac (one Decay per decaying ecache, under the PAC's decay mutex),
// arena (ticks, `arena.<i>.decay`, decay_ms changes), background threads (sleep computation).
//
// Concurrency: not synchronized. The owning PAC holds its Mutex of rank LockRank::kDecay
// around every call. The single exception is ms(), a relaxed atomic read usable without the
// lock (stats, option readers, "is decay enabled?" fast checks).
//
// Invariants (gradual mode, decay_ms > 0):
//   - interval_ns() == decay_ms * 5000 (= T / 200, exact because 1e6 / 200 is an integer);
//   - epoch_ns() + interval_ns() <= deadline_ns() < epoch_ns() + 2 * interval_ns()
//     (saturated at UINT64_MAX for absurdly large times);
//   - npages_limit() == (sum_i backlog[i] * kSmoothstep[i]) >> 24 as of the last advance;
//   - nunpurged >= npages_limit.
//
// jemalloc mapping: decay.{h,c} (decay_t, decay_reinit, decay_maybe_advance_epoch,
// decay_ns_until_purge, the smoothstep.h table). Feeds opt.{dirty,muzzy}_decay_ms,
// arena.<i>.{dirty,muzzy}_decay_ms, arenas.{dirty,muzzy}_decay_ms and
// stats.arenas.<i>.{dirty,muzzy}_decay_ms through ms(); the purge counters
// (stats.arenas.<i>.{dirty,muzzy}_{npurge,nmadvise,purged}) are kept by the caller.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace je {

namespace detail {

/// h[i] = round(s((i+1)/N) * 2^bits) for the smootherstep s, computed exactly in integers:
/// with k = i+1, s(k/N) = (6k^5 - 15k^4 N + 10k^3 N^2) / N^5, and for N = 200, bits = 24 the
/// numerator times 2^24 stays below 2^63.
template <unsigned N, unsigned kBits>
constexpr std::array<uint64_t, N> make_smootherstep_table() {
  std::array<uint64_t, N> table{};
  const uint64_t n = N;
  const uint64_t n5 = n * n * n * n * n;
  for (unsigned i = 0; i < N; i++) {
    const uint64_t k = i + 1;
    const uint64_t k3 = k * k * k;
    // 6k^5 + 10k^3 N^2 - 15k^4 N is non-negative for 0 <= k <= N.
    const uint64_t num = 6 * k3 * k * k + 10 * k3 * n * n - 15 * k3 * k * n;
    table[i] = ((num << kBits) + n5 / 2) / n5;
  }
  return table;
}

}  // namespace detail

class Decay {
 public:
  /// Epochs per window.
  static constexpr unsigned kNSteps = 200;
  /// Fraction bits of the weights.
  static constexpr unsigned kFixedPointBits = 24;
  /// Smootherstep weights, h[i] = s((i+1)/200) in 24-bit fixed point (h[199] == 1 << 24).
  static constexpr std::array<uint64_t, kNSteps> kSmoothstep =
      detail::make_smootherstep_table<kNSteps, kFixedPointBits>();
  /// Largest accepted decay_ms: jemalloc's own limit (18'446'744'072 s, its maximum
  /// representable time, in ms), so that option parsing and mallctl writes accept and reject
  /// exactly the same values. T in ns (decay_ms * 1e6 <= 1.85e19) still fits in uint64_t;
  /// deadlines are computed with saturation.
  static constexpr int64_t kMaxMs = int64_t{18'446'744'072} * 1000;
  /// Nanoseconds per epoch for each millisecond of decay_ms (1e6 / kNSteps).
  static constexpr uint64_t kIntervalNsPerMs = 1'000'000 / kNSteps;

  /// Weight of backlog slot i (0 = oldest).
  static constexpr uint64_t smoothstep(unsigned i) { return kSmoothstep[i]; }

  /// Constant-initializable; the object is disabled (ms() == -1) until init().
  constexpr Decay() = default;
  Decay(const Decay&) = delete;
  Decay& operator=(const Decay&) = delete;

  /// True if decay_ms is -1 (never), 0 (immediately) or in 1..kMaxMs.
  static bool ms_valid(int64_t decay_ms);

  /// (Re)starts decay at time now_ns with window decay_ms (must satisfy ms_valid): empty
  /// backlog, nunpurged = 0, epoch = now_ns, fresh jittered deadline, jitter reseeded from the
  /// object's address. The limit becomes 0 (gradual or immediate) or SIZE_MAX (disabled), so a
  /// decay_ms change lets the caller purge all current pages, as jemalloc does. `purging` is
  /// not touched (a purge may be in flight with the mutex dropped).
  void init(uint64_t now_ns, int64_t decay_ms);

  /// decay_ms as last given to init(); readable without the decay mutex.
  int64_t ms() const { return ms_.load(std::memory_order_relaxed); }
  /// decay_ms == 0: every check purges everything.
  bool immediately() const { return ms() == 0; }
  /// decay_ms == -1: never purge.
  bool disabled() const { return ms() < 0; }

  /// Advances to the epoch containing now_ns if the jittered deadline has passed, recording
  /// current_npages (pages now in the ecache) and recomputing npages_limit(). Returns true if
  /// the limit was updated, i.e. the caller should purge down to npages_limit().
  /// Immediate mode: always true with limit 0. Disabled: always false.
  /// A now_ns earlier than the epoch start (e.g. a time read before another thread advanced
  /// the epoch) is a no-op returning false.
  bool maybe_advance_epoch(uint64_t now_ns, size_t current_npages);

  /// Pages the ecache may keep; the excess is purgeable. 0 in immediate mode, SIZE_MAX when
  /// disabled.
  size_t npages_limit() const { return npages_limit_; }
  /// Start of the current epoch (on the grid init time + k * interval).
  uint64_t epoch_ns() const { return epoch_ns_; }
  /// Time at or after which maybe_advance_epoch() advances.
  uint64_t deadline_ns() const { return deadline_ns_; }
  /// Epoch length T / 200 (0 unless gradual).
  uint64_t interval_ns() const { return interval_ns_; }

  /// For background threads: how long to sleep until at least npages_threshold pages (at
  /// least 1, at most current_npages) would be above the limit, assuming no new pages arrive,
  /// no purging happens meanwhile, and every future epoch is noticed on time. The answer is
  /// measured from the current epoch start, which is "now" right after maybe_advance_epoch()
  /// (otherwise it errs late by less than one interval); it is a time at which the advance is
  /// guaranteed to have happened (the first step waits for the jittered deadline). Returns 0
  /// if already due, UINT64_MAX if no page will ever become purgeable (disabled, or no pages).
  /// In gradual mode every page eventually decays, so the answer is at most ~T + interval.
  /// Pages that arrived since the last advance are assumed to be recorded at the next epoch; a
  /// caller that sleeps longer records them as newer and may find fewer pages purgeable.
  uint64_t ns_until_purge(size_t current_npages, uint64_t npages_threshold) const;

  /// Set by the one thread currently purging this ecache (others skip rather than queue); the
  /// purger may drop the decay mutex while it works, the flag keeps a second one out.
  bool purging = false;

 private:
  /// Sets deadline_ns_ = epoch + interval + jitter (jitter only in gradual mode).
  void reset_deadline();
  /// sum_i backlog[i + shift] * h[i] + extra * h[extra_slot] (extra ignored if the slot is
  /// out of range), in pages, saturated to SIZE_MAX.
  size_t limit_after_shift(unsigned shift, size_t extra, unsigned extra_slot) const;

  std::atomic<int64_t> ms_{-1};
  uint64_t interval_ns_ = 0;
  uint64_t epoch_ns_ = 0;
  uint64_t deadline_ns_ = 0;
  uint64_t jitter_state_ = 0;
  size_t npages_limit_ = SIZE_MAX;
  /// Pages already accounted for at the last advance: max(npages_limit, current pages).
  size_t nunpurged_ = 0;
  /// Pages that appeared in each of the last kNSteps epochs; [kNSteps - 1] is the newest.
  size_t backlog_[kNSteps] = {};
};

}  // namespace je
