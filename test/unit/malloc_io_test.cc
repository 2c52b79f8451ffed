// Unit tests for src/support/malloc_io: je_snprintf against glibc's snprintf, fmt_fixed,
// parse_u64/parse_i64 against strtoull/strtoll, and the writer hook.
#include "support/malloc_io.h"

#include <gtest/gtest.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <climits>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace {

// Formats with both implementations into generous buffers and compares text and return value.
#define EXPECT_SAME_FORMAT(...)                                           \
  do {                                                                    \
    char ours[512];                                                       \
    char libc[512];                                                       \
    memset(ours, 'Z', sizeof(ours));                                      \
    size_t n1 = je::je_snprintf(ours, sizeof(ours), __VA_ARGS__);         \
    int n2 = snprintf(libc, sizeof(libc), __VA_ARGS__);                   \
    EXPECT_EQ(n1, static_cast<size_t>(n2)) << "format: " << #__VA_ARGS__; \
    EXPECT_STREQ(ours, libc) << "format: " << #__VA_ARGS__;               \
  } while (0)

// Integer formats under every flag combination, width and precision, for a set of values.
TEST(MallocIo, SignedIntegersMatchLibc) {
  const int64_t values[] = {0,         1,         -1,        7,         -7,        42,
                            -42,       INT8_MIN,  INT8_MAX,  INT16_MIN, INT16_MAX, INT32_MIN,
                            INT32_MAX, INT64_MIN, INT64_MAX, 1000000,   -999999};
  const char* flags[] = {"", "-", "0", " ", "+", "#", "-0", "+ ", "0+", "- +", "-#", "0 "};
  const char* widths[] = {"", "1", "5", "12", "25"};
  const char* precs[] = {"", ".", ".0", ".1", ".5", ".22"};
  int checked = 0;
  for (int64_t v : values) {
    for (const char* f : flags) {
      for (const char* w : widths) {
        for (const char* p : precs) {
          for (const char* conv : {"lld", "lli"}) {
            std::string fmt = std::string("[%") + f + w + p + conv + "]";
            char ours[128];
            char libc[128];
            size_t n1 = je::je_snprintf(ours, sizeof(ours), fmt.c_str(), static_cast<long long>(v));
            int n2 = snprintf(libc, sizeof(libc), fmt.c_str(), static_cast<long long>(v));
            ASSERT_EQ(n1, static_cast<size_t>(n2)) << fmt << " " << v;
            ASSERT_STREQ(ours, libc) << fmt << " " << v;
            checked++;
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 10000);
}

TEST(MallocIo, UnsignedIntegersMatchLibc) {
  const uint64_t values[] = {0,
                             1,
                             7,
                             8,
                             9,
                             15,
                             16,
                             255,
                             256,
                             0xdeadbeef,
                             UINT32_MAX,
                             UINT64_MAX,
                             UINT64_MAX / 3,
                             1ULL << 63,
                             01234567};
  const char* flags[] = {"", "-", "0", "#", "-#", "0#", " ", "+"};
  const char* widths[] = {"", "1", "6", "23", "30"};
  const char* precs[] = {"", ".0", ".3", ".25"};
  const char* convs[] = {"llu", "llx", "llX", "llo"};
  for (uint64_t v : values) {
    for (const char* f : flags) {
      for (const char* w : widths) {
        for (const char* p : precs) {
          for (const char* c : convs) {
            std::string fmt = std::string("<%") + f + w + p + c + ">";
            char ours[128];
            char libc[128];
            size_t n1 = je::je_snprintf(ours, sizeof(ours), fmt.c_str(),
                                        static_cast<unsigned long long>(v));
            int n2 = snprintf(libc, sizeof(libc), fmt.c_str(), static_cast<unsigned long long>(v));
            ASSERT_EQ(n1, static_cast<size_t>(n2)) << fmt << " " << v;
            ASSERT_STREQ(ours, libc) << fmt << " " << v;
          }
        }
      }
    }
  }
}

TEST(MallocIo, LengthModifiersMatchLibc) {
  EXPECT_SAME_FORMAT("%hhd %hhu %hhx", 300, 300, 511);
  EXPECT_SAME_FORMAT("%hhd %hhd", -129, 127);
  EXPECT_SAME_FORMAT("%hd %hu %hx", 70000, 70000, -1);
  EXPECT_SAME_FORMAT("%d %u %x %o", INT_MIN, UINT_MAX, 0xabcdefu, 0777u);
  EXPECT_SAME_FORMAT("%ld %lu %lx", LONG_MIN, ULONG_MAX, 0x1234UL);
  EXPECT_SAME_FORMAT("%lld %llu %llX", LLONG_MIN, ULLONG_MAX, 0xfeedfaceULL);
  EXPECT_SAME_FORMAT("%zu %zd %zx", SIZE_MAX, static_cast<ssize_t>(-5), size_t{4096});
  EXPECT_SAME_FORMAT("%jd %ju %jx", INTMAX_MIN, UINTMAX_MAX, static_cast<uintmax_t>(255));
  EXPECT_SAME_FORMAT("%td %tx", static_cast<ptrdiff_t>(-12345), static_cast<ptrdiff_t>(4095));
  EXPECT_SAME_FORMAT("%" PRIu64 " %" PRId64 " %" PRIx64, UINT64_MAX, INT64_MIN,
                     uint64_t{0x0123456789abcdef});
  EXPECT_SAME_FORMAT("%i|%5i|%-5i|", 3, -3, 3);
}

TEST(MallocIo, StarWidthAndPrecisionMatchLibc) {
  for (int w : {-12, -3, -1, 0, 1, 4, 10}) {
    for (int p : {-4, -1, 0, 1, 3, 8}) {
      EXPECT_SAME_FORMAT("[%*.*d]", w, p, 42);
      EXPECT_SAME_FORMAT("[%*.*d]", w, p, -42);
      EXPECT_SAME_FORMAT("[%*.*d]", w, p, 0);
      // '0' with a precision is ignored; a runtime format keeps -Wformat from flagging it.
      const char* zero_prec = "[%0*.*x]";
      EXPECT_SAME_FORMAT(zero_prec, w, p, 0xbeefu);
      EXPECT_SAME_FORMAT("[%*.*s]", w, p, "hello");
      EXPECT_SAME_FORMAT("[%-*s]", w, "ab");
    }
  }
}

TEST(MallocIo, StringsCharsPercentMatchLibc) {
  EXPECT_SAME_FORMAT("%s", "");
  EXPECT_SAME_FORMAT("%s|%10s|%-10s|%.2s|%10.3s|%-10.3s|", "abc", "abc", "abc", "abc", "abcdef",
                     "abcdef");
  EXPECT_SAME_FORMAT("%.0s|%.10s|", "abc", "abc");
  EXPECT_SAME_FORMAT("%c%c%c|%3c|%-3c|", 'a', 'b', 'c', 'x', 'y');
  EXPECT_SAME_FORMAT("%c", 200);
  EXPECT_SAME_FORMAT("100%% done %%%d", 5);
  EXPECT_SAME_FORMAT("no conversions at all");
  EXPECT_SAME_FORMAT("%s=%s", "opt.narenas", "4");
  // volatile keeps the compiler from diagnosing the (deliberate) null %s argument.
  const char* volatile null_str = nullptr;
  // glibc prints "(null)" for a null %s (our output matches it); precision < 6 prints nothing.
  char buf[64];
  EXPECT_EQ(je::je_snprintf(buf, sizeof(buf), "%s|%8s|%.3s|", null_str, null_str, null_str), 17u);
  EXPECT_STREQ(buf, "(null)|  (null)||");
}

TEST(MallocIo, StringPrecisionDoesNotReadPastLimit) {
  // Not NUL-terminated: only the first 3 bytes may be read.
  char raw[3] = {'x', 'y', 'z'};
  char buf[16];
  EXPECT_EQ(je::je_snprintf(buf, sizeof(buf), "%.3s!", raw), 4u);
  EXPECT_STREQ(buf, "xyz!");
}

TEST(MallocIo, PointersMatchLibc) {
  int local = 0;
  void* ptrs[] = {&local, reinterpret_cast<void*>(0x1), reinterpret_cast<void*>(0xfff),
                  reinterpret_cast<void*>(UINTPTR_MAX), nullptr};
  for (void* p : ptrs) {
    EXPECT_SAME_FORMAT("%p", p);
    EXPECT_SAME_FORMAT("[%20p]", p);
    EXPECT_SAME_FORMAT("[%-20p]", p);
  }
}

TEST(MallocIo, TruncationAtEveryBufferSize) {
  struct Case {
    const char* fmt;
    long long arg;
  };
  const Case cases[] = {
      {"hello, %lld world", -9223372036854775807LL - 1},
      {"%020lld|", 123456789},
      {"%-15lld<", -42},
      {"%llx%llx", 0},  // every call passes a second argument, 0LL, for this one
  };
  for (const Case& c : cases) {
    char full[256];
    int total = snprintf(full, sizeof(full), c.fmt, c.arg, 0LL);
    ASSERT_GT(total, 0);
    for (size_t size = 0; size <= static_cast<size_t>(total) + 2; size++) {
      char ours[256];
      char libc[256];
      memset(ours, '#', sizeof(ours));
      memset(libc, '#', sizeof(libc));
      size_t n1 = je::je_snprintf(ours, size, c.fmt, c.arg, 0LL);
      int n2 = snprintf(libc, size, c.fmt, c.arg, 0LL);
      ASSERT_EQ(n1, static_cast<size_t>(n2)) << c.fmt << " size " << size;
      ASSERT_EQ(memcmp(ours, libc, sizeof(ours)), 0) << c.fmt << " size " << size;
    }
  }
  // size 0 never touches the buffer, and a null buffer is fine.
  EXPECT_EQ(je::je_snprintf(nullptr, 0, "%s-%d", "abc", 12345), 9u);
  const char* s = "a fairly long string to cut";
  for (size_t size = 0; size < 40; size++) {
    char ours[64];
    char libc[64];
    memset(ours, 0x55, sizeof(ours));
    memset(libc, 0x55, sizeof(libc));
    EXPECT_EQ(je::je_snprintf(ours, size, "[%s]", s),
              static_cast<size_t>(snprintf(libc, size, "[%s]", s)));
    EXPECT_EQ(memcmp(ours, libc, sizeof(ours)), 0) << "size " << size;
  }
}

TEST(MallocIo, ManyArgumentsInOneFormat) {
  EXPECT_SAME_FORMAT("%d %s %zu %c %llx %p %5.2d %-4u| %#o %+d % d", -1, "mid", size_t{99}, 'q',
                     0xabcULL, reinterpret_cast<void*>(0x1000), 7, 3u, 8u, 5, 6);
}

TEST(MallocIo, VsnprintfDoesNotConsumeCallersList) {
  // je_vsnprintf copies the list, so a caller can format the same va_list twice.
  struct Helper {
    static void twice(char* a, char* b, const char* fmt, ...) {
      va_list ap;
      va_start(ap, fmt);
      je::je_vsnprintf(a, 32, fmt, ap);
      je::je_vsnprintf(b, 32, fmt, ap);
      va_end(ap);
    }
  };
  char a[32];
  char b[32];
  Helper::twice(a, b, "%d-%s", 17, "x");
  EXPECT_STREQ(a, "17-x");
  EXPECT_STREQ(b, "17-x");
}

TEST(MallocIo, FmtFixed) {
  char buf[64];
  EXPECT_EQ(je::fmt_fixed(buf, sizeof(buf), 1, 8, 3), 5u);
  EXPECT_STREQ(buf, "0.125");
  je::fmt_fixed(buf, sizeof(buf), 2, 3, 3);
  EXPECT_STREQ(buf, "0.666");  // truncates
  je::fmt_fixed(buf, sizeof(buf), 1, 1, 3);
  EXPECT_STREQ(buf, "1.000");
  je::fmt_fixed(buf, sizeof(buf), 7, 2, 0);
  EXPECT_STREQ(buf, "3");
  je::fmt_fixed(buf, sizeof(buf), 0, 5, 2);
  EXPECT_STREQ(buf, "0.00");
  je::fmt_fixed(buf, sizeof(buf), 5, 0, 2);
  EXPECT_STREQ(buf, "0.00");
  je::fmt_fixed(buf, sizeof(buf), 1, 1000, 3);
  EXPECT_STREQ(buf, "0.001");
  je::fmt_fixed(buf, sizeof(buf), 123456789, 1000, 1);
  EXPECT_STREQ(buf, "123456.7");
  // Exact for the extremes: remainder * 10 would overflow 64 bits.
  je::fmt_fixed(buf, sizeof(buf), UINT64_MAX - 1, UINT64_MAX, 5);
  EXPECT_STREQ(buf, "0.99999");
  je::fmt_fixed(buf, sizeof(buf), UINT64_MAX, 1, 2);
  EXPECT_STREQ(buf, "18446744073709551615.00");
  // Truncation keeps the snprintf contract.
  EXPECT_EQ(je::fmt_fixed(buf, 4, 1, 8, 3), 5u);
  EXPECT_STREQ(buf, "0.1");
  EXPECT_EQ(je::fmt_fixed(nullptr, 0, 1, 8, 3), 5u);
  // Compare against a double-based reference where doubles are exact enough.
  for (uint64_t num = 0; num <= 50; num++) {
    for (uint64_t den = 1; den <= 50; den++) {
      je::fmt_fixed(buf, sizeof(buf), num, den, 3);
      uint64_t scaled = num * 1000 / den;
      char ref[64];
      snprintf(ref, sizeof(ref), "%" PRIu64 ".%03" PRIu64, scaled / 1000, scaled % 1000);
      ASSERT_STREQ(buf, ref) << num << "/" << den;
    }
  }
  // Large operands against a 128-bit long-division reference.
  uint64_t x = 88172645463325252ULL;
  auto next = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  for (int i = 0; i < 2000; i++) {
    uint64_t num = next();
    uint64_t den = next() >> (next() % 64);
    if (den == 0) den = 1;
    je::fmt_fixed(buf, sizeof(buf), num, den, 6);
    std::string ref = std::to_string(num / den) + ".";
    unsigned __int128 rem = num % den;
    for (int d = 0; d < 6; d++) {
      rem *= 10;
      ref += static_cast<char>('0' + static_cast<int>(rem / den));
      rem %= den;
    }
    ASSERT_EQ(std::string(buf), ref) << num << "/" << den;
  }
}

TEST(MallocIo, ParseU64MatchesStrtoull) {
  // clang-format off
  const char* inputs[] = {
      "0", "1", "42", "  17", "+5", "0x1f", "0X1F", "017", "09", "0x", "0xg", "12abc",
      "18446744073709551615", "007", "\t\n 99z", "ffff", "zz", "1010", "0x8000000000000000"
  };
  // clang-format on
  for (int base : {0, 2, 8, 10, 16, 36}) {
    for (const char* in : inputs) {
      errno = 0;
      char* end;
      unsigned long long ref = strtoull(in, &end, base);
      bool ref_ok = end != in && errno == 0;
      uint64_t v = 12345;
      size_t consumed = 999;
      bool ok = je::parse_u64(in, strlen(in), base, &v, &consumed);
      ASSERT_EQ(ok, ref_ok) << "'" << in << "' base " << base;
      if (ok) {
        EXPECT_EQ(v, ref) << "'" << in << "' base " << base;
        EXPECT_EQ(consumed, static_cast<size_t>(end - in)) << "'" << in << "' base " << base;
      } else {
        EXPECT_EQ(v, 12345u);
      }
    }
  }
}

TEST(MallocIo, ParseU64EdgeCases) {
  uint64_t v = 0;
  size_t used = 0;
  EXPECT_FALSE(je::parse_u64("18446744073709551616", 20, 10, &v, &used));  // UINT64_MAX + 1
  EXPECT_EQ(used, 20u);
  EXPECT_FALSE(je::parse_u64("99999999999999999999999", 23, 0, &v, &used));
  EXPECT_FALSE(je::parse_u64("", 0, 10, &v, &used));
  EXPECT_EQ(used, 0u);
  EXPECT_FALSE(je::parse_u64("   ", 3, 10, &v, &used));
  EXPECT_FALSE(je::parse_u64("-1", 2, 10, &v, &used));
  EXPECT_FALSE(je::parse_u64("12", 2, 1, &v, &used));   // bad base
  EXPECT_FALSE(je::parse_u64("12", 2, 37, &v, &used));  // bad base
  // The length bound is honoured: digits after len are not read.
  EXPECT_TRUE(je::parse_u64("12345", 3, 10, &v, &used));
  EXPECT_EQ(v, 123u);
  EXPECT_EQ(used, 3u);
  // "0x" cut by the length: only the 0 is a number.
  EXPECT_TRUE(je::parse_u64("0x10", 2, 0, &v, &used));
  EXPECT_EQ(v, 0u);
  EXPECT_EQ(used, 1u);
  EXPECT_TRUE(je::parse_u64("0x10", 4, 16, &v, nullptr));
  EXPECT_EQ(v, 16u);
  // MALLOC_CONF style: the value ends at the comma.
  const char* conf = "4096,next";
  EXPECT_TRUE(je::parse_u64(conf, strlen(conf), 0, &v, &used));
  EXPECT_EQ(v, 4096u);
  EXPECT_EQ(used, 4u);
}

TEST(MallocIo, ParseI64) {
  struct Case {
    const char* in;
    bool ok;
    int64_t value;
    size_t used;
  };
  const Case cases[] = {
      {"0", true, 0, 1},
      {"-1", true, -1, 2},
      {"+7", true, 7, 2},
      {" -10000", true, -10000, 7},
      {"9223372036854775807", true, INT64_MAX, 19},
      {"-9223372036854775808", true, INT64_MIN, 20},
      {"9223372036854775808", false, 0, 19},
      {"-9223372036854775809", false, 0, 20},
      {"-0x10", true, -16, 5},
      {"-", false, 0, 0},
      {"x", false, 0, 0},
      {"-5ms", true, -5, 2},
  };
  for (const Case& c : cases) {
    int64_t v = 99;
    size_t used = 1234;
    bool ok = je::parse_i64(c.in, strlen(c.in), 0, &v, &used);
    EXPECT_EQ(ok, c.ok) << c.in;
    EXPECT_EQ(used, c.used) << c.in;
    if (c.ok) {
      EXPECT_EQ(v, c.value) << c.in;
    } else {
      EXPECT_EQ(v, 99) << c.in;
    }
  }
}

std::vector<std::string>* g_captured = nullptr;

void capture(const char* s) { g_captured->push_back(s); }

TEST(MallocIo, WriterHookAndPrintf) {
  std::vector<std::string> got;
  g_captured = &got;
  je::io_set_writer(capture);
  je::io_write("plain\n");
  je::io_printf("<jemalloc>: %s %d\n", "value", 5);
  // io_printf truncates at its 4 KiB stack buffer instead of allocating.
  std::string big(5000, 'x');
  je::io_printf("%s", big.c_str());
  je::io_set_writer(nullptr);
  g_captured = nullptr;
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0], "plain\n");
  EXPECT_EQ(got[1], "<jemalloc>: value 5\n");
  EXPECT_EQ(got[2].size(), 4095u);
}

TEST(MallocIo, DefaultWriterGoesToStderr) {
  testing::internal::CaptureStderr();
  je::io_write("to stderr ");
  je::io_printf("%d\n", 123);
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(err, "to stderr 123\n");
}

TEST(MallocIoDeathTest, AbortMsgPrefixesAndAborts) {
  EXPECT_DEATH(je::je_abort_msg("bad thing %d", 7), "<jemalloc>: bad thing 7");
}

}  // namespace
