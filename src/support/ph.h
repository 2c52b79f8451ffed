// ph.h: intrusive pairing heap.
//
// Purpose: the ordered containers of the allocator without allocation: free extents per
// page-size class in an eset (ordered by serial number, then address) and non-full slabs per bin.
// The node embeds a PhLink; the heap never allocates.
// Layer: support. Not synchronized: the owner's mutex protects the heap.
// Invariants: a node is in at most one heap per link; `first()` is the minimum under Less.
// Complexity: insert and first O(1); remove_first / remove amortized O(log n) (two-pass pairing).
// jemalloc mapping: ph.h (same role, our own implementation).
#pragma once

#include <cstddef>

namespace je {

template <class T>
struct PhLink {
  T* prev = nullptr;    // previous sibling, or the parent for a leftmost child
  T* next = nullptr;    // next sibling
  T* lchild = nullptr;  // leftmost child
};

/// Less is a default-constructible functor: `bool operator()(const T*, const T*)`.
template <class T, PhLink<T> T::*kLink, class Less>
class PairingHeap {
 public:
  constexpr PairingHeap() = default;

  bool empty() const { return root_ == nullptr; }
  T* first() const { return root_; }

  void insert(T* n) {
    link(n) = PhLink<T>{};
    root_ = root_ == nullptr ? n : meld(root_, n);
  }

  T* remove_first() {
    T* r = root_;
    if (r == nullptr) return nullptr;
    root_ = merge_pairs(link(r).lchild);
    link(r) = PhLink<T>{};
    return r;
  }

  void remove(T* n) {
    if (n == root_) {
      remove_first();
      return;
    }
    PhLink<T>& ln = link(n);
    // Unlink n from its sibling list; prev is the parent when n is a leftmost child.
    if (link(ln.prev).lchild == n) {
      link(ln.prev).lchild = ln.next;
    } else {
      link(ln.prev).next = ln.next;
    }
    if (ln.next != nullptr) link(ln.next).prev = ln.prev;
    T* sub = merge_pairs(ln.lchild);
    ln = PhLink<T>{};
    if (sub != nullptr) root_ = meld(root_, sub);
  }

 private:
  static PhLink<T>& link(T* n) { return n->*kLink; }

  // Makes the larger root the leftmost child of the smaller; both must be detached roots.
  static T* meld(T* a, T* b) {
    if (Less{}(b, a)) {
      T* t = a;
      a = b;
      b = t;
    }
    PhLink<T>& la = link(a);
    PhLink<T>& lb = link(b);
    lb.prev = a;
    lb.next = la.lchild;
    if (la.lchild != nullptr) link(la.lchild).prev = b;
    la.lchild = b;
    return a;
  }

  // Two-pass pairing of a sibling list: meld neighbours left to right, then fold right to left.
  static T* merge_pairs(T* first) {
    if (first == nullptr) return nullptr;
    T* stack = nullptr;  // melded pairs, chained through `next`, most recent first
    T* cur = first;
    while (cur != nullptr) {
      T* a = cur;
      T* b = link(a).next;
      T* rest = b != nullptr ? link(b).next : nullptr;
      link(a).next = link(a).prev = nullptr;
      T* m = a;
      if (b != nullptr) {
        link(b).next = link(b).prev = nullptr;
        m = meld(a, b);
      }
      link(m).next = stack;
      stack = m;
      cur = rest;
    }
    T* result = stack;
    stack = link(stack).next;
    link(result).next = nullptr;
    while (stack != nullptr) {
      T* m = stack;
      stack = link(m).next;
      link(m).next = nullptr;
      result = meld(m, result);
    }
    link(result).prev = nullptr;
    return result;
  }

  T* root_ = nullptr;
};

}  // namespace je
