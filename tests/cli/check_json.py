#!/usr/bin/env python3
"""Checks `drfctl plan --json` output against the schema of issue 2, exactly:
no missing and no extra keys, the right types, resources among the five names,
and the expected numbers given as NAME.FIELD[.RES]=VALUE arguments (@NAME for
a group of a config with [group] sections; NAME~VALUE: within 1e-6, for answers
written to 6 decimals)."""
import json
import sys

RES = {"cpu", "memory", "io-read-bps", "io-write-bps", "net-rate"}


def fail(msg):
    print("schema: " + msg, file=sys.stderr)
    sys.exit(1)


def num(v, what):
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        fail(f"{what} is not a number: {v!r}")


def res_obj(o, what, allow_null=False):
    if not isinstance(o, dict) or not o:
        fail(f"{what} is not a non-empty object")
    for k, v in o.items():
        if k not in RES:
            fail(f"{what} has unknown resource {k!r}")
        if v is None and allow_null:
            continue
        num(v, f"{what}.{k}")


START_ONLY = {"cgroup-root", "io-device", "net-device", "state-dir", "status-socket",
              "status-group", "net-replace-qdisc"}


def running(r):
    if not isinstance(r, dict) or set(r) != {"pid", "start_only_changes"}:
        fail(f"running {r!r}")
    if not isinstance(r["pid"], int) or isinstance(r["pid"], bool):
        fail(f"running.pid {r['pid']!r}")
    if not isinstance(r["start_only_changes"], list):
        fail("running.start_only_changes is not a list")
    for c in r["start_only_changes"]:
        if not isinstance(c, dict) or set(c) != {"key", "in_force", "new", "needs_restart"}:
            fail(f"start_only_changes entry {c!r}")
        if c["key"] not in START_ONLY:
            fail(f"start_only_changes key {c['key']!r}")
        for k in ("in_force", "new"):
            if c[k] is not None and not isinstance(c[k], str):
                fail(f"start_only_changes.{k} {c[k]!r}")
        if not isinstance(c["needs_restart"], bool):
            fail(f"start_only_changes.needs_restart {c['needs_restart']!r}")


def main():
    doc = json.load(sys.stdin)
    # "running": only when a drfd answers on the config's status-socket.
    grouped = "groups" in doc
    # "beta" and "lambda": exactly for the policies that take them.
    family = doc.get("policy") in ("fds", "gfj")
    want_keys = {"policy", "capacity", "unallocated", "tenants"}
    if family:
        want_keys |= {"beta", "lambda"}
        num(doc["beta"], "beta")
        num(doc["lambda"], "lambda")
    if set(doc) - {"running", "groups"} != want_keys:
        fail(f"top-level keys {sorted(doc)}")
    if "running" in doc:
        running(doc["running"])
    if doc["policy"] not in ("drf", "asset", "per-resource", "fds", "gfj", "ceei"):
        fail(f"policy {doc['policy']!r}")
    res_obj(doc["capacity"], "capacity")
    res_obj(doc["unallocated"], "unallocated")
    if set(doc["unallocated"]) != set(doc["capacity"]):
        fail("unallocated and capacity name different resources")
    by_name = {}
    for t in doc["tenants"]:
        keys = {"name", "weight", "demand", "alloc", "dominant_resource", "dominant_share",
                "declared", "limited_by"}
        if set(t) - {"tasks"} != keys | ({"group"} if grouped else set()):
            fail(f"tenant keys {sorted(t)}")
        if grouped and t["group"] is not None and not isinstance(t["group"], str):
            fail(f"{t['name']}.group {t['group']!r}")
        if not isinstance(t["name"], str):
            fail("name is not a string")
        num(t["weight"], "weight")
        res_obj(t["demand"], t["name"] + ".demand", allow_null=True)
        res_obj(t["alloc"], t["name"] + ".alloc")
        if "tasks" in t:
            num(t["tasks"], t["name"] + ".tasks")
        if set(t["declared"]) != set(doc["capacity"]) or \
                not all(isinstance(v, bool) for v in t["declared"].values()):
            fail(f"{t['name']}.declared {t['declared']!r}")
        if t["dominant_resource"] not in RES:
            fail(f"dominant_resource {t['dominant_resource']!r}")
        num(t["dominant_share"], "dominant_share")
        if t["limited_by"] != "demand" and t["limited_by"] not in RES:
            fail(f"limited_by {t['limited_by']!r}")
        by_name[t["name"]] = t
    for g in doc.get("groups", []):
        if set(g) != {"name", "group", "weight", "cgroup", "alloc", "dominant_resource",
                      "dominant_share", "limited_by"}:
            fail(f"group keys {sorted(g)}")
        if not isinstance(g["name"], str) or not isinstance(g["cgroup"], str) or \
                (g["group"] is not None and not isinstance(g["group"], str)):
            fail(f"group {g!r}")
        num(g["weight"], "group weight")
        res_obj(g["alloc"], g["name"] + ".alloc")
        num(g["dominant_share"], "group dominant_share")
        if g["dominant_resource"] not in RES or \
                (g["limited_by"] != "demand" and g["limited_by"] not in RES):
            fail(f"group {g['name']} dominant_resource or limited_by")
        by_name["@" + g["name"]] = g
    for arg in sys.argv[1:]:
        # NAME~VALUE: to the 6 decimals written (hand-computed irrational answers)
        approx = "~" in arg and ("=" not in arg or arg.index("~") < arg.index("="))
        path, want = arg.split("~" if approx else "=", 1)
        parts = path.split(".")
        if parts[0] == "":
            node = doc
            parts = parts[1:]
        else:
            node = by_name[parts[0]]
            parts = parts[1:]
        for p in parts:
            node = node[p]
        if want == "null":
            ok = node is None
        else:
            try:
                tol = 1e-6 if approx else 1e-9 * max(1.0, abs(float(want)))
                ok = abs(float(node) - float(want)) <= tol
            except (TypeError, ValueError):
                ok = str(node) == want
        if not ok:
            fail(f"{path} = {node!r}, expected {want}")


main()
