// nstime.cc: clock reads (see nstime.h).
#include "support/nstime.h"

#include <time.h>

namespace je {

namespace {

uint64_t read_clock(clockid_t id) {
  struct timespec ts;
  // Cannot fail for the two clocks used here; keep the value zero if it ever did.
  if (clock_gettime(id, &ts) != 0) return 0;
  return static_cast<uint64_t>(ts.tv_sec) * kNsPerSec + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

uint64_t nstime_now_ns() { return read_clock(CLOCK_MONOTONIC); }

}  // namespace je
