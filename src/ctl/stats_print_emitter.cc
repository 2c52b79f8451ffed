// stats_print_emitter.cc: the two output formats of the statistics report (see the header).
#include "ctl/stats_print_emitter.h"

#include <cstdarg>
#include <cstring>

#include "support/malloc_io.h"

namespace je::stats {

namespace {

/// Decimal text of an integer or boolean value; returns its length.
size_t format_scalar(char* out, size_t size, Value v) {
  switch (v.kind) {
    case Value::Kind::kBool: return je_snprintf(out, size, "%s", v.b ? "true" : "false");
    case Value::Kind::kUnsigned:
      return je_snprintf(out, size, "%llu", static_cast<unsigned long long>(v.u));
    case Value::Kind::kSigned: return je_snprintf(out, size, "%lld", static_cast<long long>(v.i));
    default: break;
  }
  if (size > 0) out[0] = '\0';
  return 0;
}

const char* nonnull(const char* s) { return s != nullptr ? s : "(null)"; }

}  // namespace

// ---- Raw output --------------------------------------------------------------------------------

void Emitter::flush() {
  if (len_ == 0) return;
  buf_[len_] = '\0';
  write_cb_(cbopaque_, buf_);
  len_ = 0;
}

void Emitter::put(const char* s, size_t n) {
  while (n > 0) {
    if (len_ == kBufSize - 1) flush();
    size_t room = kBufSize - 1 - len_;
    size_t k = n < room ? n : room;
    memcpy(buf_ + len_, s, k);
    len_ += k;
    s += k;
    n -= k;
  }
}

void Emitter::puts(const char* s) { put(s, strlen(s)); }

void Emitter::putf(const char* fmt, ...) {
  char tmp[512];
  va_list ap;
  va_start(ap, fmt);
  size_t n = je_vsnprintf(tmp, sizeof(tmp), fmt, ap);
  va_end(ap);
  put(tmp, n < sizeof(tmp) ? n : sizeof(tmp) - 1);
}

void Emitter::put_spaces(size_t n) {
  static constexpr char kSpaces[] = "                                ";
  while (n > 0) {
    size_t k = n < sizeof(kSpaces) - 1 ? n : sizeof(kSpaces) - 1;
    put(kSpaces, k);
    n -= k;
  }
}

void Emitter::json_string(const char* s) {
  put("\"", 1);
  // Escape what JSON requires, so any option string (malloc_conf may contain anything) parses.
  for (const char* p = nonnull(s); *p != '\0'; p++) {
    unsigned char c = static_cast<unsigned char>(*p);
    if (c == '"' || c == '\\') {
      char e[2] = {'\\', static_cast<char>(c)};
      put(e, 2);
    } else if (c < 0x20) {
      putf("\\u%04x", c);
    } else {
      put(p, 1);
    }
  }
  put("\"", 1);
}

void Emitter::put_value(Value v) {
  switch (v.kind) {
    case Value::Kind::kString:
      if (json_) {
        json_string(v.s);
      } else {
        put("\"", 1);
        puts(nonnull(v.s));
        put("\"", 1);
      }
      return;
    case Value::Kind::kTitle: puts(nonnull(v.s)); return;
    default: {
      char tmp[32];
      size_t n = format_scalar(tmp, sizeof(tmp), v);
      put(tmp, n);
      return;
    }
  }
}

void Emitter::put_padded(Value v, Justify j, int width) {
  size_t len;
  char tmp[32];
  const char* text = nullptr;
  if (v.kind == Value::Kind::kString) {
    len = strlen(nonnull(v.s)) + 2;
  } else if (v.kind == Value::Kind::kTitle) {
    text = nonnull(v.s);
    len = strlen(text);
  } else {
    len = format_scalar(tmp, sizeof(tmp), v);
    text = tmp;
  }
  size_t pad = width > 0 && static_cast<size_t>(width) > len ? width - len : 0;
  if (j == Justify::kRight) put_spaces(pad);
  if (text != nullptr) {
    put(text, len);
  } else {
    put_value(v);
  }
  if (j == Justify::kLeft) put_spaces(pad);
}

void Emitter::indent() { put_spaces(static_cast<size_t>(depth_) * 2); }

// ---- Document structure ------------------------------------------------------------------------

void Emitter::begin() {
  if (json_) {
    put("{", 1);
    depth_ = 1;
    item_at_depth_ = false;
  }
}

void Emitter::end() {
  if (json_) {
    depth_--;
    put("}", 1);
  }
  flush();
}

void Emitter::json_separator() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (item_at_depth_) put(",", 1);
}

void Emitter::json_key(const char* key) {
  json_separator();
  json_string(key);
  put(":", 1);
  after_key_ = true;
}

void Emitter::json_kv(const char* key, Value v) {
  if (!json_) return;
  json_key(key);
  json_separator();
  put_value(v);
  item_at_depth_ = true;
}

void Emitter::json_object_kv_begin(const char* key) {
  if (!json_) return;
  json_key(key);
  json_object_begin();
}

void Emitter::json_open(char bracket) {
  json_separator();
  put(&bracket, 1);
  depth_++;
  item_at_depth_ = false;
}

void Emitter::json_close(char bracket) {
  depth_--;
  put(&bracket, 1);
  item_at_depth_ = true;
}

void Emitter::json_object_begin() {
  if (json_) json_open('{');
}

void Emitter::json_object_end() {
  if (json_) json_close('}');
}

void Emitter::json_array_kv_begin(const char* key) {
  if (!json_) return;
  json_key(key);
  json_open('[');
}

void Emitter::json_array_end() {
  if (json_) json_close(']');
}

void Emitter::dict_begin(const char* json_key, const char* table_header) {
  if (json_) {
    json_object_kv_begin(json_key);
    return;
  }
  indent();
  puts(table_header);
  put("\n", 1);
  depth_++;
}

void Emitter::dict_end() {
  if (json_) {
    json_object_end();
    return;
  }
  depth_--;
}

void Emitter::table_key_value(const char* table_key, Value v) {
  indent();
  puts(table_key);
  put(": ", 2);
  put_value(v);
}

void Emitter::kv(const char* json_key, const char* table_key, Value v) {
  if (json_) {
    json_kv(json_key, v);
    return;
  }
  table_key_value(table_key, v);
  put("\n", 1);
}

void Emitter::kv_note(const char* json_key, const char* table_key, Value v, const char* note_key,
                      Value note) {
  if (json_) {
    json_kv(json_key, v);
    return;
  }
  table_key_value(table_key, v);
  put(" (", 2);
  puts(note_key);
  put(": ", 2);
  put_value(note);
  put(")\n", 2);
}

// ---- Text-only output --------------------------------------------------------------------------

void Emitter::table_printf(const char* fmt, ...) {
  if (json_) return;
  char tmp[512];
  va_list ap;
  va_start(ap, fmt);
  size_t n = je_vsnprintf(tmp, sizeof(tmp), fmt, ap);
  va_end(ap);
  put(tmp, n < sizeof(tmp) ? n : sizeof(tmp) - 1);
}

void Emitter::table_row(const Row& row) {
  if (json_) return;
  for (unsigned k = 0; k < row.n; k++) {
    put_padded(row.cols[k].value, row.cols[k].justify, row.cols[k].width);
  }
  put("\n", 1);
}

}  // namespace je::stats
