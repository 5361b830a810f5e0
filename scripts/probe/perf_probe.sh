#!/usr/bin/env bash
# Performance probe on a GPU machine: kernel variants vs CUB, resources and SASS of the
# engine kernels, and Nsight Compute durations. Expects build-gpu/ (scripts/gpu-check.sh build).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-probe-logs}
mkdir -p "$OUT"
if [ -x .carry/engine_variants ]; then .carry/engine_variants | tee "$OUT/variants.txt"; fi
obj=build-gpu/CMakeFiles/fastreduce.dir/src/engine/engine_float.cu.o
cuobjdump -res-usage "$obj" 2>/dev/null | grep -A1 -E "repro_sum_kernel|fast_reduce_kernel.*Sum" | grep -E "REG|Function" | head -8
for k in repro_sum_kernelIfE fast_reduce_kernelILj256ELj4ELNS0_8LoadHintE0EfNS_3SumE; do
  f=$(cuobjdump -sass "$obj" | grep -o "Function : [^ ]*$k[^ ]*" | head -1 | cut -d' ' -f3)
  cuobjdump -sass -fun "$f" "$obj" > "$OUT/sass_${k:0:16}.txt" 2>&1
  echo "$k: $(grep -c LDG "$OUT/sass_${k:0:16}.txt") LDG, $(grep -c DADD "$OUT/sass_${k:0:16}.txt") DADD, $(grep -c F2F "$OUT/sass_${k:0:16}.txt") F2F"
done
for p in 20 22 24; do
  ncu --clock-control none -k regex:"reduce_kernel|repro_sum|DeviceReduce" -c 12 \
    --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__grid_size \
    build-gpu/fastreduce bench --sizes 2^$p --types float --ops sum --modes fast,reproducible --skip-thrust --repetitions 1 \
    > "$OUT/ncu_2p$p.txt" 2>&1
  grep -E "reduce_kernel|repro_sum|DeviceReduce|gpu__time|dram__|grid_size" "$OUT/ncu_2p$p.txt" | sed 's/  */ /g' | cut -c1-110 | head -36 | awk 'NR%1==0' > "$OUT/ncu_2p${p}_short.txt"
done
