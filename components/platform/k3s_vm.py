"""The `k3s` stack's GCE GPU VM, its address, keys and firewall; k3s_bootstrap.py makes it a one-node k3s cluster."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp
import pulumi_tls as tls
import yaml

from components.platform.k3s_bootstrap import API_PORT

SSH_PORT = 22
# Titanium machine series attach Hyperdisk only; the older GPU series take Persistent Disk.
_HYPERDISK_ONLY = ("g4-", "a4-", "c4-", "n4-")


def network_tag(project: str, stack: str) -> str:
    """The VM's network tag, which the firewall targets: a valid GCE tag (lowercase, ≤ 63 chars)."""
    raw = re.sub(r"[^a-z0-9-]+", "-", f"{project}-{stack}".lower()).strip("-")
    tag = raw[:63].rstrip("-")
    return tag if tag[:1].isalpha() else f"g-{tag}"[:63].rstrip("-")


def boot_disk_type(machine_type: str) -> str:
    """The boot disk type the machine series accepts."""
    return "hyperdisk-balanced" if machine_type.startswith(_HYPERDISK_ONLY) else "pd-balanced"


def region_of(zone: str) -> str:
    """`us-central1-b` → `us-central1`: a static external address is regional."""
    region, sep, _ = zone.rpartition("-")
    if not sep or not region:
        raise ValueError(f"{zone!r} is not a GCE zone (region-letter, e.g. us-central1-b)")
    return region


def host_key_cloud_config(private_key_openssh: str, public_key_openssh: str) -> str:
    """cloud-init user-data that installs a host key we generated, so the bootstrap can verify the VM it dials.

    cloud-init's `ssh_keys` writes it before sshd first starts; the other key types are still generated.
    """
    document = {
        "ssh_deletekeys": True,
        "ssh_keys": {"ed25519_private": private_key_openssh, "ed25519_public": public_key_openssh.strip()},
    }
    return "#cloud-config\n" + yaml.safe_dump(document, sort_keys=True)


@dataclass(frozen=True)
class GpuVmArgs:
    """One GPU VM: its shape, its boot disk, and who may reach SSH and the API."""

    zone: str
    machine_type: str
    gpu_type: str
    attach_accelerator: bool
    """False where the machine type carries its GPU (G2, G4, A2, A3): a guest accelerator is then refused."""
    spot: bool
    boot_disk_gib: int
    image: str
    network: str
    allowed_source_ranges: Sequence[str]
    network_tag: str
    ssh_user: str


class GpuVm(pulumi.ComponentResource):
    """A GCE instance with one GPU, a static external address, an SSH key pair, and a firewall rule for SSH and the
    API only."""

    external_ip: pulumi.Output[str]
    private_key: pulumi.Output[str]
    host_key: pulumi.Output[str]
    """The sshd host key's public half (OpenSSH), which the bootstrap's SSH connection must be offered."""
    ssh_user: str
    instance: gcp.compute.Instance
    firewall: gcp.compute.Firewall
    address: gcp.compute.Address

    def __init__(self, name: str, args: GpuVmArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpushare:platform:GpuVm", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        key = tls.PrivateKey(f"{name}-ssh-key", algorithm="ED25519", opts=child)
        # The VM's sshd host key, ours from birth: without it the bootstrap would trust whatever answers the address.
        host = tls.PrivateKey(f"{name}-host-key", algorithm="ED25519", opts=child)
        # Reserved, so a Spot VM stopped and started again keeps its address, and with it the TLS SAN, the
        # kubeconfig's server and the firewall's meaning: an ephemeral one may change on every start.
        self.address = gcp.compute.Address(
            f"{name}-address",
            region=region_of(args.zone),
            address_type="EXTERNAL",
            description="the k3s GPU VM's external address, kept across stops",
            opts=child,
        )
        self.firewall = gcp.compute.Firewall(
            f"{name}-firewall",
            network=args.network,
            direction="INGRESS",
            allows=[gcp.compute.FirewallAllowArgs(protocol="tcp", ports=[str(SSH_PORT), str(API_PORT)])],
            source_ranges=list(args.allowed_source_ranges),
            target_tags=[args.network_tag],
            description="SSH and the k3s API server, only from the configured source ranges",
            opts=child,
        )
        if args.spot:
            scheduling = gcp.compute.InstanceSchedulingArgs(
                provisioning_model="SPOT",
                preemptible=True,
                automatic_restart=False,
                # STOP, not DELETE: the boot disk keeps the driver, k3s and pulled images, so a restarted VM
                # resumes the cluster, and the stack's state still names a VM that exists.
                instance_termination_action="STOP",
                on_host_maintenance="TERMINATE",  # GPUs cannot live-migrate
            )
        else:
            scheduling = gcp.compute.InstanceSchedulingArgs(
                provisioning_model="STANDARD",
                automatic_restart=True,
                on_host_maintenance="TERMINATE",  # GPUs cannot live-migrate
            )
        accelerators = (
            [gcp.compute.InstanceGuestAcceleratorArgs(type=args.gpu_type, count=1)] if args.attach_accelerator else None
        )
        public_key = key.public_key_openssh.apply(lambda k: k.strip())
        self.instance = gcp.compute.Instance(
            f"{name}-instance",
            zone=args.zone,
            machine_type=args.machine_type,
            tags=[args.network_tag],
            boot_disk=gcp.compute.InstanceBootDiskArgs(
                auto_delete=True,
                initialize_params=gcp.compute.InstanceBootDiskInitializeParamsArgs(
                    image=args.image, size=args.boot_disk_gib, type=boot_disk_type(args.machine_type)
                ),
            ),
            network_interfaces=[
                gcp.compute.InstanceNetworkInterfaceArgs(
                    network=args.network,
                    access_configs=[gcp.compute.InstanceNetworkInterfaceAccessConfigArgs(nat_ip=self.address.address)],
                )
            ],
            guest_accelerators=accelerators,
            scheduling=scheduling,
            metadata={
                "ssh-keys": public_key.apply(lambda k: f"{args.ssh_user}:{k}"),
                # Secret in the state; in the project's instance metadata like any startup configuration.
                "user-data": pulumi.Output.secret(
                    pulumi.Output.all(host.private_key_openssh, host.public_key_openssh).apply(
                        lambda keys: host_key_cloud_config(keys[0], keys[1])
                    )
                ),
                # Project-wide OS Login would ignore the ssh-keys above and refuse the bootstrap's key.
                "enable-oslogin": "FALSE",
            },
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.firewall]),
        )
        self.external_ip = self.address.address
        self.private_key = pulumi.Output.secret(key.private_key_openssh)
        self.host_key = host.public_key_openssh.apply(lambda k: k.strip())
        self.ssh_user = args.ssh_user
        self.register_outputs({"externalIp": self.external_ip, "privateKey": self.private_key})
