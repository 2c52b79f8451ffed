// hold.cc: the memory-return policy's hold and its process-wide budget (see hold.h).
#include "extent/hold.h"

#include <algorithm>

#include "os/sysinfo.h"

namespace je {

namespace {
// ms * 1e6 / 2; even 2 * half fits in 64 bits for the largest decay time (Decay::kMaxMs).
constexpr uint64_t half_window_ns(int64_t ms) { return static_cast<uint64_t>(ms) * 500'000; }

void raise_to(std::atomic<size_t>& peak, size_t now) {
  size_t p = peak.load(std::memory_order_relaxed);
  while (now > p && !peak.compare_exchange_weak(p, now, std::memory_order_relaxed)) {
  }
}
}  // namespace

void Hold::init(const Config& c, uint64_t now_ns) {
  on_ = c.on;
  shares_budget_ = c.on && c.shares_budget;
  immediate_ms_ = c.on && c.immediate_ms > 0 ? c.immediate_ms : 0;
  epoch_ns_ = now_ns;
}

void Hold::grown(size_t npages) {
  const size_t now = active_.fetch_add(npages, std::memory_order_relaxed) + npages;
  if (!on_) return;
  note_busy();
  if (shares_budget_) hold_budget::publish(now - npages, now);
  raise_to(peak_cur_, now);
}

void Hold::shrunk(size_t npages) {
  const size_t before = active_.fetch_sub(npages, std::memory_order_relaxed);
  if (on_) note_busy();
  if (shares_budget_) hold_budget::publish(before, before - npages);
  // The immediate hold's arena may see no decay step for longer than a window (its blocks often
  // live through a whole query), so the level its active pages stood at until this free is
  // kept for the decay step the free makes next (rotate_locked).
  if (immediate_ms_ != 0) raise_to(freed_from_, before);
}

size_t Hold::rotate_locked(uint64_t now_ns, int64_t ms) {
  if (!on_) return 0;
  const size_t freed_from =
      immediate_ms_ != 0 ? freed_from_.exchange(0, std::memory_order_relaxed) : 0;
  const uint64_t half = half_window_ns(ms);
  const uint64_t elapsed = now_ns > epoch_ns_ ? now_ns - epoch_ns_ : 0;
  if (elapsed >= half) {
    // A whole window without a rotation: the older peak is too old to count -- but not the
    // level active stood at until a free since the last decay step: the immediate hold's arena
    // steps at every free, so that level lasted until now. (Without this, the first free after
    // a quiet stretch found its peak "stale" and purged its block at once, although it was
    // freed from the peak this very moment.)
    const size_t now_active = active();
    const bool stale = elapsed >= 2 * half;
    const size_t cur = peak_cur_.exchange(now_active, std::memory_order_relaxed);
    peak_prev_.store(stale ? std::max(now_active, freed_from) : cur, std::memory_order_relaxed);
    // Half windows without extent activity: none if there was some since the last rotation.
    const uint64_t halves = elapsed / half;
    const unsigned quiet = quiet_halves_.load(std::memory_order_relaxed);
    const unsigned next = busy_cur_.exchange(false, std::memory_order_relaxed) ? 0
                          : quiet + halves < kHoldSlackQuietHalves
                              ? static_cast<unsigned>(quiet + halves)
                              : kHoldSlackQuietHalves;
    quiet_halves_.store(next, std::memory_order_relaxed);
    epoch_ns_ = now_ns;
  }
  return held();
}

size_t Hold::held() const {
  const size_t now_active = active();
  const size_t peak = std::max(peak_prev_.load(std::memory_order_relaxed),
                               peak_cur_.load(std::memory_order_relaxed));
  const bool busy = busy_cur_.load(std::memory_order_relaxed) ||
                    quiet_halves_.load(std::memory_order_relaxed) < kHoldSlackQuietHalves;
  const size_t level = peak + hold_slack(peak, busy);
  return level > now_active ? level - now_active : 0;
}

uint64_t Hold::ns_until_rotation_locked(uint64_t now_ns, int64_t ms) const {
  const uint64_t half = half_window_ns(ms);
  const uint64_t elapsed = now_ns > epoch_ns_ ? now_ns - epoch_ns_ : 0;
  return elapsed < half ? half - elapsed : 0;
}

uint64_t Hold::ns_not_before_locked(uint64_t now_ns, int64_t ms, size_t current, size_t decay_limit,
                                    uint64_t threshold, size_t cap) const {
  if (!on_) return 0;
  const size_t hold = std::min(held(), cap);
  const size_t floor = std::max(decay_limit, hold);
  const size_t want = threshold < 1 ? 1 : threshold;
  if (hold == 0 || (current > floor && current - floor >= want)) return 0;
  return ns_until_rotation_locked(now_ns, ms);
}

namespace hold_budget {
namespace {
constinit std::atomic<size_t> g_active{0};
constinit std::atomic<size_t> g_peak_cur{0};
constinit std::atomic<size_t> g_peak_prev{0};
constinit std::atomic<uint64_t> g_epoch_ns{0};
}  // namespace

// Each arena's successive counts are one linear sequence (fetch_add/fetch_sub), so the granule
// crossings its threads publish telescope to floor(count / granule) exactly.
void publish(size_t before, size_t after) {
  const size_t b = before >> kLgGranulePages;
  const size_t a = after >> kLgGranulePages;
  if (a > b) {
    const size_t add = (a - b) << kLgGranulePages;
    raise_to(g_peak_cur, g_active.fetch_add(add, std::memory_order_relaxed) + add);
  } else if (a < b) {
    g_active.fetch_sub((b - a) << kLgGranulePages, std::memory_order_relaxed);
  }
}

size_t active_pages() { return g_active.load(std::memory_order_relaxed); }

size_t peak_pages(uint64_t now_ns, int64_t ms) {
  const uint64_t half = half_window_ns(ms);
  uint64_t epoch = g_epoch_ns.load(std::memory_order_relaxed);
  // The first reader starts the windows: the peak so far is the current half's, not stale.
  if (epoch == 0 && g_epoch_ns.compare_exchange_strong(epoch, now_ns, std::memory_order_relaxed)) {
    epoch = now_ns;
  }
  const uint64_t elapsed = now_ns > epoch ? now_ns - epoch : 0;
  // Whoever moves the epoch rotates; the others read the peaks as they stand.
  if (elapsed >= half &&
      g_epoch_ns.compare_exchange_strong(epoch, now_ns, std::memory_order_relaxed)) {
    const size_t active = active_pages();
    const size_t cur = g_peak_cur.exchange(active, std::memory_order_relaxed);
    g_peak_prev.store(elapsed >= 2 * half ? active : cur, std::memory_order_relaxed);
  }
  return std::max(g_peak_cur.load(std::memory_order_relaxed),
                  g_peak_prev.load(std::memory_order_relaxed));
}

size_t share(size_t own, size_t held, size_t holders, uint64_t now_ns, int64_t ms) {
  const size_t peak = peak_pages(now_ns, ms);
  const size_t active = active_pages();
  // The published sums are short of the truth by less than a granule per arena: that much
  // slack keeps a lone holder's hold exact. The holds' own slack (hold_slack) is allowed in
  // full: only busy arenas have any.
  const size_t level = peak + hold_slack(peak, /*busy=*/true);
  const size_t dip = std::min((level > active ? level - active : 0) + holders * kGranulePages,
                              kept::hold_room_pages());
  if (held <= dip) return SIZE_MAX;
  // Page counts fit in 52 bits; the product needs more than 64.
  using Wide = unsigned __int128;
  return static_cast<size_t>(Wide{own} * dip / held);
}
}  // namespace hold_budget

namespace kept {
namespace {
constinit std::atomic<size_t> g_limit{SIZE_MAX};
constinit std::atomic<size_t> g_cache_bytes{0};
}  // namespace

void init(size_t configured) { set_limit(limit_for(configured, sysinfo::memory_limit())); }
size_t limit() { return g_limit.load(std::memory_order_relaxed); }
void set_limit(size_t bytes) { g_limit.store(bytes, std::memory_order_relaxed); }

// As hold_budget::publish: each cache's counts are one linear sequence, so its granule
// crossings telescope to floor(bytes / granule) exactly.
void cache_publish(size_t before, size_t after, unsigned lg_granule) {
  const size_t b = before >> lg_granule;
  const size_t a = after >> lg_granule;
  if (a > b) {
    g_cache_bytes.fetch_add((a - b) << lg_granule, std::memory_order_relaxed);
  } else if (a < b) {
    g_cache_bytes.fetch_sub((b - a) << lg_granule, std::memory_order_relaxed);
  }
}

size_t cache_bytes() { return g_cache_bytes.load(std::memory_order_relaxed); }

size_t cache_room() {
  const size_t half = limit() / 2;
  const size_t used = cache_bytes();
  return used < half ? half - used : 0;
}

size_t hold_room_pages() {
  const size_t lim = limit();
  if (lim == SIZE_MAX) return SIZE_MAX;
  const size_t used = cache_bytes();
  return used < lim ? (lim - used) >> config::kLgPage : 0;
}
}  // namespace kept

}  // namespace je
