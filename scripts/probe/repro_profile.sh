#!/usr/bin/env bash
# Where reproducible mode's time goes: code size of the engine kernels, Nsight Compute's
# duration, issue and stall breakdown of the fast and reproducible float sums at 2^16, 2^24 and
# 2^28, and per-instruction stall samples of the reproducible kernel at 2^26.
# Usage: scripts/probe/repro_profile.sh [BUILD_DIR]  (logs under $OUT)
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN=${1:-build-gpu}
OUT=${OUT:-probe-logs}
mkdir -p "$OUT"
obj=$(find "$BIN" -name 'engine_float.cu.o' | head -1)
if [ -n "$obj" ]; then
  cuobjdump -sass "$obj" | awk '/Function :/ {name=$3} /\/\*[0-9a-f]+\*\// {last[name]=$0} END {for (n in last) print n, last[n]}' |
    grep -E "repro|fast_reduce_kernel.*Sum|bulk_reduce_kernel.*Sum" | sed -E 's/ +/ /g' | cut -c1-160 > "$OUT/code_size.txt"
  cat "$OUT/code_size.txt"
fi
metrics=gpu__time_duration.sum,sm__cycles_active.avg,sm__cycles_elapsed.avg,dram__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum
metrics+=",regex:smsp__warp_issue_stalled_.*_per_warp_active\\.pct"
# One bench per mode, so the first two kernels profiled are that mode's (the fast mode picks
# its load or bulk-copy kernel by size; CUB's kernels do not match the pattern).
for p in 16 24 28; do
  for mode in fast reproducible; do
    ncu --clock-control none -k regex:"reduce_kernel|repro_sum" -c 2 --metrics "$metrics" \
      "$BIN/fastreduce" bench --sizes 2^$p --types float --ops sum --modes $mode --skip-thrust --repetitions 1 \
      > "$OUT/ncu_${mode}_2p$p.txt" 2>&1
  done
done
# Per-instruction stall samples of the reproducible kernel at 2^26 (SASS, CSV).
ncu --clock-control none -k regex:repro -c 1 --section SourceCounters --section WarpStateStats \
  --page source --print-source sass --csv \
  "$BIN/fastreduce" bench --sizes 2^26 --types float --ops sum --modes reproducible --skip-thrust --repetitions 1 \
  > "$OUT/ncu_repro_sass_2p26.csv" 2> "$OUT/ncu_repro_sass_2p26.err"
