// malloc_io.h: formatting, number parsing and diagnostic output that never allocate.
//
// Purpose: the allocator cannot use stdio: printf may call malloc (recursion inside malloc, or
// deadlock while allocator locks are held) and stdio's own locks are not fork- or
// signal-friendly. This module formats into caller buffers (a printf subset that covers every
// format the allocator uses), parses numbers for the option parser, and writes messages through
// one replaceable writer (the public `malloc_message`).
// Layer: support. Callers: mutex (witness messages), ctl (MALLOC_CONF parsing, stats printing),
// api (installs the writer, error messages such as "<jemalloc>: Invalid conf pair").
// Concurrency: the formatting and parsing functions are pure; the writer pointer is an atomic
// that the api layer sets once during initialization. Output calls do not lock.
// Invariants: no function here calls malloc/new or stdio; buffers are always NUL-terminated when
// their size is non-zero; return values count the full untruncated length like C snprintf.
// jemalloc mapping: malloc_io.h/malloc_io.c (malloc_vsnprintf, malloc_snprintf, malloc_printf,
// malloc_write, malloc_strtoumax); the writer is `je_malloc_message`.
#pragma once

#include <cstdarg>
#include <cstddef>
#include <cstdint>

namespace je {

/// printf subset into buf[0, size). Conversions: d i u x X o p s c %; length modifiers hh h l
/// ll z j t; flags - 0 space + #; width and precision (also as '*'). Floating point is not
/// supported (see fmt_fixed). Returns the length the full output would have had; writes a NUL
/// terminator whenever size > 0. `%p` and `%s` of a null pointer print like glibc ("(nil)",
/// "(null)"). An unknown conversion is copied to the output verbatim.
size_t je_vsnprintf(char* buf, size_t size, const char* fmt, va_list ap);

/// Variadic form of je_vsnprintf.
size_t je_snprintf(char* buf, size_t size, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));

/// Formats num/den in decimal with `decimals` digits after the point, truncating (not rounding)
/// like jemalloc's stats ratios: fmt_fixed(b, n, 1, 8, 3) -> "0.125". decimals == 0 prints the
/// integer part only (no point). den == 0 formats as if the quotient were 0. Exact for all
/// 64-bit inputs. Returns the untruncated length; NUL-terminates when size > 0.
size_t fmt_fixed(char* buf, size_t size, uint64_t num, uint64_t den, unsigned decimals);

/// Destination of all diagnostic output; receives one NUL-terminated chunk per call.
using MessageWriter = void (*)(const char* s);

/// Installs the writer used by io_write (the api layer forwards to the public malloc_message).
/// nullptr restores the default (stderr).
void io_set_writer(MessageWriter w);

/// Writes `s` through the installed writer, or by default with write(2) to fd 2, retrying on
/// partial writes and EINTR.
void io_write(const char* s);

/// Writes straight to fd 2 (the default writer), retrying partial writes and EINTR.
void io_write_stderr(const char* s);

/// Formats into a 4 KiB stack buffer and io_write()s it; longer output is truncated.
void io_printf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

/// Prints "<jemalloc>: <message>\n" via io_write, then abort()s. For unrecoverable internal
/// errors (lock order violations, corrupted metadata).
[[noreturn]] void je_abort_msg(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

/// experimental.hooks.safety_check_abort (5.3.0's safety_check_abort_hook_t): called with the
/// report of a detected misuse, "<jemalloc>: <message>\n", instead of writing it and aborting.
using MisuseAbortHook = void (*)(const char* message);
/// Installs the hook; nullptr restores writing the report and aborting.
void misuse_abort_hook_set(MisuseAbortHook h);

/// Reports a misuse of the API the caller can carry on from (5.3.0's safety_check_fail): with a
/// hook installed, hands it "<jemalloc>: <message>\n" and returns; otherwise as je_abort_msg.
void je_misuse_msg(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

/// Parses an unsigned integer from s[0, len) without allocation, like strtoull: leading
/// whitespace is skipped, an optional '+' is accepted ('-' is rejected), base 0 picks 16 for a
/// "0x"/"0X" prefix, 8 for a leading '0' and 10 otherwise; base 16 also accepts the prefix; bases
/// 2..36 are allowed. Parsing stops at the first character that is not a digit of the base.
/// On success stores the value in *out and the number of characters used (whitespace, sign,
/// prefix and digits) in *consumed, and returns true. Returns false when there is no digit, on
/// overflow past UINT64_MAX, or for an invalid base; *consumed is then 0 (no digit) or the end
/// of the digit run (overflow), and *out is unchanged. `consumed` may be nullptr.
bool parse_u64(const char* s, size_t len, int base, uint64_t* out, size_t* consumed);

/// Signed counterpart of parse_u64: accepts '+' or '-'; the value must fit in int64_t
/// (INT64_MIN included), otherwise false.
bool parse_i64(const char* s, size_t len, int base, int64_t* out, size_t* consumed);

}  // namespace je
