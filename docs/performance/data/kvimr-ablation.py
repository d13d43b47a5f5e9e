#!/usr/bin/env python3
"""Ratios of a `tegula bench paper kvimr --parts load` run (kvimr.json), over the load
steps up to a usage (the steps up to 75% of a run to 85% are the same as a run to 75%).

usage: kvimr-ablation.py DIR/kvimr.json [MAX_USAGE ...]
prints, per MAX_USAGE: three-phase/seq, kvimr-m/three-phase overall and over the steps at
>= 70%, kvimr-m/cmr; then per scheme the totals to the last MAX_USAGE.
"""
import json
import sys

rows = [r for r in json.load(open(sys.argv[1])) if r["phase"] == "load"]
tops = [float(x) for x in sys.argv[2:]] or [0.75, 0.85]


def rate(scheme, lo, hi):
    rs = [r for r in rows if r["scheme"] == scheme and lo - 1e-9 <= r["usage"] <= hi + 1e-9]
    if not rs:
        return None
    return sum(r["ops"] for r in rs) / sum(r["device_s"] for r in rs), rs


def ratio(a, b):
    return "-" if a is None or b is None else "%.2f" % (a[0] / b[0])


for hi in tops:
    have = {s: rate(s, 0, hi) for s in ("seq", "three-phase", "kvimr-n", "kvimr-m", "cmr")}
    high = {s: rate(s, 0.7, hi) for s in have}
    top = max((r["usage"] for r in rows), default=0)
    print(
        "to %.0f%% (last step %.0f%%): three-phase/seq %s | kvimr-m/three-phase %s, at >=70%% %s | kvimr-m/cmr %s | three-phase/seq at >=70%% %s"
        % (hi * 100, min(hi, top) * 100, ratio(have["three-phase"], have["seq"]),
           ratio(have["kvimr-m"], have["three-phase"]), ratio(high["kvimr-m"], high["three-phase"]),
           ratio(have["kvimr-m"], have["cmr"]), ratio(high["three-phase"], high["seq"])))
hi = tops[-1]
print("scheme | ops/s | device s | persist+sync s | RMW s | other s | CMR drive s | RMWs | top rewrites | syncs")
for s in ("seq", "three-phase", "kvimr-n", "kvimr-m", "cmr"):
    x = rate(s, 0, hi)
    if x is None:
        continue
    rs = x[1]
    dev = sum(r["device_s"] for r in rs)
    per = sum(r["persist_s"] + r["sync_s"] for r in rs)
    print("%s | %.0f | %.1f | %.1f | %.1f | %.1f | %.1f | %d | %d | %d" % (
        s, x[0], dev, per, sum(r["rmw_s"] for r in rs), dev - per,
        sum(r.get("cmr_busy_s", 0) for r in rs), sum(r["rmw_ops"] for r in rs),
        sum(r["top_rewrites"] for r in rs), sum(r["syncs"] for r in rs)))
