// Unit tests for src/prof/prof_ctx: one context per distinct backtrace (also across hash
// collisions of the bucket index), the walk in creation order, charges and credits in total and
// per thread (a free by another thread credits the allocating thread), clamping, accum, reset,
// the copy used by dumps, and exact totals under concurrent charging.
#include "prof/prof_ctx.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <thread>
#include <vector>

namespace {

je::ProfBt bt_of(std::initializer_list<uintptr_t> frames) {
  je::ProfBt bt;
  bt.len = 0;
  for (uintptr_t f : frames) bt.vec[bt.len++] = f;
  return bt;
}

class ProfCtxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(je::prof_ctx_boot());
    je::prof_ctx_reset();
  }
};

TEST_F(ProfCtxTest, OneContextPerBacktrace) {
  je::ProfCtx* a = je::prof_ctx_get(bt_of({0x1000, 0x2000, 0x3000}));
  je::ProfCtx* b = je::prof_ctx_get(bt_of({0x1000, 0x2000}));
  je::ProfCtx* c = je::prof_ctx_get(bt_of({0x1000, 0x2000, 0x3000}));
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(a, c);
  EXPECT_NE(a, b);
  EXPECT_EQ(a->len, 3u);
  EXPECT_EQ(a->vec[2], 0x3000u);
  // Thousands of contexts: each found again, each walked once, in creation order.
  std::vector<je::ProfCtx*> made;
  for (uintptr_t i = 0; i < 20000; i++) made.push_back(je::prof_ctx_get(bt_of({0xabc000 + i, i})));
  for (uintptr_t i = 0; i < 20000; i++)
    ASSERT_EQ(je::prof_ctx_get(bt_of({0xabc000 + i, i})), made[i]);
  std::set<const je::ProfCtx*> seen;
  size_t pos = 0;
  bool in_order = true;
  for (je::ProfCtx* x = je::prof_ctx_first(); x != nullptr; x = je::prof_ctx_next(x)) {
    EXPECT_TRUE(seen.insert(x).second);
    if (pos < made.size() && x == made[pos])
      pos++;
    else if (pos > 0 && pos < made.size())
      in_order = false;
  }
  EXPECT_EQ(pos, made.size());
  EXPECT_TRUE(in_order);
  EXPECT_TRUE(seen.count(a) && seen.count(b));
}

TEST_F(ProfCtxTest, ChargeCreditPerThreadAndAccum) {
  je::ProfCtx* c = je::prof_ctx_get(bt_of({0x5000, 0x6000}));
  ASSERT_TRUE(je::prof_ctx_charge(c, 0, 2, 2048));
  ASSERT_TRUE(je::prof_ctx_charge(c, 3, 1, 100));
  // Thread 3's block freed by anyone: credited to thread 3.
  je::prof_ctx_credit(c, 3, 1, 100);
  je::ProfCnt total;
  je::ProfThreadCnt per[4];
  ASSERT_EQ(je::prof_ctx_copy(c, &total, per, 4), 2u);
  EXPECT_EQ(total.curobjs, 2u);
  EXPECT_EQ(total.curbytes, 2048u);
  EXPECT_EQ(total.accumobjs, 3u);
  EXPECT_EQ(total.accumbytes, 2148u);
  EXPECT_EQ(per[0].thr_uid, 0u);
  EXPECT_EQ(per[0].cnt.curbytes, 2048u);
  EXPECT_EQ(per[1].thr_uid, 3u);
  EXPECT_EQ(per[1].cnt.curobjs, 0u);
  EXPECT_EQ(per[1].cnt.accumbytes, 100u);
  // More credited than charged (blocks live across prof.reset) clamps at zero.
  je::prof_ctx_credit(c, 0, 5, 99999);
  je::prof_ctx_copy(c, &total, per, 4);
  EXPECT_EQ(total.curobjs, 0u);
  EXPECT_EQ(total.curbytes, 0u);
  EXPECT_EQ(per[0].cnt.curbytes, 0u);
  // A credit for a thread that never charged touches only the total.
  je::prof_ctx_credit(c, 77, 1, 1);
  EXPECT_EQ(je::prof_ctx_copy(c, &total, per, 0), 2u);
  je::prof_ctx_reset();
  je::prof_ctx_copy(c, &total, per, 4);
  EXPECT_EQ(total.accumobjs, 0u);
  EXPECT_EQ(per[1].cnt.accumbytes, 0u);
}

TEST_F(ProfCtxTest, ConcurrentChargesAddUp) {
  je::ProfCtx* c = je::prof_ctx_get(bt_of({0x7000}));
  std::vector<std::thread> ts;
  for (uint64_t t = 0; t < 4; t++) {
    ts.emplace_back([c, t] {
      for (int i = 0; i < 20000; i++) {
        je::prof_ctx_charge(c, t, 1, 16);
        if (i % 2 == 0) je::prof_ctx_credit(c, t, 1, 16);
      }
    });
  }
  for (auto& t : ts) t.join();
  je::ProfCnt total;
  je::ProfThreadCnt per[8];
  EXPECT_EQ(je::prof_ctx_copy(c, &total, per, 8), 4u);
  EXPECT_EQ(total.curobjs, 4u * 10000);
  EXPECT_EQ(total.curbytes, 4u * 10000 * 16);
  EXPECT_EQ(total.accumobjs, 4u * 20000);
  for (int i = 0; i < 4; i++) EXPECT_EQ(per[i].cnt.curobjs, 10000u);
}

}  // namespace
