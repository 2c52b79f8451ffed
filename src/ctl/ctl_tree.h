// ctl_tree.h: the mallctl name tree -- static data, name and MIB lookup, enumeration.
//
// Purpose: the dotted namespace ("stats.arenas.0.pactive") is one constexpr tree of Nodes.
// A node has either named children (a MIB component is the child's position, in jemalloc
// 5.3.0's order, so MIBs equal the real library's), or one indexed child standing for every
// integer at that level ("<i>", the MIB component is the integer itself, validated by the
// node's check function), or a handler (a leaf). The same data serves mallctl, nametomib,
// bymib and the enumeration a unit test compares with the golden 5.3.0 name list.
// Layer: ctl (internal to src/ctl). Callers: ctl.cc (entry points), tests via walk_names.
// Concurrency: the tree is immutable. Index checks read ctl state; callers hold the ctl mutex
// (LockRank::kCtl) around a lookup.
// Invariants: every leaf has a handler and no children; an interior node has no handler;
// depth <= kMaxDepth.
// jemalloc mapping: ctl_named_node_t / ctl_indexed_node_t, ctl_lookup, ctl_lookupbymib,
// the *_index functions and the node tables of ctl.c.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "ctl/ctl_io.h"

namespace je::ctl {

/// Deepest name in the tree (stats.arenas.<i>.bins.<j>.mutex.num_ops), jemalloc's CTL_MAX_DEPTH.
inline constexpr size_t kMaxDepth = 7;

/// A leaf's implementation: 0 or an errno value.
using Handler = int (*)(Req& r);
/// Whether `index` is a valid integer component at MIB position `pos` (mib[0..pos) resolved).
using IndexCheck = bool (*)(const size_t* mib, size_t pos, size_t index);

struct Node {
  const char* name;
  const Node* children;  // named children, or the single element node when `index` is set
  uint16_t nchildren;
  IndexCheck index;
  Handler handler;
};

/// A leaf.
constexpr Node leaf(const char* name, Handler h) { return Node{name, nullptr, 0, nullptr, h}; }
/// An interior node with named children.
template <size_t N>
constexpr Node named(const char* name, const Node (&children)[N]) {
  static_assert(N < 65536);
  return Node{name, children, static_cast<uint16_t>(N), nullptr, nullptr};
}
template <size_t N>
constexpr Node named(const char* name, const std::array<Node, N>& children) {
  static_assert(N < 65536);
  return Node{name, children.data(), static_cast<uint16_t>(N), nullptr, nullptr};
}
/// An interior node whose children are integers, all shaped like `element`.
constexpr Node indexed(const char* name, IndexCheck check, const Node& element) {
  return Node{name, &element, 1, check, nullptr};
}

/// Resolves a dotted name. On success *node is the node reached (possibly interior), mib[0..*depth)
/// its path and *depth the number of components. *depth on entry is the most components to
/// resolve (a smaller value yields a partial MIB, as mallctlnametomib does). ENOENT for an
/// unknown component, an invalid index, an empty first component, or extra components past a
/// leaf.
int lookup_name(const char* name, const Node** node, size_t* mib, size_t* depth);

/// Resolves a MIB to its node (possibly interior). ENOENT for an out-of-range or invalid
/// component or one past a leaf.
int lookup_mib(const size_t* mib, size_t miblen, const Node** node);

/// Calls `visit(name, ctx)` for every leaf of the tree, integers written as "<i>", in tree
/// order. For tests and documentation; uses a fixed buffer, allocates nothing.
void walk_names(void (*visit)(const char* name, void* ctx), void* ctx);

/// jemalloc's index parsing (malloc_strtoumax, base 10): optional leading white space and sign,
/// decimal digits up to the first non-digit; UINTMAX_MAX (invalid) when there is no digit or on
/// overflow. Exposed for tests.
uint64_t parse_index(const char* s);

}  // namespace je::ctl
