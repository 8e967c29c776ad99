"""A Kubernetes control plane for the real-engine tests: etcd, kube-apiserver, kube-controller-manager, kube-scheduler
and kwok, each its own process group, inside the network namespace `e2e/run` made (loopback and one dummy address).

No container runs: kwok marks the fake GPU nodes Ready and moves every bound Pod through the Stages in
`e2e/kwok/stages.yaml`. Every process is stopped by `stop()`, which the fixture calls also when a test fails.
"""

from __future__ import annotations

import json
import os
import signal
import ssl
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
STAGES = HERE / "kwok" / "stages.yaml"
ADVERTISE = "192.0.2.10"
"""The dummy interface's address (TEST-NET-1): the `kubernetes` Service's endpoint, reachable only in the namespace."""
SERVICE_CIDR = "198.18.0.0/24"
POD_CIDR = "198.18.128.0/20"
"""Benchmark ranges (RFC 2544), routed nowhere in the namespace: a webhook's ClusterIP fails at once, unreachable."""
TOKEN = "gpushare-e2e-admin"
API_PORT = 6443
ETCD_PORT = 2379


def bin_dir() -> Path:
    """Where e2e/tools/build.sh put the tools (GPUSHARE_E2E_BIN, as the script reads it)."""
    default = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gpushare-e2e" / "bin"
    return Path(os.environ.get("GPUSHARE_E2E_BIN") or default)


TOOLS = ("pulumi", "pulumi-resource-kubernetes", "etcd", "kwok", "kube-apiserver", "kube-controller-manager",
         "kube-scheduler")  # fmt: skip


def missing_tools() -> list[str]:
    return [t for t in TOOLS if not os.access(bin_dir() / t, os.X_OK)]


def kubeconfig_text(server: str) -> str:
    """A kubeconfig with the admin token; the server's certificate is the one kube-apiserver made for itself."""
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "e2e", "cluster": {"server": server, "insecure-skip-tls-verify": True}}],
            "users": [{"name": "admin", "user": {"token": TOKEN}}],
            "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": "admin"}}],
            "current-context": "e2e",
        },
        indent=1,
    )


@dataclass
class ControlPlane:
    root: Path
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{API_PORT}"

    @property
    def kubeconfig(self) -> Path:
        return self.root / "kubeconfig.json"

    def _spawn(self, name: str, args: list[str]) -> None:
        log = open(self.root / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
        # Its own process group: stop() ends it and whatever it started, and nothing else.
        self.procs[name] = subprocess.Popen(
            [str(bin_dir() / name), *args], stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )

    def start(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        sa_key, sa_pub = self.root / "sa.key", self.root / "sa.pub"
        subprocess.run(["openssl", "genrsa", "-out", sa_key, "2048"], check=True, capture_output=True)
        subprocess.run(["openssl", "rsa", "-in", sa_key, "-pubout", "-out", sa_pub], check=True, capture_output=True)
        (self.root / "tokens.csv").write_text(f"{TOKEN},admin,admin,system:masters\n")
        self.kubeconfig.write_text(kubeconfig_text(self.server))
        self._spawn("etcd", [
            "--data-dir", str(self.root / "etcd"), "--name", "e2e",
            "--listen-client-urls", f"http://127.0.0.1:{ETCD_PORT}",
            "--advertise-client-urls", f"http://127.0.0.1:{ETCD_PORT}",
            "--listen-peer-urls", "http://127.0.0.1:2380", "--initial-advertise-peer-urls", "http://127.0.0.1:2380",
            "--initial-cluster", "e2e=http://127.0.0.1:2380", "--unsafe-no-fsync",
        ])  # fmt: skip
        self._spawn("kube-apiserver", [
            f"--etcd-servers=http://127.0.0.1:{ETCD_PORT}",
            f"--secure-port={API_PORT}", "--bind-address=0.0.0.0", f"--advertise-address={ADVERTISE}",
            f"--cert-dir={self.root / 'certs'}", f"--token-auth-file={self.root / 'tokens.csv'}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            f"--service-account-key-file={sa_pub}", f"--service-account-signing-key-file={sa_key}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            "--authorization-mode=Node,RBAC", "--allow-privileged=true",
            # The default plugins plus the two that hold the guard's CEL (ValidatingAdmissionPolicy, GA in 1.30).
            "--enable-admission-plugins=NodeRestriction,ValidatingAdmissionPolicy,ValidatingAdmissionWebhook",
        ])  # fmt: skip
        self.wait_ready()
        self._spawn("kube-controller-manager", [
            f"--kubeconfig={self.kubeconfig}", "--leader-elect=false",
            f"--service-account-private-key-file={sa_key}", "--use-service-account-credentials=true",
            f"--root-ca-file={self.root / 'certs' / 'apiserver.crt'}", "--controllers=*,-nodeipam",
        ])  # fmt: skip
        self._spawn("kube-scheduler", [f"--kubeconfig={self.kubeconfig}", "--leader-elect=false"])
        self._spawn("kwok", [
            f"--kubeconfig={self.kubeconfig}", f"--config={STAGES}",
            "--manage-all-nodes=false", "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
            f"--cidr={POD_CIDR}", f"--node-ip={ADVERTISE}", "--node-lease-duration-seconds=40",
        ])  # fmt: skip

    def raw(self, path: str, method: str = "GET", data: bytes | None = None, content: str = "") -> bytes:
        """One request to the API server as admin: the body of the answer (urllib's HTTPError on a refusal)."""
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": content or "application/json"}
        req = urllib.request.Request(self.server + path, data=data, method=method, headers=headers)
        with urllib.request.urlopen(req, context=ctx, timeout=10) as resp:
            return bytes(resp.read())

    def api(self, method: str, path: str, body: Any = None) -> Any:
        """One request to the API server as admin; the parsed JSON answer (HTTPError on a refusal)."""
        data = None if body is None else json.dumps(body).encode()
        content = "application/merge-patch+json" if method == "PATCH" else "application/json"
        return json.loads(self.raw(path, method, data, content) or b"null")

    def wait_ready(self, seconds: float = 90) -> None:
        deadline = time.monotonic() + seconds
        last: Exception | None = None
        while time.monotonic() < deadline:
            for name, proc in self.procs.items():
                if proc.poll() is not None:
                    raise RuntimeError(f"{name} exited {proc.returncode}: {self.tail(name)}")
            try:
                if self.raw("/readyz") == b"ok":
                    return
            except Exception as exc:  # retried until the deadline
                last = exc
            time.sleep(0.5)
        raise RuntimeError(f"kube-apiserver not ready in {seconds} s ({last}): {self.tail('kube-apiserver')}")

    def add_gpu_node(self, name: str, cards: list[dict[str, Any]]) -> None:
        """A kwok node with HAMi's registration of `cards` (what its device plugin writes) and their slots as
        `nvidia.com/gpu` (10 a card, HAMi's default deviceSplitCount)."""
        slots = str(sum(int(c["count"]) for c in cards))
        resources = {"cpu": "16", "memory": "64Gi", "pods": "110", "nvidia.com/gpu": slots}
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "type": "kwok"},
                "annotations": {
                    "kwok.x-k8s.io/node": "fake",
                    # HAMi v2.10.0 pkg/device/nvidia/device.go:41-42 (HandshakeAnnos, RegisterAnnos); the JSON of
                    # pkg/device/devices.go:127 DeviceInfo, as the device plugin's register loop writes it.
                    "hami.io/node-nvidia-register": json.dumps(cards, separators=(",", ":")),
                    "hami.io/node-handshake": f"Reported {stamp}",
                },
            },
            "status": {"capacity": resources, "allocatable": resources},
        }
        self.api("POST", "/api/v1/nodes", node)

    def register_cards(self, name: str, cards: list[dict[str, Any]]) -> None:
        """Node `name` as HAMi's device plugin leaves it once its cards are `cards` (a card added or swapped): the
        register annotation rewritten, `nvidia.com/gpu` 10 slots a card."""
        slots = str(sum(int(c["count"]) for c in cards))
        register = {"hami.io/node-nvidia-register": json.dumps(cards, separators=(",", ":"))}
        self.api("PATCH", f"/api/v1/nodes/{name}", {"metadata": {"annotations": register}})
        gpus = {"nvidia.com/gpu": slots}
        self.api("PATCH", f"/api/v1/nodes/{name}/status", {"status": {"capacity": gpus, "allocatable": gpus}})

    def add_toolkit_runtime_classes(self) -> None:
        """The RuntimeClasses the GPU Operator's running toolkit makes (nvidia, and nvidia-legacy for HAMi's device
        plugin): no operator runs under kwok, and HAMi's DaemonSet Pods are refused without theirs."""
        for handler in ("nvidia", "nvidia-legacy"):
            self.api("POST", "/apis/node.k8s.io/v1/runtimeclasses", {
                "apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": handler},
                "handler": handler,
            })  # fmt: skip

    def tail(self, name: str, lines: int = 15) -> str:
        path = self.root / f"{name}.log"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""

    def stop(self, names: tuple[str, ...] | None = None) -> None:
        """End each process group (SIGTERM, then SIGKILL after 10 s), newest first."""
        for name in reversed(list(self.procs)):
            if names is not None and name not in names:
                continue
            proc = self.procs.pop(name)
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
