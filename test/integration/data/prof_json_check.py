#!/usr/bin/env python3
"""Checks the JSON that prof_recent_test's children made the library write.

Usage: prof_json_check.py CHECK FILE [site.NAME=ADDR ...] [pid=N] [prev=FILE]

CHECK names what FILE must show (see the functions below). site.NAME=ADDR are call sites the
child printed: an address inside function NAME; a frame belongs to NAME when the nearest site
at or below it is NAME's and lies within 512 bytes. Exit status 0 when every check holds, 1
with the reasons on stdout otherwise.
"""
import json
import sys

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
    return cond


def owner(frame, sites):
    best = None
    for name, addr in sites.items():
        if addr <= frame and frame - addr < 512 and (best is None or addr > sites[best]):
            best = name
    return best


def trace_has(trace, name, sites):
    return any(owner(int(f, 16), sites) == name for f in trace)


def frames_ok(trace):
    return isinstance(trace, list) and all(
        isinstance(f, str) and f.startswith("0x") and int(f, 16) > 0 for f in trace)


def first(records, **want):
    for i, r in enumerate(records):
        if all(r.get(k) == v for k, v in want.items()):
            return i, r
    return None, None


KEYS_ALLOC = ["size", "usize", "released", "alloc_thread_uid", "alloc_time", "alloc_trace"]


def recent_common(doc, want_max):
    check(set(doc) == {"sample_interval", "recent_alloc_max", "recent_alloc"},
          "top-level keys %s" % sorted(doc))
    check(doc.get("sample_interval") == 1, "sample_interval %r" % doc.get("sample_interval"))
    check(doc.get("recent_alloc_max") == want_max,
          "recent_alloc_max %r, want %r" % (doc.get("recent_alloc_max"), want_max))
    recs = doc.get("recent_alloc", [])
    for r in recs:
        for k in KEYS_ALLOC:
            check(k in r, "record without %s: %r" % (k, r))
        check(frames_ok(r.get("alloc_trace")), "bad alloc_trace %r" % r.get("alloc_trace"))
        dkeys = [k for k in r if k.startswith("dalloc_")]
        if dkeys:
            check(r.get("released") is True, "dalloc keys on a live record %r" % r)
            check(frames_ok(r.get("dalloc_trace")), "bad dalloc_trace %r" % r)
            check(r["dalloc_time"] >= r["alloc_time"], "freed before allocated %r" % r)
    if want_max > 0:
        check(len(recs) <= want_max, "%d records over the limit %d" % (len(recs), want_max))
    return recs


def recent(doc, sites, facts):
    recs = recent_common(doc, 8)
    i1, r1 = first(recs, size=1000)
    i2, r2 = first(recs, size=70000)
    i3, r3 = first(recs, size=100)
    i4, r4 = first(recs, size=5000)
    if not (check(None not in (r1, r2, r3, r4), "a known allocation is missing: %r" % recs)):
        return
    check(i1 < i2 < i3 < i4, "records not oldest first")
    main = r1["alloc_thread_uid"]
    # Freed in the allocating (main) thread, from free_main.
    check(r1["usize"] == 1024 and r1["released"] is True, "1000: %r" % r1)
    check(trace_has(r1["alloc_trace"], "alloc_main", sites), "1000: alloc trace %r" % r1)
    check(r1.get("dalloc_thread_uid") == main, "1000: freeing thread %r" % r1)
    check("alloc_thread_name" not in r1, "unnamed main thread has a name: %r" % r1)
    check(trace_has(r1.get("dalloc_trace", []), "free_main", sites), "1000: free trace %r" % r1)
    # Allocated by main, freed by the named worker.
    check(r2["usize"] == 81920 and r2["released"] is True, "70000: %r" % r2)
    check(r2["alloc_thread_uid"] == main, "70000: allocating thread %r" % r2)
    check(r2.get("dalloc_thread_uid") not in (None, main), "70000: freeing thread %r" % r2)
    check(r2.get("dalloc_thread_name") == "rc_worker", "70000: freeing thread name %r" % r2)
    check(trace_has(r2.get("dalloc_trace", []), "free_in_thread", sites),
          "70000: free trace %r" % r2)
    # Live.
    check(r3["usize"] == 112 and r3["released"] is False, "100: %r" % r3)
    check(not any(k.startswith("dalloc_") for k in r3), "100: dalloc keys %r" % r3)
    check(trace_has(r3["alloc_trace"], "alloc_main", sites), "100: alloc trace %r" % r3)
    check(r4["usize"] == 5120 and r4["released"] is False, "5000: %r" % r4)
    check(r4.get("alloc_thread_name") == "rc_worker", "5000: thread name %r" % r4)
    check(r4["alloc_thread_uid"] == r2.get("dalloc_thread_uid"), "5000: thread uid %r" % r4)
    check(trace_has(r4["alloc_trace"], "alloc_in_thread", sites), "5000: alloc trace %r" % r4)


def ident(r):
    return (r["size"], r["usize"], r["alloc_thread_uid"], r["alloc_time"], tuple(r["alloc_trace"]))


def recent_shrunk(doc, sites, facts):
    recs = recent_common(doc, 2)
    with open(facts["prev"]) as f:
        prev = json.load(f)["recent_alloc"]
    check([ident(r) for r in recs] == [ident(r) for r in prev[-2:]],
          "after shrinking to 2: %r, before: %r" % (recs, prev))


def recent_empty(doc, sites, facts):
    check(recent_common(doc, 0) == [], "records with the limit at 0")


def recent_hooked(doc, sites, facts):
    recs = recent_common(doc, 8)
    _, r = first(recs, size=3000)
    if check(r is not None, "no 3000-byte record: %r" % recs):
        check(r["alloc_trace"] == ["0x1234", "0x5678"], "hooked alloc trace %r" % r)
        check(r["released"] is True and r.get("dalloc_trace") == ["0x1234", "0x5678"],
              "hooked free trace %r" % r)


def log_common(doc, facts):
    check(list(doc) == ["info", "threads", "stack_traces", "allocations"],
          "top-level keys %r" % list(doc))
    info = doc.get("info", {})
    check(list(info) == ["duration", "version", "lg_sample_rate", "prof_time_resolution", "pid"],
          "info keys %r" % list(info))
    check(isinstance(info.get("duration"), int) and info["duration"] >= 0, "duration %r" % info)
    check(str(info.get("version", "")).startswith("5.3.0"), "version %r" % info)
    check(info.get("lg_sample_rate") == 0, "lg_sample_rate %r" % info)
    check(info.get("prof_time_resolution") == "default", "prof_time_resolution %r" % info)
    if "pid" in facts:
        check(info.get("pid") == int(facts["pid"]), "pid %r, child %s" % (info, facts["pid"]))
    threads, traces, allocs = doc["threads"], doc["stack_traces"], doc["allocations"]
    uids = [t["thr_uid"] for t in threads]
    check(len(set(uids)) == len(uids), "a thread listed twice: %r" % threads)
    check(all(isinstance(t["thr_name"], str) for t in threads), "thr_name %r" % threads)
    check(all(frames_ok(t) for t in traces), "stack_traces %r" % traces)
    for a in allocs:
        check(list(a) == ["alloc_thread", "free_thread", "alloc_trace", "free_trace",
                          "alloc_timestamp", "free_timestamp", "usize"], "keys %r" % a)
        check(0 <= a["alloc_thread"] < len(threads) and 0 <= a["free_thread"] < len(threads),
              "thread index %r" % a)
        check(0 <= a["alloc_trace"] < len(traces) and 0 <= a["free_trace"] < len(traces),
              "trace index %r" % a)
        check(a["alloc_timestamp"] <= a["free_timestamp"], "freed before allocated %r" % a)
    return threads, traces, allocs


def log_pair(allocs, traces, usize, sites, alloc_fn, free_fn, minimum=1):
    found = [a for a in allocs if a["usize"] == usize
             and trace_has(traces[a["alloc_trace"]], alloc_fn, sites)
             and trace_has(traces[a["free_trace"]], free_fn, sites)]
    check(len(found) >= minimum, "%d logged %d-byte blocks from %s freed in %s (want %d): %r"
          % (len(found), usize, alloc_fn, free_fn, minimum, allocs))
    return found


def log(doc, sites, facts):
    threads, traces, allocs = log_common(doc, facts)
    for a in log_pair(allocs, traces, 4096, sites, "alloc_log", "free_log"):
        check(a["alloc_thread"] == a["free_thread"], "4096: threads %r" % a)
    # Allocated before log_start, freed by the named worker while the log ran.
    cross = [a for a in allocs if a["usize"] == 32768]
    if check(len(cross) == 1, "32768-byte frees logged: %r" % cross):
        a = cross[0]
        check(a["alloc_thread"] != a["free_thread"], "32768: same thread %r" % a)
        check(threads[a["free_thread"]]["thr_name"] == "lg_worker", "32768: %r" % threads)
        check(trace_has(traces[a["free_trace"]], "free_in_thread", sites), "32768: free trace")
    # Still live at log_stop.
    check(not any(a["usize"] == 2048 for a in allocs), "a live block is in the log")


def log_small(doc, sites, facts):
    _, traces, allocs = log_common(doc, facts)
    log_pair(allocs, traces, 512, sites, "alloc_log", "free_log")


def log_at_exit(doc, sites, facts):
    _, traces, allocs = log_common(doc, facts)
    log_pair(allocs, traces, 1024, sites, "alloc_log", "free_log", minimum=4)


def valid(doc, sites, facts):
    check(isinstance(doc, dict) and doc, "not a JSON object: %.200r" % doc)


CHECKS = {f.__name__: f for f in (recent, recent_shrunk, recent_empty, recent_hooked, log,
                                  log_small, log_at_exit, valid)}


def main():
    check_name, path = sys.argv[1], sys.argv[2]
    sites, facts = {}, {}
    for arg in sys.argv[3:]:
        key, _, val = arg.partition("=")
        if key.startswith("site."):
            sites[key[5:]] = int(val)
        else:
            facts[key] = val
    with open(path) as f:
        text = f.read()
    try:
        doc = json.loads(text)
    except ValueError as e:
        print("%s: not JSON (%s): %.400s" % (path, e, text))
        return 1
    CHECKS[check_name](doc, sites, facts)
    for f in failures:
        print("%s [%s]: %.600s" % (path, check_name, f))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
