"""How every component installs a chart: a pinned release in a namespace the stack owns, waited on by Helm."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

SHARED_NAMESPACES = frozenset({"kube-system", "default"})
"""Namespaces the cluster owns: a release goes into them, but the stack never creates or deletes them."""


@dataclass(frozen=True)
class ChartRelease:
    """One pinned chart: where it comes from, where it goes, and with what values."""

    release_name: str
    chart: str
    """The chart's name in `repo`, or an `oci://` reference."""
    version: str
    namespace: str
    values: Mapping[str, Any]
    repo: str | None = None
    namespace_labels: Mapping[str, str] = field(default_factory=dict)
    timeout_seconds: int = 600


def install_chart(
    parent: pulumi.Resource, name: str, spec: ChartRelease, after: Sequence[pulumi.Resource] = ()
) -> k8s.helm.v3.Release:
    """`{name}-namespace` (unless shared) and `{name}-release`, children of `parent`, both after `after`.

    Pulumi owns the namespace, so `pulumi destroy` removes it with the release; Helm's createNamespace would
    leave it behind. `helm --wait` semantics: the release is ready when its workloads and hook Jobs are.
    """
    depends_on = list(after)
    namespace: pulumi.Input[str] = spec.namespace
    if spec.namespace not in SHARED_NAMESPACES:
        namespace = k8s.core.v1.Namespace(
            f"{name}-namespace",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=spec.namespace, labels=dict(spec.namespace_labels) or None),
            opts=pulumi.ResourceOptions(parent=parent, depends_on=depends_on),
        ).metadata.name
    return k8s.helm.v3.Release(
        f"{name}-release",
        name=spec.release_name,
        chart=spec.chart,
        version=spec.version,
        repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=spec.repo) if spec.repo else None,
        namespace=namespace,
        values=dict(spec.values),
        skip_await=False,
        wait_for_jobs=True,
        timeout=spec.timeout_seconds,
        opts=pulumi.ResourceOptions(parent=parent, depends_on=depends_on),
    )
