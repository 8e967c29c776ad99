"""What a rule sees: plain resource inputs, and the small readers every rule family shares."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

SECRET = "[secret]"
"""How a secret value reaches a rule (the offline plan prints secrets so, and the pack's shim marks them so)."""
UNKNOWN = "[unknown]"
"""How a value that is unknown during preview reaches a rule."""

RELEASE_TYPES = ("kubernetes:helm.sh/v3:Release", "kubernetes:helm.sh/v4:Chart")
POD = "kubernetes:core/v1:Pod"
_TEMPLATED = {
    "kubernetes:apps/v1:Deployment": ("spec", "template"),
    "kubernetes:apps/v1:DaemonSet": ("spec", "template"),
    "kubernetes:apps/v1:StatefulSet": ("spec", "template"),
    "kubernetes:apps/v1:ReplicaSet": ("spec", "template"),
    "kubernetes:batch/v1:Job": ("spec", "template"),
    "kubernetes:batch/v1:CronJob": ("spec", "jobTemplate", "spec", "template"),
}
GKE_CLUSTER = "gcp:container/cluster:Cluster"
GKE_NODE_POOL = "gcp:container/nodePool:NodePool"
FIREWALL = "gcp:compute/firewall:Firewall"
STACK = "pulumi:pulumi:Stack"

_CHART_FILE = re.compile(r"-v?\d+\.\d+\.\d+[^/]*\.tgz$")
_VERSION = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)")


@dataclass(frozen=True)
class Res:
    """One resource as a stack rule sees it: its type token, name, URN and plain inputs."""

    type: str
    name: str
    props: Mapping[str, Any]
    urn: str = ""


@dataclass(frozen=True)
class Finding:
    """A stack rule's violation: the message (which says the fix) and the resource it is about."""

    message: str
    urn: str = ""


@dataclass(frozen=True)
class PodShape:
    """The parts of a Pod (or a workload's Pod template) the rules read."""

    annotations: Mapping[str, Any]
    containers: Sequence[Mapping[str, Any]] = field(default_factory=tuple)


def dig(value: Any, *path: str, default: Any = None) -> Any:
    """`dig(values, "binder", "plugins")`: the nested value, or `default` where any step is missing."""
    for key in path:
        if not isinstance(value, Mapping) or key not in value:
            return default
        value = value[key]
    return value


def chart_name(props: Mapping[str, Any]) -> str:
    """The chart's own name from `chart`: `oci://ghcr.io/kai-scheduler/kai-scheduler/kai-scheduler`,
    `hami-charts/hami` and `./hami-2.9.0.tgz` give `kai-scheduler`, `hami`, `hami`."""
    chart = str(props.get("chart") or "")
    last = chart.rstrip("/").rsplit("/", 1)[-1]
    return _CHART_FILE.sub("", last).removesuffix(".tgz")


def release_of(resource_type: str, props: Mapping[str, Any], chart: str) -> Mapping[str, Any] | None:
    """The release's inputs when this resource is a Helm release of `chart`, else None."""
    if resource_type in RELEASE_TYPES and chart_name(props) == chart:
        return props
    return None


def values_of(release: Mapping[str, Any]) -> Mapping[str, Any]:
    values = release.get("values")
    return values if isinstance(values, Mapping) else {}


def releases(resources: Sequence[Res], chart: str) -> list[Res]:
    """The stack's Helm releases of one chart."""
    return [r for r in resources if release_of(r.type, r.props, chart) is not None]


def version_tuple(version: Any) -> tuple[int, int, int] | None:
    """`v1.36.2+k3s1` → (1, 36, 2); None for anything that is not a version."""
    match = _VERSION.match(str(version or "").strip())
    return (int(match[1]), int(match[2]), int(match[3])) if match else None


def upstream_release(version: Any) -> str | None:
    """The upstream Kubernetes release of a server version: `v1.36.2+k3s1` → `v1.36.2`."""
    parts = version_tuple(version)
    return "v{}.{}.{}".format(*parts) if parts else None


def pod_shape(resource_type: str, props: Mapping[str, Any]) -> PodShape | None:
    """A Pod's, or a workload's Pod template's, annotations and containers (init containers too)."""
    if resource_type == POD:
        template: Any = props
    elif resource_type in _TEMPLATED:
        template = dig(props, *_TEMPLATED[resource_type])
    else:
        return None
    if not isinstance(template, Mapping):
        return None
    spec = dig(template, "spec", default={})
    containers = [
        c for key in ("initContainers", "containers") for c in (dig(spec, key) or []) if isinstance(c, Mapping)
    ]
    return PodShape(dig(template, "metadata", "annotations") or {}, containers)


def container_resources(container: Mapping[str, Any]) -> dict[str, Any]:
    """A container's requests and limits, merged (a limit alone also sets the request for extended resources)."""
    merged: dict[str, Any] = {}
    for kind in ("requests", "limits"):
        section = dig(container, "resources", kind)
        if isinstance(section, Mapping):
            merged.update(section)
    return merged


def requests_nvidia(container: Mapping[str, Any]) -> bool:
    """True when the container asks for any `nvidia.com/gpu*` resource (whole GPU or a HAMi slice)."""
    return any(str(k).startswith("nvidia.com/gpu") for k in container_resources(container))


def is_privileged(container: Mapping[str, Any]) -> bool:
    return dig(container, "securityContext", "privileged") is True


def walk_strings(value: Any) -> Iterator[str]:
    """Every string inside a nested value."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from walk_strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from walk_strings(v)
