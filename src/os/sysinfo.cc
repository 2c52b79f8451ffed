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
#include <cstring>

#include "support/errno_keeper.h"
#include "support/malloc_io.h"

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

namespace {

// The lowest limit in `file` (a memory.max or memory.limit_in_bytes) of the cgroup at `path`
// under `root``base` and of each of its ancestors, lowered into *limit. Absent files, "max"
// and unparseable contents mean no limit at that level.
void lower_along_path(const char* root, const char* base, const char* path, size_t path_len,
                      const char* file, uint64_t* limit) {
  char name[1024];
  char value[64];
  for (;;) {
    const size_t n = je_snprintf(name, sizeof(name), "%s%s%.*s/%s", root, base,
                                 static_cast<int>(path_len), path, file);
    uint64_t v = 0;
    size_t used = 0;
    if (n < sizeof(name) && read_file(name, value, sizeof(value)) > 0 &&
        parse_u64(value, std::strlen(value), 10, &v, &used) && used > 0 && v > 0 && v < *limit) {
      *limit = v;
    }
    if (path_len == 0) return;
    // Up one level: "/a/b" -> "/a" -> "".
    while (path_len > 0 && path[path_len - 1] != '/') path_len--;
    if (path_len > 0) path_len--;
  }
}

// Whether the comma-separated `list` (of length len) names `word`.
bool names(const char* list, size_t len, const char* word) {
  const size_t w = std::strlen(word);
  for (size_t i = 0; i < len;) {
    size_t j = i;
    while (j < len && list[j] != ',') j++;
    if (j - i == w && std::memcmp(list + i, word, w) == 0) return true;
    i = j + 1;
  }
  return false;
}

}  // namespace

size_t memory_limit_at(const char* root, size_t physical) {
  ErrnoKeeper keep;
  uint64_t limit = physical != 0 ? physical : UINT64_MAX;
  char name[512];
  char text[4096];
  je_snprintf(name, sizeof(name), "%s/proc/self/cgroup", root);
  const ssize_t len = read_file(name, text, sizeof(text));
  // Lines "id:controllers:path"; cgroup v2's is "0::path", v1's memory line names "memory".
  for (ssize_t i = 0; len > 0 && i < len;) {
    const char* line = text + i;
    const char* end = static_cast<const char*>(std::memchr(line, '\n', len - i));
    const size_t line_len = end != nullptr ? static_cast<size_t>(end - line) : len - i;
    i += static_cast<ssize_t>(line_len) + 1;
    const char* c1 = static_cast<const char*>(std::memchr(line, ':', line_len));
    if (c1 == nullptr) continue;
    const char* c2 = static_cast<const char*>(std::memchr(c1 + 1, ':', line + line_len - c1 - 1));
    if (c2 == nullptr) continue;
    const char* path = c2 + 1;
    size_t path_len = static_cast<size_t>(line + line_len - path);
    if (path_len == 1 && path[0] == '/') path_len = 0;  // the root: only the mount's own file
    const size_t ctl_len = static_cast<size_t>(c2 - c1 - 1);
    if (ctl_len == 0) {
      lower_along_path(root, "/sys/fs/cgroup", path, path_len, "memory.max", &limit);
      lower_along_path(root, "/sys/fs/cgroup/unified", path, path_len, "memory.max", &limit);
    } else if (names(c1 + 1, ctl_len, "memory")) {
      lower_along_path(root, "/sys/fs/cgroup/memory", path, path_len, "memory.limit_in_bytes",
                       &limit);
    }
  }
  return limit == UINT64_MAX ? 0 : static_cast<size_t>(limit);
}

size_t memory_limit() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGESIZE);
  const size_t physical =
      pages > 0 && page > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page) : 0;
  return memory_limit_at("", physical);
}

unsigned current_cpu() {
  int cpu = sched_getcpu();
  return cpu < 0 ? 0 : static_cast<unsigned>(cpu);
}

}  // namespace je::sysinfo
