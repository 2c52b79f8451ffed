// prof_sample.cc: geometric sampling distances (see prof_sample.h).
#include "prof/prof_sample.h"

#include <atomic>
#include <bit>

#include "support/compiler.h"
#include "support/prng.h"

namespace je {

double prof_ln(double x) {
  // x = m * 2^e with m in [1, 2): ln x = e ln 2 + ln m, and ln m = 2 atanh(s) with
  // s = (m - 1) / (m + 1) in [0, 1/3), whose odd series converges fast.
  constexpr double kLn2 = 0.6931471805599453094;
  const uint64_t bits = std::bit_cast<uint64_t>(x);
  int e = static_cast<int>((bits >> 52) & 0x7ff);
  uint64_t mant = bits & ((uint64_t{1} << 52) - 1);
  if (e == 0) {  // subnormal: normalize
    int shift = std::countl_zero(mant) - 11;
    mant = (mant << shift) & ((uint64_t{1} << 52) - 1);
    e = 1 - shift;
  }
  const double m = std::bit_cast<double>(mant | (uint64_t{1023} << 52));
  const double s = (m - 1.0) / (m + 1.0);
  const double s2 = s * s;
  double term = s;
  double sum = 0.0;
  for (int k = 1; k < 40; k += 2) {
    // The terms only shrink (s2 < 1/9): once one no longer changes the sum, neither would any
    // later one, so stopping here returns the very bits the full series gives, in about half
    // the steps for a uniform draw.
    const double next = sum + term / k;
    if (next == sum) break;
    sum = next;
    term *= s2;
  }
  return (e - 1023) * kLn2 + 2.0 * sum;
}

double prof_exp_neg(double x) {
  if (x > 0) x = 0;
  if (x < -745.0) return 0.0;
  // x = k ln 2 + r with |r| <= ln 2 / 2; e^x = 2^k e^r, e^r by its Taylor series.
  constexpr double kLn2 = 0.6931471805599453094;
  const int k = static_cast<int>(x / kLn2 - 0.5);
  const double r = x - k * kLn2;
  double term = 1.0;
  double sum = 1.0;
  for (int i = 1; i < 24; i++) {
    term *= r / i;
    // |r| <= ln 2 / 2 < 1, so the terms only shrink: the first one that leaves the sum as it
    // is ends the series with the same bits (a few steps for the small x of a sampled block).
    const double next = sum + term;
    if (next == sum) break;
    sum = next;
  }
  // 2^k, k in [-1075, 0], as a product of representable powers (subnormals included).
  double scale = 1.0;
  int kk = k;
  while (kk < -1000) {
    scale *= 1.0 / 1.0715086071862673e301;  // 2^-1000
    kk += 1000;
  }
  scale *= std::bit_cast<double>(static_cast<uint64_t>(1023 + kk) << 52);
  return sum * scale;
}

namespace {

// ln(1 - 2^-lg), one per rate, computed on first use: it is the same for every draw at a rate,
// and at the default 19 (1 - p near 2, the series' slowest case) it cost as much as the draw's
// own logarithm. Racing threads store the same bits; 0.0 (never a value: 1 - p < 1) is "not yet".
constinit std::atomic<double> g_ln1mp[64] = {};

double ln_one_minus_p(size_t lg) {
  double v = g_ln1mp[lg].load(std::memory_order_relaxed);
  if (JE_LIKELY(v != 0.0)) return v;
  const double p = 1.0 / static_cast<double>(uint64_t{1} << lg);
  // For small p, 1 - p rounds (to 1.0 beyond 2^-53), so use its series instead.
  v = p < 1.0 / 1048576.0 ? -p - p * p / 2.0 : prof_ln(1.0 - p);
  g_ln1mp[lg].store(v, std::memory_order_relaxed);
  return v;
}

}  // namespace

uint64_t prof_sample_gap(uint64_t* prng_state, size_t lg_sample) {
  if (lg_sample == 0) return 1;
  // u in (0, 1]: 53 random bits plus one, scaled.
  const uint64_t r = prng_lg_range_u64(prng_state, 53);
  const double u = static_cast<double>(r + 1) * (1.0 / 9007199254740992.0);
  const double gap = prof_ln(u) / ln_one_minus_p(lg_sample < 63 ? lg_sample : 63);
  // Beyond 2^62 the draw is "never" for any practical purpose.
  if (!(gap < 4.6e18)) return uint64_t{1} << 62;
  return static_cast<uint64_t>(gap) + 1;
}

}  // namespace je
