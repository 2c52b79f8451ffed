// Unit tests of src/os/sysinfo.
#include "os/sysinfo.h"

#include <errno.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

namespace je {
namespace {

TEST(SysinfoTest, NcpusMatchesAffinity) {
  unsigned n = sysinfo::ncpus();
  EXPECT_GE(n, 1u);
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  EXPECT_EQ(n, static_cast<unsigned>(CPU_COUNT(&set)));
  EXPECT_EQ(sysinfo::ncpus(), n);  // cached, stable
}

TEST(SysinfoTest, NcpusIsComputedOnce) {
  unsigned before = sysinfo::ncpus();
  // Narrowing the affinity mask afterwards does not change the cached answer.
  cpu_set_t saved;
  ASSERT_EQ(sched_getaffinity(0, sizeof(saved), &saved), 0);
  if (CPU_COUNT(&saved) > 1) {
    std::thread t([&] {
      cpu_set_t one;
      CPU_ZERO(&one);
      for (int c = 0; c < CPU_SETSIZE; c++) {
        if (CPU_ISSET(c, &saved)) {
          CPU_SET(c, &one);
          break;
        }
      }
      ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
      EXPECT_EQ(sysinfo::ncpus(), before);
    });
    t.join();
  }
}

TEST(SysinfoTest, ReadFileProcSelfStat) {
  char buf[1024];
  ssize_t n = sysinfo::read_file("/proc/self/stat", buf, sizeof(buf));
  ASSERT_GT(n, 0);
  EXPECT_EQ(strlen(buf), static_cast<size_t>(n));
  // The first field is our pid.
  EXPECT_EQ(strtol(buf, nullptr, 10), static_cast<long>(getpid()));
  EXPECT_NE(strchr(buf, ')'), nullptr);
}

TEST(SysinfoTest, ReadFileTruncatesAndFails) {
  char buf[8];
  ssize_t n = sysinfo::read_file("/proc/self/stat", buf, sizeof(buf));
  EXPECT_EQ(n, 7);
  EXPECT_EQ(buf[7], '\0');
  errno = 77;
  EXPECT_EQ(sysinfo::read_file("/nonexistent/really", buf, sizeof(buf)), -1);
  EXPECT_EQ(errno, 77);  // preserved
  EXPECT_EQ(sysinfo::read_file("/proc/self/stat", buf, 0), -1);
}

TEST(SysinfoTest, ReadLink) {
  char buf[256];
  ssize_t n = sysinfo::read_link("/proc/self/exe", buf, sizeof(buf));
  ASSERT_GT(n, 0);
  EXPECT_EQ(strlen(buf), static_cast<size_t>(n));
  EXPECT_EQ(buf[0], '/');
  EXPECT_NE(strstr(buf, "sysinfo_test"), nullptr);
  EXPECT_EQ(sysinfo::read_link("/proc/self/stat", buf, sizeof(buf)), -1);  // not a link
  char tiny[4];
  EXPECT_EQ(sysinfo::read_link("/proc/self/exe", tiny, sizeof(tiny)), 3);
  EXPECT_EQ(tiny[3], '\0');
}

TEST(SysinfoTest, GetEnv) {
  ASSERT_EQ(setenv("JE_SYSINFO_TEST_VAR", "narenas:3", 1), 0);
  const char* v = sysinfo::get_env("JE_SYSINFO_TEST_VAR");
  ASSERT_NE(v, nullptr);
  EXPECT_STREQ(v, "narenas:3");
  ASSERT_EQ(unsetenv("JE_SYSINFO_TEST_VAR"), 0);
  EXPECT_EQ(sysinfo::get_env("JE_SYSINFO_TEST_VAR"), nullptr);
}

// A fake root with /proc/self/cgroup and cgroup files, for memory_limit_at.
class FakeRoot {
 public:
  FakeRoot() {
    std::string tmpl = ::testing::TempDir() + "je_sysinfo_XXXXXX";
    root_ = mkdtemp(tmpl.data());
  }
  ~FakeRoot() { std::filesystem::remove_all(root_); }
  void put(const std::string& path, const std::string& text) {
    const std::filesystem::path p = root_ + path;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  const char* root() const { return root_.c_str(); }

 private:
  std::string root_;
};

constexpr size_t kGiB = size_t{1} << 30;

TEST(SysinfoTest, MemoryLimitIsTheMachinesWithoutACgroupLimit) {
  FakeRoot r;
  EXPECT_EQ(sysinfo::memory_limit_at(r.root(), 24 * kGiB), 24 * kGiB) << "no /proc/self/cgroup";
  r.put("/proc/self/cgroup", "0::/\n");
  r.put("/sys/fs/cgroup/memory.max", "max\n");
  EXPECT_EQ(sysinfo::memory_limit_at(r.root(), 24 * kGiB), 24 * kGiB) << "memory.max is max";
  EXPECT_EQ(sysinfo::memory_limit_at(r.root(), 0), 0u) << "nothing known";
}

TEST(SysinfoTest, MemoryLimitTakesTheLowestCgroupV2LimitAlongThePath) {
  FakeRoot r;
  r.put("/proc/self/cgroup", "0::/kubepods/pod1/c1\n");
  r.put("/sys/fs/cgroup/kubepods/pod1/c1/memory.max", "max\n");
  r.put("/sys/fs/cgroup/kubepods/pod1/memory.max", "2147483648\n");
  r.put("/sys/fs/cgroup/kubepods/memory.max", "4294967296\n");
  EXPECT_EQ(sysinfo::memory_limit_at(r.root(), 24 * kGiB), 2 * kGiB);
  // Never above the machine's memory.
  EXPECT_EQ(sysinfo::memory_limit_at(r.root(), kGiB), kGiB);
  // A namespaced container sees its own cgroup as the root: the mount's own file counts.
  FakeRoot ns;
  ns.put("/proc/self/cgroup", "0::/\n");
  ns.put("/sys/fs/cgroup/memory.max", "536870912\n");
  EXPECT_EQ(sysinfo::memory_limit_at(ns.root(), 24 * kGiB), kGiB / 2);
}

TEST(SysinfoTest, MemoryLimitReadsCgroupV1AndHybridMounts) {
  FakeRoot r;
  // As on this project's CI machines: v1 controllers, v2 mounted at unified/.
  r.put("/proc/self/cgroup", "4:memory:/process_api/abc\n3:cpuset:/\n0::/\n");
  r.put("/sys/fs/cgroup/memory/process_api/abc/memory.limit_in_bytes", "1073741824\n");
  r.put("/sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
  EXPECT_EQ(sysinfo::memory_limit_at(r.root(), 24 * kGiB), kGiB);
  // The host's path is not visible in the container: the mount's own file is the limit.
  FakeRoot c;
  c.put("/proc/self/cgroup", "9:cpu,memory:/docker/0123\n");
  c.put("/sys/fs/cgroup/memory/memory.limit_in_bytes", "805306368\n");
  EXPECT_EQ(sysinfo::memory_limit_at(c.root(), 24 * kGiB), 768u << 20);
  // Unparseable or zero contents mean no limit at that level.
  FakeRoot z;
  z.put("/proc/self/cgroup", "0::/a\n");
  z.put("/sys/fs/cgroup/a/memory.max", "0\n");
  z.put("/sys/fs/cgroup/memory.max", "lots\n");
  EXPECT_EQ(sysinfo::memory_limit_at(z.root(), 24 * kGiB), 24 * kGiB);
}

TEST(SysinfoTest, MemoryLimitOfThisProcessIsAtMostTheMachines) {
  const size_t pages = static_cast<size_t>(sysconf(_SC_PHYS_PAGES));
  const size_t physical = pages * static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t limit = sysinfo::memory_limit();
  EXPECT_GT(limit, 0u);
  EXPECT_LE(limit, physical);
}

}  // namespace
}  // namespace je
