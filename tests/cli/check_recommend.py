#!/usr/bin/env python3
"""Checks `drfctl recommend --json` on stdin: the keys each object must have, and
expected values given as arguments:
  .KEY=VALUE                 a top-level field (records, skipped_lines, ...)
  TENANT.KEY=VALUE           a tenant's field (samples, advice, tasks, snippet)
  TENANT.RES.KEY=VALUE       a resource's figure (declared, p50, p95, peak, over, suggested)
  !TENANT                    the tenant is not in "tenants"
  ~NAME=SAMPLES              NAME is listed in "not_in_config" with SAMPLES
VALUE is JSON (numbers compare to a relative 1e-9; null, true, false, "strings")."""
import json
import math
import sys

TOP = {"history", "step_s", "window_s", "from", "to", "records", "skipped_lines",
       "torn_lines", "tenants", "not_in_config"}
TENANT = {"name", "model", "samples", "advice", "resources", "tasks", "snippet"}
RES = {"declared", "declared_explicitly", "samples", "p50", "p95", "peak", "over", "suggested"}


def fail(msg):
    print("check_recommend: " + msg, file=sys.stderr)
    sys.exit(1)


def same(got, want):
    if isinstance(want, (int, float)) and not isinstance(want, bool):
        return (isinstance(got, (int, float)) and not isinstance(got, bool) and
                math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12))
    return got == want


doc = json.load(sys.stdin)
if set(doc) != TOP:
    fail(f"top-level keys {sorted(doc)}, expected {sorted(TOP)}")
tenants = {}
for t in doc["tenants"]:
    if set(t) != TENANT:
        fail(f"tenant keys {sorted(t)}, expected {sorted(TENANT)}")
    for r, o in t["resources"].items():
        if set(o) != RES:
            fail(f"{t['name']}.{r} keys {sorted(o)}, expected {sorted(RES)}")
    tenants[t["name"]] = t
extra = {o["name"]: o["samples"] for o in doc["not_in_config"]}

for arg in sys.argv[1:]:
    if arg.startswith("!"):
        if arg[1:] in tenants:
            fail(f"tenant {arg[1:]} is listed")
        continue
    path, _, val = arg.partition("=")
    want = json.loads(val)
    if path.startswith("~"):
        if not same(extra.get(path[1:]), want):
            fail(f"not_in_config {path[1:]}: {extra.get(path[1:])!r}, expected {want!r}")
        continue
    if path.startswith("."):
        got = doc.get(path[1:], "<missing>")
    else:
        parts = path.split(".")
        if parts[0] not in tenants:
            fail(f"no tenant {parts[0]}")
        got = tenants[parts[0]]
        if len(parts) == 3:
            got = got["resources"].get(parts[1], {})
        got = got.get(parts[-1], "<missing>")
    if not same(got, want):
        fail(f"{path}: {got!r}, expected {want!r}")
