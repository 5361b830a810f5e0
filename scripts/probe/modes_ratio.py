#!/usr/bin/env python3
"""Prints reproducible/fast throughput and CUB/reproducible time ratios from `bench --modes fast,reproducible --format json`."""
import json
import sys

for path in sys.argv[1:]:
    d = json.load(open(path))
    print(f"{path}: {d['device']['name']}")
    rows = {}
    for r in d["rows"]:
        rows.setdefault((r["type"], r["n"]), {})[r["mode"]] = r
    for (t, n), m in sorted(rows.items()):
        if "fast" in m and "reproducible" in m:
            f, p = m["fast"], m["reproducible"]
            print(f"  {t:9s} n={n:>11d}  fast {f['fastreduce_us']:9.2f} us  repro {p['fastreduce_us']:9.2f} us"
                  f"  repro/fast {f['fastreduce_us'] / p['fastreduce_us']:.3f}  CUB/repro {p['cub_us'] / p['fastreduce_us']:.2f}"
                  f"  agree {p['agree']}")
