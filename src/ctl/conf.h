// conf.h: reading the run-time configuration (MALLOC_CONF and its four sibling sources).
//
// Purpose: fill g_opt (ctl/opt.h) from jemalloc 5.3.0's five configuration sources, with its
// exact syntax, value rules and diagnostics, so that strings written for jemalloc behave the same
// here, typos included. The option table itself (keys, kinds, defaults, domains) lives in
// ctl/opt.h; this module is the parser that walks it.
//
// Layer: ctl. Callers: src/api/init (conf_init, once, first thing during initialization); tests
// (conf_process_sources, conf_parse_string).
//
// Concurrency: not synchronized; runs once, single-threaded, under the api init lock, before
// anything allocates. It allocates nothing and uses no stdio: messages go through io_write /
// io_printf (support/malloc_io.h), i.e. the installed writer, which the api layer points at the
// public malloc_message.
//
// Sources, in increasing priority (a later source overrides an earlier one, key by key):
//   #1 the built-in string (configure --with-malloc-conf, config::kMallocConf);
//   #2 the program's global `malloc_conf`;
//   #3 the target *name* of the symlink /etc/malloc.conf (read with readlink, never opened);
//   #4 the environment variable MALLOC_CONF (secure_getenv);
//   #5 the program's global `malloc_conf_2_conf_harder`.
//
// Syntax and messages (all verified against Debian's libjemalloc.so.2 5.3.0):
//   * `key:value[,key:value]...`; key characters [A-Za-z0-9_]; the value runs to the next ',' or
//     the end. Malformed input prints one of "<jemalloc>: Conf string ends with key",
//     "... Malformed conf string" (then the rest of that source is skipped) or
//     "... Conf string ends with comma" (the pair before it still applies). These syntax messages
//     are printed twice: 5.3.0 reads the sources in two passes (below) and both passes report.
//   * "<jemalloc>: <what>: <key>:<value>" where <what> is "Invalid conf pair" (unknown key, prof*
//     keys, keys of features not built), "Invalid conf value" (malformed value),
//     "Out-of-range conf value" (rejected range), or "Invalid settings for bin_shards" /
//     "... slab_sizes". The option keeps its previous value. Some ranges clip silently instead
//     (see the domains in JE_OPTION_TABLE).
//   * Numbers follow jemalloc's strtoumax with base 0: leading whitespace, one optional sign
//     (a '-' negates modulo 2^64, so tcache_max:-1 clips to the maximum and dirty_decay_ms:-1 is
//     -1), 0x hex, leading-0 octal, and its weak overflow check (only a wrap to a smaller value is
//     caught). Signed options reinterpret the 64-bit result. Unsigned (32-bit) options truncate
//     (narenas:4294967297 is 1, as in 5.3.0).
//   * 5.3.0 quirks kept on purpose: the keys metadata_thp, dss and percpu_arena match by prefix
//     (so "d:primary" sets dss and ":" silently sets metadata_thp:disabled), and the values of
//     metadata_thp, dss, percpu_arena and thp match by prefix ("thp:al" is always; an empty value
//     selects the first name); a narenas_ratio value with trailing garbage ("1x") is reported
//     as invalid and still stored.
//   * "experimental_*" keys are reported like others but never count as errors.
//   * Error accounting: any message above except for experimental_* keys marks the
//     configuration as having an error; after each source of the second pass, if abort_conf is
//     true by then and an error was seen (in that source or an earlier one), it prints
//     "<jemalloc>: Abort (abort_conf:true) on invalid conf value (see above)." and aborts.
//   * Two passes, like 5.3.0: the first reads only confirm_conf from every source (silently), so
//     that confirm_conf set by a later source also shows the earlier ones; the second applies
//     everything. With confirm_conf true, the second pass prints
//     `<jemalloc>: malloc_conf #N (<source description>): "<string>"` before each source and
//     `<jemalloc>: -- Set conf value: <key>:<value>` after each accepted pair.
//
// What is NOT done here (left to boot code, as 5.3.0 does it after option processing):
// narenas 0 -> round(narenas_ratio x CPUs) in 32-bit 16.16 fixed point, at least 1, then the
// 4094 limit with "Reducing narenas to limit (4094)" (arena boot); percpu_arena raising narenas
// to the CPU count (percpu) or half of it (phycpu), its getcpu check and mode conversion (arena
// boot); oversize_threshold below the smallest large class (16 KiB) becoming 0, which
// opt.oversize_threshold then shows (arena boot); max_background_threads > 4095 -> 4
// (background-thread boot); tcache_max rounding to a size class (tcache boot); dss
// precedence, bin_shards and slab_sizes application (extent/bin boot); stats_print's atexit hook;
// the hpa "not supported" fallback. No option-only adjustment exists in 5.3.0 beyond what the
// parser itself does (junk's alloc/free split, the two aliases), so conf_init makes none.
//
// jemalloc mapping: malloc_conf_init / malloc_conf_init_helper / malloc_conf_next /
// malloc_conf_error / malloc_conf_multi_sizes_next / init_opt_stats_opts / fxp_parse in
// jemalloc.c and fxp.c; feeds every `opt.*` mallctl and `config.malloc_conf`.
#pragma once

namespace je {

/// Number of configuration sources (#1..#5 above).
inline constexpr unsigned kConfNSources = 5;

/// The sources only the api layer can see: the built-in string and the two weak program globals.
/// Any of them may be null (treated as absent; confirm_conf prints it as "").
struct ConfSources {
  const char* built_in;            ///< #1, normally config::kMallocConf
  const char* global_malloc_conf;  ///< #2, the program's `malloc_conf`
  const char* conf_2_conf_harder;  ///< #5, the program's `malloc_conf_2_conf_harder`
};

/// Reads all five sources into g_opt (also /etc/malloc.conf via sysinfo::read_link and
/// MALLOC_CONF via sysinfo::get_env), printing jemalloc's diagnostics; may abort (abort_conf).
/// Call once, before anything allocates.
void conf_init(const ConfSources& s);

/// conf_init's engine on five already-obtained strings (index 0 = source #1; null = absent):
/// both passes, confirm_conf output and the abort_conf check. Does not reset g_opt first.
void conf_process_sources(const char* const (&sources)[kConfNSources]);

/// Parses one string into g_opt exactly as the second pass parses one source (messages, and
/// "Set conf value" lines when g_opt.confirm_conf is true) but without source headers and
/// without the abort_conf check. Returns true when the string was well-formed and every pair
/// was accepted (experimental_* keys do not count as errors).
bool conf_parse_string(const char* s);

/// After core_boot: copies into g_opt the values boot settled ("computed at boot" defaults),
/// so that `opt.*` reports them as jemalloc 5.3.0 does: opt.narenas (the automatic arena count,
/// before the kMaxArenas clamp), opt.oversize_threshold (0 when it names no large size: no huge
/// arena) and opt.max_background_threads (4 when not set). Single-threaded, like boot.
void conf_adopt_boot_values();

}  // namespace je
