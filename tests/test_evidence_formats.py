"""Each format of cluster evidence the judge parses, with a sample built the way the component's own source builds
it at the version the stacks pin (file and line beside each), read by the parser and the check that uses it.

HAMi v2.9.0 (`k3s`) and v2.10.0 (`cluster`); KAI-Scheduler v0.17.0 and kai-resource-isolator's monitor (`gke`).
Every sample is made here from the Go code's format strings and struct tags, never copied from a cluster.
"""

from __future__ import annotations

import decimal
import json
from typing import Any

import pytest

from components.incluster import judge
from components.incluster.evidence.parse import parse_allocation, parse_metrics, parse_node_register
from tests.helpers.recorded import load, probe_line


def check(expect: Any, evidence: dict[str, Any], check_id: str) -> dict[str, Any]:
    return next(c for c in judge.judge(expect, evidence)["checks"] if c["id"] == check_id)


# ---------------------------------------------------------------- HAMi's node registration


def _marshal_node_devices(version: str, devices: list[dict[str, Any]]) -> str:
    """HAMi's MarshalNodeDevices: json.Marshal of DeviceInfo, compact, every field `omitempty` in struct order.

    v2.9.0 pkg/device/devices.go:100-114 (struct) and :331 (MarshalNodeDevices); the nil DevicePairScore struct is
    still written as {} (omitempty does not drop a struct). v2.10.0 :127-145 and :422: `DevicePairScore` is `json:"-"`.
    Written by the device plugin: v2.9.0 pkg/device-plugin/nvidiadevice/nvinternal/plugin/register.go:206, v2.10.0 :271.
    """
    order = ("id", "index", "count", "devmem", "devcore", "type", "numa", "mode", "health")
    out = []
    for d in devices:
        item = {k: d[k] for k in order if d.get(k) not in (None, 0, "", False)}
        if version == "v2.9.0":
            item["devicepairscore"] = {}
        out.append(item)
    return json.dumps(out, separators=(",", ":"))


def _encode_node_devices(devices: list[dict[str, Any]]) -> str:
    """HAMi's EncodeNodeDevices (v2.9.0 pkg/device/devices.go:302): `id,count,devmem,devcore,type,numa,health,index,
    mode` then `:` (OneContainerMultiDeviceSplitSymbol, :162) per device."""
    return "".join(f"{d['id']},{d['count']},{d['devmem']},{d['devcore']},{d['type']},{d['numa']},"
                   f"{str(d['health']).lower()},{d['index']},{d['mode']}:" for d in devices)  # fmt: skip


CARD = {"id": "GPU-3584c87b-629e-fcbf-5910-8acab8106ec5", "index": 0, "count": 10, "devmem": 15360, "devcore": 100,
        "type": "NVIDIA-Tesla T4", "numa": 0, "mode": "hami-core", "health": True}  # fmt: skip
SECOND = {**CARD, "id": "GPU-00000000-0000-0000-0000-000000000001", "index": 1, "numa": 1, "health": False}


@pytest.mark.parametrize("version", ["v2.9.0", "v2.10.0"])
def test_hami_node_registration_json_is_read_as_the_device_plugin_writes_it(version: str) -> None:
    devices = parse_node_register(_marshal_node_devices(version, [CARD, SECOND]))
    want = [{k: d[k] for k in ("id", "index", "count", "devmem", "devcore", "type", "numa", "health")}
            for d in (CARD, SECOND)]  # fmt: skip
    assert devices == want


def test_hami_node_registration_string_form_is_read_as_encode_node_devices_writes_it() -> None:
    devices = parse_node_register(_encode_node_devices([CARD, SECOND]))
    assert [(d["id"], d["count"], d["devmem"], d["numa"], d["health"]) for d in devices] == [
        (CARD["id"], 10, 15360, 0, True), (SECOND["id"], 10, 15360, 1, False)]  # fmt: skip


@pytest.mark.parametrize("version", ["v2.9.0", "v2.10.0"])
def test_quota_injection_passes_on_each_versions_registration_and_fails_on_a_wrong_devmem(version: str) -> None:
    expect, evidence = load("cluster")
    card = {**CARD, "id": probe_line(evidence, "gpu-slice-a")["gpu_uuid"]}
    annotations = evidence["nodes"]["node"]["annotations"]
    annotations["hami.io/node-nvidia-register"] = _marshal_node_devices(version, [card])
    assert check(expect, evidence, "quota-injection")["passed"] is True
    annotations["hami.io/node-nvidia-register"] = _marshal_node_devices(version, [{**card, "devmem": 7680}])
    assert "devmem=7680 MiB" in check(expect, evidence, "quota-injection")["observed"]


# ---------------------------------------------------------------- HAMi's allocation annotation


def _encode_pod_single_device(containers: list[list[tuple[str, str, int, int]]]) -> str:
    """HAMi's EncodePodSingleDevice: per container EncodeContainerDevices (`%s,%s,%d,%d` + `:` per device), then `;`.

    v2.9.0 pkg/device/devices.go:359 and :384, v2.10.0 :451 and :476; `:` and `;` at v2.9.0 :162/:165, v2.10.0
    :240/:243. The type of an NVIDIA card is "NVIDIA" (v2.9.0 pkg/device/nvidia/device.go:43, v2.10.0 :44); the
    annotation is hami.io/vgpu-devices-allocated (v2.9.0 pkg/device/nvidia/device.go:172, v2.10.0 :168)."""
    return "".join("".join(f"{u},{t},{m},{c}:" for u, t, m, c in devices) + ";" for devices in containers)


def test_hami_allocation_annotation_is_read_per_container_and_device() -> None:
    value = _encode_pod_single_device([[("GPU-a", "NVIDIA", 4000, 30)], [], [("GPU-b", "NVIDIA", 2000, 0)]])
    assert value == "GPU-a,NVIDIA,4000,30:;;GPU-b,NVIDIA,2000,0:;"
    assert parse_allocation(value) == [{"uuid": "GPU-a", "type": "NVIDIA", "memMiB": 4000, "cores": 30},
                                       {"uuid": "GPU-b", "type": "NVIDIA", "memMiB": 2000, "cores": 0}]  # fmt: skip


def test_same_gpu_reads_the_allocation_hami_writes() -> None:
    expect, evidence = load("cluster")
    uuid = probe_line(evidence, "gpu-slice-a")["gpu_uuid"]
    for pod in expect.pods:
        evidence["pods"][pod]["annotations"]["hami.io/vgpu-devices-allocated"] = _encode_pod_single_device(
            [[(uuid, "NVIDIA", expect.slice_mib, expect.cores_percent or 0)]])  # fmt: skip
    assert check(expect, evidence, "same-gpu")["passed"] is True


# ---------------------------------------------------------------- HAMi's scheduler events


def _filtering_failed(reason: str, nodes: list[str]) -> dict[str, Any]:
    """HAMi's FilteringFailed event (v2.9.0/v2.10.0 pkg/scheduler/event.go:35) with its message `%d nodes %s(%s)`,
    the nodes sorted and comma-joined (v2.9.0 pkg/scheduler/score.go:196, v2.10.0 :351); CardInsufficientMemory is
    v2.9.0 pkg/device/common/common.go:29, v2.10.0 :30."""
    nodes = sorted(nodes)
    return {"reason": "FilteringFailed", "message": f"{len(nodes)} nodes {reason}({','.join(nodes)})",
            "source": "hami-scheduler", "lastTimestamp": "2026-08-20T09:02:09Z"}  # fmt: skip


def test_overcommit_reads_hamis_filtering_failed_message_naming_the_proof_node_among_others() -> None:
    expect, evidence = load("cluster")
    pod = evidence["pods"]["gpu-slice-oversubscribe"]
    pod["events"] = [_filtering_failed("CardInsufficientMemory", ["node", "other-node"])]
    assert check(expect, evidence, "overcommit-rejected")["passed"] is True
    pod["events"] = [_filtering_failed("CardInsufficientMemory", ["other-node"])]
    assert "names other-node, not the proof Pods' node node" in check(expect, evidence, "overcommit-rejected")[
        "observed"]  # fmt: skip


# ---------------------------------------------------------------- the monitor's metrics


def _go_float(value: float) -> str:
    """strconv.FormatFloat(value, 'g', -1, 64), as prometheus/common's text format writes a sample (expfmt
    writeFloat): the shortest digits, in e-notation from an exponent of 6 (Go's strconv/ftoa.go, %g, shortest)."""
    sign, digits, exponent = decimal.Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exponent, int)
    exp = len(digits) - 1 + exponent
    if -4 <= exp < 6:
        return repr(value).removesuffix(".0")
    mantissa = str(digits[0]) + ("." + "".join(map(str, digits[1:])) if len(digits) > 1 else "")
    return f"{'-' if sign else ''}{mantissa}e{'+' if exp >= 0 else '-'}{abs(exp):02d}"


def _exposition(pods: list[tuple[str, str, str, float, float]]) -> str:
    """kai-resource-isolator's kai-vgpu-monitor (ported from HAMi cmd/vGPUmonitor): hami_vgpu_memory_used_bytes and
    hami_vgpu_memory_limit_bytes with labels namespace, pod, container, vdevice_index, device_uuid
    (Project-HAMi/KAI-resource-isolator cmd/monitor/metrics.go:65-74), as client_golang's text format writes a
    gauge: HELP, TYPE, labels sorted by name, the value as Go formats it."""
    lines = []
    for metric, help_text, column in (
        ("hami_vgpu_memory_limit_bytes", "vGPU device memory limit in bytes", 4),
        ("hami_vgpu_memory_used_bytes", "vGPU device memory usage in bytes", 3),
    ):
        lines += [f"# HELP {metric} {help_text}", f"# TYPE {metric} gauge"]
        for namespace, pod, uuid, used, limit in pods:
            value = (None, None, None, used, limit)[column]
            labels = {"container": "probe", "device_uuid": uuid, "namespace": namespace, "pod": pod,
                      "vdevice_index": "0"}  # fmt: skip
            text = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
            lines.append(f"{metric}{{{text}}} {_go_float(value)}")
    return "\n".join(lines) + "\n"


def test_monitor_metrics_reads_the_monitors_names_and_labels() -> None:
    expect, evidence = load("kai")
    uuid = probe_line(evidence, expect.pods[0])["gpu_uuid"]
    node = next(iter(evidence["metrics"]))
    used = (expect.hold_mib + 102) * 2**20
    text = _exposition([(expect.namespace, p, uuid, float(used), float(expect.limit_bytes)) for p in expect.pods])
    assert _go_float(float(expect.limit_bytes)) == "4.348444672e+09" and _go_float(0.5) == "0.5"
    assert {(n, labels["pod"]) for n, labels, _ in parse_metrics(text)} == {
        (m, p) for m in ("hami_vgpu_memory_limit_bytes", "hami_vgpu_memory_used_bytes") for p in expect.pods
    }
    evidence["metrics"][node] = text
    assert check(expect, evidence, "monitor-metrics")["passed"] is True


# ---------------------------------------------------------------- KAI's annotations


def test_same_gpu_reads_kais_gpu_memory_annotation() -> None:
    """KAI-Scheduler v0.17.0 pkg/common/constants/constants.go:58: GpuMemory = "gpu-memory", in MiB."""
    expect, evidence = load("kai")
    assert check(expect, evidence, "same-gpu")["passed"] is True
    evidence["pods"][expect.pods[1]]["annotations"]["gpu-memory"] = "8192"
    found = check(expect, evidence, "same-gpu")
    assert found["passed"] is False and "gpu-memory=8192" in found["observed"]
