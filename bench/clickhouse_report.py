#!/usr/bin/env python3
"""Markdown report for bench/clickhouse.sh.

usage: clickhouse_report.py OUTDIR > OUTDIR/summary.md

Reads OUTDIR/meta.txt, raw.csv, servers.csv, opts/<lib>.txt,
environment.txt and table-stats.tsv, all written by bench/clickhouse.sh.
Standard library only.
"""

import csv
import os
import re
import statistics
import sys

BASELINE = "jemalloc"          # Debian's 5.3.0: the ratios are against it
OURS = "ours"
OPT_KEYS = ["bounded_coalesce", "dirty_decay_ms", "muzzy_decay_ms", "narenas",
            "lg_extent_max_active_fit", "oversize_threshold", "background_thread",
            "retain", "thp", "percpu_arena"]


def read_kv(path):
    """key=value lines; key[sub]=value becomes d[key][sub]."""
    out = {}
    if not os.path.exists(path):
        return out
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if "=" not in line:
                continue
            k, v = line.split("=", 1)
            m = re.match(r"^(\w+)\[(.*)\]$", k)
            if m:
                out.setdefault(m.group(1), {})[m.group(2)] = v
            else:
                out[k] = v
    return out


def read_opts(path):
    """config.malloc_conf, the version and opt.* from a stats_print dump."""
    res = {}
    if not os.path.exists(path):
        return res
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            m = re.match(r'^\s*Version:\s*"?([^"]*)"?', line)
            if m and "version" not in res:
                res["version"] = m.group(1)
            m = re.match(r'^\s*config\.malloc_conf:\s*(.*)$', line)
            if m:
                res["config.malloc_conf"] = m.group(1).strip()
            m = re.match(r'^\s*opt\.(\w+):\s*("?[^" ]*"?)', line)
            if m and m.group(1) not in res:
                res[m.group(1)] = m.group(2).strip('"')
    return res


def med(xs):
    return statistics.median(xs) if xs else None


def spread(xs):
    """(max - min) / 2 / median, as a fraction; None when undefined."""
    if len(xs) < 2:
        return None
    m = statistics.median(xs)
    if m == 0:
        return None
    return (max(xs) - min(xs)) / 2.0 / m


def fmt_num(v, kind):
    if v is None:
        return "–"
    if kind == "s":
        return "%.2f s" % v
    if kind == "mib":
        return "%.0f MiB" % (v / 1024.0)
    return "{:,.0f}".format(v)


def ratio(v, base):
    if v is None or base is None or base == 0:
        return None
    return v / base


def cell(v, base, kind, sp=None, is_base=False):
    s = fmt_num(v, kind)
    if sp is not None:
        s += " ±%.0f%%" % (sp * 100)
    r = ratio(v, base)
    if r is not None and not is_base:
        s += " (%.2f×)" % r
    return s


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    meta = read_kv(os.path.join(out, "meta.txt"))
    env = read_kv(os.path.join(out, "environment.txt"))
    libs = list(meta.get("lib", {}).keys())
    queries = [q for q in meta.get("queries", "").split(",") if q]

    rows = []
    with open(os.path.join(out, "raw.csv")) as f:
        for r in csv.DictReader(f):
            rows.append(r)
    servers = []
    sp = os.path.join(out, "servers.csv")
    if os.path.exists(sp):
        with open(sp) as f:
            servers = list(csv.DictReader(f))

    runs = int(meta.get("runs", "1"))
    p = []
    w = p.append
    w("# ClickHouse GROUP BY benchmark")
    w("")
    w("- date (UTC): %s; host %s, %s CPUs, kernel %s, THP %s" % (
        meta.get("date", "?"), meta.get("host", "?"), env.get("cpus", "?"),
        env.get("kernel", "?"), env.get("thp", "?")))
    w("- load average at start / end: %s / %s" % (
        meta.get("loadavg_start", "?"), meta.get("loadavg_end", "?")))
    w("- command: `%s`" % meta.get("command", "?"))
    w("- clickhouse-server %s; %s rows; max_threads %s; %s server start(s) per "
      "library, %s run(s) of each query per start; library order rotated at "
      "every start; measuring took %s s" % (
          env.get("clickhouse_version", "?"), meta.get("rows", "?"),
          meta.get("threads", "?"), meta.get("starts", "?"), runs,
          meta.get("measure_s", "?")))
    ts = os.path.join(out, "table-stats.tsv")
    if os.path.exists(ts):
        with open(ts) as f:
            v = f.read().split()
        if len(v) >= 7:
            # count, UserIDs, URLs, phrases, (UserID, phrase) pairs,
            # mean URL length, parts
            f = ["{:,}".format(int(x)) if x.isdigit() else x for x in v[:7]]
            w("- table bench.hits: %s rows, %s distinct UserID, %s distinct URL "
              "(mean length %s), %s distinct SearchPhrase, %s distinct "
              "(UserID, SearchPhrase), %s part(s)" % (
                  f[0], f[1], f[2], f[5], f[3], f[4], f[6]))
    w("")

    # Libraries and the options they actually ran with.
    w("## Libraries")
    w("")
    w("| name | file | sha256 (16) | MALLOC_CONF | version | options in force |")
    w("|---|---|---|---|---|---|")
    for n in libs:
        o = read_opts(os.path.join(out, "opts", n + ".txt"))
        shown = ", ".join("%s:%s" % (k, o[k]) for k in OPT_KEYS if k in o)
        w("| %s | `%s` | %s | `%s` | %s | %s |" % (
            n, meta["lib"][n], meta.get("sha256", {}).get(n, "?"),
            meta.get("conf", {}).get(n, "") or "(none)", o.get("version", "?"),
            shown))
    w("")
    w("Options are read back with `stats_print:true` from a short run of the same "
      "server binary under each library and MALLOC_CONF (files in `opts/`).")
    dm = env.get("defines_malloc_conf", {})
    if dm:
        w("The server binary and its libraries define `malloc_conf`: %s. "
          "/etc/malloc.conf: %s." % (
              ", ".join("%s %s" % (os.path.basename(k), v) for k, v in dm.items()),
              env.get("etc_malloc_conf", "?")))
    names = sorted({x for v in env.get("mallctl_names", {}).values()
                    for x in v.split()})
    if names:
        w("mallctl names found in them: %s." % ", ".join(
            "`%s`" % x for x in names))
    w("")

    # Per query and library.
    by = {}
    for r in rows:
        by.setdefault((r["query"], r["lib"]), []).append(r)

    def stats_for(q, n):
        rs = by.get((q, n), [])
        if not rs:
            return None
        first = [r for r in rs if r["run"] == "1"]
        rep = [r for r in rs if r["run"] != "1"]
        starts = sorted({r["start"] for r in rs})
        peaks = []
        for s in starts:
            peaks.append(max(int(r["peak_kib"]) for r in rs if r["start"] == s))
        after_src = rep if rep else first
        d = {
            "t1": med([float(r["time_s"]) for r in first]),
            "tr": med([float(r["time_s"]) for r in rep]),
            "tr_sp": spread([float(r["time_s"]) for r in rep]),
            "f1": med([int(r["minflt"]) for r in first]),
            "fr": med([int(r["minflt"]) for r in rep]),
            "fr_sp": spread([int(r["minflt"]) for r in rep]),
            "peak": med(peaks),
            "after": med([int(r["rss_kib"]) for r in after_src]),
            "before": med([int(r["rss_before_kib"]) for r in rep])
            if rep and all(r.get("rss_before_kib") for r in rep) else None,
            "n": len(rs),
        }
        # The census (bench/mmap_census.c): what ClickHouse mapped itself during each repeat
        # run and how many of those pages it touched; the faults beyond are the allocator's
        # (and the rest of the server's).
        own = [r for r in rep if r.get("own_touched_pages")]
        if own:
            d["own_map"] = med([int(r["own_map_kib"]) for r in own])
            d["own_touched"] = med([int(r["own_touched_pages"]) for r in own])
            d["beyond"] = med([int(r["minflt"]) - int(r["own_touched_pages"]) for r in own])
        return d

    st = {(q, n): stats_for(q, n) for q in queries for n in libs}
    sql = meta.get("sql", {})
    have_base = BASELINE in libs

    def table_rows(need=None):
        """(query, library, its stats, the baseline's, is it the baseline) per table row."""
        for q in queries:
            b = st.get((q, BASELINE)) if have_base else None
            for n in libs:
                d = st[(q, n)]
                if d is not None and (need is None or need in d):
                    yield q, n, d, b, n == BASELINE

    w("## Per query")
    w("")
    w("Medians. *1st*: the first run of the query in each server start; *rep*: "
      "runs 2..%d. Faults: the server's minor faults during the query "
      "(/proc/PID/stat). Peak: VmHWM reset just before each run "
      "(/proc/PID/clear_refs), highest run per start, median over starts. "
      "After: VmRSS right after the repeat runs. ± is (max − min) / 2 / median "
      "over the repeat runs.%s" % (
          runs, " Ratios are against `%s` (Debian's 5.3.0)." % BASELINE
          if have_base else ""))
    w("")
    w("| query | library | time 1st | time rep | faults 1st | faults rep | peak RSS | RSS after |")
    w("|---|---|---:|---:|---:|---:|---:|---:|")
    for q, n, d, b, isb in table_rows():
        w("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            q, n,
            cell(d["t1"], b and b["t1"], "s", is_base=isb),
            cell(d["tr"], b and b["tr"], "s", d["tr_sp"], isb),
            cell(d["f1"], b and b["f1"], "n", is_base=isb),
            cell(d["fr"], b and b["fr"], "n", d["fr_sp"], isb),
            cell(d["peak"], b and b["peak"], "mib", is_base=isb),
            cell(d["after"], b and b["after"], "mib", is_base=isb)))
    w("")
    w("Queries:")
    w("")
    for q in queries:
        w("- `%s`: `%s`" % (q, sql.get(q, "?")))
    w("")

    # The fault floor (census).
    if any(d and "beyond" in d for d in st.values()):
        w("## Faults beyond ClickHouse's own memory")
        w("")
        w("ClickHouse maps blocks of 64 MiB and more itself (mmap, not malloc). The census "
          "library (`bench/mmap_census.c`, preloaded) logs those mappings and, when each goes, "
          "how many of its pages were touched: every such page is a first-touch fault under "
          "any allocator. Medians over the repeat runs: what ClickHouse mapped itself, the "
          "pages of it touched, the server's faults, and the faults beyond the touched pages "
          "(the allocator's share, with the rest of the server's).%s" % (
              " Ratios against `%s`." % BASELINE if have_base else ""))
        w("")
        w("| query | library | own mappings | own pages touched | faults rep | faults beyond |")
        w("|---|---|---:|---:|---:|---:|")
        for q, n, d, b, isb in table_rows("beyond"):
            w("| %s | %s | %s | %s | %s | %s |" % (
                q, n, fmt_num(d["own_map"], "mib"), fmt_num(d["own_touched"], "n"),
                cell(d["fr"], b and b["fr"], "n", is_base=isb),
                cell(d["beyond"], b and b.get("beyond"), "n", is_base=isb)))
        w("")

    # What a library keeps resident between runs against the faults that saves.  A repeat run
    # saves faults against the baseline in two ways: pages still resident when it starts (kept
    # since the previous run) and memory reused within the run.  Saved / kept near 1 says the
    # saving is the pages kept, each one used again; the same pages are what "RSS after" shows
    # above the baseline's, so on such a workload the two cannot both be at the baseline's.
    if have_base and any(d and d.get("before") is not None for d in st.values()):
        w("## Resident memory kept against faults saved")
        w("")
        w("Medians over the repeat runs, in 4 KiB pages, against `%s`: how much more the "
          "server had resident when the run started (RSS before it, less `%s`'s), and how "
          "many fewer minor faults the run took. A run saves faults with pages still "
          "resident when it starts (kept since the previous run) or by reusing, within the "
          "run, memory it freed; saved / kept near 1 says the saving is the pages kept, "
          "each one used again. Those pages are what RSS right after the previous run shows "
          "above `%s`'s." % (BASELINE, BASELINE, BASELINE))
        w("")
        w("| query | library | RSS before, beyond %s | faults saved | saved / kept |"
          % BASELINE)
        w("|---|---|---:|---:|---:|")
        for q, n, d, b, isb in table_rows("before"):
            if isb or b is None or b.get("before") is None:
                continue
            kept = (d["before"] - b["before"]) / 4.0
            saved = b["fr"] - d["fr"]
            w("| %s | %s | %s | %s | %s |" % (
                q, n, fmt_num(kept, "n"), fmt_num(saved, "n"),
                "%.2f" % (saved / kept) if kept >= 1000 else "–"))
        w("")
        # Every page between the RSS a run starts with and its peak is faulted in during the
        # run, so faults >= (peak - RSS before) / 4 KiB for any allocator.  Faults at most half
        # the baseline's at the same peak then need RSS before the run (= after the previous
        # one) of at least peak - half the baseline's faults.
        rises = [(int(r["minflt"]), (int(r["peak_kib"]) - int(r["rss_before_kib"])) / 4.0)
                 for r in rows if r.get("rss_before_kib") and r.get("peak_kib")]
        rises = [(f, x) for f, x in rises if x >= 1000]
        seen = (" (here, over the %d runs that rose by 1,000 pages or more: faults / rise "
                ">= %.4f)" % (len(rises), min(f / x for f, x in rises))) if rises else ""
        w("A run faults in at least the pages between the RSS it starts with and its peak, "
          "under any allocator%s. Repeat-run faults at most half of `%s`'s, reaching the "
          "same peak (the query's data sets it), therefore need the server to start the run "
          "with at least that peak less half of `%s`'s faults resident:" % (
              seen, BASELINE, BASELINE))
        w("")
        w("| query | %s: peak RSS | faults rep | RSS after | RSS needed before a run for 0.5× "
          "its faults |" % BASELINE)
        w("|---|---:|---:|---:|---:|")
        for q in queries:
            b = st.get((q, BASELINE))
            if not b or b.get("before") is None:
                continue
            w("| %s | %s | %s | %s | ≥ %s |" % (
                q, fmt_num(b["peak"], "mib"), fmt_num(b["fr"], "n"),
                fmt_num(b["after"], "mib"),
                fmt_num(max(0.0, b["peak"] - 0.5 * b["fr"] * 4), "mib")))
        w("")

    # Whole server lives.
    if servers:
        w("## Server lives")
        w("")
        idle_s = servers[0].get("idle_s") or "0"
        w("Medians over starts: RSS once the server answers, the highest VmHWM "
          "seen, RSS and minor faults (since exec) when the last query is done, "
          "and RSS after the server then sat idle for %s s." % idle_s)
        w("")
        w("| library | RSS at start | peak RSS | RSS at end | RSS idle %s s | minor faults |"
          % idle_s)
        w("|---|---:|---:|---:|---:|---:|")
        for n in libs:
            ss = [s for s in servers if s["lib"] == n]
            if not ss:
                continue
            idle = [int(s["idle_rss_kib"]) for s in ss if s.get("idle_rss_kib")]
            w("| %s | %s | %s | %s | %s | %s |" % (
                n,
                fmt_num(med([int(s["startup_rss_kib"]) for s in ss]), "mib"),
                fmt_num(med([int(s["life_peak_kib"]) for s in ss]), "mib"),
                fmt_num(med([int(s["final_rss_kib"]) for s in ss]), "mib"),
                fmt_num(med(idle), "mib") if idle else "-",
                fmt_num(med([int(s["total_minflt"]) for s in ss]), "n")))
        w("")

    # The targets: repeat-run faults at most half of stock's and below any upstream-* build's;
    # time, peak and after-query RSS no higher than stock's.
    if OURS in libs and have_base:
        ups = [n for n in libs if n.startswith("upstream")]
        w("## Targets for `%s`" % OURS)
        w("")
        w("Repeat-run faults at most 0.5× `%s`'s%s; time, peak RSS at most "
          "`%s`'s (time within the ±%% noise is marked `~`); RSS after no "
          "higher than `%s`'s." % (
              BASELINE, " and below " + ", ".join("`%s`'s" % u for u in ups)
              if ups else "", BASELINE, BASELINE))
        w("")
        hdr = "| query | faults rep vs %s |" % BASELINE
        hdr += "".join(" faults rep vs %s |" % u for u in ups)
        hdr += " time rep | peak RSS | RSS after |"
        w(hdr)
        w("|---|" + "---:|" * (1 + len(ups) + 3))
        for q in queries:
            o, b = st.get((q, OURS)), st.get((q, BASELINE))
            if not o or not b:
                continue

            def mark(ok):
                return "✓" if ok else "✗"
            line = "| %s |" % q
            r = ratio(o["fr"], b["fr"])
            line += " %s %s |" % ("%.2f×" % r if r is not None else "–",
                                  mark(r is not None and r <= 0.5))
            for u in ups:
                ud = st.get((q, u))
                r = ratio(o["fr"], ud and ud["fr"])
                line += " %s %s |" % ("%.2f×" % r if r is not None else "–",
                                      mark(r is not None and r < 1.0))
            r = ratio(o["tr"], b["tr"])
            noise = max(o["tr_sp"] or 0, b["tr_sp"] or 0)
            if r is None:
                line += " – |"
            else:
                line += " %.2f× %s |" % (r, "✓" if r <= 1.0 else (
                    "~" if r <= 1.0 + noise else "✗"))
            r = ratio(o["peak"], b["peak"])
            line += " %.2f× %s |" % (r, mark(r <= 1.0)) if r is not None else " – |"
            r = ratio(o["after"], b["after"])
            line += " %.2f× %s |" % (r, mark(r <= 1.0)) if r is not None else " – |"
            w(line)
        w("")

    w("Files: `raw.csv` (one row per query run), `servers.csv` (one row per "
      "server start), `opts/` (each library's options), `environment.txt` "
      "(what the ClickHouse binary links and defines), `logs/`.")
    print("\n".join(p))


if __name__ == "__main__":
    main()
