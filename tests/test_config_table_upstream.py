"""The refusal table, continued: what `pulumi up`, GCE, the kubelet, Helm and KAI would refuse or read otherwise.

Each bad row exits 2 with one line naming the key (test_config_table.py's rules); each good row still plans.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from components.plan import main
from tests.test_config_table import HOST, KUBECONFIG_TEXT, Bad, _argv, _kubeconfig, assert_reads_as_ours, bad

SEALED = "v1:" + "A" * 16 + ":" + "A" * 43 + "="
"""A ciphertext as a passphrase writes it (crypt.go:181): v1, a 12-byte nonce, the sealed bytes."""
NATIVE = ("gpushare:kai=null", "gpushare:isolator=null", "gpushare:gkeCdi=null", "gpushare:verify.sliceMiB=null")
TIME_SHARING = ("gpushare:sharing=time-sharing", *NATIVE)
MPS = ("gpushare:sharing=mps", *NATIVE)
PASTED = '"apiVersion: v1\\nusers:\\n- user: {token: s3cr3t}\\n"'
"""A kubeconfig's text where its path belongs (a -c value in YAML double quotes: real line breaks)."""

BAD = [
    # --- YAML as gopkg.in/yaml.v3 reads it (components/config/stack_yaml.py) --------------------------------
    bad("gke", "gpushare:verify.holdSeconds=1:30", key="gpushare:verify.holdSeconds"),
    bad("gke", "gpushare:verify.holdGiB=-.inf", key="gpushare:verify.holdGiB"),
    bad("gke", "gpushare:verify.sweepGiB=[4, .NaN]", key="gpushare:verify.sweepGiB[1]"),
    bad("gke", "gpushare:verify.enabled=!!bool yes", key="gpushare:verify.enabled"),
    bad("gke", "gpushare:verify={sliceMiB: 4000, sliceMiB: 4096}", key="gpushare:verify"),
    bad("gke", "gpushare:verify.runId=!!binary '***'", key="gpushare:verify.runId"),
    bad("gke", "gpushare:gke.zone=on", key="gpushare:gke.zone"),
    bad("gke", "gpushare:platform=yes", key="gpushare:platform"),
    bad("gke", "gpushare:verify.runId=2026-01-01", key="gpushare:verify.runId"),  # Go's time text: quote it
    bad("gke", "gpushare:verify.runId=2026-01-01T10:00:00Z", key="gpushare:verify.runId"),
    bad("gke", "gpushare:verify.holdSeconds=017", key="gpushare:verify.holdSeconds"),  # octal 15, not 17
    # --- keys as the Pulumi CLI parses them (pkg/cmd/pulumi/config/io.go:388, config/key.go:45) --------------
    bad("gke", "sliceMiB=999999", key="gpushare:sliceMiB"),
    bad("gke", ":verify.sliceMiB=1", key=":verify.sliceMiB"),
    bad("gke", "gpushare:a:b:c=1", key="gpushare:a:b:c"),
    bad("gke", "=1", key="-c"),
    # --- secrets: what `pulumi config set --secret` writes -------------------------------------------------
    bad("k3s", *HOST, "gpushare:host.privateKey={secure: v1:abcdef}", key="gpushare:host.privateKey"),
    bad("cluster", KUBECONFIG_TEXT, "gpushare:cluster.kubeconfig={secure: 'not base64!'}",
        key="gpushare:cluster.kubeconfig"),
    bad("gke", "gpushare:registryMirrors={docker.io: {secure: 'v1:AAAA:AAAA'}}",
        key='gpushare:registryMirrors["docker.io"]'),
    # --- paths: never quoted back when they may hold a credential, one line when too long ------------------
    bad("cluster", f"gpushare:cluster.kubeconfigPath={PASTED}", key="gpushare:cluster.kubeconfigPath"),
    bad("cluster", "gpushare:cluster.kubeconfigPath=" + "a" * 5000, key="gpushare:cluster.kubeconfigPath"),
    bad("gke", "gpushare:chartSources.kai.path=" + "b" * 5000, key="gpushare:chartSources.kai.path"),
    bad("cluster", "gpushare:cluster.kubeconfigPath={tmp}/kc-no-host.yaml", key="gpushare:cluster.kubeconfigPath"),
    bad("cluster", "gpushare:cluster.kubeconfigPath={tmp}/kc-bad-ip.yaml", key="gpushare:cluster.kubeconfigPath"),
    # --- what GCE would refuse (components/gpus.py's machine table) -----------------------------------------
    bad("gke", "gpushare:gke.machineType=n1-standard-3", key="gpushare:gke.machineType"),
    bad("gke", "gpushare:gke.machineType=n1-highmem-1", key="gpushare:gke.machineType"),
    bad("gke", "gpushare:gke.machineType=a2-highgpu-3g", "gpushare:gpu.type=nvidia-tesla-a100",
        key="gpushare:gke.machineType"),
    bad("gke", "gpushare:gke.machineType=g2-standard-6", "gpushare:gpu.type=nvidia-l4", key="gpushare:gke.machineType"),
    bad("gke", "gpushare:gpu.perNode=3", key="gpushare:gpu.perNode"),
    bad("gke", "gpushare:gpu.perNode=8", key="gpushare:gpu.perNode"),
    bad("k3s", "gpushare:vm.machineType=n1-standard-3", "gpushare:gpu.type=nvidia-tesla-t4",
        key="gpushare:vm.machineType"),
    bad("gke", "gpushare:gpu.memoryMiB=99999999999", key="gpushare:gpu.memoryMiB"),
    bad("cluster", "gpushare:gpu.memoryMiB=262145", key="gpushare:gpu.memoryMiB"),
    bad("gke", "gpushare:gke.kubernetesVersion=1.99.", key="gpushare:gke.kubernetesVersion"),
    bad("gke", "gpushare:gke.kubernetesVersion=1.39.1-gke.100", key="gpushare:gke.kubernetesVersion"),
    bad("gke", "gpushare:gke.kubernetesVersion=2.0.", key="gpushare:gke.kubernetesVersion"),
    # --- what SSH, Helm, the kubelet and KAI would refuse ----------------------------------------------------
    bad("k3s", *HOST, "gpushare:host.address=256.1.1.1", key="gpushare:host.address"),
    bad("k3s", *HOST, "gpushare:host.address=192.0.2", key="gpushare:host.address"),
    bad("k3s", *HOST, "gpushare:host.address=1.2.3.4.5", key="gpushare:host.address"),
    bad("gke", "gpushare:chartSources.kai.repository=oci://harbor.example.com/Charts",
        key="gpushare:chartSources.kai.repository"),
    bad("gke", "gpushare:chartSources.kai.repository=oci://256.1.1.1/charts",
        key="gpushare:chartSources.kai.repository"),
    bad("k3s", "gpushare:hami.nodeLabel={node-role.kubernetes.io/gpu: ''}",
        key='gpushare:hami.nodeLabel["node-role.kubernetes.io/gpu"]'),
    bad("k3s", *HOST, "gpushare:hami.nodeLabel={k8s.io/gpu: 'on'}", key='gpushare:hami.nodeLabel["k8s.io/gpu"]'),
    bad("gke", "gpushare:verify.namespace=kai-resource-reservation", key="gpushare:verify.namespace"),
    bad("gke", "gpushare:isolator.namespace=kai-resource-reservation", key="gpushare:isolator.namespace"),
    # --- across keys --------------------------------------------------------------------------------------
    bad("gke", *TIME_SHARING, "gpushare:verify.holdGiB=20", key="gpushare:verify.holdGiB"),
    bad("gke", "gpushare:registryMirrors={GHCR.IO: harbor.example.com/a, ghcr.io: harbor.example.com/b}",
        key="gpushare:registryMirrors"),
]  # fmt: skip

GOOD = [
    # --- YAML: what PyYAML would have refused or read otherwise, and `pulumi up` takes ------------------------
    ("gke", "gpushare:verify.runId='2026-01-01'"),  # quoted: the text as written
    ("gke", "gpushare:verify.runId=!!binary cnVuLTE="),  # run-1
    ("gke", "gpushare:kai.queue=!!binary cnVuLTE="),
    ("gke", "gpushare:kai.namespace=on"),  # a namespace named on
    ("gke", "gpushare:verify.holdSeconds=0x1F"),  # 31
    ("gke", "gpushare:verify.holdSeconds=0o17"),  # 15
    ("gke", "gpushare:verify.deadlineSeconds=1_200"),
    ("gke", "gpushare:gke.spot=yes"),  # text "yes", which the bool field reads as true
    ("gke", "verify.sliceMiB=4096"),  # `pulumi config set --path verify.sliceMiB`: the project's namespace
    ("gke", "gpushare:config:platform=gke"),  # config.ParseKey's old form
    # --- secrets in the shape their key needs ------------------------------------------------------------
    ("k3s", *HOST, f"gpushare:host.privateKey={{secure: {SEALED}}}"),
    ("k3s", *HOST, "gpushare:host.address={secure: AAABAxyz}", "gpushare:host.hostKey={secure: AAABAxyz}"),
    ("k3s", "gpushare:vm.allowedSourceRanges=[{secure: AAABAxyz}]"),
    ("cluster", "gpushare:cluster.kubeconfigPath={secure: AAABAxyz}"),
    ("gke", "gpushare:chartSources.kai.repository={secure: AAABAxyz}"),
    ("gke", "gpushare:imageRegistry={secure: AAABAxyz}"),
    ("gke", "gpushare:gke.zone={secure: AAABAxyz}"),
    ("gke", "gpushare:verify.sliceMiB={secure: AAABAxyz}"),
    # --- what GCE, SSH, Helm and the kubelet take ----------------------------------------------------------
    ("gke", "gpushare:gke.machineType=n1-highcpu-16"),
    ("gke", "gpushare:gke.machineType=n1-standard-1"),
    ("gke", "gpushare:gpu.memoryMiB=262144", "gpushare:gpu.type=nvidia-a100-80gb",
     "gpushare:gke.machineType=a2-ultragpu-1g", "gpushare:kai=null", "gpushare:isolator=null", "gpushare:gkeCdi=null",
     "gpushare:sharing=time-sharing", "gpushare:verify.sliceMiB=null"),
    ("gke", "gpushare:gke.kubernetesVersion=1.38."),
    ("k3s", *HOST, "gpushare:host.address=10.0.0.1"),
    ("k3s", *HOST, "gpushare:host.address=2001:db8::7"),
    ("k3s", *HOST, "gpushare:host.address=gpu-1.example.com"),
    ("gke", "gpushare:chartSources.kai.repository=oci://Harbor.Example.com/charts"),  # hosts are case-blind
    ("cluster", "gpushare:cluster.kubeconfigPath={tmp}/kc-v6.yaml"),
    ("k3s", "gpushare:hami.nodeLabel={node.kubernetes.io/gpu: 'on'}"),  # a namespace the kubelet may set
    ("cluster", "gpushare:hami.nodeLabel={node-role.kubernetes.io/gpu: ''}"),  # labelled through the API
    # --- across keys --------------------------------------------------------------------------------------
    ("gke", *TIME_SHARING, "gpushare:verify.holdGiB=14"),
    ("gke", *MPS, "gpushare:verify.enabled=false", "gpushare:gkeSharing.maxSharedClientsPerGpu=48"),
    ("gke", "gpushare:registryMirrors={GHCR.IO: harbor.example.com/ghcr}"),
]  # fmt: skip

_CONTEXTS = "[{name: a, context: {cluster: c}}]"
KUBECONFIGS = {
    "kc-no-host.yaml": _kubeconfig("[{name: c, cluster: {server: 'https://'}}]", _CONTEXTS, "a"),
    "kc-bad-ip.yaml": _kubeconfig("[{name: c, cluster: {server: 'https://256.1.1.1:6443'}}]", _CONTEXTS, "a"),
    "kc-v6.yaml": _kubeconfig("[{name: c, cluster: {server: 'https://[2001:db8::1]:6443'}}]", _CONTEXTS, "a"),
}


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("upstream")
    for name, text in KUBECONFIGS.items():
        (folder / name).write_text(text)
    return folder


@pytest.mark.parametrize("row", BAD, ids=[f"{r.stack}:{' '.join(r.overrides)[:60]}" for r in BAD])
def test_what_upstream_refuses_is_refused_in_one_line_naming_the_key(row: Bad, scratch: Path, capsys) -> None:
    code = main(_argv(row.stack, row.overrides, scratch))
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and row.key in lines[0], err[:500]
    assert "Traceback" not in err and len(lines[0]) < 600
    assert_reads_as_ours(lines[0])


@pytest.mark.parametrize("row", GOOD, ids=[" ".join(r)[:80] for r in GOOD])
def test_what_upstream_takes_still_plans(row: tuple[str, ...], scratch: Path, capsys) -> None:
    stack, *overrides = row
    assert main(_argv(stack, tuple(overrides), scratch)) == 0, capsys.readouterr().err
    capsys.readouterr()
