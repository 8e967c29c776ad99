"""The `k3s` stack's GCE GPU VM, its address, keys and firewall; k3s_bootstrap.py makes it a one-node k3s cluster."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pulumi
import pulumi_tls as tls
import yaml

from components.contracts.cluster import GoogleAuth
from components.platform.k3s_bootstrap import API_PORT
from components.platform.settings import VmConfig
from components.providers import command, gcp

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


HOST_KEY_READ = "python3 -m components.platform.guest_attributes"
"""The host-key step's command, run from the project on the machine that runs `pulumi up`: in the provider's working
directory and environment (pulumi-command v1.2.1 provider/pkg/provider/local/commandOutputs.go:73-81), which the
engine starts in the program's (pulumi sdk/go/common/resource/plugin/provider_plugin.go:287, plugin.go:599)."""


def keys_left_to_the_agent_cloud_config() -> str:
    """cloud-init user-data that leaves the sshd host keys to the guest agent alone, so only one writer races sshd.

    The agent regenerates every host key on first boot (`set_host_keys`, on by default) before sshd starts
    (guest-agent google-guest-agent.service: Before=sshd.service ssh.service) and publishes the public halves;
    cloud-init regenerating them too is the race of NixOS/nixops#859. No private key travels in metadata.
    """
    document = {"ssh_deletekeys": False, "ssh_genkeytypes": []}
    return "#cloud-config\n" + yaml.safe_dump(document, sort_keys=True)


@dataclass(frozen=True)
class GpuVmArgs:
    """One GPU VM: its shape, its boot disk, and who may reach SSH and the API."""

    settings: VmConfig
    """The `gpushare:` section config validated, as it is: the one declaration of these settings."""
    gpu_type: str
    gpu_count: int
    """The cards GCE attaches (N1: 1, 2 or 4 T4s); a machine type that carries its own ignores it."""
    attach_accelerator: bool
    """False where the machine type carries its GPU (G2, G4, A2, A3): a guest accelerator is then refused."""
    network_tag: str
    google_auth: GoogleAuth = field(default_factory=GoogleAuth)
    """The provider's credentials, for the host-key read's call to the compute API."""


class GpuVm(pulumi.ComponentResource):
    """A GCE instance with its GPUs, a static external address, an SSH key pair, and a firewall rule for SSH and the
    API only."""

    external_ip: pulumi.Output[str]
    private_key: pulumi.Output[str]
    host_key: pulumi.Output[str]
    """The sshd host key's public half (OpenSSH) as the VM published it, which the bootstrap's SSH connection must
    be offered; unknown in a preview of a VM not yet created."""
    host_key_read: command.local.Command
    ssh_user: str
    instance: gcp.compute.Instance
    firewall: gcp.compute.Firewall
    address: gcp.compute.Address

    def __init__(self, name: str, args: GpuVmArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpushare:platform:GpuVm", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        key = tls.PrivateKey(f"{name}-ssh-key", algorithm="ED25519", opts=child)
        # Reserved, so a Spot VM stopped and started again keeps its address, and with it the TLS SAN, the
        # kubeconfig's server and the firewall's meaning: an ephemeral one may change on every start.
        self.address = gcp.compute.Address(
            f"{name}-address",
            region=region_of(args.settings.zone),
            address_type="EXTERNAL",
            description="the k3s GPU VM's external address, kept across stops",
            # Fixed by region and type (ForceNew): a new one must not wait on the old while the VM holds it.
            opts=pulumi.ResourceOptions(parent=self, delete_before_replace=True),
        )
        self.firewall = gcp.compute.Firewall(
            f"{name}-firewall",
            network=args.settings.network,
            direction="INGRESS",
            allows=[gcp.compute.FirewallAllowArgs(protocol="tcp", ports=[str(SSH_PORT), str(API_PORT)])],
            source_ranges=list(args.settings.allowed_source_ranges),
            target_tags=[args.network_tag],
            description="SSH and the k3s API server, only from the configured source ranges",
            opts=child,
        )
        if args.settings.spot:
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
            [gcp.compute.InstanceGuestAcceleratorArgs(type=args.gpu_type, count=args.gpu_count)]
            if args.attach_accelerator
            else None
        )
        public_key = key.public_key_openssh.apply(lambda k: k.strip())
        self.instance = gcp.compute.Instance(
            f"{name}-instance",
            zone=args.settings.zone,
            machine_type=args.settings.machine_type,
            tags=[args.network_tag],
            boot_disk=gcp.compute.InstanceBootDiskArgs(
                auto_delete=True,
                initialize_params=gcp.compute.InstanceBootDiskInitializeParamsArgs(
                    image=args.settings.image,
                    size=args.settings.boot_disk_gib,
                    type=boot_disk_type(args.settings.machine_type),
                ),
            ),
            network_interfaces=[
                gcp.compute.InstanceNetworkInterfaceArgs(
                    network=args.settings.network,
                    access_configs=[gcp.compute.InstanceNetworkInterfaceAccessConfigArgs(nat_ip=self.address.address)],
                )
            ],
            guest_accelerators=accelerators,
            scheduling=scheduling,
            metadata={
                "ssh-keys": public_key.apply(lambda k: f"{args.settings.ssh_user}:{k}"),
                # No key material: metadata is readable from every Pod that reaches 169.254.169.254.
                "user-data": keys_left_to_the_agent_cloud_config(),
                # The agent publishes its host keys only where guest attributes are on (read back below).
                "enable-guest-attributes": "TRUE",
                # Project-wide OS Login would ignore the ssh-keys above and refuse the bootstrap's key.
                "enable-oslogin": "FALSE",
            },
            # A machine type change within a series stops the VM first instead of failing
            # (terraform-provider-google v7.45.0 google/services/compute/resource_compute_instance.go:3513).
            allow_stopping_for_update=True,
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=[self.firewall],
                # spot, image and disk type are ForceNew (resource_compute_instance.go:1115, 1138, 391, 400); the
                # new VM takes the reserved address only once the old one let it go (pulumi/pulumi#4128).
                delete_before_replace=True,
            ),
        )
        self.external_ip = self.address.address
        self.private_key = pulumi.Output.secret(key.private_key_openssh)
        # Read once per instance: its id in the triggers replaces the step only with the VM, and every other
        # preview and `up` reads the key from the step's state, with no call to GCE (a stopped Spot VM's included).
        self.host_key_read = command.local.Command(
            f"{name}-host-key",
            create=HOST_KEY_READ,
            environment={"GPUSHARE_INSTANCE_URL": self.instance.self_link, **args.google_auth.environment()},
            triggers=[self.instance.instance_id],
            logging=command.local.Logging.STDERR,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.instance]),
        )
        self.host_key = self.host_key_read.stdout.apply(lambda line: line.strip())
        self.ssh_user = args.settings.ssh_user
        self.register_outputs({"externalIp": self.external_ip, "privateKey": self.private_key})
