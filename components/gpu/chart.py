"""How every component installs a chart: a pinned release in a namespace the stack owns, waited on by Helm.

Each chart comes from its public repository unless a ChartSource names a private OCI registry, another Helm
repository or a local directory, at the same pinned version; every image it names goes through the mirrors.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi

from components.chart_images import chart_images, deep_merge, mirror_values, pulled
from components.contracts.settings import SYSTEM_NAMESPACES
from components.gpu.settings import ChartSourceConfig
from components.images import Mirrors
from components.providers import k8s

SHARED_NAMESPACES = SYSTEM_NAMESPACES
"""Namespaces the cluster owns: a release goes into them, but the stack never creates or deletes them."""


ChartSource = ChartSourceConfig
"""Where a chart comes from instead of its public repository: the config section itself."""


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
    source: ChartSource | None = None
    """None: the public repository in `chart`/`repo`."""
    mirrors: Mirrors = field(default_factory=Mirrors)
    """Where the chart's images are pulled from."""
    server_version: str | None = None
    """The server version where known: charts that derive an image tag from it (HAMi's kube-scheduler)."""

    @property
    def name(self) -> str:
        """The chart's own name: `hami`, and `kai-scheduler` for `oci://ghcr.io/.../kai-scheduler`."""
        return self.chart.rstrip("/").rsplit("/", 1)[-1]


def chart_location(spec: ChartRelease) -> tuple[str, str | None]:
    """(chart, repo) as Helm takes them: the public ones, or the source's."""
    source = spec.source
    if source is None:
        return spec.chart, spec.repo
    if source.path is not None:
        return source.path, None
    assert source.repository is not None
    if source.repository.startswith("oci://"):
        return f"{source.repository.rstrip('/')}/{spec.name}", None
    return spec.name, source.repository


def release_values(spec: ChartRelease) -> dict[str, Any]:
    """The component's values with every image of the chart pointed at its mirror (nothing added without one)."""
    images = chart_images(spec.name, spec.version)
    if images is None:
        return dict(spec.values)
    return deep_merge(mirror_values(images, spec.mirrors), spec.values)


def release_images(spec: ChartRelease) -> list[str]:
    """Every image the release's workloads run, after mirroring, from the chart's image table and our values."""
    images = chart_images(spec.name, spec.version)
    if images is None:
        raise ValueError(f"{spec.name} {spec.version} has no image table in components/chart_images.py")
    return pulled(images, release_values(spec), spec.server_version)


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
    chart, repo = chart_location(spec)
    return k8s.helm.v3.Release(
        f"{name}-release",
        name=spec.release_name,
        chart=chart,
        version=spec.version,
        repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=repo) if repo else None,
        namespace=namespace,
        values=release_values(spec),
        skip_await=False,
        wait_for_jobs=True,
        timeout=spec.timeout_seconds,
        opts=pulumi.ResourceOptions(parent=parent, depends_on=depends_on),
    )
