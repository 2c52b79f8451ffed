// reentrancy.cc: storage for the per-thread reentrancy depth (see reentrancy.h).
#include "support/reentrancy.h"

namespace je {

constinit thread_local int8_t t_reentrancy JE_TLS_IE = 0;

}  // namespace je
