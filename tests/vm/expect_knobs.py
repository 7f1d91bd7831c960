#!/usr/bin/env python3
"""The knob mapping of issue 3, written again independently of agent/knobs.c:
reads `drfctl plan --json` on stdin and prints "TENANT FILE VALUE" lines of what
cgroupfs must hold. Arguments: MODE DEVICE(MAJ:MIN) and DECL entries
TENANT:RES=BYTES for the demands each tenant declared (undeclared: none)."""
import json
import math
import sys

mode, dev = sys.argv[1], sys.argv[2]
declared = {}
for d in sys.argv[3:]:
    t, kv = d.split(":", 1)
    k, v = kv.split("=")
    declared.setdefault(t, {})[k] = float(v)
plan = json.load(sys.stdin)
cap = plan["capacity"]
tenants = plan["tenants"]
page = 4096


def rnd(x):
    return int(math.floor(x + 0.5))


def mem(x):
    return str(int(x) // page * page)


cpu_max = max(t["alloc"].get("cpu", 0) for t in tenants)
for t in tenants:
    n, a = t["name"], t["alloc"]
    need = {r: (t["demand"][r] is None or t["demand"][r] > 0) for r in t["demand"]}
    out = {}
    if "cpu" in cap:
        if mode == "share":
            out["cpu.weight"] = str(min(10000, max(1, rnd(a["cpu"] / cpu_max * 10000))))
            out["cpu.max"] = "max 100000"
        else:
            out["cpu.weight"] = "100"
            out["cpu.max"] = ("%d 100000" % max(1000, rnd(a["cpu"] * 100000))
                              if need["cpu"] else "max 100000")
    if "memory" in cap:
        if mode == "share":
            out["memory.low"] = mem(a["memory"])
            out["memory.high"] = "max"
            d = declared.get(n, {}).get("memory")
            out["memory.max"] = mem(d) if d is not None else "max"
        elif need["memory"]:
            out["memory.low"] = "0"
            out["memory.high"] = out["memory.max"] = mem(a["memory"])
        else:
            out["memory.low"], out["memory.high"], out["memory.max"] = "0", "max", "max"
    if "io-read-bps" in cap or "io-write-bps" in cap:
        # No BFQ and no io.cost in the VM: io.max at the allocation in both modes.
        def lim(r):
            # a hard cap at the allocation, but never a zero cap on what is not needed;
            # blk-throttle takes only values above 1
            if r not in cap or not need[r]:
                return "max"
            return str(max(2, rnd(a[r])))
        out["io.max"] = "%s rbps=%s wbps=%s riops=max wiops=max" % (
            dev, lim("io-read-bps"), lim("io-write-bps"))
    for f, v in out.items():
        print(n, f, v)
