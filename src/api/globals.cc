// globals.cc: the exported data symbols (see globals.h).
#include "api/globals.h"

#include "jemalloc/jemalloc.h"
#include "support/compiler.h"
#include "support/malloc_io.h"

extern "C" {
// A program's strong definition wins over this weak one (exported as 'V', as 5.3.0 does).
JE_EXPORT __attribute__((weak)) const char* JE_PUBLIC(malloc_conf) = nullptr;
JE_EXPORT void (*JE_PUBLIC(malloc_message))(void* cbopaque, const char* s) = nullptr;
// The highest-priority option source; only present if the program defines it.
extern __attribute__((weak, visibility("default")))
const char* JE_PUBLIC(malloc_conf_2_conf_harder);
// Exported by jemalloc 5.3.0 for its own tests; kept so the dynamic symbol table matches.
JE_EXPORT void (*je_test_hooks_arena_new_hook)() = nullptr;
JE_EXPORT void (*je_test_hooks_libc_hook)() = nullptr;
}

namespace je::api {

const char* global_malloc_conf() { return JE_PUBLIC(malloc_conf); }

const char* global_conf_harder() {
  return &JE_PUBLIC(malloc_conf_2_conf_harder) != nullptr ? JE_PUBLIC(malloc_conf_2_conf_harder)
                                                          : nullptr;
}

void forward_message(const char* s) {
  void (*m)(void*, const char*) = JE_PUBLIC(malloc_message);
  if (m != nullptr) {
    m(nullptr, s);
  } else {
    io_write_stderr(s);
  }
}

}  // namespace je::api
