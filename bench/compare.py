#!/usr/bin/env python3
"""Run the bench/ programs under several allocators and compare them.

Every program in bench/ is linked against libc only, so the same binary runs
under any allocator through LD_PRELOAD.  This driver runs the selected
workloads under each allocator -- ours (the libjemalloc.so.2 of a build
tree), ours with 5.3.0's extent placement and memory return
(MALLOC_CONF=preset:jemalloc-5.3.0),
Debian's jemalloc
5.3.0, tcmalloc, mimalloc and glibc -- interleaved (round-robin over the
allocators inside every repetition, rotating the order between repetitions,
so that machine noise spreads over all of them), N repetitions each.

Per run it records wall time, peak RSS and minor faults from the child's
rusage (os.wait4), the program's own "RESULT key=value" line and, when
`perf` works, `perf stat -e page-faults` from separate wrapped runs (perf's
own memory would otherwise pollute the rusage numbers).  It writes, under
results/<date>/ (or --out):

  summary.md   medians and ratios vs Debian's jemalloc, per workload and overall
  raw.csv      one row per run
  micro.csv    Google Benchmark results (median ns per item) when `micro` ran
  traces/      per-iteration faults/RSS of the rallocx workloads (first repetition)
  plots/*.png  gnuplot charts (skipped with a message when gnuplot is absent)
  logs/        stdout/stderr of every run

With --mimalloc-bench DIR it also offers some of mimalloc-bench's test programs
(built outside this tree by bench/mimalloc_bench.sh) as the workloads mb-*, run
with the arguments mimalloc-bench's own runner gives them; they print no RESULT
line, so the rusage figures are all they report.

Python 3 standard library only (the reports and plots are in bench_report.py).
See doc/benchmarks.md.

Examples:
  python3 bench/compare.py --builddir BUILD --all          # everything, 5 reps
  python3 bench/compare.py --builddir BUILD --all --quick  # short validation run
  python3 bench/compare.py --builddir BUILD --workloads 'rallocx-*' \\
      --allocators jemalloc,tcmalloc,glibc --reps 3
  python3 bench/compare.py --builddir BUILD --run-once --alloc tcmalloc
  python3 bench/compare.py --builddir BUILD --mimalloc-bench MB_OUT \\
      --workloads 'mb-*' --allocators ours,jemalloc,tcmalloc,mimalloc,glibc --reps 3
"""

import argparse
import csv
import datetime
import fnmatch
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

# bench_report.py lives next to this script; keep the source tree free of
# __pycache__ when the driver runs from a build directory.
sys.dont_write_bytecode = True
from bench_report import make_plots, summarize, write_csv  # noqa: E402

DEFAULT_ALLOCATORS = ["ours", "ours-preset-5.3.0", "jemalloc", "tcmalloc", "mimalloc", "glibc"]
# 5.3.0's extent placement and memory return in our build (doc/compat.md#placement-530):
# unbounded merging, no dirty reuse beyond lg_extent_max_active_fit before growing,
# oldest-first fit, no pages shared between arenas, no small extent cache, thread-cache bins of
# fixed capacity, purging by age alone, no idle return.
PRESET_530_CONF = "preset:jemalloc-5.3.0"
# Names an allocator had before: still accepted on the command line.
ALLOCATOR_ALIASES = {"ours-unbounded": "ours-preset-5.3.0"}

# Library search: the multiarch directory of this machine first.
LIB_DIRS = ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64",
            "/usr/lib", "/usr/local/lib", "/lib/x86_64-linux-gnu", "/lib64"]


def find_system_lib(*names):
    for d in LIB_DIRS + sorted(glob.glob("/usr/lib/*-linux-gnu")):
        for n in names:
            p = os.path.join(d, n)
            if os.path.exists(p):
                return p
    return None


class Allocator:
    def __init__(self, name, preload, env=None, note=""):
        self.name = name
        self.preload = preload      # path of the library to LD_PRELOAD, None = glibc
        self.env = dict(env or {})  # extra environment (MALLOC_CONF for ours-preset-5.3.0)
        self.note = note
        self.available = True
        self.why = ""
        self.info = {}

    def environ(self):
        env = dict(os.environ)
        env.pop("LD_PRELOAD", None)
        if self.preload:
            env["LD_PRELOAD"] = self.preload
        for k, v in self.env.items():
            if k == "MALLOC_CONF" and env.get("MALLOC_CONF"):
                env[k] = env["MALLOC_CONF"] + "," + v
            else:
                env[k] = v
        return env

    def env_args(self):
        """Assignments for env(1), used when perf wraps the command."""
        e = self.environ()
        keys = (["LD_PRELOAD"] if self.preload else []) + list(self.env)
        return ["%s=%s" % (k, e[k]) for k in keys]


def allocator_registry(args):
    ours = args.ours or os.path.join(args.builddir, ".libs", "libjemalloc.so.2")
    ours = os.path.abspath(ours)
    reg = {
        "ours": Allocator("ours", ours, note="this tree"),
        "ours-preset-5.3.0": Allocator("ours-preset-5.3.0", ours, {"MALLOC_CONF": PRESET_530_CONF},
                                       note="ours, preset:jemalloc-5.3.0 (every option of ours "
                                       "that places, keeps or returns memory as 5.3.0 does)"),
        "jemalloc": Allocator("jemalloc", find_system_lib("libjemalloc.so.2"),
                              note="Debian's jemalloc 5.3.0 (baseline)"),
        "tcmalloc": Allocator("tcmalloc", find_system_lib("libtcmalloc_minimal.so.4",
                                                          "libtcmalloc.so.4"),
                              note="gperftools tcmalloc"),
        "mimalloc": Allocator("mimalloc", find_system_lib("libmimalloc.so.2", "libmimalloc.so"),
                              note="mimalloc"),
        "glibc": Allocator("glibc", None, note="no preload"),
        # Not in the default set: heap profiling on at the default rate (lg_prof_sample:19),
        # ours and Debian's side by side (`make bench-prof`, TUNING.md "Heap profiling").
        "ours-prof": Allocator("ours-prof", ours, {"MALLOC_CONF": "prof:true"},
                               note="ours, prof:true (sampling at the default rate, no dumps)"),
        "jemalloc-prof": Allocator("jemalloc-prof", find_system_lib("libjemalloc.so.2"),
                                   {"MALLOC_CONF": "prof:true"},
                                   note="Debian's jemalloc 5.3.0, prof:true"),
        # Not in the default set: 5.3.0 with its purging threads, the reference for memory
        # return when a process goes quiet (bench/idle_rss.py, issue 28).
        "jemalloc-bg": Allocator("jemalloc-bg", find_system_lib("libjemalloc.so.2"),
                                 {"MALLOC_CONF": "background_thread:true"},
                                 note="Debian's jemalloc 5.3.0, background_thread:true"),
        # Not in the default set: glibc without heap-top trimming, to show that
        # glibc's faults in the rallocx pattern come from trimming.
        "glibc-notrim": Allocator("glibc-notrim", None,
                                  {"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=1073741824"},
                                  note="glibc, trim_threshold 1 GiB"),
    }
    for spec in args.lib or []:
        name, _, path = spec.partition("=")
        if not name or not path:
            sys.exit("--lib wants NAME=PATH, got %r" % spec)
        if name in reg:
            reg[name].preload = os.path.abspath(path)
        else:
            reg[name] = Allocator(name, os.path.abspath(path), note="--lib")
    for spec in args.env or []:
        name, _, assign = spec.partition(":")
        key, _, val = assign.partition("=")
        if name not in reg or not key:
            sys.exit("--env wants NAME:KEY=VALUE for a known allocator, got %r" % spec)
        reg[name].env[key] = val
    for a in reg.values():
        if a.preload is None and a.name not in ("glibc", "glibc-notrim"):
            a.available, a.why = False, "library not found"
        elif a.preload and not os.path.exists(a.preload):
            a.available, a.why = False, "%s does not exist" % a.preload
    return reg


class Workload:
    def __init__(self, name, prog, args, kind="c", trace=False, show=(), desc="", path=None):
        self.name = name
        self.prog = prog
        self.args = [str(x) for x in args]
        self.kind = kind      # "c": RESULT line; "gbench": Google Benchmark JSON;
        #                       "ext": a program of another project (rusage only)
        self.path = path      # "ext": the executable (None: --mimalloc-bench not given)
        self.trace = trace    # rallocx: write per-iteration trace in the first rep
        self.show = show      # RESULT keys shown in the summary
        self.desc = desc


RALLOCX_SHOW = ("faults_iter1", "faults_per_iter", "faults_per_iter_median", "mapped_mib")


def workload_registry(args):
    ncpu = os.cpu_count() or 1
    threads = []
    for t in (1, 4, 16):
        t = t if args.no_thread_cap else min(t, ncpu)
        if t not in threads:
            threads.append(t)
    wl = [Workload("micro", "micro", [], kind="gbench",
                   desc="Google Benchmark microbenchmarks (ns per item)")]
    for t in threads:
        for none in (False, True):
            name = "rallocx-t%d%s" % (t, "-notc" if none else "")
            wl.append(Workload(name, "rallocx_4k16k",
                               ["--threads", t] + (["--tcache-none"] if none else []),
                               trace=True, show=RALLOCX_SHOW,
                               desc="4 KiB -> 16 KiB rallocx, %d thread(s), tcache %s"
                                    % (t, "none" if none else "on")))
    wl.append(Workload("agg", "agg_hash", [], show=("mkeys_per_s", "rss_built_max_mib"),
                       desc="two-level hash aggregation (ClickHouse-like)"))
    wl.append(Workload("server", "server_sim", [],
                       show=("mallocs_per_s", "rss_grown_mib", "rss_shrunk_mib",
                             "rss_over_live_shrunk"),
                       desc="server simulation: sessions, growth/shrink phases"))
    wl.append(Workload("pipeline", "pipeline", [], show=("msgs_per_s", "rss_drained_mib"),
                       desc="3-stage producer/transformer/consumer pipeline"))
    wl.append(Workload("xthread", "xthread", ["--ops", "400k"],
                       show=("ops_per_s", "peak_rss_mib", "live_end_mib", "rss_drained_mib"),
                       desc="16 threads swap 8 B .. 4 MiB blocks through 256 shared slots "
                            "(most frees remote), 400k operations"))
    wl += mimalloc_bench_workloads(args)
    return wl


# mimalloc-bench's programs: (workload, program, arguments, description).  The arguments are
# the ones its runner (bench.sh) passes, with its thread count -- the CPU count there -- given
# by --mimalloc-bench-procs; the names follow that runner's test names.
MB_PROGRAMS = [
    ("mb-malloc-large", "malloc-large", lambda procs: [],
     "mimalloc-bench malloc-large: 2000 blocks of 5-25 MiB, zero-filled, up to 20 live "
     "(one thread)"),
    ("mb-mstress", "mstress", lambda procs: [procs, 50, 25],
     "mimalloc-bench mstress (its mstressN): %s threads (the main one included), started "
     "again 25 times, blocks of 8 B .. about 5 MB passed between them through a shared array"),
    ("mb-mleak10", "mleak", lambda procs: [5],
     "mimalloc-bench mleak (its mleak10): 500 rounds of 10 short threads, each leaving "
     "one 128 B block for another to free"),
    ("mb-mleak100", "mleak", lambda procs: [50],
     "mimalloc-bench mleak (its mleak100): 5000 rounds of 10 short threads"),
]


def mimalloc_bench_dir(path):
    """The folder holding the built programs: DIR itself, or DIR/out/bench of a checkout."""
    if path is None:
        return None
    path = os.path.abspath(path)
    if not any(os.path.exists(os.path.join(path, p)) for _, p, _, _ in MB_PROGRAMS):
        sub = os.path.join(path, "out", "bench")
        if os.path.isdir(sub):
            return sub
    return path


def mimalloc_bench_workloads(args):
    d = mimalloc_bench_dir(args.mimalloc_bench)
    procs = args.mimalloc_bench_procs
    out = []
    for name, prog, argf, desc in MB_PROGRAMS:
        out.append(Workload(name, prog, argf(procs), kind="ext",
                            desc=desc % procs if "%s" in desc else desc,
                            path=os.path.join(d, prog) if d else None))
    return out


def mimalloc_bench_info(args):
    """BUILD-INFO written by bench/mimalloc_bench.sh next to the programs, as key -> value."""
    d = mimalloc_bench_dir(args.mimalloc_bench)
    info = {}
    try:
        with open(os.path.join(d, "BUILD-INFO")) as f:
            for line in f:
                k, eq, v = line.strip().partition("=")
                if eq:
                    info[k] = v
    except (OSError, TypeError):
        pass
    return info


def select(names, registry, what):
    out = []
    for pat in names:
        pat = ALLOCATOR_ALIASES.get(pat, pat) if what == "allocator" else pat
        hits = [n for n in registry if fnmatch.fnmatchcase(n, pat)]
        if not hits:
            sys.exit("unknown %s %r (known: %s)" % (what, pat, ", ".join(registry)))
        out += [h for h in hits if h not in out]
    return out


# ---------------------------------------------------------------------------
# Running one program


class Sample:
    def __init__(self):
        self.rc = None
        self.wall = float("nan")
        self.maxrss_kib = float("nan")
        self.minflt = float("nan")
        self.majflt = float("nan")
        self.utime = float("nan")
        self.stime = float("nan")
        self.perf_faults = float("nan")
        self.result = {}   # RESULT key -> str
        self.gbench = {}   # benchmark name -> ns per item
        self.stderr_tail = ""

    @property
    def ok(self):
        return self.rc == 0


def parse_result_line(text):
    res = {}
    for line in text.splitlines():
        if line.startswith("RESULT "):
            for tok in line.split()[1:]:
                k, eq, v = tok.partition("=")
                if eq:
                    res[k] = v
    return res


def parse_gbench(path):
    out = {}
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError):
        return out
    for b in data.get("benchmarks", []):
        if b.get("run_type", "iteration") != "iteration":
            continue
        ips = b.get("items_per_second")
        if ips:
            out[b["name"]] = 1e9 / float(ips)
        else:
            scale = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}.get(b.get("time_unit", "ns"), 1.0)
            out[b["name"]] = float(b.get("real_time", "nan")) * scale
    return out


def popen_wait(cmd, env, stdout, stderr, timeout):
    """Start cmd in its own session, reap it with os.wait4, kill the session
    on timeout.  Returns (rc, wall seconds, rusage)."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, env=env, stdout=stdout, stderr=stderr,
                         stdin=subprocess.DEVNULL, start_new_session=True)
    killed = []

    def kill():
        killed.append(True)
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except OSError:
            pass

    timer = threading.Timer(timeout, kill) if timeout else None
    if timer:
        timer.start()
    try:
        _, status, ru = os.wait4(p.pid, 0)
    finally:
        if timer:
            timer.cancel()
    wall = time.monotonic() - t0
    p.returncode = os.waitstatus_to_exitcode(status)  # reaped above
    return (124 if killed else p.returncode), wall, ru


def clean_environ():
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    return env


def measure(ctx, cmd, a, stdout, stderr):
    """Run cmd under allocator a.  With bench/spawn (the normal case) the
    program is forked from that small launcher, which applies LD_PRELOAD and
    reports the child's wait4 rusage; without it, from this process (then
    ru_maxrss includes this driver's own peak RSS, see spawn.c)."""
    m = {}
    if ctx.spawn:
        fd, rfile = tempfile.mkstemp(prefix="bench-ru-", suffix=".txt")
        os.close(fd)
        try:
            rc, wall, _ = popen_wait([ctx.spawn, rfile] + a.env_args() + ["--"] + cmd,
                                     clean_environ(), stdout, stderr, ctx.timeout)
            with open(rfile) as f:
                for tok in f.read().split():
                    k, _, v = tok.partition("=")
                    m[k] = float(v)
        finally:
            os.unlink(rfile)
        if "wall_s" not in m:  # launcher killed (timeout) before writing
            m = {"wall_s": wall}
        m["rc"] = rc
        return m
    rc, wall, ru = popen_wait(cmd, a.environ(), stdout, stderr, ctx.timeout)
    return {"rc": rc, "wall_s": wall, "maxrss_kib": ru.ru_maxrss, "minflt": ru.ru_minflt,
            "majflt": ru.ru_majflt, "utime_s": ru.ru_utime, "stime_s": ru.ru_stime}


def run_sample(ctx, w, a, rep, log_prefix, stream=False):
    s = Sample()
    cmd = [ctx.prog_path(w)] + w.args + ctx.scale_args(w)
    tmp_json = None
    if w.kind == "gbench":
        fd, tmp_json = tempfile.mkstemp(prefix="bench-gb-", suffix=".json")
        os.close(fd)
        cmd += ["--benchmark_out=" + tmp_json, "--benchmark_out_format=json"]
    if w.trace and rep == 0 and ctx.trace_dir:
        cmd += ["--trace", os.path.join(ctx.trace_dir, "%s__%s.txt" % (w.name, a.name))]
    text = ""
    if stream:
        m = measure(ctx, cmd, a, None, None)
    else:
        with open(log_prefix + ".out", "w") as out_f, open(log_prefix + ".err", "w") as err_f:
            m = measure(ctx, cmd, a, out_f, err_f)
        with open(log_prefix + ".out") as f:
            text = f.read()
        with open(log_prefix + ".err") as f:
            s.stderr_tail = f.read()[-2000:]
    s.rc = m["rc"]
    nan = float("nan")
    s.wall = m.get("wall_s", nan)
    s.maxrss_kib, s.minflt, s.majflt = m.get("maxrss_kib", nan), m.get("minflt", nan), \
        m.get("majflt", nan)
    s.utime, s.stime = m.get("utime_s", nan), m.get("stime_s", nan)
    s.result = parse_result_line(text)
    if tmp_json:
        s.gbench = parse_gbench(tmp_json)
        os.unlink(tmp_json)
    return s


def run_perf(ctx, w, a):
    """page-faults of the program alone: perf runs without the preload and
    starts the program through env(1), which applies it."""
    fd, out = tempfile.mkstemp(prefix="bench-perf-", suffix=".csv")
    os.close(fd)
    cmd = ["perf", "stat", "-x,", "-e", "page-faults", "-o", out, "--",
           "env"] + a.env_args() + [ctx.prog_path(w)] + w.args + ctx.scale_args(w)
    rc, _, _ = popen_wait(cmd, clean_environ(), subprocess.DEVNULL, subprocess.DEVNULL,
                          ctx.timeout)
    val = float("nan")
    try:
        with open(out) as f:
            for line in f:
                parts = line.strip().split(",")
                if len(parts) > 2 and "page-faults" in parts[2] and parts[0].strip().isdigit():
                    val = float(parts[0])
    finally:
        os.unlink(out)
    return val if rc == 0 else float("nan")


def perf_works():
    if not shutil.which("perf"):
        return False, "perf not installed"
    fd, out = tempfile.mkstemp(prefix="bench-perf-", suffix=".csv")
    os.close(fd)
    try:
        r = subprocess.run(["perf", "stat", "-x,", "-e", "page-faults", "-o", out, "--", "true"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=30)
        with open(out) as f:
            ok = r.returncode == 0 and any("page-faults" in l and l.split(",")[0].isdigit()
                                           for l in f)
        return ok, "" if ok else "perf stat failed: " + r.stderr.decode(errors="replace")[-200:]
    except (OSError, subprocess.SubprocessError) as e:
        return False, "perf stat failed: %s" % e
    finally:
        os.unlink(out)


def probe(ctx, a):
    """Run a program with --info: checks that the preload loads, that it is
    the library serving malloc, and what API the programs will use."""
    if not a.available:
        return
    prog = ctx.probe_prog()
    try:
        r = subprocess.run([prog, "--info"], env=a.environ(), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=60)
    except subprocess.TimeoutExpired:
        a.available, a.why = False, "probe timed out"
        return
    out = r.stdout.decode(errors="replace")
    err = r.stderr.decode(errors="replace").strip()
    if r.returncode != 0:
        a.available = False
        a.why = "probe failed (rc=%d): %s" % (r.returncode, err[-300:] or out[-300:])
        return
    for line in out.splitlines():
        if line.startswith("INFO "):
            for tok in line.split()[1:]:
                k, _, v = tok.partition("=")
                a.info[k] = v
    a.info["stderr"] = err
    served = a.info.get("malloc", "")
    if a.preload:
        if os.path.realpath(served) != os.path.realpath(a.preload):
            a.available = False
            a.why = "malloc is served by %s, not %s (does it define malloc yet?)" % (
                served or "?", a.preload)
    if a.name.endswith("-prof") and a.info.get("opt.prof") != "true":
        a.note += " [warning: opt.prof reads %s]" % a.info.get("opt.prof", "n/a")
    if a.name == "ours-preset-5.3.0" and a.info.get("opt.bounded_coalesce") != "false":
        a.note += " [warning: opt.bounded_coalesce reads %s]" % a.info.get(
            "opt.bounded_coalesce", "n/a")


class Context:
    def __init__(self, args):
        self.args = args
        self.builddir = os.path.abspath(args.builddir)
        self.scale = args.scale
        self.timeout = args.timeout
        self.trace_dir = None
        self.all_allocs = []
        spawn = os.path.join(self.builddir, "bench", "spawn")
        self.spawn = spawn if os.access(spawn, os.X_OK) else None
        self.mb_info = {}  # BUILD-INFO of the mb-* programs

    def prog_path(self, w):
        if w.kind == "ext":
            return w.path or "(--mimalloc-bench DIR)/" + w.prog
        return os.path.join(self.builddir, "bench", w.prog)

    def probe_prog(self):
        return os.path.join(self.builddir, "bench", "rallocx_4k16k")

    def scale_args(self, w):
        if w.kind == "ext":  # run as their own runner runs them
            return []
        if w.kind == "gbench":
            return ["--benchmark_min_time=%g" % (0.05 * self.scale)]
        return [] if self.scale == 1.0 else ["--scale", "%g" % self.scale]


# ---------------------------------------------------------------------------
# Main


def main():
    ap = argparse.ArgumentParser(
        description="Compare allocators on the bench/ programs (LD_PRELOAD, interleaved runs).",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("Examples:")[1]
        if "Examples:" in __doc__ else None)
    ap.add_argument("--builddir", default=".", help="build tree with bench/ programs (default .)")
    ap.add_argument("--ours", help="our library (default <builddir>/.libs/libjemalloc.so.2)")
    ap.add_argument("--all", action="store_true", help="every workload, default allocators")
    ap.add_argument("--workloads", help="comma-separated names or globs (see --list)")
    ap.add_argument("--allocators",
                    help="comma-separated (default: %s)" % ",".join(DEFAULT_ALLOCATORS))
    ap.add_argument("--reps", type=int, default=None, help="repetitions (default 5)")
    ap.add_argument("--scale", type=float, default=None,
                    help="run-length factor passed to the programs (default 1)")
    ap.add_argument("--quick", action="store_true",
                    help="short validation run: --reps 2 --scale 0.25")
    ap.add_argument("--out", help="output folder (default results/<date-time>)")
    ap.add_argument("--perf", choices=("auto", "on", "off"), default="auto",
                    help="also count page-faults with perf stat (default auto)")
    ap.add_argument("--perf-reps", type=int, default=1,
                    help="perf-wrapped runs per workload and allocator (default 1)")
    ap.add_argument("--no-plots", action="store_true")
    ap.add_argument("--timeout", type=float, default=300, help="seconds per run (default 300)")
    ap.add_argument("--no-thread-cap", action="store_true",
                    help="run rallocx with 1/4/16 threads even on fewer CPUs")
    ap.add_argument("--lib", action="append", metavar="NAME=PATH",
                    help="add an allocator or override a library path (repeatable)")
    ap.add_argument("--env", action="append", metavar="NAME:KEY=VALUE",
                    help="extra environment for one allocator (repeatable)")
    ap.add_argument("--run-once", action="store_true",
                    help="run each selected workload once under --alloc, output to the terminal")
    ap.add_argument("--alloc", default="auto",
                    help="allocator for --run-once: a name, a library path, or auto "
                         "(ours when it works, else glibc)")
    ap.add_argument("--list", action="store_true", help="list workloads and allocators")
    ap.add_argument("--mimalloc-bench", metavar="DIR",
                    help="folder of mimalloc-bench programs built by bench/mimalloc_bench.sh "
                         "(or a checkout with them in out/bench): adds the mb-* workloads")
    ap.add_argument("--mimalloc-bench-procs", type=int, default=2, metavar="N",
                    help="thread count given to the mb-* programs that take one, where "
                         "mimalloc-bench's runner gives its CPU count (default 2)")
    args = ap.parse_args()
    if args.reps is None:
        args.reps = 2 if args.quick else 5
    if args.scale is None:
        args.scale = 0.25 if args.quick else 1.0
    if args.reps < 1 or args.scale <= 0:
        sys.exit("--reps must be >= 1 and --scale > 0")

    if args.mimalloc_bench_procs < 1:
        sys.exit("--mimalloc-bench-procs must be >= 1")
    if args.mimalloc_bench and not os.path.isdir(args.mimalloc_bench):
        sys.exit("--mimalloc-bench %s: not a folder (build the programs with "
                 "bench/mimalloc_bench.sh CHECKOUT OUTDIR)" % args.mimalloc_bench)

    ctx = Context(args)
    ctx.mb_info = mimalloc_bench_info(args)
    reg = allocator_registry(args)
    wreg = {w.name: w for w in workload_registry(args)}

    if args.list:
        print("workloads:")
        for w in wreg.values():
            shown = ctx.prog_path(w) if w.kind == "ext" else "bench/" + w.prog
            print("  %-18s %s %s  -- %s" % (w.name, shown, " ".join(w.args), w.desc))
        print("allocators:")
        for a in reg.values():
            print("  %-15s %s %s%s" % (a.name, a.preload or "(no preload)",
                                       " ".join("%s=%s" % kv for kv in a.env.items()),
                                       "" if a.available else "  [unavailable: %s]" % a.why))
        return 0

    if not os.path.exists(ctx.probe_prog()):
        sys.exit("%s not found: build the programs first (make bench-programs) or pass --builddir"
                 % ctx.probe_prog())

    if not ctx.spawn:
        print("note: %s/bench/spawn not built; forking from Python instead (peak RSS then "
              "includes this driver's)" % ctx.builddir)

    if args.workloads:
        wnames = select(args.workloads.split(","), wreg, "workload")
    elif args.all or args.run_once:
        # the mb-* programs only when their folder is given
        wnames = [n for n in wreg if wreg[n].kind != "ext" or args.mimalloc_bench]
    else:
        sys.exit("choose the workloads: --all or --workloads LIST (see --list)")
    workloads = [wreg[n] for n in wnames]
    if any(w.kind == "ext" for w in workloads) and not args.mimalloc_bench:
        sys.exit("the mb-* workloads need --mimalloc-bench DIR (programs built by "
                 "bench/mimalloc_bench.sh)")
    missing = [w for w in workloads if not os.path.exists(ctx.prog_path(w))]
    for w in missing:
        print("note: %s not built (%s); skipping %s" % (w.prog, ctx.prog_path(w), w.name))
    workloads = [w for w in workloads if w not in missing]

    if args.run_once:
        return run_once(ctx, reg, workloads)

    anames = select(args.allocators.split(","), reg, "allocator") if args.allocators \
        else DEFAULT_ALLOCATORS
    ctx.all_allocs = [reg[n] for n in anames]
    print("probing allocators ...")
    for a in ctx.all_allocs:
        probe(ctx, a)
        state = "ok" if a.available else "SKIPPED: " + a.why
        print("  %-15s %-55s %s" % (a.name, a.preload or "(no preload)", state))
        if a.available and a.info.get("stderr"):
            print("  %-15s stderr: %s" % ("", a.info["stderr"].splitlines()[0][:100]))
    allocs = [a for a in ctx.all_allocs if a.available]
    if not allocs:
        sys.exit("no allocator available")

    perf_on = False
    perf_note = "off"
    if args.perf != "off":
        perf_on, why = perf_works()
        if not perf_on:
            if args.perf == "on":
                sys.exit("--perf on: " + why)
            print("note: %s; skipping perf page-fault counts" % why)
            perf_note = "unavailable (%s)" % why
        else:
            perf_note = ("`perf stat -e page-faults` of %d separate run(s) per cell "
                         "(perf starts the program via env(1) so perf itself is not preloaded)"
                         % args.perf_reps)

    started = datetime.datetime.now()
    out = args.out or os.path.join("results", started.strftime("%Y-%m-%d_%H%M%S"))
    os.makedirs(os.path.join(out, "logs"), exist_ok=True)
    ctx.trace_dir = os.path.join(out, "traces")
    os.makedirs(ctx.trace_dir, exist_ok=True)

    samples = {}
    total = len(workloads) * len(allocs) * args.reps
    done = 0
    t_start = time.monotonic()
    for rep in range(args.reps):
        for w in workloads:
            k = rep % len(allocs)
            order = allocs[k:] + allocs[:k]
            for a in order:
                done += 1
                prefix = os.path.join(out, "logs", "%s__%s__rep%d" % (w.name, a.name, rep))
                s = run_sample(ctx, w, a, rep, prefix)
                if perf_on and rep < args.perf_reps:
                    s.perf_faults = run_perf(ctx, w, a)
                samples.setdefault((w.name, a.name), []).append(s)
                status = "ok" if s.ok else "FAILED rc=%s" % s.rc
                print("[%3d/%d] rep %d %-16s %-15s %7.2f s  %8.1f MiB  %9d faults  %s" % (
                    done, total, rep, w.name, a.name, s.wall, s.maxrss_kib / 1024.0,
                    s.minflt, status), flush=True)
    elapsed = time.monotonic() - t_start

    summary, micro_rows = summarize(ctx, workloads, allocs, samples, perf_note, started, elapsed)
    write_csv(os.path.join(out, "raw.csv"), workloads, allocs, samples)
    if micro_rows:
        with open(os.path.join(out, "micro.csv"), "w", newline="") as f:
            wr = csv.writer(f)
            wr.writerow(["benchmark"] + [a.name + "_ns_per_item" for a in allocs])
            for r in micro_rows:
                wr.writerow([r[0]] + ["" if v != v else "%.3f" % v for v in r[1:]])
    plots = [] if args.no_plots else make_plots(ctx, out, workloads, allocs, samples, micro_rows)
    if plots:
        summary += "\n## Plots\n\n" + "\n".join(
            "![%s](%s)" % (os.path.basename(p), os.path.relpath(p, out)) for p in plots) + "\n"
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write(summary)
    print()
    print(summary)
    print("wrote %s (summary.md, raw.csv%s%s)" % (out, ", micro.csv" if micro_rows else "",
                                                 ", %d plots" % len(plots) if plots else ""))
    failed = sum(1 for ss in samples.values() for s in ss if not s.ok)
    return 1 if failed else 0


def run_once(ctx, reg, workloads):
    name = ctx.args.alloc
    if name == "auto":
        a = reg["ours"]
        probe(ctx, a)
        if not a.available:
            print("bench: ours unavailable (%s); running under glibc" % a.why)
            a = reg["glibc"]
    elif name in reg:
        a = reg[name]
    elif os.path.exists(name):
        a = Allocator(os.path.basename(name), os.path.abspath(name), note="path")
    else:
        sys.exit("unknown allocator %r (names: %s, or a library path)" % (name, ", ".join(reg)))
    probe(ctx, a)
    if not a.available:
        sys.exit("allocator %s unavailable: %s" % (a.name, a.why))
    print("== allocator %s: %s (malloc served by %s, api=%s)" % (
        a.name, a.preload or "no preload", a.info.get("malloc", "?"), a.info.get("api", "?")))
    failed = 0
    for w in workloads:
        print("\n== %s: %s" % (w.name, w.desc), flush=True)
        s = run_sample(ctx, w, a, 1, None, stream=True)
        print("== %s: rc=%d wall %.2f s, peak RSS %.1f MiB, %d minor faults" % (
            w.name, s.rc, s.wall, s.maxrss_kib / 1024.0, s.minflt), flush=True)
        failed += not s.ok
    if failed:
        print("\nbench: %d workload(s) failed" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
