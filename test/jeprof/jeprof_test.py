#!/usr/bin/env python3
# jeprof_test: checks bin/jeprof (run by test/jeprof/run.sh under `make check`).
#
# Part 1, always: the heap_v2 dumps committed in test/jeprof/data (Debian's jemalloc 5.3.0, see
# data/README.md).  Totals are recomputed here from the file with an independent reader and
# the published unsampling formula; every output format is cross-checked against --text;
# --proto is decoded with the small protobuf reader below; bad input gives a readable error.
# Part 2, for each library in JEPROF_LIBS that profiles (default: Debian's 5.3.0 and the build's
# own): known_allocs is dumped at lg_prof_sample:12 and jeprof must attribute each function's
# live bytes within 10% of the truth the program prints, show no freed memory, name the frame
# in the shared object, agree with Debian's /usr/bin/jeprof, graphviz and `go tool pprof`.
# The same program under prof_gdump:true must leave high-water dumps <prefix>.<pid>.<seq>.u<n>.heap
# numbered 0, 1, 2, ... that both jeprofs read, with the same total.
# A check whose tool is absent prints SKIP with the reason.
#
# Output: one line per check, "PASS|FAIL|SKIP: name[: detail]".  Exit status 0 when nothing
# failed (77, automake's skip, when nothing ran), 1 otherwise.
import gzip
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

TOP_SRCDIR = os.environ.get("top_srcdir") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))
TOP_BUILDDIR = os.environ.get("top_builddir") or TOP_SRCDIR
JEPROF = os.environ.get("JEPROF") or os.path.join(TOP_BUILDDIR, "bin", "jeprof")
KNOWN = os.environ.get("KNOWN_ALLOCS") or os.path.join(TOP_BUILDDIR, "test", "jeprof",
                                                         "known_allocs")
DATA = os.path.join(TOP_SRCDIR, "test", "jeprof", "data")
DEBIAN_LIB = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"
LIBS = os.environ.get("JEPROF_LIBS", "%s %s" % (
    DEBIAN_LIB, os.path.join(TOP_BUILDDIR, ".libs", "libjemalloc.so.2"))).split()
DEBIAN_JEPROF = os.environ.get("DEBIAN_JEPROF", "/usr/bin/jeprof")
TOLERANCE = 0.10
VERBOSE = os.environ.get("VERBOSE") == "1"

results = {"PASS": 0, "FAIL": 0, "SKIP": 0}


def report(status, name, detail=""):
    results[status] += 1
    print("%s: %s%s" % (status, name, ": " + detail if detail else ""))
    sys.stdout.flush()


def check(name, ok, detail=""):
    report("PASS" if ok else "FAIL", name, "" if ok and not VERBOSE else detail)
    return ok


def run(cmd, env=None, binary=False, timeout=300):
    res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                         timeout=timeout, check=False)
    out = res.stdout if binary else res.stdout.decode("utf-8", "replace")
    return res.returncode, out, res.stderr.decode("utf-8", "replace")


def jeprof(*args, binary=False):
    return run([sys.executable, JEPROF] + list(args), binary=binary)


# ---- an independent heap_v2 reader: only what the checks need --------------------------------

def heap_totals(path):
    """(objects, bytes) after unsampling, summed over the t* line of every backtrace."""
    with open(path) as f:
        lines = f.read().split("\n")
    period = int(lines[0].split("/")[1])
    objs = size = 0.0
    in_stack = False
    for line in lines[1:]:
        if line.startswith("MAPPED_LIBRARIES"):
            break
        if line.startswith("@"):
            in_stack = True
            continue
        m = re.match(r"\s*t\*: (\d+): (\d+) \[", line)
        if m and in_stack:
            n, s = int(m.group(1)), int(m.group(2))
            if n > 0 and s > 0:
                scale = 1 / (1 - math.exp(-(s / n) / period))
                n, s = n * scale, s * scale
            objs += n
            size += s
    return objs, size


# ---- jeprof --text parsing -------------------------------------------------------------------

def parse_text(out):
    """(total, {function: (flat, cum)}) from a --text table (ours or Debian's)."""
    total = None
    rows = {}
    for line in out.split("\n"):
        m = re.match(r"Total: ([-\d.]+)", line)
        if m:
            total = float(m.group(1))
            continue
        m = re.match(r"\s*([-\d.]+)\s+[-\d.]+%\s+[-\d.]+%\s+([-\d.]+)\s+[-\d.]+%\s+(.*)$", line)
        if m:
            name = m.group(3).strip()
            rows[name] = (float(m.group(1)), float(m.group(2)))
    return total, rows


def find_row(rows, func):
    """The row of function func, whatever prefix (namespace) each tool puts before it."""
    for name, v in rows.items():
        if re.search(r"(^|:)%s(\s|$)" % re.escape(func), name):
            return v
    return None


# ---- a tiny protobuf reader for profile.proto -----------------------------------------------

def pb_fields(data):
    """[(field number, wire type, value)]; value is an int (varint) or bytes."""
    out = []
    i = 0
    while i < len(data):
        key, i = pb_varint(data, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            v, i = pb_varint(data, i)
        elif wire == 2:
            n, i = pb_varint(data, i)
            v = data[i:i + n]
            if len(v) != n:
                raise ValueError("truncated field %d" % field)
            i += n
        elif wire == 1:
            v, i = int.from_bytes(data[i:i + 8], "little"), i + 8
        elif wire == 5:
            v, i = int.from_bytes(data[i:i + 4], "little"), i + 4
        else:
            raise ValueError("wire type %d" % wire)
        out.append((field, wire, v))
    return out


def pb_varint(data, i):
    v = shift = 0
    while True:
        if i >= len(data):
            raise ValueError("truncated varint")
        b = data[i]
        i += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return v, i


def pb_ints(wire, v):
    """A repeated integer field: packed (bytes) or one varint."""
    if wire == 0:
        vals = [v]
    else:
        vals, i = [], 0
        while i < len(v):
            x, i = pb_varint(v, i)
            vals.append(x)
    return [x - (1 << 64) if x >= 1 << 63 else x for x in vals]


def decode_profile(blob):
    """The parts of a Profile message the checks use."""
    prof = {"sample_type": [], "samples": [], "locations": {}, "functions": {}, "mappings": {},
            "strings": [], "period": 0, "period_type": None, "default": 0}
    for field, wire, v in pb_fields(gzip.decompress(blob)):
        if field == 1:
            d = {f: x for f, _, x in pb_fields(v)}
            prof["sample_type"].append((d.get(1, 0), d.get(2, 0)))
        elif field == 2:
            locs, vals = [], []
            for f, w, x in pb_fields(v):
                if f == 1:
                    locs += pb_ints(w, x)
                elif f == 2:
                    vals += pb_ints(w, x)
            prof["samples"].append((locs, vals))
        elif field == 3:
            d = {f: x for f, _, x in pb_fields(v)}
            prof["mappings"][d.get(1, 0)] = d
        elif field == 4:
            d, lines = {}, []
            for f, _, x in pb_fields(v):
                if f == 4:
                    ld = {g: y for g, _, y in pb_fields(x)}
                    lines.append((ld.get(1, 0), ld.get(2, 0)))
                else:
                    d[f] = x
            d["lines"] = lines
            prof["locations"][d.get(1, 0)] = d
        elif field == 5:
            d = {f: x for f, _, x in pb_fields(v)}
            prof["functions"][d.get(1, 0)] = d
        elif field == 6:
            prof["strings"].append(v.decode("utf-8"))
        elif field == 11:
            prof["period_type"] = {f: x for f, _, x in pb_fields(v)}
        elif field == 12:
            prof["period"] = v
        elif field == 14:
            prof["default"] = v
    return prof


def proto_problems(prof):
    """Structural errors in a decoded Profile (empty list when sound)."""
    errs = []
    s = prof["strings"]
    if not s or s[0] != "":
        errs.append("string_table[0] is not empty")
    types = [s[t] + "/" + s[u] for t, u in prof["sample_type"]]
    if types != ["alloc_objects/count", "alloc_space/bytes", "inuse_objects/count",
                 "inuse_space/bytes"]:
        errs.append("sample types %s" % types)
    for locs, vals in prof["samples"]:
        if len(vals) != len(types):
            errs.append("sample with %d values" % len(vals))
        for lid in locs:
            if lid not in prof["locations"]:
                errs.append("location %d missing" % lid)
    for loc in prof["locations"].values():
        if loc.get(2, 0) and loc[2] not in prof["mappings"]:
            errs.append("mapping %d missing" % loc[2])
        for fid, _ in loc["lines"]:
            if fid not in prof["functions"]:
                errs.append("function %d missing" % fid)
    for fn in prof["functions"].values():
        if fn.get(2, 0) >= len(s):
            errs.append("function name index out of range")
    return errs[:5]


def proto_leaf_totals(prof, index):
    """{leaf function name: sum of value[index]} (the innermost line of the first location)."""
    s = prof["strings"]
    out = {}
    for locs, vals in prof["samples"]:
        name = "[allocator]"
        if locs and prof["locations"][locs[0]]["lines"]:
            fid = prof["locations"][locs[0]]["lines"][0][0]
            name = s[prof["functions"][fid].get(2, 0)]
        out[name] = out.get(name, 0) + vals[index]
    return out


# ---- part 1: committed fixtures ---------------------------------------------------------------

def close(a, b, rel=0.001, absolute=1.0):
    return abs(a - b) <= max(absolute, rel * max(abs(a), abs(b)))


def fixtures(tmp):
    dump = os.path.join(DATA, "known_allocs.heap")
    before = os.path.join(DATA, "base_before.heap")
    after = os.path.join(DATA, "base_after.heap")
    objs, size = heap_totals(dump)

    rc, out, err = jeprof("--text", "--show_bytes", dump)
    total, rows = parse_text(out)
    check("fixture --text --show_bytes total is the unsampled sum", rc == 0 and total is not None
          and close(total, size), "rc=%d total=%s expected=%.0f %s" % (rc, total, size, err))
    rc, out, _ = jeprof("--text", dump)
    total_mb, _ = parse_text(out)
    check("fixture --text total in MB", rc == 0 and total_mb is not None and
          abs(total_mb - size / 1048576) <= 0.05, "total=%s" % total_mb)
    rc, out, _ = jeprof("--text", "--inuse_objects", dump)
    total_o, _ = parse_text(out)
    check("fixture --inuse_objects total", rc == 0 and total_o is not None and
          close(total_o, objs, absolute=len(rows) + 1), "total=%s expected=%.0f" %
          (total_o, objs))
    rc, out, _ = jeprof("--text", "--alloc_space", dump)
    total_a, _ = parse_text(out)
    check("fixture --alloc_space is 0 without prof_accum", rc == 0 and total_a == 0.0,
          "total=%s" % total_a)

    rc, out, _ = jeprof("--collapsed", dump)
    lines = [ln for ln in out.split("\n") if ln]
    csum = sum(int(ln.rsplit(" ", 1)[1]) for ln in lines) if rc == 0 else 0
    check("fixture --collapsed lines sum to the total", rc == 0 and close(csum, size,
          absolute=len(lines)), "sum=%d expected=%.0f" % (csum, size))

    out_pb = os.path.join(tmp, "fixture.pb.gz")
    rc, _, err = jeprof("--proto=" + out_pb, dump)
    if check("fixture --proto writes a file", rc == 0 and os.path.exists(out_pb), err):
        with open(out_pb, "rb") as f:
            prof = decode_profile(f.read())
        errs = proto_problems(prof)
        check("fixture --proto is a sound profile.proto", not errs, "; ".join(errs))
        inuse = sum(v[3] for _, v in prof["samples"])
        check("fixture --proto inuse_space sums to the total", close(inuse, size,
              absolute=len(prof["samples"])), "sum=%d expected=%.0f" % (inuse, size))
        s = prof["strings"]
        check("fixture --proto period and types", prof["period"] == 4096 and
              s[prof["default"]] == "inuse_space" and prof["period_type"] is not None and
              s[prof["period_type"][1]] == "space", "period=%d" % prof["period"])
    rc, blob, _ = jeprof("--proto", dump, binary=True)
    check("fixture --proto to stdout", rc == 0 and blob[:2] == b"\x1f\x8b", "rc=%d" % rc)

    rc, out, _ = jeprof("--text", "--base=" + dump, dump)
    total, _ = parse_text(out)
    check("fixture --base of itself is empty", rc == 0 and total == 0.0, "total=%s" % total)
    rc, out, _ = jeprof("--text", "--show_bytes", "--base=" + before, after)
    total, _ = parse_text(out)
    expected = heap_totals(after)[1] - heap_totals(before)[1]
    check("fixture --base is the difference of totals", rc == 0 and total is not None and
          close(total, expected, absolute=64), "total=%s expected=%.0f" % (total, expected))
    rc, out, _ = jeprof("--text", "--show_bytes", dump, dump)
    total, _ = parse_text(out)
    check("fixture two profiles add up", rc == 0 and total is not None and
          close(total, 2 * size), "total=%s" % total)

    rc, out, _ = jeprof("--dot", dump)
    check("fixture --dot is a digraph", rc == 0 and out.startswith("digraph") and
          out.rstrip().endswith("}"), out[:80])
    rc, out, _ = jeprof("--text", "--nodecount=3", dump)
    nrows = len(parse_text(out)[1])
    check("fixture --nodecount=3 keeps 3 rows", rc == 0 and nrows == 3, "rows=%d" % nrows)

    # Bad input: a readable message, the documented exit status, never a traceback.
    garbage = os.path.join(tmp, "garbage.heap")
    with open(garbage, "w") as f:
        f.write("this is not a heap profile\n")
    with open(dump) as f:
        text = f.read()
    badaddr = os.path.join(tmp, "badaddr.heap")
    with open(badaddr, "w") as f:
        f.write("\n".join(text.split("\n")[:6]) + "\n@ 0xzz 0x1\n  t*: 1: 2 [0: 0]\n")
    truncated = os.path.join(tmp, "truncated.heap")
    with open(truncated, "w") as f:  # cut inside a count line: that backtrace counts 0
        f.write(text[:text.index("@", text.index("@") + 1) + 60])
    empty = os.path.join(tmp, "empty.heap")
    open(empty, "w").close()
    cases = [
        ("missing profile", [os.path.join(tmp, "nope.heap")], 1, "cannot read"),
        ("not a heap_v2 file", [garbage], 1, "not a heap_v2 profile"),
        ("empty file", [empty], 1, "not a heap_v2 profile"),
        ("bad address line", [badaddr], 1, "bad address"),
        ("unknown option", ["--frobnicate", dump], 2, "unknown option"),
        ("two outputs", ["--text", "--dot", dump], 2, "choose one"),
        ("no profile", ["--text"], 2, "no profile"),
        ("bad --nodecount", ["--nodecount=x", dump], 2, "positive number"),
        ("missing program", [os.path.join(tmp, "noprog"), dump], 1, "not found"),
    ]
    for name, args, want, text in cases:
        rc, out, err = jeprof(*args)
        check("error: " + name, rc == want and text in err and "Traceback" not in err and
              err.startswith("jeprof: "), "rc=%d err=%r" % (rc, err[:200]))
    rc, out, err = jeprof("--text", truncated)
    check("truncated dump (no map) still reads", rc == 0 and "Total:" in out and
          "Traceback" not in err, "rc=%d err=%r" % (rc, err[:200]))
    env = dict(os.environ, PATH=os.path.join(tmp, "empty-path"))
    rc, out, err = run([sys.executable, JEPROF, "--text", dump], env=env)
    check("no binutils on PATH: a warning, then addresses", rc == 0 and "Total:" in out and
          "'nm' not found on PATH" in err and "Traceback" not in err, err)
    rc, out, err = run([sys.executable, JEPROF, "--svg", dump], env=env)
    check("error: --svg without graphviz", rc == 1 and "needs graphviz" in err and
          "Traceback" not in err, err)
    rc, out, _ = jeprof("--version")
    check("--version", rc == 0 and out.startswith("jeprof"), out)
    rc, out, _ = jeprof("--help")
    check("--help", rc == 0 and "--proto" in out and "--collapsed" in out, out[:80])


# ---- part 2: generated dumps with known contents ----------------------------------------------

def make_dump(lib, tmp, tag, base=False, accum=False, program=None):
    """Run known_allocs under lib; (truth dict, dump path(s)) or (None, reason).  The truth
    maps a function to (live bytes, live objects); with accum, to what it allocated."""
    env = dict(os.environ)
    env["LD_PRELOAD"] = lib
    env["MALLOC_CONF"] = "prof:true,lg_prof_sample:12" + (",prof_accum:true" if accum else "")
    path = os.path.join(tmp, tag + (".base" if base else "") + (".accum" if accum else "") +
                        ".heap")
    rc, out, err = run([program or KNOWN, path] + (["base"] if base else []), env=env)
    if rc != 0:
        return None, "known_allocs exited %d: %s" % (rc, err.strip().split("\n")[-1])
    truth = {}
    for line in out.split("\n"):
        parts = line.split()
        if len(parts) == 4 and parts[0] == ("allocated" if accum else "truth"):
            truth[parts[1]] = (int(parts[2]), int(parts[3]))
    return truth, ([path, path + ".2"] if base else path)


def within(value, want):
    return value is not None and abs(value - want) <= TOLERANCE * want


def known(lib, tmp):
    tag = "ours" if lib != DEBIAN_LIB else "5.3.0"
    truth, dump = make_dump(lib, tmp, tag.replace(".", "_"))
    if truth is None:
        report("SKIP", "[%s] known_allocs dump" % tag, dump)
        return
    live = {k: v for k, v in truth.items() if v[0] > 0}
    t = "[%s] " % tag

    rc, out, err = jeprof("--text", "--show_bytes", "--nodecount=1000", KNOWN, dump)
    total, rows = parse_text(out)
    for func, (nbytes, _) in sorted(live.items()):
        row = find_row(rows, func)
        check(t + "--text %s within 10%%" % func, row is not None and within(row[0], nbytes),
              "flat=%s truth=%d" % (row and row[0], nbytes))
    check(t + "--text freed memory does not appear", rc == 0 and
          find_row(rows, "freed_everything") is None, "row=%s" % find_row(rows,
          "freed_everything"))
    check(t + "--text no allocator frame is a leaf", not any(
        re.search(r"(^|\s)(malloc|calloc|realloc|posix_memalign|operator new(\[\])?)$", n) or
        n.startswith("libjemalloc") for n in rows), ", ".join(sorted(rows)[:8]))
    check(t + "--text shared-object frame named (MAPPED_LIBRARIES base)",
          find_row(rows, "known_shared_alloc") is not None, ", ".join(sorted(rows)[:8]))

    rc, out, _ = jeprof("--text", "--inuse_objects", "--nodecount=1000", KNOWN, dump)
    _, orows = parse_text(out)
    for func, (_, nobjs) in sorted(live.items()):
        row = find_row(orows, func)
        check(t + "--inuse_objects %s within 10%%" % func, row is not None and
              abs(row[0] - nobjs) <= TOLERANCE * nobjs + 1, "flat=%s truth=%d" %
              (row and row[0], nobjs))

    rc, out, _ = jeprof("--text", "--lines", KNOWN, dump)
    check(t + "--lines gives source lines", rc == 0 and re.search(
        r"live_malloc_small \S*known_allocs\.cc:\d+", out) is not None, out[:300])

    rc, out, _ = jeprof("--collapsed", KNOWN, dump)
    leaves = {}
    for ln in out.split("\n"):
        if ln:
            stack, v = ln.rsplit(" ", 1)
            leaf = stack.split(";")[-1]
            leaves[leaf] = leaves.get(leaf, 0) + int(v)
    for func, (nbytes, _) in sorted(live.items()):
        got = sum(v for k, v in leaves.items() if re.search(r"(^|:)%s$" % func, k))
        check(t + "--collapsed %s within 10%%" % func, within(got, nbytes),
              "got=%d truth=%d" % (got, nbytes))
    check(t + "--collapsed stacks are root first", rc == 0 and all(
        ln.split(";")[0].startswith("_start") or "main" in ln.split(";")[:4] or
        not any(f in ln for f in live) for ln in out.split("\n") if ln), out[:300])

    rc, out, _ = jeprof("--dot", KNOWN, dump)
    check(t + "--dot names every function", rc == 0 and all(f in out for f in live),
          out[:200])
    if shutil.which("dot"):
        rc, svg, err = jeprof("--svg", KNOWN, dump)
        check(t + "--svg renders through graphviz", rc == 0 and "<svg" in svg and
              "live_malloc_small" in svg, err)
    else:
        report("SKIP", t + "--svg", "graphviz's dot is not installed")

    pb = os.path.join(tmp, tag + ".pb.gz")
    rc, _, err = jeprof("--proto=" + pb, KNOWN, dump)
    ok = check(t + "--proto", rc == 0 and os.path.exists(pb), err)
    if ok:
        with open(pb, "rb") as f:
            prof = decode_profile(f.read())
        errs = proto_problems(prof)
        check(t + "--proto is a sound profile.proto", not errs, "; ".join(errs))
        leaf = proto_leaf_totals(prof, 3)
        for func, (nbytes, _) in sorted(live.items()):
            got = sum(v for k, v in leaf.items() if re.search(r"(^|:)%s$" % func, k))
            check(t + "--proto %s within 10%%" % func, within(got, nbytes),
                  "got=%d truth=%d" % (got, nbytes))
        go = shutil.which("go")
        if go:
            env = dict(os.environ)
            env.setdefault("HOME", tmp)
            env["PPROF_TMPDIR"] = tmp
            env["GOCACHE"] = os.path.join(tmp, "gocache")
            rc, out, err = run([go, "tool", "pprof", "-top", "-nodecount=1000", KNOWN, pb],
                               env=env)
            top = {}
            for ln in out.split("\n"):
                m = re.match(r"\s*([\d.]+)([kMG]?B)\s+[\d.]+%\s+[\d.]+%\s+\S+\s+\S+\s+(.*)$",
                             ln)
                if m:
                    mult = {"B": 1, "kB": 1024, "MB": 1 << 20, "GB": 1 << 30}[m.group(2)]
                    top[m.group(3).strip()] = float(m.group(1)) * mult
            for func in sorted(live):
                mine, theirs = find_row(rows, func), find_row({k: (v, v) for k, v in
                                                               top.items()}, func)
                # pprof prints three significant digits: 1% covers its rounding.
                check(t + "go tool pprof -top: %s agrees" % func, rc == 0 and
                      mine is not None and theirs is not None and
                      close(mine[0], theirs[0], rel=0.01),
                      "rc=%d ours=%s pprof=%s %s" % (rc, mine, theirs, err[-300:]))
            top_ours = max(rows.items(), key=lambda kv: kv[1][0])[0] if rows else None
            top_pprof = max(top.items(), key=lambda kv: kv[1])[0] if top else None
            check(t + "go tool pprof -top: same top function", top_ours == top_pprof,
                  "ours=%s pprof=%s" % (top_ours, top_pprof))
        else:
            report("SKIP", t + "go tool pprof -top", "go is not installed (package golang-go)")

    if os.access(DEBIAN_JEPROF, os.X_OK):
        rc, out, err = run([DEBIAN_JEPROF, "--text", "--show_bytes", KNOWN, dump])
        dtotal, drows = parse_text(out)
        check(t + "Debian's jeprof: same total", rc == 0 and dtotal is not None and
              total is not None and close(dtotal, total, rel=0.01),
              "ours=%s debian=%s" % (total, dtotal))
        # Debian's jeprof leaves operator new frames (from a stripped libjemalloc) as leaves:
        # its cumulative column is the comparable figure there.
        for func in sorted(live):
            mine, theirs = find_row(rows, func), find_row(drows, func)
            check(t + "Debian's jeprof: %s agrees" % func, mine is not None and
                  theirs is not None and close(mine[0], theirs[1], rel=0.01),
                  "ours=%s debian=%s" % (mine, theirs))
    else:
        report("SKIP", t + "Debian's jeprof", "%s is not installed (package libjemalloc-dev)"
               % DEBIAN_JEPROF)

    nopie = KNOWN + "_nopie"
    if os.path.exists(nopie):
        truth_n, dump_n = make_dump(lib, tmp, tag.replace(".", "_") + "_nopie", program=nopie)
        rc, out, _ = jeprof("--text", "--show_bytes", nopie, dump_n)
        _, nrows = parse_text(out)
        for func, (nbytes, _) in sorted(live.items()):
            row = find_row(nrows, func)
            check(t + "non-PIE executable: %s within 10%%" % func, row is not None and
                  within(row[0], nbytes), "flat=%s truth=%d" % (row and row[0], nbytes))
    else:
        report("SKIP", t + "non-PIE executable", "%s not built" % nopie)

    truth_a, dump_a = make_dump(lib, tmp, tag.replace(".", "_"), accum=True)
    if truth_a is None:
        report("SKIP", t + "--alloc_space (prof_accum)", dump_a)
    else:
        for opt, k in (("--alloc_space", 0), ("--alloc_objects", 1)):
            rc, out, _ = jeprof("--text", "--show_bytes", opt, KNOWN, dump_a)
            _, arows = parse_text(out)
            for func, want in sorted(truth_a.items()):
                row = find_row(arows, func)
                check(t + "%s (prof_accum) %s within 10%%" % (opt, func), row is not None and
                      within(row[0], want[k]), "flat=%s truth=%d" % (row and row[0], want[k]))

    truth_b, dumps = make_dump(lib, tmp, tag.replace(".", "_"), base=True)
    if truth_b is None:
        report("SKIP", t + "--base", dumps)
        return
    before, after = dumps
    rc, out, _ = jeprof("--text", "--show_bytes", "--base=" + before, KNOWN, after)
    _, brows = parse_text(out)
    for func, (nbytes, _) in sorted(live.items()):
        row = find_row(brows, func)
        check(t + "--base %s within 10%%" % func, row is not None and within(row[0], nbytes),
              "flat=%s truth=%d" % (row and row[0], nbytes))


def synthetic(tmp):
    """Pruning of our library's frames, on a dump written here: known_allocs's own functions
    (one in namespace je::) at a chosen load address, and a libjemalloc.so.2 mapping."""
    if not os.path.exists(KNOWN) or not shutil.which("nm") or not shutil.which("readelf"):
        report("SKIP", "synthetic dump (pruning of je:: frames)",
               "needs known_allocs, nm and readelf")
        return
    syms = {}
    for line in run(["nm", "-C", "--defined-only", KNOWN])[1].split("\n"):
        parts = line.split(" ", 2)
        if len(parts) == 3 and parts[1] in "Tt":
            name = re.sub(r" \[clone [^\]]*\]", "", parts[2])
            if name.endswith(")"):
                name = name[:name.rfind("(")]
            syms[name] = int(parts[0], 16)
    text = None
    for line in run(["readelf", "-lW", KNOWN])[1].split("\n"):
        m = re.match(r"\s*LOAD\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+\S+\s+\S+\s+0x([0-9a-f]+)"
                     r"\s+R E", line)
        if m:
            text = [int(x, 16) for x in m.groups()]
    need = ["je::jeprof_test_internal_frame", "(anonymous namespace)::live_malloc_small",
            "(anonymous namespace)::live_calloc_pages", "main"]
    if text is None or any(n not in syms for n in need):
        check("synthetic dump: symbols of known_allocs", False, "text=%s syms=%s" %
              (text, [n for n in need if n not in syms]))
        return
    p_offset, p_vaddr, p_memsz = text
    base = 0x555555600000  # where the text segment is "mapped"; its file offset is p_offset
    lib = 0x7f0000000000

    def pc(name):
        return base + syms[name] - p_vaddr + 8

    dump = os.path.join(tmp, "synthetic.heap")
    with open(dump, "w") as f:
        f.write("heap_v2/1\n  t*: 2: 12288 [0: 0]\n  t0: 2: 12288 [0: 0]\n")
        f.write("@ 0x%x 0x%x 0x%x 0x%x\n  t*: 1: 4096 [0: 0]\n" % (
            lib + 0x1234, pc("je::jeprof_test_internal_frame"),
            pc("(anonymous namespace)::live_malloc_small"), pc("main")))
        f.write("@ 0x%x 0x%x 0x%x\n  t*: 1: 8192 [0: 0]\n\nMAPPED_LIBRARIES:\n" % (
            lib + 0x2000, pc("(anonymous namespace)::live_calloc_pages"), pc("main")))
        f.write("%x-%x r-xp %08x fe:00 1 %s\n" % (base, base + p_memsz + 0x1000, p_offset,
                                                   KNOWN))
        # Absent object: labelled by file offset (0x1234 into a mapping of offset 0x9000).
        f.write("%x-%x r-xp 00009000 fe:00 2 /nonexistent/libjemalloc.so.2\n" % (
            lib, lib + 0x100000))
    rc, out, err = jeprof("--text", "--show_bytes", KNOWN, dump)
    total, rows = parse_text(out)
    check("synthetic dump: je:: and libjemalloc frames pruned", rc == 0 and
          find_row(rows, "live_malloc_small") == (4096, 4096) and
          find_row(rows, "live_calloc_pages") == (8192, 8192) and
          not any("je::" in n or "libjemalloc" in n for n in rows), out + err)
    rc, out, err = jeprof("--text", "--show_bytes", "--no_prune", KNOWN, dump)
    total, rows = parse_text(out)
    check("synthetic dump: --no_prune keeps them", rc == 0 and
          find_row(rows, "jeprof_test_internal_frame") == (0, 4096) and
          rows.get("libjemalloc.so.2+0xa234", (0, 0))[0] == 4096, out + err)


def gdump(lib, tmp):
    """known_allocs under prof_gdump:true: .u<n>.heap files, readable by both jeprofs."""
    tag = "ours" if lib != DEBIAN_LIB else "5_3_0"
    t = "[%s] gdump: " % tag
    stem = "gd_" + tag
    env = dict(os.environ)
    env["LD_PRELOAD"] = lib
    env["MALLOC_CONF"] = ("prof:true,lg_prof_sample:12,prof_gdump:true,prof_prefix:" +
                          os.path.join(tmp, stem))
    rc, _, err = run([KNOWN, os.path.join(tmp, stem + ".m.heap")], env=env)
    if rc != 0:
        report("SKIP", t + "known_allocs", "exited %d: %s" % (rc, err.strip()[-200:]))
        return
    dumps = []
    for name in os.listdir(tmp):
        m = re.match(re.escape(stem) + r"\.(\d+)\.(\d+)\.u(\d+)\.heap$", name)
        if m:
            dumps.append((int(m.group(2)), int(m.group(3)), os.path.join(tmp, name)))
    dumps.sort()
    ns = [n for _, n, _ in dumps]
    check(t + "u<n> numbered 0, 1, 2, ... in seq order", ns and ns == list(range(len(ns))),
          "n=%s" % ns)
    if not dumps:
        return
    last = dumps[-1][2]
    rc, out, err = jeprof("--text", "--show_bytes", KNOWN, last)
    total, _ = parse_text(out)
    check(t + "bin/jeprof reads the last one", rc == 0 and total is not None and total > 0,
          err[-200:])
    if os.access(DEBIAN_JEPROF, os.X_OK):
        rc, out, err = run([DEBIAN_JEPROF, "--text", "--show_bytes", KNOWN, last])
        dtotal, _ = parse_text(out)
        check(t + "Debian's jeprof reads it, same total", rc == 0 and dtotal is not None and
              total is not None and close(dtotal, total, rel=0.01),
              "ours=%s debian=%s" % (total, dtotal))
    else:
        report("SKIP", t + "Debian's jeprof", "%s not installed" % DEBIAN_JEPROF)


def main():
    if not os.path.exists(JEPROF):
        print("FAIL: %s missing (make builds it from bin/jeprof.in)" % JEPROF)
        return 1
    with tempfile.TemporaryDirectory(prefix="jeprof_test.") as tmp:
        fixtures(tmp)
        synthetic(tmp)
        if not os.path.exists(KNOWN):
            report("SKIP", "known_allocs", "%s not built" % KNOWN)
        else:
            for lib in LIBS:
                if os.path.exists(lib):
                    known(lib, tmp)
                    gdump(lib, tmp)
                else:
                    report("SKIP", "known_allocs under %s" % lib, "not installed")
    print("jeprof_test: %d passed, %d failed, %d skipped" %
          (results["PASS"], results["FAIL"], results["SKIP"]))
    if results["FAIL"]:
        return 1
    return 0 if results["PASS"] else 77


if __name__ == "__main__":
    sys.exit(main())
