// arena_fixture.h: helpers for the unit tests that drive whole arenas (arenas_test,
// background_thread_test). Header-only; the test program boots the library first.
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "arena/arena.h"
#include "extent/emap.h"

namespace je {

/// Allocates and frees n large blocks of `size` bytes in `a`, leaving their pages dirty there.
inline void make_dirty(Arena* a, int n, size_t size) {
  std::vector<void*> v;
  for (int i = 0; i < n; i++) {
    void* p = a->malloc_large(size, 64, false);
    ASSERT_NE(p, nullptr);
    v.push_back(p);
  }
  for (void* p : v) a->dalloc_large(g_emap.lookup(p));
}

}  // namespace je
