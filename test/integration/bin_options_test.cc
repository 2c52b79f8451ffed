// bin_options_test: `slab_sizes` and `bin_shards` have jemalloc 5.3.0's effect on the small
// bins -- the geometry arenas.bin.<j>.* reports, the regions a slab really holds, and threads of
// one arena landing in different bins of a class -- observed through mallctl statistics and
// addresses only (doc/options.md, "Value syntax").
//
// Options are read once per process, so each test runs this program again as a child with the
// MALLOC_CONF it needs (child.h). The child works in a manual arena with MALLOCX_TCACHE_NONE, so
// every region it takes comes straight from a bin and the arena's statistics count nothing else.
#include "child.h"

using namespace jt::subproc;

namespace {

constexpr unsigned kBin8 = 0;   // the 8-byte class: one-page slabs of 512 regions by default
constexpr unsigned kBin48 = 3;  // 48 bytes: three-page slabs of 256 regions by default

// ===========================================================================
// Child side.

int arena_flags(unsigned arena) { return MALLOCX_ARENA(arena) | MALLOCX_TCACHE_NONE; }

size_t bin_stat(unsigned arena, unsigned bin, const char* leaf) {
  jt::refresh_stats();
  char name[128];
  return arena_stat(arena, jt::ctl_name(name, "bins.%u.%s", bin, leaf));
}

void emit_geometry(unsigned bin) {
  char name[128], key[128];
  uint32_t nregs = 0, nshards = 0;
  size_t slab = 0;
  jt::ctl_get(jt::ctl_name(name, "arenas.bin.%u.nregs", bin), &nregs);
  jt::ctl_get(jt::ctl_name(name, "arenas.bin.%u.slab_size", bin), &slab);
  jt::ctl_get(jt::ctl_name(name, "arenas.bin.%u.nshards", bin), &nshards);
  emit(jt::ctl_name(key, "nregs_%u", bin), nregs);
  emit(jt::ctl_name(key, "slab_size_%u", bin), (long long)slab);
  emit(jt::ctl_name(key, "nshards_%u", bin), nshards);
}

unsigned new_arena() {
  unsigned a = 0;
  size_t len = sizeof(a);
  if (mallctl("arenas.create", &a, &len, nullptr, 0) != 0) FAIL_MSG("arenas.create failed");
  return a;
}

// Geometry, then one region more than a 48-byte slab holds: how many slabs that took, and
// whether the first slab's regions sit back to back from its start.
void mode_slabs(const char*) {
  emit_geometry(kBin8);
  emit_geometry(kBin48);
  uint32_t nregs = 0;
  jt::ctl_get("arenas.bin.3.nregs", &nregs);
  const unsigned a = new_arena();
  void* blocks[600];
  if (nregs + 1 > sizeof(blocks) / sizeof(blocks[0])) {
    FAIL_MSG("unexpected nregs %u", nregs);
    return;
  }
  for (unsigned i = 0; i <= nregs; i++) blocks[i] = mallocx(48, arena_flags(a));
  emit("slabs_for_nregs_plus_one", (long long)bin_stat(a, kBin48, "curslabs"));
  unsigned packed = 1;
  for (unsigned i = 1; i < nregs; i++) {
    if ((char*)blocks[i] - (char*)blocks[0] == (ptrdiff_t)(i * 48)) packed++;
  }
  emit("first_slab_regions_in_order", packed);
  for (unsigned i = 0; i <= nregs; i++) dallocx(blocks[i], arena_flags(a));
  emit("slabs_after_free", (long long)bin_stat(a, kBin48, "curslabs"));
}

struct ThreadJob {
  unsigned arena;
  void* p;
};

void* shard_thread(void* arg) {
  auto* job = static_cast<ThreadJob*>(arg);
  free(malloc(1));  // the first allocation binds the thread to an automatic arena (and a shard)
  job->p = mallocx(8, arena_flags(job->arena));
  return nullptr;
}

// Two threads, one after the other, each binding to the (single) automatic arena and then
// taking one 8-byte region from a manual arena: with one shard they share a slab, with two they
// were dealt different shards (tickets 1 and 2 -- this thread took 0) and so different slabs.
void mode_shards(const char*) {
  emit_geometry(kBin8);
  emit_geometry(kBin48);
  free(malloc(1));
  const unsigned a = new_arena();
  ThreadJob jobs[2] = {{a, nullptr}, {a, nullptr}};
  for (ThreadJob& job : jobs) {
    pthread_t t;
    if (pthread_create(&t, nullptr, shard_thread, &job) != 0) {
      FAIL_MSG("pthread_create failed");
      return;
    }
    pthread_join(t, nullptr);
  }
  const uintptr_t page0 = reinterpret_cast<uintptr_t>(jobs[0].p) >> 12;
  const uintptr_t page1 = reinterpret_cast<uintptr_t>(jobs[1].p) >> 12;
  emit("same_slab", page0 == page1);
  emit("slabs", (long long)bin_stat(a, kBin8, "curslabs"));
  emit("nmalloc", (long long)bin_stat(a, kBin8, "nmalloc"));
  // Freed here, by a third thread: each region goes back to the bin it came from.
  for (ThreadJob& job : jobs) dallocx(job.p, arena_flags(a));
  emit("slabs_after_free", (long long)bin_stat(a, kBin8, "curslabs"));
  emit("ndalloc", (long long)bin_stat(a, kBin8, "ndalloc"));
}

constexpr Mode kModes[] = {
    {"noop", mode_noop},
    {"slabs", mode_slabs},
    {"shards", mode_shards},
};

}  // namespace

// ---------------------------------------------------------------------------

TEST(slab_sizes_default_geometry) {
  Child c;
  if (!child(&c, "slabs", nullptr)) return;
  EXPECT_CHILD(c, "nregs_3", kEq, 256);
  EXPECT_CHILD(c, "slab_size_3", kEq, 12288);
  EXPECT_CHILD(c, "slabs_for_nregs_plus_one", kEq, 2);
  EXPECT_CHILD(c, "first_slab_regions_in_order", kEq, 256);
  EXPECT_CHILD(c, "slabs_after_free", kEq, 0);
}

TEST(slab_sizes_one_page_slabs_hold_85_regions_of_48_bytes) {
  Child c;
  if (!child(&c, "slabs", "slab_sizes:48-48:1")) return;
  EXPECT_CHILD(c, "nregs_3", kEq, 85);  // 4096 / 48, the last 16 bytes unused
  EXPECT_CHILD(c, "slab_size_3", kEq, 4096);
  EXPECT_CHILD(c, "nregs_0", kEq, 512);  // outside the range: unchanged
  EXPECT_CHILD(c, "slab_size_0", kEq, 4096);
  EXPECT_CHILD(c, "slabs_for_nregs_plus_one", kEq, 2);
  EXPECT_CHILD(c, "first_slab_regions_in_order", kEq, 85);
  EXPECT_CHILD(c, "slabs_after_free", kEq, 0);
}

TEST(slab_sizes_clamp_to_512_regions) {
  Child c;
  // 8 bytes x 512 fill one page, so 1000 pages become 1; 48 bytes x 512 take 6 pages.
  if (!child(&c, "slabs", "slab_sizes:1-100:1000")) return;
  EXPECT_CHILD(c, "nregs_0", kEq, 512);
  EXPECT_CHILD(c, "slab_size_0", kEq, 4096);
  EXPECT_CHILD(c, "nregs_3", kEq, 512);
  EXPECT_CHILD(c, "slab_size_3", kEq, 6 * 4096);
  EXPECT_CHILD(c, "slabs_for_nregs_plus_one", kEq, 2);
  EXPECT_CHILD(c, "first_slab_regions_in_order", kEq, 512);
}

TEST(bin_shards_default_threads_share_the_bin) {
  Child c;
  if (!child(&c, "shards", "narenas:1")) return;
  EXPECT_CHILD(c, "nshards_0", kEq, 1);
  EXPECT_CHILD(c, "same_slab", kEq, 1);
  EXPECT_CHILD(c, "slabs", kEq, 1);
  EXPECT_CHILD(c, "nmalloc", kEq, 2);
  EXPECT_CHILD(c, "slabs_after_free", kEq, 0);
}

TEST(bin_shards_deal_threads_of_an_arena_over_the_bins) {
  Child c;
  if (!child(&c, "shards", "narenas:1,bin_shards:8-8:2")) return;
  EXPECT_CHILD(c, "nshards_0", kEq, 2);
  EXPECT_CHILD(c, "nshards_3", kEq, 1);
  EXPECT_CHILD(c, "same_slab", kEq, 0);
  EXPECT_CHILD(c, "slabs", kEq, 2);
  // Statistics report the class's shards as one bin.
  EXPECT_CHILD(c, "nmalloc", kEq, 2);
  EXPECT_CHILD(c, "ndalloc", kEq, 2);
  EXPECT_CHILD(c, "slabs_after_free", kEq, 0);
}

TEST(bin_shards_invalid_count_warns_and_keeps_one) {
  Child c;
  if (!child(&c, "shards", "narenas:1,bin_shards:8-8:65")) return;
  EXPECT_TRUE(contains(c.err, "<jemalloc>: Invalid settings for bin_shards: bin_shards:8-8:65"));
  EXPECT_CHILD(c, "nshards_0", kEq, 1);
  EXPECT_CHILD(c, "same_slab", kEq, 1);
}

int main(int argc, char** argv) { return run_main(argc, argv, kModes); }
