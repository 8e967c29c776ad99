#!/usr/bin/env bash
# Builds the real-engine tools (Pulumi CLI, Kubernetes provider, control plane, kwok) from their Go modules into a
# cache folder outside the repository; a second run compares each binary's stamp and builds nothing.
# Usage: e2e/tools/build.sh   (GPUSHARE_E2E_BIN picks the folder; default ~/.cache/gpushare-e2e/bin)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${GPUSHARE_E2E_BIN:-${XDG_CACHE_HOME:-$HOME/.cache}/gpushare-e2e/bin}
mkdir -p "$bin"
# The go.sum files hold every module; nothing is resolved anew, and the machine's own Go is used.
export CGO_ENABLED=0 GOFLAGS="-mod=readonly -trimpath" GOTOOLCHAIN=local

build() {  # build FAMILY OUTPUT PACKAGE [LDFLAGS]
  local fam=$1 out=$2 pkg=$3 ld=${4:-}
  local stamp
  stamp=$( (cat "$here/$fam/go.mod" "$here/$fam/go.sum"; cat "$here/$fam"/*.go "$here/$fam"/*.json 2>/dev/null || true
    go version; echo "$pkg $ld") | sha256sum | cut -c1-16)
  if [[ -x $bin/$out && -f $bin/$out.stamp && $(<"$bin/$out.stamp") == "$stamp" ]]; then
    echo "up to date: $out"
    return
  fi
  local t0=$SECONDS
  (cd "$here/$fam" && go build -ldflags "-s -w $ld" -o "$bin/$out.partial" "$pkg")
  mv "$bin/$out.partial" "$bin/$out"
  echo "$stamp" > "$bin/$out.stamp"
  echo "built $out in $((SECONDS - t0)) s"
}

kube_version=v1.35.6
kv=""
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  # Without these /version reads v0.0.0-master, and the provider's server-version gate compares against it.
  kv+=" -X $p.gitVersion=$kube_version -X $p.gitMajor=1 -X $p.gitMinor=35 -X $p.gitTreeState=clean"
  kv+=" -X $p.buildDate=1970-01-01T00:00:00Z"
done

t_all=$SECONDS
build pulumi pulumi github.com/pulumi/pulumi/pkg/v3/cmd/pulumi \
  "-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=v3.276.0"
build provider pulumi-resource-kubernetes . \
  "-X main.version=4.25.0 -X github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version.Version=4.25.0"
build etcd etcd .
build kwok kwok sigs.k8s.io/kwok/cmd/kwok "-X sigs.k8s.io/kwok/pkg/consts.Version=v0.8.0"
for c in kube-apiserver kube-controller-manager kube-scheduler; do
  build kube "$c" "k8s.io/kubernetes/cmd/$c" "$kv"
done
echo "tools in $bin ($((SECONDS - t_all)) s)"
