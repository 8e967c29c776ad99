"""Config → where Kubernetes comes from: a GKE cluster, a k3s VM or host, or an existing cluster, and its facts."""

from __future__ import annotations

import dataclasses

import pulumi

from components import pricing, validate
from components.compose.kubeconfig import cluster_identity
from components.config import GKE_NATIVE, ExistingHostStack, ExistingStack, GkeStack, K3sVmStack, StackConfig
from components.contracts.cluster import ClusterFacts, GoogleAuth, GpuFacts
from components.contracts.errors import InputError
from components.gke_sharing import API_STRATEGY
from components.gpus import GPU_MODELS
from components.platform import gke, k3s_vm
from components.platform.existing import ExistingCluster, ExistingClusterArgs
from components.platform.k3s_bootstrap import K3sBootstrap, K3sBootstrapArgs
from components.providers import gcp


def refuse_documentation_addresses(key: str, values: list[str]) -> None:
    """A documentation address (the shipped placeholder) is shown in a preview, marked, and refused by `up`."""
    found = validate.documentation_only(values)
    if not found:
        return
    problem = (
        f"{', '.join(found)} is a documentation address (RFC 5737), nobody's real one: `pulumi up` refuses "
        f"it; set your own, {validate.OWN_ADDRESS_HINT}"
    )
    if pulumi.runtime.is_dry_run():
        pulumi.log.warn(f"{key}: {problem}")
        return
    raise InputError(key, problem)


def platform(cfg: StackConfig, google_auth: GoogleAuth | None = None) -> ClusterFacts:
    """The platform `cfg.platform` names, as facts the GPU software reads; `google_auth` reaches the VM's host-key
    read, which calls the compute API outside the provider."""
    match cfg:
        case GkeStack():
            return gke_platform(cfg)
        case K3sVmStack():
            return k3s_vm_platform(cfg, google_auth or GoogleAuth())
        case ExistingHostStack():
            return existing_host_platform(cfg)
        case ExistingStack():
            return existing_platform(cfg)


def gke_version(zone: str, version: str) -> str:
    """A prefix (`1.35.`) resolved to the newest version the zone offers, before anything is registered.

    Once the zone stops offering the prefix, GKE's own alias (`1.35`, the newest 1.35 at creation) stands in:
    an existing cluster ignores the value (ignoreChanges minMasterVersion), so the lookup must not fail its `up`.
    """
    if not gke.is_version_prefix(version):
        return version
    offered = gcp.container.get_engine_versions(location=zone, version_prefix=version)
    if not any(v.startswith(version) for v in offered.valid_master_versions):
        alias = version.rstrip(".")
        pulumi.log.warn(
            f"gpushare:gke.kubernetesVersion: no {version}x is offered in {zone} any more; a new cluster "
            f"asks GKE for {alias!r}, an existing one keeps its version (set a version the zone offers: "
            "`gcloud container get-server-config --zone ZONE`)"
        )
        return alias
    return gke.newest_version(offered.valid_master_versions, version, "gpushare:gke.kubernetesVersion")


def gke_cluster_args(cfg: GkeStack) -> gke.GkeClusterArgs:
    card = GPU_MODELS.get(cfg.gpu.type)
    product = card.product if card else cfg.gpu.type
    sharing = None
    if cfg.sharing in GKE_NATIVE:
        sharing = gke.GpuSharingArgs(API_STRATEGY[cfg.sharing], cfg.gke_sharing.max_shared_clients_per_gpu)
    return gke.GkeClusterArgs(
        settings=cfg.gke,
        kubernetes_version=gke_version(cfg.gke.zone, cfg.gke.kubernetes_version),
        gpu_type=cfg.gpu.type,
        gpus_per_node=cfg.gpu.per_node,
        gpu_memory_mib=cfg.card_mib,
        gpu_sharing=sharing,
        # KAI's labels only where KAI runs; under GKE's own sharing nothing reads them.
        node_labels=gke.kai_node_labels(product, cfg.card_mib, cfg.gpu.per_node) if cfg.sharing == "kai" else {},
    )


def gke_cost_note(cfg: GkeStack) -> str:
    section, card = cfg.gke, GPU_MODELS.get(cfg.gpu.type)
    shape = pricing.PoolShape(
        section.machine_type,
        section.node_count,
        cfg.gpu.type,
        cfg.gpu.per_node,
        section.spot,
        gpu_in_machine_price=bool(card and card.bundled_with_machine),
    )
    prices = pricing.Prices(section.machine_hourly_usd, section.gpu_hourly_usd)
    keys = "gpushare:gke.machineHourlyUsd and gpushare:gke.gpuHourlyUsd"
    stop = f"`pulumi destroy -s {pulumi.get_stack()}` stops it (a failed `up` leaves the cluster running)"
    return pricing.cost_note(shape, prices, price_keys=keys, stop=stop)


def vm_cost_note(cfg: K3sVmStack) -> str:
    section, card = cfg.vm, GPU_MODELS.get(cfg.gpu.type)
    shape = pricing.PoolShape(
        section.machine_type,
        1,
        cfg.gpu.type,
        cfg.gpu.per_node,
        section.spot,
        gpu_in_machine_price=bool(card and card.bundled_with_machine),
    )
    prices = pricing.Prices(section.machine_hourly_usd, section.gpu_hourly_usd)
    keys = "gpushare:vm.machineHourlyUsd" + ("" if shape.gpu_in_machine_price else " and gpushare:vm.gpuHourlyUsd")
    destroy = f"`pulumi destroy -s {pulumi.get_stack()}` stops the billing"
    spot = (
        "Spot: may be reclaimed at any time and is then stopped, not restarted (its disk and reserved address "
        "still bill); start it again, on the same address, and run `pulumi up` with a new gpushare:verify.runId "
        "for a fresh proof; "
    )
    return pricing.cost_note(shape, prices, price_keys=keys, stop=(spot if section.spot else "") + destroy)


def gke_platform(cfg: GkeStack) -> ClusterFacts:
    """A GkeCluster, and the facts the GPU software needs from it."""
    args = gke_cluster_args(cfg)
    cluster = gke.GkeCluster("gke", args)
    return ClusterFacts(
        provider=cluster.provider,
        gpu=GpuFacts(memory_mib=args.gpu_memory_mib, per_node=args.gpus_per_node),
        ready=[cluster.node_pool],
        nodes=[cluster.node_pool],
        outputs={
            "kubeconfig": cluster.kubeconfig,
            "clusterName": cluster.cluster.name,
            "nodePoolName": cluster.node_pool.name,
            "gpuNodeCount": cfg.gke.node_count,
            "costNote": gke_cost_note(cfg),
        },
        deleted_with=cluster.provider,
    )


def bootstrap_args(
    cfg: K3sVmStack | ExistingHostStack, host: pulumi.Input[str], user: str, private_key: pulumi.Input[str]
) -> K3sBootstrapArgs:
    """The bootstrap of a one-node k3s cluster at `host`: the k3s section, the label HAMi selects nodes by, and
    the guard's toolkit switch."""
    return K3sBootstrapArgs(
        settings=cfg.k3s,
        host=host,
        user=user,
        private_key=private_key,
        node_label=dict(cfg.hami.node_label),
        refuse_unprivileged_env=cfg.guard.refuse_unprivileged_env,
    )


def k3s_vm_platform(cfg: K3sVmStack, google_auth: GoogleAuth) -> ClusterFacts:
    """A GPU VM, bootstrapped into a one-node k3s cluster."""
    section, card = cfg.vm, GPU_MODELS.get(cfg.gpu.type)
    refuse_documentation_addresses("gpushare:vm.allowedSourceRanges", list(section.allowed_source_ranges))
    vm = k3s_vm.GpuVm(
        "k3s-vm",
        k3s_vm.GpuVmArgs(
            settings=section,
            gpu_type=cfg.gpu.type,
            gpu_count=cfg.gpu.per_node,
            attach_accelerator=not (card and card.bundled_with_machine),
            network_tag=k3s_vm.network_tag(pulumi.get_project(), pulumi.get_stack()),
            google_auth=google_auth,
        ),
    )
    args = dataclasses.replace(
        bootstrap_args(cfg, vm.external_ip, vm.ssh_user, vm.private_key),
        wait_for=[vm],
        host_key=vm.host_key,
        cluster_identifier=vm.instance.instance_id.apply(lambda instance_id: f"k3s-vm:{instance_id}"),
    )
    # Nothing to undo over SSH on a VM that is being deleted.
    bootstrap = K3sBootstrap("k3s", args, pulumi.ResourceOptions(deleted_with=vm.instance))
    ssh = vm.external_ip.apply(
        lambda ip: (
            "pulumi stack output --show-secrets sshPrivateKey > k3s-key && chmod 600 k3s-key && "
            f"ssh -i k3s-key {section.ssh_user}@{ip}"
        )
    )
    return ClusterFacts(
        provider=bootstrap.provider,
        gpu=GpuFacts(memory_mib=cfg.card_mib, per_node=cfg.gpu.per_node),
        ready=[bootstrap.ready],
        nodes=[vm.instance],
        outputs={
            "externalIp": vm.external_ip,
            "sshCommand": ssh,
            "kubeconfig": bootstrap.kubeconfig,
            "costNote": vm_cost_note(cfg),
            "sshPrivateKey": vm.private_key,
        },
        deleted_with=bootstrap.provider,
    )


def existing_host_platform(cfg: ExistingHostStack) -> ClusterFacts:
    """A host the user already has, bootstrapped into a one-node k3s cluster over SSH."""
    host = cfg.host
    refuse_documentation_addresses("gpushare:host.address", [host.address])
    key = pulumi.Output.secret(host.private_key.get_secret_value())
    args = bootstrap_args(cfg, host.address, host.user, key)
    bootstrap = K3sBootstrap(
        "k3s",
        dataclasses.replace(
            args,
            port=host.port,
            uninstall_on_delete=True,
            host_key=host.host_key,
            cluster_identifier=f"k3s-host:{host.address}",
        ),
    )
    return ClusterFacts(
        provider=bootstrap.provider,
        gpu=GpuFacts(memory_mib=cfg.card_mib, per_node=cfg.gpu.per_node),
        ready=[bootstrap.ready],
        nodes=[bootstrap.k3s],
        outputs={
            "externalIp": host.address,
            "sshCommand": f"ssh -p {host.port} {host.user}@{host.address}",
            "kubeconfig": bootstrap.kubeconfig,
            "costNote": "an existing host: this stack rents nothing; `pulumi destroy` runs k3s-uninstall.sh on it",
        },
        deleted_with=bootstrap.provider,  # and on `destroy` k3s-uninstall.sh removes everything k3s ran
    )


def existing_platform(cfg: ExistingStack) -> ClusterFacts:
    """A provider onto the cluster the kubeconfig reaches, and the labels its GPU nodes need."""
    text, _ = cfg.kubeconfig_text()  # config checked it before anything loaded
    cluster = ExistingCluster(
        "cluster",
        ExistingClusterArgs(
            settings=cfg.cluster,
            kubeconfig=pulumi.Output.secret(text),
            node_labels=dict(cfg.hami.node_label),
            cluster_identifier=cluster_identity(text, cfg.cluster.context),
        ),
    )
    return ClusterFacts(
        provider=cluster.provider,
        gpu=GpuFacts(memory_mib=cfg.card_mib, per_node=cfg.gpu.per_node),
        # The cluster exists already; only the node agents that select the labels wait for them (HAMi's device
        # plugin). depends_on expands a component to its patches without an Output per patch per dependent.
        labels_ready=[cluster.labels],
        outputs={"labelledNodes": cluster.labels.labelled},
    )
