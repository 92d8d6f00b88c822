"""Medians per benchmark, base against new, of calls.sh's output (`base|new ROUND NAME VALUE UNIT` lines)."""
import collections
import re
import statistics
import sys

UNIT = {"ps": 1e-3, "ns": 1, "µs": 1e3, "us": 1e3, "ms": 1e6, "s": 1e9}
runs = collections.defaultdict(lambda: collections.defaultdict(list))
paired = collections.defaultdict(lambda: collections.defaultdict(dict))
for line in open(sys.argv[1]):
    m = re.match(r"(base|new) (\d+) (\S+) ([0-9.]+) (\S+)$", line.strip())
    if m:
        side, rnd, name, value, unit = m.groups()
        runs[name][side].append(float(value) * UNIT[unit])
        paired[name][rnd][side] = float(value) * UNIT[unit]
print("| bench | base ns | new ns | new / base | median of per-round ratios (rounds) |")
print("| --- | ---: | ---: | ---: | ---: |")
for name in sorted(runs):
    b, n = runs[name]["base"], runs[name]["new"]
    if b and n:
        mb, mn = statistics.median(b), statistics.median(n)
        ratios = [r["new"] / r["base"] for r in paired[name].values() if r.get("base") and r.get("new")]
        rr = f"{statistics.median(ratios):.2f} ({len(ratios)})" if ratios else "-"
        print(f"| {name} | {mb:.1f} | {mn:.1f} | {mn / mb:.2f} | {rr} |")
