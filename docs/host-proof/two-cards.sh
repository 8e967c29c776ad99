#!/usr/bin/env bash
# Record the host proof on a host of two cards (or more), from the repository root: the proof Pods on card 1
# (`--device 1`), a whole-card process on card 0 and the cross-card process beside them; then the Pods on card 0.
# Usage: docs/host-proof/two-cards.sh LIBVGPU EXPECT_DIR OUT_DIR [TARBALL]
#   LIBVGPU    libvgpu.so built from HAMi-core's source (a Debug build: Release hides the hooked symbols)
#   EXPECT_DIR k3s.json, cluster.json from `python -m components.verify.host STACK --write-expect`
#   OUT_DIR    one folder per run (verdict.json, evidence.json, expect.json, log)
#   TARBALL    where OUT_DIR is packed after each run (default OUT_DIR.tgz)
# Holds are 5 s, as record.sh's. Each line of runs.txt is `NAME exit N in S s`: exit 1 is a verdict that failed.
set -uo pipefail
lib=$1 expects=$2 out=$3 tarball=${4:-$3.tgz}
mkdir -p "$out"
trap 'for d in /tmp/gpushare-host-*/mps/pipe; do [ -d "$d" ] && echo quit | CUDA_MPS_PIPE_DIRECTORY=$d nvidia-cuda-mps-control; done' EXIT
nvidia-smi --query-gpu=index,name,memory.total,driver_version,compute_mode,uuid --format=csv >"$out/cards.csv" 2>&1
run() {  # NAME STACK ARGS...: one host proof, its folder, its line in runs.txt
  local name=$1 stack=$2 start=$SECONDS
  shift 2
  mkdir -p "$out/$name"
  python3 -m components.verify.host "$stack" --expect "$expects/$stack.json" --hold-seconds 5 --out "$out/$name" "$@" \
    >"$out/$name/log" 2>&1
  echo "$name exit $? in $((SECONDS - start)) s" | tee -a "$out/runs.txt"
  tar -czf "$tarball" -C "$(dirname "$out")" "$(basename "$out")"
}
run cluster-hami-core-card1 cluster --lib "$lib" --device 1
run k3s-hami-core-card1 k3s --lib "$lib" --device 1
run cluster-bare-card1 cluster --device 1
run cluster-mps-card1 cluster --mps --device 1
run cluster-hami-core-card0 cluster --lib "$lib" --device 0
