// prof_json.h: compact JSON output for the profiler's reports, without allocating.
//
// Purpose: experimental.prof_recent.alloc_dump and the allocation log (prof.log_*) write
// JSON in 5.3.0's compact layout -- no white space, keys in a fixed order, integers in
// decimal, booleans as true/false, frames as "0x..." strings. This writer buffers the text
// and hands it, NUL-terminated, to a sink (a client's write callback, or a file descriptor),
// tracking commas per nesting level. Unlike 5.3.0, strings are escaped (`"`, `\` and control
// characters), so a thread name with a quote still yields valid JSON.
// Layer: prof. Callers: prof_recent.cc, prof_log.cc; unit tests.
// Concurrency: a writer belongs to one thread; nothing here locks.
// jemalloc mapping: emitter.h in emitter_output_json_compact mode, buf_writer.c.
#pragma once

#include <cstddef>
#include <cstdint>

namespace je {

/// 5.3.0's write_cb_t: receives NUL-terminated pieces of the output.
using ProfWriteCb = void (*)(void* opaque, const char* text);

class ProfJson {
 public:
  ProfJson(ProfWriteCb cb, void* opaque) : cb_(cb), opaque_(opaque) {}
  ProfJson(const ProfJson&) = delete;
  ProfJson& operator=(const ProfJson&) = delete;
  ~ProfJson() { flush(); }

  /// '{' (with "key": first when key is non-null) and the matching '}'.
  void object_begin(const char* key = nullptr);
  void object_end();
  /// '[' (with "key": first when key is non-null) and the matching ']'.
  void array_begin(const char* key = nullptr);
  void array_end();
  void kv_u64(const char* key, uint64_t v);
  void kv_i64(const char* key, int64_t v);
  void kv_bool(const char* key, bool v);
  void kv_str(const char* key, const char* v);
  /// An array element: a frame address as the string "0x<hex>" (5.3.0 prints frames with "%p").
  void value_ptr(uintptr_t v);
  /// Hands what is buffered to the sink.
  void flush();

 private:
  void sep();  // the comma before a member, when it is not the first of its level
  void key(const char* k);
  void raw(const char* s, size_t n);
  void str(const char* s);

  static constexpr unsigned kMaxDepth = 16;
  ProfWriteCb cb_;
  void* opaque_;
  unsigned depth_ = 0;
  bool first_[kMaxDepth + 1] = {true};
  size_t len_ = 0;
  char buf_[4096];
};

/// A sink for ProfJson that writes to a file descriptor; `opaque` points at a ProfFdSink.
struct ProfFdSink {
  int fd;
  bool ok;
};
void prof_json_fd_write(void* opaque, const char* text);

}  // namespace je
