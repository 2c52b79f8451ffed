// stats_print_emitter.h: one writer for both malloc_stats_print formats (text table and JSON).
//
// Purpose: the report is produced by a single walk over the statistics; every datum is handed
// to the Emitter once, saying how it appears in each format (a JSON key, a table label or a
// table column), and the Emitter prints only what belongs to the selected format. This keeps
// the text and the JSON report in step by construction, as jemalloc 5.3.0's emitter does.
// Text mode: "label: value" lines indented by dictionary depth, and fixed-width table rows
// (a column is right- or left-justified to its width; widths include the spacing).
// JSON mode: compact JSON ("{"a":1,"b":{...}}", no white space), 5.3.0's `J` output; strings
// are escaped so the result always parses.
// Output goes through a fixed buffer inside the Emitter (on the caller's stack) and reaches
// the write callback in NUL-terminated chunks of at most kBufSize - 1 bytes, so the callback
// is usually invoked many times; nothing is allocated.
// Layer: ctl (internal to the stats printer). Callers: stats_print.cc, stats_print_arena.cc.
// Concurrency: not synchronized; an Emitter lives on one thread's stack for one report.
// Invariants: JSON nesting is balanced by the callers (begin/end pairs); the buffer is flushed
// before the Emitter is finished; nothing calls malloc.
// jemalloc mapping: emitter.h (emitter_t, emitter_row_t / emitter_col_t, emitter_kv,
// emitter_kv_note, emitter_dict_begin, emitter_json_*, emitter_table_*) and the buffered
// writer (buf_writer) that malloc_stats_print puts in front of the callback.
#pragma once

#include <cstddef>
#include <cstdint>

namespace je::stats {

/// The callback type of malloc_stats_print.
using WriteCb = void (*)(void* cbopaque, const char* s);

/// A scalar to print. Unsigned and signed integers of every width print in decimal; a string
/// prints in double quotes (escaped in JSON); a title prints verbatim (table headers, labels).
struct Value {
  enum class Kind : uint8_t { kBool, kUnsigned, kSigned, kString, kTitle };
  Kind kind;
  union {
    bool b;
    uint64_t u;
    int64_t i;
    const char* s;
  };

  static Value boolean(bool v) {
    Value r;
    r.kind = Kind::kBool;
    r.b = v;
    return r;
  }
  static Value uns(uint64_t v) {
    Value r;
    r.kind = Kind::kUnsigned;
    r.u = v;
    return r;
  }
  static Value sgn(int64_t v) {
    Value r;
    r.kind = Kind::kSigned;
    r.i = v;
    return r;
  }
  static Value str(const char* v) {
    Value r;
    r.kind = Kind::kString;
    r.s = v;
    return r;
  }
  static Value title(const char* v) {
    Value r;
    r.kind = Kind::kTitle;
    r.s = v;
    return r;
  }
};

enum class Justify : uint8_t { kLeft, kRight };

/// One table column: its layout and the value it shows in the row being printed.
struct Column {
  Justify justify;
  int width;
  Value value;
};

/// A table row: up to kMaxColumns columns printed left to right, then a newline. The bins
/// table with mutex counters is the widest (38 columns).
struct Row {
  static constexpr unsigned kMaxColumns = 48;
  Column cols[kMaxColumns];
  unsigned n = 0;

  /// Appends a column and returns it (the caller sets its value before each row it prints).
  /// Past kMaxColumns the last column is reused (a programming error the tests would show).
  Column& add(Justify j, int width, Value v) {
    Column& c = cols[n < kMaxColumns ? n++ : kMaxColumns - 1];
    c = Column{j, width, v};
    return c;
  }
};

class Emitter {
 public:
  /// Chunk size of the calls to the write callback (bytes, NUL included).
  static constexpr size_t kBufSize = 4096;

  /// json selects the compact JSON format; otherwise the text table. write_cb must not be null.
  Emitter(bool json, WriteCb write_cb, void* cbopaque)
      : json_(json), write_cb_(write_cb), cbopaque_(cbopaque) {}
  Emitter(const Emitter&) = delete;
  Emitter& operator=(const Emitter&) = delete;

  bool json() const { return json_; }

  /// Opens the report (JSON: the outermost brace).
  void begin();
  /// Closes the report and flushes everything to the callback.
  void end();

  /// Text mode only: printf-formatted text (at most 511 bytes per call).
  void table_printf(const char* fmt, ...) __attribute__((format(printf, 2, 3)));
  /// Text mode only: prints a row.
  void table_row(const Row& row);

  /// A scalar in both formats: "json_key":v, or "<indent>table_key: v".
  void kv(const char* json_key, const char* table_key, Value v);
  /// Like kv; the table line gets " (note_key: note)" appended (JSON ignores the note).
  void kv_note(const char* json_key, const char* table_key, Value v, const char* note_key,
               Value note);
  /// JSON only: "key":v.
  void json_kv(const char* key, Value v);

  /// A dictionary in both formats: a JSON object under json_key, or a table heading line with
  /// the entries below it indented by two more spaces.
  void dict_begin(const char* json_key, const char* table_header);
  void dict_end();

  /// JSON only: "key":{ ... } / an anonymous { ... } (an array element) / "key":[ ... ].
  void json_object_kv_begin(const char* key);
  void json_object_begin();
  void json_object_end();
  void json_array_kv_begin(const char* key);
  void json_array_end();

 private:
  // Opening/closing bracket with the separator and depth bookkeeping shared by both kinds.
  void json_open(char bracket);
  void json_close(char bracket);
  void put(const char* s, size_t n);
  void puts(const char* s);
  void putf(const char* fmt, ...) __attribute__((format(printf, 2, 3)));
  void put_spaces(size_t n);
  void flush();
  /// Prints v unpadded (strings quoted; escaped in JSON).
  void put_value(Value v);
  /// Table form "<indent>key: value" (no line end), shared by kv and kv_note.
  void table_key_value(const char* table_key, Value v);
  /// Prints v justified in a field of `width` characters (never truncated).
  void put_padded(Value v, Justify j, int width);
  void indent();
  /// JSON: the separator before a new key or array element.
  void json_separator();
  void json_key(const char* key);
  void json_string(const char* s);

  bool json_;
  WriteCb write_cb_;
  void* cbopaque_;
  int depth_ = 0;               // JSON object/array nesting, or text dictionary nesting
  bool item_at_depth_ = false;  // JSON: the current container already has an element
  bool after_key_ = false;      // JSON: a key was printed and its value comes next
  size_t len_ = 0;
  char buf_[kBufSize];
};

}  // namespace je::stats
