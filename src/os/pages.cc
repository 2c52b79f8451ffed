// pages.cc: see pages.h for the contract.
#include "os/pages.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>

#include "os/sysinfo.h"
#include "support/config.h"
#include "support/errno_keeper.h"
#include "support/malloc_io.h"
#include "support/util.h"

// Older C library headers may lack the newer advice and flags; the values are the kernel ABI.
#ifndef MADV_FREE
#define MADV_FREE 8
#endif
#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

namespace je::pages {
namespace {

enum BootState : int { kNotBooted = 0, kBootedOk = 1, kBootFailed = 2 };

// Written by boot() (and the test hook) before the allocator is used by more than one thread;
// atomics with relaxed order only so that a racing second boot() is not a data race.
constinit std::atomic<int> g_boot_state{kNotBooted};
constinit std::atomic<bool> g_overcommits{false};
constinit std::atomic<ThpMode> g_thp_mode{ThpMode::kNotSupported};
constinit std::atomic<size_t> g_os_page{0};
constinit std::atomic<bool> g_trust_madvise{false};
constinit std::atomic<bool> g_dontneed_zeroes{false};
// Cleared by the boot probe or the first run-time EINVAL.
constinit std::atomic<bool> g_madv_free_ok{false};
// opt.abort (set_abort_on_error): written once before boot(), read-only afterwards.
constinit bool g_abort_on_error = false;

constexpr int kProtCommit = PROT_READ | PROT_WRITE;
constexpr int kProtDecommit = PROT_NONE;

// Reports a failed syscall on stderr with write(2): stdio may allocate and may be locked by the
// caller we are serving.
// An OS call that should not fail did: report it like jemalloc ("<jemalloc>: Error in
// munmap(): ..."), through the installed message writer, and stop if opt.abort asks to.
void report_error(const char* what, int err) {
  io_printf("<jemalloc>: Error in %s(): errno %d\n", what, err);
  if (g_abort_on_error) abort();
}

int map_flags() {
  // With overcommit the kernel would not enforce a reservation anyway; MAP_NORESERVE keeps big
  // retained reservations out of the heuristic mode's accounting.
  return MAP_PRIVATE | MAP_ANONYMOUS |
         (g_overcommits.load(std::memory_order_relaxed) ? MAP_NORESERVE : 0);
}

void* raw_map(void* hint, size_t size, int prot, int extra_flags) {
  void* p = mmap(hint, size, prot, map_flags() | extra_flags, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

void raw_unmap(void* addr, size_t size) {
  if (size != 0 && munmap(addr, size) != 0) report_error("munmap", errno);
}

bool advise(void* addr, size_t size, int advice) { return madvise(addr, size, advice) == 0; }

bool read_overcommit() {
  char buf[32];
  if (sysinfo::read_file("/proc/sys/vm/overcommit_memory", buf, sizeof(buf)) <= 0) return false;
  // 0 = heuristic, 1 = always: both hand out address space without a commit charge that could
  // later fail. 2 = strict accounting: decommit is worth doing.
  return buf[0] == '0' || buf[0] == '1';
}

ThpMode read_thp_mode() {
  char buf[128];
  if (sysinfo::read_file("/sys/kernel/mm/transparent_hugepage/enabled", buf, sizeof(buf)) <= 0) {
    return ThpMode::kNotSupported;
  }
  // The file lists every choice and brackets the active one: "always [madvise] never".
  if (strstr(buf, "[always]") != nullptr) return ThpMode::kAlways;
  if (strstr(buf, "[madvise]") != nullptr) return ThpMode::kDefault;
  if (strstr(buf, "[never]") != nullptr) return ThpMode::kNever;
  return ThpMode::kNotSupported;
}

// MADV_FREE appeared in Linux 4.5; older kernels answer EINVAL.
bool probe_madv_free() {
  void* p = raw_map(nullptr, config::kPage, kProtCommit, 0);
  if (p == nullptr) return false;
  static_cast<volatile char*>(p)[0] = 1;
  bool ok = advise(p, config::kPage, MADV_FREE);
  raw_unmap(p, config::kPage);
  return ok;
}

// Some environments (QEMU user mode, some sandboxes) accept MADV_DONTNEED but leave the old
// contents in place, which would break the "purged extents are zeroed" assumption upstream.
// Returns 1 if zeroing was observed, 0 if not, -1 if the scratch mapping failed.
int probe_dontneed_zeroes() {
  constexpr size_t kProbePages = 2;
  constexpr size_t kSize = kProbePages * config::kPage;
  void* p = raw_map(nullptr, kSize, kProtCommit, 0);
  if (p == nullptr) return -1;
  volatile unsigned char* bytes = static_cast<volatile unsigned char*>(p);
  for (size_t i = 0; i < kSize; i++) bytes[i] = 0xa5;
  int result = 0;
  if (advise(p, kSize, MADV_DONTNEED)) {
    result = 1;
    for (size_t i = 0; i < kSize; i++) {
      if (bytes[i] != 0) {
        result = 0;
        break;
      }
    }
  }
  raw_unmap(p, kSize);
  return result;
}

}  // namespace

bool boot() {
  int state = g_boot_state.load(std::memory_order_acquire);
  if (state != kNotBooted) return state == kBootedOk;
  ErrnoKeeper keep;

  long os_page = sysconf(_SC_PAGESIZE);
  g_os_page.store(os_page > 0 ? static_cast<size_t>(os_page) : 0, std::memory_order_relaxed);
  g_overcommits.store(read_overcommit(), std::memory_order_relaxed);
  g_thp_mode.store(read_thp_mode(), std::memory_order_relaxed);

  // The allocator's page may be a multiple of the kernel's (`--with-lg-page=14` on a 4 KiB
  // kernel): every mapping, purge and protection change is then a whole number of kernel pages.
  // A kernel page larger than ours cannot work; jemalloc refuses to start in that case too.
  bool ok = os_page > 0 && static_cast<size_t>(os_page) <= config::kPage;
  if (os_page > 0 && !ok) {
    io_printf("<jemalloc>: Unsupported system page size\n");
    if (g_abort_on_error) abort();
  }
  if (ok) {
    g_madv_free_ok.store(probe_madv_free(), std::memory_order_relaxed);
    if (g_trust_madvise.load(std::memory_order_relaxed)) {
      g_dontneed_zeroes.store(true, std::memory_order_relaxed);
    } else {
      int z = probe_dontneed_zeroes();
      if (z < 0) ok = false;
      g_dontneed_zeroes.store(z > 0, std::memory_order_relaxed);
    }
  }
  g_boot_state.store(ok ? kBootedOk : kBootFailed, std::memory_order_release);
  return ok;
}

void* map(void* addr, size_t size, size_t alignment, bool* commit) {
  if (size == 0 || !page_aligned(size) || alignment < config::kPage || !is_pow2(alignment)) {
    return nullptr;
  }
  ErrnoKeeper keep;
  if (g_overcommits.load(std::memory_order_relaxed)) *commit = true;
  const int prot = *commit ? kProtCommit : kProtDecommit;

  if (addr != nullptr) {
    if ((addr_of(addr) & (alignment - 1)) != 0) return nullptr;
    // MAP_FIXED_NOREPLACE fails with EEXIST instead of clobbering a live mapping. Kernels before
    // 4.17 ignore the flag and treat addr as a hint, so the result is checked either way.
    void* p = raw_map(addr, size, prot, MAP_FIXED_NOREPLACE);
    if (p == nullptr) return nullptr;
    if (p != addr) {
      raw_unmap(p, size);
      return nullptr;
    }
    return p;
  }

  // Most requests are page-aligned only, and large alignments are often met by chance, so a plain
  // mapping is tried first and kept when it already fits.
  void* p = raw_map(nullptr, size, prot, 0);
  if (p == nullptr) return nullptr;
  if ((addr_of(p) & (alignment - 1)) == 0) return p;
  raw_unmap(p, size);

  // Over-map so that an aligned run of `size` bytes must lie inside, then give back both ends.
  // The kernel aligns to its own page, which may be smaller than ours (--with-lg-page).
  const size_t os_page = g_os_page.load(std::memory_order_relaxed);
  const size_t slack =
      alignment - (os_page != 0 && os_page < config::kPage ? os_page : config::kPage);
  if (size + slack < size) return nullptr;
  const size_t alloc_size = size + slack;
  p = raw_map(nullptr, alloc_size, prot, 0);
  if (p == nullptr) return nullptr;
  const uintptr_t base = addr_of(p);
  const uintptr_t aligned = align_up(base, alignment);
  const size_t lead = aligned - base;
  const size_t trail = alloc_size - lead - size;
  raw_unmap(p, lead);
  raw_unmap(ptr_of(aligned + size), trail);
  return ptr_of(aligned);
}

void unmap(void* addr, size_t size) {
  ErrnoKeeper keep;
  raw_unmap(addr, size);
}

bool commit(void* addr, size_t size) {
  if (g_overcommits.load(std::memory_order_relaxed)) return false;
  ErrnoKeeper keep;
  // Replacing the mapping (rather than mprotect) also discards any old contents: commit() hands
  // back zeroed pages, which the extent layer's "zeroed" bookkeeping relies on.
  void* p = mmap(addr, size, kProtCommit, map_flags() | MAP_FIXED, -1, 0);
  return p != MAP_FAILED && p == addr;
}

bool decommit(void* addr, size_t size) {
  if (g_overcommits.load(std::memory_order_relaxed)) return false;
  ErrnoKeeper keep;
  void* p = mmap(addr, size, kProtDecommit, map_flags() | MAP_FIXED, -1, 0);
  return p != MAP_FAILED && p == addr;
}

bool purge_lazy(void* addr, size_t size) {
  if (!g_madv_free_ok.load(std::memory_order_relaxed)) return false;
  ErrnoKeeper keep;
  if (madvise(addr, size, MADV_FREE) == 0) return true;
  if (errno == EINVAL) {
    // The kernel does not know the advice (e.g. a container image built for a newer kernel);
    // stop asking so every later purge goes straight to the forced path.
    g_madv_free_ok.store(false, std::memory_order_relaxed);
  }
  return false;
}

bool purge_forced(void* addr, size_t size) {
  ErrnoKeeper keep;
  return advise(addr, size, MADV_DONTNEED);
}

bool purge_forced_zeroes() { return g_dontneed_zeroes.load(std::memory_order_relaxed); }

void set_trust_madvise(bool trust) { g_trust_madvise.store(trust, std::memory_order_relaxed); }

void set_abort_on_error(bool abort_on_error) { g_abort_on_error = abort_on_error; }

bool huge(void* addr, size_t size) {
  if (g_thp_mode.load(std::memory_order_relaxed) == ThpMode::kNotSupported) return false;
  ErrnoKeeper keep;
  return advise(addr, size, MADV_HUGEPAGE);
}

bool nohuge(void* addr, size_t size) {
  if (g_thp_mode.load(std::memory_order_relaxed) == ThpMode::kNotSupported) return false;
  ErrnoKeeper keep;
  return advise(addr, size, MADV_NOHUGEPAGE);
}

bool os_overcommits() { return g_overcommits.load(std::memory_order_relaxed); }

ThpMode system_thp_mode() { return g_thp_mode.load(std::memory_order_relaxed); }

size_t os_page_size() { return g_os_page.load(std::memory_order_relaxed); }

size_t resident_bytes(const void* addr, size_t size) {
  if (size == 0) return 0;
  ErrnoKeeper keep;
  // mincore reports one byte per kernel page, which may be smaller than ours (--with-lg-page).
  const size_t os_page = g_os_page.load(std::memory_order_relaxed);
  const size_t pg = os_page != 0 && os_page < config::kPage ? os_page : config::kPage;
  const uintptr_t begin = page_floor(addr_of(addr));
  const uintptr_t end = page_ceil(addr_of(addr) + size);
  // Walk in chunks so the vector fits on the stack.
  constexpr size_t kChunkPages = 512;
  unsigned char vec[kChunkPages];
  size_t resident_pages = 0;
  for (uintptr_t a = begin; a < end;) {
    size_t pages = (end - a) / pg;
    if (pages > kChunkPages) pages = kChunkPages;
    if (mincore(ptr_of(a), pages * pg, vec) == 0) {
      for (size_t i = 0; i < pages; i++) resident_pages += vec[i] & 1;
    } else {
      // ENOMEM: part of the chunk is unmapped. Retry page by page to count what is mapped.
      for (size_t i = 0; i < pages; i++) {
        unsigned char one = 0;
        if (mincore(ptr_of(a + i * pg), pg, &one) == 0) resident_pages += one & 1;
      }
    }
    a += pages * pg;
  }
  return resident_pages * pg;
}

void set_os_overcommits_for_testing(bool overcommits) {
  g_overcommits.store(overcommits, std::memory_order_relaxed);
}

}  // namespace je::pages
