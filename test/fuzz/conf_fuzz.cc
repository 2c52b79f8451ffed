// conf_fuzz.cc: libFuzzer target for MALLOC_CONF strings, against the library linked statically
// under ASan+UBSan (public names renamed fz_*, see fz_api.h; the parser reached directly).
//
// Each input (cut at its first NUL) is parsed from the defaults with conf_parse_string, the
// engine that MALLOC_CONF goes through, and then:
//   * no crash, no sanitizer report, and every message is one line of the parser's forms with
//     the "<jemalloc>: " prefix;
//   * the string is reported as bad (conf_parse_string false) exactly when a message other than
//     an experimental_* key's was printed -- an invalid pair is always warned about;
//   * every opt.* leaf answers mallctl (fz_mallctl) with 0, the size its type has, and the value
//     the option table holds; string options are NUL-terminated names;
//   * parsing the same string again gives the same messages and the same values.
// The allocator is booted once (LLVMFuzzerInitialize); what the parse changes afterwards is
// only what opt.* reports, which is all this target reads.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cstdio>

#include "ctl/conf.h"
#include "ctl/opt.h"
#include "fz_api.h"
#include "support/malloc_io.h"

namespace {

constexpr size_t kLogMax = 1 << 16;
char g_log[kLogMax];
size_t g_log_len = 0;
bool g_log_bad_form = false;
bool g_log_counted_error = false;

const char* const kForms[] = {
    "Conf string ends with key",
    "Malformed conf string",
    "Conf string ends with comma",
    "Invalid conf pair: ",
    "Invalid conf value: ",
    "Out-of-range conf value: ",
    "Invalid settings for bin_shards",
    "Invalid settings for slab_sizes",
    "-- Set conf value: ",
};

void writer(const char* s) {
  size_t n = strlen(s);
  if (g_log_len + n < kLogMax) {
    memcpy(g_log + g_log_len, s, n);
    g_log_len += n;
  }
  static const char kPrefix[] = "<jemalloc>: ";
  if (strncmp(s, kPrefix, sizeof(kPrefix) - 1) != 0) {
    g_log_bad_form = true;
    return;
  }
  const char* body = s + sizeof(kPrefix) - 1;
  bool known = false;
  for (const char* f : kForms) known = known || strncmp(body, f, strlen(f)) == 0;
  if (!known) g_log_bad_form = true;
  // An experimental_* key is reported but is not an error (5.3.0).
  bool experimental = strncmp(body, "Invalid conf pair: experimental_", 32) == 0;
  if (strncmp(body, "-- Set conf value: ", 19) != 0 && !experimental) g_log_counted_error = true;
}

[[noreturn]] void fail(const char* what, const char* input) {
  fprintf(stderr, "conf_fuzz: %s\ninput: \"%s\"\nmessages:\n%.*s\n", what, input,
          static_cast<int>(g_log_len), g_log);
  abort();
}

// Every opt.* leaf through the public mallctl: 0, the right length, the table's bytes.
void check_mallctl(const char* input) {
  size_t n;
  const je::OptDesc* all = je::opt_table(&n);
  for (size_t i = 0; i < n; i++) {
    char name[96];
    snprintf(name, sizeof(name), "opt.%s", all[i].name);
    alignas(8) unsigned char buf[64];
    size_t len = all[i].size;
    if (len > sizeof(buf)) fail("opt leaf larger than expected", input);
    if (fz_mallctl(name, buf, &len, nullptr, 0) != 0) fail("opt.* leaf not readable", input);
    if (len != all[i].size) fail("opt.* leaf length", input);
    if (memcmp(buf, all[i].ptr, len) != 0) fail("opt.* leaf differs from the table", input);
    if (all[i].type == je::OptType::kString) {
      const char* s;
      memcpy(&s, buf, sizeof(s));
      if (s == nullptr || strnlen(s, 4096) == 4096) fail("opt.* string not terminated", input);
    }
  }
}

struct Result {
  bool ok;
  size_t log_len;
  uint32_t log_hash;
  uint32_t opt_hash;
};

uint32_t hash(const void* p, size_t n, uint32_t h = 2166136261u) {
  const unsigned char* c = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * 16777619u;
  return h;
}

uint32_t hash_opts() {
  size_t n;
  const je::OptDesc* all = je::opt_table(&n);
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; i++) {
    if (all[i].type == je::OptType::kString) {
      const char* s = *static_cast<const char* const*>(all[i].ptr);
      h = hash(s, strlen(s) + 1, h);
    } else {
      h = hash(all[i].ptr, all[i].size, h);
    }
  }
  return h;
}

Result parse(const char* s) {
  je::opt_reset();
  g_log_len = 0;
  g_log_bad_form = false;
  g_log_counted_error = false;
  bool ok = je::conf_parse_string(s);
  return Result{ok, g_log_len, hash(g_log, g_log_len), hash_opts()};
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Boot the allocator once (its own MALLOC_CONF reading included), then take the messages.
  char v[64];
  const char* ver = nullptr;
  size_t len = sizeof(ver);
  fz_mallctl("version", &ver, &len, nullptr, 0);
  (void)v;
  je::io_set_writer(writer);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return 0;
  char s[4097];
  memcpy(s, data, size);
  s[size] = '\0';
  Result a = parse(s);
  if (g_log_bad_form) fail("message not in the parser's forms", s);
  if (a.ok == g_log_counted_error) {
    fail(a.ok ? "an error message but the string was accepted" : "rejected without a message", s);
  }
  check_mallctl(s);
  Result b = parse(s);
  if (a.ok != b.ok || a.log_len != b.log_len || a.log_hash != b.log_hash ||
      a.opt_hash != b.opt_hash) {
    fail("parsing is not deterministic", s);
  }
  je::opt_reset();
  return 0;
}
