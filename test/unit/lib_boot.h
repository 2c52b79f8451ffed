// lib_boot.h: the library's boot sequence (what src/api/init.cc does, minus option parsing and
// fork handlers) for unit tests that drive the upper layers directly. Idempotent per process.
#pragma once

#include <gtest/gtest.h>

#include "arena/arenas.h"
#include "meta/base.h"
#include "os/pages.h"
#include "thread/tcache.h"
#include "thread/tsd.h"

namespace je {

inline void boot_library_for_tests() {
  static bool booted = false;
  if (booted) return;
  ASSERT_TRUE(pages::boot());
  ASSERT_NE(base_global(), nullptr);
  ASSERT_TRUE(arenas_boot());
  tcache_boot();
  ASSERT_TRUE(tsd_boot(nullptr));
  booted = true;
}

}  // namespace je
