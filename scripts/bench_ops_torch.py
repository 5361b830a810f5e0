#!/usr/bin/env python3
"""`fastreduce bench --ops argmax,var,norm2,dot` with torch beside it, in one run.

Runs the CLI (fastreduce, CUB ArgMax, cuBLAS nrm2 and dot, fastreduce's Sum over the same bytes),
then times torch.argmax, torch.var, torch.linalg.vector_norm and torch.dot on float32 data of the
same sizes, the way the CLI times (CUDA events around batches of back-to-back calls of about 2 ms,
median batch, inputs rotated among slices beyond the L2), and prints one table; --out writes
everything as JSON (docs/results/ops_<GPU>_<date>.json).

  python3 scripts/bench_ops_torch.py --cli build/fastreduce --out docs/results/ops_H100_2026-11-28.json
"""
import argparse
import json
import subprocess
import sys

import torch

from bench_axis_torch import time_call  # the same timing as the axis comparison (scripts/)


def torch_us(op, n, repetitions):
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    slices = max(2, min(4096, 3 * l2 // (4 * n) + 1))
    arena = torch.rand(slices, n, device="cuda") * 2 - 1
    if op == "dot":
        arena = arena.abs()
    pairs = slices - 1
    fns = {
        "argmax": lambda i: torch.argmax(arena[i % pairs]),
        "var": lambda i: torch.var(arena[i % pairs]),
        "norm2": lambda i: torch.linalg.vector_norm(arena[i % pairs]),
        "dot": lambda i: torch.dot(arena[i % pairs], arena[i % pairs + 1]),
    }
    us = time_call(fns[op], slices, repetitions)
    del arena
    torch.cuda.empty_cache()
    return us


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cli", default="build/fastreduce", help="the fastreduce command")
    parser.add_argument("--ops", default="argmax,var,norm2,dot")
    parser.add_argument("--sizes", default=",".join(f"2^{k}" for k in range(14, 29, 2)))
    parser.add_argument("--repetitions", type=int, default=9)
    parser.add_argument("--out", help="JSON file")
    args = parser.parse_args()
    done = subprocess.run([args.cli, "bench", "--ops", args.ops, "--sizes", args.sizes, "--repetitions",
                           str(args.repetitions), "--format", "json"], capture_output=True, text=True)
    if done.returncode != 0:
        sys.stderr.write(done.stderr)
        if not done.stdout.strip():
            return done.returncode
    result = json.loads(done.stdout)
    result["torch"] = torch.__version__
    for row in result["rows"]:
        row["torch_us"] = torch_us(row["op"], row["n"], args.repetitions)
        print(f"\r{row['op']} n={row['n']}        ", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    gbps = lambda b, us: b / (us * 1e-6) / 1e9 if us > 0 else 0  # noqa: E731
    head = (f"{'op':7}{'n':>11}{'fastreduce us':>15}{'GB/s':>7}{'of Sum':>8}{'peer':>13}{'peer us':>9}"
            f"{'peer/ours':>10}{'torch us':>10}{'GB/s':>7}{'torch/ours':>11}{'agree':>7}")
    print(f"# {result['device']['name']}, torch {torch.__version__}; GB/s = bytes read / time; "
          f"\"of Sum\": fastreduce's fast Sum over the same bytes, its time / this op's")
    print(head)
    print("-" * len(head))
    for r in result["rows"]:
        peer = r["peer_us"] > 0
        print(f"{r['op']:7}{r['n']:>11}{r['fastreduce_us']:>15.2f}{gbps(r['bytes'], r['fastreduce_us']):>7.0f}"
              f"{100 * r['sum_us'] / r['fastreduce_us']:>7.1f}%{r['peer'] if peer else '-':>13}"
              f"{r['peer_us'] if peer else 0:>9.2f}{(r['peer_us'] / r['fastreduce_us']) if peer else 0:>9.2f}x"
              f"{r['torch_us']:>10.2f}{gbps(r['bytes'], r['torch_us']):>7.0f}{r['torch_us'] / r['fastreduce_us']:>10.2f}x"
              f"{'yes' if r['agree'] else 'NO':>7}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
