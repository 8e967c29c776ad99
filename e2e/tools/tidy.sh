#!/usr/bin/env bash
# Regenerates each wrapper module's go.sum after a version change (needs the module proxy); build.sh never resolves.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
for m in pulumi provider etcd kwok kube; do (cd "$here/$m" && GOTOOLCHAIN=local go mod tidy); done
