// nstime.h: clocks in nanoseconds.
//
// Purpose: one place that reads the clocks. Decay epochs, mutex wait times, background-thread
// sleeps and `stats.arenas.<i>.uptime` all work on plain uint64_t nanosecond counts; callers read
// the clock once and pass the value down, so tests drive time by passing their own values
// instead of through a fake-clock hook.
// Layer: support. Callers: mutex (blocking-path wait time), extent/decay, arena, thread (ticker),
// ctl (uptime).
// Concurrency: stateless and thread-safe; the clock calls are vDSO calls that never allocate.
// Invariants: nstime_now_ns() never goes backwards (CLOCK_MONOTONIC).
// jemalloc mapping: nstime.h/nstime.c (nstime_t, nstime_update, nstime_ns); jemalloc's
// "monotonic" check is unnecessary because CLOCK_MONOTONIC is always available on Linux.
#pragma once

#include <cstdint>

namespace je {

inline constexpr uint64_t kNsPerUs = 1000;
inline constexpr uint64_t kNsPerMs = 1000 * kNsPerUs;
inline constexpr uint64_t kNsPerSec = 1000 * kNsPerMs;
inline constexpr uint64_t kUsPerSec = 1000 * 1000;
inline constexpr uint64_t kMsPerSec = 1000;

/// Nanoseconds on CLOCK_MONOTONIC (arbitrary epoch, never decreases). Use for intervals.
uint64_t nstime_now_ns();

/// Milliseconds in `ns`, truncated.
constexpr uint64_t nstime_ms(uint64_t ns) { return ns / kNsPerMs; }

}  // namespace je
