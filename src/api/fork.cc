// fork.cc: pthread_atfork handlers (see fork.h).
#include "api/fork.h"

#include <pthread.h>

#include "api/init.h"
#include "arena/arena.h"
#include "arena/arenas.h"
#include "arena/background_thread.h"
#include "ctl/ctl.h"
#include "extent/dss.h"
#include "extent/emap.h"
#include "meta/base.h"
#include "prof/prof.h"
#include "prof/prof_ctx.h"
#include "thread/tcache.h"
#include "thread/tsd.h"

namespace je::api {

namespace {

template <class F>
void for_each_arena(F f) {
  unsigned n = arenas_narenas_total();
  for (unsigned i = 0; i < n; i++) {
    if (Arena* a = arena_get(i, false)) f(a);
  }
}

void prefork() {
  if (!g_initialized.load(std::memory_order_acquire)) return;
  ctl_prefork();
  prof_prefork();
  prof_ctx_prefork();
  // The switch is held while threads are created, which allocates: take it before any lock
  // an allocation may need.
  background_thread_prefork0();
  tcaches_prefork();
  arenas_prefork();
  background_thread_prefork1();
  for (unsigned stage = 0; stage < Arena::kPreforkStages; stage++) {
    // The radix tree and the global base rank between the ecaches and the arena bases.
    if (stage == 3) {
      g_emap.rtree().prefork();
      base_global()->prefork();
    }
    for_each_arena([stage](Arena* a) { a->prefork(stage); });
  }
  dss_prefork();  // the sbrk mutex is a leaf: innermost
}

void postfork_parent() {
  if (!g_initialized.load(std::memory_order_acquire)) return;
  dss_postfork_parent();
  for_each_arena([](Arena* a) { a->postfork_parent(); });
  base_global()->postfork_parent();
  g_emap.rtree().postfork_parent();
  background_thread_postfork_parent();
  arenas_postfork_parent();
  tcaches_postfork_parent();
  prof_ctx_postfork_parent();
  prof_postfork_parent();
  ctl_postfork_parent();
}

void postfork_child() {
  if (!g_initialized.load(std::memory_order_acquire)) return;
  dss_postfork_child();
  for_each_arena([](Arena* a) { a->postfork_child(); });
  base_global()->postfork_child();
  g_emap.rtree().postfork_child();
  // No background thread exists in the child: the feature reads off there, as in 5.3.0.
  background_thread_postfork_child();
  // Only this thread survives: thread counts and the live-cache list describe it alone.
  Tsd& tsd = t_tsd;
  const bool has_tsd = tsd.state == TsdState::kNominal || tsd.state == TsdState::kNominalSlow;
  arenas_postfork_child(has_tsd ? tsd.arena : nullptr);
  tcaches_postfork_child(tsd.state == TsdState::kNominal ? &tsd.tcache : nullptr);
  prof_ctx_postfork_child();
  prof_postfork_child();
  ctl_postfork_child();
}

}  // namespace

void fork_register() { pthread_atfork(prefork, postfork_parent, postfork_child); }

}  // namespace je::api
