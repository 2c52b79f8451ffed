"""Reports for bench/compare.py: medians and ratios, summary.md, raw.csv
and the gnuplot charts.  Python 3 standard library only."""

import csv
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys

# Ratios in every table and chart are against this allocator's column.
BASELINE = "jemalloc"

# A minor fault maps one base page (a huge-page fault, one fault for 2 MiB, would count
# below 1 here).  Minor faults x PAGE_BYTES / peak RSS says how many times each page of the
# peak was faulted in: 1 when every page is mapped once and kept, N when freed memory goes
# back to the kernel and is faulted in again N times.
try:
    PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")
except (ValueError, OSError, AttributeError):
    PAGE_BYTES = 4096
PAGE_LABEL = "%d KiB" % (PAGE_BYTES // 1024)


def faults_per_peak(minflt, maxrss_kib):
    """Minor faults x page size / peak RSS (nan when either is missing)."""
    if minflt != minflt or maxrss_kib != maxrss_kib or maxrss_kib <= 0:
        return float("nan")
    return minflt * PAGE_BYTES / (maxrss_kib * 1024.0)

# ---------------------------------------------------------------------------
# Statistics and reports


def median(values):
    v = [x for x in values if x == x]
    return statistics.median(v) if v else float("nan")


def num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def fmt(v, digits=3):
    if v != v:
        return "n/a"
    if abs(v) >= 1000:
        return "{:,.0f}".format(v)
    if abs(v) >= 100:
        return "%.1f" % v
    return ("%%.%dg" % digits) % v


def ratio(v, base):
    if v != v or base != base or base == 0:
        return float("nan")
    return v / base


def fmt_ratio(r):
    return "n/a" if r != r else "%.2fx" % r


def fmt_range(values, scale=1.0):
    """"median (min-max)" of the values, or the median alone for one value."""
    v = [x * scale for x in values if x == x]
    if not v:
        return "n/a"
    if len(v) == 1 or min(v) == max(v):
        return fmt(median(v))
    return "%s (%s–%s)" % (fmt(median(v)), fmt(min(v)), fmt(max(v)))


def host_lines():
    lines = []
    try:
        with open("/proc/cpuinfo") as f:
            model = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "?")
    except OSError:
        model = "?"
    lines.append("- host: %s, %d CPUs (%s), Linux %s" % (platform.node(), os.cpu_count() or 0,
                                                        model, platform.release()))
    for path, label in (("/sys/kernel/mm/transparent_hugepage/enabled", "THP"),
                        ("/proc/sys/vm/overcommit_memory", "overcommit_memory")):
        try:
            with open(path) as f:
                lines.append("- %s: `%s`" % (label, f.read().strip()))
        except OSError:
            pass
    try:
        with open("/proc/loadavg") as f:
            lines.append("- load average at start: %s" % " ".join(f.read().split()[:3]))
    except OSError:
        pass
    return lines


def summarize(ctx, workloads, allocs, samples, perf_note, started, elapsed):
    """samples[(w, a)] -> list of Sample"""
    args = ctx.args
    names = [a.name for a in allocs]
    base = BASELINE if BASELINE in names else None
    L = []
    L.append("# Allocator comparison — %s" % started.strftime("%Y-%m-%d %H:%M"))
    L.append("")
    L.append("- command: `%s`" % " ".join(sys.argv))
    L.append("- repetitions: %d (interleaved: round-robin over allocators inside each "
             "repetition, order rotated every repetition); scale %g; total %.0f s"
             % (args.reps, args.scale, elapsed))
    L += host_lines()
    L.append("- wall time, peak RSS (`ru_maxrss`) and `minflt`: wait4 rusage of the program, %s"
             % ("forked from `bench/spawn` (a small launcher, so the RSS floor is ~1 MiB)"
                if ctx.spawn else "forked from this driver (bench/spawn missing: peak RSS "
                "includes the driver's own)"))
    L.append("- `perf faults`: %s" % perf_note)
    L.append("- faults/peak: minor faults x %s / peak RSS, per run (how many times each page "
             "of the peak was faulted in; 1 = each once)" % PAGE_LABEL)
    if any(w.kind == "ext" for w in workloads):
        info = getattr(ctx, "mb_info", {})
        L.append("- mb-* programs: mimalloc-bench %s, built by `bench/mimalloc_bench.sh` (%s; "
                 "%s); thread count %d" % (info.get("commit", "(no BUILD-INFO)")[:12],
                                          info.get("flags", "?"), info.get("cc", "?"),
                                          args.mimalloc_bench_procs))
    L.append("- values are medians over the repetitions; ratios are vs `%s` (Debian's "
             "jemalloc 5.3.0), lower = better for time, RSS and faults" % BASELINE
             if base else "- values are medians (no `%s` column, so no ratios)" % BASELINE)
    L.append("")
    L.append("## Allocators")
    L.append("")
    L.append("| name | library | served malloc | API | notes |")
    L.append("|---|---|---|---|---|")
    for a in allocs:
        L.append("| %s | %s | %s | %s | %s%s |" % (
            a.name, a.preload or "(none)", a.info.get("malloc", "—"), a.info.get("api", "—"),
            a.note, "; env " + ",".join("%s=%s" % kv for kv in a.env.items()) if a.env else ""))
    L.append("")

    # Overview matrices.
    cwl = [w for w in workloads if w.kind in ("c", "ext")]
    if cwl:
        for title, attr in (("Wall time", "wall"), ("Peak RSS", "maxrss_kib"),
                            ("Minor faults", "minflt")):
            L.append("## Overview: %s%s" % (title, " (ratio vs %s)" % base if base else ""))
            L.append("")
            L.append("| workload | " + " | ".join(names) + " |")
            L.append("|---|" + "---:|" * len(names))
            for w in cwl:
                meds = {a.name: median([getattr(s, attr) for s in samples.get((w.name, a.name), [])
                                        if s.ok]) for a in allocs}
                cells = []
                for n in names:
                    v = meds[n]
                    unit = {"wall": "%s s", "maxrss_kib": "%s MiB", "minflt": "%s"}[attr]
                    shown = v / 1024.0 if attr == "maxrss_kib" else v
                    cell = unit % fmt(shown)
                    if base and n != base:
                        cell += " (%s)" % fmt_ratio(ratio(v, meds[base]))
                    cells.append(cell)
                L.append("| %s | %s |" % (w.name, " | ".join(cells)))
            L.append("")
        L.append("## Overview: faults per peak page (minor faults x %s / peak RSS)" % PAGE_LABEL)
        L.append("")
        L.append("Median of the runs' own ratios: 1 = each page of the peak faulted in once; "
                 "above 1, memory went back to the kernel and was faulted in again.")
        L.append("")
        L.append("| workload | " + " | ".join(names) + " |")
        L.append("|---|" + "---:|" * len(names))
        for w in cwl:
            cells = []
            for n in names:
                ok = [s for s in samples.get((w.name, n), []) if s.ok]
                cells.append(fmt(median([faults_per_peak(s.minflt, s.maxrss_kib) for s in ok])))
            L.append("| %s | %s |" % (w.name, " | ".join(cells)))
        L.append("")

    # Per workload detail.
    for w in cwl:
        L.append("## %s — %s" % (w.name, w.desc))
        L.append("")
        if w.kind == "ext":
            L.append("`%s`" % " ".join([ctx.prog_path(w)] + w.args))
        else:
            L.append("`bench/%s %s`" % (w.prog, " ".join(w.args + ctx.scale_args(w))))
        L.append("")
        L.append("Peak RSS, minor faults, faults/peak and system time: median (minimum–maximum) "
                 "of the runs.")
        L.append("")
        cols = ["allocator", "runs", "wall s", "±", "vs base", "sys s", "peak RSS MiB",
                "vs base", "minflt", "vs base", "faults/peak", "perf faults"] + list(w.show)
        L.append("| " + " | ".join(cols) + " |")
        L.append("|---|" + "---:|" * (len(cols) - 1))
        base_s = samples.get((w.name, base), []) if base else []
        bw = median([s.wall for s in base_s if s.ok])
        br = median([s.maxrss_kib for s in base_s if s.ok])
        bf = median([s.minflt for s in base_s if s.ok])
        for a in allocs:
            ss = samples.get((w.name, a.name), [])
            ok = [s for s in ss if s.ok]
            runs = "%d/%d" % (len(ok), len(ss))
            if not ok:
                L.append("| %s | %s |%s" % (a.name, runs, " FAILED |" * (len(cols) - 2)))
                continue
            walls = [s.wall for s in ok]
            mw = median(walls)
            spread = (max(walls) - min(walls)) / 2 / mw * 100 if mw > 0 else float("nan")
            mr = median([s.maxrss_kib for s in ok])
            mf = median([s.minflt for s in ok])
            mp = median([s.perf_faults for s in ss])
            row = [a.name, runs, fmt(mw), "%.0f%%" % spread, fmt_ratio(ratio(mw, bw)),
                   fmt_range([s.stime for s in ok]),
                   fmt_range([s.maxrss_kib for s in ok], 1 / 1024.0), fmt_ratio(ratio(mr, br)),
                   fmt_range([s.minflt for s in ok]), fmt_ratio(ratio(mf, bf)),
                   fmt_range([faults_per_peak(s.minflt, s.maxrss_kib) for s in ok]), fmt(mp)]
            for k in w.show:
                vals = [num(s.result.get(k)) for s in ok]
                row.append(fmt(median(vals)))
            L.append("| " + " | ".join(row) + " |")
        L.append("")

    # Microbenchmarks.
    mw = [w for w in workloads if w.kind == "gbench"]
    micro_rows = []
    for w in mw:
        bench_names = []
        for a in allocs:
            for s in samples.get((w.name, a.name), []):
                for b in s.gbench:
                    if b not in bench_names:
                        bench_names.append(b)
        if not bench_names:
            L.append("## %s — no Google Benchmark results (program missing or failed)" % w.name)
            L.append("")
            continue
        L.append("## %s — %s" % (w.name, w.desc))
        L.append("")
        L.append("Median ns per item (1e9 / items_per_second)%s." %
                 (", ratio vs %s in parentheses" % base if base else ""))
        L.append("")
        L.append("| benchmark | " + " | ".join(names) + " |")
        L.append("|---|" + "---:|" * len(names))
        for b in bench_names:
            meds = {a.name: median([s.gbench.get(b, float("nan"))
                                    for s in samples.get((w.name, a.name), []) if s.ok])
                    for a in allocs}
            cells = []
            for n in names:
                c = fmt(meds[n])
                if base and n != base:
                    c += " (%s)" % fmt_ratio(ratio(meds[n], meds[base]))
                cells.append(c)
            L.append("| %s | %s |" % (b, " | ".join(cells)))
            micro_rows.append([b] + [meds[n] for n in names])
        L.append("")

    # Failures.
    fails = [(wn, an, s) for (wn, an), ss in samples.items() for s in ss if not s.ok]
    if fails:
        L.append("## Failed runs")
        L.append("")
        for wn, an, s in fails:
            tail = s.stderr_tail.strip().splitlines()[-3:] if s.stderr_tail else []
            shown = ("— `" + " / ".join(tail) + "`") if tail else ""
            L.append("- %s under %s: rc=%s %s" % (wn, an, s.rc, shown))
        L.append("")
    skipped = [a for a in ctx.all_allocs if not a.available]
    if skipped:
        L.append("## Allocators skipped")
        L.append("")
        for a in skipped:
            L.append("- %s: %s" % (a.name, a.why))
        L.append("")
    return "\n".join(L) + "\n", micro_rows


def write_csv(path, workloads, allocs, samples):
    keys = []
    for ss in samples.values():
        for s in ss:
            for k in s.result:
                if k not in keys:
                    keys.append(k)
    with open(path, "w", newline="") as f:
        wr = csv.writer(f)
        wr.writerow(["workload", "allocator", "rep", "rc", "wall_s", "maxrss_kib", "minflt",
                     "majflt", "utime_s", "stime_s", "perf_page_faults", "faults_per_peak"] +
                    ["result_" + k for k in keys])
        for w in workloads:
            for a in allocs:
                for rep, s in enumerate(samples.get((w.name, a.name), [])):
                    wr.writerow([w.name, a.name, rep, s.rc, "%.4f" % s.wall, s.maxrss_kib,
                                 s.minflt, s.majflt, "%.3f" % s.utime, "%.3f" % s.stime,
                                 "" if s.perf_faults != s.perf_faults else int(s.perf_faults),
                                 "%.3f" % faults_per_peak(s.minflt, s.maxrss_kib)] +
                                [s.result.get(k, "") for k in keys])


# ---------------------------------------------------------------------------
# Plots (gnuplot), drawn from the files a run leaves (raw.csv, micro.csv, traces/) so that a
# stored result can be drawn again: python3 bench/bench_report.py plots RESULTS_DIR.
#
# One figure per question: time, peak RSS and faults relative to the baseline (one bar per
# allocator and workload, the error bar spanning the repetitions' minimum to maximum, our
# bars labelled with their value); one figure per microbenchmark family (absolute ns per
# item); the faults and RSS of the rallocx workloads per iteration.  An axis is logarithmic
# when the values on it span more than 20x, so that 0.01x and 1x bars are both visible.

# The series whose bars carry their value (the headline: this tree's library).
LABELLED = ("ours",)
LOG_SPAN = 20.0


def gnuplot_terminal():
    if not shutil.which("gnuplot"):
        return None
    for term in ("pngcairo", "png"):
        r = subprocess.run(["gnuplot", "-e", "set terminal %s" % term],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if r.returncode == 0:
            return term
    return None


def gp_quote(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def run_gnuplot(gp):
    r = subprocess.run(["gnuplot", gp], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if r.returncode != 0:
        print("  gnuplot failed on %s: %s" % (gp, r.stderr.decode(errors="replace")[-300:]))
        return False
    return True


def wants_log(values):
    pos = [v for v in values if v == v and v > 0]
    return bool(pos) and max(pos) / min(pos) > LOG_SPAN


def label_text(v, unit):
    if unit == "x":
        return "%.2gx" % v if v < 10 else "%.0fx" % v
    return fmt(v)


def plot_bars(pdir, term, name, title, ylabel, groups, series, cells, unit="", note=""):
    """groups: x labels; series: bar names; cells[g][s] = (value, low, high) or None.
    Writes pdir/name.png: clustered bars with error bars, the LABELLED series' values
    printed over their bars, a log axis when the values span more than LOG_SPAN."""
    n = len(series)
    gap = 1
    dat = os.path.join(pdir, name + ".dat")
    allv = []
    with open(dat, "w") as f:
        f.write("# group " + " ".join("%s lo hi" % s.replace(" ", "_") for s in series) + "\n")
        for g, row in zip(groups, cells):
            vals = []
            for c in row:
                if c is None or c[0] != c[0]:
                    vals += ["NaN"] * 3
                else:
                    vals += ["%g" % x for x in c]
                    allv += [x for x in c]
            f.write(g.replace(" ", "_") + " " + " ".join(vals) + "\n")
    log = wants_log(allv)
    width = min(1600, max(1000, 28 * len(groups) * (n + gap)))
    gp = os.path.join(pdir, name + ".gp")
    with open(gp, "w") as f:
        f.write("set terminal %s size %d,560 noenhanced font ',11'\n" % (term, width))
        f.write("set output %s\n" % gp_quote(os.path.join(pdir, name + ".png")))
        f.write("set title %s\n" % gp_quote(title + ("\n" + note if note else "")))
        f.write("set ylabel %s\n" % gp_quote(ylabel + (" (log scale)" if log else "")))
        f.write("set style data histograms\n")
        f.write("set style histogram errorbars gap %d lw 1\n" % gap)
        f.write("set style fill solid 0.85 border -1\nset boxwidth 0.9\n")
        f.write("set key outside right top\nset grid ytics\n")
        f.write("set xtics rotate by -30 scale 0\n")
        if log:
            pos = [v for v in allv if v > 0]
            lo = 10 ** math.floor(math.log10(min(pos)))
            hi = 10 ** math.ceil(math.log10(max(pos) * 1.5))
            f.write("set logscale y 10\nset yrange [%g:%g]\nset format y '%s'\n"
                    % (lo, hi, "%g" if lo < 1 else "%.0f"))
        else:
            f.write("set yrange [0:%g]\n" % (max(allv + [0]) * 1.18 or 1))
        if unit == "x":
            # the baseline: 1x
            f.write("set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2 lw 1.5\n")
        plots = ["%s using %d:%d:%d:xtic(1) title %s" % (gp_quote(dat), 2 + 3 * j, 3 + 3 * j,
                                                         4 + 3 * j, gp_quote(s))
                 for j, s in enumerate(series)]
        for j, s in enumerate(series):
            if s not in LABELLED:
                continue
            off = (j - (n - 1) / 2.0) / (n + gap)
            # The label sits over the error bar's top; the text is the median.
            lab = os.path.join(pdir, "%s.%s.lab" % (name, s))
            with open(lab, "w") as lf:
                for gi, row in enumerate(cells):
                    c = row[j]
                    if c is None or c[0] != c[0]:
                        continue
                    lf.write("%g %g %s\n" % (gi + off, max(c), gp_quote(label_text(c[0], unit))))
            plots.append("%s using 1:2:3 with labels offset 0,0.8 font ',10' notitle"
                         % gp_quote(lab))
        f.write("plot " + ", \\\n     ".join(plots) + "\n")
    return run_gnuplot(gp)


def read_raw(path):
    """raw.csv -> (workloads, allocators, {(w, a): [row dict]}) in file order."""
    workloads, allocs, rows = [], [], {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r["workload"] not in workloads:
                workloads.append(r["workload"])
            if r["allocator"] not in allocs:
                allocs.append(r["allocator"])
            rows.setdefault((r["workload"], r["allocator"]), []).append(r)
    return workloads, allocs, rows


def plot_traces(pdir, term, trace_dir, wname, allocs):
    files = [(a, os.path.join(trace_dir, "%s__%s.txt" % (wname, a))) for a in allocs]
    files = [(n, p) for n, p in files if os.path.exists(p)]
    if not files:
        return []
    made = []
    for col, what, ylabel in ((2, "faults", "minor faults per iteration (mean per thread)"),
                              (5, "rss", "RSS after the iteration (MiB)")):
        values = []
        per_alloc = {}  # each allocator's values after the first iteration, for its key entry
        for n, p in files:
            mine = []
            with open(p) as tf:
                for line in tf:
                    parts = line.split()
                    if len(parts) >= col and not line.startswith("#"):
                        try:
                            v = float(parts[col - 1])
                        except ValueError:
                            continue
                        values.append(v)
                        mine.append(v)
            per_alloc[n] = mine[1:] or mine
        log = wants_log([v for v in values if v > 0] + ([0.1] if col == 2 else []))
        gp = os.path.join(pdir, "%s_%s.gp" % (wname, what))
        png = os.path.join(pdir, "%s_%s.png" % (wname, what))

        # Lines of allocators that behave alike lie on each other: the key says each one's
        # figure, and the first allocators (ours) are drawn last, on top.
        def key(n):
            v = per_alloc[n]
            if not v:
                return n
            if col == 2:
                return "%s: median %s/iter" % (n, fmt(median(v)))
            return "%s: %.1f MiB at the end" % (n, v[-1] / 1048576.0)
        with open(gp, "w") as f:
            f.write("set terminal %s size 1000,520 noenhanced font ',11'\n" % term)
            f.write("set output %s\n" % gp_quote(png))
            f.write("set title %s\n" % gp_quote("%s: %s%s" % (
                wname, ylabel, "\nlog scale; an iteration without faults is drawn at the 0 tic"
                if log and col == 2 else "\nlog scale" if log else "")))
            f.write("set xlabel 'iteration'\nset ylabel %s\n"
                    % gp_quote(("faults per iteration" if col == 2 else "RSS (MiB)")
                               + (" (log scale)" if log else "")))
            f.write("set key outside right top invert\nset grid\n")  # key in the allocators' order
            if col == 2:
                y = "($2 > 0.1 ? $2 : 0.1)" if log else "2"
                if log:
                    hi = 10 ** math.ceil(math.log10(max(values + [1]) * 2))
                    f.write("set logscale y 10\nset yrange [0.1:%g]\n" % hi)
                    f.write("set format y '%g'\nset ytics add ('0' 0.1)\n")
            else:
                y = "($5/1048576.0)"
                f.write("set logscale y 10\nset format y '%g'\n" if log else "set yrange [0:*]\n")
            order = list(enumerate(files))[::-1]
            f.write("plot " + ", ".join(
                "%s using 1:%s with lines lw %d lc %d title %s"
                % (gp_quote(p), y, 3 if i == 0 else 2, i + 1, gp_quote(key(n)))
                for i, (n, p) in order) + "\n")
        if run_gnuplot(gp):
            made.append(png)
    return made


def human_size(text):
    try:
        n = int(text)
    except ValueError:
        return text
    for unit, div in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div and n % div == 0:
            return "%d%s" % (n // div, unit)
    return "%dB" % n


def micro_family(name):
    """BM_malloc_free/65536 -> (malloc_free, 64KiB); .../real_time/threads:2 -> 64B,2thr"""
    parts = name.replace("BM_", "", 1).split("/")
    rest = [p for p in parts[1:] if p != "real_time"]
    return parts[0], ",".join(p.replace("threads:", "") + "thr" if p.startswith("threads:")
                              else human_size(p) for p in rest)


def plots_from_files(out, pdir=None, trace_dir=None):
    """Draws every plot of the results folder `out` into pdir (default out/plots)."""
    term = gnuplot_terminal()
    if not term:
        print("gnuplot not found (Debian: apt-get install gnuplot-nox): skipping plots")
        return []
    pdir = pdir or os.path.join(out, "plots")
    os.makedirs(pdir, exist_ok=True)
    made = []
    raw = os.path.join(out, "raw.csv")
    if os.path.exists(raw):
        workloads, allocs, rows = read_raw(raw)
        base = BASELINE if BASELINE in allocs else None
        cwl = [w for w in workloads if w != "micro"]
        for col, stem, what, better in (
                ("wall_s", "time", "wall time", "lower is faster"),
                ("maxrss_kib", "rss", "peak RSS", "lower uses less memory"),
                ("minflt", "faults", "minor page faults", "lower maps fewer fresh pages")):
            cells = []
            for w in cwl:
                vals = {a: [num(r[col]) for r in rows.get((w, a), []) if r["rc"] == "0"]
                        for a in allocs}
                b = median(vals[base]) if base else 1.0
                row = []
                for a in allocs:
                    v = [x / b for x in vals[a]] if b == b and b > 0 else []
                    row.append((median(v), min(v), max(v)) if v else None)
                cells.append(row)
            if not cells:
                continue
            reps = max(len(v) for v in rows.values())
            name = stem + "_ratio" if base else stem
            title = ("%s relative to %s, per workload (%s)" % (what, base, better) if base
                     else "%s per workload" % what)
            note = ("bar: median of %d runs; error bar: their minimum to maximum; "
                    "dashed line: %s" % (reps, base) if reps > 1 else
                    "one run each (no spread); dashed line: %s" % base)
            if plot_bars(pdir, term, name, title, "ratio vs %s" % base if base else what,
                         cwl, allocs, cells, unit="x" if base else "", note=note):
                made.append(os.path.join(pdir, name + ".png"))
        # Faults per peak page: absolute, each run's own ratio; the dashed line at 1 is
        # "every page of the peak faulted in once".
        cells = []
        for w in cwl:
            row = []
            for a in allocs:
                v = [faults_per_peak(num(r["minflt"]), num(r["maxrss_kib"]))
                     for r in rows.get((w, a), []) if r["rc"] == "0"]
                v = [x for x in v if x == x]
                row.append((median(v), min(v), max(v)) if v else None)
            cells.append(row)
        if cells:
            reps = max(len(v) for v in rows.values())
            if plot_bars(pdir, term, "faults_per_peak",
                         "minor faults x %s / peak RSS, per workload: how many times each page "
                         "of the peak was faulted in (lower is better)" % PAGE_LABEL,
                         "faults x %s / peak RSS" % PAGE_LABEL, cwl, allocs, cells, unit="x",
                         note="bar: median of %d runs' own ratios; error bar: their minimum to "
                              "maximum; dashed line: 1 (each page faulted in once)" % reps):
                made.append(os.path.join(pdir, "faults_per_peak.png"))
    micro = os.path.join(out, "micro.csv")
    if os.path.exists(micro):
        with open(micro, newline="") as f:
            rd = csv.reader(f)
            header = next(rd)
            names = [h.replace("_ns_per_item", "") for h in header[1:]]
            fam = {}
            for r in rd:
                family, arg = micro_family(r[0])
                fam.setdefault(family, []).append((arg, [num(v) for v in r[1:]]))
        for family, entries in fam.items():
            cells = [[(v, v, v) if v == v else None for v in vals] for _, vals in entries]
            name = "micro_" + family
            if plot_bars(pdir, term, name,
                         "microbenchmark %s: ns per item, by block size (lower is faster)"
                         % family, "ns per item", [e[0] for e in entries], names, cells,
                         note="median of the repetitions (micro.csv keeps no spread)"):
                made.append(os.path.join(pdir, name + ".png"))
    trace_dir = trace_dir or os.path.join(out, "traces")
    if os.path.isdir(trace_dir):
        tw, ta = [], []
        for fn in sorted(os.listdir(trace_dir)):
            if fn.endswith(".txt") and "__" in fn:
                w, a = fn[:-4].split("__", 1)
                tw += [w] if w not in tw else []
                ta += [a] if a not in ta else []
        order = [a for a in ("ours", "ours-preset-5.3.0", "jemalloc", "tcmalloc", "mimalloc",
                             "glibc") if a in ta] + [a for a in ta if a not in
                                                     ("ours", "ours-preset-5.3.0", "jemalloc",
                                                      "tcmalloc", "mimalloc", "glibc")]
        for w in tw:
            made += plot_traces(pdir, term, trace_dir, w, order)
    return made


def make_plots(ctx, out, workloads, allocs, samples, micro_rows):
    """compare.py's hook: raw.csv and micro.csv are written by then."""
    return plots_from_files(out, trace_dir=ctx.trace_dir)


def main(argv):
    if len(argv) < 3 or argv[1] != "plots":
        sys.exit("usage: bench_report.py plots RESULTS_DIR [PLOT_DIR]\n"
                 "  draws the plots of a compare.py results folder (raw.csv, micro.csv,\n"
                 "  traces/) into PLOT_DIR (default RESULTS_DIR/plots)")
    made = plots_from_files(argv[2], argv[3] if len(argv) > 3 else None)
    for m in made:
        print(m)
    return 0 if made else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
