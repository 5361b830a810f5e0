#!/usr/bin/env python3
"""Nsight Compute counters for every rung of the ladder and the reference rows.

Runs `fastreduce ladder --profile-pass --rung ID` under ncu once per row (the second of two
runs is profiled, between cudaProfilerStart and cudaProfilerStop), adds up the row's kernels
and writes the few counters that explain each step to a JSON file, which
scripts/results_tables.py puts next to the ladder's times in the README and docs/ladder.md.

  scripts/ladder_profile.py --binary build/fastreduce --n 2^24 --out ladder_ncu.json
  scripts/ladder_profile.py --rungs 1,2,3 --type int32 --out int32.json

Columns (all from the kernels of one whole reduction):
  dram_pct          DRAM throughput, % of peak (time-weighted over the row's kernels)
  warp_efficiency   threads that execute (active, predicate on) per warp instruction, % of 32
                    (divergence, and the predicated-off lanes of short branches)
  divergent_branches  branch targets the threads of a warp did not all take
  bank_conflicts    shared-memory bank conflicts (loads + stores)
  occupancy_pct     achieved occupancy: active warps, % of the SM's maximum (time-weighted)
  inst_per_element  warp instructions executed per input element
  requests_per_kelement  global load requests of the load/store unit (plain loads and
                    cp.async) per 1000 input elements; the TMA's bulk copies are not among them
  hmma_inst, dmma_inst  warp instructions the tensor pipe executed (HMMA, DMMA), and
  tensor_pct        its cycles active, % of peak (time-weighted)
Needs ncu on the PATH and counters the machine lets it read. Clocks are left alone
(--clock-control none).
"""
import argparse
import csv
import datetime
import io
import json
import os
import re
import subprocess
import sys

METRICS = [
    "gpu__time_duration.sum",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "smsp__inst_executed.sum",
    "smsp__thread_inst_executed_pred_on.sum",
    "smsp__sass_branch_targets_threads_divergent.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "sm__sass_l1tex_t_requests_pipe_lsu_mem_global_op_ldgsts.sum",
    "sm__inst_executed_pipe_tensor_op_hmma.sum",
    "sm__inst_executed_pipe_tensor_op_dmma.sum",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
]
REFERENCES = ["engine", "cub", "read-bound"]


def parse_size(text):
    m = re.fullmatch(r"2\^(\d+)", text)
    return 1 << int(m.group(1)) if m else int(text)


def rung_ids(binary):
    listing = subprocess.run([binary, "ladder", "--rung", "list"], check=True, capture_output=True, text=True).stdout
    ids = []
    for line in listing.splitlines()[1:]:
        if not line.strip():
            break
        ids.append(line.split()[0])
    return ids


def number(text):
    text = text.replace(",", "").strip()
    try:
        return float(text)
    except ValueError:
        return 0.0


def profile(binary, row, args, n):
    cmd = ["ncu", "--csv", "--page", "raw", "--profile-from-start", "off", "--clock-control", "none",
           "--metrics", ",".join(METRICS), binary, "ladder", "--profile-pass", "--rung", row,
           "--n", str(n), "--type", args.type, "--op", args.op, "--block", str(args.block), "--seed", "1"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{row}: ncu exited with {done.returncode}\n{done.stderr[-2000:]}\n{done.stdout[-2000:]}")
    lines = [line for line in done.stdout.splitlines() if line.startswith('"')]
    table = list(csv.reader(io.StringIO("\n".join(lines))))
    if len(table) < 3:
        raise RuntimeError(f"{row}: no kernel was profiled\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    header, kernels = table[0], table[2:]  # table[1] holds the units
    col = {name: i for i, name in enumerate(header)}
    missing = [m for m in METRICS if m not in col]
    get = lambda k, m: number(k[col[m]]) if m in col else 0.0
    time = [get(k, "gpu__time_duration.sum") for k in kernels]
    total = sum(time) or 1.0
    weighted = lambda m: sum(get(k, m) * t for k, t in zip(kernels, time)) / total
    inst = sum(get(k, "smsp__inst_executed.sum") for k in kernels)
    thread_inst = sum(get(k, "smsp__thread_inst_executed_pred_on.sum") for k in kernels)
    requests = sum(get(k, "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum") +
                   get(k, "sm__sass_l1tex_t_requests_pipe_lsu_mem_global_op_ldgsts.sum") for k in kernels)
    names = []
    for k in kernels:
        name = k[col["Kernel Name"]] if "Kernel Name" in col else "?"
        if name not in names:
            names.append(name)
    return {
        "rung": row,
        "launches": len(kernels),
        "kernels": names,
        "time_us": sum(time) / 1e3,  # ncu reports ns; kernels serialised under the profiler
        "dram_pct": weighted("dram__throughput.avg.pct_of_peak_sustained_elapsed"),
        "warp_efficiency": 100.0 * thread_inst / (32.0 * inst) if inst else 0.0,
        "divergent_branches": sum(get(k, "smsp__sass_branch_targets_threads_divergent.sum") for k in kernels),
        "bank_conflicts": sum(get(k, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum") +
                              get(k, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum") for k in kernels),
        "occupancy_pct": weighted("sm__warps_active.avg.pct_of_peak_sustained_active"),
        "inst_per_element": inst / n if n else 0.0,
        "requests_per_kelement": 1000.0 * requests / n if n else 0.0,
        "hmma_inst": sum(get(k, "sm__inst_executed_pipe_tensor_op_hmma.sum") for k in kernels),
        "dmma_inst": sum(get(k, "sm__inst_executed_pipe_tensor_op_dmma.sum") for k in kernels),
        "tensor_pct": weighted("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"),
        "missing_metrics": missing,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--binary", default="build/fastreduce")
    parser.add_argument("--n", default="2^24")
    parser.add_argument("--type", default="float")
    parser.add_argument("--op", default="sum")
    parser.add_argument("--block", type=int, default=256)
    parser.add_argument("--rungs", default="all", help="comma-separated ids, or all (rungs and reference rows)")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    n = parse_size(args.n)
    rows = rung_ids(args.binary) + [r for r in REFERENCES if r != "cub" or args.op == "sum"]
    if args.rungs != "all":
        rows = args.rungs.split(",")
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                         text=True).stdout.strip().splitlines()
    version = subprocess.run(["ncu", "--version"], capture_output=True, text=True).stdout.strip().splitlines()
    result = {"device": {"name": gpu[0] if gpu else "unknown"}, "n": n, "type": args.type, "op": args.op,
              "block": args.block, "date": datetime.date.today().isoformat(),
              "ncu": version[-1] if version else "unknown", "metrics": METRICS, "rows": []}
    for i, row in enumerate(rows, 1):
        print(f"[profile] {i}/{len(rows)} {row}", file=sys.stderr, flush=True)
        result["rows"].append(profile(args.binary, row, args, n))
    with open(args.out, "w") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    print(f"wrote {args.out}: {len(rows)} rows", file=sys.stderr)


if __name__ == "__main__":
    main()
