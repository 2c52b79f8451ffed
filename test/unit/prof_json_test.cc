// Unit tests for src/prof/prof_json: the compact layout 5.3.0's reports use (no white space,
// commas only between members, nested objects and arrays), integers and booleans, frames as
// "0x<hex>" strings, escaping of names (our deliberate difference: 5.3.0 writes them raw),
// output longer than the buffer handed over in NUL-terminated pieces, and the fd sink.
#include "prof/prof_json.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <string>

namespace {

void append(void* opaque, const char* s) {
  auto* out = static_cast<std::string*>(opaque);
  *out += s;
  out->push_back('|');  // marks piece boundaries
}

std::string strip_marks(std::string s) {
  std::string r;
  for (char c : s) {
    if (c != '|') r.push_back(c);
  }
  return r;
}

TEST(ProfJson, CompactLayout) {
  std::string out;
  {
    je::ProfJson j(append, &out);
    j.object_begin();
    j.kv_u64("sample_interval", 524288);
    j.kv_i64("recent_alloc_max", -1);
    j.array_begin("recent_alloc");
    j.object_begin();
    j.kv_u64("size", 100);
    j.kv_bool("released", false);
    j.array_begin("alloc_trace");
    j.value_ptr(0x7f00deadbeef);
    j.value_ptr(0x1234);
    j.array_end();
    j.object_end();
    j.object_begin();
    j.kv_bool("released", true);
    j.array_begin("alloc_trace");
    j.array_end();
    j.object_end();
    j.array_end();
    j.object_begin("info");
    j.kv_str("version", "5.3.0");
    j.object_end();
    j.array_begin("stack_traces");
    j.array_begin();
    j.value_ptr(1);
    j.array_end();
    j.array_begin();
    j.array_end();
    j.array_end();
    j.object_end();
  }
  EXPECT_EQ(strip_marks(out),
            "{\"sample_interval\":524288,\"recent_alloc_max\":-1,\"recent_alloc\":[{\"size\":100,"
            "\"released\":false,\"alloc_trace\":[\"0x7f00deadbeef\",\"0x1234\"]},{\"released\":"
            "true,\"alloc_trace\":[]}],\"info\":{\"version\":\"5.3.0\"},\"stack_traces\":[["
            "\"0x1\"],[]]}");
}

TEST(ProfJson, EscapesStrings) {
  std::string out;
  {
    je::ProfJson j(append, &out);
    j.object_begin();
    j.kv_str("thr_name", "a\"b\\c\td");
    j.object_end();
  }
  EXPECT_EQ(strip_marks(out), "{\"thr_name\":\"a\\\"b\\\\c\\u0009d\"}");
}

TEST(ProfJson, LongOutputArrivesInPieces) {
  std::string out;
  {
    je::ProfJson j(append, &out);
    j.array_begin();
    for (int i = 0; i < 2000; i++) j.value_ptr(0x7f0000000000ull + i);
    j.array_end();
  }
  size_t pieces = 0;
  for (char c : out) pieces += c == '|';
  EXPECT_GT(pieces, 1u);
  std::string text = strip_marks(out);
  EXPECT_EQ(text.front(), '[');
  EXPECT_EQ(text.back(), ']');
  size_t commas = 0;
  for (char c : text) commas += c == ',';
  EXPECT_EQ(commas, 1999u);
}

TEST(ProfJson, FdSink) {
  // An anonymous file: no path, nothing left behind.
  int fd = memfd_create("prof_json_test", 0);
  ASSERT_GE(fd, 0);
  je::ProfFdSink sink{fd, true};
  {
    je::ProfJson j(je::prof_json_fd_write, &sink);
    j.object_begin();
    j.kv_u64("pid", 42);
    j.object_end();
  }
  EXPECT_TRUE(sink.ok);
  char buf[64] = {};
  ASSERT_EQ(pread(fd, buf, sizeof(buf) - 1, 0), 10);
  EXPECT_STREQ(buf, "{\"pid\":42}");
  close(fd);
  je::ProfFdSink bad{-1, true};
  je::prof_json_fd_write(&bad, "x");
  EXPECT_FALSE(bad.ok);
}

}  // namespace
