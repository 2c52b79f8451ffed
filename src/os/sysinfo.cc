// sysinfo.cc: see sysinfo.h.
#include "os/sysinfo.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <bit>
#include <cstdint>
#include "support/errno_keeper.h"

namespace je::sysinfo {
namespace {

// 0 = not computed yet.
constinit std::atomic<unsigned> g_ncpus{0};

// Room for 8192 CPUs: glibc's cpu_set_t covers 1024, and sched_getaffinity fails with EINVAL when
// the kernel's mask is wider than the buffer, so a larger stack buffer avoids a heap-allocated
// CPU_ALLOC set on big machines.
constexpr size_t kAffinityWords = 8192 / 64;

unsigned compute_ncpus() {
  uint64_t mask[kAffinityWords] = {};
  if (sched_getaffinity(0, sizeof(mask), reinterpret_cast<cpu_set_t*>(mask)) == 0) {
    unsigned n = 0;
    for (uint64_t w : mask) n += static_cast<unsigned>(std::popcount(w));
    if (n > 0) return n;
  }
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? static_cast<unsigned>(online) : 1u;
}

}  // namespace

unsigned ncpus() {
  unsigned n = g_ncpus.load(std::memory_order_relaxed);
  if (n == 0) {
    ErrnoKeeper keep;
    n = compute_ncpus();
    g_ncpus.store(n, std::memory_order_relaxed);
  }
  return n;
}

ssize_t read_file(const char* path, char* buf, size_t size) {
  if (size == 0) return -1;
  ErrnoKeeper keep;
  int fd;
  do {
    fd = open(path, O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return -1;
  size_t got = 0;
  bool failed = false;
  while (got < size - 1) {
    ssize_t r = read(fd, buf + got, size - 1 - got);
    if (r < 0) {
      if (errno == EINTR) continue;
      failed = true;
      break;
    }
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  close(fd);
  if (failed) return -1;
  buf[got] = '\0';
  return static_cast<ssize_t>(got);
}

ssize_t read_link(const char* path, char* buf, size_t size) {
  if (size == 0) return -1;
  ErrnoKeeper keep;
  ssize_t n = readlink(path, buf, size - 1);
  if (n < 0) return -1;
  buf[n] = '\0';
  return n;
}

const char* get_env(const char* name) {
  ErrnoKeeper keep;
#if defined(__GLIBC__) && defined(_GNU_SOURCE)
  return secure_getenv(name);
#else
  return getenv(name);
#endif
}

unsigned current_cpu() {
  int cpu = sched_getcpu();
  return cpu < 0 ? 0 : static_cast<unsigned>(cpu);
}

}  // namespace je::sysinfo
