"""A new user's bad inputs, as a table: each exits 2 with one line naming the full key and registers nothing.

Every row runs `python -m components.plan` as a user would (through `main`). The valid edge cases at the end
must still plan. `{tmp}` in a value is a scratch folder holding a binary file and a file that is not YAML.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

import pytest

from components.plan import main
from tests.conftest import ROOT

HOST = ("gpushare:platform=existing-host", "gpushare:vm=null", "gpushare:host.address=192.0.2.50",
        "gpushare:host.privateKey=placeholder")  # fmt: skip
KUBECONFIG_TEXT = "gpushare:cluster.kubeconfigPath=null"
ED25519 = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEhvc3RIb3N0SG9zdEhvc3RIb3N0SG9zdEhvc3RIb3N0"
"""A well-formed Ed25519 public key (its 32 bytes spell HostHost…)."""
SEALED = "v1:" + "A" * 16 + ":" + "A" * 43 + "="
"""A ciphertext in the form a passphrase writes (crypt.go:179): v1, a 12-byte nonce, 32 sealed bytes."""


class Bad(NamedTuple):
    stack: str
    overrides: tuple[str, ...]
    key: str
    """The full key the one line must name."""


def bad(stack: str, *overrides: str, key: str) -> Bad:
    return Bad(stack, overrides, key)


BAD = [
    # --- the platform choice, and what belongs to it ---------------------------------------------------------
    bad("gke", "gpushare:platform=eks", key="gpushare:platform"),
    bad("gke", "gpushare:platform=null", key="gpushare:platform"),
    bad("gke", "gpushare:platform=GKE", key="gpushare:platform"),
    bad("gke", "gpushare:toolkit=gpu-operator", key="gpushare:toolkit"),
    bad("gke", "gpushare:toolkit=host", key="gpushare:toolkit"),
    bad("gke", "gpushare:sharing=hami", key="gpushare:sharing"),
    bad("gke", "gpushare:sharing=mig", key="gpushare:sharing"),
    bad("k3s", "gpushare:toolkit=gpu-operator", key="gpushare:toolkit"),
    bad("k3s", "gpushare:toolkit=gke-managed", key="gpushare:toolkit"),
    bad("k3s", "gpushare:sharing=kai", key="gpushare:sharing"),
    bad("cluster", "gpushare:toolkit=gke-managed", key="gpushare:toolkit"),
    bad("cluster", "gpushare:toolkit=none", key="gpushare:toolkit"),
    bad("cluster", "gpushare:sharing=kai", key="gpushare:sharing"),
    bad("gke", "gpushare:platform={a: 1}", key="gpushare:platform"),
    bad("gke", "gpushare:platform=[gke]", key="gpushare:platform"),
    bad("gke", "gpushare:platfrom=gke", key="gpushare:platfrom"),
    bad("gke", "gpushare:unknownKey=1", key="gpushare:unknownKey"),
    bad("k3s", "gpushare:gke.zone=us-central1-a", key="gpushare:gke"),
    bad("k3s", "gpushare:kai.queue=q", key="gpushare:kai"),
    bad("k3s", "gpushare:isolator.namespace=iso", key="gpushare:isolator"),
    bad("k3s", "gpushare:gpuOperator.version=v26.7.0", key="gpushare:gpuOperator"),
    bad("k3s", "gpushare:cluster.kubernetesVersion=v1.35.6", key="gpushare:cluster"),
    bad("gke", "gpushare:hami.version=2.9.0", key="gpushare:hami"),
    bad("gke", "gpushare:vm.zone=us-central1-b", key="gpushare:vm"),
    bad("gke", "gpushare:k3s.version=v1.36.2+k3s1", key="gpushare:k3s"),
    bad("gke", "gpushare:host.address=192.0.2.50", key="gpushare:host"),
    bad("gke", "gpushare:cluster.gpuNodes=[a]", key="gpushare:cluster"),
    bad("gke", "gpushare:gpuOperator.cdiEnabled=true", key="gpushare:gpuOperator"),
    bad("cluster", "gpushare:vm.zone=us-central1-b", key="gpushare:vm"),
    bad("cluster", "gpushare:k3s.nodeName=n", key="gpushare:k3s"),
    bad("cluster", "gpushare:isolator.version=1.1.0-chart", key="gpushare:isolator"),
    bad("cluster", "gpushare:gkeCdi.kyverno=false", key="gpushare:gkeCdi"),
    bad("cluster", "gpushare:toolkit=host", key="gpushare:gpuOperator"),
    bad("k3s", *HOST[:1], *HOST[2:], key="gpushare:vm"),
    bad("k3s", "gpushare:platform=existing-host", "gpushare:vm=null", key="gpushare:host"),
    bad("cluster", "gpushare:cluster=null", key="gpushare:cluster"),
    # --- keys that moved into the one GPU description --------------------------------------------------------
    bad("gke", "gpushare:gke.gpuType=nvidia-l4", key="gpushare:gke.gpuType"),
    bad("gke", "gpushare:gke.gpuCount=2", key="gpushare:gke.gpuCount"),
    bad("gke", "gpushare:gke.gpuMemoryMiB=15000", key="gpushare:gke.gpuMemoryMiB"),
    bad("k3s", "gpushare:vm.gpuType=nvidia-l4", key="gpushare:vm.gpuType"),
    bad("k3s", "gpushare:vm.gpuMemoryMiB=1", key="gpushare:vm.gpuMemoryMiB"),
    bad("cluster", "gpushare:cluster.gpuType=nvidia-tesla-t4", key="gpushare:cluster.gpuType"),
    bad("cluster", "gpushare:cluster.gpusPerNode=2", key="gpushare:cluster.gpusPerNode"),
    bad("cluster", "gpushare:cluster.gpuMemoryMiB=2", key="gpushare:cluster.gpuMemoryMiB"),
    bad("k3s", *HOST, "gpushare:host.gpuType=nvidia-rtx-a6000", key="gpushare:host.gpuType"),
    # --- unknown and mistyped keys -------------------------------------------------------------------------
    bad("gke", "gpushare:verify.sliceMb=4096", key="gpushare:verify.sliceMb"),
    bad("gke", "gpushare:gke.zones=us-central1-a", key="gpushare:gke.zones"),
    bad("k3s", "gpushare:hami.versoin=2.9.0", key="gpushare:hami.versoin"),
    bad("cluster", "gpushare:gpu.count=1", key="gpushare:gpu.count"),
    bad("gke", "gpushare:gke.nodeCount=three", key="gpushare:gke.nodeCount"),
    bad("gke", "gpushare:gke.nodeCount=0", key="gpushare:gke.nodeCount"),
    bad("gke", "gpushare:gke.nodeCount=-1", key="gpushare:gke.nodeCount"),
    bad("gke", "gpushare:gke.nodeCount=100000", key="gpushare:gke.nodeCount"),
    bad("gke", "gpushare:gke.nodeCount=true", key="gpushare:gke.nodeCount"),
    bad("gke", "gpushare:gke.nodeCount=2.5", key="gpushare:gke.nodeCount"),
    bad("gke", "gpushare:verify.holdGiB=true", key="gpushare:verify.holdGiB"),
    bad("gke", "gpushare:verify.holdGiB=1e400", key="gpushare:verify.holdGiB"),
    bad("gke", "gpushare:gpu.memoryMiB=false", key="gpushare:gpu.memoryMiB"),
    bad("gke", "gpushare:gke.zone=5", key="gpushare:gke.zone"),
    bad("gke", "gpushare:gke.spot=maybe", key="gpushare:gke.spot"),
    bad("gke", "gpushare:verify=[1, 2]", key="gpushare:verify"),
    bad("gke", "gpushare:gke=5", key="gpushare:gke"),
    bad("gke", "gpushare:verify.enabled=perhaps", key="gpushare:verify.enabled"),
    # --- GKE names, zones, versions -------------------------------------------------------------------------
    bad("gke", 'gpushare:gke.zone=""', key="gpushare:gke.zone"),
    bad("gke", "gpushare:gke.zone=us-central1", key="gpushare:gke.zone"),
    bad("gke", "gpushare:gke.zone=US-CENTRAL1-A", key="gpushare:gke.zone"),
    bad("gke", "gpushare:gke.zone=mars", key="gpushare:gke.zone"),
    bad("gke", "gpushare:gke.clusterName=Kai_Cluster", key="gpushare:gke.clusterName"),
    bad("gke", 'gpushare:gke.clusterName=""', key="gpushare:gke.clusterName"),
    bad("gke", "gpushare:gke.clusterName=1cluster", key="gpushare:gke.clusterName"),
    bad("gke", "gpushare:gke.clusterName=" + "a" * 41, key="gpushare:gke.clusterName"),
    bad("gke", "gpushare:gke.clusterName=cluster-", key="gpushare:gke.clusterName"),
    bad("gke", "gpushare:gke.kubernetesVersion=latest", key="gpushare:gke.kubernetesVersion"),
    bad("gke", 'gpushare:gke.kubernetesVersion="1.35"', key="gpushare:gke.kubernetesVersion"),
    bad("gke", "gpushare:gke.kubernetesVersion=v1.35.6", key="gpushare:gke.kubernetesVersion"),
    bad("gke", 'gpushare:gke.kubernetesVersion=""', key="gpushare:gke.kubernetesVersion"),
    bad("gke", "gpushare:gke.machineType=n1 standard", key="gpushare:gke.machineType"),
    bad("gke", 'gpushare:gke.machineType=""', key="gpushare:gke.machineType"),
    bad("gke", "gpushare:gke.gpuDriverVersion=INSTALLED", key="gpushare:gke.gpuDriverVersion"),
    # --- the cards ------------------------------------------------------------------------------------------
    bad("gke", "gpushare:gpu.type=nvidia-tesla-p100", "gpushare:gke.zone=us-central1-c", key="gpushare:gpu.memoryMiB"),
    bad("gke", "gpushare:gpu.type=NVIDIA T4", key="gpushare:gpu.type"),
    bad("gke", 'gpushare:gpu.type=""', key="gpushare:gpu.type"),
    bad("gke", "gpushare:gpu.memoryMiB=0", key="gpushare:gpu.memoryMiB"),
    bad("gke", "gpushare:gpu.memoryMiB=-5", key="gpushare:gpu.memoryMiB"),
    bad("gke", "gpushare:gpu.memoryMiB=lots", key="gpushare:gpu.memoryMiB"),
    bad("gke", "gpushare:gpu.perNode=0", key="gpushare:gpu.perNode"),
    bad("gke", "gpushare:gpu.perNode=17", key="gpushare:gpu.perNode"),
    bad("k3s", "gpushare:gpu.perNode=2", key="gpushare:gpu.perNode"),
    bad("cluster", "gpushare:gpu.memoryMiB=1.5", key="gpushare:gpu.memoryMiB"),
    # --- KAI, the isolator, the GKE workarounds -------------------------------------------------------------
    bad("gke", "gpushare:kai.version=latest", key="gpushare:kai.version"),
    bad("gke", "gpushare:kai.version=0.17.0", key="gpushare:kai.version"),
    bad("gke", 'gpushare:kai.version=""', key="gpushare:kai.version"),
    bad("gke", "gpushare:kai.cdiEnabled=true", key="gpushare:kai.cdiEnabled"),
    bad("gke", 'gpushare:kai.cdiEnabled="yes"', key="gpushare:kai.cdiEnabled"),
    bad("gke", "gpushare:kai.namespace=KAI", key="gpushare:kai.namespace"),
    bad("gke", "gpushare:kai.queue=Default_Queue", key="gpushare:kai.queue"),
    bad("gke", 'gpushare:kai.parentQueue=""', key="gpushare:kai.parentQueue"),
    bad("gke", "gpushare:kai.queue=" + "q" * 64, key="gpushare:kai.queue"),
    bad("gke", "gpushare:isolator.version=v1.1.0-chart", key="gpushare:isolator.version"),
    bad("gke", "gpushare:isolator.version=latest", key="gpushare:isolator.version"),
    bad("gke", "gpushare:isolator.namespace=kai resource", key="gpushare:isolator.namespace"),
    bad("gke", "gpushare:isolator.containerVgpuMount=relative/path", key="gpushare:isolator.containerVgpuMount"),
    bad("gke", "gpushare:isolator.librarySyncPriorityClass=System_Node",
        key="gpushare:isolator.librarySyncPriorityClass"),
    bad("gke", "gpushare:isolator.monitorPriorityClass=bad class", key="gpushare:isolator.monitorPriorityClass"),
    bad("gke", "gpushare:gkeCdi.kyvernoVersion=v3.8.2", key="gpushare:gkeCdi.kyvernoVersion"),
    bad("gke", 'gpushare:gkeCdi.kyvernoVersion="3.8"', key="gpushare:gkeCdi.kyvernoVersion"),
    bad("gke", "gpushare:gkeCdi.kyvernoNamespace=Kyverno", key="gpushare:gkeCdi.kyvernoNamespace"),
    bad("gke", "gpushare:gkeCdi.runtimeClassHandler=Run_C", key="gpushare:gkeCdi.runtimeClassHandler"),
    bad("gke", "gpushare:gkeCdi.nvidiaInstallDir=home/kubernetes", key="gpushare:gkeCdi.nvidiaInstallDir"),
    bad("gke", "gpushare:gkeCdi.kyverno=sometimes", key="gpushare:gkeCdi.kyverno"),
    # --- the proof ------------------------------------------------------------------------------------------
    bad("gke", "gpushare:verify.namespace=Proof_NS", key="gpushare:verify.namespace"),
    bad("gke", 'gpushare:verify.namespace=""', key="gpushare:verify.namespace"),
    bad("gke", "gpushare:verify.namespace=" + "n" * 64, key="gpushare:verify.namespace"),
    bad("gke", 'gpushare:verify.podPrefix=""', key="gpushare:verify.podPrefix"),
    bad("gke", "gpushare:verify.podPrefix=Upper", key="gpushare:verify.podPrefix"),
    bad("gke", "gpushare:verify.podPrefix=" + "p" * 62, key="gpushare:verify.podPrefix"),
    bad("gke", "gpushare:verify.podPrefix=" + "p" * 70, key="gpushare:verify.podPrefix"),
    bad("gke", "gpushare:verify.podPrefix=pod prefix", key="gpushare:verify.podPrefix"),
    bad("gke", "gpushare:verify.sliceMiB=999999", key="gpushare:verify.sliceMiB"),
    bad("gke", "gpushare:verify.sliceMiB=8000", key="gpushare:verify.sliceMiB"),
    bad("gke", "gpushare:verify.sliceMiB=0", key="gpushare:verify.sliceMiB"),
    bad("gke", "gpushare:verify.sliceMiB=-1", key="gpushare:verify.sliceMiB"),
    bad("gke", "gpushare:verify.coresPercent=30", key="gpushare:verify.coresPercent"),
    bad("gke", "gpushare:verify.probeImage=my image", key="gpushare:verify.probeImage"),
    bad("gke", 'gpushare:verify.probeImage=""', key="gpushare:verify.probeImage"),
    bad("gke", "gpushare:verify.smiImage=https://nvcr.io/nvidia/cuda", key="gpushare:verify.smiImage"),
    bad("gke", "gpushare:verify.holdGiB=.inf", key="gpushare:verify.holdGiB"),
    bad("gke", "gpushare:verify.holdGiB=.nan", key="gpushare:verify.holdGiB"),
    bad("gke", "gpushare:verify.holdGiB=0", key="gpushare:verify.holdGiB"),
    bad("gke", "gpushare:verify.holdGiB=5", key="gpushare:verify.holdGiB"),
    bad("gke", "gpushare:verify.extraGiB=0.5", key="gpushare:verify.extraGiB"),
    bad("gke", "gpushare:verify.extraGiB=-1", key="gpushare:verify.extraGiB"),
    bad("gke", "gpushare:verify.extraGiB=.inf", key="gpushare:verify.extraGiB"),
    bad("gke", "gpushare:verify.sweepGiB=[]", key="gpushare:verify.sweepGiB"),
    bad("gke", "gpushare:verify.sweepGiB=[-1]", key="gpushare:verify.sweepGiB"),
    bad("gke", "gpushare:verify.sweepGiB=[1, 2]", key="gpushare:verify.sweepGiB"),
    bad("gke", "gpushare:verify.sweepGiB=[.inf]", key="gpushare:verify.sweepGiB"),
    bad("gke", "gpushare:verify.sweepGiB=[true, 8]", key="gpushare:verify.sweepGiB"),
    bad("k3s", "gpushare:verify.sweepGiB=[false, 16]", key="gpushare:verify.sweepGiB"),
    bad("gke", "gpushare:verify.holdSeconds=0", key="gpushare:verify.holdSeconds"),
    bad("gke", "gpushare:verify.computeSeconds=1", key="gpushare:verify.computeSeconds"),
    bad("gke", "gpushare:verify.deadlineSeconds=10", key="gpushare:verify.deadlineSeconds"),
    bad("gke", 'gpushare:verify.runId=""', key="gpushare:verify.runId"),
    bad("gke", "gpushare:verify.failOnViolation=sometimes", key="gpushare:verify.failOnViolation"),
    bad("gke", "gpushare:imageRegistry=my registry", key="gpushare:imageRegistry"),
    bad("gke", "gpushare:imageRegistry=https://harbor.example.com", key="gpushare:imageRegistry"),
    bad("cluster", "gpushare:verify.coresPercent=0", key="gpushare:verify.coresPercent"),
    bad("cluster", "gpushare:verify.coresPercent=101", key="gpushare:verify.coresPercent"),
    bad("cluster", "gpushare:verify.sliceMiB=7681", key="gpushare:verify.sliceMiB"),
    bad("k3s", "gpushare:verify.overcommitMiB=80000", key="gpushare:verify.overcommitMiB"),
    bad("k3s", "gpushare:verify.overcommitMiB=120000", key="gpushare:verify.overcommitMiB"),
    bad("k3s", "gpushare:verify.sliceMiB=60000", key="gpushare:verify.sliceMiB"),
    bad("k3s", "gpushare:verify.extraGiB=1", key="gpushare:verify.extraGiB"),
    bad("k3s", "gpushare:verify.sweepGiB=[2, 3]", key="gpushare:verify.sweepGiB"),
    bad("k3s", "gpushare:verify.holdGiB=8", key="gpushare:verify.holdGiB"),
    # --- the k3s VM and k3s ----------------------------------------------------------------------------------
    bad("k3s", "gpushare:vm.zone=us-central1", key="gpushare:vm.zone"),
    bad("k3s", 'gpushare:vm.zone=""', key="gpushare:vm.zone"),
    bad("k3s", "gpushare:vm.machineType=G4", key="gpushare:vm.machineType"),
    bad("k3s", "gpushare:vm.allowedSourceRanges=[]", key="gpushare:vm.allowedSourceRanges"),
    bad("k3s", "gpushare:vm.allowedSourceRanges=[0.0.0.0/0]", key="gpushare:vm.allowedSourceRanges"),
    bad("k3s", "gpushare:vm.allowedSourceRanges=[0.0.0.0/1, 128.0.0.0/1]", key="gpushare:vm.allowedSourceRanges"),
    bad("k3s", "gpushare:vm.allowedSourceRanges=['::/0']", key="gpushare:vm.allowedSourceRanges"),
    bad("k3s", "gpushare:vm.allowedSourceRanges=[my-laptop]", key="gpushare:vm.allowedSourceRanges"),
    bad("k3s", "gpushare:vm.allowedSourceRanges=[300.1.1.1/32]", key="gpushare:vm.allowedSourceRanges"),
    bad("k3s", "gpushare:vm.bootDiskGiB=10", key="gpushare:vm.bootDiskGiB"),
    bad("k3s", "gpushare:vm.image=ubuntu 22.04", key="gpushare:vm.image"),
    bad("k3s", "gpushare:vm.network=My_Net", key="gpushare:vm.network"),
    bad("k3s", "gpushare:vm.sshUser=Root User", key="gpushare:vm.sshUser"),
    bad("k3s", "gpushare:vm.spot=perhaps", key="gpushare:vm.spot"),
    bad("k3s", "gpushare:vm.allowWorldOpen=maybe", key="gpushare:vm.allowWorldOpen"),
    bad("k3s", "gpushare:k3s.version=latest", key="gpushare:k3s.version"),
    bad("k3s", "gpushare:k3s.version=v1.36.2", key="gpushare:k3s.version"),
    bad("k3s", 'gpushare:k3s.version=""', key="gpushare:k3s.version"),
    bad("k3s", "gpushare:k3s.nodeName=gpu node", key="gpushare:k3s.nodeName"),
    bad("k3s", "gpushare:k3s.nodeName=GPU", key="gpushare:k3s.nodeName"),
    bad("k3s", 'gpushare:k3s.nodeName=""', key="gpushare:k3s.nodeName"),
    bad("k3s", "gpushare:k3s.driverPackage=nvidia open", key="gpushare:k3s.driverPackage"),
    # --- HAMi -----------------------------------------------------------------------------------------------
    bad("k3s", "gpushare:hami.version=2.8.0", key="gpushare:hami.version"),
    bad("k3s", "gpushare:hami.version=latest", key="gpushare:hami.version"),
    bad("k3s", "gpushare:hami.version=v2.9.0", key="gpushare:hami.version"),
    bad("k3s", "gpushare:hami.namespace=Kube_System", key="gpushare:hami.namespace"),
    bad("k3s", "gpushare:hami.schedulerImageTag=v1.35.6", key="gpushare:hami.schedulerImageTag"),
    bad("k3s", "gpushare:hami.schedulerImageTag=latest", key="gpushare:hami.schedulerImageTag"),
    bad("k3s", "gpushare:hami.deviceSplitCount=1", key="gpushare:hami.deviceSplitCount"),
    bad("k3s", "gpushare:hami.deviceSplitCount=2", key="gpushare:hami.deviceSplitCount"),
    bad("k3s", "gpushare:hami.deviceSplitCount=0", key="gpushare:hami.deviceSplitCount"),
    bad("k3s", "gpushare:hami.nodeLabel={}", key="gpushare:hami.nodeLabel"),
    bad("k3s", "gpushare:hami.nodeLabel={gpu: o n}", key="gpushare:hami.nodeLabel"),
    bad("k3s", "gpushare:hami.nodeLabel={GPU pool: on}", key="gpushare:hami.nodeLabel"),
    bad("k3s", "gpushare:hami.runtimeClassName=nvidia-legacy", key="gpushare:hami.runtimeClassName"),
    bad("k3s", "gpushare:hami.runtimeClassName=Bad Name", key="gpushare:hami.runtimeClassName"),
    bad("k3s", "gpushare:hami.waitTimeoutSeconds=0", key="gpushare:hami.waitTimeoutSeconds"),
    bad("cluster", "gpushare:hami.runtimeClassName=nvidia", key="gpushare:hami.runtimeClassName"),
    bad("cluster", "gpushare:hami.schedulerImageTag=v1.36.2", key="gpushare:hami.schedulerImageTag"),
    bad("cluster", "gpushare:hami.deviceSplitCount=2", key="gpushare:hami.deviceSplitCount"),
    bad("cluster", "gpushare:toolkit=host", "gpushare:gpuOperator=null", "gpushare:hami.runtimeClassName=nvidia-legacy",
        key="gpushare:hami.runtimeClassName"),
    # --- an existing host -----------------------------------------------------------------------------------
    bad("k3s", *HOST, "gpushare:host.address=gpu host", key="gpushare:host.address"),
    bad("k3s", *HOST, 'gpushare:host.address=""', key="gpushare:host.address"),
    bad("k3s", *HOST, "gpushare:host.port=0", key="gpushare:host.port"),
    bad("k3s", *HOST, "gpushare:host.port=70000", key="gpushare:host.port"),
    bad("k3s", *HOST, "gpushare:host.user=Admin", key="gpushare:host.user"),
    bad("k3s", *HOST, "gpushare:host.privateKey=null", key="gpushare:host.privateKey"),
    bad("k3s", *HOST, "gpushare:host.privateKey=5", key="gpushare:host.privateKey"),
    bad("k3s", *HOST, "gpushare:gpu.type=nvidia-l40s", key="gpushare:gpu.memoryMiB"),
    bad("k3s", *HOST, "gpushare:vm.zone=us-central1-b", key="gpushare:vm"),
    # --- an existing cluster ---------------------------------------------------------------------------------
    bad("cluster", "gpushare:cluster.kubeconfigPath=does/not/exist.yaml", key="gpushare:cluster.kubeconfigPath"),
    bad("cluster", "gpushare:cluster.kubeconfigPath={tmp}/binary.bin", key="gpushare:cluster.kubeconfigPath"),
    bad("cluster", "gpushare:cluster.kubeconfigPath={tmp}/not-yaml.txt", key="gpushare:cluster.kubeconfigPath"),
    bad("cluster", "gpushare:cluster.kubeconfigPath={tmp}", key="gpushare:cluster.kubeconfigPath"),
    bad("cluster", KUBECONFIG_TEXT, "gpushare:cluster.kubeconfig=just: text", key="gpushare:cluster.kubeconfig"),
    bad("cluster", "gpushare:cluster.kubeconfig=apiVersion: v1", key="gpushare:cluster"),
    bad("cluster", KUBECONFIG_TEXT, key="gpushare:cluster"),
    bad("cluster", "gpushare:cluster.context=prod", key="gpushare:cluster.context"),
    bad("cluster", 'gpushare:cluster.context=""', key="gpushare:cluster.context"),
    bad("cluster", "gpushare:cluster.kubernetesVersion=latest", key="gpushare:cluster.kubernetesVersion"),
    bad("cluster", "gpushare:cluster.kubernetesVersion=1.35.6", key="gpushare:cluster.kubernetesVersion"),
    bad("cluster", "gpushare:cluster.gpuNodes=[]", key="gpushare:cluster.gpuNodes"),
    bad("cluster", "gpushare:cluster.gpuNodes=[Node-1]", key="gpushare:cluster.gpuNodes"),
    bad("cluster", "gpushare:cluster.gpuNodes=[gpu node]", key="gpushare:cluster.gpuNodes"),
    bad("cluster", "gpushare:cluster.gpuNodes=[node, node]", key="gpushare:cluster.gpuNodes"),
    bad("cluster", "gpushare:gpuOperator.version=26.7.0", key="gpushare:gpuOperator.version"),
    bad("cluster", "gpushare:gpuOperator.version=latest", key="gpushare:gpuOperator.version"),
    bad("cluster", "gpushare:gpuOperator.namespace=GPU", key="gpushare:gpuOperator.namespace"),
    bad("cluster", "gpushare:gpuOperator.devicePluginEnabled=true", key="gpushare:gpuOperator.devicePluginEnabled"),
    bad("cluster", "gpushare:gpuOperator.driverEnabled=maybe", key="gpushare:gpuOperator.driverEnabled"),
    # --- registry mirrors and chart sources ---------------------------------------------------------------
    bad("gke", "gpushare:registryMirrors={docker io: harbor.example.com/hub}", key="gpushare:registryMirrors"),
    bad("gke", "gpushare:registryMirrors={docker.io: 'https://harbor.example.com'}", key="gpushare:registryMirrors"),
    bad("gke", "gpushare:registryMirrors=[docker.io]", key="gpushare:registryMirrors"),
    bad("gke", "gpushare:chartSources.kai.repository=ftp://charts.example.com", key="gpushare:chartSources.kai"),
    bad("gke", "gpushare:chartSources.kai.repository=oci://charts example.com", key="gpushare:chartSources.kai"),
    bad("gke", "gpushare:chartSources.kai={repository: 'oci://a.example/c', path: /charts}",
        key="gpushare:chartSources.kai"),
    bad("gke", "gpushare:chartSources.kai.path={tmp}", key="gpushare:chartSources.kai.path"),
    bad("gke", "gpushare:chartSources.kai.path={tmp}/broken-chart", key="gpushare:chartSources.kai.path"),
    bad("gke", "gpushare:chartSources.kai.path={tmp}/binary-chart", key="gpushare:chartSources.kai.path"),
    bad("gke", "gpushare:chartSources.kai.path={tmp}/kai-chart", "gpushare:kai.version=v0.16.0",
        key="gpushare:chartSources.kai.path"),
    bad("k3s", "gpushare:chartSources.kai.repository=oci://a.example/c", key="gpushare:chartSources.kai"),
    # --- `-c` values that are not valid YAML, or not where they can go --------------------------------------
    bad("gke", "gpushare:verify=[1", key="gpushare:verify"),
    bad("gke", "gpushare:gke.zone={a", key="gpushare:gke.zone"),
    bad("gke", "gpushare:verify.podPrefix='unclosed", key="gpushare:verify.podPrefix"),
    bad("gke", "novalue", key="novalue"),
    bad("gke", "gpushare:verify.sliceMiB.x=1", key="gpushare:verify.sliceMiB.x"),
    bad("nostack", key="Pulumi.nostack.yaml"),
    # --- what GCE would refuse at `up`: the card on the machine type (components/gpus.py's table) ------------
    bad("gke", "gpushare:gpu.type=nvidia-l4", key="gpushare:gke.machineType"),
    bad("gke", "gpushare:gke.machineType=g2-standard-4", key="gpushare:gpu.type"),
    bad("gke", "gpushare:gke.machineType=e2-standard-4", key="gpushare:gke.machineType"),
    bad("gke", "gpushare:gke.machineType=a2-highgpu-4g", "gpushare:gpu.type=nvidia-tesla-a100",
        key="gpushare:gke.machineType"),
    bad("gke", "gpushare:gke.machineType=g2-standard-7", "gpushare:gpu.type=nvidia-l4", key="gpushare:gke.machineType"),
    bad("gke", "gpushare:gpu.type=nvidia-rtx-a6000", key="gpushare:gpu.type"),
    bad("k3s", "gpushare:vm.machineType=g2-standard-8", key="gpushare:gpu.type"),
    bad("k3s", "gpushare:vm.machineType=n1-standard-8", key="gpushare:vm.machineType"),
    bad("k3s", "gpushare:vm.machineType=g4-standard-96", key="gpushare:gpu.perNode"),
    bad("k3s", "gpushare:vm.machineType=c3-standard-8", key="gpushare:vm.machineType"),
    # --- several cards per node: GKE's sharing cannot pin two Pods to one card; N1 takes 1, 2 or 4 T4s ----------
    bad("gke", "gpushare:gpu.perNode=2", key="gpushare:gpu.perNode"),
    bad("gke", "gpushare:gpu.perNode=4", key="gpushare:gpu.perNode"),
    bad("gke-mps", "gpushare:gpu.perNode=2", key="gpushare:gpu.perNode"),
    bad("gke-time-sharing", "gpushare:gpu.perNode=4", key="gpushare:gpu.perNode"),
    bad("gke", "gpushare:gke.machineType=g2-standard-24", "gpushare:gpu.type=nvidia-l4", "gpushare:gpu.perNode=2",
        key="gpushare:gke.machineType"),
    bad("gke-time-sharing", "gpushare:gke.machineType=g2-standard-24", "gpushare:gpu.type=nvidia-l4",
        key="gpushare:gke.machineType"),
    bad("gke-mps", "gpushare:gke.machineType=g4-standard-96", "gpushare:gpu.type=nvidia-rtx-pro-6000",
        key="gpushare:gke.machineType"),
    bad("k3s", "gpushare:vm.machineType=n1-standard-8", "gpushare:gpu.type=nvidia-tesla-t4", "gpushare:gpu.perNode=3",
        "gpushare:verify.sliceMiB=null", "gpushare:verify.extraGiB=null", "gpushare:verify.sweepGiB=null",
        key="gpushare:gpu.perNode"),
    bad("k3s", "gpushare:vm.machineType=n1-standard-8", "gpushare:gpu.type=nvidia-tesla-t4", "gpushare:gpu.perNode=8",
        "gpushare:verify.sliceMiB=null", "gpushare:verify.extraGiB=null", "gpushare:verify.sweepGiB=null",
        key="gpushare:gpu.perNode"),
    bad("k3s", "gpushare:vm.machineType=g4-standard-96", "gpushare:gpu.perNode=4", key="gpushare:gpu.perNode"),
    # --- ... and the card in the zone (components/gpus.py's zone table; gpu.zoneCheck=false trusts the zone) -----
    bad("gke", "gpushare:gke.zone=us-central1-f", "gpushare:gke.machineType=g2-standard-4",
        "gpushare:gpu.type=nvidia-l4", key="gpushare:gke.zone"),
    bad("k3s", "gpushare:vm.zone=us-east4-b", "gpushare:vm.machineType=g2-standard-8", "gpushare:gpu.type=nvidia-l4",
        "gpushare:verify.sliceMiB=null", "gpushare:verify.extraGiB=null", "gpushare:verify.sweepGiB=null",
        key="gpushare:vm.zone"),
    bad("gke", "gpushare:gpu.zoneCheck=no-thanks", key="gpushare:gpu.zoneCheck"),
    # --- namespaces: the cluster's own are never the stack's, and one is never created twice -----------------
    bad("gke", "gpushare:verify.namespace=kube-system", key="gpushare:verify.namespace"),
    bad("gke", "gpushare:verify.namespace=default", key="gpushare:verify.namespace"),
    bad("gke", "gpushare:verify.namespace=kube-public", key="gpushare:verify.namespace"),
    bad("k3s", "gpushare:verify.namespace=kube-node-lease", key="gpushare:verify.namespace"),
    bad("gke", "gpushare:isolator.namespace=kai-scheduler", key="gpushare:isolator.namespace"),
    bad("gke", "gpushare:verify.namespace=kyverno", key="gpushare:verify.namespace"),
    bad("gke", "gpushare:gkeCdi.kyvernoNamespace=kai-resource-isolator", key="gpushare:gkeCdi.kyvernoNamespace"),
    bad("k3s", "gpushare:hami.namespace=gpushare-proof", key="gpushare:verify.namespace"),
    bad("cluster", "gpushare:hami.namespace=gpu-operator", key="gpushare:gpuOperator.namespace"),
    # --- what YAML turns into another type ----------------------------------------------------------------
    bad("gke", "gpushare:verify.podPrefix=2026-01-01", key="gpushare:verify.podPrefix"),
    bad("k3s", "gpushare:hami.version=2.9", key="gpushare:hami.version"),
    bad("k3s", "gpushare:k3s.version=1.36", key="gpushare:k3s.version"),
    bad("cluster", "gpushare:cluster.kubernetesVersion=1.35", key="gpushare:cluster.kubernetesVersion"),
    bad("gke", "gpushare:gke.kubernetesVersion=1.35", key="gpushare:gke.kubernetesVersion"),
    bad("gke", "gpushare:gke.zone=2026-01-01", key="gpushare:gke.zone"),
    bad("gke", "gpushare:verify.probeImage=3.12", key="gpushare:verify.probeImage"),
    bad("gke", "gpushare:gke.machineHourlyUsd=true", key="gpushare:gke.machineHourlyUsd"),
    bad("gke", "gpushare:gke.gpuHourlyUsd=false", key="gpushare:gke.gpuHourlyUsd"),
    bad("k3s", "gpushare:vm.machineHourlyUsd=true", key="gpushare:vm.machineHourlyUsd"),
    bad("k3s", "gpushare:vm.bootDiskGiB=true", key="gpushare:vm.bootDiskGiB"),
    bad("k3s", *HOST, "gpushare:host.port=true", key="gpushare:host.port"),
    bad("gke", "gpushare:gkeSharing.maxSharedClientsPerGpu=true", "gpushare:sharing=mps",
        "gpushare:kai=null", "gpushare:isolator=null", "gpushare:gkeCdi=null",
        key="gpushare:gkeSharing.maxSharedClientsPerGpu"),
    bad("cluster", "gpushare:cluster.gpuNodes=[1, 2]", key="gpushare:cluster.gpuNodes[0]"),
    bad("k3s", "gpushare:hami.nodeLabel={gpu: true}", key='gpushare:hami.nodeLabel["gpu"]'),
    bad("k3s", "gpushare:vm.allowedSourceRanges=[2001]", key="gpushare:vm.allowedSourceRanges[0]"),
    # --- paths as `pulumi config set --path` takes them -------------------------------------------------------
    bad("gke", "gpushare:verify.sweepGiB=[0, 8]", key="gpushare:verify.sweepGiB[0]"),
    bad("gke", "gpushare:verify.sweepGiB=[8, lots]", key="gpushare:verify.sweepGiB[1]"),
    bad("gke", "gpushare:registryMirrors={docker.io: 5}", key='gpushare:registryMirrors["docker.io"]'),
    # --- registry mirrors and chart sources: one upstream, one used, a real port, no credentials ------------
    bad("gke", "gpushare:registryMirrors={docker.io: harbor.example.com/a, index.docker.io: harbor.example.com/b}",
        key='gpushare:registryMirrors["index.docker.io"]'),
    bad("gke", "gpushare:registryMirrors={Docker.IO: harbor.example.com/a, registry-1.docker.io: harbor.example.com/b}",
        key='gpushare:registryMirrors["registry-1.docker.io"]'),
    bad("gke", "gpushare:registryMirrors={ncvr.io: harbor.example.com/nvcr}",
        key='gpushare:registryMirrors["ncvr.io"]'),
    bad("gke", "gpushare:sharing=mps", "gpushare:kai=null", "gpushare:isolator=null", "gpushare:gkeCdi=null",
        "gpushare:registryMirrors={nvcr.io: harbor.example.com/nvcr}", key='gpushare:registryMirrors["nvcr.io"]'),
    bad("gke", "gpushare:registryMirrors={'docker.io:99999': harbor.example.com/a}",
        key='gpushare:registryMirrors["docker.io:99999"]'),
    bad("gke", "gpushare:registryMirrors={docker.io: 'harbor.example.com:99999/a'}",
        key='gpushare:registryMirrors["docker.io"]'),
    bad("gke", "gpushare:imageRegistry=harbor.example.com:99999/mirror", key="gpushare:imageRegistry"),
    bad("gke", "gpushare:chartSources.kai.repository=oci://", key="gpushare:chartSources.kai.repository"),
    bad("gke", "gpushare:chartSources.kai.repository=oci://harbor.example.com/charts:v0.17.0",
        key="gpushare:chartSources.kai.repository"),
    bad("gke", "gpushare:chartSources.kai.repository=oci://harbor.example.com/charts@sha256:" + "a" * 64,
        key="gpushare:chartSources.kai.repository"),
    bad("gke", "gpushare:chartSources.kai.repository='https://robot:s3cret@charts.example.com'",
        key="gpushare:chartSources.kai.repository"),
    bad("gke", "gpushare:chartSources.kai.repository='oci://robot@harbor.example.com/charts'",
        key="gpushare:chartSources.kai.repository"),
    bad("gke", "gpushare:chartSources.kai.repository=oci://harbor.example.com:99999/charts",
        key="gpushare:chartSources.kai.repository"),
    bad("gke", "gpushare:chartSources.kai.repository=https://charts.example.com?x=1",
        key="gpushare:chartSources.kai.repository"),
    bad("gke", "gpushare:gkeCdi.kyverno=false", "gpushare:chartSources.kyverno.repository=oci://harbor.example.com/c",
        key="gpushare:chartSources.kyverno"),
    bad("gke", "gpushare:sharing=mps", "gpushare:kai=null", "gpushare:isolator=null", "gpushare:gkeCdi=null",
        "gpushare:chartSources.kai.repository=oci://harbor.example.com/c", key="gpushare:chartSources.kai"),
    bad("cluster", "gpushare:toolkit=host", "gpushare:gpuOperator=null",
        "gpushare:chartSources.gpuOperator.repository=oci://harbor.example.com/c",
        key="gpushare:chartSources.gpuOperator"),
    bad("cluster", 'gpushare:chartSources.hami.path=""', key="gpushare:chartSources.hami.path"),
    # --- kubeconfig files -------------------------------------------------------------------------------------
    bad("cluster", "gpushare:cluster.kubeconfigPath={tmp}/kc-maps.yaml", key="gpushare:cluster.kubeconfigPath"),
    bad("cluster", "gpushare:cluster.kubeconfigPath={tmp}/kc-lost-current.yaml", key="gpushare:cluster.context"),
    bad("cluster", "gpushare:cluster.kubeconfigPath={tmp}/kc-no-server.yaml", key="gpushare:cluster.kubeconfigPath"),
    bad("cluster", "gpushare:cluster.kubeconfigPath={tmp}/kc-lost-cluster.yaml",
        key="gpushare:cluster.kubeconfigPath"),
    bad("cluster", "gpushare:cluster.kubeconfigPath={tmp}/kc-maps.yaml", "gpushare:cluster.context=a",
        key="gpushare:cluster.kubeconfigPath"),
    # --- secrets and host keys ----------------------------------------------------------------------------
    bad("k3s", *HOST, 'gpushare:host.privateKey=""', key="gpushare:host.privateKey"),
    bad("k3s", *HOST, "gpushare:host.privateKey='   '", key="gpushare:host.privateKey"),
    bad("k3s", *HOST, "gpushare:host.privateKey=[s3cr3t]", key="gpushare:host.privateKey"),
    bad("k3s", *HOST, "gpushare:host.hostKey=ssh-ed25519 AAAA", key="gpushare:host.hostKey"),
    bad("k3s", *HOST, "gpushare:host.hostKey=ssh-ed25519 QUJD", key="gpushare:host.hostKey"),
    bad("k3s", *HOST, "gpushare:host.hostKey=ssh-rsa " + ED25519[12:], key="gpushare:host.hostKey"),
    bad("k3s", *HOST, "gpushare:host.hostKey=ssh-dss AAAAB3NzaC1kc3M=", key="gpushare:host.hostKey"),
    bad("k3s", "gpushare:platform=existing-host", "gpushare:vm=null", "gpushare:host.address=192.0.2.50",
        key="gpushare:host.privateKey"),
    # --- misspelt names -------------------------------------------------------------------------------------
    bad("gke", "gpushare:verifiy.sliceMiB=4000", key="gpushare:verifiy"),
    bad("gke", "gpushare:platfrom=gke", "gpushare:platform=null", key="gpushare:platfrom"),
    bad("gke", "gpushre:platform=gke", key="gpushre:platform"),
    bad("gke", "gpushare:registrymirrors={docker.io: harbor.example.com/a}", key="gpushare:registrymirrors"),
    bad("gke", "gpushare:verify.slice_mib=4000", key="gpushare:verify.slice_mib"),
    # --- numbers the proof cannot use -----------------------------------------------------------------------
    bad("gke", "gpushare:verify.sliceMiB=1", key="gpushare:verify.sliceMiB"),
    bad("gke", "gpushare:verify.sliceMiB=500", key="gpushare:verify.sliceMiB"),
    bad("gke", "gpushare:gpu.memoryMiB=1500", "gpushare:verify.sliceMiB=null", key="gpushare:gpu.memoryMiB"),
    bad("gke", "gpushare:sharing=mps", "gpushare:kai=null", "gpushare:isolator=null", "gpushare:gkeCdi=null",
        "gpushare:verify.sliceMiB=null", "gpushare:verify.extraGiB=1", key="gpushare:verify.extraGiB"),
    bad("gke", "gpushare:verify.holdGiB=4", key="gpushare:verify.holdGiB"),  # no room beside the T4's context
    bad("cluster", "gpushare:verify.holdGiB=1e308", key="gpushare:verify.holdGiB"),  # was an OverflowError
    bad("cluster", "gpushare:verify.sweepGiB=[1e308]", key="gpushare:verify.sweepGiB[0]"),
    bad("k3s", "gpushare:verify.holdGiB=7.5", key="gpushare:verify.holdGiB"),
]  # fmt: skip

GOOD = [
    ("gke", "gpushare:gke.zone=northamerica-northeast1-c"),
    ("gke", "gpushare:gke.clusterName=k" + "a" * 39),
    ("gke", "gpushare:gke.kubernetesVersion=1.35.6-gke.1250000"),
    ("gke", "gpushare:gke.kubernetesVersion=1.36."),
    ("gke", "gpushare:verify.podPrefix=" + "p" * 61),
    ("gke", "gpushare:verify.namespace=" + "n" * 63),
    ("gke", "gpushare:verify.holdGiB=3.95"),  # 4045 MiB: the 4147 MiB KAI quota less a T4's 102 MiB context
    ("gke", "gpushare:verify.sweepGiB=[4.1]"),
    ("gke", "gpushare:imageRegistry=registry.example.internal:5000/mirror"),
    ("gke", "gpushare:verify.probeImage=ghcr.io/org/python@sha256:" + "a" * 64),
    ("gke", "gpushare:gpu.type=nvidia-tesla-p100", "gpushare:gpu.memoryMiB=16384", "gpushare:gke.zone=us-central1-c"),
    ("gke", "gpushare:toolkit=gke-managed", "gpushare:sharing=kai"),
    ("k3s", "gpushare:vm.allowedSourceRanges=[0.0.0.0/1, 128.0.0.0/1]", "gpushare:vm.allowWorldOpen=true"),
    ("k3s", "gpushare:vm.allowedSourceRanges=['2001:db8::/32', 203.0.113.7/32]"),
    ("k3s", "gpushare:k3s.nodeName=gpu-1.example.com"),
    ("k3s", "gpushare:hami.deviceSplitCount=3"),
    ("k3s", "gpushare:verify.holdGiB=7.38"),  # 8000 MiB less the RTX PRO 6000's 437 MiB context
    ("k3s", "gpushare:toolkit=host", "gpushare:sharing=hami"),
    ("k3s", *HOST, f"gpushare:host.privateKey={{secure: {SEALED}}}"),
    ("k3s", *HOST, "gpushare:host.port=2222", "gpushare:host.user=admin", "gpushare:host.address=gpu-host.lan"),
    ("k3s", *HOST, "gpushare:gpu.type=nvidia-rtx-a6000", "gpushare:gpu.perNode=2"),
    ("cluster", KUBECONFIG_TEXT, f"gpushare:cluster.kubeconfig={{secure: {SEALED}}}"),
    ("cluster", "gpushare:toolkit=host", "gpushare:gpuOperator=null"),
    ("cluster", "gpushare:gpu.perNode=8"),
    ("cluster", "gpushare:cluster.gpuNodes=[gpu-a, gpu-b.lan]"),
    ("cluster", "gpushare:cluster.kubernetesVersion=v1.35.6-eks-abc"),
    ("cluster", "gpushare:hami.schedulerImageTag=v1.35.6"),
    ("cluster", "gpushare:verify.sliceMiB=7680", "gpushare:verify.holdGiB=6", "gpushare:verify.sweepGiB=[4, 8]"),
    ("cluster", "gpushare:hami.nodeLabel={example.com/gpu-pool: shared}"),
    ("gke", "gpushare:chartSources.kai.path={tmp}/kai-chart"),
    ("gke", "gpushare:registryMirrors={docker.io: harbor.example.com/dockerhub}"),
    ("gke", "gpushare:registryMirrors={Docker.IO: harbor.example.com/dockerhub}"),
    ("gke", "gpushare:registryMirrors={index.docker.io: 'harbor.example.com:8443/dockerhub'}"),
    ("k3s", "gpushare:vm.machineType=g4-standard-96", "gpushare:gpu.perNode=2"),
    ("k3s", "gpushare:vm.machineType=n1-standard-8", "gpushare:gpu.type=nvidia-tesla-t4", "gpushare:gpu.perNode=4",
     "gpushare:verify.sliceMiB=null", "gpushare:verify.extraGiB=null", "gpushare:verify.sweepGiB=null"),
    ("k3s", "gpushare:vm.machineType=n1-standard-8", "gpushare:gpu.type=nvidia-tesla-v100",
     "gpushare:gpu.memoryMiB=16384", "gpushare:gpu.perNode=8", "gpushare:verify.sliceMiB=null",
     "gpushare:verify.extraGiB=null", "gpushare:verify.sweepGiB=null"),
    ("gke", "gpushare:gke.machineType=a2-highgpu-1g", "gpushare:gpu.type=nvidia-tesla-a100"),
    ("gke", "gpushare:gke.machineType=n1-standard-8", "gpushare:gpu.type=nvidia-tesla-v100",
     "gpushare:gpu.memoryMiB=16384", "gpushare:gke.zone=us-central1-a"),
    ("k3s", "gpushare:vm.machineType=g2-standard-8", "gpushare:gpu.type=nvidia-l4", "gpushare:verify.sliceMiB=null",
     "gpushare:verify.extraGiB=null", "gpushare:verify.sweepGiB=null"),
    ("k3s", "gpushare:vm.machineType=n1-standard-8", "gpushare:gpu.type=nvidia-tesla-t4",
     "gpushare:verify.sliceMiB=null", "gpushare:verify.extraGiB=null", "gpushare:verify.sweepGiB=null"),
    ("gke", "gpushare:kai.namespace=kube-system", "gpushare:isolator.namespace=kube-system"),
    ("k3s", "gpushare:verify.runId='2026-01-01'", "gpushare:hami.version='2.9.0'"),
    ("k3s", "gpushare:verify.runId=7"),
    ("k3s", *HOST, "gpushare:host.hostKey=192.0.2.50 " + ED25519),
    ("gke", "gpushare:chartSources.kai.repository=oci://harbor.example.com:8443/charts"),
    ("cluster", "gpushare:cluster.kubeconfigPath={tmp}/kc-good.yaml", "gpushare:cluster.context=b"),
    ("gke", "gpushare:verify.sliceMiB=1024", "gpushare:verify.holdGiB=null", "gpushare:verify.extraGiB=null"),
    ("gke", "gpushare:gke.machineHourlyUsd=0.1", "gpushare:gke.gpuHourlyUsd=0"),
    ("gke", "gpushare:gke.zone=us-west4-c", "gpushare:gke.machineType=g2-standard-4", "gpushare:gpu.type=nvidia-l4"),
    ("gke", "gpushare:gke.zone=us-central1-f", "gpushare:gke.machineType=g2-standard-4", "gpushare:gpu.type=nvidia-l4",
     "gpushare:gpu.zoneCheck=false"),
    ("k3s", "gpushare:vm.zone=us-east4-b", "gpushare:vm.machineType=g2-standard-8", "gpushare:gpu.type=nvidia-l4",
     "gpushare:verify.sliceMiB=null", "gpushare:verify.extraGiB=null", "gpushare:verify.sweepGiB=null",
     "gpushare:gpu.zoneCheck=false"),
    ("gke", "gpushare:gke.zone=us-central1-f"),  # no zone row for the T4: never refused for its zone
]  # fmt: skip


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("inputs")
    (folder / "binary.bin").write_bytes(bytes(range(256)) * 4)
    (folder / "not-yaml.txt").write_text("clusters: [\n  - {name: a\n")
    for name, text in KUBECONFIGS.items():
        (folder / name).write_text(text)
    for name, content in (
        ("broken-chart", b"name: [kai\n"),
        ("binary-chart", bytes(range(256))),
        ("kai-chart", b"apiVersion: v2\nname: kai-scheduler\nversion: v0.17.0\n"),
    ):
        (folder / name).mkdir()
        (folder / name / "Chart.yaml").write_bytes(content)
    return folder


def _kubeconfig(clusters: str, contexts: str, current: str) -> str:
    return f"apiVersion: v1\nkind: Config\nclusters: {clusters}\ncontexts: {contexts}\ncurrent-context: {current}\n"


_CLUSTER = "[{name: c, cluster: {server: 'https://203.0.113.10:6443'}}]"
KUBECONFIGS = {
    "kc-maps.yaml": _kubeconfig("{c: {server: 'https://203.0.113.10:6443'}}", "{a: {cluster: c}}", "a"),
    "kc-lost-current.yaml": _kubeconfig(_CLUSTER, "[{name: a, context: {cluster: c}}]", "prod"),
    "kc-no-server.yaml": _kubeconfig(
        "[{name: c, cluster: {insecure-skip-tls-verify: true}}]", "[{name: a, context: {cluster: c}}]", "a"
    ),
    "kc-lost-cluster.yaml": _kubeconfig(_CLUSTER, "[{name: a, context: {cluster: gone}}]", "a"),
    "kc-good.yaml": _kubeconfig(_CLUSTER, "[{name: a, context: {cluster: c}}, {name: b, context: {cluster: c}}]", "a"),
}
"""Kubeconfig files as a user might hand them over: maps where lists belong, a lost context, no server."""


def _argv(stack: str, overrides: tuple[str, ...], tmp: Path) -> list[str]:
    argv = [stack]
    for item in overrides:
        argv += ["-c", item.replace("{tmp}", str(tmp))]
    return argv


def test_the_table_holds_at_least_150_bad_inputs_across_the_stacks() -> None:
    assert len(BAD) >= 150
    assert {row.stack for row in BAD} >= {"gke", "k3s", "cluster"}


@pytest.mark.parametrize("row", BAD, ids=[f"{r.stack}:{' '.join(r.overrides)[:60]}" for r in BAD])
def test_bad_input_is_refused_in_one_line_naming_the_key(row: Bad, scratch: Path, capsys) -> None:
    code = main(_argv(row.stack, row.overrides, scratch))
    out, err = capsys.readouterr()
    assert code == 2
    assert out == "", "a refused config must print no resource"
    lines = err.strip().splitlines()
    assert len(lines) == 1, f"more than one line: {err[:500]}"
    assert lines[0].startswith("error: ") and row.key in lines[0], lines[0]
    assert "Traceback" not in err
    assert_reads_as_ours(lines[0])


STOCK = re.compile(
    r"Input should|Value error|validation error|\b[A-Z][A-Za-z]+(Config|Stack|Settings)\b|type=|"
    r"pydantic"
)
"""pydantic's stock wording, or a class name."""


def assert_reads_as_ours(line: str) -> None:
    assert STOCK.search(line) is None, f"stock or class wording: {line}"
    key = line.removeprefix("error: ").split(": ")[0]
    assert not re.search(r"\.\d+(\.|$|\[)", key), f"a path `pulumi config set --path` cannot take: {key}"
    assert "s3cr3t" not in line and "mock-secret-value" not in line, f"a secret quoted back: {line}"
    assert "at most 0.00" not in line and "below 0.00" not in line, line


@pytest.mark.parametrize("row", GOOD, ids=[" ".join(r)[:80] for r in GOOD])
def test_valid_edge_case_still_plans(row: tuple[str, ...], scratch: Path, capsys) -> None:
    stack, *overrides = row
    assert main(_argv(stack, tuple(overrides), scratch)) == 0, capsys.readouterr().err
    capsys.readouterr()


STACK_FILES = [
    ("a misspelt config key", "configs:\n  gpushare:platform: gke\n", "'configs'; did you mean 'config'?"),
    ("invalid YAML", "config:\n  gpushare:platform: [gke\n", "Pulumi.broken.yaml"),
    ("config written as a list", "config:\n  - gpushare:platform: gke\n", "config:"),
    ("a file that is a list", "- config\n", "Pulumi.broken.yaml"),
    ("tabs for indentation", "config:\n\tgpushare:platform: gke\n", "Pulumi.broken.yaml"),
]


@pytest.mark.parametrize(("what", "text", "named"), STACK_FILES, ids=[s[0] for s in STACK_FILES])
def test_a_broken_stack_file_is_refused_in_one_line(what: str, text: str, named: str, tmp_path: Path, capsys) -> None:
    (tmp_path / "Pulumi.broken.yaml").write_text(text)
    (tmp_path / "__main__.py").write_text((ROOT / "__main__.py").read_text())
    assert main(["broken", "--root", str(tmp_path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1 and named in err, err


def test_a_binary_stack_file_is_refused_in_one_line(tmp_path: Path, capsys) -> None:
    (tmp_path / "Pulumi.broken.yaml").write_bytes(b"\xff\xfe\x00config")
    assert main(["broken", "--root", str(tmp_path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "Pulumi.broken.yaml" in err and len(err.strip().splitlines()) == 1
