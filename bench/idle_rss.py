#!/usr/bin/env python3
"""RSS over time when the work stops (issue 28): bench/idle_rss under several allocators.

Runs bench/idle_rss (a 2 GiB burst by 4 threads, then a quiet stretch) under ours, ours with a
MALLOC_CONF of your choice (--ours-conf), Debian's jemalloc 5.3.0, 5.3.0 with
background_thread:true, tcmalloc, mimalloc and glibc, for each --after mode (blocked, trickle,
exit), interleaved (every repetition runs each mode under every allocator, in an order that
rotates between repetitions), N repetitions; then once per allocator the picture pattern (burst,
quiet, burst, longer quiet).  The allocators are compare.py's own table (allocator_registry), the
runs go through its launcher (measure), so peak RSS and faults are the program's alone.

Writes one report folder (default <srcdir>/bench/results/idle-rss, replaced on each run):

  summary.md        medians and ranges per mode and allocator, ratios vs 5.3.0 and 5.3.0+bg
  raw.csv           one row per run: rusage and every RESULT key
  series/*.csv      the program's RSS samples (t_seconds,rss_mib,phase), every run
  plots/*.png       RSS over time, one line per allocator (first repetition), ours on top
  logs/             stdout/stderr of every run

`--report-only DIR` redraws summary.md and the plots from DIR's raw.csv and series/.

Examples:
  python3 bench/idle_rss.py --builddir BUILD                     # everything, ~35 min
  python3 bench/idle_rss.py --builddir BUILD --quick             # 256 MiB, short quiet
  python3 bench/idle_rss.py --builddir BUILD --modes blocked --reps 1 --no-pattern
  python3 bench/idle_rss.py --builddir BUILD --ours-conf 'dirty_decay_ms:-1' \\
      --ours-conf-name ours-nodecay
  python3 bench/idle_rss.py --report-only bench/results/idle-rss
"""

import argparse
import csv
import datetime
import os
import shutil
import socket
import subprocess
import sys
import time

sys.dont_write_bytecode = True
from bench_report import (fmt_ratio, gnuplot_terminal, gp_quote, host_lines,  # noqa: E402
                          median, num, ratio)
from compare import (Allocator, Context, allocator_registry, measure, parse_result_line,  # noqa: E402
                     probe)

SRCDIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODES = ["blocked", "trickle", "exit"]
DEFAULT_ALLOCATORS = ["ours", "jemalloc", "jemalloc-bg", "tcmalloc", "mimalloc", "glibc"]
BASES = ("jemalloc", "jemalloc-bg")
# Legend names; the registry's own names stay in raw.csv.
LABELS = {"jemalloc": "jemalloc 5.3.0", "jemalloc-bg": "5.3.0 background_thread:true"}
# One colour per allocator in every plot (gnuplot colour names).
COLOURS = {"ours": "red", "jemalloc": "dark-blue", "jemalloc-bg": "web-blue",
           "tcmalloc": "dark-green", "mimalloc": "orange", "glibc": "gray40"}
EXTRA_COLOURS = ["magenta", "dark-cyan", "brown", "black"]
# RESULT keys in the tables: (key, heading).
FIGURES = [("peak_rss_mib", "peak"), ("rss_work_mib", "after the work"),
           ("rss_at10_mib", "+10 s"), ("rss_at20_mib", "+20 s"), ("rss_at30_mib", "+30 s"),
           ("rss_end_mib", "end of quiet")]
PATTERN_FIGURES = [("peak_rss_mib", "peak"), ("q1_work_mib", "after burst 1"),
                   ("q1_end_mib", "end of quiet 1"), ("q2_work_mib", "after burst 2"),
                   ("q2_at10_mib", "+10 s"), ("q2_end_mib", "end of quiet 2")]


class IdleContext(Context):
    """compare.py's context, probing with idle_rss itself."""

    def probe_prog(self):
        return os.path.join(self.builddir, "bench", "idle_rss")


def git_head():
    try:
        return subprocess.run(["git", "-C", SRCDIR, "rev-parse", "--short", "HEAD"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              text=True).stdout.strip()
    except OSError:
        return ""


def label(name, meta):
    if name == "ours" and meta.get("head"):
        return "ours @ %s" % meta["head"]
    if name == meta.get("conf_name"):
        return "%s (%s)" % (name, meta.get("conf", ""))
    return LABELS.get(name, name)


def colour(name, names):
    if name in COLOURS:
        return COLOURS[name]
    extra = [n for n in names if n not in COLOURS]
    return EXTRA_COLOURS[extra.index(name) % len(EXTRA_COLOURS)]


def drawing_order(names):
    """Ours last, so that its line is on top of the others."""
    return [n for n in names if not n.startswith("ours")] + \
        [n for n in names if n.startswith("ours") and n != "ours"] + \
        [n for n in names if n == "ours"]


# ---------------------------------------------------------------------------
# Running


def program_args(args, mode, pattern):
    a = ["--threads", args.threads, "--mib", args.mib, "--after", mode,
         "--sample-ms", args.sample_ms]
    if pattern:
        a += ["--pattern", "--quiet1", args.quiet1, "--quiet2", args.pattern_quiet2]
    else:
        a += ["--quiet2", args.quiet]
    return [str(x) for x in a]


def run_one(ctx, out, a, mode, rep, pattern, args):
    tag = "%s__%s__rep%d" % (("pattern-" + mode) if pattern else mode, a.name, rep)
    series = os.path.join(out, "series", tag + ".csv")
    cmd = [ctx.probe_prog()] + program_args(args, mode, pattern) + ["--csv", series]
    log = os.path.join(out, "logs", tag)
    with open(log + ".out", "w") as fo, open(log + ".err", "w") as fe:
        m = measure(ctx, cmd, a, fo, fe)
    with open(log + ".out") as f:
        res = parse_result_line(f.read())
    row = {"kind": "pattern" if pattern else "mode", "mode": mode, "allocator": a.name,
           "rep": rep, "rc": int(m["rc"]), "series": os.path.relpath(series, out)}
    for k in ("wall_s", "maxrss_kib", "minflt", "utime_s", "stime_s"):
        row["ru_" + k] = m.get(k, "")
    for k, v in res.items():
        if k not in ("prog", "api"):
            row[k] = v
    row["api"] = res.get("api", "")
    return row


def write_raw(path, rows):
    keys = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)


def read_raw(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


# ---------------------------------------------------------------------------
# Report


def cell(values):
    v = [x for x in values if x == x]
    if not v:
        return "n/a"
    med = median(v)
    if len(v) == 1:
        return "%.0f" % med
    return "%.0f (%.0f-%.0f)" % (med, min(v), max(v))


def figure_values(rows, name, key):
    return [num(r.get(key)) for r in rows if r["allocator"] == name and str(r["rc"]) == "0"]


def table(rows, names, figures, meta):
    lines = ["| allocator | " + " | ".join(h for _, h in figures) + " | minor faults | bursts (s) |",
             "|---" * (len(figures) + 3) + "|"]
    for n in names:
        cells = [cell(figure_values(rows, n, k)) for k, _ in figures]
        flt = [x for x in figure_values(rows, n, "ru_minflt") if x == x]
        burst = [x for x in figure_values(rows, n, "burst_s") if x == x]
        lines.append("| %s | %s | %s | %s |" % (
            label(n, meta), " | ".join(cells),
            "{:,.0f}".format(median(flt)) if flt else "n/a",
            "%.1f" % median(burst) if burst else "n/a"))
    return lines


def ratio_table(rows, names, keys):
    bases = [b for b in BASES if b in names]
    if not bases:
        return []
    head = []
    for k, h in keys:
        head += ["%s / %s" % (h, "5.3.0" if b == "jemalloc" else "5.3.0+bg") for b in bases]
    lines = ["| allocator | " + " | ".join(head) + " |", "|---" * (len(head) + 1) + "|"]
    for n in names:
        cells = []
        for k, _ in keys:
            v = median(figure_values(rows, n, k))
            cells += [fmt_ratio(ratio(v, median(figure_values(rows, b, k)))) for b in bases]
        lines.append("| %s | %s |" % (n, " | ".join(cells)))
    return lines


def summarize(out, rows, meta, plots):
    names = meta["allocators"]
    lines = ["# RSS over time when the work stops (bench/idle_rss)", "",
             "Issue 28, points 1-4.  %s, %s." % (meta["date"], meta["machine"]), ""]
    lines += ["- command: `%s`" % meta["command"],
              "- program: `bench/idle_rss %s` (4 threads each build their share of the MiB in "
              "blocks of 16 B-230 KiB, write them, free them, twice; then quiet)" %
              " ".join(program_args(meta["ns"], "MODE", False)),
              "- ours: %s" % meta.get("ours_desc", "?"),
              "- repetitions: %s per mode and allocator, interleaved; figures are medians "
              "(min-max), MiB of RSS read by the program itself; `+N s` is N seconds after the "
              "last free; minor faults are the whole run's (rusage)" % meta["reps"],
              "- duration: %s" % meta.get("elapsed", "?")]
    lines += meta["host"].split("\x1f") if meta.get("host") else host_lines()
    lines += ["", "Allocators:", ""]
    for n in names:
        lines.append("- `%s`: %s" % (n, meta["notes"].get(n, "")))
    for n, why in meta.get("skipped", {}).items():
        lines.append("- `%s`: SKIPPED (%s)" % (n, why))
    mode_rows = [r for r in rows if r["kind"] == "mode"]
    for mode in MODES:
        mr = [r for r in mode_rows if r["mode"] == mode]
        if not mr:
            continue
        desc = {"blocked": "threads alive, blocked on a condition variable, no allocator calls",
                "trickle": "threads blocked, worker 0 does one 64 B malloc/free every 100 ms",
                "exit": "the worker threads exit, main waits"}[mode]
        lines += ["", "## --after %s (%s)" % (mode, desc), ""]
        lines += table(mr, names, FIGURES, meta)
        lines += [""] + ratio_table(mr, names, [("rss_work_mib", "after the work"),
                                                  ("rss_end_mib", "end of quiet")])
        p = "plots/%s.png" % mode
        if p in plots:
            lines += ["", "![RSS over time, --after %s](%s)" % (mode, p)]
    pr = [r for r in rows if r["kind"] == "pattern"]
    if pr:
        lines += ["", "## Pattern: burst, quiet %s s, burst, quiet %s s (--after %s)" % (
            meta["ns"].quiet1, meta["ns"].pattern_quiet2, pr[0]["mode"]), ""]
        lines += table(pr, names, PATTERN_FIGURES, meta)
        if "plots/pattern.png" in plots:
            lines += ["", "![RSS over time, pattern](plots/pattern.png)"]
    failed = [r for r in rows if str(r["rc"]) != "0"]
    if failed:
        lines += ["", "## Failed runs", ""]
        lines += ["- %s %s rep %s: rc=%s (logs/)" % (r["mode"], r["allocator"], r["rep"], r["rc"])
                  for r in failed]
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return "\n".join(lines)


def read_series(path):
    pts = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            pts.append((float(r["t_seconds"]), float(r["rss_mib"]), r["phase"]))
    return pts


def phase_spans(pts):
    """(start, end) seconds of each burst in one series: from its first sample in a burst
    phase to its first sample in the quiet stretch after it."""
    spans, start = [], None
    for t, _, phase in pts:
        if phase.startswith("burst") and start is None:
            start = t
        elif phase.startswith("quiet") and start is not None:
            spans.append((start, t))
            start = None
    return spans


def plot(out, term, rows, meta, kind, mode, png, title):
    """One line per allocator (its first successful run), ours drawn last."""
    names = meta["allocators"]
    runs = {}
    for r in rows:
        if r["kind"] == kind and r["mode"] == mode and str(r["rc"]) == "0" \
                and r["allocator"] not in runs and os.path.exists(os.path.join(out, r["series"])):
            runs[r["allocator"]] = r
    if not runs:
        return None
    pdir = os.path.join(out, "plots")
    os.makedirs(pdir, exist_ok=True)
    base = os.path.splitext(os.path.basename(png))[0]
    gp = os.path.join(pdir, base + ".gp")
    ymax = 0
    plots = []
    shades = []
    for n in drawing_order([n for n in names if n in runs]):
        r = runs[n]
        pts = read_series(os.path.join(out, r["series"]))
        if n == "ours":
            shades = phase_spans(pts)
        dat = os.path.join(pdir, "%s__%s.dat" % (base, n))
        with open(dat, "w") as f:
            for t, v, _ in pts:
                f.write("%.3f %.1f\n" % (t, v))
        ymax = max([ymax] + [v for _, v, _ in pts])
        end_key = "q2_end_mib" if kind == "pattern" else "rss_end_mib"
        key = "%s: %s MiB at the end" % (label(n, meta), r.get(end_key, "?"))
        plots.append("%s using 1:2 with lines lw %d lc rgb %s title %s" % (
            gp_quote(os.path.basename(dat)), 4 if n == "ours" else 2,
            gp_quote(colour(n, names)), gp_quote(key)))
    with open(gp, "w") as f:
        f.write("set terminal %s size 1200,650 noenhanced font ',12'\n" % term)
        f.write("set output %s\n" % gp_quote(os.path.basename(png)))
        f.write("set title %s\n" % gp_quote(title))
        f.write("set xlabel 'time since the program started (s)'\n")
        f.write("set ylabel 'resident memory, RSS (MiB)'\n")
        f.write("set yrange [0:%d]\nset xrange [0:*]\n" % (int(ymax * 1.08 / 100 + 1) * 100))
        f.write("set grid\nset key outside below horizontal maxcols 2\n")
        # Ours' bursts shaded: where its quiet stretches start (the others' are close by).
        for i, (t0, t1) in enumerate(shades):
            f.write("set object %d rect from %.3f, graph 0 to %.3f, graph 1 behind "
                    "fc rgb '#e4e4e4' fs solid 1.0 noborder\n" % (i + 1, t0, t1))
            f.write("set label %d 'burst (ours)' at %.3f, graph 0.97 left font ',10'\n"
                    % (i + 1, t1 + 0.3))
        f.write("plot " + ", \\\n  ".join(plots) + "\n")
    # gnuplot runs in the plot folder so the script names its files relatively.
    r = subprocess.run(["gnuplot", os.path.basename(gp)], cwd=pdir, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    if r.returncode != 0:
        print("  gnuplot failed on %s: %s" % (gp, r.stderr.decode(errors="replace")[-300:]))
        return None
    return os.path.relpath(png, out)


def make_plots(out, rows, meta):
    term = gnuplot_terminal()
    if not term:
        print("gnuplot not found (Debian: apt-get install gnuplot-nox): skipping plots")
        return []
    ns = meta["ns"]
    where = "%s, %s" % (meta["machine"], meta["date"])
    made = []
    for mode in MODES:
        t = ("RSS over time: %s threads build and free %s MiB twice, then --after %s "
             "(first repetition)\n%s" % (ns.threads, ns.mib, mode, where))
        p = plot(out, term, rows, meta, "mode", mode,
                 os.path.join(out, "plots", mode + ".png"), t)
        if p:
            made.append(p)
    pr = [r for r in rows if r["kind"] == "pattern"]
    if pr:
        t = ("RSS over time: burst (%s threads, %s MiB twice), quiet %s s, burst, quiet %s s; "
             "threads %s while quiet\n%s" % (ns.threads, ns.mib, ns.quiet1, ns.pattern_quiet2,
                                             "exit" if pr[0]["mode"] == "exit" else
                                             pr[0]["mode"], where))
        p = plot(out, term, rows, meta, "pattern", pr[0]["mode"],
                 os.path.join(out, "plots", "pattern.png"), t)
        if p:
            made.append(p)
    return made


def report(out, rows, meta):
    plots = make_plots(out, rows, meta)
    return summarize(out, rows, meta, plots)


# ---------------------------------------------------------------------------
# Main


def parse_args(argv):
    ap = argparse.ArgumentParser(
        description="RSS over time when the work stops, under several allocators.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("Examples:")[1])
    ap.add_argument("--builddir", default=".", help="build tree (default .)")
    ap.add_argument("--ours", help="our library (default <builddir>/.libs/libjemalloc.so.2)")
    ap.add_argument("--ours-conf", help="also run ours with this MALLOC_CONF")
    ap.add_argument("--ours-conf-name", default="ours-conf",
                    help="name of that column (default ours-conf)")
    ap.add_argument("--allocators", help="comma-separated registry names (default %s)"
                    % ",".join(DEFAULT_ALLOCATORS))
    ap.add_argument("--lib", action="append", metavar="NAME=PATH", help="as in compare.py")
    ap.add_argument("--env", action="append", metavar="NAME:KEY=VALUE", help="as in compare.py")
    ap.add_argument("--modes", default=",".join(MODES), help="--after modes (default all)")
    ap.add_argument("--reps", type=int, default=3, help="repetitions per mode (default 3)")
    ap.add_argument("--mib", type=int, default=2048, help="MiB per round (default 2048)")
    ap.add_argument("--threads", type=int, default=4, help="worker threads (default 4)")
    ap.add_argument("--quiet", type=float, default=30, help="quiet stretch, s (default 30)")
    ap.add_argument("--sample-ms", type=int, default=250, help="sampling period (default 250)")
    ap.add_argument("--no-pattern", dest="pattern", action="store_false",
                    help="skip the burst/quiet/burst/quiet picture")
    ap.add_argument("--pattern-after", default="blocked", choices=MODES,
                    help="threads' state in the picture's quiet stretches (default blocked)")
    ap.add_argument("--quiet1", type=float, default=10, help="picture: first quiet, s (10)")
    ap.add_argument("--pattern-quiet2", type=float, default=30,
                    help="picture: second quiet, s (default 30)")
    ap.add_argument("--quick", action="store_true",
                    help="short check: --mib 256 --reps 1 --quiet 5 --quiet1 3 "
                         "--pattern-quiet2 5, report in <builddir>/results/idle-rss-quick")
    ap.add_argument("--out", help="report folder (default <srcdir>/bench/results/idle-rss)")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per run (default 600)")
    ap.add_argument("--report-only", metavar="DIR",
                    help="redraw summary.md and plots from DIR's raw.csv and series/")
    if "--quick" in argv:  # new defaults; options given explicitly still win
        ap.set_defaults(mib=256, reps=1, quiet=5, quiet1=3, pattern_quiet2=5)
    args = ap.parse_args(argv)
    if args.quick:
        args.out = args.out or os.path.join(args.builddir, "results", "idle-rss-quick")
    args.out = args.out or os.path.join(SRCDIR, "bench", "results", "idle-rss")
    args.perf, args.scale = "off", 1.0  # what compare.py's Context reads
    return args


def main(argv):
    args = parse_args(argv)
    if args.report_only:
        out = args.report_only
        with open(os.path.join(out, "meta.txt")) as f:
            saved = dict(l.rstrip("\n").split("=", 1) for l in f if "=" in l)
        args = parse_args(saved["argv"].split("\x1f") if saved["argv"] else [])
        meta = {"allocators": saved["allocators"].split(","), "ns": args,
                "notes": dict(kv.split(":", 1) for kv in saved["notes"].split("\x1f") if kv),
                "skipped": {}}
        for k in ("date", "machine", "command", "head", "conf", "conf_name", "ours_desc",
                  "reps", "elapsed", "host"):
            meta[k] = saved.get(k, "")
        print(report(out, read_raw(os.path.join(out, "raw.csv")), meta))
        return 0

    ctx = IdleContext(args)
    if not os.path.exists(ctx.probe_prog()):
        sys.exit("%s not found: make bench/idle_rss bench/spawn (or make bench-programs)"
                 % ctx.probe_prog())
    if not ctx.spawn:
        sys.exit("bench/spawn not built: make bench/spawn")
    reg = allocator_registry(args)
    names = args.allocators.split(",") if args.allocators else list(DEFAULT_ALLOCATORS)
    for n in names:
        if n not in reg:
            sys.exit("unknown allocator %r (known: %s)" % (n, ", ".join(reg)))
    if args.ours_conf:
        reg[args.ours_conf_name] = Allocator(args.ours_conf_name, reg["ours"].preload,
                                             {"MALLOC_CONF": args.ours_conf},
                                             note="ours, MALLOC_CONF=%s" % args.ours_conf)
        names.insert(1, args.ours_conf_name)
    modes = args.modes.split(",")
    for m in modes:
        if m not in MODES:
            sys.exit("unknown mode %r (known: %s)" % (m, ", ".join(MODES)))

    print("probing allocators ...")
    allocs, skipped = [], {}
    for n in names:
        a = reg[n]
        probe(ctx, a)
        print("  %-15s %-50s %s" % (n, a.preload or "(no preload)",
                                    "ok" if a.available else "SKIPPED: " + a.why))
        if a.available:
            allocs.append(a)
        else:
            skipped[n] = a.why

    out = args.out
    for sub in ("series", "logs", "plots"):
        shutil.rmtree(os.path.join(out, sub), ignore_errors=True)
        os.makedirs(os.path.join(out, sub))
    for f in ("raw.csv", "summary.md", "meta.txt"):
        if os.path.exists(os.path.join(out, f)):
            os.unlink(os.path.join(out, f))

    started = datetime.datetime.now(datetime.timezone.utc)
    head = git_head()
    meta = {"allocators": [a.name for a in allocs], "ns": args, "skipped": skipped,
            "notes": {a.name: a.note for a in allocs},
            "date": started.strftime("%Y-%m-%d %H:%M UTC"),
            "machine": "%s, %d CPUs" % (socket.gethostname(), os.cpu_count() or 0),
            "command": "python3 bench/idle_rss.py " + " ".join(argv), "head": head,
            "conf": args.ours_conf or "", "conf_name": args.ours_conf_name if args.ours_conf
            else "", "ours_desc": "%s at %s" % (reg["ours"].preload, head or "?"),
            "reps": args.reps, "host": "\x1f".join(host_lines())}  # the load at the start

    jobs = []  # (rep, mode, pattern)
    for rep in range(args.reps):
        jobs += [(rep, m, False) for m in modes]
    if args.pattern:
        jobs.append((0, args.pattern_after, True))
    rows = []
    t0 = time.monotonic()
    total = len(jobs) * len(allocs)
    done = 0
    for i, (rep, mode, pattern) in enumerate(jobs):
        k = i % len(allocs)
        for a in allocs[k:] + allocs[:k]:
            done += 1
            r = run_one(ctx, out, a, mode, rep, pattern, args)
            rows.append(r)
            write_raw(os.path.join(out, "raw.csv"), rows)
            print("[%3d/%d] %-16s rep %d %-14s %6.1f s  peak %7.1f  work %7.1f  end %7.1f MiB%s"
                  % (done, total, ("pattern-" if pattern else "") + mode, rep, a.name,
                     num(r.get("ru_wall_s")), num(r.get("peak_rss_mib")),
                     num(r.get("rss_work_mib")), num(r.get("rss_end_mib")),
                     "" if r["rc"] == 0 else "  FAILED rc=%s" % r["rc"]), flush=True)
    meta["elapsed"] = "%.1f min for %d runs" % ((time.monotonic() - t0) / 60, total)
    with open(os.path.join(out, "meta.txt"), "w") as f:
        for k in ("date", "machine", "command", "head", "conf", "conf_name", "ours_desc",
                  "reps", "elapsed", "host"):
            f.write("%s=%s\n" % (k, meta[k]))
        f.write("allocators=%s\n" % ",".join(meta["allocators"]))
        f.write("notes=%s\n" % "\x1f".join("%s:%s" % kv for kv in meta["notes"].items()))
        f.write("argv=%s\n" % "\x1f".join(argv))
    print(report(out, rows, meta))
    print("wrote %s" % out)
    return 1 if any(r["rc"] != 0 for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
