"""A GPU host made a one-node k3s cluster over SSH: driver, toolkit, config, k3s, checks, kubeconfig.

remote.Command steps rather than a startup script: they run in order, each step's failure fails
`pulumi up` with that step's message, and every step is idempotent, so a re-run converges.

The scripts are pure renderers, tested for order and content; the component only wires them together.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import yaml

from components.platform.settings import K3sConfig
from components.providers import command, k8s

K3S_CONFIG_PATH = "/etc/rancher/k3s/config.yaml"
K3S_KUBECONFIG_PATH = "/etc/rancher/k3s/k3s.yaml"
CONTAINERD_CONFIG_PATH = "/var/lib/rancher/k3s/agent/etc/containerd/config.toml"
K3S_UNINSTALL = "/usr/local/bin/k3s-uninstall.sh"
API_PORT = 6443
STEPS = ("driver", "toolkit", "config", "k3s", "checks", "kubeconfig")
"""The bootstrap's steps, in the order each depends on the previous."""
SECRET_STDOUT = frozenset({"kubeconfig"})
"""Steps whose stdout is a credential: stored only as a secret, and never streamed into the update's log."""


def step_logging(step: str) -> command.remote.Logging:
    """What a step streams to the update's output while it runs; stdout is always captured either way.

    pulumi-command writes stdout to the engine's log unless `logging` leaves it out, and
    additionalSecretOutputs protects only the stored output (provider/pkg/provider/remote/commandOutputs.go).
    """
    return command.remote.Logging.STDERR if step in SECRET_STDOUT else command.remote.Logging.STDOUT_AND_STDERR


_TOOLKIT_KEYRING = "/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg"
_TOOLKIT_LIST = "/etc/apt/sources.list.d/nvidia-container-toolkit.list"


def _as_root(body: str) -> str:
    """One command line that runs `body` as root under strict bash, whatever the login shell is."""
    # The script is an argument, not stdin, so apt-get or an installer reading stdin cannot swallow its rest.
    script = f"export DEBIAN_FRONTEND=noninteractive\n{body.strip()}"
    return f"sudo bash -euo pipefail -c \"$(cat <<'GPUSHARE_STEP'\n{script}\nGPUSHARE_STEP\n)\""


def render_driver_script(install_driver: bool, driver_package: str = "nvidia-open") -> str:
    """Step 1: `nvidia-smi -L` works, or the driver is installed from NVIDIA's CUDA apt repo and checked again."""
    check = "if nvidia-smi -L; then exit 0; fi"
    if not install_driver:
        return _as_root(
            f"{check}\n"
            "echo 'nvidia-smi -L failed and k3s.installDriver is false: install a working NVIDIA driver on the "
            "host first' >&2\nexit 1"
        )
    package = shlex.quote(driver_package)
    return _as_root(f"""
{check}
. /etc/os-release
repo="https://developer.download.nvidia.com/compute/cuda/repos/${{ID}}${{VERSION_ID//./}}/$(uname -m)"
curl -fsSL -o /tmp/cuda-keyring.deb "$repo/cuda-keyring_1.1-1_all.deb"
dpkg -i /tmp/cuda-keyring.deb
apt-get update -y
# The open kernel modules build through DKMS against the running kernel.
apt-get install -y "linux-headers-$(uname -r)" {package}
modprobe nvidia || true
if ! nvidia-smi -L; then
  echo 'installed {driver_package} but nvidia-smi -L still fails (Blackwell needs the open modules): reboot the \
host and run pulumi up again' >&2
  exit 1
fi
""")


def render_toolkit_script() -> str:
    """Step 2: the NVIDIA Container Toolkit from NVIDIA's apt repo, before k3s, so k3s detects the runtime."""
    return _as_root(f"""
if dpkg -s nvidia-container-toolkit >/dev/null 2>&1; then nvidia-ctk --version; exit 0; fi
install -m 0755 -d /usr/share/keyrings
curl -fsSL https://nvidia.github.io/libnvidia-container/gpgkey | gpg --batch --yes --dearmor -o {_TOOLKIT_KEYRING}
curl -fsSL https://nvidia.github.io/libnvidia-container/stable/deb/nvidia-container-toolkit.list \\
  | sed 's#deb https://#deb [signed-by={_TOOLKIT_KEYRING}] https://#g' > {_TOOLKIT_LIST}
apt-get update -y
apt-get install -y nvidia-container-toolkit
nvidia-ctk --version
""")


# The toolkit's switches (nvidia-container-toolkit v1.20.0 api/config/v1/config.go:64
# accept-nvidia-visible-devices-envvar-when-unprivileged, :65 accept-nvidia-visible-devices-as-volume-mounts; read in
# internal/config/image/cuda_image.go:266,281), written with `nvidia-ctk config --in-place --set`
# (cmd/nvidia-ctk/config/config.go:82,98) into its default /etc/nvidia-container-runtime/config.toml.
def render_toolkit_switches(refuse_unprivileged_env: bool) -> str:
    """Step 2's end: whether the runtime takes NVIDIA_VISIBLE_DEVICES from unprivileged containers (or only device
    lists as volume mounts); set either way, so turning the switch off again converges too."""
    accept_env, accept_mounts = ("false", "true") if refuse_unprivileged_env else ("true", "false")
    return _as_root(
        "nvidia-ctk config --in-place"
        f" --set accept-nvidia-visible-devices-envvar-when-unprivileged={accept_env}"
        f" --set accept-nvidia-visible-devices-as-volume-mounts={accept_mounts}"
    )


def render_k3s_config(node_name: str, node_label: Mapping[str, str], tls_san: Sequence[str]) -> str:
    """`/etc/rancher/k3s/config.yaml`: everything k3s needs on its first start, so it never restarts for it."""
    labels = ", ".join(f'"{key}={value}"' for key, value in sorted(node_label.items()))
    sans = ", ".join(f'"{san}"' for san in tls_san)
    return (
        # HAMi's Pods set no runtimeClassName: only a default nvidia runtime injects HAMi-core into them.
        "default-runtime: nvidia\n"
        f"node-name: {node_name}\n"
        f"node-label: [{labels}]\n"
        f"tls-san: [{sans}]\n"
        # Root only: the admin credential is read with sudo, never by another user on the host.
        'write-kubeconfig-mode: "600"\n'
    )


def render_config_script(config_text: str) -> str:
    """Step 3: write the config file before k3s first starts; a changed file on a running k3s restarts it."""
    return _as_root(f"""
install -m 0755 -d /etc/rancher/k3s
cat > {K3S_CONFIG_PATH}.new <<'K3S_CONFIG'
{config_text.rstrip()}
K3S_CONFIG
if cmp -s {K3S_CONFIG_PATH}.new {K3S_CONFIG_PATH}; then rm {K3S_CONFIG_PATH}.new; exit 0; fi
mv {K3S_CONFIG_PATH}.new {K3S_CONFIG_PATH}
# Only a later change (a new external IP after a Spot stop and start) reaches a k3s that already runs.
if systemctl is-active --quiet k3s; then systemctl restart k3s; fi
""")


def render_k3s_install_script(version: str, node_name: str, ready_timeout_s: int = 300) -> str:
    """Step 4: k3s at the pinned version, skipped when that version already runs; then its node Ready."""
    return _as_root(f"""
want={shlex.quote(version)}
if systemctl is-active --quiet k3s && k3s --version | grep -qF "k3s version $want "; then
  echo "k3s $want already runs"
else
  curl -sfL https://get.k3s.io | INSTALL_K3S_VERSION="$want" sh -
fi
deadline=$((SECONDS + {ready_timeout_s}))
until k3s kubectl get node {shlex.quote(node_name)} >/dev/null 2>&1; do
  if [ $SECONDS -ge $deadline ]; then echo 'k3s never registered node {node_name}' >&2; exit 1; fi
  sleep 5
done
k3s kubectl wait --for=condition=Ready node/{shlex.quote(node_name)} --timeout={ready_timeout_s}s
""")


def render_checks_script(wait_s: int = 120) -> str:
    """Step 5: fail with a clear message unless k3s found the nvidia runtime and made it containerd's default."""
    return _as_root(f"""
deadline=$((SECONDS + {wait_s}))
until k3s kubectl get runtimeclass nvidia; do
  if [ $SECONDS -ge $deadline ]; then
    echo 'RuntimeClass nvidia is missing: k3s did not detect the NVIDIA Container Toolkit (install it before \
k3s, then systemctl restart k3s)' >&2
    exit 1
  fi
  sleep 5
done
if ! grep -F 'default_runtime_name = "nvidia"' {CONTAINERD_CONFIG_PATH}; then
  echo 'default_runtime_name is not "nvidia" in {CONTAINERD_CONFIG_PATH}: HAMi-core would not be injected; \
check default-runtime in {K3S_CONFIG_PATH}' >&2
  exit 1
fi
""")


def render_kubeconfig_read() -> str:
    """Step 6: the kubeconfig k3s wrote (its server is 127.0.0.1 until rewritten), printed only once whole.

    A failing step's error carries its stdout (pulumi-command v1.2.1
    provider/pkg/provider/remote/commandOutputs.go:101), so nothing is printed until the file is read and checked:
    a step that fails prints no credential.
    """
    return _as_root(f"""
kubeconfig="$(cat {K3S_KUBECONFIG_PATH})"
case "$kubeconfig" in
  *current-context:*) ;;
  *) echo '{K3S_KUBECONFIG_PATH} is not a whole kubeconfig yet' >&2; exit 1;;
esac
printf '%s\\n' "$kubeconfig"
""")


def render_uninstall_script() -> str:
    """Teardown on a host we did not create: k3s removes itself, its data and its containers."""
    return f"if [ -x {K3S_UNINSTALL} ]; then sudo {K3S_UNINSTALL}; fi"


def point_kubeconfig_at(kubeconfig: str, server: str) -> str:
    """The kubeconfig with every cluster's server replaced (k3s writes https://127.0.0.1:6443)."""
    doc = yaml.safe_load(kubeconfig)
    for entry in doc.get("clusters") or []:
        entry["cluster"]["server"] = server
    return yaml.safe_dump(doc, sort_keys=False)


def api_server(address: str) -> str:
    """The API server URL on the host's reachable address."""
    # An IPv6 zone's '%' is written %25 in a URL (RFC 6874), which Go's url.Parse requires of a kubeconfig server.
    host = f"[{address.replace('%', '%25')}]" if ":" in address else address
    return f"https://{host}:{API_PORT}"


@dataclass(frozen=True)
class K3sBootstrapArgs:
    """Where to reach the host, and the k3s it must end up running."""

    settings: K3sConfig
    """The `gpushare:` section config validated, as it is: the one declaration of these settings."""
    host: pulumi.Input[str]
    """SSH address; also the TLS SAN and the API server address in the kubeconfig."""
    user: str
    private_key: pulumi.Input[str]
    """Secret: the SSH private key (OpenSSH or PEM)."""
    node_label: Mapping[str, str] = field(default_factory=lambda: {"gpu": "on"})
    port: int = 22
    uninstall_on_delete: bool = False
    """True on a host we did not create: `destroy` runs k3s-uninstall.sh (a VM is simply deleted)."""
    wait_for: Sequence[pulumi.Resource] = ()
    """What must exist before the first SSH dial (the VM, its firewall rule)."""
    host_key: pulumi.Input[str] | None = None
    """The host's sshd public key (OpenSSH); None trusts whatever key the address offers (a host we did not make)."""
    refuse_unprivileged_env: bool = False
    """The toolkit ignores NVIDIA_VISIBLE_DEVICES from unprivileged containers (guard.refuseUnprivilegedEnv)."""
    cluster_identifier: pulumi.Input[str] | None = None
    """What makes this cluster this cluster (the VM's instance id, the host's address): the Kubernetes provider,
    and every object on it, is replaced only when it changes; so is every bootstrap step (its `triggers`)."""


class K3sBootstrap(pulumi.ComponentResource):
    """The six bootstrap steps over SSH, each after the previous, and a Kubernetes provider on the result."""

    kubeconfig: pulumi.Output[str]
    provider: k8s.Provider
    ready: pulumi.Resource
    k3s: command.remote.Command
    """The install step: replaced when the host's identity changes, and never uninstalling anything."""
    uninstall: command.remote.Command | None
    """On a host we did not create: the command whose delete, on `destroy` only, uninstalls k3s and all it ran."""

    def __init__(self, name: str, args: K3sBootstrapArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpushare:platform:K3sBootstrap", name, None, opts)
        connection = command.remote.ConnectionArgs(
            host=args.host,
            user=args.user,
            port=args.port,
            private_key=pulumi.Output.secret(args.private_key),
            # Compared with the key the host offers (pulumi-command provider/pkg/provider/remote/connection.go).
            host_key=args.host_key,
            # A fresh VM's sshd takes a minute or two to answer; the default gives up sooner.
            dial_error_limit=40,
        )
        config_text = pulumi.Output.from_input(args.host).apply(
            lambda host: render_k3s_config(args.settings.node_name, args.node_label, [host])
        )
        scripts: dict[str, pulumi.Input[str]] = {
            "driver": render_driver_script(args.settings.install_driver, args.settings.driver_package),
            "toolkit": f"{render_toolkit_script()} && {render_toolkit_switches(args.refuse_unprivileged_env)}",
            "config": config_text.apply(render_config_script),
            "k3s": render_k3s_install_script(args.settings.version, args.settings.node_name),
            "checks": render_checks_script(),
            "kubeconfig": render_kubeconfig_read(),
        }
        previous: Sequence[pulumi.Resource] = args.wait_for
        steps: dict[str, command.remote.Command] = {}
        for step in STEPS:
            steps[step] = command.remote.Command(
                f"{name}-{step}",
                connection=connection,
                create=scripts[step],
                logging=step_logging(step),
                # A new host (a replaced VM) runs every step again, whatever the CLI does with deletedWith:
                # triggers replace on change (pulumi-command v1.2.1 provider/pkg/provider/common/inputs.go:10).
                triggers=[args.cluster_identifier] if args.cluster_identifier is not None else None,
                opts=pulumi.ResourceOptions(
                    parent=self,
                    depends_on=list(previous),
                    # The kubeconfig holds the cluster's admin credentials.
                    additional_secret_outputs=["stdout"] if step in SECRET_STDOUT else None,
                    custom_timeouts=pulumi.CustomTimeouts(create="30m") if step in ("driver", "toolkit") else None,
                    # A replaced step runs the delete of its old state, and pulumi-command asks no delete-first
                    # (pulumi-go-provider v1.3.0 infer/resource.go:1248), so the engine would run it after the new
                    # install (step_generator.go:2157); a stack made before the uninstall moved holds it there.
                    delete_before_replace=True if step == "k3s" else None,
                ),
            )
            previous = [steps[step]]
        self.ready = steps["kubeconfig"]
        self.k3s = steps["k3s"]
        self.uninstall = None
        if args.uninstall_on_delete:
            # No destructive delete on a step that can be replaced: a replaced step on a host that stays would undo
            # what its replacement just did. The uninstall sits on a command with no triggers and no create, which
            # a changed connection only updates, running nothing (pulumi-command v1.2.1
            # provider/pkg/provider/remote/commandController.go:48-50, 75-81): its delete runs on `destroy` alone.
            self.uninstall = command.remote.Command(
                f"{name}-uninstall",
                connection=connection,
                delete=render_uninstall_script(),
                logging=command.remote.Logging.STDOUT_AND_STDERR,
                opts=pulumi.ResourceOptions(parent=self, depends_on=[steps["k3s"]]),
            )
        self.kubeconfig = pulumi.Output.secret(
            pulumi.Output.all(steps["kubeconfig"].stdout, args.host).apply(
                lambda parts: point_kubeconfig_at(parts[0], api_server(parts[1]))
            )
        )
        self.provider = k8s.Provider(
            f"{name}-provider",
            kubeconfig=self.kubeconfig,
            # Without it a new server address in the kubeconfig replaces the provider and every object on it
            # (pulumi-kubernetes provider/pkg/provider/provider.go, DiffConfig compares the active cluster).
            cluster_identifier=args.cluster_identifier,
            # deleteUnreachable stays off: a refresh while a Spot VM is stopped would drop every object from the
            # state (pulumi-kubernetes provider.go:1919-1927), and a Helm release refuses it anyway (:2547); the
            # objects go with this provider instead (contracts/cluster.py, ClusterFacts.deleted_with).
            opts=pulumi.ResourceOptions(parent=self, depends_on=[steps["kubeconfig"]]),
        )
        self.register_outputs({"kubeconfig": self.kubeconfig, "nodeName": args.settings.node_name})
