#!/usr/bin/env python3
"""Mode::Exact against CCCL's reproducible Sum (gpu_to_gpu determinism), from one machine and run.

Reads `fastreduce bench --modes fast,exact --format json` and `fastreduce_cccl_rfa --format json`
(bench/cccl_rfa.cu) over the same types and sizes, and prints one markdown table: fastreduce fast
and exact, CCCL gpu_to_gpu, how much faster exact is than gpu_to_gpu (plainly, and with each time
over its own process's plain CUB Sum, the anchor that ties the two processes' timings together:
the two differ by up to 2x at small sizes), fast mode's speed relative to exact mode (the ratio
Mode::Exact's targets are set in), whether gpu_to_gpu agrees with CUB, and its distance from the
correctly rounded sum.

    scripts/exact_vs_cccl.py bench_exact.json cccl_rfa.json [--out table.md]
"""
import argparse
import json
import sys


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("bench", help="fastreduce bench --modes fast,exact --format json")
    parser.add_argument("cccl", help="fastreduce_cccl_rfa --format json")
    parser.add_argument("--out", help="also write the table here")
    args = parser.parse_args()
    with open(args.bench) as f:
        bench = json.load(f)
    with open(args.cccl) as f:
        cccl = json.load(f)
    ours = {}
    for r in bench.get("rows", []):
        if r["op"] == "sum":
            ours[(r["type"], r["n"], r["mode"])] = r
    v = cccl["cccl_version"]
    lines = [
        f"Mode::Exact against CCCL {v // 1000000}.{v // 1000 % 1000}.{v % 1000} gpu_to_gpu Sum on {cccl['gpu']} "
        f"(fastreduce: {bench['device']['name']}), µs per call",
        "",
        "| type | n | fast | exact | CCCL gpu_to_gpu | gpu_to_gpu / exact | same, each over its CUB | fast / exact "
        "| CCCL agrees with CUB | CCCL ulps | CUB (ours) | CUB (CCCL's) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|",
    ]
    missing = 0
    for r in cccl["rows"]:
        key = (r["type"], r["n"])
        fast, exact = ours.get(key + ("fast",)), ours.get(key + ("exact",))
        if fast is None or exact is None:
            missing += 1
            continue
        ulps = r["ulps_from_correctly_rounded"]
        agrees = {True: "yes", False: "**no**"}.get(r.get("agrees_with_cub"), "-")
        anchored = (r["cccl_rfa_us"] / r["cub_us"]) / (exact["fastreduce_us"] / exact["cub_us"])
        lines.append(
            f"| {r['type']} | {r['n']} | {fast['fastreduce_us']:.2f} | {exact['fastreduce_us']:.2f} | "
            f"{r['cccl_rfa_us']:.2f} | {r['cccl_rfa_us'] / exact['fastreduce_us']:.2f}x | {anchored:.2f}x | "
            f"{fast['fastreduce_us'] / exact['fastreduce_us']:.2f} | {agrees} | {ulps if ulps >= 0 else '-'} | "
            f"{exact['cub_us']:.2f} | {r['cub_us']:.2f} |"
        )
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if missing:
        sys.stderr.write(f"exact_vs_cccl: {missing} CCCL rows have no fast and exact row of the bench\n")
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
