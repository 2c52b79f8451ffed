// prof_dump.cc: heap_v2 output pieces (see prof_dump.h).
#include "prof/prof_dump.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstring>

#include "prof/prof_sample.h"
#include "support/malloc_io.h"

namespace je {

void ProfDumpWriter::write(const char* s, size_t n) {
  while (n > 0) {
    if (len_ == sizeof(buf_) && !flush()) return;
    size_t k = sizeof(buf_) - len_;
    if (k > n) k = n;
    memcpy(buf_ + len_, s, k);
    len_ += k;
    s += k;
    n -= k;
  }
}

void ProfDumpWriter::puts(const char* s) { write(s, strlen(s)); }

void ProfDumpWriter::printf(const char* fmt, ...) {
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  size_t n = je_vsnprintf(line, sizeof(line), fmt, ap);
  va_end(ap);
  write(line, n < sizeof(line) ? n : sizeof(line) - 1);
}

bool ProfDumpWriter::flush() {
  size_t off = 0;
  while (ok_ && off < len_) {
    ssize_t r = ::write(fd_, buf_ + off, len_ - off);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      ok_ = false;
      break;
    }
    off += static_cast<size_t>(r);
  }
  len_ = 0;
  return ok_;
}

void prof_unbias_pair(uint64_t objs, uint64_t bytes, uint64_t period, uint64_t* objs_out,
                      uint64_t* bytes_out) {
  if (objs == 0 || bytes == 0 || period == 0) {
    *objs_out = objs;
    *bytes_out = bytes;
    return;
  }
  const double x = static_cast<double>(bytes) / static_cast<double>(objs);
  const double y =
      static_cast<double>(bytes) * (1.0 - prof_exp_neg(-x / static_cast<double>(period)));
  *objs_out = static_cast<uint64_t>(y / x + 0.5);
  *bytes_out = static_cast<uint64_t>(y + 0.5);
}

void prof_dump_header(ProfDumpWriter& w, uint64_t period) {
  w.printf("heap_v2/%llu\n", static_cast<unsigned long long>(period));
}

void prof_dump_cnt_line(ProfDumpWriter& w, int64_t thr_uid, const ProfCnt& c, uint64_t period,
                        bool unbias, const char* name) {
  ProfCnt o = c;
  if (unbias) {
    prof_unbias_pair(c.curobjs, c.curbytes, period, &o.curobjs, &o.curbytes);
    prof_unbias_pair(c.accumobjs, c.accumbytes, period, &o.accumobjs, &o.accumbytes);
  }
  if (thr_uid < 0) {
    w.puts("  t*: ");
  } else {
    w.printf("  t%lld: ", static_cast<long long>(thr_uid));
  }
  w.printf("%llu: %llu [%llu: %llu]", static_cast<unsigned long long>(o.curobjs),
           static_cast<unsigned long long>(o.curbytes),
           static_cast<unsigned long long>(o.accumobjs),
           static_cast<unsigned long long>(o.accumbytes));
  if (name != nullptr && name[0] != '\0') {
    w.puts(" ");
    w.puts(name);
  }
  w.puts("\n");
}

void prof_dump_bt_line(ProfDumpWriter& w, const uintptr_t* vec, unsigned len) {
  w.puts("@");
  for (unsigned i = 0; i < len; i++) {
    w.printf(" 0x%llx", static_cast<unsigned long long>(vec[i]));
  }
  w.puts("\n");
}

bool prof_dump_maps(ProfDumpWriter& w) {
  char path[64];
  const long pid = static_cast<long>(getpid());
  je_snprintf(path, sizeof(path), "/proc/%ld/task/%ld/maps", pid, pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    je_snprintf(path, sizeof(path), "/proc/%ld/maps", pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
  }
  if (fd < 0) return false;
  w.puts("\nMAPPED_LIBRARIES:\n");
  char buf[4096];
  for (;;) {
    ssize_t r = read(fd, buf, sizeof(buf));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    w.write(buf, static_cast<size_t>(r));
  }
  close(fd);
  return true;
}

bool prof_dump_filename(char* buf, size_t size, const char* prefix, pid_t pid, uint64_t seq,
                        char kind, uint64_t n) {
  size_t len;
  if (kind == 'f') {
    len = je_snprintf(buf, size, "%s.%d.%llu.f.heap", prefix, static_cast<int>(pid),
                      static_cast<unsigned long long>(seq));
  } else {
    len =
        je_snprintf(buf, size, "%s.%d.%llu.%c%llu.heap", prefix, static_cast<int>(pid),
                    static_cast<unsigned long long>(seq), kind, static_cast<unsigned long long>(n));
  }
  return len < size;
}

}  // namespace je
