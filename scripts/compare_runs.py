#!/usr/bin/env python3
"""Old binary against new, from the JSON of the same `fastreduce` command run by each in one session.

    scripts/compare_runs.py old.json new.json [--floor 0.99] [--markdown]

Each row's figure is its ratio against the peer measured beside it in the same process (CUB for
`bench`, CUB or the 1-D reduce for `bench-axis`, the fast Sum over the same bytes for `bench --ops`),
so machine drift between the two processes cancels. Prints new/old of that ratio per row, the
rows under the floor, and exits 1 if there are any.
"""
import argparse
import json
import sys


def figure(row):
    """(key, ratio, what the ratio is against) of one row."""
    if "thrust_us" in row:  # fastreduce bench
        key = (row["type"], row["op"], row["mode"], row["n"])
        return key, row["cub_us"] / row["fastreduce_us"], "CUB"
    if "axis" in row:  # fastreduce bench-axis
        key = (row["type"], row["op"], row["mode"], row["axis"], row["total"], row["length"])
        if row.get("cub_us", 0) > 0:
            return key, row["cub_us"] / row["fastreduce_us"], "CUB"
        return key, row["fastreduce_gbps"] / row["flat_gbps"], "1-D"
    key = (row["op"], row["type"], row["n"])  # fastreduce bench --ops
    if row.get("peer_us", 0) > 0:
        return key, row["peer_us"] / row["fastreduce_us"], row["peer"]
    return key, row["sum_us"] / row["fastreduce_us"], "Sum"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--floor", type=float, default=0.99)
    parser.add_argument("--markdown", action="store_true", help="a markdown table of every row")
    args = parser.parse_args()
    old = {figure(r)[0]: figure(r) for r in json.load(open(args.old))["rows"]}
    new = {figure(r)[0]: figure(r) for r in json.load(open(args.new))["rows"]}
    keys = [k for k in old if k in new]
    under = []
    if args.markdown:
        print("| row | against | old ratio | new ratio | new / old |")
        print("|---|---|---:|---:|---:|")
    for k in keys:
        (_, a, peer), (_, b, _) = old[k], new[k]
        change = b / a if a > 0 else float("inf")
        if args.markdown:
            print(f"| {' '.join(str(x) for x in k)} | {peer} | {a:.3f} | {b:.3f} | {change:.3f} |")
        if change < args.floor:
            under.append((k, peer, a, b, change))
    changes = sorted(new[k][1] / old[k][1] for k in keys if old[k][1] > 0)
    if changes:
        mid = changes[len(changes) // 2]
        print(f"{len(keys)} rows in both; new/old of the ratio: min {changes[0]:.3f}, median {mid:.3f}, max {changes[-1]:.3f}")
    for k, peer, a, b, change in under:
        print(f"under {args.floor}: {' '.join(str(x) for x in k)}: against {peer} {a:.3f} -> {b:.3f} ({change:.3f})")
    missing = [k for k in old if k not in new]
    if missing:
        print(f"{len(missing)} rows of the old run are missing from the new one")
    return 1 if under or missing else 0


if __name__ == "__main__":
    sys.exit(main())
