// prof_json.cc: compact JSON writer (see prof_json.h).
#include "prof/prof_json.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "support/malloc_io.h"

namespace je {

void ProfJson::flush() {
  if (len_ == 0) return;
  buf_[len_] = '\0';
  cb_(opaque_, buf_);
  len_ = 0;
}

void ProfJson::raw(const char* s, size_t n) {
  while (n > 0) {
    if (len_ == sizeof(buf_) - 1) flush();
    size_t k = sizeof(buf_) - 1 - len_;
    if (k > n) k = n;
    memcpy(buf_ + len_, s, k);
    len_ += k;
    s += k;
    n -= k;
  }
}

void ProfJson::str(const char* s) {
  raw("\"", 1);
  for (; *s != '\0'; s++) {
    unsigned char c = static_cast<unsigned char>(*s);
    if (c == '"' || c == '\\') {
      char e[2] = {'\\', static_cast<char>(c)};
      raw(e, 2);
    } else if (c < 0x20) {
      char e[8];
      size_t n = je_snprintf(e, sizeof(e), "\\u%04x", c);
      raw(e, n);
    } else {
      raw(s, 1);
    }
  }
  raw("\"", 1);
}

void ProfJson::sep() {
  if (!first_[depth_]) raw(",", 1);
  first_[depth_] = false;
}

void ProfJson::key(const char* k) {
  sep();
  if (k != nullptr) {
    str(k);
    raw(":", 1);
  }
}

void ProfJson::object_begin(const char* k) {
  key(k);
  raw("{", 1);
  if (depth_ < kMaxDepth) depth_++;
  first_[depth_] = true;
}

void ProfJson::object_end() {
  if (depth_ > 0) depth_--;
  raw("}", 1);
}

void ProfJson::array_begin(const char* k) {
  key(k);
  raw("[", 1);
  if (depth_ < kMaxDepth) depth_++;
  first_[depth_] = true;
}

void ProfJson::array_end() {
  if (depth_ > 0) depth_--;
  raw("]", 1);
}

void ProfJson::kv_u64(const char* k, uint64_t v) {
  key(k);
  char b[24];
  raw(b, je_snprintf(b, sizeof(b), "%llu", static_cast<unsigned long long>(v)));
}

void ProfJson::kv_i64(const char* k, int64_t v) {
  key(k);
  char b[24];
  raw(b, je_snprintf(b, sizeof(b), "%lld", static_cast<long long>(v)));
}

void ProfJson::kv_bool(const char* k, bool v) {
  key(k);
  if (v) {
    raw("true", 4);
  } else {
    raw("false", 5);
  }
}

void ProfJson::kv_str(const char* k, const char* v) {
  key(k);
  str(v);
}

void ProfJson::value_ptr(uintptr_t v) {
  key(nullptr);
  char b[24];
  raw(b, je_snprintf(b, sizeof(b), "\"0x%llx\"", static_cast<unsigned long long>(v)));
}

void prof_json_fd_write(void* opaque, const char* text) {
  auto* s = static_cast<ProfFdSink*>(opaque);
  size_t n = strlen(text);
  while (s->ok && n > 0) {
    ssize_t r = ::write(s->fd, text, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      s->ok = false;
      break;
    }
    text += r;
    n -= static_cast<size_t>(r);
  }
}

}  // namespace je
