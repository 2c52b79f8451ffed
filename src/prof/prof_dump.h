// prof_dump.h: writing heap profiles in jemalloc 5.3.0's `heap_v2` format.
//
// Purpose: the pieces a dump is made of, each usable without allocating: a buffered writer on
// a file descriptor, the count lines ("  t*: <objs>: <bytes> [<objs>: <bytes>]"), the
// prof_unbias pre-transform, the `@ 0x...` backtrace line, the MAPPED_LIBRARIES section copied
// from /proc, and the automatic file names <prefix>.<pid>.<seq>.<kind><n>.heap /
// <prefix>.<pid>.<seq>.f.heap.
// Format (what jeprof reads): "heap_v2/<sample period>", the whole-process count line "t*"
// and one "t<id>" line per thread (with its name when set), then per backtrace "@ 0x<pc> ..."
// followed by its "t*" and per-thread lines, a blank line, "MAPPED_LIBRARIES:" and the maps.
// jeprof unsamples each pair (n objects, s bytes) with scale = 1 / (1 - exp(-(s/n)/R)); with
// prof_unbias the writer pre-transforms unbiased totals (c, s) into (y/x, y), x = s/c,
// y = s (1 - exp(-x/R)), so that the reader's correction gives back (c, s).
// Layer: prof. Callers: the prof module's dump driver; unit tests.
// Concurrency: a writer belongs to one dumping thread; nothing here takes a lock.
// jemalloc mapping: prof_dump_* / prof_dump_print_cnts / prof_do_unbias / prof_dump_maps /
// prof_dump_filename in prof_data.c, prof_sys.c and prof.c.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace je {

/// Counters of one backtrace or thread: live (cur) and, under prof_accum, accumulated.
struct ProfCnt {
  uint64_t curobjs;
  uint64_t curbytes;
  uint64_t accumobjs;
  uint64_t accumbytes;
};

/// Buffered writes to a file descriptor (no allocation). Errors are sticky.
class ProfDumpWriter {
 public:
  explicit ProfDumpWriter(int fd) : fd_(fd) {}
  ProfDumpWriter(const ProfDumpWriter&) = delete;
  ProfDumpWriter& operator=(const ProfDumpWriter&) = delete;

  void write(const char* s, size_t n);
  void puts(const char* s);
  void printf(const char* fmt, ...) __attribute__((format(printf, 2, 3)));
  /// Writes out what is buffered; false when any write failed.
  bool flush();
  bool ok() const { return ok_; }

 private:
  int fd_;
  bool ok_ = true;
  size_t len_ = 0;
  char buf_[8192];
};

/// The prof_unbias pre-transform of unbiased totals (objs, bytes) for sample period `period`.
void prof_unbias_pair(uint64_t objs, uint64_t bytes, uint64_t period, uint64_t* objs_out,
                      uint64_t* bytes_out);

/// "heap_v2/<period>\n".
void prof_dump_header(ProfDumpWriter& w, uint64_t period);
/// One count line: "  t*: " (thr_uid < 0) or "  t<thr_uid>: ", the counts (transformed when
/// `unbias`), and " <name>" when name is non-empty; then a newline.
void prof_dump_cnt_line(ProfDumpWriter& w, int64_t thr_uid, const ProfCnt& c, uint64_t period,
                        bool unbias, const char* name);
/// "@ 0x<pc> 0x<pc> ...\n", innermost first.
void prof_dump_bt_line(ProfDumpWriter& w, const uintptr_t* vec, unsigned len);
/// "\nMAPPED_LIBRARIES:\n" and the process's memory map (/proc/<pid>/task/<pid>/maps, else
/// /proc/<pid>/maps). False when neither can be read.
bool prof_dump_maps(ProfDumpWriter& w);

/// Automatic dump file names: kind 'i' (interval), 'm' (prof.dump), 'u' (gdump) with their
/// own counter n, or 'f' (final, no counter). Returns false when the name does not fit.
bool prof_dump_filename(char* buf, size_t size, const char* prefix, pid_t pid, uint64_t seq,
                        char kind, uint64_t n);

}  // namespace je
