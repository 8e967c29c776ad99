#!/usr/bin/env bash
# Record the neighbour steps (a fault beside a neighbour, a bandwidth hog beside it), the env-less first toucher,
# HAMi-core's compute curve and the `cluster` host proof with the new steps, on one GPU host, from the repository root.
# Usage: docs/host-proof/record-neighbours.sh LIBVGPU EXPECT_DIR OUT_DIR [TARBALL]
#   LIBVGPU    libvgpu.so built from HAMi-core's source (a Debug build: Release hides the hooked symbols)
#   EXPECT_DIR cluster.json from `python -m components.verify.host cluster --write-expect`
#   OUT_DIR    neighbours/, host-proof/, compute-curve/ and one log per step; packed into TARBALL after each step
set -uo pipefail
lib=$1 expects=$2 out=$3 tarball=${4:-$3.tgz}
mkdir -p "$out"
pack() { tar -czf "$tarball" -C "$(dirname "$out")" "$(basename "$out")"; }
# Every MPS daemon started here is told to quit, also when a step was killed before it could.
quit_mps() {
  for d in "$out"/*/mps-daemon/pipe /tmp/gpushare-host-*/mps/pipe; do
    [ -d "$d" ] && echo quit | CUDA_MPS_PIPE_DIRECTORY=$d nvidia-cuda-mps-control
  done
  return 0
}
trap 'quit_mps; pack' EXIT
nvidia-smi --query-gpu=name,memory.total,driver_version,compute_mode --format=csv >"$out/card.csv" 2>&1
step() {
  local name=$1 started=$SECONDS
  shift
  "$@" >"$out/$name.log" 2>&1
  echo "$name exit $? in $((SECONDS - started)) s" | tee -a "$out/runs.txt"
  pack
}
step neighbours timeout 200 python3 tests/bench/neighbours.py --lib "$lib" --out "$out/neighbours" --first-toucher
step host-proof timeout 150 python3 tests/bench/host_proof_time.py --expect-dir "$expects" --lib "$lib" \
  --runs cluster:hami-core --out "$out/host-proof"
step compute-curve timeout 330 python3 tests/bench/compute_curve.py --lib "$lib" --out "$out/compute-curve"
step host-proof-mps timeout 150 python3 -m components.verify.host cluster --expect "$expects/cluster.json" --mps \
  --hold-seconds 5 --out "$out/host-proof/cluster-mps"
quit_mps
