#!/usr/bin/env python3
"""Checks the picture of `drfctl plan --tradeoff --svg` against the sweep's JSON.

    check_svg.py PICTURE.svg SWEEP.json

Every series of the picture is found by its key's text; its points (its point
marks, gnuplot's mark in the key left out) must be the sweep's rows for that
series, in order: on the left Jain's index and each resource's utilization
against log beta, on the right Jain's index against the mean utilization. The
pixels of each panel must be one linear map of the values (within a pixel): a
picture of other numbers, or of a missing or extra point, fails. Colour is the
policy in both panels: every series of FDS one colour, of GFJ one, of DRF one,
and the three differ; on the left the dash is the figure: each resource's
utilization one dash in every policy, Jain's index solid, no two alike.
Exit 0 if so; 1, saying what differs, if not.
"""
import json
import math
import re
import sys
import xml.etree.ElementTree as ET

NS = "{http://www.w3.org/2000/svg}"


def plot_groups(svg_path, panels="[a-z]?"):
    """(key text, group) of each series gnuplot drew (panel "a": the left one, "b": the right)."""
    root = ET.parse(svg_path).getroot()
    for g in root.iter(NS + "g"):
        if re.fullmatch(r"gnuplot_plot_\d+" + panels, g.get("id") or ""):
            texts = ["".join(t.itertext()) for t in g.iter(NS + "text")]
            if texts:
                yield texts[0], g


def series_of(svg_path):
    """{key text: [(x, y), ...]}: each series' point marks, but the last (its key's)."""
    out = {}
    for name, g in plot_groups(svg_path):
        marks = [re.match(r"translate\((-?[\d.]+),(-?[\d.]+)\)", u.get("transform") or "")
                 for u in g.iter(NS + "use")]
        if marks and all(marks):
            out[name] = [(float(m.group(1)), float(m.group(2))) for m in marks[:-1]]
    return out


def colours_of(svg_path):
    """{key text: {colours}}: the rgb() colours a series draws with (lines and marks)."""
    return {name: {re.sub(r"\s+", "", e.get(a)) for e in g.iter() for a in ("stroke", "color")
                   if (e.get(a) or "").startswith("rgb(")}
            for name, g in plot_groups(svg_path)}


def dashes_of(svg_path):
    """{key text: {dasharray or 'solid'}}: the dashes of the left panel's lines."""
    return {name: {e.get("stroke-dasharray") or "solid" for e in g.iter(NS + "path")}
            for name, g in plot_groups(svg_path, "a")}


def fit(pairs):
    """Least squares px = a + b v over (v, px); returns (a, b, worst residual)."""
    n = len(pairs)
    mv = sum(v for v, _ in pairs) / n
    mp = sum(p for _, p in pairs) / n
    svv = sum((v - mv) ** 2 for v, _ in pairs)
    b = sum((v - mv) * (p - mp) for v, p in pairs) / svv if svv else 0.0
    a = mp - b * mv
    return a, b, max(abs(a + b * v - p) for v, p in pairs)


def main():
    svg, sweep = sys.argv[1], json.load(open(sys.argv[2]))
    got = series_of(svg)
    rows = [r for r in sweep["rows"] if not r["gave_up"]]
    res = sorted(next(iter(rows))["used"]) if rows else []
    bad = []
    want_left, want_right = {}, {}
    for fam in ("fds", "gfj"):
        line = [r for r in rows if r["policy"] == fam and not r["lambda_sweep"]]
        if not line:
            continue
        F = fam.upper()
        want_left[f"{F}: Jain's index"] = [(math.log(r["beta"]), r["jain"]) for r in line]
        for k in res:
            want_left[f"{F}: {k} used"] = [(math.log(r["beta"]), r["used"][k]) for r in line]
        want_right[f"{F}, beta 0.25 to 100"] = [(r["jain"], r["mean_used"]) for r in line]
        for beta in sorted({r["beta"] for r in rows if r["policy"] == fam and r["lambda_sweep"]}):
            sw = [r for r in rows if r["policy"] == fam and r["lambda_sweep"] and r["beta"] == beta]
            want_right[f"{F}, beta {beta:g}, lambda below the line"] = [
                (r["jain"], r["mean_used"]) for r in sw]
    drf = [r for r in rows if r["policy"] == "drf"]
    if drf:
        want_right["DRF"] = [(drf[0]["jain"], drf[0]["mean_used"])]
    extra = sorted(set(got) - set(want_left) - set(want_right))
    if extra:
        bad.append(f"series the sweep does not have: {extra}")
    for panel, want in (("left", want_left), ("right", want_right)):
        xs, ys = [], []
        for name, vals in want.items():
            pts = got.get(name)
            if pts is None:
                bad.append(f"{panel}: no series '{name}' (the picture has {sorted(got)})")
                continue
            if len(pts) != len(vals):
                bad.append(f"{panel}: '{name}' has {len(pts)} points, the sweep {len(vals)}")
                continue
            xs += [(v[0], p[0]) for v, p in zip(vals, pts)]
            ys += [(v[1], p[1]) for v, p in zip(vals, pts)]
        if not xs:
            bad.append(f"{panel}: nothing to compare")
            continue
        for axis, pairs in (("x", xs), ("y", ys)):
            a, b, worst = fit(pairs)
            if worst > 1.0:
                bad.append(f"{panel}: the {axis} pixels are not one linear map of the values "
                           f"(off by up to {worst:.2f} px)")
        print(f"{panel}: {len(want)} series, {len(xs)} points as in the sweep")
    by_policy = {}
    for name, cols in colours_of(svg).items():
        by_policy.setdefault(re.split(r"[,:]", name)[0], set()).update(cols)
    for pol, cols in sorted(by_policy.items()):
        if len(cols) != 1:
            bad.append(f"{pol}'s series are drawn in {len(cols)} colours ({sorted(cols)}), not one")
    firsts = [next(iter(c)) for c in by_policy.values() if len(c) == 1]
    if len(set(firsts)) != len(firsts):
        bad.append(f"two policies share a colour: {by_policy}")
    print(f"colours: {', '.join(f'{p} {sorted(c)}' for p, c in sorted(by_policy.items()))}")
    by_figure = {}
    for name, dashes in dashes_of(svg).items():
        if ": " in name:
            by_figure.setdefault(name.split(": ", 1)[1], set()).update(dashes)
    for fig, dashes in sorted(by_figure.items()):
        if len(dashes) != 1:
            bad.append(f"'{fig}' is drawn with {len(dashes)} dashes ({sorted(dashes)}), not one")
    firsts = [next(iter(d)) for d in by_figure.values() if len(d) == 1]
    if len(set(firsts)) != len(firsts):
        bad.append(f"two figures share a dash: {by_figure}")
    jain = by_figure.get("Jain's index")
    if jain not in (None, {"solid"}):
        bad.append(f"Jain's index is not solid: {jain}")
    if bad:
        print("\n".join(bad))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
