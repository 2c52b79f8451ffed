// Unit tests of src/os/sysinfo.
#include "os/sysinfo.h"

#include <errno.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

}  // namespace
}  // namespace je
