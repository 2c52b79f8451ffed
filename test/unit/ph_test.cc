// Unit tests for src/support/ph.h: the pairing heap against an ordered reference under random
// insert / remove / remove_first sequences with many ties.
#include "support/ph.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <set>
#include <utility>
#include <vector>

namespace {

struct Node {
  uint64_t key = 0;  // primary order (like an extent's serial number)
  uint64_t id = 0;   // tie-break (like its address)
  bool in_heap = false;
  je::PhLink<Node> link;
};

struct NodeLess {
  bool operator()(const Node* a, const Node* b) const {
    if (a->key != b->key) return a->key < b->key;
    return a->id < b->id;
  }
};

using Heap = je::PairingHeap<Node, &Node::link, NodeLess>;
using Ref = std::set<std::pair<uint64_t, uint64_t>>;

void expect_first(const Heap& h, const Ref& ref) {
  if (ref.empty()) {
    ASSERT_TRUE(h.empty());
    ASSERT_EQ(h.first(), nullptr);
    return;
  }
  ASSERT_FALSE(h.empty());
  const Node* f = h.first();
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(f->key, ref.begin()->first);
  ASSERT_EQ(f->id, ref.begin()->second);
}

TEST(PairingHeap, EmptyHeap) {
  constinit static Heap h;  // constant-initializable, like the allocator's globals
  EXPECT_TRUE(h.empty());
  EXPECT_EQ(h.first(), nullptr);
  EXPECT_EQ(h.remove_first(), nullptr);
}

TEST(PairingHeap, SingleNode) {
  Heap h;
  Node n;
  n.key = 5;
  h.insert(&n);
  EXPECT_EQ(h.first(), &n);
  h.remove(&n);
  EXPECT_TRUE(h.empty());
  h.insert(&n);
  EXPECT_EQ(h.remove_first(), &n);
  EXPECT_TRUE(h.empty());
}

TEST(PairingHeap, SortsAscendingWithTieBreak) {
  std::vector<Node> nodes(500);
  std::mt19937_64 rng(1);
  Heap h;
  for (size_t i = 0; i < nodes.size(); i++) {
    nodes[i].key = rng() % 20;
    nodes[i].id = i;
    h.insert(&nodes[i]);
  }
  Node* prev = nullptr;
  size_t count = 0;
  while (Node* n = h.remove_first()) {
    if (prev != nullptr) {
      EXPECT_TRUE(NodeLess{}(prev, n));
    }
    prev = n;
    count++;
  }
  EXPECT_EQ(count, nodes.size());
}

TEST(PairingHeap, RemoveEveryPositionFromSmallHeaps) {
  // For each heap size up to 12, build it, remove one node in each position (after some
  // remove_first calls to create deep structure), then drain and check the order.
  for (size_t size = 1; size <= 12; size++) {
    for (size_t victim = 0; victim < size; victim++) {
      std::vector<Node> nodes(size + 3);
      Heap h;
      Ref ref;
      for (size_t i = 0; i < nodes.size(); i++) {
        nodes[i].key = (i * 7) % 5;
        nodes[i].id = i;
        h.insert(&nodes[i]);
        ref.insert({nodes[i].key, nodes[i].id});
      }
      // Pop the 3 smallest to turn the root list into a real tree.
      for (int k = 0; k < 3; k++) {
        Node* n = h.remove_first();
        ASSERT_NE(n, nullptr);
        ASSERT_EQ(ref.begin()->second, n->id);
        ref.erase(ref.begin());
        n->in_heap = false;
      }
      std::vector<Node*> live;
      for (auto& kv : ref) live.push_back(&nodes[kv.second]);
      Node* v = live[victim];
      h.remove(v);
      ref.erase({v->key, v->id});
      while (!ref.empty()) {
        expect_first(h, ref);
        Node* n = h.remove_first();
        ASSERT_EQ(n->id, ref.begin()->second);
        ref.erase(ref.begin());
      }
      EXPECT_TRUE(h.empty());
    }
  }
}

void random_ops(uint64_t seed, int ops, uint64_t key_range) {
  std::mt19937_64 rng(seed);
  constexpr size_t kNodes = 600;
  std::vector<Node> nodes(kNodes);
  for (size_t i = 0; i < kNodes; i++) nodes[i].id = i;
  Heap h;
  Ref ref;
  std::vector<size_t> live;  // indices of nodes in the heap
  for (int op = 0; op < ops; op++) {
    uint64_t r = rng() % 10;
    if (r < 5 && live.size() < kNodes) {
      // Insert a node that is not in the heap.
      size_t i;
      do {
        i = rng() % kNodes;
      } while (nodes[i].in_heap);
      nodes[i].key = rng() % key_range;
      nodes[i].in_heap = true;
      h.insert(&nodes[i]);
      ref.insert({nodes[i].key, nodes[i].id});
      live.push_back(i);
    } else if (r < 8 && !live.empty()) {
      // Remove an arbitrary node.
      size_t pos = rng() % live.size();
      Node* n = &nodes[live[pos]];
      live[pos] = live.back();
      live.pop_back();
      h.remove(n);
      n->in_heap = false;
      ASSERT_EQ(ref.erase({n->key, n->id}), 1u);
    } else {
      Node* n = h.remove_first();
      if (ref.empty()) {
        ASSERT_EQ(n, nullptr);
        continue;
      }
      ASSERT_NE(n, nullptr);
      ASSERT_EQ(n->key, ref.begin()->first);
      ASSERT_EQ(n->id, ref.begin()->second);
      ref.erase(ref.begin());
      n->in_heap = false;
      for (size_t k = 0; k < live.size(); k++) {
        if (live[k] == n->id) {
          live[k] = live.back();
          live.pop_back();
          break;
        }
      }
    }
    expect_first(h, ref);
    if (testing::Test::HasFatalFailure()) return;
  }
  // Drain: the remaining nodes come out in order.
  while (!ref.empty()) {
    Node* n = h.remove_first();
    ASSERT_NE(n, nullptr);
    ASSERT_EQ(n->id, ref.begin()->second);
    ref.erase(ref.begin());
  }
  EXPECT_TRUE(h.empty());
}

TEST(PairingHeap, RandomOpsManyTies) {
  for (uint64_t seed = 1; seed <= 3; seed++) {
    random_ops(seed, 10000, 8);
    if (HasFatalFailure()) return;
  }
}

TEST(PairingHeap, RandomOpsFewTies) {
  for (uint64_t seed = 10; seed <= 12; seed++) {
    random_ops(seed, 10000, 1u << 30);
    if (HasFatalFailure()) return;
  }
}

TEST(PairingHeap, ReinsertAfterRemoveIsClean) {
  // A removed node's link is reset, so it can go straight into another heap.
  Heap a;
  Heap b;
  Node n[4];
  for (int i = 0; i < 4; i++) {
    n[i].key = static_cast<uint64_t>(4 - i);
    n[i].id = static_cast<uint64_t>(i);
    a.insert(&n[i]);
  }
  a.remove(&n[1]);
  b.insert(&n[1]);
  EXPECT_EQ(b.first(), &n[1]);
  EXPECT_EQ(a.first(), &n[3]);
  EXPECT_EQ(n[1].link.prev, nullptr);
  EXPECT_EQ(n[1].link.next, nullptr);
  EXPECT_EQ(n[1].link.lchild, nullptr);
}

}  // namespace
