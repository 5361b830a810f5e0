#!/usr/bin/env python3
"""Heat map of `fastreduce bench-axis --plot`: GB/s per shape, fastreduce beside CUB.

  python3 scripts/plot_axis.py axis.png.csv axis.png
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(csv_path, png_path):
    with open(csv_path) as f:
        lines = f.readlines()
    device = lines[0][2:].strip() if lines and lines[0].startswith("#") else ""
    rows = list(csv.DictReader(line for line in lines if not line.startswith("#")))
    rows = [r for r in rows if r["axis"] in ("rows", "columns") and r["mode"] == "fast"]
    groups = sorted({(r["type"], r["op"], r["total"]) for r in rows})
    if not groups:
        print("plot_axis: no fast-mode rows or columns in", csv_path)
        return 1
    fig, axes = plt.subplots(len(groups), 1, figsize=(12, 2.4 * len(groups)), squeeze=False)
    for ax, (type_name, op, total) in zip(axes[:, 0], groups):
        selected = [r for r in rows if (r["type"], r["op"], r["total"]) == (type_name, op, total)]
        lengths = sorted({int(r["length"]) for r in selected})
        labels, grid = [], []
        for axis in ("rows", "columns"):
            for who, column in (("fastreduce", "GB/s"), ("CUB", "CUB GB/s")):
                by_length = {int(r["length"]): r[column] for r in selected if r["axis"] == axis}
                values = [float(by_length[l]) if by_length.get(l, "-") not in ("-", "") else float("nan") for l in lengths]
                if all(v != v for v in values):
                    continue
                labels.append(f"{axis}: {who}")
                grid.append(values)
        image = ax.imshow(grid, aspect="auto", cmap="viridis", vmin=0)
        ax.set_yticks(range(len(labels)), labels)
        ax.set_xticks(range(len(lengths)), [f"2^{l.bit_length() - 1}" for l in lengths])
        for y, values in enumerate(grid):
            for x, v in enumerate(values):
                if v == v:
                    ax.text(x, y, f"{v:.0f}", ha="center", va="center", color="white" if v < 1500 else "black", fontsize=7)
        ax.set_title(f"{type_name} {op}, {total} elements: GB/s (read + written) by length of the reduced axis — {device}",
                     fontsize=9)
        fig.colorbar(image, ax=ax)
    fig.tight_layout()
    fig.savefig(png_path, dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
