// ql.h: intrusive doubly-linked list.
//
// Purpose: allocation-free FIFO/LRU lists (eset LRU of free extents, edata cache free list,
// per-arena lists of large extents).
// Layer: support. Not synchronized: the owner's mutex protects the list.
// Invariants: a node is in at most one list per link; head has prev == nullptr, tail next ==
// nullptr.
// jemalloc mapping: ql.h / qr.h.
#pragma once

#include <cstddef>

namespace je {

template <class T>
struct QlLink {
  T* prev = nullptr;
  T* next = nullptr;
};

template <class T, QlLink<T> T::*kLink>
class IntrusiveList {
 public:
  constexpr IntrusiveList() = default;

  bool empty() const { return head_ == nullptr; }
  T* front() const { return head_; }
  T* back() const { return tail_; }
  static T* next(const T* n) { return (n->*kLink).next; }
  static T* prev(const T* n) { return (n->*kLink).prev; }

  void push_back(T* n) {
    QlLink<T>& l = n->*kLink;
    l.prev = tail_;
    l.next = nullptr;
    if (tail_ != nullptr) {
      (tail_->*kLink).next = n;
    } else {
      head_ = n;
    }
    tail_ = n;
  }

  void push_front(T* n) {
    QlLink<T>& l = n->*kLink;
    l.next = head_;
    l.prev = nullptr;
    if (head_ != nullptr) {
      (head_->*kLink).prev = n;
    } else {
      tail_ = n;
    }
    head_ = n;
  }

  void remove(T* n) {
    QlLink<T>& l = n->*kLink;
    if (l.prev != nullptr) {
      (l.prev->*kLink).next = l.next;
    } else {
      head_ = l.next;
    }
    if (l.next != nullptr) {
      (l.next->*kLink).prev = l.prev;
    } else {
      tail_ = l.prev;
    }
    l.prev = l.next = nullptr;
  }

  T* pop_front() {
    T* n = head_;
    if (n != nullptr) remove(n);
    return n;
  }

  /// Forget all nodes (they are not touched).
  void clear() { head_ = tail_ = nullptr; }

 private:
  T* head_ = nullptr;
  T* tail_ = nullptr;
};

}  // namespace je
