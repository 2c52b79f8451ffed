// Unit tests for src/support/ql.h: the intrusive list against std::deque / a vector reference.
#include "support/ql.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

namespace {

struct Node {
  int value = 0;
  bool linked = false;
  je::QlLink<Node> link;
  je::QlLink<Node> other;  // second link: a node may sit in two lists at once
};

using List = je::IntrusiveList<Node, &Node::link>;
using OtherList = je::IntrusiveList<Node, &Node::other>;

std::vector<int> forward(const List& l) {
  std::vector<int> v;
  for (Node* n = l.front(); n != nullptr; n = List::next(n)) v.push_back(n->value);
  return v;
}

std::vector<int> backward(const List& l) {
  std::vector<int> v;
  for (Node* n = l.back(); n != nullptr; n = List::prev(n)) v.push_back(n->value);
  std::reverse(v.begin(), v.end());
  return v;
}

TEST(IntrusiveList, Empty) {
  constinit static List l;
  EXPECT_TRUE(l.empty());
  EXPECT_EQ(l.front(), nullptr);
  EXPECT_EQ(l.back(), nullptr);
  EXPECT_EQ(l.pop_front(), nullptr);
}

TEST(IntrusiveList, PushPopOrder) {
  Node n[5];
  for (int i = 0; i < 5; i++) n[i].value = i;
  List l;
  l.push_back(&n[1]);
  l.push_back(&n[2]);
  l.push_front(&n[0]);
  l.push_back(&n[3]);
  l.push_front(&n[4]);
  EXPECT_EQ(forward(l), (std::vector<int>{4, 0, 1, 2, 3}));
  EXPECT_EQ(backward(l), forward(l));
  EXPECT_EQ(l.front(), &n[4]);
  EXPECT_EQ(l.back(), &n[3]);
  EXPECT_EQ(l.pop_front(), &n[4]);
  EXPECT_EQ(n[4].link.prev, nullptr);
  EXPECT_EQ(n[4].link.next, nullptr);
  l.remove(&n[3]);  // tail
  EXPECT_EQ(l.back(), &n[2]);
  l.remove(&n[0]);  // head
  EXPECT_EQ(l.front(), &n[1]);
  EXPECT_EQ(forward(l), (std::vector<int>{1, 2}));
  l.remove(&n[1]);
  l.remove(&n[2]);
  EXPECT_TRUE(l.empty());
  EXPECT_EQ(l.back(), nullptr);
}

TEST(IntrusiveList, TwoLinksAreIndependent) {
  Node n[3];
  for (int i = 0; i < 3; i++) n[i].value = i;
  List a;
  OtherList b;
  for (auto& x : n) a.push_back(&x);
  for (auto& x : n) b.push_front(&x);
  a.remove(&n[1]);
  EXPECT_EQ(forward(a), (std::vector<int>{0, 2}));
  EXPECT_EQ(b.front(), &n[2]);
  EXPECT_EQ(OtherList::next(&n[2]), &n[1]);
  EXPECT_EQ(OtherList::next(&n[1]), &n[0]);
}

TEST(IntrusiveList, ClearForgetsNodes) {
  Node n[2];
  List l;
  l.push_back(&n[0]);
  l.push_back(&n[1]);
  l.clear();
  EXPECT_TRUE(l.empty());
  EXPECT_EQ(l.front(), nullptr);
  EXPECT_EQ(l.back(), nullptr);
}

TEST(IntrusiveList, RandomOpsAgainstVector) {
  constexpr int kNodes = 64;
  Node nodes[kNodes];
  for (int i = 0; i < kNodes; i++) nodes[i].value = i;
  List l;
  std::vector<int> ref;
  std::mt19937 rng(7);
  for (int op = 0; op < 20000; op++) {
    int i = static_cast<int>(rng() % kNodes);
    switch (rng() % 4) {
      case 0:
        if (!nodes[i].linked) {
          l.push_back(&nodes[i]);
          ref.push_back(i);
          nodes[i].linked = true;
        }
        break;
      case 1:
        if (!nodes[i].linked) {
          l.push_front(&nodes[i]);
          ref.insert(ref.begin(), i);
          nodes[i].linked = true;
        }
        break;
      case 2:
        if (nodes[i].linked) {
          l.remove(&nodes[i]);
          ref.erase(std::find(ref.begin(), ref.end(), i));
          nodes[i].linked = false;
        }
        break;
      case 3: {
        Node* n = l.pop_front();
        if (ref.empty()) {
          ASSERT_EQ(n, nullptr);
        } else {
          ASSERT_EQ(n->value, ref.front());
          ref.erase(ref.begin());
          n->linked = false;
        }
        break;
      }
    }
    if (op % 97 == 0) {
      ASSERT_EQ(forward(l), ref);
      ASSERT_EQ(backward(l), ref);
    }
  }
  ASSERT_EQ(forward(l), ref);
  ASSERT_EQ(backward(l), ref);
}

}  // namespace
