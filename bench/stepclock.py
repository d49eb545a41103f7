#!/usr/bin/env python3
"""Medians of a run made with bench/stepclock.patch applied (see its opening lines):
python3 bench/stepclock.py DIR/latest. Row 0 is each node's first step with a datagram (on a
ring of 64 with --initiators 64, the ELECTION), row 1 its second (the ELECTED). Hops are taken
from node k to node k+1, k = 1..62, in microseconds."""
import glob, re, statistics, sys

run = sys.argv[1]
steps, opens, allocs, stamps = {}, {}, {}, {}
for path in glob.glob(run + "/node-*.log"):
    node = int(re.search(r"node-(\d+)\.log$", path).group(1))
    for line in open(path):
        m = re.match(r"(STEP|OPEN|ALLOC|ABS) row(\d+): (.*)", line)
        if not m:
            continue
        kind, row, rest = m.group(1), int(m.group(2)), m.group(3)
        if kind == "ABS":
            stamps[(node, row)] = [int(x) for x in rest.strip("[]").split(",")]
            continue
        parts = rest.replace("|", "").split()
        pairs = {parts[i]: int(parts[i + 1]) for i in range(0, len(parts), 2)}
        if kind == "ALLOC":
            allocs.setdefault(row, []).append(pairs["deliver+trace"])
        else:
            target = steps if kind == "STEP" else opens
            target.setdefault(row, []).append({k: v / 10 for k, v in pairs.items()})

med = statistics.median
for row in (0, 1):
    hop, wake, recv, work = [], [], [], []
    for k in range(1, 63):
        s, r = stamps.get((k, row)), stamps.get((k + 1, row))
        if not s or not r:
            continue
        hop.append((r[1] - s[1]) / 1000)
        wake.append((r[0] - s[3]) / 1000)
        recv.append((r[1] - r[0]) / 1000)
        work.append((r[3] - r[1]) / 1000)
    if hop:
        print(f"row {row}: hop {med(hop):.1f}; before the send to the next poll's return {med(wake):.1f}; "
              f"recvmmsg {med(recv):.1f}; received to about to send {med(work):.1f}")
    for name, table in (("step", steps), ("open", opens)):
        if table.get(row):
            keys = table[row][0].keys()
            print(f"  {name}: " + "  ".join(f"{k} {med(d[k] for d in table[row]):.1f}" for k in keys))
    if allocs.get(row):
        print(f"  allocations before the send: median {med(allocs[row])}")
