"""Two cards on a node: the judge holds the proof Pods to the card they share, by index, UUID and pin, and fails a
Pod that sees, or is limited on, a card it was not given, naming both cards; the host proof's `--device`.

The evidence is the recorded `cluster` run (HAMi 2.10.0, tests/fixtures, tied as a run since provenance) moved
onto card 1 of a two-card node the way HAMi writes one (each builder names the upstream lines), or the host proof's
processes on a two-card host.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from components.incluster import judge
from components.incluster.expectation import Expectation
from components.verify.host import expectation as host_expectation
from tests.helpers.probes import ROOT, module_argv
from tests.helpers.recorded import as_another_process, edit_probe, probe_line, unlimited_view
from tests.helpers.tied import tie_try, tied

CARD_0 = "GPU-00000000-0000-0000-0000-0000000000c0"
"""The node's card 0: the default card, which no proof Pod is given."""
PIN = "nvidia.com/use-gpuuuid"
REGISTER = "hami.io/node-nvidia-register"
ALLOCATED = "hami.io/vgpu-devices-allocated"


def _register(card_1: str, index_of: dict[str, int] | None = None) -> str:
    """HAMi 2.10.0's register annotation of a two-card T4 node: map order, `index` omitted when 0
    (pkg/device-plugin/nvidiadevice/nvinternal/plugin/register.go:109-115 and 181, omitempty)."""
    index_of = index_of or {card_1: 1, CARD_0: 0}
    cards = []
    for uuid in (card_1, CARD_0):
        card = {"id": uuid, "count": 10, "devmem": 15360, "devcore": 100, "type": "NVIDIA-Tesla T4", "health": True}
        if index_of[uuid]:
            card["index"] = index_of[uuid]
        cards.append(card)
    return json.dumps(cards)


def two_cards() -> tuple[Expectation, dict[str, Any], str]:
    """The recorded run on card 1 of a two-card node: the expectation compose/proof.py gives (card 1 by index and
    UUID, every slice Pod pinned), the node registering both cards (20 slots), each Pod carrying the pin HAMi's
    filter reads (v2.10.0 pkg/device/nvidia/device.go:50 GPUUseUUID) and its allocation on that card."""
    expect, evidence = tied("cluster")
    card_1 = probe_line(evidence, expect.pods[0])["gpu_uuid"]
    assert expect.node_registration is not None
    expect = replace(
        expect, cards_per_node=2, shared_card_index=1, shared_card_uuid=card_1, pin_annotation=PIN,
        pinned_pods=(*expect.pods, str(expect.overcommit_pod)),
        node_registration=replace(expect.node_registration, cards_per_node=2),
    )  # fmt: skip
    for node in evidence["nodes"].values():
        node["annotations"][REGISTER] = _register(card_1)
        node["allocatable"]["nvidia.com/gpu"] = node["capacity"]["nvidia.com/gpu"] = "20"
    for name in (*expect.pods, expect.overcommit_pod):
        evidence["pods"][name].setdefault("annotations", {})[PIN] = card_1
    return Expectation.parse(expect.to_wire()), evidence, card_1


def checks(expect: Expectation, evidence: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["id"]: c for c in judge.judge(expect, evidence)["checks"]}


def _passes_on_card_1(expect: Expectation, evidence: dict[str, Any], *ids: str) -> None:
    judged = checks(expect, evidence)
    for check_id in ids:
        assert judged[check_id]["passed"] is True, (check_id, judged[check_id]["observed"])


def _on_card(evidence: dict[str, Any], pod: str, old: str, new: str) -> None:
    """Pod `pod` on card `new` throughout: its probe's card and NVIDIA_VISIBLE_DEVICES, its allocation (the same
    annotation HAMi encodes, UUID,Type,MiB,cores: — v2.10.0 pkg/device/devices.go:454)."""
    edit_probe(evidence, pod, lambda r: (r.update(gpu_uuid=new), r["env"].update(NVIDIA_VISIBLE_DEVICES=new)))
    annotations = evidence["pods"][pod]["annotations"]
    annotations[ALLOCATED] = annotations[ALLOCATED].replace(old, new)
    annotations[PIN] = new


# ---------------------------------------------------------------- same-gpu: the card, its UUID and the pin


def test_two_pods_sharing_card_0_instead_of_card_1_fail_same_gpu_naming_both_cards() -> None:
    expect, evidence, card_1 = two_cards()
    _passes_on_card_1(expect, evidence, "same-gpu", "quota-injection")
    for pod in expect.pods:  # consistent in itself: both on card 0, pinned and allocated there
        _on_card(evidence, pod, card_1, CARD_0)
    failed = checks(expect, evidence)["same-gpu"]
    assert failed["passed"] is False
    assert f"measured {CARD_0}, not card 1 {card_1} that the proof shares" in failed["observed"]


def test_a_pod_without_its_pin_or_pinned_to_card_0_fails_same_gpu() -> None:
    expect, evidence, card_1 = two_cards()
    a, b = expect.pods
    del evidence["pods"][a]["annotations"][PIN]
    evidence["pods"][b]["annotations"][PIN] = f"{card_1},{CARD_0}"  # HAMi splits at commas: either card would do
    failed = checks(expect, evidence)["same-gpu"]
    assert failed["passed"] is False
    assert f"Pod {a} carries no {PIN}: nothing pinned it to card 1" in failed["observed"]
    assert f"Pod {b} is pinned by {PIN}={card_1},{CARD_0}, not to card 1 {card_1} alone" in failed["observed"]


def test_a_pod_whose_cuda_sees_card_0_beside_its_own_fails_same_gpu_naming_both_cards() -> None:
    expect, evidence, card_1 = two_cards()
    a = expect.pods[0]
    edit_probe(evidence, a, lambda r: r["env"].update(CUDA_VISIBLE_DEVICES=f"{card_1},{CARD_0}"))
    failed = checks(expect, evidence)["same-gpu"]
    assert failed["passed"] is False and CARD_0 in failed["observed"] and card_1 in failed["observed"]
    assert "it reaches a card it was not given" in failed["observed"]


def test_kais_cdi_named_card_is_the_card_the_pods_measured() -> None:
    """KAI's binder names the reservation Pod's card as a CDI device under a CDI device plugin
    (KAI-Scheduler v0.17.0 pkg/binder/plugins/gpusharing/gpu_sharing.go:25 and 52-55)."""
    expect, evidence = tied("kai")
    for pod in expect.pods:
        edit_probe(evidence, pod, lambda r: r["env"].update(
            NVIDIA_VISIBLE_DEVICES=f"k8s.device-plugin.nvidia.com/gpu={r['gpu_uuid']}"))  # fmt: skip
    assert checks(expect, evidence)["same-gpu"]["passed"] is True
    edit_probe(evidence, expect.pods[0], lambda r: r["env"].update(
        NVIDIA_VISIBLE_DEVICES=f"k8s.device-plugin.nvidia.com/gpu={r['gpu_uuid']},k8s.device-plugin.nvidia.com/gpu="
        f"{CARD_0}"))  # fmt: skip
    failed = checks(expect, evidence)["same-gpu"]
    assert failed["passed"] is False and "names cards beside" in failed["observed"] and CARD_0 in failed["observed"]


# ---------------------------------------------------------------- quota-injection: limits per device, the register


def test_a_pod_hami_gave_two_cards_fails_quota_injection_naming_both_cards() -> None:
    """What HAMi hands a Pod allocated two cards: both in its allocation, NVIDIA_VISIBLE_DEVICES and a limit per
    device, one order (v2.10.0 plugin/server.go:815-835 and 1058; devices.go:454)."""
    expect, evidence, card_1 = two_cards()
    a = expect.pods[0]
    annotations = evidence["pods"][a]["annotations"]
    annotations[ALLOCATED] = f"{card_1},NVIDIA,4000,30:{CARD_0},NVIDIA,4000,30:;"
    edit_probe(evidence, a, lambda r: r["env"].update(NVIDIA_VISIBLE_DEVICES=f"{card_1},{CARD_0}",
                                                      CUDA_DEVICE_MEMORY_LIMIT_1="4000m"))  # fmt: skip
    failed = checks(expect, evidence)["quota-injection"]
    assert failed["passed"] is False
    assert (
        f"Pod {a}: CUDA_DEVICE_MEMORY_LIMIT_1=4000m is a quota for its device 1, {CARD_0}, beside {card_1}, the"
        " card it was given: the Pod was given a second card"
    ) in failed["observed"]


@pytest.mark.parametrize(
    ("env", "named"),
    [
        # HAMi-core reads an SM limit per device too (src/multiprocess/multiprocess_memory_limit.c:201)
        ({"CUDA_DEVICE_SM_LIMIT_1": "30"}, "CUDA_DEVICE_SM_LIMIT_1=30"),
        ({"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT": "0=4000M,1=4000M"}, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT's 1=4000M"),
        ({"CUDA_DEVICE_MEMORY_LIMIT_1": "4000m"}, "CUDA_DEVICE_MEMORY_LIMIT_1=4000m"),
    ],
)
def test_a_limit_for_a_device_beyond_the_pods_one_card_fails_quota_injection(env, named) -> None:
    expect, evidence, card_1 = two_cards()
    a = expect.pods[0]
    edit_probe(evidence, a, lambda r: r["env"].update(env))
    failed = checks(expect, evidence)["quota-injection"]
    assert failed["passed"] is False
    assert (
        f"Pod {a}: {named} is a quota for its device 1, a card no device list names, beside {card_1}"
        in failed["observed"]
    )


def test_a_device_0_limit_that_is_not_its_allocation_fails_quota_injection() -> None:
    expect, evidence, card_1 = two_cards()
    b = expect.pods[1]
    annotations = evidence["pods"][b]["annotations"]
    annotations[ALLOCATED] = annotations[ALLOCATED].replace(",4000,", ",3000,")
    failed = checks(expect, evidence)["quota-injection"]
    assert failed["passed"] is False
    assert f"CUDA_DEVICE_MEMORY_LIMIT_0=4000m, its {ALLOCATED} gives device 0 ({card_1}) 3000 MiB" in failed["observed"]


def test_a_register_listing_the_pods_card_as_card_0_fails_quota_injection_naming_both_cards() -> None:
    expect, evidence, card_1 = two_cards()
    for node in evidence["nodes"].values():
        node["annotations"][REGISTER] = _register(card_1, {card_1: 0, CARD_0: 1})
    failed = checks(expect, evidence)["quota-injection"]
    assert failed["passed"] is False
    assert f"registers {card_1} of Pod {expect.pods[0]} as card 0, the proof shares card 1" in failed["observed"]
    assert f"registers card 1 as ['{CARD_0}'], the proof Pods were pinned to {card_1}" in failed["observed"]


@pytest.mark.parametrize(
    ("variable", "value", "why"),
    [
        ("NVIDIA_VISIBLE_DEVICES", f"{CARD_0},{CARD_0}", "names the card"),
        ("NVIDIA_VISIBLE_DEVICES", f"all,{CARD_0}", "beside cards says two things"),
        ("NVIDIA_VISIBLE_DEVICES", "card-one", "which is no card"),
        ("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "4000M", "no `<device>=<limit>` entry"),
        ("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "0=4000M,0=2G", "limits device 0 twice"),
    ],
)
def test_a_device_list_or_mps_limit_that_names_no_device_once_is_not_judgeable(variable, value, why) -> None:
    expect, evidence, _ = two_cards()
    a = expect.pods[0]
    edit_probe(evidence, a, lambda r: r["env"].update({variable: value}))
    judged = checks(expect, evidence)
    for check_id in ("same-gpu", "quota-injection"):
        observed = judged[check_id]["observed"]
        assert judged[check_id]["passed"] is False and f"not judgeable: {a}.memory.env.{variable}" in observed
        assert why in observed, observed


# ---------------------------------------------------------------- the host proof on a two-card host

CARDS = (
    {"index": 0, "name": "NVIDIA H200", "mib": 15360, "driver": "580", "computeMode": "Default", "uuid": CARD_0},
    {"index": 1, "name": "NVIDIA H200", "mib": 15360, "driver": "580", "computeMode": "Default", "uuid": ""},
)


def _host_options(card_1: str, device: int = 1, tmp: Path | None = None) -> Any:
    from components.verify.host.proof import HostOptions

    cards = (CARDS[0], {**CARDS[1], "uuid": card_1})
    return HostOptions(setup="hami-core", workdir=tmp or Path("/tmp"), lib="/opt/libvgpu.so", device=device,
                       cards=cards, gpu_uuid=CARD_0)  # fmt: skip


def host_two_cards() -> tuple[Expectation, dict[str, Any], str]:
    """The recorded run as a host proof on card 1 of a two-card host (cards.on_cards), with the whole-card process
    on card 0 and the cross-card process beside the Pods (cards.side_steps), each its own process tied to its Pod."""
    from components.verify.host import cards

    wire = json.loads((ROOT / "tests" / "fixtures" / "cluster_expect.json").read_text())
    expect, evidence = tied("cluster")
    a = expect.pods[0]
    card_1 = probe_line(evidence, a)["gpu_uuid"]
    host = {"expect": {**wire, "pods": list(expect.pods)}}
    hosted = host_expectation.host_expect(host["expect"], "hami-core", wire["limitEnv"], 15360)
    hosted = cards.on_cards(replace(hosted, provenance=True), _host_options(card_1), host)
    for pod in expect.pods:  # as cards.card_env gives them
        edit_probe(evidence, pod, lambda r: r["env"].update(CUDA_VISIBLE_DEVICES="1"))
    result = probe_line(evidence, a)
    whole = as_another_process(result, 30)
    unlimited_view(whole, 15360, 15000)
    whole.update(gpu_uuid=CARD_0, expected_limit_mib=None, preload={"listed": [], "mapped": []})
    whole["env"].update(NVIDIA_VISIBLE_DEVICES=CARD_0, CUDA_VISIBLE_DEVICES="0", CUDA_DEVICE_MEMORY_LIMIT_0=None,
                        CUDA_DEVICE_SM_LIMIT=None, LD_PRELOAD=None, CUDA_DEVICE_MEMORY_SHARED_CACHE=None)  # fmt: skip
    crossing = as_another_process(result, 45)
    crossing.update(gpu_uuid=CARD_0)
    crossing["env"].update(CUDA_VISIBLE_DEVICES=None)
    for name, out, pid in ((cards.WHOLE_GPU_POD, whole, 400), (cards.try_name(host["expect"]), crossing, 500)):
        evidence["pods"][name] = {**{k: v for k, v in evidence["pods"][a].items() if k != "annotations"},
                                  "name": name, "logs": json.dumps(out) + "\n"}  # fmt: skip
        tie_try(hosted, evidence, name, pid=pid)
    return hosted, evidence, card_1


def test_on_a_two_card_host_the_whole_card_process_is_judged_on_card_0_not_the_shared_card() -> None:
    expect, evidence, card_1 = host_two_cards()
    assert (expect.cards_per_node, expect.shared_card_index, expect.whole_gpu_card_index) == (2, 1, 0)
    _passes_on_card_1(expect, evidence, "same-gpu", "view-isolation", "quota-injection")
    edit_probe(evidence, expect.whole_gpu_pod or "", lambda r: (r.update(gpu_uuid=card_1), r["env"].update(
        NVIDIA_VISIBLE_DEVICES=card_1, CUDA_VISIBLE_DEVICES="1")))  # fmt: skip
    failed = checks(expect, evidence)["view-isolation"]
    assert failed["passed"] is False
    assert f"measured {card_1}, the card the proof Pods share: it is judged on card 0" in failed["observed"]


def test_on_a_two_card_host_a_whole_card_process_with_a_quota_or_a_slices_view_fails_view_isolation() -> None:
    expect, evidence, _ = host_two_cards()
    whole = str(expect.whole_gpu_pod)
    edit_probe(evidence, whole, lambda r: (r["env"].update(CUDA_DEVICE_MEMORY_LIMIT_0="4000m"),
                                           r.update(nvml_total_mib=4000, nvml_free_mib=4000)))  # fmt: skip
    failed = checks(expect, evidence)["view-isolation"]
    assert failed["passed"] is False
    assert (
        f"whole-GPU Pod {whole} carries CUDA_DEVICE_MEMORY_LIMIT_0=4000m: a whole card has no quota"
        in failed["observed"]
    )
    assert f"whole-GPU Pod {whole}: NVML total is 4000 MiB, not the whole card's 15360" in failed["observed"]


def test_on_a_two_card_host_a_proof_pod_whose_cuda_reaches_card_0_fails_same_gpu() -> None:
    expect, evidence, card_1 = host_two_cards()
    a = expect.pods[0]
    edit_probe(evidence, a, lambda r: r["env"].update(CUDA_VISIBLE_DEVICES="0"))
    failed = checks(expect, evidence)["same-gpu"]
    assert failed["passed"] is False
    assert f"CUDA_VISIBLE_DEVICES=0 shows CUDA 0 beside {card_1} (card 1)" in failed["observed"]


def test_the_process_that_reaches_card_0_while_its_quota_names_card_1_is_a_finding_naming_both() -> None:
    expect, evidence, card_1 = host_two_cards()
    crossing = next(t.pod for t in expect.pod_tries if t.id == "cross-card")
    found = next(f for f in judge.judge(expect, evidence)["findings"] if f["pod"] == crossing)
    assert found["bypassed"] is True and found["id"] == "cross-card"
    assert found["observed"].startswith(f"reaches a card its quota does not name: measured {CARD_0}")
    assert f"CUDA_DEVICE_MEMORY_LIMIT_0=4000m and NVIDIA_VISIBLE_DEVICES name {card_1}" in found["observed"]
    edit_probe(evidence, crossing, lambda r: r.update(gpu_uuid=card_1))  # CUDA kept to the named card: held
    held = next(f for f in judge.judge(expect, evidence)["findings"] if f["pod"] == crossing)
    assert held["bypassed"] is False and held["observed"].startswith(f"reached only {card_1}")


def test_a_host_proof_may_share_card_0_where_a_cluster_may_not() -> None:
    expect, _, _ = host_two_cards()
    on_0 = replace(expect, shared_card_index=0, shared_card_uuid=CARD_0, whole_gpu_card_index=1)
    assert Expectation.parse(on_0.to_wire()).shared_card_index == 0
    with pytest.raises(ValueError, match="sharedCardIndex is 0: on a 2-card node it is a card other than 0"):
        Expectation.parse(replace(on_0, host_proof=False).to_wire())


# ---------------------------------------------------------------- what the probes and the host proof give a process


def test_the_memory_probe_reports_every_per_device_limit_it_finds(tmp_path: Path) -> None:
    import os

    env = {
        **os.environ,
        "GPUSHARE_LIBCUDA": str(tmp_path / "libcuda.so.1"),
        "CUDA_DEVICE_MEMORY_LIMIT_1": "4000m",
        "CUDA_DEVICE_SM_LIMIT_3": "30",
        "CUDA_DEVICE_MEMORY_LIMIT_01": "1m",
        "CUDA_VISIBLE_DEVICES": "1",
    }
    done = subprocess.run(module_argv("memory", "--json"), env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    reported = json.loads(done.stdout.splitlines()[-1])["env"]
    assert reported["CUDA_DEVICE_MEMORY_LIMIT_1"] == "4000m" and reported["CUDA_DEVICE_SM_LIMIT_3"] == "30"
    assert reported["CUDA_VISIBLE_DEVICES"] == "1"
    assert "CUDA_DEVICE_MEMORY_LIMIT_01" not in reported  # HAMi-core reads `_%d`: `_01` limits nothing


def test_device_1_gives_each_proof_pod_card_1_by_uuid_and_index_and_one_card_gives_todays_env(tmp_path: Path) -> None:
    from components.verify.host.proof import HostOptions, pod_env

    expect = {"limitEnv": {"CUDA_DEVICE_MEMORY_LIMIT_0": "4000m"}, "coresPercent": 30, "visibleMiB": 4000}
    two = pod_env(expect, _host_options("GPU-bbbb", 1, tmp_path), "a")
    assert (two["NVIDIA_VISIBLE_DEVICES"], two["CUDA_VISIBLE_DEVICES"]) == ("GPU-bbbb", "1")
    today = HostOptions(setup="hami-core", workdir=tmp_path, lib="/opt/libvgpu.so", gpu_uuid=CARD_0)
    one = replace(today, device=0, cards=(CARDS[0],))
    assert pod_env(expect, one, "a") == pod_env(expect, today, "a")
    assert pod_env(expect, one, "a")["NVIDIA_VISIBLE_DEVICES"] == CARD_0


@pytest.fixture(scope="module")
def k3s() -> dict[str, Any]:
    return host_expectation.host_plan("k3s", [])


def test_a_two_card_host_runs_the_whole_card_and_cross_card_processes_beside_the_pods(k3s, tmp_path, monkeypatch):
    from components.verify.host.proof import prove

    monkeypatch.setenv("GPUSHARE_LIBCUDA", str(tmp_path / "libcuda.so.1"))  # no GPU here: what ran, not its result
    proven = prove(k3s, replace(_host_options("GPU-bbbb", 1, tmp_path), setup="bare", hold_seconds=0),
                   log=lambda _line: None)  # fmt: skip
    expect, evidence = proven["expect"], proven["evidence"]
    crossing = "gpushare-proof-try-cross-card"
    assert set(evidence) == {*k3s["pods"], "gpushare-whole-gpu", crossing}
    assert (expect["cardsPerNode"], expect["sharedCardIndex"], expect["sharedCardUuid"]) == (2, 1, "GPU-bbbb")
    assert (expect["wholeGpuPod"], expect["wholeGpuCardIndex"]) == ("gpushare-whole-gpu", 0)
    env = {name: out["memory"]["env"] for name, out in evidence.items()}
    assert {env[p]["CUDA_VISIBLE_DEVICES"] for p in k3s["pods"]} == {"1"}
    assert env["gpushare-whole-gpu"]["CUDA_VISIBLE_DEVICES"] == "0"
    assert env["gpushare-whole-gpu"]["CUDA_DEVICE_MEMORY_LIMIT_0"] is None
    assert env[crossing]["CUDA_VISIBLE_DEVICES"] is None and env[crossing]["NVIDIA_VISIBLE_DEVICES"] == "GPU-bbbb"
    assert env[crossing]["CUDA_DEVICE_MEMORY_LIMIT_0"] == env[next(iter(k3s["pods"]))]["CUDA_DEVICE_MEMORY_LIMIT_0"]
    assert [f["id"] for f in proven["verdict"]["findings"] if f["pod"] == crossing] == ["cross-card"]


def test_device_0_on_a_one_card_host_gives_todays_verdict(k3s, tmp_path, monkeypatch) -> None:
    from components.verify.host.proof import HostOptions, prove

    monkeypatch.setenv("GPUSHARE_LIBCUDA", str(tmp_path / "libcuda.so.1"))
    today = HostOptions(setup="bare", workdir=tmp_path, hold_seconds=0, gpu_uuid=CARD_0)

    def verdict(options: Any) -> Any:
        proven = prove(k3s, options, log=lambda _line: None)
        return proven["expect"], [(c["id"], c["passed"], c["observed"]) for c in proven["verdict"]["checks"]]

    assert verdict(replace(today, device=0, cards=(CARDS[0],))) == verdict(today)


def test_a_device_the_host_does_not_have_is_refused_before_anything_runs(monkeypatch, capsys, tmp_path) -> None:
    from components.verify.host import __main__ as host

    monkeypatch.setattr(host, "card", lambda: dict(CARDS[0]))
    monkeypatch.setattr(host, "cards_of_host", lambda: [dict(CARDS[0]), {**CARDS[1], "uuid": "GPU-bbbb"}])
    wire = json.loads((ROOT / "tests" / "fixtures" / "cluster_expect.json").read_text())
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps({"stack": "cluster", "expect": wire, "pods": {}}))
    assert host.main(["cluster", "--expect", str(path), "--device", "2"]) == 2
    assert "--device 2: this host has the cards [0, 1]" in capsys.readouterr().err


def test_the_two_card_commands_in_the_host_proof_record_name_card_1() -> None:
    from components.verify.host.__main__ import parse_args

    readme = (ROOT / "docs" / "host-proof" / "README.md").read_text()
    section = readme[readme.index("## Two cards") :]
    shown = [line.split("python3 -m components.verify.host ", 1)[1] for line in section.splitlines()
             if "python3 -m components.verify.host " in line and "--write-expect" not in line]  # fmt: skip
    assert shown
    for command in shown:
        args = parse_args(command.split("#")[0].split())
        assert args.device == 1 and args.lib, command
    assert "nvidia-h200-x2" in section and "docs/host-proof/two-cards.sh" in section
    assert (ROOT / "docs" / "host-proof" / "two-cards.sh").is_file()


def test_the_host_names_its_side_processes_as_the_cluster_names_its_pods() -> None:
    from components.verify.host import cards
    from components.verify.workloads import WHOLE_GPU_POD, try_pod_name

    assert cards.WHOLE_GPU_POD == WHOLE_GPU_POD
    assert cards.try_name({"pods": ["gpu-slice-a", "gpu-slice-b"]}) == try_pod_name("gpu-slice", "cross-card")
