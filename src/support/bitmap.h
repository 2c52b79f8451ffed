// bitmap.h: fixed-size bitmap with find-first-set.
//
// Purpose: the eset's "which page-size bins are non-empty" index, so a fit search skips empty
// bins with a few word scans.
// Layer: support. Not synchronized.
// jemalloc mapping: fb.h (flat bitmap).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace je {

template <size_t N>
class FixedBitmap {
 public:
  static constexpr size_t kWords = (N + 63) / 64;
  constexpr FixedBitmap() = default;

  void set(size_t i) { w_[i / 64] |= uint64_t{1} << (i % 64); }
  void unset(size_t i) { w_[i / 64] &= ~(uint64_t{1} << (i % 64)); }
  bool get(size_t i) const { return (w_[i / 64] >> (i % 64)) & 1; }
  bool empty() const {
    for (size_t k = 0; k < kWords; k++) {
      if (w_[k] != 0) return false;
    }
    return true;
  }

  /// Index of the first set bit at or after `from`, or N when there is none.
  size_t ffs(size_t from) const {
    if (from >= N) return N;
    size_t k = from / 64;
    uint64_t word = w_[k] & (~uint64_t{0} << (from % 64));
    for (;;) {
      if (word != 0) {
        size_t i = k * 64 + static_cast<size_t>(std::countr_zero(word));
        return i < N ? i : N;
      }
      if (++k == kWords) return N;
      word = w_[k];
    }
  }

 private:
  uint64_t w_[kWords] = {};
};

}  // namespace je
