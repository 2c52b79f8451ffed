// opt.cc: option storage and the descriptor tables generated from JE_OPTION_TABLE (see opt.h).
#include "ctl/opt.h"

#include <cstring>

namespace je {

namespace {

/// The defaults, as a constant: the reset source and what OptInfo::def points at.
constexpr Options kOptDefaults{};

// Storage-less kinds (aliases, features not built) have no value to point at.
constexpr bool has_storage(OptKind k) { return k != OptKind::kAlias && k != OptKind::kNotBuilt; }

template <OptKind K, class T>
constexpr void* live_ptr(T* p) {
  if constexpr (has_storage(K)) {
    return p;
  } else {
    return nullptr;
  }
}

template <OptKind K, class T>
constexpr const void* default_ptr(const T* p) {
  if constexpr (has_storage(K)) {
    return p;
  } else {
    return nullptr;
  }
}

template <OptKind K>
constexpr size_t storage_size(size_t n) {
  return has_storage(K) ? n : 0;
}

#define JE_OPT_X(name, kind, def, dom, flags, status, doc)    \
  OptInfo{OptId::name,                                        \
          #name,                                              \
          OptKind::k##kind,                                   \
          OptStorage<OptKind::k##kind>::kType,                \
          static_cast<uint8_t>(flags),                        \
          dom,                                                \
          live_ptr<OptKind::k##kind>(&g_opt.name),            \
          default_ptr<OptKind::k##kind>(&kOptDefaults.name),  \
          storage_size<OptKind::k##kind>(sizeof(g_opt.name)), \
          status,                                             \
          doc},
constexpr OptInfo kInfo[] = {JE_OPTION_TABLE(JE_OPT_X)};
#undef JE_OPT_X

constexpr size_t kNInfo = sizeof(kInfo) / sizeof(kInfo[0]);
static_assert(kNInfo == static_cast<size_t>(OptId::kCount));

constexpr size_t count_mallctl() {
  size_t n = 0;
  for (const OptInfo& i : kInfo) n += (i.flags & kOptMallctl) != 0;
  return n;
}
constexpr size_t kNMallctl = count_mallctl();

constexpr std::array<OptDesc, kNMallctl> build_view() {
  std::array<OptDesc, kNMallctl> v{};
  size_t n = 0;
  for (const OptInfo& i : kInfo) {
    if ((i.flags & kOptMallctl) != 0) v[n++] = OptDesc{i.name, i.type, i.ptr, i.size};
  }
  return v;
}
constexpr std::array<OptDesc, kNMallctl> kView = build_view();

constexpr bool same(const char* a, const char* b) {
  while (*a != '\0' && *a == *b) {
    a++;
    b++;
  }
  return *a == *b;
}

// Table self-checks: ids match positions; names are unique; every readable entry has a C type
// and storage; storage-less entries are not readable; the prefix-key entries are the three
// 5.3.0 matches by prefix, in its order.
constexpr bool table_consistent() {
  const char* prefix_order[] = {"metadata_thp", "dss", "percpu_arena"};
  size_t nprefix = 0;
  for (size_t i = 0; i < kNInfo; i++) {
    const OptInfo& e = kInfo[i];
    if (static_cast<size_t>(e.id) != i) return false;
    for (size_t j = i + 1; j < kNInfo; j++) {
      if (same(e.name, kInfo[j].name)) return false;
    }
    const bool readable = (e.flags & kOptMallctl) != 0;
    if (readable && (e.type == OptType::kNone || e.ptr == nullptr)) return false;
    if (!has_storage(e.kind) && (e.flags & kOptMallctl) != 0) return false;
    if (e.kind == OptKind::kNotBuilt && e.flags != 0) return false;
    if (e.kind == OptKind::kChoice && e.domain.nnames == 0) return false;
    if ((e.flags & kOptPrefixKey) != 0) {
      if (nprefix == 3 || !same(e.name, prefix_order[nprefix])) return false;
      nprefix++;
    }
  }
  return nprefix == 3;
}
static_assert(table_consistent(), "JE_OPTION_TABLE is inconsistent");

// The choice defaults agree with their typed companions, and the letter options point at their
// buffers (opt_reset relies on exactly these two).
static_assert(kOptDefaults.dss == kDssNames[static_cast<size_t>(kOptDefaults.dss_prec)]);
static_assert(kOptDefaults.percpu_arena ==
              kPercpuArenaNames[static_cast<size_t>(kOptDefaults.percpu_arena_mode)]);
static_assert(kOptDefaults.thp == kThpNames[static_cast<size_t>(kOptDefaults.thp_mode)]);
static_assert(kOptDefaults.metadata_thp ==
              kMetadataThpNames[static_cast<size_t>(kOptDefaults.metadata_thp_mode)]);
static_assert(kOptDefaults.zero_realloc ==
              kZeroReallocNames[static_cast<size_t>(kOptDefaults.zero_realloc_action)]);
static_assert(kOptDefaults.prof_time_resolution ==
              kProfTimeResNames[static_cast<size_t>(kOptDefaults.prof_time_res)]);
static_assert(kOptDefaults.junk == kJunkNames[config::kDebug ? 0 : 1] &&
              kOptDefaults.junk_alloc == config::kDebug && kOptDefaults.junk_free == config::kDebug);
static_assert(kOptDefaults.stats_print_opts == kOptDefaults.stats_print_opts_buf);
static_assert(kOptDefaults.stats_interval_opts == kOptDefaults.stats_interval_opts_buf);

constexpr size_t count_kind(OptKind k) {
  size_t n = 0;
  for (const OptInfo& i : kInfo) n += i.kind == k;
  return n;
}
static_assert(count_kind(OptKind::kLetters) == 2, "opt_reset re-points exactly two buffers");
static_assert(count_kind(OptKind::kString) == 1, "opt_reset and conf know one string buffer");
static_assert(kOptDefaults.prof_prefix == kOptDefaults.prof_prefix_buf);

bool key_equals(const char* name, const char* s, size_t len) {
  return strncmp(name, s, len) == 0 && name[len] == '\0';
}

}  // namespace

constinit Options g_opt{};

const OptDesc* opt_find(const char* name, size_t len) {
  for (const OptDesc& d : kView) {
    if (key_equals(d.name, name, len)) return &d;
  }
  return nullptr;
}

const OptDesc* opt_table(size_t* n) {
  *n = kView.size();
  return kView.data();
}

const OptInfo* opt_info_table(size_t* n) {
  *n = kNInfo;
  return kInfo;
}

const OptInfo* opt_info_find(const char* s, size_t len) {
  for (const OptInfo& i : kInfo) {
    if (key_equals(i.name, s, len)) return &i;
  }
  return nullptr;
}

const OptInfo& opt_info(OptId id) { return kInfo[static_cast<size_t>(id)]; }

void opt_reset() {
  g_opt = kOptDefaults;
  // The copy still points at kOptDefaults' buffers.
  g_opt.stats_print_opts = g_opt.stats_print_opts_buf;
  g_opt.stats_interval_opts = g_opt.stats_interval_opts_buf;
  g_opt.prof_prefix = g_opt.prof_prefix_buf;
}

}  // namespace je
