#!/usr/bin/env bash
# Record the host proof and the HAMi-core-vs-MPS comparison on one GPU host, from the repository root.
# Usage: docs/host-proof/record.sh LIBVGPU EXPECT_DIR OUT_DIR [TARBALL]
#   LIBVGPU    libvgpu.so built from HAMi-core's source (a Debug build: Release hides the hooked symbols)
#   EXPECT_DIR gke.json, k3s.json, cluster.json from `python -m components.verify.host STACK --write-expect`
#   OUT_DIR    one folder per run (verdict.json, evidence.json, log), plus the comparison
#   TARBALL    where OUT_DIR is packed after each run (default OUT_DIR.tgz)
# Holds are 5 s (the stacks ask 30 s of a Pod, which a cluster needs for its other checks, a host does not).
set -uo pipefail
lib=$1 expects=$2 out=$3 tarball=${4:-$3.tgz}
mkdir -p "$out"
# The comparison stops its MPS daemon itself; this covers a run killed before it could.
trap 'for d in /tmp/gpushare-host-*/mps/pipe; do [ -d "$d" ] && echo quit | CUDA_MPS_PIPE_DIRECTORY=$d nvidia-cuda-mps-control; done' EXIT
nvidia-smi --query-gpu=name,memory.total,driver_version,compute_mode --format=csv >"$out/card.csv" 2>&1
start=$SECONDS
# HAMi-core and MPS on the cluster stack's quotas (4000 MiB, 30 %): cluster-hami-core/, cluster-mps/, comparison.*
python3 -m components.verify.host compare --expect "$expects/cluster.json" --lib "$lib" --out "$out" \
  --hold-seconds 5 >"$out/compare.log" 2>&1
echo "compare exit $? in $((SECONDS - start)) s" | tee -a "$out/runs.txt"
tar -czf "$tarball" -C "$(dirname "$out")" "$(basename "$out")"
# The other runs through the benchmark, whose `NAME exit N in S s` lines are each run's wall time.
python3 tests/bench/host_proof_time.py --expect-dir "$expects" --lib "$lib" --out "$out" \
  --runs cluster:bare,gke:hami-core,gke:bare,k3s:hami-core,k3s:bare,cluster:hami-core-staggered 2>&1 \
  | grep ' exit ' | tee -a "$out/runs.txt"
tar -czf "$tarball" -C "$(dirname "$out")" "$(basename "$out")"
