#!/usr/bin/env python3
"""A relay ring of N processes (default 64) in plain Python, timing each relay's own `sendto`:
python3 bench/relay_ring.py [N]; `taskset -c 0 python3 bench/relay_ring.py` puts every process on
one CPU. Prints the median `sendto` of one relay and the median hop over 190 laps, in
microseconds (docs/cost.md, "The hop taken apart with a step clock")."""
import os, socket, statistics, sys, time

n, laps = int(sys.argv[1]) if len(sys.argv) > 1 else 64, 200
socks = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(n)]
for s in socks:
    s.bind(("127.0.0.1", 0))
addrs = [s.getsockname() for s in socks]
children = []
for i in range(1, n):
    pid = os.fork()
    if pid == 0:
        me, nxt, took = socks[i], addrs[(i + 1) % n], []
        while True:
            b = me.recv(100)
            t = time.perf_counter_ns()
            me.sendto(b, nxt)
            took.append(time.perf_counter_ns() - t)
            if b == b"stop":
                if i == 1:
                    print(f"sendto: median {statistics.median(took[10:]) / 1000:.1f} us")
                os._exit(0)
    children.append(pid)
first, lap = socks[0], []
for _ in range(laps):
    t = time.perf_counter_ns()
    first.sendto(b"x" * 64, addrs[1])
    first.recv(100)
    lap.append(time.perf_counter_ns() - t)
first.sendto(b"stop", addrs[1])
first.recv(100)
for pid in children:
    os.waitpid(pid, 0)
print(f"hop: median {statistics.median(lap[10:]) / n / 1000:.1f} us over {laps - 10} laps")
