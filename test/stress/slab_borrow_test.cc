// slab_borrow_test: arenas taking turns. Four threads, each bound to its own automatic arena,
// alternate between two roles every round: half of them free everything they hold (their slabs
// empty and their pages go dirty), then the other half allocate a few MiB of small blocks while
// the first half keep allocating and freeing small batches in their own arenas. With
// opt.borrow_dirty (ours, on by default) an arena about to grow for a slab may take another
// arena's dirty pages, and the extent changes arenas (doc/compat.md#borrow-dirty) -- here while
// the lending arena allocates, frees and coalesces in the same cache, and a third and fourth
// arena borrow from the same lender.
//
// Checked: every block keeps its pattern until freed; arenas.lookup names the arena of the
// thread that allocated a small block (a borrowed slab is the borrower's); after everything is
// freed and the caches flushed no arena counts a small region allocated; and (ours, borrowing
// on) the allocating half reuse pages the other half freed. With borrow_dirty:false, or under
// jemalloc 5.3.0, that count is reported and not checked.
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <vector>

#include "stress.h"

namespace {

constexpr int kThreads = 4;
constexpr size_t kRoundBytes = 4 << 20;  // what an allocating thread holds at the end of a round
constexpr size_t kMaxBlocks = 8192;      // a cap: kRoundBytes is ~1,750 blocks of the mean size
constexpr uintptr_t kPage = 4096;

struct Block {
  void* p;
  size_t n;
};

// Small sizes only, skewed to the smallest classes: 70% 8..512 B, 30% ..14 KiB.
size_t small_size(jt::Rng& rng) {
  return rng.below(100) < 70 ? 8 + rng.below(505) : 513 + rng.below(14336 - 512);
}

struct Shared {
  pthread_barrier_t barrier;
  std::atomic<int> allocating{0};  // allocating threads not yet done this round
  std::atomic<long> bad_pattern{0}, bad_arena{0}, failed{0};
  std::atomic<long> blocks_on_freed_pages{0}, blocks_allocated{0};
};

struct Worker {
  Shared* sh;
  int index;
  unsigned arena;
  int rounds;
  std::vector<Block> held;       // reserved by the main thread (its arena, not this one's)
  std::vector<uintptr_t> freed;  // pages of what this thread freed last round, sorted
};

Worker g_workers[kThreads];

void check_and_free(Worker* w, const Block& b) {
  if (stress::verify(b.p, b.n) != b.n) w->sh->bad_pattern++;
  if (jt::lookup_arena(b.p) != w->arena) w->sh->bad_arena++;
  free(b.p);
}

bool alloc_one(Worker* w, jt::Rng& rng, Block* out) {
  size_t n = small_size(rng);
  void* p = malloc(n);
  if (p == nullptr) {
    w->sh->failed++;
    return false;
  }
  stress::fill(p, n);
  if (jt::lookup_arena(p) != w->arena) w->sh->bad_arena++;
  *out = Block{p, n};
  return true;
}

// The lender's activity while others borrow: batches allocated, checked and freed in its own
// arena, with its thread cache flushed now and then so that slabs empty and refill.
void churn(Worker* w, jt::Rng& rng) {
  Block batch[64];
  for (int i = 0; w->sh->allocating.load(std::memory_order_acquire) > 0 && i < 100000; i++) {
    int n = 0;
    while (n < 64 && alloc_one(w, rng, &batch[n])) n++;
    for (int k = 0; k < n; k++) check_and_free(w, batch[k]);
    if (i % 8 == 7) mallctl("thread.tcache.flush", nullptr, nullptr, nullptr, 0);
  }
}

void* worker_main(void* arg) {
  Worker* w = static_cast<Worker*>(arg);
  Shared* sh = w->sh;
  jt::Rng rng(1000 + w->index);
  if (mallctl("thread.arena", nullptr, nullptr, &w->arena, sizeof(w->arena)) != 0) sh->failed++;
  for (int r = 0; r < w->rounds; r++) {
    const bool allocating = (w->index + r) % 2 == 0;
    pthread_barrier_wait(&sh->barrier);
    if (!allocating) {
      // Free what the last round built; its pages are what the other half may borrow.
      w->freed.clear();
      for (const Block& b : w->held) {
        w->freed.push_back(reinterpret_cast<uintptr_t>(b.p) / kPage);
        check_and_free(w, b);
      }
      w->held.clear();
      mallctl("thread.tcache.flush", nullptr, nullptr, nullptr, 0);
      std::sort(w->freed.begin(), w->freed.end());
    }
    pthread_barrier_wait(&sh->barrier);
    if (allocating) {
      size_t bytes = 0;
      Block b;
      while (bytes < kRoundBytes && w->held.size() < kMaxBlocks && alloc_one(w, rng, &b)) {
        w->held.push_back(b);
        bytes += b.n;
      }
      sh->allocating.fetch_sub(1, std::memory_order_release);
    } else {
      churn(w, rng);
    }
    pthread_barrier_wait(&sh->barrier);  // the freers' page lists are read-only from here
    if (allocating) {
      long on_freed = 0;
      for (const Block& b : w->held) {
        uintptr_t page = reinterpret_cast<uintptr_t>(b.p) / kPage;
        for (const Worker& o : g_workers) {
          if (&o != w && std::binary_search(o.freed.begin(), o.freed.end(), page)) {
            on_freed++;
            break;
          }
        }
      }
      sh->blocks_on_freed_pages += on_freed;
      sh->blocks_allocated += static_cast<long>(w->held.size());
    }
    pthread_barrier_wait(&sh->barrier);
    if (w->index == 0) sh->allocating.store(kThreads / 2, std::memory_order_release);
  }
  for (const Block& b : w->held) check_and_free(w, b);
  w->held.clear();
  mallctl("thread.tcache.flush", nullptr, nullptr, nullptr, 0);
  return nullptr;
}

}  // namespace

TEST(arenas_take_turns) {
  unsigned narenas = 0;
  ASSERT_EQ(jt::ctl_get("arenas.narenas", &narenas), 0);
  if (narenas < kThreads + 1) {
    jt::skip("needs %d automatic arenas besides arena 0 (arenas.narenas is %u)", kThreads, narenas);
    return;
  }
  Shared sh;
  sh.allocating = kThreads / 2;
  pthread_barrier_init(&sh.barrier, nullptr, kThreads);
  const int rounds = 8 * stress::scale();
  pthread_t tid[kThreads];
  for (int i = 0; i < kThreads; i++) {
    Worker& w = g_workers[i];
    w.sh = &sh;
    w.index = i;
    w.arena = static_cast<unsigned>(i + 1);  // arena 0 is the main thread's
    w.rounds = rounds;
    w.held.reserve(kMaxBlocks);
    w.freed.reserve(kMaxBlocks);
  }
  for (int i = 0; i < kThreads; i++) {
    ASSERT_EQ(pthread_create(&tid[i], nullptr, worker_main, &g_workers[i]), 0);
  }
  for (int i = 0; i < kThreads; i++) pthread_join(tid[i], nullptr);
  pthread_barrier_destroy(&sh.barrier);
  EXPECT_EQ(sh.failed.load(), 0);
  EXPECT_EQ(sh.bad_pattern.load(), 0);
  EXPECT_EQ(sh.bad_arena.load(), 0);
  jt::refresh_stats();
  for (const Worker& w : g_workers) {
    EXPECT_EQ(jt::arena_stat(w.arena, "small.allocated"), 0u);
    EXPECT_GT(jt::arena_stat64(w.arena, "small.nmalloc"), 0u);  // the stats are readable
  }
  // Every allocating round after the first has a freeing half to borrow from.
  const long on_freed = sh.blocks_on_freed_pages.load(), total = sh.blocks_allocated.load();
  std::printf("# %ld of %ld blocks allocated on pages another arena had freed the round before\n",
              on_freed, total);
  bool borrow = false;
  if (!jt::is_reference() && jt::ctl_get("opt.borrow_dirty", &borrow) == 0 && borrow) {
    EXPECT_GT(on_freed, total / 10);
  }
  for (auto& w : g_workers) {
    std::vector<Block>().swap(w.held);
    std::vector<uintptr_t>().swap(w.freed);
  }
}
