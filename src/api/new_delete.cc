// new_delete.cc: the 20 replaceable C++ allocation operators.
//
// The one translation unit built with exceptions (its runtime references are weak, below): on
// failure, operator new calls the installed
// std::new_handler and retries, and throws std::bad_alloc when there is none; the nothrow
// forms run the same loop but return nullptr (a handler's bad_alloc ends the loop). Aligned
// forms allocate with the requested alignment; sized deletes take the sized-free path as
// sdallocx does (the size picks the cache bin on the fast path; the slow path, the only one
// for aligned sized deletes, frees by the map lookup and ignores it).
#include <new>

#include "api/alloc_path.h"
#include "ctl/opt.h"
#include "support/compiler.h"
#include "support/malloc_io.h"

// The C++ runtime is not a dependency of the library: a C program that loads it (redis-server,
// for one) would otherwise pay libstdc++'s start-up and resident pages, 1.3 MiB measured. These
// operators need the runtime only after an allocation has failed, and every reference to it
// below is weak: the dynamic loader binds them to the libstdc++ of any C++ program, which is
// the only kind that calls these operators. In a process where no libstdc++ was loaded when
// this library was (a C program that later dlopens C++ code), a failed operator new finds no
// handler and aborts instead of throwing.
namespace std {
new_handler get_new_handler() noexcept __attribute__((weak));
void __throw_bad_alloc() __attribute__((weak, noreturn));
}  // namespace std
// The exception-handling references the compiler emits for the catch below (the personality
// routine among them) are made weak at the assembler level.
asm(".weak __cxa_begin_catch\n\t.weak __cxa_end_catch\n\t.weak __gxx_personality_v0");

using namespace je;
using namespace je::api;

namespace {

// Runs the new-handler loop after a failed attempt; returns the allocation or nullptr.
template <bool kNothrow>
JE_NOINLINE_COLD void* handle_oom(size_t usize, size_t alignment) {
  for (;;) {
    if (&std::get_new_handler == nullptr) break;  // no C++ runtime: no handler can be set
    std::new_handler handler = std::get_new_handler();
    if (handler == nullptr) break;
    if constexpr (kNothrow) {
      try {
        handler();
      } catch (...) {  // a handler may only throw bad_alloc; catch-all needs no typeinfo
        break;
      }
    } else {
      handler();
    }
    void* p = usize == 0 ? nullptr : allocate(Request{0, usize, Flags::aligned(alignment)});
    if (p != nullptr) return p;
  }
  if constexpr (!kNothrow) {
    if (g_opt.experimental_infallible_new) {
      // 5.3.0: a safety_check_abort hook may intercept the abort; new then returns NULL.
      je_misuse_msg("Allocation failed and opt.experimental_infallible_new is true. Aborting.");
      return nullptr;
    }
    if (&std::__throw_bad_alloc == nullptr) {
      je_abort_msg(
          "operator new failed and no C++ runtime is loaded to throw std::bad_alloc. "
          "Aborting.");
    }
    std::__throw_bad_alloc();
  }
  return nullptr;
}

template <bool kNothrow>
JE_NOINLINE_COLD void* new_slow(size_t size) {
  size_t usize = sz::s2u(size);
  void* p = usize == 0 ? nullptr : allocate(Request{size, usize, {}});
  return p != nullptr ? p : handle_oom<kNothrow>(usize, 0);
}

template <bool kNothrow>
void* new_aligned(size_t size, std::align_val_t al) {
  size_t alignment = static_cast<size_t>(al);
  size_t usize = sz::sa2u(size == 0 ? 1 : size, alignment);
  void* p = usize == 0 ? nullptr : allocate(Request{size, usize, Flags::aligned(alignment)});
  return p != nullptr ? p : handle_oom<kNothrow>(usize, alignment);
}

}  // namespace

JE_EXPORT void* operator new(size_t size) { return alloc_fast<new_slow<false>>(size); }
JE_EXPORT void* operator new[](size_t size) { return alloc_fast<new_slow<false>>(size); }
JE_EXPORT void* operator new(size_t size, const std::nothrow_t&) noexcept {
  return alloc_fast<new_slow<true>>(size);
}
JE_EXPORT void* operator new[](size_t size, const std::nothrow_t&) noexcept {
  return alloc_fast<new_slow<true>>(size);
}
JE_EXPORT void* operator new(size_t size, std::align_val_t al) {
  return new_aligned<false>(size, al);
}
JE_EXPORT void* operator new[](size_t size, std::align_val_t al) {
  return new_aligned<false>(size, al);
}
JE_EXPORT void* operator new(size_t size, std::align_val_t al, const std::nothrow_t&) noexcept {
  return new_aligned<true>(size, al);
}
JE_EXPORT void* operator new[](size_t size, std::align_val_t al, const std::nothrow_t&) noexcept {
  return new_aligned<true>(size, al);
}

JE_EXPORT void operator delete(void* p) noexcept { free_fast(p); }
JE_EXPORT void operator delete[](void* p) noexcept { free_fast(p); }
JE_EXPORT void operator delete(void* p, const std::nothrow_t&) noexcept { free_fast(p); }
JE_EXPORT void operator delete[](void* p, const std::nothrow_t&) noexcept { free_fast(p); }
JE_EXPORT void operator delete(void* p, size_t size) noexcept { sized_free_fast(p, size); }
JE_EXPORT void operator delete[](void* p, size_t size) noexcept { sized_free_fast(p, size); }
JE_EXPORT void operator delete(void* p, std::align_val_t) noexcept {
  if (p != nullptr) deallocate(p, kTcacheAuto);
}
JE_EXPORT void operator delete[](void* p, std::align_val_t) noexcept {
  if (p != nullptr) deallocate(p, kTcacheAuto);
}
JE_EXPORT void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  if (p != nullptr) deallocate(p, kTcacheAuto);
}
JE_EXPORT void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  if (p != nullptr) deallocate(p, kTcacheAuto);
}
JE_EXPORT void operator delete(void* p, size_t size, std::align_val_t al) noexcept {
  deallocate_sized(p, size, Flags::aligned(static_cast<size_t>(al)));
}
JE_EXPORT void operator delete[](void* p, size_t size, std::align_val_t al) noexcept {
  deallocate_sized(p, size, Flags::aligned(static_cast<size_t>(al)));
}
