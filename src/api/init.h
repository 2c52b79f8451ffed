// init.h: library initialization.
//
// Purpose: the first call into the library from any entry point (or a constructor-less
// program's first malloc before main) sets everything up: OS probes, options from all
// MALLOC_CONF sources, arenas, thread-cache geometry, the thread-exit hook, fork handlers.
// Nothing here allocates through malloc. Concurrent first calls serialize on one mutex.
// Layer: api. jemalloc mapping: malloc_init_hard (src/jemalloc.c).
#pragma once

#include <atomic>

namespace je::api {

extern std::atomic<bool> g_initialized;

/// Initializes the library if needed; false if it could not be (then callers fail with ENOMEM).
bool malloc_init();

}  // namespace je::api
