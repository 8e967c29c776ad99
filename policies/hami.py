"""HAMi (lab 7, and the GPU Operator + HAMi T4 write-up): the kube-scheduler tag, no-op keys, privileged Pods."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from policies.model import (
    GKE_CLUSTER,
    STACK,
    Finding,
    Res,
    dig,
    is_privileged,
    pod_shape,
    release_of,
    releases,
    requests_nvidia,
    upstream_release,
    values_of,
    version_tuple,
    walk_strings,
)
from policies.rule import Rule

HAMI_CHART = "hami"
TAG_PATH = {"2.9.0": ("image", "tag"), "2.10.0": ("image", "tag")}
"""Where each pinned chart reads the kube-scheduler tag, under scheduler.kubeScheduler (newer charts alike)."""
DEFAULT_TAG_PATH = ("image", "tag")
PRIVILEGED_REJECTED_FROM = (2, 10, 0)
K3S_VERSION = re.compile(r"\bv\d+\.\d+\.\d+\+k3s\d+\b")
VERSION_OUTPUTS = ("kubernetesVersion", "serverVersion")
VERSION_CONFIG = {
    "kubernetesVersion": {"type": "string", "description": "the server version, as `kubectl version` prints it"}
}


def _tag_path(release: Mapping[str, Any]) -> tuple[str, ...]:
    return TAG_PATH.get(str(release.get("version") or "").removeprefix("v"), DEFAULT_TAG_PATH)


def scheduler_tag(release: Mapping[str, Any]) -> tuple[str, str]:
    """The kube-scheduler tag the chart will use and the key it reads (dotted)."""
    path = _tag_path(release)
    tag = dig(values_of(release), "scheduler", "kubeScheduler", *path)
    return (str(tag) if tag is not None else ""), ".".join(("scheduler", "kubeScheduler", *path))


def _tag_problems(release: Mapping[str, Any], server: str | None, source: str) -> list[str]:
    tag, key = scheduler_tag(release)
    if "+" in tag:
        return [
            f"{key} is {tag!r}: an image tag cannot carry the distribution suffix, so kube-scheduler never "
            f"starts; strip it: {upstream_release(tag)}"
        ]
    wanted = upstream_release(server) if server else None
    if tag and wanted and tag != wanted:
        return [
            f"{key} is {tag!r} but the server is {server} ({source}): a kube-scheduler of another release "
            f"breaks HAMi's scheduler, the most common HAMi install failure; set {key} to {wanted}"
        ]
    return []


def check_hami_scheduler_tag_matches_server(
    resource_type: str, props: Mapping[str, Any], config: Mapping[str, Any] | None = None
) -> list[str]:
    """The tag must be the server's upstream release (`v1.36.2`, not `v1.36.2+k3s1`), under the key the chart reads."""
    release = release_of(resource_type, props, HAMI_CHART)
    if release is None:
        return []
    server = (config or {}).get("kubernetesVersion")
    return _tag_problems(release, str(server) if server else None, "policy config kubernetesVersion")


def server_version_in_graph(resources: Sequence[Res]) -> tuple[str, str] | None:
    """The server version where the stack records it: a k3s release in a bootstrap command, a pinned GKE
    version, or a `kubernetesVersion` stack output. Returns (version, where)."""
    for r in resources:
        if r.type == STACK:
            for key in VERSION_OUTPUTS:
                value = r.props.get(key)
                if isinstance(value, str) and version_tuple(value):
                    return value, f"stack output {key}"
    for r in resources:
        if r.type.startswith("command:"):
            for text in walk_strings(r.props):
                match = K3S_VERSION.search(text)
                if match:
                    return match[0], f"the k3s release in {r.name}"
    for r in resources:
        if r.type == GKE_CLUSTER:
            version = str(r.props.get("minMasterVersion") or "")
            if re.match(r"^\d+\.\d+\.\d+-gke\.\d+$", version):
                return version, f"{r.name}.minMasterVersion"
    return None


def check_hami_scheduler_tag_matches_cluster_version(
    resources: Sequence[Res], config: Mapping[str, Any] | None = None
) -> list[Finding]:
    """The same rule judged against the version the stack itself records (no policy config needed)."""
    found = server_version_in_graph(resources)
    if found is None:
        return []
    server, source = found
    return [
        Finding(problem, r.urn)
        for r in releases(resources, HAMI_CHART)
        for problem in _tag_problems(r.props, server, source)
        if "+" not in scheduler_tag(r.props)[0]
    ]


def check_hami_scheduler_imagetag_is_ignored(
    resource_type: str, props: Mapping[str, Any], config: Mapping[str, Any] | None = None
) -> list[str]:
    """`scheduler.kubeScheduler.imageTag` is read by no pinned chart: they read `…image.tag`."""
    release = release_of(resource_type, props, HAMI_CHART)
    if release is None or _tag_path(release) != ("image", "tag"):
        return []
    value = dig(values_of(release), "scheduler", "kubeScheduler", "imageTag")
    if value is None:
        return []
    return [
        f"scheduler.kubeScheduler.imageTag={value!r} is ignored by chart {release.get('version')}, which reads "
        f"scheduler.kubeScheduler.image.tag; move the value there"
    ]


def check_hami_create_runtime_class_wrong_handler(
    resource_type: str, props: Mapping[str, Any], config: Mapping[str, Any] | None = None
) -> list[str]:
    """`devicePlugin.createRuntimeClass` makes HAMi create a class whose handler is not the toolkit's."""
    release = release_of(resource_type, props, HAMI_CHART)
    if release is None or dig(values_of(release), "devicePlugin", "createRuntimeClass") is not True:
        return []
    return [
        "devicePlugin.createRuntimeClass is true: HAMi then creates the RuntimeClass itself, with a handler "
        "the node's containerd may not have; use the class the NVIDIA toolkit registers (k3s: nvidia; GPU "
        "Operator with CDI: nvidia-legacy) and set createRuntimeClass false"
    ]


def check_hami_privileged_gpu_pod_rejected(
    resources: Sequence[Res], config: Mapping[str, Any] | None = None
) -> list[Finding]:
    """HAMi ≥ 2.10's webhook refuses privileged containers that ask for HAMi GPUs."""
    strict = [
        r
        for r in releases(resources, HAMI_CHART)
        if (version_tuple(r.props.get("version")) or (0, 0, 0)) >= PRIVILEGED_REJECTED_FROM
    ]
    if not strict:
        return []
    findings = []
    for r in resources:
        shape = pod_shape(r.type, r.props)
        if shape is None:
            continue
        for c in shape.containers:
            if requests_nvidia(c) and is_privileged(c):
                findings.append(
                    Finding(
                        f"{r.name}: container {c.get('name', '?')!r} is privileged and requests an nvidia.com/gpu "
                        f"resource; HAMi {strict[0].props.get('version')} rejects such Pods at admission; drop "
                        "securityContext.privileged",
                        r.urn,
                    )
                )
    return findings


RULES = [
    Rule(
        "hami-scheduler-tag-matches-server",
        "HAMi's kube-scheduler image tag must equal the server version (policy config kubernetesVersion), "
        "without a +k3s1-style suffix.",
        "mandatory",
        "lab 7, operator",
        "hami-scheduler's kube-scheduler container never starts",
        resource_check=check_hami_scheduler_tag_matches_server,
        config=VERSION_CONFIG,
    ),
    Rule(
        "hami-scheduler-tag-matches-cluster-version",
        "HAMi's kube-scheduler image tag must equal the server version the stack records (k3s release, GKE version).",
        "mandatory",
        "lab 7",
        "hami-scheduler's kube-scheduler container never starts",
        stack_check=check_hami_scheduler_tag_matches_cluster_version,
    ),
    Rule(
        "hami-scheduler-imagetag-is-ignored",
        "HAMi's scheduler.kubeScheduler.imageTag is a no-op key; the pinned charts read "
        "scheduler.kubeScheduler.image.tag.",
        "advisory",
        "operator",
        "the tag you set is not the tag that runs",
        resource_check=check_hami_scheduler_imagetag_is_ignored,
    ),
    Rule(
        "hami-create-runtime-class-wrong-handler",
        "HAMi's devicePlugin.createRuntimeClass must stay false; the toolkit provides the RuntimeClass.",
        "mandatory",
        "operator",
        "Pods of the created class fail to start: its handler is not the toolkit's",
        resource_check=check_hami_create_runtime_class_wrong_handler,
    ),
    Rule(
        "hami-privileged-gpu-pod-rejected",
        "With HAMi 2.10 or later in the stack, GPU Pods must not be privileged.",
        "mandatory",
        "operator",
        "the GPU Pod is refused at admission by HAMi's webhook",
        stack_check=check_hami_privileged_gpu_pod_rejected,
    ),
]
