// resize_test: what growing a block with realloc / rallocx / xallocx promises beyond the copy,
// under options that change it -- each case in a child process with its own MALLOC_CONF (see
// child.h), so run.sh's variants do not repeat it.
//  - opt.zero (zero:true): every byte a resize adds is zero, whether the block grew in place
//    or moved, with the thread cache on or off (5.3.0 applies opt.zero to rallocx, realloc and
//    xallocx alike).
#include "child.h"

using namespace jt::subproc;

namespace {

// ===========================================================================
// Child side.

constexpr unsigned char kMagic = 0x61;
constexpr size_t kLargeMin = 16385;  // the smallest large request (SC_SMALL_MAXCLASS + 1)
constexpr size_t kGrowTo = 256 << 10;

// Leaves freed memory full of kMagic in the size range the growth walks through, so that a
// resize that reuses it without zeroing shows.
void dirty_freed_memory(size_t lo, size_t hi) {
  static void* blocks[256];
  int n = 0;
  for (size_t sz = lo; sz <= hi && n < 256; sz += sz / 4) {
    for (int i = 0; i < 4 && n < 256; i++) {
      void* p = malloc(sz);
      if (p == nullptr) break;
      std::memset(p, kMagic, malloc_usable_size(p));
      blocks[n++] = p;
    }
  }
  for (int i = 0; i < n; i++) free(blocks[i]);
}

// Grows one block from kLargeMin past kGrowTo a byte beyond its usable size at a time, checking
// that the bytes each step adds are zero and filling them with kMagic, as jemalloc's own
// unit/zero does. `how`: "rallocx", "realloc" or "xallocx" (xallocx first, rallocx when it
// cannot grow in place); "rallocx_nocache" passes MALLOCX_TCACHE_NONE.
void mode_grow(const char* how) {
  mode_noop(nullptr);
  const bool use_realloc = std::strcmp(how, "realloc") == 0;
  const bool use_xallocx = std::strcmp(how, "xallocx") == 0;
  const int flags = std::strcmp(how, "rallocx_nocache") == 0 ? MALLOCX_TCACHE_NONE : 0;
  long long nonzero = 0, first_bad = -1, moved = 0, in_place = 0, steps = 0;
  for (int round = 0; round < 4; round++) {
    dirty_freed_memory(kLargeMin, 2 * kGrowTo);
    auto* s = static_cast<unsigned char*>(mallocx(kLargeMin, flags));
    if (s == nullptr) {
      FAIL_MSG("mallocx failed");
      return;
    }
    size_t prev = 0;
    for (size_t sz = sallocx(s, 0); sz <= kGrowTo; prev = sz, sz = sallocx(s, 0)) {
      for (size_t i = prev; i < sz; i++) {
        if (s[i] != 0) {
          if (first_bad < 0) first_bad = (long long)i;
          nonzero++;
        }
        s[i] = kMagic;
      }
      steps++;
      unsigned char* t = s;
      if (use_xallocx && xallocx(s, sz + 1, 0, flags) > sz) {
        in_place++;
        continue;
      }
      t = static_cast<unsigned char*>(use_realloc ? realloc(s, sz + 1) : rallocx(s, sz + 1, flags));
      if (t == nullptr) {
        FAIL_MSG("growth failed");
        return;
      }
      (t == s ? in_place : moved)++;
      s = t;
    }
    dallocx(s, flags);
  }
  emit("steps", steps);
  emit("nonzero", nonzero);
  emit("first_bad", first_bad);
  emit("moved", moved);
  emit("in_place", in_place);
}

constexpr Mode kModes[] = {
    {"noop", mode_noop},
    {"grow", mode_grow},
};

// ===========================================================================
// Parent side.

TEST(zero_true_zeroes_bytes_gained_by_growth) {
  Child c;
  for (const char* conf : {"zero:true", "zero:true,tcache:false"}) {
    for (const char* how : {"rallocx", "rallocx_nocache", "realloc", "xallocx"}) {
      if (!child(&c, "grow", conf, how)) return;
      EXPECT_CHILD(c, "nonzero", kEq, 0);
      EXPECT_CHILD(c, "first_bad", kEq, -1);
      // Both ways of growing were exercised.
      EXPECT_CHILD(c, "in_place", kGt, 0);
      EXPECT_CHILD(c, "moved", kGt, 0);
    }
  }
}

TEST(without_zero_growth_may_expose_old_bytes) {
  // Control: the walk above does reuse freed memory, so zero:true had something to clear.
  Child c;
  long long nonzero = 0;
  for (const char* how : {"rallocx", "realloc"}) {
    if (!child(&c, "grow", nullptr, how)) return;
    nonzero += value(c, "nonzero");
  }
  EXPECT_GT(nonzero, 0);
}

}  // namespace

int main(int argc, char** argv) { return run_main(argc, argv, kModes); }
