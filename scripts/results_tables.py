#!/usr/bin/env python3
"""Regenerate the README's result tables from the measurements in docs/results/.

Each table sits between <!-- NAME --> and <!-- /NAME --> markers in README.md:
  ladder-2p28, ladder-2p24: `fastreduce ladder --format json` output
  sweep:                   `fastreduce ladder --sweep-blocks --format json`
  bench:                   `fastreduce bench --format json`
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


def bench_table(path):
    data = json.load(open(path))
    dev = data["device"]
    out = [f"`{os.path.relpath(path, ROOT)}`: µs per call back to back, on {dev['name']} "
           f"(device copy {dev['copy_gbps']:.0f} GB/s read + write)", "",
           "| type | op | mode | n | fastreduce µs | GB/s | CUB µs | GB/s | thrust µs | CUB / fastreduce |",
           "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in data["rows"]:
        thrust = f"{r['thrust_us']:.1f}" if r.get("thrust_us") else "-"
        out.append(f"| {r['type']} | {r['op']} | {r['mode']} | {r['n']:,} | {r['fastreduce_us']:.2f} | "
                   f"{r['fastreduce_gbps']:.0f} | {r['cub_us']:.2f} | {r['cub_gbps']:.0f} | {thrust} | "
                   f"{r['cub_us'] / r['fastreduce_us']:.2f}x |")
    return "\n".join(out)


def main():
    tables = {}
    for name, pattern, render in [("ladder-2p28", "ladder_*_2p28.json", ladder_table),
                                  ("ladder-2p24", "ladder_*_2p24.json", ladder_table),
                                  ("sweep", "ladder_sweep_*.json", sweep_table),
                                  ("bench", "bench_*.json", bench_table),
                                  ("bench-modes", "modes_*.json", bench_table)]:
        path = newest(pattern)
        if path:
            tables[name] = render(path)
    readme_path = os.path.join(ROOT, "README.md")
    readme = open(readme_path).read()
    updated = readme
    for name, table in tables.items():
        updated = re.sub(rf"(<!-- {name} -->\n).*?(\n<!-- /{name} -->)", lambda m: m.group(1) + table + m.group(2),
                         updated, flags=re.S)
    if "--check" in sys.argv:
        sys.exit(0 if updated == readme else 1)
    if updated != readme:
        open(readme_path, "w").write(updated)
        print("README.md tables regenerated:", ", ".join(tables))
    else:
        print("README.md tables up to date")


if __name__ == "__main__":
    main()
