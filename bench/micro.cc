// bench/micro.cc - Google Benchmark microbenchmarks of the allocation entry
// points: malloc/free over 8 B..1 MiB, a batch variant that defeats the
// per-thread cache's LIFO hot path, new/delete, mallocx/sdallocx, realloc
// growth chains and cross-thread frees.
//
// Linked against libc (+ libbenchmark) only, like every program in bench/:
// run it under an allocator with LD_PRELOAD.  mallocx/sdallocx are resolved
// at run time (bench/common.c); without them the "mallocx_sdallocx" cases
// measure malloc/free and say so in their label and in the context block.

#include "common.h"

#include <benchmark/benchmark.h>

#include <atomic>
#include <cstring>
#include <new>

namespace {

// Sizes: 8 B .. 1 MiB in steps of 8x (8, 64, 512, 4 KiB, 32 KiB, 256 KiB, 1 MiB).
void size_range(benchmark::internal::Benchmark* b) { b->RangeMultiplier(8)->Range(8, 1 << 20); }

void BM_malloc_free(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  for (auto _ : state) {
    void* p = malloc(n);
    benchmark::DoNotOptimize(p);
    free(p);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_malloc_free)->Apply(size_range);

// Many live blocks, freed in allocation order: exercises bins/slabs and
// tcache fill/flush rather than one recycled block.
void BM_malloc_free_batch(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  size_t count = (size_t{32} << 20) / n;  // at most 32 MiB live
  if (count > 1024) count = 1024;
  if (count < 4) count = 4;
  void** ptrs = static_cast<void**>(calloc(count, sizeof(void*)));
  for (auto _ : state) {
    for (size_t i = 0; i < count; i++) {
      ptrs[i] = malloc(n);
      benchmark::DoNotOptimize(ptrs[i]);
    }
    for (size_t i = 0; i < count; i++) free(ptrs[i]);
  }
  free(ptrs);
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(count));
}
BENCHMARK(BM_malloc_free_batch)->Apply(size_range);

void BM_new_delete(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  for (auto _ : state) {
    char* p = new char[n];
    benchmark::DoNotOptimize(p);
    delete[] p;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_new_delete)->Apply(size_range);

void BM_mallocx_sdallocx(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  bench_api_init();
  for (auto _ : state) {
    void* p = bench_mallocx(n, 0);
    benchmark::DoNotOptimize(p);
    bench_sdallocx(p, n, 0);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetLabel(bench_api.jemalloc ? "api=jemalloc" : "api=libc(malloc/free)");
}
BENCHMARK(BM_mallocx_sdallocx)->Apply(size_range);

// 16 B doubled by realloc up to the final size (a growing vector/string),
// touching the new last byte each time, then freed.
void BM_realloc_chain(benchmark::State& state) {
  const size_t final_size = static_cast<size_t>(state.range(0));
  int64_t steps = 0;
  for (auto _ : state) {
    size_t n = 16;
    char* p = static_cast<char*>(malloc(n));
    p[0] = 1;
    while (n < final_size) {
      n *= 2;
      p = static_cast<char*>(realloc(p, n));
      p[n - 1] = 1;
      steps++;
    }
    benchmark::DoNotOptimize(p);
    free(p);
  }
  state.SetItemsProcessed(steps);
}
BENCHMARK(BM_realloc_chain)->RangeMultiplier(16)->Range(4 << 10, 16 << 20);

// Cross-thread free: every benchmark thread fills a batch of 64 blocks and
// swaps it for whatever batch is waiting in a shared mailbox (usually filled
// by another thread), then frees that one.  With one thread the batch comes
// back to its owner; with more, most frees are remote.
constexpr int kCrossBatch = 64;
struct CrossBatch {
  void* p[kCrossBatch];
};
std::atomic<CrossBatch*> g_mailbox{nullptr};

void BM_cross_thread_free(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  CrossBatch* mine = new CrossBatch();
  CrossBatch* spare = new CrossBatch();
  for (auto _ : state) {
    for (int i = 0; i < kCrossBatch; i++) {
      mine->p[i] = malloc(n);
      static_cast<char*>(mine->p[i])[0] = 1;
    }
    CrossBatch* got = g_mailbox.exchange(mine, std::memory_order_acq_rel);
    if (got != nullptr) {
      for (int i = 0; i < kCrossBatch; i++) free(got->p[i]);
      mine = got;
    } else {
      // Only the very first exchange of a run finds the mailbox empty.
      mine = spare;
      spare = nullptr;
    }
  }
  // Every thread has left the loop (Google Benchmark's stop barrier): the
  // last batch in the mailbox still holds live blocks.
  if (CrossBatch* left = g_mailbox.exchange(nullptr, std::memory_order_acq_rel)) {
    for (int i = 0; i < kCrossBatch; i++) free(left->p[i]);
    delete left;
  }
  delete mine;
  delete spare;
  state.SetItemsProcessed(state.iterations() * kCrossBatch);
}
BENCHMARK(BM_cross_thread_free)->Arg(64)->Arg(4096)->ThreadRange(1, 4)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; i++) {
    if (std::strcmp(argv[i], "--info") == 0) return bench_info("micro");
  }
  bench_api_init();
  char desc[512];
  benchmark::AddCustomContext("bench.api", bench_api_name());
  benchmark::AddCustomContext("bench.malloc", bench_allocator_desc(desc, sizeof(desc)));
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
