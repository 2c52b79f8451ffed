// sysinfo.h: facts about the process's environment, read without allocating.
//
// Purpose: CPU count (arena count and percpu_arena), the memory the process may use (the
// memory-return policy's process-wide bound), small /proc and /sys files (overcommit and THP modes), the /etc/malloc.conf symlink and environment variables (MALLOC_CONF), all usable
// during allocator bootstrap, when malloc must not be called and stdio is off limits.
//
// Layer: os. Callers: src/os/pages (boot probes), src/ctl/conf (MALLOC_CONF sources),
// src/arena (narenas = 4 x ncpus, percpu_arena), src/extent/hold (memory_limit), and tests.
//
// Concurrency: not synchronized and needs no lock. ncpus() caches its answer in an atomic
// (racing first calls compute the same value); the other functions have no state.
//
// errno: preserved by every function; failure is reported only through the return value.
//
// jemalloc mapping: malloc_ncpus() (opt.narenas default, arenas.narenas), the file reading in
// os_overcommits_proc()/init_system_thp_mode(), the readlink("/etc/malloc.conf") and
// secure_getenv("MALLOC_CONF") steps of malloc_conf_init.
#pragma once

#include <sys/types.h>

#include <cstddef>

namespace je::sysinfo {

/// CPUs this process may run on: the sched_getaffinity mask's population, falling back to
/// sysconf(_SC_NPROCESSORS_ONLN). At least 1. Computed on the first call and cached.
unsigned ncpus();

/// The CPU the calling thread runs on now (sched_getcpu; 0 if unavailable). For percpu_arena.
unsigned current_cpu();

/// The memory this process may use, in bytes: the machine's physical memory, or less where a
/// memory cgroup on the process's path limits it (cgroup v2 memory.max, v1
/// memory.limit_in_bytes; the lowest along the path, "max" or v1's huge value meaning none).
/// Read from /proc/self/cgroup and the usual mount points (/sys/fs/cgroup, its unified/ and
/// memory/ folders). 0 when nothing can be read.
size_t memory_limit();
/// memory_limit() with every file read under `root` (a prefix naming a test's fake tree; "" for the
/// real files) and the machine's memory given as `physical`: for tests.
size_t memory_limit_at(const char* root, size_t physical);

/// Reads the whole of a small file into `buf` and NUL-terminates it. At most size - 1 bytes are
/// read (longer files are truncated). Returns the number of bytes read, or -1 on error
/// (including size == 0). No allocation, no stdio.
ssize_t read_file(const char* path, char* buf, size_t size);

/// readlink(2) into `buf`, NUL-terminated; a target longer than size - 1 bytes is truncated.
/// Returns the target's length as stored, or -1 on error (not a link, missing, size == 0).
ssize_t read_link(const char* path, char* buf, size_t size);

/// The value of environment variable `name`, or nullptr. Uses secure_getenv where the C library
/// has it (so set-uid programs ignore MALLOC_CONF), else getenv. Neither allocates.
const char* get_env(const char* name);

}  // namespace je::sysinfo
