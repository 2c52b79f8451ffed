/* known_shared: the shared-object half of known_allocs (see known_allocs.cc).  Its frames are
 * symbolised through the MAPPED_LIBRARIES section of a dump, at the address where the loader
 * mapped libknown_shared.so, which is what the test checks. */
#include <stdlib.h>

__attribute__((noinline)) size_t known_shared_alloc(size_t count, size_t size, void** out) {
  for (size_t i = 0; i < count; i++) out[i] = malloc(size);
  return count * size;
}
