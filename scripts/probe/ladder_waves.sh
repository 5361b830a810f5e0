#!/usr/bin/env bash
# Nsight Compute on rung 8's first level at 2^28 floats: duration, waves per SM, achieved
# occupancy and DRAM throughput for F = 8 ... 64 (why large F can lose on some GPUs).
# Expects build-gpu/ (scripts/gpu-check.sh build).
set -uo pipefail
cd "$(dirname "$0")/../.."
for f in 8 16 32 64; do
  echo "== rung 8f$f"
  ncu --clock-control none -k regex:coarsened_load_kernel -c 1 \
    --metrics gpu__time_duration.sum,launch__grid_size,launch__waves_per_multiprocessor,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed \
    build-gpu/fastreduce ladder --n 2^28 --rung 8f$f --repetitions 1 --format csv 2>&1 |
    grep -E "gpu__time|grid_size|waves|registers|warps_active|dram__" | sed 's/  */ /g'
done
