"""What the existing cluster's kubeconfig says about which cluster it is (config has checked the file itself)."""

from __future__ import annotations

import base64
import binascii
import hashlib
from pathlib import Path
from typing import Any

import yaml

IDENTITY_DIGITS = 16


def _authority(cluster: dict[str, Any]) -> bytes:
    """The CA the client trusts for this cluster: the embedded data decoded, or the file it names, or nothing
    (a public CA, or insecure-skip-tls-verify)."""
    data = cluster.get("certificate-authority-data")
    if isinstance(data, str) and data.strip():
        try:
            return base64.b64decode("".join(data.split()), validate=True)
        except (binascii.Error, ValueError):
            return data.encode()
    path = cluster.get("certificate-authority")
    if isinstance(path, str) and path:
        file = Path(path).expanduser()
        try:
            return file.read_bytes()
        except OSError:
            return path.encode()
    return b""


def cluster_identity(text: str, context: str | None) -> str:
    """`existing:<digest>` of the server URL and the CA of the cluster the context names.

    kubeadm names every cluster `kubernetes`, so a name says nothing; a rebuilt cluster has a new CA, and another
    cluster another server. Either changing replaces the provider and every object on it (pulumi-kubernetes
    provider/pkg/provider/provider.go:490, DiffConfig).
    """
    doc = yaml.safe_load(text) or {}
    name = context or doc.get("current-context") or ""
    entry = next((c.get("context") or {} for c in doc.get("contexts") or [] if c.get("name") == name), {})
    cluster_name = entry.get("cluster") or name
    cluster = next((c.get("cluster") or {} for c in doc.get("clusters") or [] if c.get("name") == cluster_name), {})
    server = str(cluster.get("server") or "").rstrip("/")
    digest = hashlib.sha256(server.encode() + b"\n" + _authority(cluster)).hexdigest()
    return f"existing:{digest[:IDENTITY_DIGITS]}"
