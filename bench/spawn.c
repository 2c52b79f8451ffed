/*
 * bench/spawn.c - run one command and report its resource usage.
 *
 *   spawn OUTFILE [NAME=VALUE ...] -- PROGRAM [ARGS ...]
 *
 * Forks, applies the NAME=VALUE assignments (LD_PRELOAD, MALLOC_CONF ...) in
 * the child only, execs PROGRAM, reaps it with wait4 and writes one line to
 * OUTFILE:
 *
 *   status=<wait status> wall_s=<s> maxrss_kib=<k> minflt=<n> majflt=<n> utime_s=<s> stime_s=<s>
 *
 * Exit status: the child's (128 + signal when killed).
 *
 * Why a C launcher: Linux carries the peak RSS of the address space a process
 * had *before* exec into its ru_maxrss, so a benchmark forked straight from
 * the Python driver would report at least the driver's ~20 MiB as its peak.
 * Forked from this small program the floor is ~1 MiB.  It is also not run
 * under the allocator being measured (the assignments apply to the child).
 */
#define _GNU_SOURCE 1

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double tv(struct timeval t) { return (double)t.tv_sec + (double)t.tv_usec * 1e-6; }

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: spawn OUTFILE [NAME=VALUE ...] -- PROGRAM [ARGS ...]\n");
    return 125;
  }
  const char* outfile = argv[1];
  int sep = 2;
  while (sep < argc && strcmp(argv[sep], "--") != 0) {
    if (!strchr(argv[sep], '=')) {
      fprintf(stderr, "spawn: expected NAME=VALUE or --, got '%s'\n", argv[sep]);
      return 125;
    }
    sep++;
  }
  if (sep + 1 >= argc) {
    fprintf(stderr, "spawn: no program after --\n");
    return 125;
  }
  double t0 = now();
  pid_t pid = fork();
  if (pid < 0) {
    perror("spawn: fork");
    return 125;
  }
  if (pid == 0) {
    for (int i = 2; i < sep; i++) {
      char* eq = strchr(argv[i], '=');
      *eq = '\0';
      if (setenv(argv[i], eq + 1, 1) != 0) _exit(126);
    }
    execvp(argv[sep + 1], argv + sep + 1);
    fprintf(stderr, "spawn: cannot run %s: %s\n", argv[sep + 1], strerror(errno));
    _exit(127);
  }
  int status = 0;
  struct rusage ru;
  memset(&ru, 0, sizeof(ru));
  while (wait4(pid, &status, 0, &ru) < 0) {
    if (errno != EINTR) {
      perror("spawn: wait4");
      return 125;
    }
  }
  double wall = now() - t0;
  FILE* f = fopen(outfile, "w");
  if (f) {
    fprintf(f,
            "status=%d wall_s=%.6f maxrss_kib=%ld minflt=%ld majflt=%ld utime_s=%.6f "
            "stime_s=%.6f\n",
            status, wall, ru.ru_maxrss, ru.ru_minflt, ru.ru_majflt, tv(ru.ru_utime),
            tv(ru.ru_stime));
    fclose(f);
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 125;
}
