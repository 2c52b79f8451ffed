// reentrancy.h: per-thread "inside the allocator, calling out" depth.
//
// Purpose: user extent hooks may call malloc. While one runs, the thread must not use its
// thread cache or take locks it may already hold; the allocation paths check this depth and
// fall back to arena 0 without caching, as jemalloc does (tsd reentrancy_level).
// Layer: support (bottom), so the extent layer can mark hook calls and the thread layer can
// read the mark without an upward include. State: one byte of initial-exec TLS.
#pragma once

#include <cstdint>

#include "support/compiler.h"

namespace je {

extern constinit thread_local int8_t t_reentrancy JE_TLS_IE;

/// RAII: marks the current thread as calling out of the allocator.
class ReentrancyGuard {
 public:
  ReentrancyGuard() { t_reentrancy++; }
  ~ReentrancyGuard() { t_reentrancy--; }
  ReentrancyGuard(const ReentrancyGuard&) = delete;
  ReentrancyGuard& operator=(const ReentrancyGuard&) = delete;
};

inline bool in_reentrant_call() { return t_reentrancy != 0; }

}  // namespace je
