// thread_churn_test: 200 threads (2000 in the long form) created and exited,
// a few at a time.  Each allocates and frees a mix of sizes; some keep part
// of their memory, which the main thread verifies and frees after the join
// (memory outliving its thread, whose cache was torn down at exit).
#include "stress.h"

namespace {

constexpr int kKeep = 24;
constexpr int kWave = 8;  // threads alive at once

struct Result {
  void* kept[kKeep];
  size_t size[kKeep];
  int nkept;
  bool ok;
};

void* churn(void* arg) {
  Result* r = static_cast<Result*>(arg);
  uintptr_t id = (uintptr_t)r;
  jt::Rng rng(id);
  void* live[64] = {};
  size_t live_n[64] = {};
  r->ok = true;
  for (int i = 0; i < 400; i++) {
    int s = (int)rng.below(64);
    if (live[s] != nullptr) {
      if (stress::verify(live[s], live_n[s]) != live_n[s]) r->ok = false;
      free(live[s]);
    }
    size_t n = stress::skewed_size(rng) / (rng.below(4) == 0 ? 1 : 16) + 1;
    live[s] = malloc(n);
    live_n[s] = n;
    if (live[s] == nullptr) {
      r->ok = false;
      continue;
    }
    stress::fill(live[s], n);
  }
  // Odd threads hand part of their blocks to the main thread.
  r->nkept = 0;
  bool keep = (id / sizeof(Result)) % 2 == 1;
  for (int s = 0; s < 64; s++) {
    if (live[s] == nullptr) continue;
    if (keep && r->nkept < kKeep) {
      r->kept[r->nkept] = live[s];
      r->size[r->nkept] = live_n[s];
      r->nkept++;
    } else {
      if (stress::verify(live[s], live_n[s]) != live_n[s]) r->ok = false;
      free(live[s]);
    }
  }
  // Some threads also touch their per-thread controls before exiting.
  if (rng.below(3) == 0) mallctl("thread.tcache.flush", nullptr, nullptr, nullptr, 0);
  if (rng.below(5) == 0) {
    unsigned a = 0;
    jt::ctl_set("thread.arena", a);
    free(malloc(100));
  }
  return nullptr;
}

}  // namespace

TEST(create_and_exit_threads) {
  const int total = 200 * stress::scale();
  static Result results[kWave];
  int bad = 0, kept_total = 0;
  for (int done = 0; done < total; done += kWave) {
    pthread_t ts[kWave];
    int n = total - done < kWave ? total - done : kWave;
    for (int i = 0; i < n; i++) {
      std::memset(&results[i], 0, sizeof(Result));
      ASSERT_EQ(pthread_create(&ts[i], nullptr, churn, &results[i]), 0);
    }
    for (int i = 0; i < n; i++) pthread_join(ts[i], nullptr);
    for (int i = 0; i < n; i++) {
      if (!results[i].ok) bad++;
      for (int k = 0; k < results[i].nkept; k++) {
        void* p = results[i].kept[k];
        size_t sz = results[i].size[k];
        if (stress::verify(p, sz) != sz || malloc_usable_size(p) < sz) bad++;
        if (k % 2 == 0) {
          free(p);
        } else {
          sdallocx(p, sz, 0);
        }
        kept_total++;
      }
    }
  }
  EXPECT_EQ(bad, 0);
  EXPECT_GT(kept_total, 0);
  // The threads unbound from their arenas: only the main thread remains.
  ASSERT_TRUE(jt::refresh_stats());
  unsigned nthreads = 0;
  char name[128];
  ASSERT_EQ(
      jt::ctl_get(jt::ctl_name(name, "stats.arenas.%d.nthreads", MALLCTL_ARENAS_ALL), &nthreads),
      0);
  EXPECT_LE(nthreads, 1u);
}

TEST(threads_exit_while_others_allocate) {
  // Background allocators keep running while short-lived threads come and go.
  static std::atomic<bool> stop{false};
  static std::atomic<long> bad{0};
  stop = false;
  bad = 0;
  auto background = [](void* arg) -> void* {
    jt::Rng rng((uintptr_t)arg);
    void* slots[128] = {};
    size_t sizes[128] = {};
    while (!stop.load(std::memory_order_relaxed)) {
      int s = (int)rng.below(128);
      if (slots[s] != nullptr) {
        if (stress::verify(slots[s], sizes[s]) != sizes[s]) bad++;
        free(slots[s]);
      }
      sizes[s] = 1 + rng.below(3000);
      slots[s] = malloc(sizes[s]);
      if (slots[s] != nullptr) stress::fill(slots[s], sizes[s]);
    }
    for (void* p : slots) free(p);
    return nullptr;
  };
  pthread_t bg[2];
  for (int i = 0; i < 2; i++) {
    ASSERT_EQ(pthread_create(&bg[i], nullptr, background, (void*)(uintptr_t)(i + 7)), 0);
  }
  static Result results[kWave];
  const int total = 64 * stress::scale();
  int failed = 0;
  for (int done = 0; done < total; done += kWave) {
    pthread_t ts[kWave];
    for (int i = 0; i < kWave; i++) {
      std::memset(&results[i], 0, sizeof(Result));
      if (pthread_create(&ts[i], nullptr, churn, &results[i]) != 0) failed++;
    }
    for (int i = 0; i < kWave; i++) pthread_join(ts[i], nullptr);
    for (int i = 0; i < kWave; i++) {
      if (!results[i].ok) failed++;
      for (int k = 0; k < results[i].nkept; k++) free(results[i].kept[k]);
    }
  }
  stop = true;
  for (pthread_t t : bg) pthread_join(t, nullptr);
  EXPECT_EQ(failed, 0);
  EXPECT_EQ(bad.load(), 0);
}
