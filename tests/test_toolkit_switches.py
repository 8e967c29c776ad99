"""The toolkit's unprivileged-env switches: the k3s host config and the GPU Operator's toolkit env carry them."""

from __future__ import annotations

import json
from typing import Any

from components.platform.k3s_bootstrap import render_toolkit_switches
from tests.helpers.recorded import as_another_process, load, probe_line, unlimited_view, unreached

ENV_KEY = "accept-nvidia-visible-devices-envvar-when-unprivileged"
MOUNT_KEY = "accept-nvidia-visible-devices-as-volume-mounts"


def _release_values(plan: Any, name: str) -> dict[str, Any]:
    return next(r for r in plan.resources if r["name"] == name)["inputs"]["values"]


def test_the_k3s_host_refuses_the_variable_from_unprivileged_containers_when_switched_on() -> None:
    on, off = render_toolkit_switches(True), render_toolkit_switches(False)
    assert f"--set {ENV_KEY}=false" in on and f"--set {MOUNT_KEY}=true" in on and "nvidia-ctk config --in-place" in on
    assert f"--set {ENV_KEY}=true" in off and f"--set {MOUNT_KEY}=false" in off  # the toolkit's own defaults


def test_the_k3s_plan_sets_the_switch_in_its_toolkit_step(plan_stack) -> None:
    for setting, accept in (("true", "false"), ("false", "true")):
        plan = plan_stack("k3s", f"gpushare:guard.refuseUnprivilegedEnv={setting}")
        step = next(r for r in plan.resources if r["name"].endswith("-toolkit"))
        assert f"{ENV_KEY}={accept}" in json.dumps(step["inputs"])


def test_the_gpu_operator_toolkit_env_carries_the_switch_and_hami_passes_devices_as_mounts(plan_stack) -> None:
    plan = plan_stack("cluster", "gpushare:guard.refuseUnprivilegedEnv=true")
    env = {e["name"]: e["value"] for e in _release_values(plan, "gpu-operator-release")["toolkit"]["env"]}
    assert env == {"ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED": "false",
                   "ACCEPT_NVIDIA_VISIBLE_DEVICES_AS_VOLUME_MOUNTS": "true"}  # fmt: skip
    assert _release_values(plan, "hami-release")["devicePlugin"]["deviceListStrategy"] == "volume-mounts"


def test_off_by_default_hami_keeps_its_envvar_strategy(plan_stack) -> None:
    plan = plan_stack("cluster")
    env = {e["name"]: e["value"] for e in _release_values(plan, "gpu-operator-release")["toolkit"]["env"]}
    assert env["ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED"] == "true"
    assert "deviceListStrategy" not in _release_values(plan, "hami-release")["devicePlugin"]


def _escape(memory: dict[str, Any] | None) -> dict[str, Any]:
    from dataclasses import replace

    from components.incluster import judge
    from components.incluster.expectation import PodTry

    expect, evidence = load("k3s")
    pod_try = PodTry("visible-devices-all", "hami-share-try-visible-devices-all", "a Pod with no GPU request")
    expect = replace(expect, pod_tries=(pod_try,))
    if memory is not None:
        evidence["pods"][pod_try.pod] = {"phase": "Succeeded", "logs": json.dumps(memory) + "\n"}
    result = judge.judge(expect, evidence)
    return next(f for f in result["findings"] if f["id"] == "visible-devices-all") | {"_passed": result["passed"]}


def _tried(**fields: Any) -> dict[str, Any]:
    """The recorded slice's memory result as the try Pod's own process prints it, with `fields` changed."""
    _, evidence = load("k3s")
    return {**as_another_process(probe_line(evidence, "hami-share-a")), **fields}


def test_the_escape_that_reached_a_card_is_a_bypass_with_the_device_and_memory_it_got() -> None:
    memory = _tried(gpu_uuid="GPU-1", gpu_name="RTX", preload={"listed": [], "mapped": []})
    unlimited_view(memory, 97000, 96000)
    found = _escape(memory)
    assert found["bypassed"] is True and found["device"] == "GPU-1" and found["allocMiB"] == 96000
    assert found["_passed"] is True  # a finding, never counted


def test_the_escape_the_runtime_refused_is_held() -> None:
    found = _escape(unreached(_tried(), "libcuda.so.1: cannot open shared object file"))
    assert found["bypassed"] is False and found["observed"].startswith("no GPU reached")


def test_the_escape_that_never_ran_says_why() -> None:
    assert _escape(None)["bypassed"] is None
