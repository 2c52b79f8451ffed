// Unit tests for src/prof/prof_recent: the record of recent sampled allocations as a bounded
// FIFO -- records in allocation order, the oldest evicted at the limit, shrinking keeps the
// newest, 0 records nothing and -1 everything; a freed block's record gets its freeing thread
// and trace and stays until evicted; an evicted record no longer follows its block; the dump's
// JSON lists what is kept, oldest first, and the records survive the dump.
#include "prof/prof_recent.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "prof/prof.h"
#include "prof/prof_ctx.h"
#include "prof/prof_tctx.h"

namespace {

void append(void* opaque, const char* s) { *static_cast<std::string*>(opaque) += s; }

std::string dump() {
  std::string out;
  je::prof_recent_dump(append, &out);
  return out;
}

// The "size" values of the dump, in order.
std::vector<int> sizes(const std::string& json) {
  std::vector<int> v;
  for (size_t p = json.find("\"size\":"); p != std::string::npos;
       p = json.find("\"size\":", p + 1)) {
    v.push_back(std::stoi(json.substr(p + 7)));
  }
  return v;
}

class ProfRecent : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(je::prof_ctx_boot());
    je::ProfBt bt{};
    bt.len = 2;
    bt.vec[0] = 0x1000;
    bt.vec[1] = 0x2000;
    ctx_ = je::prof_ctx_get(bt);
    ASSERT_NE(ctx_, nullptr);
    td_.thr_uid = 7;
    td_.name = name_;
    td_.name_cap = sizeof(name_);
    je::prof_recent_max_set(0);  // empties what an earlier test left
  }

  // Records a block of `size` bytes through tctx slot i.
  void alloc(size_t i, size_t size) {
    t_[i].recent.store(nullptr);
    je::prof_recent_alloc(&t_[i], &td_, ctx_, size, size, 100 + i);
  }

  je::ProfCtx* ctx_ = nullptr;
  je::ProfTdata td_{};
  char name_[16] = "";
  je::ProfTctx t_[16]{};
};

TEST_F(ProfRecent, KeepsTheNewestUpToTheLimit) {
  EXPECT_EQ(je::prof_recent_max_set(3), 0);
  for (size_t i = 0; i < 5; i++) alloc(i, 100 + i);
  EXPECT_EQ(sizes(dump()), (std::vector<int>{102, 103, 104}));
  // Evicted records no longer follow their blocks; kept ones do.
  EXPECT_FALSE(je::prof_recent_linked(&t_[0]));
  EXPECT_FALSE(je::prof_recent_linked(&t_[1]));
  EXPECT_TRUE(je::prof_recent_linked(&t_[4]));
  // Shrinking keeps the newest; the dump did not consume anything.
  EXPECT_EQ(je::prof_recent_max_set(2), 3);
  EXPECT_EQ(sizes(dump()), (std::vector<int>{103, 104}));
  EXPECT_FALSE(je::prof_recent_linked(&t_[2]));
  EXPECT_EQ(je::prof_recent_max_get(), 2);
}

TEST_F(ProfRecent, ZeroRecordsNothingMinusOneEverything) {
  alloc(0, 10);
  EXPECT_EQ(sizes(dump()), std::vector<int>{});
  EXPECT_FALSE(je::prof_recent_linked(&t_[0]));
  je::prof_recent_max_set(-1);
  for (size_t i = 0; i < 16; i++) alloc(i, i);
  EXPECT_EQ(sizes(dump()).size(), 16u);
  std::string j = dump();
  EXPECT_NE(j.find("\"recent_alloc_max\":-1"), std::string::npos) << j;
}

TEST_F(ProfRecent, FreeCompletesTheRecord) {
  je::prof_recent_max_set(4);
  std::snprintf(name_, sizeof(name_), "w1");
  alloc(0, 64);
  alloc(1, 128);
  je::ProfTdata freer{};
  char freer_name[4] = "";
  freer.thr_uid = 9;
  freer.name = freer_name;
  freer.name_cap = sizeof(freer_name);
  je::prof_recent_free(&t_[0], &freer, ctx_, 500);
  EXPECT_FALSE(je::prof_recent_linked(&t_[0]));
  je::prof_recent_free(&t_[1], nullptr, nullptr, 600);  // free not captured: bare "released"
  std::string j = dump();
  EXPECT_NE(j.find("{\"size\":64,\"usize\":64,\"released\":true,\"alloc_thread_uid\":7,"
                   "\"alloc_thread_name\":\"w1\",\"alloc_time\":100,\"alloc_trace\":[\"0x1000\","
                   "\"0x2000\"],\"dalloc_thread_uid\":9,\"dalloc_time\":500,\"dalloc_trace\":["
                   "\"0x1000\",\"0x2000\"]}"),
            std::string::npos)
      << j;
  EXPECT_NE(j.find("{\"size\":128,\"usize\":128,\"released\":true,\"alloc_thread_uid\":7,"
                   "\"alloc_thread_name\":\"w1\",\"alloc_time\":101,\"alloc_trace\":[\"0x1000\","
                   "\"0x2000\"]}"),
            std::string::npos)
      << j;
  EXPECT_EQ(j.find("{\"sample_interval\":"), 0u) << j;
}

}  // namespace
