"""Reports for bench/compare.py: medians and ratios, summary.md, raw.csv
and the gnuplot charts.  Python 3 standard library only."""

import csv
import os
import platform
import shutil
import statistics
import subprocess
import sys

# Ratios in every table and chart are against this allocator's column.
BASELINE = "jemalloc"

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
    cwl = [w for w in workloads if w.kind == "c"]
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

    # Per workload detail.
    for w in cwl:
        L.append("## %s — %s" % (w.name, w.desc))
        L.append("")
        L.append("`bench/%s %s`" % (w.prog, " ".join(w.args + ctx.scale_args(w))))
        L.append("")
        cols = ["allocator", "runs", "wall s", "±", "vs base", "peak RSS MiB", "vs base",
                "minflt", "vs base", "perf faults"] + list(w.show)
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
                   fmt(mr / 1024.0), fmt_ratio(ratio(mr, br)), fmt(mf), fmt_ratio(ratio(mf, bf)),
                   fmt(mp)]
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
                     "majflt", "utime_s", "stime_s", "perf_page_faults"] +
                    ["result_" + k for k in keys])
        for w in workloads:
            for a in allocs:
                for rep, s in enumerate(samples.get((w.name, a.name), [])):
                    wr.writerow([w.name, a.name, rep, s.rc, "%.4f" % s.wall, s.maxrss_kib,
                                 s.minflt, s.majflt, "%.3f" % s.utime, "%.3f" % s.stime,
                                 "" if s.perf_faults != s.perf_faults else int(s.perf_faults)] +
                                [s.result.get(k, "") for k in keys])


# ---------------------------------------------------------------------------
# Plots (gnuplot)


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
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def plot_bars(pdir, term, name, title, ylabel, rows, cols, logscale=False):
    """rows: [(label, [values per col])] -> clustered bar chart."""
    dat = os.path.join(pdir, name + ".dat")
    with open(dat, "w") as f:
        f.write("label " + " ".join(c.replace(" ", "_") for c in cols) + "\n")
        for label, vals in rows:
            f.write(label.replace(" ", "_") + " " +
                    " ".join("NaN" if v != v else "%g" % v for v in vals) + "\n")
    width = min(1800, max(900, 30 * len(rows) * max(1, len(cols)) // 2))
    height = 620 if len(rows) > 12 else 520
    gp = os.path.join(pdir, name + ".gp")
    with open(gp, "w") as f:
        f.write("set terminal %s size %d,%d noenhanced\n" % (term, width, height))
        f.write("set output %s\n" % gp_quote(os.path.join(pdir, name + ".png")))
        f.write("set title %s\n" % gp_quote(title))
        f.write("set ylabel %s\n" % gp_quote(ylabel))
        f.write("set style data histograms\nset style histogram clustered gap 1\n")
        f.write("set style fill solid 0.85 border -1\nset boxwidth 0.9\n")
        f.write("set key outside right top\nset grid ytics\nset yrange [0:*]\n")
        f.write("set xtics rotate by -35 scale 0\n")
        if logscale:
            # clipped to 1/100..100: a 1000x outlier would flatten the rest
            f.write("set logscale y 10\nset yrange [0.01:100]\nset ytics format '%g'\n")
        if len(rows) > 12:
            f.write("set xtics font ',8'\n")
        f.write("plot " + ", ".join("%s using %d:xtic(1) title columnheader(%d)"
                                    % (gp_quote(dat), i + 2, i + 2) for i in range(len(cols)))
                + "\n")
    return run_gnuplot(gp)


def run_gnuplot(gp):
    r = subprocess.run(["gnuplot", gp], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if r.returncode != 0:
        print("  gnuplot failed on %s: %s" % (gp, r.stderr.decode(errors="replace")[-300:]))
        return False
    return True


def plot_traces(pdir, term, trace_dir, wname, allocs):
    files = [(a.name, os.path.join(trace_dir, "%s__%s.txt" % (wname, a.name))) for a in allocs]
    files = [(n, p) for n, p in files if os.path.exists(p)]
    if not files:
        return []
    made = []
    for col, what, ylabel in ((2, "faults", "minor faults per iteration (mean per thread)"),
                              (5, "rss", "RSS after the iteration (MiB)")):
        gp = os.path.join(pdir, "%s_%s.gp" % (wname, what))
        png = os.path.join(pdir, "%s_%s.png" % (wname, what))
        with open(gp, "w") as f:
            f.write("set terminal %s size 1000,520 noenhanced\n" % term)
            f.write("set output %s\n" % gp_quote(png))
            f.write("set title %s\n" % gp_quote("%s: %s" % (wname, ylabel)))
            f.write("set xlabel 'iteration'\nset ylabel %s\n" % gp_quote(ylabel))
            f.write("set key outside right top\nset grid\n")
            scale = "" if col == 2 else "/1048576.0"
            f.write("plot " + ", ".join("%s using 1:($%d%s) with lines lw 2 title %s"
                                        % (gp_quote(p), col, scale, gp_quote(n))
                                        for n, p in files) + "\n")
        if run_gnuplot(gp):
            made.append(png)
    return made


def make_plots(ctx, out, workloads, allocs, samples, micro_rows):
    term = gnuplot_terminal()
    if not term:
        print("gnuplot not found (Debian: apt-get install gnuplot-nox): skipping plots")
        return []
    pdir = os.path.join(out, "plots")
    os.makedirs(pdir, exist_ok=True)
    names = [a.name for a in allocs]
    base = BASELINE if BASELINE in names else None
    made = []
    cwl = [w for w in workloads if w.kind == "c"]
    for attr, fname, label in (("wall", "time", "wall time"), ("maxrss_kib", "rss", "peak RSS"),
                               ("minflt", "faults", "minor faults")):
        rows = []
        for w in cwl:
            meds = [median([getattr(s, attr) for s in samples.get((w.name, n), []) if s.ok])
                    for n in names]
            if base:
                b = meds[names.index(base)]
                meds = [ratio(v, b) for v in meds]
            rows.append((w.name, meds))
        if rows:
            title = "%s%s" % (label, " relative to %s (lower is better)" % base if base else "")
            ylabel = "ratio vs %s" % base if base else label
            stem = fname + ("_ratio" if base else "")
            if plot_bars(pdir, term, stem, title, ylabel, rows, names):
                made.append(os.path.join(pdir, stem + ".png"))
    if micro_rows:
        rows = []
        for r in micro_rows:
            vals = r[1:]
            if base:
                b = vals[names.index(base)]
                vals = [ratio(v, b) for v in vals]
            rows.append((r[0].replace("BM_", ""), vals))
        if plot_bars(pdir, term, "micro_ratio" if base else "micro",
                     "microbenchmarks: ns per item%s" % (" relative to %s" % base if base else ""),
                     "ratio vs %s (log scale)" % base if base else "ns per item (log scale)",
                     rows, names, logscale=True):
            made.append(os.path.join(pdir, ("micro_ratio" if base else "micro") + ".png"))
    if ctx.trace_dir:
        for w in workloads:
            if w.trace:
                made += plot_traces(pdir, term, ctx.trace_dir, w.name, allocs)
    return made
