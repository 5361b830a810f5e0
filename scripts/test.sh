#!/usr/bin/env bash
# Installs what is missing (Debian/Ubuntu packages), builds, and runs every test: the CPU tier,
# the GPU tier (reported as skipped without a GPU), the CMake package (installed, then used by
# examples/consumer through find_package, and the same consumer building this tree through
# add_subdirectory), the Python package (pip install . in a virtual environment, then pytest), and
# the check that the README's tables match the committed results.
#   scripts/test.sh            # build into ./build and run ctest
#   BUILD_DIR=out JOBS=8 scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-$(nproc)}

need=()
command -v cmake >/dev/null || need+=(cmake)
command -v ninja >/dev/null || need+=(ninja-build)
command -v g++ >/dev/null || need+=(g++)
python3 -c "import venv, ensurepip" 2>/dev/null || need+=(python3-venv)
[ -d /usr/include/gtest ] || need+=(libgtest-dev)
[ -f /usr/include/CLI/CLI.hpp ] || need+=(libcli11-dev)
[ -f /usr/include/nlohmann/json.hpp ] || need+=(nlohmann-json3-dev)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}"
fi
if ! command -v nvcc >/dev/null; then
  if [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH
  else echo "error: the CUDA toolkit (nvcc) is required; install it from NVIDIA" >&2; exit 1; fi
fi

start=$(date +%s)
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release ${CMAKE_ARGS:-}
cmake --build "$BUILD_DIR" -j "$JOBS"
echo "build took $(( $(date +%s) - start )) s"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$JOBS"

echo "== the CMake package and examples/consumer"
rm -rf "$BUILD_DIR/install" "$BUILD_DIR/consumer-package" "$BUILD_DIR/consumer-subdirectory"
cmake --install "$BUILD_DIR" --prefix "$BUILD_DIR/install" > /dev/null
cmake -S examples/consumer -B "$BUILD_DIR/consumer-package" -G Ninja -DCMAKE_PREFIX_PATH="$PWD/$BUILD_DIR/install" > /dev/null
cmake --build "$BUILD_DIR/consumer-package"
cmake -S examples/consumer -B "$BUILD_DIR/consumer-subdirectory" -G Ninja -DFASTREDUCE_SOURCE_DIR="$PWD" > /dev/null
cmake --build "$BUILD_DIR/consumer-subdirectory" -j "$JOBS"

echo "== the Python package: pip install . in a virtual environment, then tests/python (the GPU tier skips without a GPU)"
rm -rf "$BUILD_DIR/venv"
python3 -m venv "$BUILD_DIR/venv"
CMAKE_BUILD_PARALLEL_LEVEL="$JOBS" "$BUILD_DIR/venv/bin/pip" install -q . pytest
"$BUILD_DIR/venv/bin/python" -m pytest -q -rs tests/python

echo "== README tables against docs/results"
python3 scripts/results_tables.py --check
echo "all done in $(( $(date +%s) - start )) s"
