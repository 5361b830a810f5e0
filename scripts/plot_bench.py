#!/usr/bin/env python3
"""Plot `fastreduce bench` output: GB/s against n, one line per implementation.

Usage: plot_bench.py BENCH.(csv|json) OUT.png
The CSV is what `fastreduce bench --format csv` (or --plot) writes; the JSON is --format json.
One panel per (type, op); fastreduce modes, CUB and Thrust as lines.
"""
import csv
import json
import sys
from collections import defaultdict


def load(path):
    rows, device = [], ""
    if path.endswith(".json"):
        with open(path) as f:
            data = json.load(f)
        device = data.get("device", {}).get("name", "")
        for r in data["rows"]:
            rows.append(r)
        return rows, device
    with open(path) as f:
        lines = [l for l in f if l.strip()]
    if lines and lines[0].startswith("#"):
        device = lines[0][1:].strip()
        lines = lines[1:]
    for r in csv.DictReader(lines):
        rows.append({
            "type": r["type"], "op": r["op"], "mode": r["mode"], "n": int(r["n"]),
            "fastreduce_gbps": float(r["GB/s"]),
            "cub_gbps": float(list(r.values())[7]) if r.get("CUB us") else 0.0,
            "thrust_gbps": 0.0 if r.get("thrust us") in (None, "-") else float(list(r.values())[9]),
        })
    return rows, device


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows, device = load(sys.argv[1])
    panels = defaultdict(list)
    for r in rows:
        panels[(r["type"], r["op"])].append(r)
    keys = sorted(panels)
    cols = min(4, len(keys))
    nrows = (len(keys) + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(4.2 * cols, 3.4 * nrows), squeeze=False)
    for ax, key in zip(axes.flat, keys):
        data = panels[key]
        lines = defaultdict(dict)
        for r in data:
            lines[f"fastreduce {r['mode']}"][r["n"]] = r["fastreduce_gbps"]
            lines["CUB DeviceReduce"][r["n"]] = r["cub_gbps"]
            if r.get("thrust_gbps"):
                lines["thrust::reduce"][r["n"]] = r["thrust_gbps"]
        for name, points in sorted(lines.items()):
            xs = sorted(points)
            ax.plot(xs, [points[x] for x in xs], marker="o", markersize=3, label=name,
                    linestyle="--" if "CUB" in name or "thrust" in name else "-")
        ax.set_xscale("log", base=2)
        ax.set_title(f"{key[0]} {key[1]}")
        ax.set_xlabel("n (elements)")
        ax.set_ylabel("GB/s (bytes read / time)")
        ax.grid(True, alpha=0.3)
    for ax in axes.flat[len(keys):]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7)
    fig.suptitle(f"fastreduce bench{' on ' + device if device else ''}")
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)
    print(f"wrote {sys.argv[2]}")


if __name__ == "__main__":
    main()
