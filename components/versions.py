"""Version strings: pure helpers shared by config validation and the components."""

from __future__ import annotations

import re

_K8S_RELEASE = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)")


def kubernetes_release(server_version: str) -> str:
    """The upstream release tag of a server version: `v1.36.2+k3s1` → `v1.36.2`, `1.35.6-gke.1250000` → `v1.35.6`."""
    match = _K8S_RELEASE.match(server_version.strip())
    if not match:
        raise ValueError(f"not a Kubernetes version: {server_version!r}")
    return "v{}.{}.{}".format(*match.groups())
