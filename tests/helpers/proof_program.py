"""A small Pulumi program that runs only the proof, against a SharingProof the test chooses.

`plan_proof(tmp_path, "k3s", HAMI_K3S)` writes `__main__.py`, the stack file and the proof contract into
tmp_path and plans it under the mocks, so the proof's tests do not wait for the platforms or sharing systems.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict
from pathlib import Path
from typing import Any

from components.contracts.proof import SharingProof, SliceRequest
from components.incluster.expectation import Monitor, NodeRegistration
from components.plan import Plan, run

ROOT = Path(__file__).resolve().parents[2]
MIB = 1 << 20

_CHECKS_HAMI = ("same-gpu", "view-isolation", "quota-injection", "memory-enforced", "overcommit-rejected",
                "preload-mechanism")  # fmt: skip


def _hami_request(mib: int, cores: int | None = None) -> SliceRequest:
    limits = {"nvidia.com/gpu": "1", "nvidia.com/gpumem": str(mib)}
    if cores is not None:
        limits["nvidia.com/gpucores"] = str(cores)
    return SliceRequest(scheduler_name="hami-scheduler", limits=limits)


HAMI_K3S = SharingProof(
    system="hami",
    mechanism="hami-core",
    requests=(_hami_request(8000), _hami_request(8000)),
    overcommit_request=_hami_request(90000),
    overcommit_mib=90000,
    pending_reason="CardInsufficientMemory",
    visible_mib=8000,
    limit_bytes=8000 * MIB,
    limit_env={"CUDA_DEVICE_MEMORY_LIMIT_0": "8000m"},
    preload_library="libvgpu.so",
    node_registration=NodeRegistration("hami.io/node-nvidia-register", "nvidia.com/gpu", slots_per_card=10),
    allocation_annotation="hami.io/vgpu-devices-allocated",
    checks=_CHECKS_HAMI,
)

HAMI_CLUSTER = SharingProof(
    system="hami",
    mechanism="hami-core",
    requests=(_hami_request(4000, 30), _hami_request(4000, 30)),
    overcommit_request=None,
    pending_reason=None,
    visible_mib=4000,
    limit_bytes=4000 * MIB,
    limit_env={"CUDA_DEVICE_MEMORY_LIMIT_0": "4000m", "CUDA_DEVICE_SM_LIMIT": "30"},
    preload_library="libvgpu.so",
    allocation_annotation="hami.io/vgpu-devices-allocated",
    checks=("same-gpu", "view-isolation", "quota-injection", "memory-enforced", "compute-limited"),
)

_KAI_REQUEST = SliceRequest(
    scheduler_name="kai-scheduler",
    labels={"kai.scheduler/queue": "default-queue"},
    annotations={"gpu-memory": "4096"},
    env={"LD_LIBRARY_PATH": "/usr/local/nvidia/lib64"},
    privileged=True,
)

KAI_GKE = SharingProof(
    system="kai",
    mechanism="hami-core",
    requests=(_KAI_REQUEST, _KAI_REQUEST),
    overcommit_request=None,
    pending_reason=None,
    visible_mib=4147,
    limit_bytes=4147 * MIB,
    limit_env={"CUDA_DEVICE_MEMORY_LIMIT": "4147m"},
    preload_library="libvgpu.so",
    monitor=Monitor("kai-resource-isolator", "app.kubernetes.io/name=kai-resource-isolator-monitor", 9400),
    checks=("same-gpu", "view-isolation", "memory-enforced", "neighbor-isolation", "preload-mechanism",
            "monitor-metrics"),
    notes=("The proof Pods on GKE run privileged to see the GPU devices: no multi-tenant boundary.",),
)  # fmt: skip

PROGRAM = """
import json
from pathlib import Path

import pulumi
import pulumi_kubernetes as k8s

from components import config
from components.contracts.sharing import SharingSetup
from components.contracts.cluster import ClusterFacts, GpuFacts
from components.compose import proof
from tests.helpers.proof_program import proof_from_json

cfg = config.load()
provider = k8s.Provider("test-provider", kubeconfig="{}")
# Stand-ins for what the platform and the sharing system hand over: the proof must wait for both.
cluster_ready = k8s.core.v1.Namespace("cluster-ready", metadata={"name": "cluster-ready"},
                                      opts=pulumi.ResourceOptions(provider=provider))
sharing_ready = k8s.core.v1.Namespace("sharing-ready", metadata={"name": "sharing-ready"},
                                      opts=pulumi.ResourceOptions(provider=provider))
gpu = GpuFacts(memory_mib=cfg.card_mib, per_node=1)
cluster = ClusterFacts(provider=provider, gpu=gpu, ready=[cluster_ready])
contract = proof_from_json(json.loads((Path(__file__).parent / "proof.json").read_text()))
sharing = SharingSetup(proof=contract, ready=[sharing_ready])
for name, value in proof(cfg, cluster, sharing).outputs.items():
    pulumi.export(name, value)
"""


def proof_to_json(proof: SharingProof) -> dict[str, Any]:
    return asdict(proof)


def proof_from_json(data: dict[str, Any]) -> SharingProof:
    data = dict(data)
    data["requests"] = tuple(SliceRequest(**r) for r in data["requests"])
    if data.get("overcommit_request") is not None:
        data["overcommit_request"] = SliceRequest(**data["overcommit_request"])
    if data.get("monitor") is not None:
        data["monitor"] = Monitor(**data["monitor"])
    if data.get("node_registration") is not None:
        data["node_registration"] = NodeRegistration(**data["node_registration"])
    data["checks"] = tuple(data.get("checks") or ())
    data["notes"] = tuple(data.get("notes") or ())
    return SharingProof(**data)


def plan_proof(
    tmp_path: Path,
    stack: str,
    proof: SharingProof,
    overrides: list[str] | None = None,
    *,
    preview: bool = True,
    mocks: Any = None,
) -> Plan:
    """Plan only the proof, with `stack`'s config file (gke, k3s, cluster) and the given contract."""
    shutil.copy(ROOT / f"Pulumi.{stack}.yaml", tmp_path / f"Pulumi.{stack}.yaml")
    if not (tmp_path / "examples").exists():  # the `cluster` stack's kubeconfigPath, relative to its project
        (tmp_path / "examples").symlink_to(ROOT / "examples")
    (tmp_path / "proof.json").write_text(json.dumps(proof_to_json(proof)))
    (tmp_path / "__main__.py").write_text(PROGRAM)
    return run(stack, overrides or [], preview=preview, mocks=mocks, root=tmp_path)
