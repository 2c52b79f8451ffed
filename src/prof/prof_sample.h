// prof_sample.h: the sampling distance of the heap profiler.
//
// Purpose: a thread samples the allocation during which its allocated-bytes counter crosses a
// threshold; the distance from one threshold to the next is drawn from a geometric
// distribution with mean 2^lg_sample bytes, so that every allocated byte has the same chance
// 2^-lg_sample of being "the sampled byte" and an allocation of s bytes is sampled with
// probability 1 - (1 - 2^-lg_sample)^s -- the law jeprof's unsampling inverts.
// gap = floor(ln(u) / ln(1 - 2^-lg)) + 1, u uniform in (0, 1]; lg_sample 0 gives gap 1 (every
// allocation). The natural logarithm is computed here (no libm in the core).
// Layer: prof. Callers: the prof module when it arms a thread's next sample; unit tests.
// Concurrency: pure functions; the PRNG state is the caller's (one per thread).
// jemalloc mapping: prof_sample_new_event_wait / prof_sample_next in prof.c (and its use of
// log(3) and prng_lg_range_u64).
#pragma once

#include <cstddef>
#include <cstdint>

namespace je {

/// Natural logarithm of x > 0 (absolute error below 1e-12 for x in (0, 2]).
double prof_ln(double x);

/// e^x for x <= 0 (relative error below 1e-13; 0 below -745).
double prof_exp_neg(double x);

/// Bytes from one sample threshold to the next: geometric with mean 2^lg_sample, at least 1.
/// Advances *prng_state.
uint64_t prof_sample_gap(uint64_t* prng_state, size_t lg_sample);

}  // namespace je
