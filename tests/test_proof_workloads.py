"""The proof Pods as planned: requests per sharing contract, co-location, tolerations, readiness, probe commands."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from components import incluster
from components.compose.proof import expectations
from components.images import mirrored
from components.incluster.expectation import Expectation
from components.plan import Plan
from components.verify import workloads
from tests.helpers import k8s_schema
from tests.helpers.proof_program import HAMI_CLUSTER, HAMI_K3S, KAI_GKE, plan_proof

POD = "kubernetes:core/v1:Pod"
PREFIX = "gpushare-proof-workloads"


@pytest.fixture(scope="module")
def plans(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Plan]:
    """One plan per contract: HAMi on k3s, HAMi with cores on an existing cluster, KAI on GKE."""
    return {
        stack: plan_proof(tmp_path_factory.mktemp(stack), stack, contract)
        for stack, contract in (("k3s", HAMI_K3S), ("cluster", HAMI_CLUSTER), ("gke", KAI_GKE))
    }


def pod(plan: Plan, role: str) -> dict[str, Any]:
    return plan.one(POD, f"{PREFIX}-{role}")


def container(plan: Plan, role: str) -> dict[str, Any]:
    (only,) = pod(plan, role)["inputs"]["spec"]["containers"]
    return only


def env(plan: Plan, role: str) -> dict[str, str]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container(plan, role)["env"]}


def flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def memory_argv(plan: Plan, role: str) -> list[str]:
    """The memory probe's argv, whether run directly or after the compute probe through sh -c."""
    command = container(plan, role)["command"]
    if command[:2] == ["/bin/sh", "-c"]:
        import shlex

        return shlex.split(command[2].split("; exec ", 1)[1])
    return command


def test_proof_pods_are_named_for_what_they_are_and_take_the_labs_names_from_the_prefix(
    plans: dict[str, Plan], tmp_path: Path
) -> None:
    names = {role: pod(plans["k3s"], role)["inputs"]["metadata"]["name"] for role in ("pod-a", "pod-b", "overcommit")}
    assert names == {"pod-a": "gpushare-proof-a", "pod-b": "gpushare-proof-b", "overcommit": "gpushare-overcommit"}
    labs = plan_proof(tmp_path, "k3s", HAMI_K3S, ["gpushare:verify.podPrefix=hami-share"])
    assert pod(labs, "pod-a")["inputs"]["metadata"]["name"] == "hami-share-a"
    assert pod(labs, "pod-b")["inputs"]["metadata"]["name"] == "hami-share-b"


def test_hami_slice_pods_carry_the_gpumem_limit_and_scheduler(plans: dict[str, Plan]) -> None:
    for role in ("pod-a", "pod-b"):
        assert pod(plans["k3s"], role)["inputs"]["spec"]["schedulerName"] == "hami-scheduler"
        assert container(plans["k3s"], role)["resources"]["limits"] == {
            "nvidia.com/gpu": "1",
            "nvidia.com/gpumem": "8000",
        }
        assert container(plans["cluster"], role)["resources"]["limits"]["nvidia.com/gpucores"] == "30"
        assert "securityContext" not in container(plans["k3s"], role)


def test_kai_slice_pods_ask_by_annotation_with_no_gpu_limit(plans: dict[str, Plan]) -> None:
    for role in ("pod-a", "pod-b"):
        meta = pod(plans["gke"], role)["inputs"]["metadata"]
        assert meta["annotations"]["gpu-memory"] == "4096"
        assert meta["labels"]["kai.scheduler/queue"] == "default-queue"
        assert pod(plans["gke"], role)["inputs"]["spec"]["schedulerName"] == "kai-scheduler"
        assert "resources" not in container(plans["gke"], role)
        assert container(plans["gke"], role)["securityContext"] == {"privileged": True}
        assert env(plans["gke"], role)["LD_LIBRARY_PATH"] == "/usr/local/nvidia/lib64"


def test_pod_b_and_the_overcommit_pod_require_pod_a_node(plans: dict[str, Plan]) -> None:
    a = pod(plans["k3s"], "pod-a")["inputs"]
    a_label = a["metadata"]["labels"][workloads.PROOF_POD_LABEL]
    assert "affinity" not in a["spec"]
    for role in ("pod-b", "overcommit"):
        (term,) = pod(plans["k3s"], role)["inputs"]["spec"]["affinity"]["podAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"
        ]
        assert term["topologyKey"] == "kubernetes.io/hostname"
        assert term["labelSelector"] == {"matchLabels": {workloads.PROOF_POD_LABEL: a_label}}
    assert a_label == "gpushare-proof-a"


def test_every_gpu_pod_tolerates_the_nvidia_gpu_taint(plans: dict[str, Plan]) -> None:
    for plan in plans.values():
        for r in plan.find(POD):
            assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in r["inputs"]["spec"][
                "tolerations"
            ], r["name"]


def test_slice_pods_never_restart_and_see_compute_and_utility(plans: dict[str, Plan]) -> None:
    for plan in plans.values():
        for role in ("pod-a", "pod-b"):
            assert pod(plan, role)["inputs"]["spec"]["restartPolicy"] == "Never"
            assert env(plan, role)["NVIDIA_DRIVER_CAPABILITIES"] == "compute,utility"


def test_readiness_is_the_ready_file_the_probe_writes_only_on_success(plans: dict[str, Plan]) -> None:
    for role in ("pod-a", "pod-b"):
        probe = container(plans["k3s"], role)["readinessProbe"]
        assert probe["exec"]["command"] == ["test", "-f", "/tmp/gpushare-ready"]
        assert flag(memory_argv(plans["k3s"], role), "--ready-file") == "/tmp/gpushare-ready"


def test_memory_probe_command_carries_the_expectation(plans: dict[str, Plan]) -> None:
    cases = (
        ("k3s", HAMI_K3S, "3072", "6144", "2,3,3.8,4,4.5,6,8,10"),
        ("gke", KAI_GKE, "3072", "2048", "2,3,3.8,4,4.5,6"),
    )
    for stack, contract, hold, extra, sweep in cases:
        argv = memory_argv(plans[stack], "pod-b")
        assert argv[:4] == ["python3", "-m", "incluster.probes.memory", "--json"]
        assert flag(argv, "--expect-limit-mib") == str(contract.visible_mib)
        assert flag(argv, "--hold-mib") == hold
        assert flag(argv, "--keep-holding") == hold
        assert flag(argv, "--extra-mib") == extra
        assert int(hold) + int(extra) > contract.visible_mib  # the extra ask must cross the quota
        assert flag(argv, "--hold-seconds") == "30"
        assert flag(argv, "--sweep-gib") == sweep
        assert flag(argv, "--result-file") == "/dev/termination-log"
        assert "--findings" in argv


def steps(plan: Plan, role: str) -> list[list[str]]:
    """A proof Pod's steps, each an argv, in the order its shell runs them."""
    import shlex

    command = container(plan, role)["command"]
    assert command[:2] == ["/bin/sh", "-c"]
    return [shlex.split(part.strip().removeprefix("exec ")) for part in command[2].split(";")]


def probes_run(plan: Plan, role: str) -> list[str]:
    """What each step runs: a module (`-m incluster.probes.fault`) , every probe."""
    return [argv[2] if argv[1] == "-m" else argv[1] for argv in steps(plan, role)]


def test_pod_a_measures_as_the_neighbour_then_compute_and_pod_b_faults_and_hogs_first(plans: dict[str, Plan]) -> None:
    a, b = steps(plans["cluster"], "pod-a"), steps(plans["cluster"], "pod-b")
    assert [s[:3] for s in a] == [["python3", "-m", "incluster.probes.fault"],
                                  ["python3", "-m", "incluster.probes.bandwidth"],
                                  ["python3", "-m", "incluster.probes.compute"],
                                  ["python3", "-m", "incluster.probes.allocation_paths"],
                                  ["python3", "-m", "incluster.probes.memory"]]  # fmt: skip
    assert a[2][3:] == ["--json", "--seconds", "20", "--baseline", "child"]
    assert flag(a[0], "--role") == "neighbour" and flag(a[1], "--role") == "neighbour"
    # Only A measures compute: B would compete for the SMs and spoil both numbers.
    assert probes_run(plans["cluster"], "pod-b") == [
        "incluster.probes.fault",
        "incluster.probes.bandwidth",
        "incluster.probes.allocation_paths",
        "incluster.probes.memory",
    ]
    assert flag(b[0], "--role") == "faulter" and flag(b[1], "--role") == "hog"
    assert probes_run(plans["k3s"], "pod-a") == [
        "incluster.probes.fault",
        "incluster.probes.bandwidth",
        "incluster.probes.allocation_paths",
        "incluster.probes.memory",
    ]


def test_every_pod_with_a_memory_quota_asks_each_door_past_it_and_time_sharing_runs_no_such_step(
    plans: dict[str, Plan],
) -> None:
    for name, plan in plans.items():
        for role in ("pod-a", "pod-b"):
            run = probes_run(plan, role)
            alloc = [argv for argv in steps(plan, role) if "incluster.probes.allocation_paths" in argv]
            if name == "gke-time-sharing":
                assert "incluster.probes.allocation_paths" not in run
                continue
            memory = next(argv for argv in steps(plan, role) if "incluster.probes.memory" in argv)
            assert len(alloc) == 1 and flag(alloc[0], "--expect-limit-mib") == flag(memory, "--expect-limit-mib")


def test_both_pods_neighbour_steps_last_as_long_so_what_follows_starts_together(plans: dict[str, Plan]) -> None:
    for plan in plans.values():
        a, b = steps(plan, "pod-a"), steps(plan, "pod-b")
        assert flag(a[0], "--window") == flag(b[0], "--window") == "19"
        assert flag(a[1], "--window") == flag(b[1], "--window") == "19.2"
        assert (flag(b[0], "--delay"), flag(b[1], "--delay"), flag(b[1], "--hog-seconds")) == ("6.7", "6.7", "2.2")


def test_the_probe_mount_is_a_package_on_the_python_path(plans: dict[str, Plan]) -> None:
    for plan in plans.values():
        for role in ("pod-a", "pod-b"):
            assert env(plan, role)["PYTHONPATH"] == "/opt/gpushare"
            assert container(plan, role)["volumeMounts"][0]["mountPath"] == "/opt/gpushare/incluster"


def test_proof_and_overcommit_pods_wait_only_for_creation_and_are_awaited_on_delete(plans: dict[str, Plan]) -> None:
    for role in ("pod-a", "pod-b", "overcommit"):
        annotations = pod(plans["k3s"], role)["inputs"]["metadata"]["annotations"]
        # skipAwait would also skip the wait for deletion, and a re-run's create would meet the old Pod (409).
        assert "pulumi.com/skipAwait" not in annotations
        assert annotations["pulumi.com/waitFor"] == "jsonpath={.metadata.uid}"
        assert pod(plans["k3s"], role)["inputs"]["spec"]["terminationGracePeriodSeconds"] <= 5


def test_overcommit_pod_sleeps_with_the_oversized_request_after_a_and_b(plans: dict[str, Plan]) -> None:
    over = pod(plans["k3s"], "overcommit")
    assert over["inputs"]["metadata"]["name"] == "gpushare-overcommit"
    assert over["inputs"]["spec"]["containers"][0]["command"] == ["sleep", "infinity"]
    assert over["inputs"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpumem"] == "90000"
    # It only has to be scheduled or not: no probe, so no readiness that could never turn true.
    assert "readinessProbe" not in over["inputs"]["spec"]["containers"][0]
    assert {f"{PREFIX}-pod-a", f"{PREFIX}-pod-b"} <= set(over["dependsOn"])
    assert not plans["gke"].find(POD, f"{PREFIX}-overcommit")


def test_whole_gpu_pod_only_on_gke_waited_for_before_the_slices(plans: dict[str, Plan]) -> None:
    whole = pod(plans["gke"], "whole-gpu")
    meta, spec = whole["inputs"]["metadata"], whole["inputs"]["spec"]
    assert meta["name"] == "gpushare-whole-gpu"
    assert meta["annotations"] == {"pulumi.com/waitFor": "jsonpath={.status[?@ == 'Succeeded' || @ == 'Failed']}"}
    assert spec["restartPolicy"] == "Never"
    assert spec["containers"][0]["command"] == ["nvidia-smi"]
    assert spec["containers"][0]["image"] == "nvidia/cuda:12.4.1-base-ubuntu22.04"
    assert spec["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "1"}
    for role in ("pod-a", "pod-b"):
        assert f"{PREFIX}-whole-gpu" in pod(plans["gke"], role)["dependsOn"]
    assert not plans["k3s"].find(POD, f"{PREFIX}-whole-gpu")


def test_probe_configmap_holds_the_probe_files_mounted_read_only(plans: dict[str, Plan]) -> None:
    cm = plans["k3s"].one("kubernetes:core/v1:ConfigMap", f"{PREFIX}-probes")
    folder = Path(incluster.__file__).parent
    expected = {p.relative_to(folder).as_posix().replace("/", "."): p.read_text() for p in folder.rglob("*.py")}
    assert cm["inputs"]["data"] == expected  # every __init__.py too: the mounted tree is the package
    assert {"__init__.py", "probes.__init__.py", "probes.memory.py", "probes.compute.py", "verifier.py", "judge.py",
            "checks.registry.py", "expectation.py", "kube.py"} <= set(expected)  # fmt: skip
    spec = pod(plans["k3s"], "pod-a")["inputs"]["spec"]
    assert spec["volumes"][0]["configMap"]["name"] == cm["inputs"]["metadata"]["name"]
    items = {i["key"]: i["path"] for i in spec["volumes"][0]["configMap"]["items"]}
    assert items["probes.memory.py"] == "probes/memory.py"  # each key back at its path: the kubelet makes the tree
    assert spec["containers"][0]["volumeMounts"] == [
        {"name": "probes", "mountPath": "/opt/gpushare/incluster", "readOnly": True}]  # fmt: skip
    env = {e["name"]: e.get("value") for e in spec["containers"][0]["env"]}
    assert env["PYTHONPATH"] == "/opt/gpushare"  # so `-m incluster.probes.memory` imports the mount


def test_probe_files_are_refused_without_the_memory_probes_findings_module(monkeypatch: pytest.MonkeyPatch) -> None:
    files = {k: v for k, v in incluster.files().items() if k != "probes.memory_findings.py"}
    assert "from .memory_findings import" in files["probes.memory.py"]  # the memory probe cannot start without it
    monkeypatch.setattr(incluster, "files", lambda: files)
    with pytest.raises(FileNotFoundError, match=r"probes/memory_findings\.py"):
        workloads.probe_files()


def test_proof_pods_use_the_configured_slim_image(plans: dict[str, Plan]) -> None:
    assert container(plans["k3s"], "pod-a")["image"] == "python:3.12-slim-bookworm"


def test_every_proof_resource_waits_for_the_cluster_and_the_sharing_system(plans: dict[str, Plan]) -> None:
    for plan in plans.values():
        for r in plan.resources:
            if r["type"].startswith("kubernetes:core/v1") and r["parent"] == PREFIX:
                assert {"cluster-ready", "sharing-ready", "gpushare-proof-namespace"} <= set(r["dependsOn"]), r["name"]


def test_every_proof_object_validates_against_kubernetes_1_35(plans: dict[str, Plan]) -> None:
    objects = [o for plan in plans.values() for o in k8s_schema.objects_in(plan)]
    assert len(objects) > 10
    complaints = [k8s_schema.validate(o) for o in objects]
    assert [c for c in complaints if c] == []


def test_image_registry_mirrors_the_proof_images(tmp_path: Path) -> None:
    assert mirrored("python:3.12-slim-bookworm", "harbor.example.com/proxy") == (
        "harbor.example.com/proxy/docker.io/library/python:3.12-slim-bookworm"
    )
    cuda = "nvidia/cuda:12.4.1-base-ubuntu22.04"
    assert mirrored(cuda, "m.example") == f"m.example/docker.io/{cuda}"
    assert mirrored("ghcr.io/org/img:1", "m.example") == "m.example/ghcr.io/org/img:1"
    assert mirrored("python:3.12", None) == "python:3.12"
    plan = plan_proof(tmp_path, "cluster", HAMI_CLUSTER, ["gpushare:imageRegistry=harbor.example.com/proxy"])
    assert container(plan, "pod-a")["image"] == "harbor.example.com/proxy/docker.io/library/python:3.12-slim-bookworm"


def test_expectations_follow_the_contract_and_config(tmp_path: Path) -> None:
    from components.config import parse
    from components.plan import read_stack_config

    raw, _ = read_stack_config("gke", [])
    cfg = parse({k: v if isinstance(v, str) else json.dumps(v) for k, v in raw.items()})
    expect = expectations(cfg, KAI_GKE)
    assert expect.pods == ("gpushare-proof-a", "gpushare-proof-b")
    assert expect.mechanism == "hami-core"
    assert expect.overcommit_pod is None and expect.whole_gpu_pod == "gpushare-whole-gpu"
    assert expect.node_memory_label == "nvidia.com/gpu.memory"
    assert (expect.visible_mib, expect.slice_mib, expect.card_mib) == (4147, 4096, 15360)
    assert (expect.hold_mib, expect.extra_mib) == (3072, 2048)
    assert expect.monitor is not None and expect.monitor.namespace == "kai-resource-isolator"
    assert expect.checks == (*KAI_GKE.checks, "allocation-paths")  # the step runs where a memory quota is set
    assert expect.allocation_paths is True and expect.advisory == ()
    assert expect.compute_pods == ()
    hami = expectations(cfg, HAMI_K3S)
    assert hami.overcommit_pod == "gpushare-overcommit" and hami.pending_reason == "CardInsufficientMemory"
    assert hami.overcommit_mib == HAMI_K3S.overcommit_mib
    # The wire form is what the verifier parses: the same structure comes back.
    assert Expectation.parse(hami.to_json()) == hami


def test_a_check_the_mechanism_does_not_offer_is_refused_when_planned() -> None:
    from dataclasses import replace

    from components.config import parse
    from components.plan import read_stack_config

    raw, _ = read_stack_config("gke", [])
    cfg = parse({k: v if isinstance(v, str) else json.dumps(v) for k, v in raw.items()})
    with pytest.raises(ValueError, match="the mps mechanism does not offer the checks"):
        expectations(cfg, replace(KAI_GKE, mechanism="mps"))


def test_verification_disabled_says_so_and_registers_no_pods(tmp_path: Path) -> None:
    plan = plan_proof(tmp_path, "k3s", HAMI_K3S, ["gpushare:verify.enabled=false"])
    assert plan.find(POD) == []
    assert plan.outputs["verification"]["passed"] is False
    assert plan.outputs["verification"]["reason"] == "verification disabled"


def test_compute_is_judged_only_in_the_pod_that_measures_it(plans: dict[str, Plan]) -> None:
    from components.incluster import judge

    expect = Expectation.parse(
        next(
            e["value"]
            for e in plans["cluster"].one(POD, "gpushare-proof-verifier-pod")["inputs"]["spec"]["containers"][0]["env"]
            if e["name"] == "GPUSHARE_EXPECT"
        )
    )
    assert expect.compute_pods == ("gpushare-proof-a",) and expect.provenance is True
    expect = replace(expect, provenance=False)  # the recorded output is from before the probes printed their Pod
    # The H200's output, unedited (its Pod's name then): the run whose baseline ran under the library with its limit
    # lifted, as the run did.
    real = Path(__file__).parent / "fixtures" / "real" / "h200" / "cluster-hami-core-staggered" / "evidence.json"
    recorded = json.loads(real.read_text())["gpu-slice-a"]
    compute, memory = recorded["compute"], recorded["memory"]
    evidence = {
        "pods": {
            "gpushare-proof-a": {"phase": "Running", "logs": json.dumps(compute) + "\n" + json.dumps(memory) + "\n"},
            "gpushare-proof-b": {"phase": "Running", "logs": ""},
        }
    }
    checks = {c["id"]: c for c in judge.judge(expect, evidence)["checks"]}
    assert checks["compute-limited"]["passed"] is True, checks["compute-limited"]["observed"]


def test_every_pod_that_runs_a_probe_is_given_its_own_name_uid_namespace_and_node(plans: dict[str, Plan]) -> None:
    downward = {"GPUSHARE_POD_NAME": "metadata.name", "GPUSHARE_POD_UID": "metadata.uid",
                "GPUSHARE_POD_NAMESPACE": "metadata.namespace", "GPUSHARE_NODE_NAME": "spec.nodeName"}  # fmt: skip
    probing = [r for r in plans["k3s"].resources if r["type"] == POD and "volumes" in r["inputs"]["spec"]
               and r["inputs"]["metadata"]["name"] != "gpushare-verifier"]  # fmt: skip
    assert {r["inputs"]["metadata"]["name"] for r in probing} >= {"gpushare-proof-a", "gpushare-proof-b"}
    assert any("-try-" in r["inputs"]["metadata"]["name"] for r in probing)
    for resource in probing:
        env = {e["name"]: e for e in resource["inputs"]["spec"]["containers"][0]["env"]}
        for name, path in downward.items():
            assert env[name] == {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}, resource["name"]
    over = plans["k3s"].one(POD, f"{PREFIX}-overcommit")["inputs"]["spec"]["containers"][0]["env"]
    assert not {e["name"] for e in over} & set(downward)  # it runs no probe: nothing to tie
