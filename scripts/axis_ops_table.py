#!/usr/bin/env python3
"""The family's axis bench as a markdown table: each op's GB/s as a share of Sum's on the same
shape (`fastreduce bench-axis --ops ...`), and torch's time over ours where torch has the op
(`scripts/bench_axis_torch.py`, same run).

    scripts/axis_ops_table.py bench_axis_ops.json [bench_axis_ops_torch.json] [--type float]

A cell reads "of Sum" (the op's GB/s over Sum's, each counting the bytes it reads and writes: dot
reads two inputs, argmax writes a value and an index) and, after a slash, torch's time / ours
(> 1: we are faster)."""
import argparse
import json


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("ours")
    p.add_argument("torch", nargs="?")
    p.add_argument("--type", default="float")
    p.add_argument("--mode", default="fast")
    a = p.parse_args()
    rows = [r for r in json.load(open(a.ours))["rows"] if r["type"] == a.type and r["mode"] == a.mode]
    torch = {}
    if a.torch:
        for r in json.load(open(a.torch))["rows"]:
            if r["type"] == a.type:
                torch[(r["op"], r["axis"], r["total"], r["length"])] = r["us"]
    ops, shapes, cells = [], [], {}
    for r in rows:
        shape = (r["total"], r["axis"], r["length"])
        if r["op"] not in ops:
            ops.append(r["op"])
        if shape not in shapes:
            shapes.append(shape)
        cell = f"{100 * r['of_sum']:.0f}%" if r["op"] != "sum" else f"{r['fastreduce_us']:.1f} us"
        t = torch.get((r["op"], r["axis"], r["total"], r["length"]))
        if t:
            cell += f" / {t / r['fastreduce_us']:.2f}x"
        cells[(shape, r["op"])] = cell
    print("| total | axis | length | " + " | ".join(ops) + " |")
    print("|---|---|---:|" + "---:|" * len(ops))
    for s in shapes:
        print(f"| 2^{s[0].bit_length() - 1} | {s[1]} | {s[2]} | " + " | ".join(cells.get((s, o), "-") for o in ops) + " |")


if __name__ == "__main__":
    main()
