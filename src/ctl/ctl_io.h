// ctl_io.h: one mallctl request and the typed rules for reading and writing its value.
//
// Purpose: every mallctl node moves data through the same five arguments (oldp, oldlenp, newp,
// newlen, plus the MIB). jemalloc's contract for them is subtle -- a wrong *oldlenp still copies
// as much of the value as fits, reports the copied length and answers EINVAL; a read with
// oldp == NULL silently does nothing; a write's length must match exactly -- and clients rely
// on it (Arrow probes uint64_t, then uint32_t). These helpers implement the rules once; every
// handler in src/ctl uses them and none touches the arguments directly.
// Layer: ctl (internal to src/ctl). Callers: ctl.cc, ctl_stats.cc, ctl_tree.cc.
// Concurrency: none; a Req lives on the caller's stack.
// Invariants: helpers return 0 or an errno value and never write through a NULL pointer.
// jemalloc mapping: the READONLY / WRITEONLY / READ_XOR_WRITE / NEITHER_READ_NOR_WRITE /
// VERIFY_READ / READ / WRITE / ASSURED_WRITE / MIB_UNSIGNED macros of ctl.c.
#pragma once

#include <cerrno>
#include <climits>
#include <cstddef>
#include <cstring>

namespace je::ctl {

/// The arguments of one mallctl / mallctlbymib call, with the MIB resolved so far.
struct Req {
  const size_t* mib;
  size_t miblen;
  void* oldp;
  size_t* oldlenp;
  const void* newp;
  size_t newlen;

  /// Whether the caller asked for the old value (both pointers given).
  bool reading() const { return oldp != nullptr && oldlenp != nullptr; }
  /// Whether the caller supplied a new value.
  bool writing() const { return newp != nullptr; }
};

/// Read-only node: any new value (even a NULL newp with a non-zero newlen) is EPERM.
inline int readonly(const Req& r) { return (r.newp != nullptr || r.newlen != 0) ? EPERM : 0; }

/// Write-only node: asking for the old value (either pointer) is EPERM.
inline int writeonly(const Req& r) {
  return (r.oldp != nullptr || r.oldlenp != nullptr) ? EPERM : 0;
}

/// Node that may be read or written in one call, not both.
inline int read_xor_write(const Req& r) {
  return (r.reading() && (r.newp != nullptr || r.newlen != 0)) ? EPERM : 0;
}

/// Action node (void): any old or new value at all is EPERM.
inline int neither_read_nor_write(const Req& r) {
  return (r.oldp != nullptr || r.oldlenp != nullptr || r.newp != nullptr || r.newlen != 0) ? EPERM
                                                                                           : 0;
}

/// Copies `size` bytes of a value out. With a wrong *oldlenp, copies min(size, *oldlenp) bytes,
/// stores that count in *oldlenp and answers EINVAL; without oldp/oldlenp does nothing.
inline int read_bytes(Req& r, const void* v, size_t size) {
  if (!r.reading()) return 0;
  if (*r.oldlenp != size) {
    size_t n = size <= *r.oldlenp ? size : *r.oldlenp;
    std::memcpy(r.oldp, v, n);
    *r.oldlenp = n;
    return EINVAL;
  }
  std::memcpy(r.oldp, v, size);
  return 0;
}

/// Typed read-out of `v` (see read_bytes).
template <class T>
int read_out(Req& r, const T& v) {
  return read_bytes(r, &v, sizeof(T));
}

/// Nodes whose side effect must not happen unless the result can be delivered: anything but
/// oldp and *oldlenp == sizeof(T) is EINVAL, and *oldlenp (when given) becomes 0.
template <class T>
int verify_read(Req& r) {
  if (r.oldp == nullptr || r.oldlenp == nullptr || *r.oldlenp != sizeof(T)) {
    if (r.oldlenp != nullptr) *r.oldlenp = 0;
    return EINVAL;
  }
  return 0;
}

/// Optional write: without newp leaves *v alone; newlen must be sizeof(T), else EINVAL.
template <class T>
int write_in(const Req& r, T* v) {
  if (r.newp == nullptr) return 0;
  if (r.newlen != sizeof(T)) return EINVAL;
  std::memcpy(static_cast<void*>(v), r.newp, sizeof(T));
  return 0;
}

/// Mandatory write: newp must be given with newlen == sizeof(T), else EINVAL.
template <class T>
int assured_write(const Req& r, T* v) {
  if (r.newp == nullptr || r.newlen != sizeof(T)) return EINVAL;
  std::memcpy(static_cast<void*>(v), r.newp, sizeof(T));
  return 0;
}

/// MIB component `i` as an unsigned; EFAULT when it does not fit (jemalloc's MIB_UNSIGNED).
inline int mib_unsigned(const Req& r, size_t i, unsigned* out) {
  if (r.mib[i] > UINT_MAX) return EFAULT;
  *out = static_cast<unsigned>(r.mib[i]);
  return 0;
}

}  // namespace je::ctl
