// decay.cc: epoch advance, backlog and limit arithmetic (model described in decay.h).
#include "extent/decay.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "support/prng.h"
#include "support/util.h"

namespace je {

// Sanity of the weight table, checked once at compile time.
static_assert(Decay::kSmoothstep[Decay::kNSteps - 1] == uint64_t{1} << Decay::kFixedPointBits);
static_assert(Decay::kSmoothstep[Decay::kNSteps / 2 - 1] == uint64_t{1}
                                                                << (Decay::kFixedPointBits - 1));
static_assert(Decay::kSmoothstep[0] > 0);
static_assert([] {
  for (unsigned i = 1; i < Decay::kNSteps; i++) {
    if (Decay::kSmoothstep[i] <= Decay::kSmoothstep[i - 1]) return false;
  }
  return true;
}());
// The longest window must fit in uint64_t nanoseconds.
static_assert(static_cast<unsigned __int128>(Decay::kMaxMs) * 1'000'000 <= UINT64_MAX);

namespace {

uint64_t add_sat(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

}  // namespace

bool Decay::ms_valid(int64_t decay_ms) { return decay_ms >= -1 && decay_ms <= kMaxMs; }

void Decay::init(uint64_t now_ns, int64_t decay_ms) {
  ms_.store(decay_ms, std::memory_order_relaxed);
  interval_ns_ = decay_ms > 0 ? static_cast<uint64_t>(decay_ms) * kIntervalNsPerMs : 0;
  epoch_ns_ = now_ns;
  // Different objects get different jitter sequences; a restart replays the same sequence,
  // which is harmless (and reproducible in tests).
  jitter_state_ = static_cast<uint64_t>(addr_of(this));
  reset_deadline();
  nunpurged_ = 0;
  std::memset(backlog_, 0, sizeof(backlog_));
  npages_limit_ = decay_ms < 0 ? SIZE_MAX : 0;
  // `purging` is left alone: a purger may be running with the decay mutex dropped.
}

void Decay::reset_deadline() {
  uint64_t delay = interval_ns_;
  if (interval_ns_ > 0) delay += prng_range_u64(&jitter_state_, interval_ns_);
  deadline_ns_ = add_sat(epoch_ns_, delay);
}

size_t Decay::limit_after_shift(unsigned shift, size_t extra, unsigned extra_slot) const {
  // 128-bit accumulator: a slot can in principle hold ~2^45 pages (57-bit address spaces) and
  // a weight is 2^24, so 64 bits are not enough for the worst case.
  unsigned __int128 sum = 0;
  for (unsigned i = 0; i + shift < kNSteps; i++) {
    sum += static_cast<unsigned __int128>(backlog_[i + shift]) * kSmoothstep[i];
  }
  if (extra_slot < kNSteps) sum += static_cast<unsigned __int128>(extra) * kSmoothstep[extra_slot];
  sum >>= kFixedPointBits;
  return sum > SIZE_MAX ? SIZE_MAX : static_cast<size_t>(sum);
}

bool Decay::maybe_advance_epoch(uint64_t now_ns, size_t current_npages) {
  const int64_t decay_ms = ms();
  if (decay_ms < 0) return false;
  if (decay_ms == 0) {
    npages_limit_ = 0;
    return true;
  }
  // now_ns < epoch_ns_ also lands here (deadline_ns_ >= epoch_ns_): a stale time is ignored.
  // With a monotonic clock that only happens when the caller read the clock before another
  // thread advanced this object, so there is nothing to repair.
  if (now_ns < deadline_ns_) return false;

  // >= 1: deadline >= epoch + interval.
  const uint64_t nadvance = (now_ns - epoch_ns_) / interval_ns_;
  if (nadvance == 0) return false;  // only possible with a saturated deadline, ~584 years of uptime
  epoch_ns_ += nadvance * interval_ns_;  // <= now_ns, no overflow

  // Age the backlog: slot i takes the count of slot i + nadvance; vacated (newest) slots are
  // epochs in which nothing was recorded.
  if (nadvance >= kNSteps) {
    std::memset(backlog_, 0, sizeof(backlog_));
  } else {
    const unsigned n = static_cast<unsigned>(nadvance);
    std::memmove(backlog_, backlog_ + n, (kNSteps - n) * sizeof(backlog_[0]));
    std::memset(backlog_ + (kNSteps - n), 0, n * sizeof(backlog_[0]));
  }
  // Everything above what was already accounted for is new since the last advance; it is all
  // attributed to the newest epoch (arrival times within the gap are not known).
  backlog_[kNSteps - 1] = current_npages > nunpurged_ ? current_npages - nunpurged_ : 0;

  npages_limit_ = limit_after_shift(0, 0, kNSteps);
  // Pages the caller has not purged (current above the limit) are still accounted for: they
  // must not be counted again as new at the next advance.
  nunpurged_ = std::max(npages_limit_, current_npages);

  reset_deadline();
  return true;
}

uint64_t Decay::ns_until_purge(size_t current_npages, uint64_t npages_threshold) const {
  const int64_t decay_ms = ms();
  if (decay_ms < 0 || current_npages == 0) return UINT64_MAX;
  if (decay_ms == 0) return 0;

  // Pages that can ever become purgeable are bounded by current_npages; a threshold above it
  // would otherwise mean "sleep forever" and leave a small dirty set unpurged in an idle process.
  const uint64_t want = std::clamp<uint64_t>(npages_threshold, 1, current_npages);
  auto purgeable = [&](size_t limit) -> uint64_t {
    return current_npages > limit ? current_npages - limit : 0;
  };
  if (purgeable(npages_limit_) >= want) return 0;

  // After k single-epoch advances (k >= 1) with current_npages constant, the backlog is shifted
  // by k and the pages not yet recorded (above nunpurged) sit in slot kNSteps - k; later
  // advances record nothing new since nunpurged >= current from then on. The limit is thus
  // non-increasing in k and 0 from k = kNSteps + 1 on, where purgeable == current >= want.
  const size_t pending = current_npages > nunpurged_ ? current_npages - nunpurged_ : 0;
  auto limit_after = [&](unsigned k) { return limit_after_shift(k, pending, kNSteps - k); };
  unsigned lo = 1;            // smallest candidate
  unsigned hi = kNSteps + 1;  // known to satisfy
  while (lo < hi) {
    const unsigned mid = lo + (hi - lo) / 2;
    if (purgeable(limit_after(mid)) >= want) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  // The first crossing is noticed only at the jittered deadline; from the second on, the grid
  // time itself is past any deadline (deadline < epoch + 2 * interval).
  if (lo == 1) return deadline_ns_ - epoch_ns_;
  const unsigned __int128 ns = static_cast<unsigned __int128>(lo) * interval_ns_;
  return ns >= UINT64_MAX ? UINT64_MAX - 1 : static_cast<uint64_t>(ns);
}

}  // namespace je
