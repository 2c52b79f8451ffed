// xthread_test: 8 threads in a ring, each allocating blocks and handing them
// to the next thread, which verifies and frees them -- every free is a
// remote free of memory allocated (and cached) by another thread.  Sizes
// 1 B..256 KiB, skewed to small; every block carries a pattern derived from
// its address and size, checked before it is freed.
#include <sched.h>

#include "stress.h"

namespace {

constexpr int kThreads = 8;
constexpr unsigned kRingSize = 256;  // power of two

struct Item {
  void* p;
  size_t n;
  int how;  // which entry point allocated it (selects the matching free)
};

// Single-producer single-consumer ring.
struct Ring {
  Item items[kRingSize];
  alignas(64) std::atomic<unsigned> head{0};  // next to pop (consumer)
  alignas(64) std::atomic<unsigned> tail{0};  // next to push (producer)

  bool push(const Item& it) {
    unsigned t = tail.load(std::memory_order_relaxed);
    if (t - head.load(std::memory_order_acquire) == kRingSize) return false;
    items[t % kRingSize] = it;
    tail.store(t + 1, std::memory_order_release);
    return true;
  }
  bool pop(Item* out) {
    unsigned h = head.load(std::memory_order_relaxed);
    if (h == tail.load(std::memory_order_acquire)) return false;
    *out = items[h % kRingSize];
    head.store(h + 1, std::memory_order_release);
    return true;
  }
};

Ring g_rings[kThreads];  // ring i: thread i -> thread (i + 1) % kThreads
long g_per_thread;
std::atomic<long> g_bad{0};
std::atomic<long> g_oom{0};

Item make_block(jt::Rng& rng) {
  size_t n = stress::skewed_size(rng);
  Item it{nullptr, n, (int)rng.below(4)};
  switch (it.how) {
    case 0: it.p = malloc(n); break;
    case 1: it.p = mallocx(n, 0); break;
    case 2: it.p = calloc(1, n); break;
    default: it.p = mallocx(n, MALLOCX_ALIGN(64)); break;
  }
  if (it.p != nullptr) stress::fill(it.p, n);
  return it;
}

void check_and_free(const Item& it) {
  if (stress::verify(it.p, it.n) != it.n || malloc_usable_size(it.p) < it.n) {
    if (g_bad.fetch_add(1) < 5) {
      std::printf("  corrupted block %p (size %zu, byte %zu)\n", it.p, it.n,
                  stress::verify(it.p, it.n));
    }
  }
  switch (it.how) {
    case 0: free(it.p); break;
    case 1: sdallocx(it.p, it.n, 0); break;
    case 2: dallocx(it.p, 0); break;
    default: sdallocx(it.p, it.n, MALLOCX_ALIGN(64)); break;
  }
}

void* worker(void* arg) {
  int id = (int)(intptr_t)arg;
  jt::Rng rng(1000 + id);
  Ring& out = g_rings[id];
  Ring& in = g_rings[(id + kThreads - 1) % kThreads];
  long produced = 0, consumed = 0;
  Item pending{nullptr, 0, 0};
  bool have_pending = false;
  // A few private blocks too, so that local and remote frees mix in the
  // same caches.
  void* local[32] = {};
  while (produced < g_per_thread || consumed < g_per_thread) {
    bool progress = false;
    if (produced < g_per_thread) {
      if (!have_pending) {
        pending = make_block(rng);
        if (pending.p == nullptr) {
          g_oom++;
          pending.how = -1;  // still sent, so the consumer's count stays right
        }
        have_pending = true;
      }
      if (out.push(pending)) {
        produced++;
        have_pending = false;
        progress = true;
      }
    }
    Item it;
    while (consumed < g_per_thread && in.pop(&it)) {
      if (it.how >= 0) check_and_free(it);
      consumed++;
      progress = true;
    }
    int slot = (int)rng.below(32);
    free(local[slot]);
    local[slot] = malloc(1 + rng.below(512));
    if (!progress) sched_yield();
  }
  for (void* p : local) free(p);
  return nullptr;
}

}  // namespace

TEST(ring_cross_thread_frees) {
  g_per_thread = 12000L * stress::scale();
  g_bad = 0;
  g_oom = 0;
  pthread_t ts[kThreads];
  for (int i = 0; i < kThreads; i++) {
    ASSERT_EQ(pthread_create(&ts[i], nullptr, worker, (void*)(intptr_t)i), 0);
  }
  for (pthread_t t : ts) pthread_join(t, nullptr);
  EXPECT_EQ(g_bad.load(), 0);
  EXPECT_EQ(g_oom.load(), 0);
  // Everything was freed: the per-thread byte counters balance overall, and
  // the heap shrank back (allow for caches and metadata).
  ASSERT_TRUE(jt::refresh_stats());
  size_t allocated = 0;
  ASSERT_EQ(jt::ctl_get("stats.allocated", &allocated), 0);
  EXPECT_LT(allocated, (size_t)64 << 20);
}

TEST(ring_with_tcache_flushes) {
  // The same traffic while the main thread keeps flushing its own cache and
  // purging all arenas.
  g_per_thread = 3000L * stress::scale();
  g_bad = 0;
  pthread_t ts[kThreads];
  for (int i = 0; i < kThreads; i++) {
    ASSERT_EQ(pthread_create(&ts[i], nullptr, worker, (void*)(intptr_t)i), 0);
  }
  char name[128];
  jt::ctl_name(name, "arena.%d.purge", MALLCTL_ARENAS_ALL);
  for (int i = 0; i < 20; i++) {
    mallctl(name, nullptr, nullptr, nullptr, 0);
    mallctl("thread.tcache.flush", nullptr, nullptr, nullptr, 0);
    jt::refresh_stats();
    sched_yield();
  }
  for (pthread_t t : ts) pthread_join(t, nullptr);
  EXPECT_EQ(g_bad.load(), 0);
}
