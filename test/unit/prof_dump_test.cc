// Unit tests for src/prof/prof_dump: the heap_v2 pieces byte for byte (header, count lines with
// and without thread names, backtrace lines), the prof_unbias transform checked through
// jeprof's own correction, the automatic file names, the MAPPED_LIBRARIES section, and the
// writer's buffering and error reporting.
#include "prof/prof_dump.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "prof/prof_sample.h"

namespace {

// Runs `fill` on a writer over a temporary file and returns what it wrote.
template <class F>
std::string written(F fill, bool* ok = nullptr) {
  // An anonymous file: no path, nothing left behind.
  int fd = memfd_create("prof_dump_test", 0);
  EXPECT_GE(fd, 0);
  je::ProfDumpWriter w(fd);
  fill(w);
  bool flushed = w.flush();
  if (ok != nullptr) *ok = flushed;
  std::string out;
  lseek(fd, 0, SEEK_SET);
  char buf[4096];
  ssize_t r;
  while ((r = read(fd, buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(r));
  close(fd);
  return out;
}

TEST(ProfDump, HeaderCountAndBacktraceLines) {
  const je::ProfCnt c{3, 3072, 0, 0};
  const uintptr_t bt[] = {0x401000, 0x7f0000001234};
  std::string s = written([&](je::ProfDumpWriter& w) {
    je::prof_dump_header(w, 524288);
    je::prof_dump_cnt_line(w, -1, c, 524288, false, nullptr);
    je::prof_dump_cnt_line(w, 0, c, 524288, false, "worker one");
    je::prof_dump_cnt_line(w, 7, je::ProfCnt{1, 16, 5, 80}, 524288, false, "");
    je::prof_dump_bt_line(w, bt, 2);
  });
  EXPECT_EQ(s,
            "heap_v2/524288\n"
            "  t*: 3: 3072 [0: 0]\n"
            "  t0: 3: 3072 [0: 0] worker one\n"
            "  t7: 1: 16 [5: 80]\n"
            "@ 0x401000 0x7f0000001234\n");
}

// jeprof's correction of a written pair (n, s): both times 1 / (1 - exp(-(s/n)/R)).
void reader_correct(uint64_t n, uint64_t s, double R, double* n_out, double* s_out) {
  const double scale = 1.0 / (1.0 - std::exp(-(static_cast<double>(s) / n) / R));
  *n_out = n * scale;
  *s_out = s * scale;
}

TEST(ProfDump, UnbiasIsUndoneByTheReader) {
  struct Case {
    uint64_t objs, bytes, period;
  } cases[] = {{100, 102400, 1024},
               {1000, 16000, 4096},
               {50, 50 << 20, 524288},
               {7, 7 * 4096, 4096},
               {123456, 123456ull * 48, 524288}};
  for (const Case& k : cases) {
    uint64_t n, s;
    je::prof_unbias_pair(k.objs, k.bytes, k.period, &n, &s);
    ASSERT_GT(n, 0u);
    double rn, rs;
    reader_correct(n, s, static_cast<double>(k.period), &rn, &rs);
    // Exact but for the rounding of the written object count to an integer.
    const double tol = 1.0 / static_cast<double>(n);
    EXPECT_NEAR(rs / static_cast<double>(k.bytes), 1.0, tol) << k.objs << " " << k.bytes;
    EXPECT_NEAR(rn / static_cast<double>(k.objs), 1.0, tol) << k.objs << " " << k.bytes;
  }
  // 100 objects of 1 KiB at R = 1 KiB: y = 102400 (1 - 1/e) = 64729.1, x = 1024 -> 63 objects.
  uint64_t n, s;
  je::prof_unbias_pair(100, 102400, 1024, &n, &s);
  EXPECT_EQ(n, 63u);
  EXPECT_EQ(s, 64729u);
  je::prof_unbias_pair(0, 0, 1024, &n, &s);
  EXPECT_EQ(n, 0u);
  EXPECT_EQ(s, 0u);
}

TEST(ProfDump, ExpMatchesLibm) {
  for (double x : {0.0, -1e-9, -0.5, -1.0, -3.7, -20.0, -700.0, -744.0}) {
    EXPECT_NEAR(je::prof_exp_neg(x) / std::exp(x), 1.0, 1e-12) << x;
  }
  EXPECT_EQ(je::prof_exp_neg(-800.0), 0.0);
}

TEST(ProfDump, FileNames) {
  char buf[64];
  ASSERT_TRUE(je::prof_dump_filename(buf, sizeof(buf), "jeprof", 1234, 0, 'm', 0));
  EXPECT_STREQ(buf, "jeprof.1234.0.m0.heap");
  ASSERT_TRUE(je::prof_dump_filename(buf, sizeof(buf), "/var/lib/x", 7, 12, 'i', 3));
  EXPECT_STREQ(buf, "/var/lib/x.7.12.i3.heap");
  ASSERT_TRUE(je::prof_dump_filename(buf, sizeof(buf), "p", 9, 5, 'u', 1));
  EXPECT_STREQ(buf, "p.9.5.u1.heap");
  ASSERT_TRUE(je::prof_dump_filename(buf, sizeof(buf), "p", 9, 6, 'f', 0));
  EXPECT_STREQ(buf, "p.9.6.f.heap");
  EXPECT_FALSE(je::prof_dump_filename(buf, 10, "jeprof", 1234, 0, 'm', 0));
}

TEST(ProfDump, MappedLibrariesListThisProgram) {
  std::string s = written([](je::ProfDumpWriter& w) { EXPECT_TRUE(je::prof_dump_maps(w)); });
  ASSERT_EQ(s.rfind("\nMAPPED_LIBRARIES:\n", 0), 0u);
  EXPECT_NE(s.find("prof_dump_test"), std::string::npos);
  EXPECT_NE(s.find("r-xp"), std::string::npos);
}

TEST(ProfDump, WriterBuffersLargeOutputAndReportsErrors) {
  std::string big(100000, 'x');
  std::string s = written([&](je::ProfDumpWriter& w) {
    for (int i = 0; i < 3; i++) w.write(big.data(), big.size());
    w.printf("%d-%s", 42, "end");
  });
  EXPECT_EQ(s.size(), 3 * big.size() + 6);
  EXPECT_EQ(s.substr(s.size() - 6), "42-end");
  je::ProfDumpWriter bad(-1);
  bad.puts("lost");
  EXPECT_FALSE(bad.flush());
  EXPECT_FALSE(bad.ok());
}

}  // namespace
