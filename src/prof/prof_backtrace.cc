// prof_backtrace.cc: stack capture through libgcc's unwinder (see prof_backtrace.h).
#include "prof/prof_backtrace.h"

#include <unwind.h>

#include "support/compiler.h"
#include "support/reentrancy.h"

namespace je {

_Unwind_Reason_Code prof_backtrace_frame(struct _Unwind_Context* ctx, void* arg) {
  auto* w = static_cast<ProfBtWalk*>(arg);
  const uintptr_t ip = _Unwind_GetIP(ctx);
  if (ip == 0) return _URC_END_OF_STACK;
  if (w->skip > 0) {
    w->skip--;
    return _URC_NO_REASON;
  }
  w->bt->vec[w->bt->len++] = ip;
  return w->bt->len == kProfBtMax ? _URC_END_OF_STACK : _URC_NO_REASON;
}

JE_NOINLINE unsigned prof_backtrace(ProfBt* bt, unsigned skip) {
  ReentrancyGuard guard;  // an allocation inside the unwinder is not sampled, nor cached
  bt->len = 0;
  // The first frame the unwinder reports is this function's own.
  ProfBtWalk w{bt, skip + 1};
  _Unwind_Backtrace(&prof_backtrace_frame, &w);
  return bt->len;
}

bool prof_backtrace_boot() {
  ProfBt bt;
  return prof_backtrace(&bt, 0) > 0;
}

}  // namespace je
