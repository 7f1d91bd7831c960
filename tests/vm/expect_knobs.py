#!/usr/bin/env python3
"""The knob mapping, written again independently of agent/plan/knobs.c: reads
`drfctl plan --json` on stdin and prints "CGROUP FILE VALUE" lines of what
cgroupfs must hold, for every tenant and every inner node of nested tenant
paths. Arguments: MODE DEVICE(MAJ:MIN) and entries TENANT:RES=BYTES for the
demands each tenant declared (undeclared: none), TENANT:cgroup=PATH for a
tenant whose cgroup is not its name.

cgroup v2 divides among siblings, so weights are proportional to the
allocation of each node's subtree among its siblings; an inner node gets the
sum of its tenants' allocations (memory.low) and no caps."""
import json
import math
import sys

mode, dev = sys.argv[1], sys.argv[2]
declared, path = {}, {}
for d in sys.argv[3:]:
    t, kv = d.split(":", 1)
    k, v = kv.split("=")
    if k == "cgroup":
        path[t] = v
    else:
        declared.setdefault(t, {})[k] = float(v)
plan = json.load(sys.stdin)
cap = plan["capacity"]
tenants = plan["tenants"]
page = 4096


def rnd(x):
    return int(math.floor(x + 0.5))


def mem(x):
    return str(int(x) // page * page)


def weight(v, vmax):
    return str(min(10000, max(1, rnd(v / vmax * 10000)))) if vmax > 0 else "100"


# Subtree cpu and memory allocations of every node (tenants and inner nodes).
sub_cpu, sub_mem = {}, {}
cg_of = {t["name"]: path.get(t["name"], t["name"]) for t in tenants}
for t in tenants:
    parts = cg_of[t["name"]].split("/")
    for i in range(1, len(parts) + 1):
        node = "/".join(parts[:i])
        sub_cpu[node] = sub_cpu.get(node, 0) + t["alloc"].get("cpu", 0)
        sub_mem[node] = sub_mem.get(node, 0) + t["alloc"].get("memory", 0)


def parent(node):
    return node.rsplit("/", 1)[0] if "/" in node else ""


group_max = {}
for node, v in sub_cpu.items():
    group_max[parent(node)] = max(group_max.get(parent(node), 0), v)
inner = sorted(n for n in sub_cpu if n not in cg_of.values())

out = []
for t in tenants:
    n, a, cg = t["name"], t["alloc"], cg_of[t["name"]]
    need = {r: (t["demand"][r] is None or t["demand"][r] > 0) for r in t["demand"]}
    k = {}
    if "cpu" in cap:
        if mode == "share":
            k["cpu.weight"] = weight(a["cpu"], group_max[parent(cg)])
            k["cpu.max"] = "max 100000"
        else:
            k["cpu.weight"] = "100"
            k["cpu.max"] = ("%d 100000" % max(1000, rnd(a["cpu"] * 100000))
                            if need["cpu"] else "max 100000")
    if "memory" in cap:
        if mode == "share":
            k["memory.low"] = mem(a["memory"])
            k["memory.high"] = "max"
            d = declared.get(n, {}).get("memory")
            k["memory.max"] = mem(d) if d is not None else "max"
        elif need["memory"]:
            k["memory.low"] = "0"
            k["memory.high"] = k["memory.max"] = mem(a["memory"])
        else:
            k["memory.low"], k["memory.high"], k["memory.max"] = "0", "max", "max"
    if "io-read-bps" in cap or "io-write-bps" in cap:
        # No BFQ and no io.cost in the VM: io.max at the allocation in both modes.
        def lim(r):
            # a hard cap at the allocation, but never a zero cap on what is not needed;
            # blk-throttle takes only values above 1
            if r not in cap or not need[r]:
                return "max"
            return str(max(2, rnd(a[r])))
        k["io.max"] = "%s rbps=%s wbps=%s riops=max wiops=max" % (
            dev, lim("io-read-bps"), lim("io-write-bps"))
    out += [(cg, f, v) for f, v in k.items()]
for node in inner:
    k = {}
    if "cpu" in cap:
        k["cpu.weight"] = (weight(sub_cpu[node], group_max[parent(node)])
                           if mode == "share" else "100")
        k["cpu.max"] = "max 100000"
    if "memory" in cap:
        k["memory.low"] = mem(sub_mem[node]) if mode == "share" else "0"
        k["memory.high"] = k["memory.max"] = "max"
    if "io-read-bps" in cap or "io-write-bps" in cap:
        k["io.max"] = ""  # a line of nothing but max is not shown by the kernel
    out += [(node, f, v) for f, v in k.items()]
for cg, f, v in out:
    print(cg, f, v)
