// prof_backtrace.cc: stack capture through libgcc's unwinder (see prof_backtrace.h).
#include "prof/prof_backtrace.h"

#include <unwind.h>

#include <atomic>

#include "support/compiler.h"
#include "support/reentrancy.h"

namespace je {

constinit unsigned g_prof_bt_depth = kProfBtMax;

void prof_backtrace_set_depth(unsigned depth) {
  g_prof_bt_depth = depth < 1 ? 1 : depth > kProfBtMax ? kProfBtMax : depth;
}

_Unwind_Reason_Code prof_backtrace_frame(struct _Unwind_Context* ctx, void* arg) {
  auto* w = static_cast<ProfBtWalk*>(arg);
  const uintptr_t ip = _Unwind_GetIP(ctx);
  if (ip == 0) return _URC_END_OF_STACK;
  if (w->skip > 0) {
    w->skip--;
    return _URC_NO_REASON;
  }
  w->bt->vec[w->bt->len++] = ip;
  return w->bt->len >= g_prof_bt_depth ? _URC_END_OF_STACK : _URC_NO_REASON;
}

namespace {

constinit std::atomic<ProfBacktraceHook> g_hook{nullptr};

// The libgcc walk itself (never through the hook: a client hook may chain to the default one).
JE_NOINLINE unsigned unwind(ProfBt* bt, unsigned skip) {
  bt->len = 0;
  // The first frame the unwinder reports is this function's own.
  ProfBtWalk w{bt, skip + 1};
  _Unwind_Backtrace(&prof_backtrace_frame, &w);
  return bt->len;
}

}  // namespace

bool prof_backtrace_hooked() {
  const ProfBacktraceHook hook = g_hook.load(std::memory_order_acquire);
  return hook != nullptr && hook != &prof_backtrace_default_hook;
}

ProfBacktraceHook prof_backtrace_hook_get() { return g_hook.load(std::memory_order_acquire); }

void prof_backtrace_hook_set(ProfBacktraceHook hook) {
  g_hook.store(hook, std::memory_order_release);
}

JE_NOINLINE void prof_backtrace_default_hook(void** vec, unsigned* len, unsigned max_len) {
  ReentrancyGuard guard;
  ProfBt bt;
  unwind(&bt, 0);
  unsigned n = bt.len < max_len ? bt.len : max_len;
  for (unsigned i = 0; i < n; i++) vec[i] = reinterpret_cast<void*>(bt.vec[i]);
  *len = n;
}

JE_NOINLINE unsigned prof_backtrace(ProfBt* bt, unsigned skip) {
  ReentrancyGuard guard;  // an allocation inside the unwinder is not sampled, nor cached
  bt->len = 0;
  if (prof_backtrace_hooked()) {
    const ProfBacktraceHook hook = g_hook.load(std::memory_order_acquire);
    // A client's hook: its frames as given (at most the depth; `skip` concerns our unwinder).
    void* frames[kProfBtMax];
    unsigned n = 0;
    const unsigned depth = g_prof_bt_depth;
    hook(frames, &n, depth);
    if (n > depth) n = depth;
    for (unsigned i = 0; i < n; i++) bt->vec[i] = reinterpret_cast<uintptr_t>(frames[i]);
    bt->len = n;
    return n;
  }
  return unwind(bt, skip + 1);  // + this function's frame
}

bool prof_backtrace_boot() {
  ReentrancyGuard guard;
  ProfBt bt;
  return unwind(&bt, 0) > 0;
}

}  // namespace je
