"""Every image each pinned chart can pull: the keys that spell it and their defaults, as reviewed facts.

The defaults are what the chart's pinned `values.yaml` holds (tests/test_chart_images.py proves it against
../shared/reference/charts); the fallbacks are what its templates use when a key is empty, each cited below.
From them the plan derives, with no chart at hand, every image reference a release renders, and the values
that point each one at a mirror.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from components.images import Mirrors

Path = tuple[str, ...]
SERVER_VERSION = "<server version>"
"""A tag the chart takes from the server it is installed on (`.Capabilities.KubeVersion.Version`)."""


@dataclass(frozen=True)
class ChartImage:
    """One image: `<location>/<name>:<tag>`, each part read from a values key, with the chart's fallbacks."""

    role: str
    name: Path
    """The repository key (or image name key, for charts that keep the registry path apart)."""
    name_default: str
    location: Path | None
    """The key holding the registry host, alone or with a path (`docker.io`, `nvcr.io/nvidia`); None: in `name`."""
    location_default: str | None
    tag: Path | None
    tag_default: str | None
    location_fallback: str | None = None
    """What the templates use when `location` is empty."""
    tag_fallback: str | None = None
    """What the templates use when `tag` is empty: the app version, or SERVER_VERSION."""
    switches: tuple[tuple[Path, bool], ...] = ()
    """Keys that must all be true for the image to run, with their defaults."""
    settings: tuple[tuple[Path, Any, Any], ...] = ()
    """Keys that must hold one value for the image to run: (key, that value, the chart's default; None: unset)."""
    never: str | None = None
    """Why this stack never pulls it although the chart names it (say, only under `helm test`)."""
    subchart: str | None = None
    """The subchart whose values.yaml holds the defaults (not the parent's pinned file)."""


@dataclass(frozen=True)
class ChartImages:
    """One pinned chart version's images, and its image-like keys that name no upstream."""

    chart: str
    version: str
    images: tuple[ChartImage, ...]
    not_images: Mapping[Path, str] = field(default_factory=dict)
    """Image keys left out, each with why (empty by default: the user brings the image)."""
    published: Mapping[Path, tuple[str, str]] = field(default_factory=dict)
    """Values the release workflow rewrites before publishing: path → (in git, in the published chart)."""


def get(values: Mapping[str, Any], path: Path) -> Any:
    node: Any = values
    for key in path:
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    return node


def put(values: dict[str, Any], path: Path, value: Any) -> None:
    node = values
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value


def deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """`over` on top of `base`, as Helm merges user values over the chart's: maps merge, anything else replaces."""
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def default_values(chart: ChartImages) -> dict[str, Any]:
    """The image keys and switches of the chart with their defaults, as a values tree."""
    tree: dict[str, Any] = {}
    for image in chart.images:
        put(tree, image.name, image.name_default)
        if image.location is not None:
            put(tree, image.location, image.location_default)
        if image.tag is not None:
            put(tree, image.tag, image.tag_default)
        for path, default in image.switches:
            put(tree, path, default)
        for path, _, default in image.settings:
            if default is not None:
                put(tree, path, default)
    return tree


def reference(image: ChartImage, values: Mapping[str, Any], server_version: str | None = None) -> str:
    """The reference the chart renders for `image` from a full values tree (defaults merged with ours)."""
    location = (get(values, image.location) if image.location else None) or image.location_fallback
    tag = (get(values, image.tag) if image.tag else None) or image.tag_fallback
    if tag == SERVER_VERSION:
        tag = server_version or SERVER_VERSION
    path = "/".join(str(part) for part in (location, get(values, image.name)) if part)
    return f"{path}:{tag}"


def runs(image: ChartImage, values: Mapping[str, Any]) -> bool:
    """True when the values make a cluster pull `image`: every switch on and every setting at its value."""
    return (
        image.never is None
        and all(get(values, path) is True for path, _ in image.switches)
        and all(get(values, path) == value for path, value, _ in image.settings)
    )


def mirror_values(chart: ChartImages, mirrors: Mirrors) -> dict[str, Any]:
    """Values that point every image of the chart at its mirror; empty without one (so the plan is unchanged)."""
    values: dict[str, Any] = {}
    if not mirrors:
        return values
    for image in chart.images:
        key, upstream = (
            (image.location, image.location_default or image.location_fallback)
            if image.location is not None
            else (image.name, image.name_default)
        )
        if upstream and mirrors.location(upstream) != upstream:
            put(values, key, mirrors.location(upstream))
    return values


def pulled(chart: ChartImages, ours: Mapping[str, Any], server_version: str | None = None) -> list[str]:
    """Every image a workload of the release runs with `ours` over the chart's defaults.

    A superset of what a given cluster pulls: a DaemonSet whose nodes the cluster lacks (MIG manager on cards
    without MIG) is still listed, since pre-loading one image too many costs less than one too few.
    """
    values = deep_merge(default_values(chart), ours)
    return sorted({reference(image, values, server_version) for image in chart.images if runs(image, values)})


# --- HAMi 2.9.0 / 2.10.0 (Project-HAMi/HAMi charts/hami/templates/_helpers.tpl) --------------------------------
# `common.images.image`: <registry>/<repository>:<tag>; `hami.imageTagOrGlobal`: an empty tag takes
# global.imageTag; `resolvedKubeSchedulerTag`: an empty kube-scheduler tag takes the server's version, stripped of
# its suffix (v1.36.2+k3s1 → v1.36.2). The certgen Jobs use `patch.imageNew` on Kubernetes ≥ 1.22, `patch.image`
# below it (scheduler/job-patch/job-createSecret.yaml).

# fmt: off
_HAMI_ALIYUN = "registry.cn-hangzhou.aliyuncs.com"
_OLD_KUBERNETES = "only on Kubernetes older than 1.22 (job-patch picks imageNew from 1.22)"


def _hami(version: str, *extra: ChartImage) -> ChartImages:
    app = f"v{version}"
    return ChartImages(
        chart="hami",
        version=version,
        images=(
            ChartImage("kube-scheduler", ("scheduler", "kubeScheduler", "image", "repository"),
                       "google_containers/kube-scheduler", ("scheduler", "kubeScheduler", "image", "registry"),
                       _HAMI_ALIYUN, ("scheduler", "kubeScheduler", "image", "tag"), None,
                       tag_fallback=SERVER_VERSION, switches=((("scheduler", "kubeScheduler", "enabled"), True),)),
            ChartImage("scheduler-extender", ("scheduler", "extender", "image", "repository"), "projecthami/hami",
                       ("scheduler", "extender", "image", "registry"), "docker.io",
                       ("scheduler", "extender", "image", "tag"), None, tag_fallback=app),
            ChartImage("certgen", ("scheduler", "patch", "imageNew", "repository"), "liangjw/kube-webhook-certgen",
                       ("scheduler", "patch", "imageNew", "registry"), "docker.io",
                       ("scheduler", "patch", "imageNew", "tag"), "v1.1.1",
                       switches=((("scheduler", "patch", "enabled"), True),)),
            ChartImage("certgen-legacy", ("scheduler", "patch", "image", "repository"), "jettech/kube-webhook-certgen",
                       ("scheduler", "patch", "image", "registry"), "docker.io",
                       ("scheduler", "patch", "image", "tag"), "v1.5.2", never=_OLD_KUBERNETES),
            ChartImage("device-plugin", ("devicePlugin", "image", "repository"), "projecthami/hami",
                       ("devicePlugin", "image", "registry"), "docker.io", ("devicePlugin", "image", "tag"), None,
                       tag_fallback=app, switches=((("devicePlugin", "enabled"), True),)),
            ChartImage("device-monitor", ("devicePlugin", "monitor", "image", "repository"), "projecthami/hami",
                       ("devicePlugin", "monitor", "image", "registry"), "docker.io",
                       ("devicePlugin", "monitor", "image", "tag"), None, tag_fallback=app,
                       switches=((("devicePlugin", "enabled"), True),)),
            ChartImage("mock-device-plugin", ("mockDevicePlugin", "image", "repository"),
                       "projecthami/mock-device-plugin", ("mockDevicePlugin", "image", "registry"), "docker.io",
                       ("mockDevicePlugin", "image", "tag"), "1.0.1",
                       switches=((("mockDevicePlugin", "enabled"), False),)),
            *extra,
        ),
        not_images={("devices", "ascend", "image"): "empty and off: the Ascend device plugin's image is the user's"},
    )


HAMI_2_9_0 = _hami(
    "2.9.0",
    # The DRA subchart names its registry inside the repository; it renders only with dra.enabled.
    ChartImage("dra-driver", ("hami-dra", "drivers", "nvidia", "image", "repository"),
               "ghcr.io/project-hami/k8s-dra-driver", None, None, ("hami-dra", "drivers", "nvidia", "image", "tag"),
               "main", switches=((("dra", "enabled"), False),)),
)
HAMI_2_10_0 = _hami("2.10.0")

# --- GPU Operator v26.7.0 (NVIDIA/gpu-operator deployments/gpu-operator/templates/_helpers.tpl) -----------------
# `gpu-operator.fullimage`: <repository>/<image>:<version>, the operator and validator defaulting to the app
# version. The operator deploys an operand only when its state is enabled (controllers/state_manager.go:1005-1052):
# its `enabled`; the sandbox ones with sandboxWorkloads.enabled too, and the KubeVirt or Kata ones only in that
# sandboxWorkloads.mode (:1029-1032, :1043-1044); GDS and GDRCopy are sidecars of the driver DaemonSet
# (controllers/object_controls.go:1032-1036), so only with the driver.

_NVCR = "nvcr.io/nvidia"
_CLOUD_NATIVE = "nvcr.io/nvidia/cloud-native"
_K8S = "nvcr.io/nvidia/k8s"
_SANDBOX: tuple[Path, bool] = (("sandboxWorkloads", "enabled"), False)
_SANDBOX_MODE: Path = ("sandboxWorkloads", "mode")
_KUBEVIRT = ((_SANDBOX_MODE, "kubevirt", "kubevirt"),)
_KATA = ((_SANDBOX_MODE, "kata", "kubevirt"),)
_DRIVER: tuple[Path, bool] = (("driver", "enabled"), True)


def _operand(role: str, path: Path, location: str, name: str, version: str | None, *switches: tuple[Path, bool],
             fallback: str | None = None, settings: tuple[tuple[Path, Any, Any], ...] = ()) -> ChartImage:
    return ChartImage(role, (*path, "image"), name, (*path, "repository"), location, (*path, "version"), version,
                      tag_fallback=fallback, switches=tuple(switches), settings=settings)


GPU_OPERATOR_V26_7_0 = ChartImages(
    chart="gpu-operator",
    version="v26.7.0",
    images=(
        _operand("operator", ("operator",), _NVCR, "gpu-operator", None, fallback="v26.7.0"),
        _operand("validator", ("validator",), _NVCR, "gpu-operator", None, fallback="v26.7.0"),
        _operand("driver", ("driver",), _NVCR, "driver", "595.91.07", (("driver", "enabled"), True)),
        _operand("driver-manager", ("driver", "manager"), _CLOUD_NATIVE, "k8s-driver-manager", "v0.12.0",
                 (("driver", "enabled"), True)),
        _operand("toolkit", ("toolkit",), _K8S, "container-toolkit", "v1.20.0", (("toolkit", "enabled"), True)),
        _operand("device-plugin", ("devicePlugin",), _NVCR, "k8s-device-plugin", "v0.20.0",
                 (("devicePlugin", "enabled"), True)),
        _operand("dcgm", ("dcgm",), _CLOUD_NATIVE, "dcgm", "4.6.0-1-ubuntu24.04", (("dcgm", "enabled"), False)),
        _operand("dcgm-exporter", ("dcgmExporter",), _K8S, "dcgm-exporter", "4.6.0-4.8.3-distroless",
                 (("dcgmExporter", "enabled"), True)),
        _operand("gfd", ("gfd",), _NVCR, "k8s-device-plugin", "v0.20.0", (("gfd", "enabled"), True)),
        _operand("mig-manager", ("migManager",), _CLOUD_NATIVE, "k8s-mig-manager", "v0.15.0",
                 (("migManager", "enabled"), True)),
        _operand("node-status-exporter", ("nodeStatusExporter",), _NVCR, "gpu-operator", None,
                 (("nodeStatusExporter", "enabled"), False), fallback="v26.7.0"),
        _operand("gds", ("gds",), _CLOUD_NATIVE, "nvidia-fs", "2.29.4", _DRIVER, (("gds", "enabled"), False)),
        _operand("gdrcopy", ("gdrcopy",), _CLOUD_NATIVE, "gdrdrv", "v2.6", _DRIVER, (("gdrcopy", "enabled"), False)),
        _operand("vgpu-driver-manager", ("vgpuManager", "driverManager"), _CLOUD_NATIVE, "k8s-driver-manager",
                 "v0.12.0", _SANDBOX, (("vgpuManager", "enabled"), False)),
        _operand("vgpu-device-manager", ("vgpuDeviceManager",), _CLOUD_NATIVE, "vgpu-device-manager", "v0.5.0",
                 _SANDBOX, (("vgpuDeviceManager", "enabled"), True)),
        _operand("vfio-manager", ("vfioManager",), _CLOUD_NATIVE, "k8s-driver-manager", "v0.12.0", _SANDBOX,
                 (("vfioManager", "enabled"), True)),
        _operand("vfio-driver-manager", ("vfioManager", "driverManager"), _CLOUD_NATIVE, "k8s-driver-manager",
                 "v0.12.0", _SANDBOX, (("vfioManager", "enabled"), True)),
        _operand("sandbox-device-plugin", ("sandboxDevicePlugin",), _NVCR, "kubevirt-gpu-device-plugin", "v1.6.0",
                 _SANDBOX, (("sandboxDevicePlugin", "enabled"), True), settings=_KUBEVIRT),
        _operand("kata-sandbox-device-plugin", ("kataSandboxDevicePlugin",), _CLOUD_NATIVE,
                 "nvidia-sandbox-device-plugin", "v0.0.5", _SANDBOX, (("kataSandboxDevicePlugin", "enabled"), True),
                 settings=_KATA),
        _operand("cc-manager", ("ccManager",), _CLOUD_NATIVE, "k8s-cc-manager", "v0.4.3", _SANDBOX,
                 (("ccManager", "enabled"), True), settings=_KATA),
        _operand("dra-driver", ("draDriver",), _NVCR, "dra-driver-nvidia-gpu", "v0.5.0",
                 (("gpuCluster", "deployCR"), False)),
        # The node-feature-discovery subchart 0.19.0 (its values.yaml: image.repository, tag empty → appVersion).
        ChartImage("node-feature-discovery", ("node-feature-discovery", "image", "repository"),
                   "registry.k8s.io/nfd/node-feature-discovery", None, None,
                   ("node-feature-discovery", "image", "tag"), None, tag_fallback="v0.19.0",
                   switches=((("nfd", "enabled"), True),), subchart="node-feature-discovery 0.19.0"),
    ),
    not_images={("vgpuManager",): "repository empty and off: the vGPU manager image is the user's own build"},
)

# --- KAI Scheduler v0.17.0 (kai-scheduler/KAI-Scheduler deployments/kai-scheduler/templates/_helpers.tpl) ------
# Every image is <global.registry>/<name>:<tag>, an empty tag taking global.tag, then the chart's app version.
# The NUMA placement exporter runs when numaPlacementExporter.enabled says so, or, left unset, when the default
# shard enables the numa plugin (pkg/operator/operands/numa_placement_exporter/numa_placement_exporter.go:59-81).

_KAI_REGISTRY = ("global", "registry")
_KAI_PUBLISHED_REGISTRY = "ghcr.io/kai-scheduler/kai-scheduler"


def _kai(role: str, section: str, name: str, *switches: tuple[Path, bool], key: str = "image",
         settings: tuple[tuple[Path, Any, Any], ...] = ()) -> ChartImage:
    return ChartImage(role, (section, key, "name"), name, _KAI_REGISTRY, _KAI_PUBLISHED_REGISTRY,
                      (section, key, "tag"), None, tag_fallback="v0.17.0", switches=tuple(switches),
                      settings=settings)


_NUMA_EXPORTER: Path = ("numaPlacementExporter", "enabled")


KAI_SCHEDULER_V0_17_0 = ChartImages(
    chart="kai-scheduler",
    version="v0.17.0",
    images=(
        _kai("operator", "operator", "operator"),
        _kai("podgrouper", "podgrouper", "podgrouper", (("podgrouper", "enabled"), True)),
        _kai("podgroupcontroller", "podgroupcontroller", "podgroupcontroller",
             (("podgroupcontroller", "enabled"), True)),
        _kai("binder", "binder", "binder", (("binder", "enabled"), True)),
        _kai("resource-reservation", "binder", "resourcereservation", (("binder", "enabled"), True),
             key="resourceReservationImage"),
        _kai("scheduler", "scheduler", "scheduler", (("scheduler", "enabled"), True)),
        _kai("numa-placement-exporter", "numaPlacementExporter", "numa-placement-exporter",
             settings=((_NUMA_EXPORTER, True, None),)),
        _kai("numa-placement-exporter", "numaPlacementExporter", "numa-placement-exporter",
             (("defaultShard", "enabled"), True),
             settings=((_NUMA_EXPORTER, None, None), (("scheduler", "plugins", "numa", "enabled"), True, None))),
        _kai("queuecontroller", "queuecontroller", "queuecontroller", (("queuecontroller", "enabled"), True)),
        _kai("admission", "admission", "admission", (("admission", "enabled"), True)),
        _kai("nodescaleadjuster", "nodescaleadjuster", "nodescaleadjuster",
             (("global", "clusterAutoscaling"), False)),
        _kai("scalingpod", "nodescaleadjuster", "scalingpod", (("global", "clusterAutoscaling"), False),
             key="scalingPodImage"),
        _kai("crd-upgrader", "crdupgrader", "crd-upgrader"),
        _kai("kai-config-deployer", "kaiConfigDeployer", "crd-upgrader", (("kaiConfigDeployer", "enabled"), True)),
        _kai("topology-migration", "topologyMigration", "crd-upgrader", (("topologyMigration", "enabled"), True)),
        _kai("post-cleanup", "postCleanup", "crd-upgrader", (("postCleanup", "enabled"), True)),
    ),
    # on-release.yaml rewrites global.registry before publishing to oci://ghcr.io/kai-scheduler/kai-scheduler.
    published={_KAI_REGISTRY: ("registry/local/kai-scheduler", _KAI_PUBLISHED_REGISTRY)},
)

# --- kai-resource-isolator 1.1.0-chart (Project-HAMi/KAI-resource-isolator chart/.../templates/_helpers.tpl) ----
# `kai-resource-isolator.renderImage`: <registry>/<repository>:<tag>; global.imageRegistry, when set, wins.

KAI_RESOURCE_ISOLATOR_1_1_0 = ChartImages(
    chart="kai-resource-isolator",
    version="1.1.0-chart",
    images=(
        ChartImage("isolator", ("image", "repository"), "projecthami/kai-resource-isolator", ("image", "registry"),
                   "docker.io", ("image", "tag"), "v1.1.0"),
        ChartImage("certgen", ("tls", "patch", "imageNew", "repository"), "liangjw/kube-webhook-certgen",
                   ("tls", "patch", "imageNew", "registry"), "docker.io", ("tls", "patch", "imageNew", "tag"),
                   "v1.1.1", switches=((("tls", "patch", "enabled"), True),)),
        ChartImage("certgen-legacy", ("tls", "patch", "image", "repository"), "jettech/kube-webhook-certgen",
                   ("tls", "patch", "image", "registry"), "docker.io", ("tls", "patch", "image", "tag"), "v1.5.2",
                   never=_OLD_KUBERNETES),
    ),
    # release.yml publishes the chart with image.tag set to the release.
    published={("image", "tag"): ("latest", "v1.1.0")},
)

# --- Kyverno 3.8.2 / 3.9.0 (kyverno/kyverno charts/kyverno/templates/_helpers/_image.tpl) -----------------------
# The registry is the image's own `registry`, else global.image.registry, else its `defaultRegistry`: an image's
# own registry wins, so each is set. An empty tag takes the app version (the test image: `latest`).

_KYVERNO_DEFAULT_REGISTRY = "reg.kyverno.io"


def _kyverno(version: str, app: str) -> ChartImages:
    def image(role: str, path: Path, name: str, registry: str | None = None, **extra: Any) -> ChartImage:
        fallback = None if registry else _KYVERNO_DEFAULT_REGISTRY
        return ChartImage(role, (*path, "repository"), name, (*path, "registry"), registry, (*path, "tag"), None,
                          location_fallback=fallback, **{"tag_fallback": app, **extra})

    return ChartImages(
        chart="kyverno",
        version=version,
        images=(
            image("crds-migration", ("crds", "migration", "image"), "kyverno/kyverno-cli",
                  switches=((("crds", "migration", "enabled"), True),)),
            image("admission-init", ("admissionController", "initContainer", "image"), "kyverno/kyvernopre"),
            image("admission", ("admissionController", "container", "image"), "kyverno/kyverno"),
            image("background-controller", ("backgroundController", "image"), "kyverno/background-controller",
                  switches=((("backgroundController", "enabled"), True),)),
            image("cleanup-controller", ("cleanupController", "image"), "kyverno/cleanup-controller",
                  switches=((("cleanupController", "enabled"), True),)),
            image("reports-controller", ("reportsController", "image"), "kyverno/reports-controller",
                  switches=((("reportsController", "enabled"), True),)),
            image("webhooks-cleanup", ("webhooksCleanup", "image"), "kyverno/readiness-checker", "ghcr.io",
                  switches=((("webhooksCleanup", "enabled"), True),)),
            image("test", ("test", "image"), "kyverno/readiness-checker", "ghcr.io", tag_fallback="latest",
                  never="only under `helm test` (and beside a reports-server, which is off)"),
        ),
    )


KYVERNO_3_8_2 = _kyverno("3.8.2", "v1.18.2")
KYVERNO_3_9_0 = _kyverno("3.9.0", "v1.19.0")

CHARTS: dict[tuple[str, str], ChartImages] = {
    (c.chart, c.version): c
    for c in (HAMI_2_9_0, HAMI_2_10_0, GPU_OPERATOR_V26_7_0, KAI_SCHEDULER_V0_17_0, KAI_RESOURCE_ISOLATOR_1_1_0,
              KYVERNO_3_8_2, KYVERNO_3_9_0)
}
"""Every pinned chart version the project knows, by (chart, version)."""

# fmt: on


def chart_images(chart: str, version: str) -> ChartImages | None:
    return CHARTS.get((chart, version))
