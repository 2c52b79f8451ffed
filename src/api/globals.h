// globals.h: the public data symbols, seen from inside the library.
//
// Purpose: `malloc_conf` (weak: a program may define its own), `malloc_message` (a writable
// function pointer for all diagnostics), the undefined-weak `malloc_conf_2_conf_harder`, and
// the two `je_test_hooks_*` pointers jemalloc 5.3.0 exports (kept for ABI; never called).
// Layer: api (public names live only here).
#pragma once

namespace je::api {

/// Current values of the program-controlled configuration strings (may be nullptr).
const char* global_malloc_conf();
const char* global_conf_harder();
/// The message writer installed into support/malloc_io: malloc_message if set, else stderr.
void forward_message(const char* s);

}  // namespace je::api
