"""What the existing cluster's kubeconfig says about which cluster it is (config has checked the file itself)."""

from __future__ import annotations

import yaml


def cluster_identity(text: str, context: str | None) -> str:
    """`existing:<cluster>`, the kubeconfig cluster the context names: stable across a CA rotation or a new server
    address (a load balancer in front), which change the kubeconfig but not which cluster it is."""
    doc = yaml.safe_load(text) or {}
    name = context or doc.get("current-context") or ""
    entry = next((c.get("context") or {} for c in doc.get("contexts") or [] if c.get("name") == name), {})
    return f"existing:{entry.get('cluster') or name}"
