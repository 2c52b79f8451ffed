// fork.h: fork() safety.
//
// Purpose: pthread_atfork handlers that take every allocator lock in rank order before fork()
// (so no lock is copied into the child in a held state), release them in the parent, and
// reinitialize them in the child, which has only the forking thread.
// Layer: api. jemalloc mapping: jemalloc_prefork / jemalloc_postfork_{parent,child}.
#pragma once

namespace je::api {

/// Registers the handlers (once, after initialization).
void fork_register();

}  // namespace je::api
