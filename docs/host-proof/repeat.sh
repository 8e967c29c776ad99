#!/usr/bin/env bash
# Repeatability on one GPU host: each stack's host proof several times under HAMi-core, the Pods started in the
# same instant (where HAMi-core's context charge is a race), each run's verdict kept, from the repository root.
# Usage: docs/host-proof/repeat.sh LIBVGPU EXPECT_DIR OUT_DIR [RUNS]
#   RUNS  stack:setup:times (default gke:hami-core:5,k3s:hami-core:5,cluster:hami-core:3); OUT_DIR/repeat/<run>-<i>/
# `python -m components.verify.host.record` renders the table in docs/host-proof/README.md from these folders.
set -uo pipefail
lib=$1 expects=$2 out=$3 plan=${4:-gke:hami-core:5,k3s:hami-core:5,cluster:hami-core:3}
mkdir -p "$out/repeat"
python3 tests/bench/host_proof_time.py --expect-dir "$expects" --lib "$lib" --out "$out/repeat" --runs "$plan" \
  2>&1 | tee "$out/repeat/bench.txt" | grep -A1 ' exit ' | tee -a "$out/repeat/runs.txt"
