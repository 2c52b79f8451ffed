// prof_log.cc: the allocation log (see prof_log.h).
#include "prof/prof_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "meta/base.h"
#include "prof/prof.h"
#include "prof/prof_ctx.h"
#include "prof/prof_json.h"
#include "prof/prof_tctx.h"
#include "support/config.h"
#include "support/malloc_io.h"
#include "support/mutex.h"

namespace je {

namespace {

enum class LogState : uint8_t { kStopped, kStarted, kDumping };

struct ThrNode {
  ThrNode* next;
  uint64_t uid;
  char name[1];  // NUL-terminated copy, as long as the chunk allowed
};
struct BtNode {
  BtNode* next;
  const ProfCtx* ctx;
};
struct AllocNode {
  AllocNode* next;
  size_t alloc_thr;
  size_t free_thr;
  size_t alloc_bt;
  size_t free_bt;
  uint64_t alloc_ns;
  uint64_t free_ns;
  size_t usize;
};
template <class T>
struct NodeList {
  T* first;
  T* last;
  size_t n;
  void append(T* x) {
    x->next = nullptr;
    if (last != nullptr) {
      last->next = x;
    } else {
      first = x;
    }
    last = x;
    n++;
  }
};

// Session memory: chunks of base memory, chained, reused from the first one by every session.
struct Chunk {
  Chunk* next;
};
constexpr size_t kChunkSize = size_t{64} << 10;

constinit Mutex g_log_mtx{LockRank::kProf, "prof_log"};
constinit std::atomic<LogState> g_state{LogState::kStopped};
constinit uint64_t g_epoch = 0;  // session number (from 1)
constinit uint64_t g_seq = 0;    // default names so far
constinit uint64_t g_start_ns = 0;
constexpr size_t kLogPathMax = 4096;  // PATH_MAX
constinit char g_filename[kLogPathMax + 1] = "";
constinit NodeList<ThrNode> g_thr{};
constinit NodeList<BtNode> g_bt{};
constinit NodeList<AllocNode> g_alloc{};
constinit Chunk* g_chunks = nullptr;  // first chunk
constinit Chunk* g_cur = nullptr;     // chunk being carved
constinit size_t g_off = 0;           // bytes used in g_cur
constinit std::atomic<bool> g_atexit_done{false};

// `size` bytes (<= a chunk's payload) of session memory (g_log_mtx held); nullptr on OOM.
void* carve(size_t size) {
  size = (size + 15) & ~size_t{15};
  if (size > kChunkSize - 16) return nullptr;
  if (g_cur == nullptr || g_off + size > kChunkSize) {
    Chunk* next = g_cur != nullptr ? g_cur->next : g_chunks;
    if (next == nullptr) {
      Base* b = base_global();
      next = b == nullptr ? nullptr : static_cast<Chunk*>(b->alloc(kChunkSize, 64));
      if (next == nullptr) return nullptr;
      next->next = nullptr;
      if (g_cur != nullptr) {
        g_cur->next = next;
      } else {
        g_chunks = next;
      }
    }
    g_cur = next;
    g_off = 16;  // the chunk header, rounded
  }
  void* p = reinterpret_cast<char*>(g_cur) + g_off;
  g_off += size;
  return p;
}

// The session index of thread `td`, listing it (with its name now) on first use; SIZE_MAX on
// OOM (g_log_mtx held).
size_t thr_index(ProfTdata* td) {
  if (td->log_epoch == g_epoch) return td->log_index;
  size_t len = strlen(td->name);
  const size_t room = kChunkSize - 16 - sizeof(ThrNode);
  if (len > room) len = room;
  auto* n = static_cast<ThrNode*>(carve(sizeof(ThrNode) + len));
  if (n == nullptr) return SIZE_MAX;
  n->uid = td->thr_uid;
  memcpy(n->name, td->name, len);
  n->name[len] = '\0';
  td->log_index = g_thr.n;
  td->log_epoch = g_epoch;
  g_thr.append(n);
  return td->log_index;
}

size_t bt_index(ProfCtx* ctx) {
  if (ctx->log_epoch == g_epoch) return ctx->log_index;
  auto* n = static_cast<BtNode*>(carve(sizeof(BtNode)));
  if (n == nullptr) return SIZE_MAX;
  n->ctx = ctx;
  ctx->log_index = g_bt.n;
  ctx->log_epoch = g_epoch;
  g_bt.append(n);
  return ctx->log_index;
}

void at_exit() { prof_log_stop(); }

// Registers the exit-time stop once (outside g_log_mtx: atexit may allocate).
void ensure_atexit() {
  if (!g_atexit_done.exchange(true, std::memory_order_relaxed)) atexit(at_exit);
}

void write_log(ProfJson& j, uint64_t now) {
  j.object_begin();
  j.object_begin("info");
  j.kv_u64("duration", now - g_start_ns);
  j.kv_str("version", config::kVersion);
  j.kv_i64("lg_sample_rate", static_cast<int64_t>(prof_lg_sample()));
  j.kv_str("prof_time_resolution", prof_options().time_high ? "high" : "default");
  j.kv_i64("pid", getpid());
  j.object_end();
  j.array_begin("threads");
  for (ThrNode* n = g_thr.first; n != nullptr; n = n->next) {
    j.object_begin();
    j.kv_u64("thr_uid", n->uid);
    j.kv_str("thr_name", n->name);
    j.object_end();
  }
  j.array_end();
  j.array_begin("stack_traces");
  for (BtNode* n = g_bt.first; n != nullptr; n = n->next) {
    j.array_begin();
    for (unsigned i = 0; i < n->ctx->len; i++) j.value_ptr(n->ctx->vec[i]);
    j.array_end();
  }
  j.array_end();
  j.array_begin("allocations");
  for (AllocNode* n = g_alloc.first; n != nullptr; n = n->next) {
    j.object_begin();
    j.kv_u64("alloc_thread", n->alloc_thr);
    j.kv_u64("free_thread", n->free_thr);
    j.kv_u64("alloc_trace", n->alloc_bt);
    j.kv_u64("free_trace", n->free_bt);
    j.kv_u64("alloc_timestamp", n->alloc_ns);
    j.kv_u64("free_timestamp", n->free_ns);
    j.kv_u64("usize", n->usize);
    j.object_end();
  }
  j.array_end();
  j.object_end();
}

}  // namespace

void prof_log_boot(bool start) {
  if (start) prof_log_start(nullptr);
}

bool prof_log_start(const char* filename) {
  if (!prof_enabled()) return false;
  ensure_atexit();
  // 5.3.0 keeps names shorter than PATH_MAX + 1 bytes.
  if (filename != nullptr && strnlen(filename, kLogPathMax + 1) > kLogPathMax) return false;
  char prefix[kProfPathMax + 1] = "";
  if (filename == nullptr) prof_prefix_get(prefix, sizeof(prefix));  // its lock, not ours
  MutexGuard g(g_log_mtx);
  if (g_state.load(std::memory_order_relaxed) != LogState::kStopped) return false;
  if (filename == nullptr) {
    je_snprintf(g_filename, sizeof(g_filename), "%s.%d.%llu.json", prefix,
                static_cast<int>(getpid()), static_cast<unsigned long long>(g_seq++));
  } else {
    strcpy(g_filename, filename);
  }
  g_epoch++;
  g_start_ns = prof_time_ns();
  g_state.store(LogState::kStarted, std::memory_order_release);
  return true;
}

bool prof_log_running() { return g_state.load(std::memory_order_relaxed) == LogState::kStarted; }

void prof_log_free(const ProfTctx* t, ProfTdata* td, ProfCtx* ctx, uint64_t time_ns) {
  if (!prof_log_running()) return;  // the common case: no lock
  if (td == nullptr || ctx == nullptr || t->ctx == nullptr || t->td == nullptr) return;
  MutexGuard g(g_log_mtx);
  if (g_state.load(std::memory_order_relaxed) != LogState::kStarted) return;
  const size_t at = thr_index(t->td);
  const size_t ft = thr_index(td);
  const size_t ab = bt_index(t->ctx);
  const size_t fb = bt_index(ctx);
  if (at == SIZE_MAX || ft == SIZE_MAX || ab == SIZE_MAX || fb == SIZE_MAX) return;
  auto* n = static_cast<AllocNode*>(carve(sizeof(AllocNode)));
  if (n == nullptr) return;
  n->alloc_thr = at;
  n->free_thr = ft;
  n->alloc_bt = ab;
  n->free_bt = fb;
  n->alloc_ns = t->alloc_ns;
  n->free_ns = time_ns;
  n->usize = t->usize;
  g_alloc.append(n);
}

bool prof_log_stop() {
  if (!prof_enabled()) return false;
  {
    MutexGuard g(g_log_mtx);
    if (g_state.load(std::memory_order_relaxed) != LogState::kStarted) return false;
    // Frees stop being logged; the session is read below without the lock.
    g_state.store(LogState::kDumping, std::memory_order_relaxed);
  }
  bool ok = false;
  int fd = open(g_filename, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    io_printf("<jemalloc>: creat() for log file \"%s\"  failed with %d\n", g_filename, errno);
  } else {
    ProfFdSink sink{fd, true};
    {
      ProfJson j(&prof_json_fd_write, &sink);
      write_log(j, prof_time_ns());
    }
    ok = close(fd) == 0 && sink.ok;
  }
  MutexGuard g(g_log_mtx);
  g_thr = {};
  g_bt = {};
  g_alloc = {};
  g_cur = nullptr;
  g_off = 0;
  g_state.store(LogState::kStopped, std::memory_order_relaxed);
  return ok;
}

void prof_log_prefork() { g_log_mtx.prefork(); }
void prof_log_postfork_parent() { g_log_mtx.postfork_parent(); }
void prof_log_postfork_child() { g_log_mtx.postfork_child(); }

}  // namespace je
