#!/usr/bin/env bash
# Record the allocation-paths step under HAMi-core, under MPS with its pinned memory limit, and bare, on one GPU
# host, from the repository root; then render the table (path × mechanism) into OUT/README.md.
# Usage: docs/host-proof/record-paths.sh LIBVGPU OUT [QUOTA_MIB]
#   LIBVGPU    libvgpu.so built from HAMi-core's source (a Debug build: Release hides the hooked symbols)
#   OUT        gets hami-core.json, mps.json, bare.json (the probe's JSON line), a .log of each, card.csv, runs.txt
#   QUOTA_MIB  the quota each mechanism is given (default 4000, the `cluster` stack's)
# Needs python3, the NVIDIA driver (nvidia-smi, nvidia-cuda-mps-control for MPS) and LIBVGPU; nothing else.
set -uo pipefail
lib=$1 out=$2 quota=${3:-4000}
mkdir -p "$out"
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d /tmp/gpushare-paths-XXXXXX)
quit_mps() { [ -d "$tmp/mps/pipe" ] && echo quit | CUDA_MPS_PIPE_DIRECTORY=$tmp/mps/pipe nvidia-cuda-mps-control; return 0; }
trap 'quit_mps; rm -rf "$tmp"' EXIT
nvidia-smi --query-gpu=name,memory.total,driver_version,compute_mode --format=csv >"$out/card.csv" 2>&1
probe() {  # probe NAME MECHANISM ENV...: the step as a Pod runs it, its last line the JSON
  local name=$1 mech=$2 started=$SECONDS
  shift 2
  (cd "$root" && env "$@" timeout 50 python3 -m components.incluster.probes.allocation_paths --json \
    --expect-limit-mib "$quota" --mechanism "$mech") >"$out/$name.log" 2>&1
  local rc=$?
  grep '^{"probe":"allocation"' "$out/$name.log" | tail -1 >"$out/$name.json"
  echo "$name exit $rc in $((SECONDS - started)) s" | tee -a "$out/runs.txt"
}
# HAMi-core as a HAMi Pod has it (../shared/tools/hami-core/run-limited.sh): preloaded, the indexed limit, a fresh
# cache file of the container's own.
probe hami-core hami-core LD_PRELOAD="$lib" CUDA_DEVICE_MEMORY_SHARED_CACHE="$tmp/hami.cache" \
  CUDA_DEVICE_MEMORY_LIMIT_0="${quota}m" CUDA_DEVICE_SM_LIMIT=0
# MPS: a control daemon of our own in a temporary pipe directory, the client's pinned limit as GKE passes it.
mkdir -p "$tmp/mps/pipe" "$tmp/mps/log"
CUDA_MPS_PIPE_DIRECTORY=$tmp/mps/pipe CUDA_MPS_LOG_DIRECTORY=$tmp/mps/log nvidia-cuda-mps-control -d
probe mps mps CUDA_MPS_PIPE_DIRECTORY="$tmp/mps/pipe" CUDA_MPS_LOG_DIRECTORY="$tmp/mps/log" \
  CUDA_MPS_PINNED_DEVICE_MEM_LIMIT="0=${quota}M"
quit_mps
rm -rf "$tmp/mps"
probe bare none GPUSHARE_BARE=1
(cd "$root" && python3 -m components.verify.host.paths_table "$out") | tee "$out/README.md" >/dev/null
echo "table: $out/README.md" | tee -a "$out/runs.txt"
