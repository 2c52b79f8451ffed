// malloc_io.cc: allocation-free printf subset, number parsing and message output (see
// malloc_io.h).
#include "support/malloc_io.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>

namespace je {

namespace {

// Bounded output cursor: counts every character, stores those that fit before the terminator.
struct Out {
  char* buf;
  size_t size;
  size_t len = 0;

  void put(char c) {
    if (len + 1 < size) buf[len] = c;
    len++;
  }
  void put_n(char c, size_t n) {
    for (size_t i = 0; i < n; i++) put(c);
  }
  void put_s(const char* s, size_t n) {
    for (size_t i = 0; i < n; i++) put(s[i]);
  }
  size_t finish() {
    if (size > 0) buf[len < size ? len : size - 1] = '\0';
    return len;
  }
};

enum class Len : uint8_t { kNone, kHH, kH, kL, kLL, kZ, kJ, kT };

struct Spec {
  bool left = false;   // '-'
  bool zero = false;   // '0'
  bool space = false;  // ' '
  bool plus = false;   // '+'
  bool alt = false;    // '#'
  size_t width = 0;
  bool has_prec = false;
  size_t prec = 0;
  Len len = Len::kNone;
};

// Digits of `v` in `base` written backwards from end; returns the first digit's position.
char* utoa_rev(uint64_t v, unsigned base, bool upper, char* end) {
  const char* digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  char* p = end;
  do {
    *--p = digits[v % base];
    v /= base;
  } while (v != 0);
  return p;
}

// Emits an integer conversion with C's padding rules. `sign` is 0, '-', '+' or ' '; `prefix`
// is "", "0x" or "0X".
void emit_int(Out& o, const Spec& sp, uint64_t mag, unsigned base, bool upper, char sign,
              const char* prefix, bool octal_alt) {
  char tmp[32];
  char* end = tmp + sizeof(tmp);
  char* digits = utoa_rev(mag, base, upper, end);
  size_t ndigits = static_cast<size_t>(end - digits);
  // An explicit zero precision with a zero value prints no digits at all.
  if (sp.has_prec && sp.prec == 0 && mag == 0) ndigits = 0;
  size_t nzeros = (sp.has_prec && sp.prec > ndigits) ? sp.prec - ndigits : 0;
  // '#' with 'o' forces a leading 0 digit (by raising the precision if needed).
  if (octal_alt && nzeros == 0 && (ndigits == 0 || digits[0] != '0')) nzeros = 1;
  size_t nprefix = strlen(prefix);
  size_t body = (sign != 0 ? 1 : 0) + nprefix + nzeros + ndigits;
  size_t pad = sp.width > body ? sp.width - body : 0;
  // '0' is ignored with '-' and with an explicit precision.
  bool zero_pad = sp.zero && !sp.left && !sp.has_prec;
  if (!sp.left && !zero_pad) o.put_n(' ', pad);
  if (sign != 0) o.put(sign);
  o.put_s(prefix, nprefix);
  if (zero_pad) o.put_n('0', pad);
  o.put_n('0', nzeros);
  o.put_s(digits, ndigits);
  if (sp.left) o.put_n(' ', pad);
}

void emit_str(Out& o, const Spec& sp, const char* s, size_t n) {
  size_t pad = sp.width > n ? sp.width - n : 0;
  if (!sp.left) o.put_n(' ', pad);
  o.put_s(s, n);
  if (sp.left) o.put_n(' ', pad);
}

int64_t arg_signed(Len len, va_list& ap) {
  switch (len) {
    case Len::kHH: return static_cast<signed char>(va_arg(ap, int));
    case Len::kH: return static_cast<short>(va_arg(ap, int));
    case Len::kNone: return va_arg(ap, int);
    case Len::kL: return va_arg(ap, long);
    case Len::kLL: return va_arg(ap, long long);
    case Len::kZ: return va_arg(ap, ssize_t);
    case Len::kJ: return va_arg(ap, intmax_t);
    case Len::kT: return va_arg(ap, ptrdiff_t);
  }
  return 0;
}

uint64_t arg_unsigned(Len len, va_list& ap) {
  switch (len) {
    case Len::kHH: return static_cast<unsigned char>(va_arg(ap, unsigned));
    case Len::kH: return static_cast<unsigned short>(va_arg(ap, unsigned));
    case Len::kNone: return va_arg(ap, unsigned);
    case Len::kL: return va_arg(ap, unsigned long);
    case Len::kLL: return va_arg(ap, unsigned long long);
    case Len::kZ: return va_arg(ap, size_t);
    case Len::kJ: return va_arg(ap, uintmax_t);
    case Len::kT: return static_cast<uint64_t>(va_arg(ap, ptrdiff_t));
  }
  return 0;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Reads a decimal run, saturating so absurd widths cannot wrap around.
size_t read_decimal(const char*& f) {
  size_t v = 0;
  while (is_digit(*f)) {
    size_t d = static_cast<size_t>(*f - '0');
    v = v > (SIZE_MAX - d) / 10 ? SIZE_MAX : v * 10 + d;
    f++;
  }
  return v;
}

bool is_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

int digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'z') return c - 'a' + 10;
  if (c >= 'A' && c <= 'Z') return c - 'A' + 10;
  return 99;
}

// Shared body of parse_u64/parse_i64: magnitude and sign, strtoull-style prefix handling.
// Returns false for no digits / overflow of the magnitude / bad base.
bool parse_magnitude(const char* s, size_t len, int base, bool allow_minus, bool* neg,
                     uint64_t* mag, size_t* used) {
  *used = 0;
  if (base != 0 && (base < 2 || base > 36)) return false;
  size_t i = 0;
  while (i < len && is_space(s[i])) i++;
  *neg = false;
  if (i < len && (s[i] == '+' || s[i] == '-')) {
    if (s[i] == '-') {
      if (!allow_minus) return false;
      *neg = true;
    }
    i++;
  }
  // A "0x" prefix counts only when a hex digit follows; otherwise the '0' alone is the number.
  bool hex_prefix = i + 2 < len && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X') &&
                    digit_value(s[i + 2]) < 16;
  if (base == 0) {
    base = hex_prefix ? 16 : (i < len && s[i] == '0') ? 8 : 10;
  }
  if (base == 16 && hex_prefix) i += 2;
  size_t start = i;
  uint64_t v = 0;
  bool overflow = false;
  const unsigned b = static_cast<unsigned>(base);
  while (i < len) {
    int d = digit_value(s[i]);
    if (d >= base) break;
    if (v > (UINT64_MAX - static_cast<unsigned>(d)) / b) overflow = true;
    v = v * b + static_cast<unsigned>(d);
    i++;
  }
  if (i == start) return false;
  *used = i;
  if (overflow) return false;
  *mag = v;
  return true;
}

constinit std::atomic<MessageWriter> g_writer{nullptr};

}  // namespace

void io_write_stderr(const char* s) {
  size_t n = strlen(s);
  while (n > 0) {
    ssize_t w = write(STDERR_FILENO, s, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return;  // Nowhere left to report the failure.
    }
    s += w;
    n -= static_cast<size_t>(w);
  }
}

size_t je_vsnprintf(char* buf, size_t size, const char* fmt, va_list ap_in) {
  Out o{buf, size};
  va_list ap;
  va_copy(ap, ap_in);
  const char* f = fmt;
  while (*f != '\0') {
    if (*f != '%') {
      o.put(*f++);
      continue;
    }
    const char* spec_start = f;
    f++;
    Spec sp;
    for (;; f++) {
      if (*f == '-') {
        sp.left = true;
      } else if (*f == '0') {
        sp.zero = true;
      } else if (*f == ' ') {
        sp.space = true;
      } else if (*f == '+') {
        sp.plus = true;
      } else if (*f == '#') {
        sp.alt = true;
      } else {
        break;
      }
    }
    if (*f == '*') {
      int w = va_arg(ap, int);
      if (w < 0) {
        sp.left = true;
        sp.width = static_cast<size_t>(-static_cast<int64_t>(w));
      } else {
        sp.width = static_cast<size_t>(w);
      }
      f++;
    } else {
      sp.width = read_decimal(f);
    }
    if (*f == '.') {
      f++;
      if (*f == '*') {
        int p = va_arg(ap, int);
        f++;
        // A negative precision argument means "no precision".
        if (p >= 0) {
          sp.has_prec = true;
          sp.prec = static_cast<size_t>(p);
        }
      } else {
        sp.has_prec = true;
        sp.prec = read_decimal(f);
      }
    }
    switch (*f) {
      case 'h':
        f++;
        if (*f == 'h') {
          sp.len = Len::kHH;
          f++;
        } else {
          sp.len = Len::kH;
        }
        break;
      case 'l':
        f++;
        if (*f == 'l') {
          sp.len = Len::kLL;
          f++;
        } else {
          sp.len = Len::kL;
        }
        break;
      case 'z':
        sp.len = Len::kZ;
        f++;
        break;
      case 'j':
        sp.len = Len::kJ;
        f++;
        break;
      case 't':
        sp.len = Len::kT;
        f++;
        break;
      default: break;
    }
    char conv = *f;
    if (conv == '\0') {
      // Truncated specification at the end of the format: print it as is.
      o.put_s(spec_start, static_cast<size_t>(f - spec_start));
      break;
    }
    f++;
    switch (conv) {
      case 'd':
      case 'i': {
        int64_t v = arg_signed(sp.len, ap);
        uint64_t mag = v < 0 ? uint64_t{0} - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
        char sign = v < 0 ? '-' : sp.plus ? '+' : sp.space ? ' ' : 0;
        emit_int(o, sp, mag, 10, false, sign, "", false);
        break;
      }
      case 'u': emit_int(o, sp, arg_unsigned(sp.len, ap), 10, false, 0, "", false); break;
      case 'o': emit_int(o, sp, arg_unsigned(sp.len, ap), 8, false, 0, "", sp.alt); break;
      case 'x':
      case 'X': {
        uint64_t v = arg_unsigned(sp.len, ap);
        bool upper = conv == 'X';
        const char* prefix = (sp.alt && v != 0) ? (upper ? "0X" : "0x") : "";
        emit_int(o, sp, v, 16, upper, 0, prefix, false);
        break;
      }
      case 'p': {
        uintptr_t v = reinterpret_cast<uintptr_t>(va_arg(ap, void*));
        if (v == 0) {
          emit_str(o, sp, "(nil)", 5);
        } else {
          emit_int(o, sp, v, 16, false, 0, "0x", false);
        }
        break;
      }
      case 's': {
        const char* s = va_arg(ap, const char*);
        size_t limit = sp.has_prec ? sp.prec : SIZE_MAX;
        if (s == nullptr) {
          // glibc prints "(null)" only when the precision leaves room for all of it.
          s = limit >= 6 ? "(null)" : "";
        }
        size_t n = 0;
        while (n < limit && s[n] != '\0') n++;
        emit_str(o, sp, s, n);
        break;
      }
      case 'c': {
        char c = static_cast<char>(va_arg(ap, int));
        emit_str(o, sp, &c, 1);
        break;
      }
      case '%': o.put('%'); break;
      default: o.put_s(spec_start, static_cast<size_t>(f - spec_start)); break;
    }
  }
  va_end(ap);
  return o.finish();
}

size_t je_snprintf(char* buf, size_t size, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  size_t n = je_vsnprintf(buf, size, fmt, ap);
  va_end(ap);
  return n;
}

size_t fmt_fixed(char* buf, size_t size, uint64_t num, uint64_t den, unsigned decimals) {
  Out o{buf, size};
  uint64_t ip = den == 0 ? 0 : num / den;
  uint64_t rem = den == 0 ? 0 : num % den;
  char tmp[24];
  char* end = tmp + sizeof(tmp);
  char* p = utoa_rev(ip, 10, false, end);
  o.put_s(p, static_cast<size_t>(end - p));
  if (decimals > 0) {
    o.put('.');
    for (unsigned i = 0; i < decimals; i++) {
      if (den == 0) {
        o.put('0');
        continue;
      }
      // Next digit = floor(10 * rem / den), new rem = 10 * rem mod den, computed as ten
      // modular additions of rem so that nothing overflows even when den is near 2^64 (and no
      // 128-bit division helper from libgcc is needed). Invariant: acc < den, rem < den.
      uint64_t acc = 0;
      unsigned digit = 0;
      for (int k = 0; k < 10; k++) {
        if (acc >= den - rem) {
          acc -= den - rem;
          digit++;
        } else {
          acc += rem;
        }
      }
      o.put(static_cast<char>('0' + digit));
      rem = acc;
    }
  }
  return o.finish();
}

void io_set_writer(MessageWriter w) { g_writer.store(w, std::memory_order_release); }

void io_write(const char* s) {
  MessageWriter w = g_writer.load(std::memory_order_acquire);
  if (w != nullptr) {
    w(s);
  } else {
    io_write_stderr(s);
  }
}

void io_printf(const char* fmt, ...) {
  char buf[4096];
  va_list ap;
  va_start(ap, fmt);
  je_vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  io_write(buf);
}

namespace {

// "<jemalloc>: " + the formatted message + "\n" into buf (4 KiB; a long message is cut).
void format_report(char (&buf)[4096], const char* fmt, va_list ap) {
  constexpr char kPrefix[] = "<jemalloc>: ";
  constexpr size_t kPrefixLen = sizeof(kPrefix) - 1;
  memcpy(buf, kPrefix, kPrefixLen);
  // The message area keeps one byte spare for the newline after the (possibly cut) message.
  constexpr size_t kRoom = sizeof(buf) - kPrefixLen - 1;
  size_t n = je_vsnprintf(buf + kPrefixLen, kRoom, fmt, ap);
  size_t end = kPrefixLen + (n < kRoom - 1 ? n : kRoom - 1);
  buf[end] = '\n';
  buf[end + 1] = '\0';
}

constinit std::atomic<MisuseAbortHook> g_misuse_hook{nullptr};

}  // namespace

void je_abort_msg(const char* fmt, ...) {
  char buf[4096];
  va_list ap;
  va_start(ap, fmt);
  format_report(buf, fmt, ap);
  va_end(ap);
  io_write(buf);
  abort();
}

void misuse_abort_hook_set(MisuseAbortHook h) { g_misuse_hook.store(h, std::memory_order_release); }

void je_misuse_msg(const char* fmt, ...) {
  char buf[4096];
  va_list ap;
  va_start(ap, fmt);
  format_report(buf, fmt, ap);
  va_end(ap);
  if (MisuseAbortHook h = g_misuse_hook.load(std::memory_order_acquire); h != nullptr) {
    h(buf);
    return;
  }
  io_write(buf);
  abort();
}

bool parse_u64(const char* s, size_t len, int base, uint64_t* out, size_t* consumed) {
  bool neg;
  uint64_t mag = 0;
  size_t used;
  bool ok = parse_magnitude(s, len, base, false, &neg, &mag, &used);
  if (consumed != nullptr) *consumed = used;
  if (ok) *out = mag;
  return ok;
}

bool parse_i64(const char* s, size_t len, int base, int64_t* out, size_t* consumed) {
  bool neg;
  uint64_t mag = 0;
  size_t used;
  bool ok = parse_magnitude(s, len, base, true, &neg, &mag, &used);
  if (ok) {
    constexpr uint64_t kMaxPos = static_cast<uint64_t>(INT64_MAX);
    if (neg ? mag > kMaxPos + 1 : mag > kMaxPos) {
      ok = false;
    } else {
      *out = neg ? static_cast<int64_t>(uint64_t{0} - mag) : static_cast<int64_t>(mag);
    }
  }
  if (consumed != nullptr) *consumed = used;
  return ok;
}

}  // namespace je
