#!/usr/bin/env python3
"""Regenerate the README's result tables from the measurements in docs/results/.

Each table sits between <!-- NAME --> and <!-- /NAME --> markers in README.md, NAME ending in
the GPU (H200, H100); the newest file of each kind for that GPU is used:
  ladder-2p28-*, ladder-2p24-*: ladder_<GPU>_<date>_2p28.json (`fastreduce ladder --format json`)
  sweep-*:                     ladder_sweep_<GPU>_<date>_2p24.json (`... --sweep-blocks`)
  bench-summary-*, bench-float-sum-*: bench_<GPU>_<date>.json (`fastreduce bench --format json`)
  modes-*:                     modes_<GPU>_<date>.json (`fastreduce bench --modes fast,reproducible`)
Usage: results_tables.py [--check]   (--check: exit 1 if README.md is out of date)
"""
import glob
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "docs", "results")


def newest(pattern):
    files = sorted(glob.glob(os.path.join(RESULTS, pattern)))
    return files[-1] if files else None


def ladder_table(path):
    data = json.load(open(path))
    dev = data["device"]
    rows = [r for r in data["rows"] if r["block"] == 256] or data["rows"]
    out = [f"`{os.path.relpath(path, ROOT)}`: {data['type']} {data['op']}, n = {data['n']:,}, "
           f"block 256, on {dev['name']} (theoretical {dev['theoretical_gbps']:.0f} GB/s, "
           f"device copy {dev['copy_gbps']:.0f} GB/s read + write)", "",
           "| rung | kernel | time (µs) | GB/s | % of peak | % of copy | step | cumulative | check |",
           "|---|---|---:|---:|---:|---:|---:|---:|:---:|"]
    first = rows[0]["time_us"]
    prev = None
    for r in rows:
        step = f"{prev / r['time_us']:.2f}x" if prev else "-"
        out.append(f"| {r['rung']} | {r['kernel']} | {r['time_us']:.1f} | {r['gbps']:.0f} | {r['pct_peak']:.1f} | "
                   f"{r['pct_copy']:.1f} | {step} | {first / r['time_us']:.2f}x | {'pass' if r['pass'] else 'FAIL'} |")
        prev = r["time_us"]
    return "\n".join(out)


def sweep_table(path):
    data = json.load(open(path))
    rungs, blocks, cell = [], [], {}
    for r in data["rows"]:
        if r["rung"] not in rungs:
            rungs.append(r["rung"])
        if r["block"] not in blocks:
            blocks.append(r["block"])
        cell[(r["rung"], r["block"])] = r
    out = [f"`{os.path.relpath(path, ROOT)}`: GB/s by block size, {data['type']} {data['op']}, "
           f"n = {data['n']:,}, on {data['device']['name']}", "",
           "| block | " + " | ".join(f"rung {r}" for r in rungs) + " |",
           "|---:|" + "---:|" * len(rungs)]
    for b in sorted(blocks):
        out.append(f"| {b} | " + " | ".join(f"{cell[(r, b)]['gbps']:.0f}" for r in rungs) + " |")
    return "\n".join(out)


def bench_table(path, only=None):
    data = json.load(open(path))
    dev = data["device"]
    out = [f"`{os.path.relpath(path, ROOT)}`: µs per call back to back, on {dev['name']} "
           f"(device copy {dev['copy_gbps']:.0f} GB/s read + write)", "",
           "| type | op | mode | n | fastreduce µs | GB/s | CUB µs | GB/s | thrust µs | CUB / fastreduce |",
           "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in data["rows"]:
        if only and (r["type"], r["op"]) != only:
            continue
        thrust = f"{r['thrust_us']:.1f}" if r.get("thrust_us") else "-"
        out.append(f"| {r['type']} | {r['op']} | {r['mode']} | {r['n']:,} | {r['fastreduce_us']:.2f} | "
                   f"{r['fastreduce_gbps']:.0f} | {r['cub_us']:.2f} | {r['cub_gbps']:.0f} | {thrust} | "
                   f"{r['cub_us'] / r['fastreduce_us']:.2f}x |")
    return "\n".join(out)


def bench_summary(path):
    """One row per type and op: the smallest CUB/fastreduce ratio over all sizes, over
    2^14..2^20, and at 2^28, with the 2^28 bandwidth."""
    data = json.load(open(path))
    groups = {}
    for r in data["rows"]:
        groups.setdefault((r["type"], r["op"]), []).append(r)
    out = [f"`{os.path.relpath(path, ROOT)}` on {data['device']['name']}: CUB time / fastreduce time "
           "(above 1: fastreduce faster)", "",
           "| type | op | lowest, all sizes (at n) | lowest, 2^14 ≤ n ≤ 2^20 | at 2^28 | fastreduce GB/s at 2^28 | CUB GB/s at 2^28 |",
           "|---|---|---:|---:|---:|---:|---:|"]
    for (t, op), rows in groups.items():
        ratio = lambda r: r["cub_us"] / r["fastreduce_us"]
        low = min(rows, key=ratio)
        mid = min((r for r in rows if 2**14 <= r["n"] <= 2**20), key=ratio)
        big = next(r for r in rows if r["n"] == 2**28)
        out.append(f"| {t} | {op} | {ratio(low):.3f}x (n = {low['n']:,}) | {ratio(mid):.2f}x (n = {mid['n']:,}) | "
                   f"{ratio(big):.3f}x | {big['fastreduce_gbps']:.0f} | {big['cub_gbps']:.0f} |")
    return "\n".join(out)


def main():
    tables = {}
    specs = []
    for gpu in ("H200", "H100"):
        specs += [(f"ladder-2p28-{gpu}", f"ladder_{gpu}_*_2p28.json", ladder_table),
                  (f"ladder-2p24-{gpu}", f"ladder_{gpu}_*_2p24.json", ladder_table),
                  (f"sweep-{gpu}", f"ladder_sweep_{gpu}_*.json", sweep_table),
                  (f"bench-summary-{gpu}", f"bench_{gpu}_*.json", bench_summary),
                  (f"bench-float-sum-{gpu}", f"bench_{gpu}_*.json", lambda p: bench_table(p, ("float", "sum"))),
                  (f"modes-{gpu}", f"modes_{gpu}_*.json", bench_table)]
    for name, pattern, render in specs:
        path = newest(pattern)
        if path:
            tables[name] = render(path)
    readme_path = os.path.join(ROOT, "README.md")
    readme = open(readme_path).read()
    updated = readme
    for name, table in tables.items():
        updated = re.sub(rf"(<!-- {name} -->\n)(?:.*?\n)?(<!-- /{name} -->)",
                         lambda m: m.group(1) + table + "\n" + m.group(2), updated, flags=re.S)
    if "--check" in sys.argv:
        sys.exit(0 if updated == readme else 1)
    if updated != readme:
        open(readme_path, "w").write(updated)
        print("README.md tables regenerated")
    else:
        print("README.md tables up to date")


if __name__ == "__main__":
    main()
