"""alloc_heavy.py: an allocation-heavy, deterministic Python workload for
test/preload/python.sh.  Builds and tears down dicts, lists, strings,
bytearrays and nested structures, and prints a digest of everything it
computed, so that a run with the library under test can be compared with a
run without it.  Run with PYTHONHASHSEED=0 (set and object order fixed) and,
to send every object allocation to malloc, PYTHONMALLOC=malloc."""

import hashlib
import json
import random
import sys


def main():
    scale = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    rng = random.Random(20240501)
    digest = hashlib.sha256()

    def feed(obj):
        digest.update(repr(obj).encode())

    # 1. A dict of strings and lists that grows, is partly deleted, regrows.
    table = {}
    for i in range(60000 * scale):
        key = "k%06d-%s" % (i, "x" * (i % 41))
        table[key] = [i, str(i) * (i % 17), {"n": i, "s": key[::-1]}]
        if i % 3 == 2:
            victim = "k%06d-%s" % (i // 2, "x" * ((i // 2) % 41))
            table.pop(victim, None)
    feed(len(table))
    feed(sorted(table)[:50])
    total = 0
    for key, value in table.items():
        total += value[0] + len(value[1]) + len(value[2]["s"])
    feed(total)
    del table

    # 2. Strings: concatenation, joins, splits, formatting, replace.
    parts = []
    for i in range(40000 * scale):
        word = "".join(chr(97 + (i * 7 + j) % 26) for j in range(1 + i % 23))
        parts.append(word.upper() if i % 5 == 0 else word)
    text = " ".join(parts)
    feed(len(text))
    feed(text.count("abc"))
    pieces = text.split("e")
    feed(len(pieces))
    feed(sum(len(p) for p in pieces[::97]))
    rebuilt = "E".join(pieces).replace("XYZ", "--").lower()
    feed(hashlib.md5(rebuilt.encode()).hexdigest())
    del parts, text, pieces, rebuilt

    # 3. Lists of tuples: sort, slice, comprehensions.
    rows = [(rng.randrange(1000000), rng.random(), "r%d" % i) for i in range(150000 * scale)]
    rows.sort()
    feed(rows[:20])
    feed(rows[-20:])
    evens = [r for r in rows if r[0] % 2 == 0]
    feed(len(evens))
    squares = {r[2]: r[0] * r[0] for r in rows[::7]}
    feed(sum(squares.values()) % 1000000007)
    del rows, evens, squares

    # 4. bytearray growth (realloc chains) and bytes slicing.
    buf = bytearray()
    for i in range(200000 * scale):
        buf += bytes((i % 251,)) * (1 + i % 9)
        if i % 10000 == 0:
            del buf[: len(buf) // 3]
    feed(len(buf))
    feed(hashlib.sha1(bytes(buf)).hexdigest())
    del buf

    # 5. Nested structures through JSON (many short-lived objects).
    doc = {"items": [{"id": i, "tags": ["t%d" % (i % 13), "u%d" % (i % 7)],
                      "v": [j * 0.5 for j in range(i % 11)]}
                     for i in range(30000 * scale)]}
    encoded = json.dumps(doc, sort_keys=True)
    decoded = json.loads(encoded)
    feed(len(encoded))
    feed(decoded["items"][12345 % len(decoded["items"])])
    del doc, encoded, decoded

    # 6. Sets and frozensets (order fixed by PYTHONHASHSEED=0).
    s = set()
    for i in range(100000 * scale):
        s.add((i * 2654435761) % 1000003)
        if i % 4 == 0:
            s.discard((i * 40503) % 1000003)
    feed(len(s))
    feed(sum(sorted(s)[:1000]))

    print("alloc_heavy: %s" % digest.hexdigest())


if __name__ == "__main__":
    main()
