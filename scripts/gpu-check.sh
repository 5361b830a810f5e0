#!/usr/bin/env bash
# Everything that needs a GPU, in one go: build, the GPU test tier, compute-sanitizer
# (memcheck, racecheck, synccheck) over the GPU tests in quick mode, the GPU tier again from
# builds for other architecture lists, the ladder at 2^24 and 2^28 floats (with int32, block sweeps
# and half the SMs held), Nsight Compute counters for every rung, the bench against CUB
# and Thrust, argmax/var/norm2/dot against CUB, cuBLAS and torch, the axis bench against CUB and torch, the multi-GPU bench (NCCL, every GPU of the
# machine) and the accuracy report.
# Logs go under $OUT (or ./gpu-check-logs). Pick stages by name; default: all of them.
#   scripts/gpu-check.sh                     # build test sanitize arch ladder profile bench ops axis gpus accuracy
#   scripts/gpu-check.sh build test
#   scripts/gpu-check.sh build tier3          # the GPU tier three times, fresh seeds each time
#   TIER_SHARDS=4 scripts/gpu-check.sh tier3  # ... each run as four parallel shards
#   PY_RUNS=3 PY_BENCH=--quick scripts/gpu-check.sh python  # the Python package, its GPU tier, its bench
#   scripts/gpu-check.sh build axisops        # bench-axis of every op of the family against Sum (and torch)
#   CMAKE_ARGS=-DFASTREDUCE_CCCL_RFA_INCLUDE=/path/to/cccl-3.5/include scripts/gpu-check.sh build exact
#                                             # Mode::Exact against fast mode and CCCL's gpu_to_gpu Sum
#   BASE_DIR=../old scripts/gpu-check.sh build compare  # the old tree's binary against this one, same benches
#   ARCHS="80 80;90" scripts/gpu-check.sh arch
#   CMAKE_ARGS=-DFASTREDUCE_NCCL_ROOT=/path/to/nccl scripts/gpu-check.sh build test gpus
set -uo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}  # NCCL without NVLink multicast (the tests and the multi-GPU bench)
OUT=${OUT:-gpu-check-logs}
mkdir -p "$OUT"
BUILD_DIR=${BUILD_DIR:-build-gpu}
stages=("$@")
[ ${#stages[@]} -eq 0 ] && stages=(build test sanitize arch ladder profile bench ops axis gpus accuracy)
want() { [[ " ${stages[*]} " == *" $1 "* ]]; }
status=0
step() { echo; echo "== $1 ($(date +%T))"; }
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | tr ' ' '_')
stamp=$(date +%Y-%m-%d)
summary=()

# build DIR [cmake args...]: configure and build the tests and the tool into DIR.
build() {
  local dir=$1; shift
  local start=$(date +%s)
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" > "$OUT/configure_$(basename "$dir").log" 2>&1 &&
    cmake --build "$dir" -j "$(nproc)" > "$OUT/build_$(basename "$dir").log" 2>&1 ||
    { tail -30 "$OUT/build_$(basename "$dir").log"; return 1; }
  summary+=("build $(basename "$dir") ($*): ok in $(( $(date +%s) - start )) s")
}

# gpu_tier DIR LABEL: the GPU tests of a build (FirstCall.* in a process of its own). With
# TIER_SHARDS=k > 1 the tests run as k gtest shards in parallel processes (their CPU references
# dominate the time) beside one process for Axis.* (its last test checks that the others took
# every path), then SharedGpu.* and Bench.* alone (the first times reductions against a kernel
# holding SMs; the second, a contender's host time between two events, which a GPU time-sliced
# between many processes does not show: run beside 20 other test processes on an H100 it measured
# 2-3 us for 200 us, three runs out of three).
gpu_tier() {
  local dir=$1 label=$2 rc=0 shards=${TIER_SHARDS:-1}
  local log="$OUT/gpu_tests_$label.log"
  if [ "$shards" -gt 1 ]; then
    local pids=() i
    for ((i = 0; i < shards; i++)); do
      GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i "$dir/fastreduce_gpu_tests" \
        --gtest_filter=-FirstCall.*:SharedGpu.*:Bench.*:Axis.* > "$log.shard$i" 2>&1 &
      pids+=($!)
    done
    "$dir/fastreduce_gpu_tests" --gtest_filter=Axis.* > "$log.shardaxis" 2>&1 &
    pids+=($!)
    for i in "${pids[@]}"; do wait "$i" || rc=1; done
    "$dir/fastreduce_gpu_tests" --gtest_filter=SharedGpu.*:Bench.* > "$log.shared" 2>&1 || rc=1
    cat "$log".shard* "$log.shared" > "$log" && rm -f "$log".shard* "$log.shared"
  else
    "$dir/fastreduce_gpu_tests" --gtest_filter=-FirstCall.* > "$log" 2>&1 || rc=1
  fi
  "$dir/fastreduce_gpu_tests" --gtest_filter=FirstCall.* >> "$log" 2>&1 || rc=1
  local passed
  passed=$(grep -E '^\[  PASSED  \] [0-9]+ test' "$log" | awk '{s += $4} END {print s + 0}')
  summary+=("gpu tests ($label): $passed passed; $(grep -cE '^\[  FAILED  \] [A-Za-z]' "$log") failed lines; $(grep -E '^\[  (FAILED|SKIPPED)  \] [0-9]' "$log" | tr '\n' ' ') rc=$rc")
  grep -E '^\[  FAILED|Failure' "$log" | head -20
  [ $rc -ne 0 ] && status=1
  return 0
}

if want build; then
  step build
  build "$BUILD_DIR" ${CMAKE_ARGS:-} || exit 1
fi
BIN=$BUILD_DIR
if want test; then
  step "tests (CPU and GPU tier)"
  "$BIN/fastreduce_cpu_tests" > "$OUT/cpu_tests.log" 2>&1; rc=$?
  summary+=("cpu tests: $(grep -E '^\[  (PASSED|FAILED)' "$OUT/cpu_tests.log" | tr '\n' ' ') rc=$rc")
  [ $rc -ne 0 ] && status=1
  gpu_tier "$BIN" sm90
fi
if want tier3; then
  # A test that fails one run in three is a failing test: three runs, each drawing fresh seeds.
  for run in $(seq 1 "${TIER_RUNS:-3}"); do
    step "GPU tier, run $run of ${TIER_RUNS:-3}"
    gpu_tier "$BIN" "run$run"
  done
fi
if want sanitize; then
  # SharedGpu.* times a reduction against a kernel that holds SMs: the tools serialise kernels.
  # FirstCall.* needs a fresh process (it runs in the test stage).
  for tool in memcheck racecheck synccheck; do
    step "compute-sanitizer $tool"
    FASTREDUCE_TEST_QUICK=1 timeout "${SANITIZE_TIMEOUT:-900}" compute-sanitizer --tool "$tool" --error-exitcode 9 \
      "$BIN/fastreduce_gpu_tests" --gtest_filter="${SANITIZE_FILTER:--SharedGpu.*:FirstCall.*:MultiRank.Nccl*}" > "$OUT/sanitize_$tool.log" 2>&1; rc=$?
    summary+=("sanitizer $tool: $(grep -E '^\[  PASSED|ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitize_$tool.log" | tail -2 | tr '\n' ' ') rc=$rc")
    [ $rc -ne 0 ] && status=1
  done
  # NCCL's communicator set-up probes the driver and reports API errors of its own (no kernel
  # image for its other architectures, peer access already enabled): memcheck without them.
  if "$BIN/fastreduce_gpu_tests" --gtest_list_tests | grep -q Nccl; then
    step "compute-sanitizer memcheck (NCCL tests)"
    FASTREDUCE_TEST_QUICK=1 timeout 600 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 \
      "$BIN/fastreduce_gpu_tests" --gtest_filter='MultiRank.Nccl*' > "$OUT/sanitize_memcheck_nccl.log" 2>&1; rc=$?
    summary+=("sanitizer memcheck (NCCL tests): $(grep -E '^\[  PASSED|ERROR SUMMARY' "$OUT/sanitize_memcheck_nccl.log" | tail -2 | tr '\n' ' ') rc=$rc")
    [ $rc -ne 0 ] && status=1
  fi
fi
if want python; then
  # The Python package from this tree (no package index there: its build needs come installed), its
  # GPU tier PY_RUNS times (fresh seeds each), and with PY_BENCH set (arguments of
  # `python -m fastreduce.bench`) the per-call bench against torch.
  step "Python package, tests and bench"
  start=$(date +%s)
  if CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) python3 -m pip install -q --no-build-isolation --no-deps --no-index . \
      > "$OUT/pip.log" 2>&1; then
    summary+=("python package: installed in $(( $(date +%s) - start )) s")
    for run in $(seq 1 "${PY_RUNS:-1}"); do
      python3 -m pytest -q -rs -p no:cacheprovider tests/python > "$OUT/pytest_run$run.log" 2>&1 || status=1
      summary+=("pytest run $run: $(tail -1 "$OUT/pytest_run$run.log")")
    done
    if [ -n "${PY_BENCH:-}" ]; then
      # shellcheck disable=SC2086
      python3 -m fastreduce.bench $PY_BENCH --csv "$OUT/python_bench.csv" > "$OUT/python_bench.txt" 2>&1 || status=1
    fi
  else
    tail -20 "$OUT/pip.log"
    summary+=("python package: pip install failed")
    status=1
  fi
fi
if want arch; then
  # Builds for other architectures (each GPU runs the paths its compiled code has).
  IFS=' ' read -r -a archs <<< "${ARCHS:-80 80;90}"
  for a in "${archs[@]}"; do
    step "build and GPU tier for CMAKE_CUDA_ARCHITECTURES=$a"
    dir="build-arch-${a//;/-}"
    build "$dir" "-DCMAKE_CUDA_ARCHITECTURES=$a" && gpu_tier "$dir" "arch-${a//;/-}" || status=1
  done
fi
if want ladder; then
  step ladder
  for p in 20 24 28; do
    "$BIN/fastreduce" ladder --n "2^$p" --format json > "$OUT/ladder_2p${p}.json" 2> "$OUT/ladder_2p${p}.err" || status=1
  done
  for p in 24 28; do
    "$BIN/fastreduce" ladder --n "2^$p" --seed 1 > "$OUT/ladder_2p${p}.txt" 2>/dev/null || status=1
    head -32 "$OUT/ladder_2p${p}.txt"
  done
  "$BIN/fastreduce" ladder --n 2^24 --sweep-blocks --format json > "$OUT/ladder_sweep_2p24.json" 2>/dev/null || status=1
  # int32, where rung 10's single-instruction warp reduction applies.
  "$BIN/fastreduce" ladder --n 2^24 --type int32 --format json > "$OUT/ladder_int32_2p24.json" 2>/dev/null || status=1
  # Another kernel holds half the SMs: which rows still finish.
  sms=$("$BIN/fastreduce" info 2>/dev/null | awk '/^SMs/ {print $2}')
  "$BIN/fastreduce" ladder --n 2^24 --hold-sms "$(( ${sms:-2} / 2 ))" --format json > "$OUT/ladder_held_2p24.json" 2>/dev/null || status=1
  summary+=("ladder: $(grep -c '✅ pass' "$OUT/ladder_2p28.txt") rows pass at 2^28")
fi
if want profile; then
  # Nsight Compute counters for every rung and reference row (scripts/ladder_profile.py).
  step "profile (ncu)"
  for p in 24 28; do
    python3 scripts/ladder_profile.py --binary "$BIN/fastreduce" --n "2^$p" --out "$OUT/ladder_ncu_2p${p}.json" \
      2> "$OUT/ladder_ncu_2p${p}.log" || { tail -5 "$OUT/ladder_ncu_2p${p}.log"; status=1; }
  done
  python3 scripts/ladder_profile.py --binary "$BIN/fastreduce" --n 2^24 --type int32 --rungs 8f16,9,10,11,12 \
    --out "$OUT/ladder_ncu_int32_2p24.json" 2> "$OUT/ladder_ncu_int32_2p24.log" || status=1
  summary+=("profile: $(grep -c '"rung"' "$OUT"/ladder_ncu_2p24.json 2>/dev/null) rows at 2^24")
fi
if want bench; then
  step bench
  "$BIN/fastreduce" bench --modes fast,reproducible --types float --ops sum --format json > "$OUT/bench_float_modes.json" 2>"$OUT/bench.err" || status=1
  "$BIN/fastreduce" bench --format json ${BENCH_ARGS:-} > "$OUT/bench.json" 2>>"$OUT/bench.err" || status=1
fi
if want ops; then
  # argmax, var, norm2 and dot (fastreduce/reduce.cuh, stats.cuh) against fast Sum over the same
  # bytes, CUB's ArgMax, cuBLAS's nrm2 and dot, and (with torch) torch's, same run.
  step "ops bench"
  if python3 -c "import torch" 2>/dev/null; then
    python3 scripts/bench_ops_torch.py --cli "$BIN/fastreduce" --out "$OUT/ops.json" > "$OUT/ops.txt" 2>"$OUT/ops.err" || status=1
  else
    "$BIN/fastreduce" bench --ops argmax,var,norm2,dot --sizes 2^14,2^16,2^18,2^20,2^22,2^24,2^26,2^28 > "$OUT/ops.txt" 2>"$OUT/ops.err" || status=1
  fi
  summary+=("ops bench: $(grep -c ' yes' "$OUT/ops.txt") rows agree, $(grep -c ' NO' "$OUT/ops.txt") differ")
fi
if want axis; then
  step "axis bench"
  "$BIN/fastreduce" bench-axis --format json --plot "$OUT/bench_axis.png" > "$OUT/bench_axis.json" 2>"$OUT/bench_axis.err" || status=1
  # Reproducible against fast mode, same run: float sums over rows and columns of 4096 and more.
  "$BIN/fastreduce" bench-axis --types float --ops sum --axes rows,columns --modes fast,reproducible \
    --lengths 4096,2^16,2^20,2^22,2^24,2^26 --format json > "$OUT/bench_axis_modes.json" 2>>"$OUT/bench_axis.err" || status=1
  if python3 -c "import torch" 2>/dev/null; then
    python3 scripts/bench_axis_torch.py --out "$OUT/bench_axis_torch.json" > "$OUT/bench_axis_torch.log" 2>&1 || status=1
  fi
  summary+=("axis bench: $(grep -c '"path"' "$OUT/bench_axis.json") shapes timed")
fi
if want axisops; then
  # Every op of the family over the bench-axis shapes, each row against Sum on the same shape.
  step "axis bench of the family's ops"
  "$BIN/fastreduce" bench-axis --ops ${AXIS_OPS:-sum,argmax,mean,var,norm1,norm2,dot,sumsq} --types float \
    --format json ${AXIS_ARGS:-} > "$OUT/bench_axis_ops.json" 2>"$OUT/bench_axis_ops.err" || status=1
  if python3 -c "import torch" 2>/dev/null; then
    python3 scripts/bench_axis_torch.py --ops sum,argmax,var,norm2 --types float \
      --out "$OUT/bench_axis_ops_torch.json" > "$OUT/bench_axis_ops_torch.log" 2>&1 || status=1
  fi
  summary+=("axis ops bench: $(grep -c '"path"' "$OUT/bench_axis_ops.json") rows")
fi
if want compare; then
  # The old tree (BASE_DIR) built beside this one, the same benches run by both binaries back to
  # back in this call; scripts/compare_runs.py reads each row against its same-process peer.
  step "old ($BASE_DIR) against new"
  if [ -z "${BASE_DIR:-}" ]; then echo "compare: set BASE_DIR to the old source tree"; exit 2; fi
  [ -x build-base/fastreduce ] || (cd "$BASE_DIR" && cmake -S . -B "$OLDPWD/build-base" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DFASTREDUCE_BUILD_TESTS=OFF > "$OUT/configure_base.log" 2>&1 && cmake --build "$OLDPWD/build-base" -j "$(nproc)" \
      --target fastreduce_cli > "$OUT/build_base.log" 2>&1) || { tail -20 "$OUT/build_base.log"; exit 1; }
  for side in old new; do
    bin=$BIN/fastreduce; [ $side = old ] && bin=build-base/fastreduce
    "$bin" bench --modes fast,reproducible --format json ${COMPARE_BENCH_ARGS:-} > "$OUT/compare_bench_$side.json" 2>>"$OUT/compare.err" || status=1
    "$bin" bench-axis --format json ${COMPARE_AXIS_ARGS:-} > "$OUT/compare_axis_$side.json" 2>>"$OUT/compare.err" || status=1
    "$bin" bench --ops argmax,var,norm2,dot --sizes 2^14,2^16,2^18,2^20,2^22,2^24,2^26,2^28 --format json \
      > "$OUT/compare_ops_$side.json" 2>>"$OUT/compare.err" || status=1
  done
  for what in bench axis ops; do
    echo "-- $what"
    python3 scripts/compare_runs.py "$OUT/compare_${what}_old.json" "$OUT/compare_${what}_new.json" | tail -30 || status=1
  done
fi
if want gpus; then
  # The multi-GPU sum through NCCL, one rank per GPU, on 1 and every GPU count up to the machine's.
  step "multi-GPU bench"
  count=$(nvidia-smi -L 2>/dev/null | wc -l)
  list=1; for ((g = 2; g <= count; g *= 2)); do list="$list,$g"; done
  nvidia-smi topo -m > "$OUT/gpus_topology.txt" 2>&1
  "$BIN/fastreduce" bench --gpus "$list" --modes fast,reproducible,exact --format json > "$OUT/bench_gpus.json" 2>"$OUT/bench_gpus.err" || status=1
  "$BIN/fastreduce" bench --gpus "$list" --modes fast,reproducible,exact --repetitions 9 > "$OUT/bench_gpus.txt" 2>>"$OUT/bench_gpus.err" || status=1
  summary+=("multi-GPU bench on $count GPU(s): --gpus $list, $(grep -c '"collective_us"' "$OUT/bench_gpus.json") rows")
fi
if want exact; then
  # Mode::Exact against fast and reproducible mode (1-D: float, double, bfloat16; bench-axis: float and
  # bfloat16 rows, columns and segments) and, where the build has fastreduce_cccl_rfa (configured with
  # -DFASTREDUCE_CCCL_RFA_INCLUDE: CCCL >= 3.5 headers), CCCL's gpu_to_gpu Sum over the same sizes.
  step "exact bench"
  sizes=${EXACT_SIZES:-2^10,2^12,2^14,2^16,2^18,2^20,2^22,2^24,2^26,2^28,2^30}
  "$BIN/fastreduce" bench --modes fast,reproducible,exact --types float,double,bfloat16 --ops sum --sizes "$sizes" \
    --skip-thrust --format json > "$OUT/bench_exact.json" 2>"$OUT/bench_exact.err" || status=1
  "$BIN/fastreduce" bench-axis --types float,bfloat16 --ops sum --modes fast,reproducible,exact \
    ${EXACT_AXIS_ARGS:---totals 2^24 --lengths 1,16,256,4096,2^16,2^20} --format json > "$OUT/bench_axis_exact.json" \
    2>>"$OUT/bench_exact.err" || status=1
  # The sum-like ops of the family with an exact form (mean, L1; L2, dot, var and std over one
  # output): one row of 2^24 and 2^28 elements, fast and exact.
  "$BIN/fastreduce" bench-axis --types float,bfloat16 --ops sum,mean,norm1,norm2,dot,var,std --modes fast,exact --axes rows \
    --totals 2^24,2^28 --lengths 2^24,2^28 --format json > "$OUT/bench_exact_ops.json" 2>>"$OUT/bench_exact.err" || status=1
  # Adversarial data: exponents over each type's whole range, both signs (every batch of an exact
  # lane likely takes the slow path).
  "$BIN/fastreduce" bench --data wide --modes fast,reproducible,exact --types float,double,bfloat16 --ops sum \
    --sizes 2^20,2^24,2^28 --skip-thrust --format json > "$OUT/bench_exact_wide.json" 2>>"$OUT/bench_exact.err" || status=1
  if [ -x "$BIN/fastreduce_cccl_rfa" ]; then
    "$BIN/fastreduce_cccl_rfa" --sizes "$sizes" --format json > "$OUT/cccl_rfa.json" 2>>"$OUT/bench_exact.err" || status=1
    python3 scripts/exact_vs_cccl.py "$OUT/bench_exact.json" "$OUT/cccl_rfa.json" --out "$OUT/exact_vs_cccl.md" || status=1
  fi
  summary+=("exact bench: $(grep -c '"mode": "exact"' "$OUT/bench_exact.json") 1-D rows, CCCL rows: $(grep -c '"cccl_rfa_us"' "$OUT/cccl_rfa.json" 2>/dev/null)")
fi
if want accuracy; then
  step accuracy
  for t in float double; do
    "$BIN/fastreduce" accuracy --type $t | tee "$OUT/accuracy_${t}.txt" | tail -25 || status=1
  done
fi
echo; echo "== summary on ${gpu:-unknown GPU}, $stamp"
printf '%s\n' "${summary[@]}"
exit $status
