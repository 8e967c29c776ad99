"""Pure checks of single config values: each returns the value or raises ValueError with the fix.

The config models call them where a value is read; pydantic adds the full key. The shapes are the APIs' own:
Kubernetes names (apimachinery `validation.IsDNS1123Label`/`IsDNS1123Subdomain`/`IsQualifiedName`/
`IsValidLabelValue`), GCE resource names (RFC 1035, 63 characters; GKE clusters 40), image references
(distribution's `reference` grammar).
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import math
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_LABEL = re.compile(rf"^{_LABEL}$")
DNS_SUBDOMAIN = re.compile(rf"^{_LABEL}(\.{_LABEL})*$")
_QUALIFIED_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")
_GCE_NAME = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_GCE_REGION = re.compile(r"^[a-z]+-[a-z]+[0-9]+$")
_GCE_ZONE = re.compile(r"^[a-z]+-[a-z]+[0-9]+-[a-z]$")
_LINUX_USER = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")
_HOSTNAME = re.compile(rf"^{_LABEL}(\.{_LABEL})*$", re.IGNORECASE)
# distribution/reference: [domain[:port]/]path[:tag][@digest], path components lowercase.
_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_DOMAIN = r"(?:[A-Za-z0-9](?:[-A-Za-z0-9]*[A-Za-z0-9])?)(?:\.(?:[A-Za-z0-9](?:[-A-Za-z0-9]*[A-Za-z0-9])?))*(?::[0-9]+)?"
_REGISTRY = re.compile(rf"^{_DOMAIN}(?:/{_PATH_COMPONENT})*$")
_IMAGE = re.compile(
    rf"^(?:{_DOMAIN}/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*(?::[\w][\w.-]{{0,127}})?(?:@sha256:[a-f0-9]{{64}})?$"
)
_OCI_REPOSITORY = re.compile(rf"^{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*$")
_SEMVER = re.compile(r"^v?\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?$")
_K3S_VERSION = re.compile(r"^v\d+\.\d+\.\d+\+k3s\d+$")
_KUBERNETES_VERSION = re.compile(r"^v\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.+-]+)?$")
_GKE_VERSION = re.compile(r"^\d+\.\d+\.(?:\d+-gke\.\d+)?$")
_GCE_IMAGE = re.compile(r"^(?:[a-z][-a-z0-9]*[a-z0-9]/)?[a-z]([-a-z0-9]*[a-z0-9])?$")


SHOWN_CHARACTERS = 60
"""A quoted value longer than this is cut: a one-line refusal stays one readable line."""
_CREDENTIAL = re.compile(
    r"-----BEGIN|token|passw|secret|client-(key|certificate)|bearer|apiVersion|clusters:", re.IGNORECASE
)
"""What a kubeconfig, a key or a password holds: a value that shows any of it is never quoted back."""


def may_hold_credential(value: object) -> bool:
    """True for text that may be (or hold) a credential: several lines, or a kubeconfig's or a key's words."""
    return isinstance(value, str) and ("\n" in value or "\r" in value or bool(_CREDENTIAL.search(value)))


def quoted(value: object) -> str:
    """A value as every refusal quotes it: never one that may hold a credential, and cut past 60 characters."""
    if may_hold_credential(value):
        return "the value (not shown: it may hold a credential)"
    text = repr(value) if isinstance(value, str) else str(value)
    if len(text) <= SHOWN_CHARACTERS:
        return text
    return f"{text[: SHOWN_CHARACTERS - 4]}…{text[-1] if text[0] == text[-1] else ''}"


def dns_label(value: str, what: str = "name") -> str:
    """A DNS-1123 label: namespaces, most object names; lower case, digits and '-', at most 63."""
    if len(value) > 63 or not _DNS_LABEL.match(value):
        raise ValueError(
            f"{quoted(value)} is not a valid {what}: use 1–63 lower-case letters, digits and '-', "
            "starting and ending with a letter or digit"
        )
    return value


def dns_subdomain(value: str, what: str = "name") -> str:
    """A DNS-1123 subdomain: node names, RuntimeClass and PriorityClass names; dots allowed, at most 253."""
    if len(value) > 253 or not DNS_SUBDOMAIN.match(value):
        raise ValueError(
            f"{quoted(value)} is not a valid {what}: use lower-case letters, digits, '-' and '.', "
            "each part starting and ending with a letter or digit, at most 253 characters"
        )
    return value


def label_key(key: str) -> str:
    """A label key: an optional DNS-subdomain prefix and '/', then a name of at most 63 characters."""
    prefix, _, name = key.rpartition("/")
    if prefix:
        dns_subdomain(prefix, "label key prefix")
    if not name or len(name) > 63 or not _QUALIFIED_NAME.match(name):
        raise ValueError(
            f"{quoted(key)} is not a valid label key: a name of 1–63 letters, digits, '-', '_' or '.', "
            "optionally after a prefix such as example.com/"
        )
    return key


def label_value(value: str) -> str:
    """A label value: empty, or at most 63 letters, digits, '-', '_' and '.', starting and ending alphanumeric."""
    if len(value) > 63 or not _LABEL_VALUE.match(value):
        raise ValueError(
            f"{quoted(value)} is not a valid label value: at most 63 letters, digits, '-', '_' or '.', "
            "starting and ending with a letter or digit"
        )
    return value


def labels(values: dict[str, str]) -> dict[str, str]:
    for key, value in values.items():
        label_key(key)
        label_value(value)
    return values


def gce_name(value: str, what: str = "name", limit: int = 63) -> str:
    """A GCE resource name (RFC 1035): a lower-case letter first, then letters, digits and '-'."""
    if len(value) > limit or not _GCE_NAME.match(value):
        raise ValueError(
            f"{quoted(value)} is not a valid {what}: 1–{limit} lower-case letters, digits and '-', "
            "starting with a letter and not ending with '-'"
        )
    return value


def gce_zone(value: str) -> str:
    """A zone such as us-central1-b; a region (us-central1) is refused with the zone it probably meant."""
    if _GCE_REGION.match(value):
        raise ValueError(f"{quoted(value)} is a region, not a zone; give a zone in it such as {value}-a")
    if not _GCE_ZONE.match(value):
        raise ValueError(f"{quoted(value)} is not a zone; give one such as us-central1-b (`gcloud compute zones list`)")
    return value


def gce_machine_type(value: str) -> str:
    if not _GCE_NAME.match(value) or "-" not in value:
        raise ValueError(f"{quoted(value)} is not a machine type; give one such as n1-standard-2 or g4-standard-48")
    return value


def gce_image(value: str) -> str:
    """`project/family` or an image name, as `gcloud compute images list` shows them."""
    if not _GCE_IMAGE.match(value):
        raise ValueError(
            f"{quoted(value)} is not an image; give project/family such as ubuntu-os-cloud/ubuntu-2204-lts"
        )
    return value


def accelerator(value: str) -> str:
    """A GPU model key: GCE accelerator names are lower case with '-' (nvidia-tesla-t4)."""
    if not _DNS_LABEL.match(value):
        raise ValueError(
            f"{quoted(value)} is not a GPU type; give an accelerator name such as nvidia-tesla-t4 "
            "(lower case, digits and '-')"
        )
    return value


def image_reference(value: str) -> str:
    """An image reference: [registry[:port]/]path[:tag][@sha256:digest], path in lower case."""
    if len(value) > 255 or not _IMAGE.match(value):
        raise ValueError(
            f"{quoted(value)} is not an image reference; give one such as "
            "registry.example.com/team/app:1.0 "
            "(no spaces, no scheme, lower-case path)"
        )
    return value


def image_repository(value: str) -> str:
    """An image without its tag or digest, its registry host first: `registry.k8s.io/kube-scheduler`."""
    first, sep, path = value.partition("/")
    tagged = ":" in path or "@" in value
    if tagged or not sep or "." not in first.split(":")[0] or not _IMAGE.match(value):
        raise ValueError(
            f"{quoted(value)} is not an image repository with its registry; give one such as "
            "registry.k8s.io/kube-scheduler (host first, no tag: the chart adds it)"
        )
    return value


def registry(value: str) -> str:
    """A registry mirror: host[:port] and an optional path, no scheme and no tag."""
    if "://" in value:
        raise ValueError(
            f"{quoted(value)} has a scheme; give the host and path only, such as harbor.example.com/mirror"
        )
    if not _REGISTRY.match(value.rstrip("/")):
        raise ValueError(
            f"{quoted(value)} is not a registry; give host[:port][/path] such as harbor.example.com/mirror"
        )
    problem = registry_port_problem(value.split("/")[0])
    if problem:
        raise ValueError(problem)
    return value


def registry_port_problem(host: str) -> str | None:
    """Why the port of `host[:port]` is no TCP port, or None (no port, or one from 1 to 65535)."""
    _, colon, port = host.rpartition(":")
    if colon and port.isdigit() and not 1 <= int(port) <= 65535:
        return f"port {port} of {host} is not a TCP port; give one from 1 to 65535"
    return None


def chart_repository(value: str) -> str:
    """`oci://host[:port]/path` or an http(s) Helm repository: no tag, no credentials, a real port."""
    from urllib.parse import urlsplit  # here: only a chart source needs it

    example = "oci://harbor.example.com/charts"
    if any(c.isspace() for c in value) or not value.startswith(("oci://", "https://", "http://")):
        raise ValueError(
            f"{quoted(value)} is neither oci://host/path nor an https:// Helm repository; write it as {example}"
        )
    try:
        url = urlsplit(value)
        port = url.port
    except ValueError:
        raise ValueError(
            f"{quoted(value)} has a port outside 1-65535 or a malformed host; write it as {example}"
        ) from None
    if url.username is not None or url.password is not None:
        raise ValueError(
            "carries credentials in the URL, which would sit in plain config and in Helm's release "
            "history; drop them and log in first (`helm registry login <host>` for oci://, "
            "`helm repo add --username` for https://)"
        )
    if not url.hostname or host_problem(url.hostname):
        raise ValueError(f"{quoted(value)} names no registry host; write it as {example}")
    if port == 0:
        raise ValueError(f"{quoted(value)} has port 0; give a port from 1 to 65535 or none")
    if url.scheme == "oci" and (":" in url.path or "@" in url.path):
        raise ValueError(
            f"{quoted(value)} carries a tag or digest; the version is the pinned one: write the "
            f"repository alone, such as {example}"
        )
    path = url.path.strip("/")
    if url.scheme == "oci" and path and not _OCI_REPOSITORY.match(path):
        # Helm resolves oci:// through oras-go, whose registry/reference.go repositoryRegexp takes lower case only.
        raise ValueError(
            f"{quoted(value)}: an OCI repository path is lower-case letters, digits and '.', '_' or "
            f"'-' between them; write it as {example}"
        )
    if url.query or url.fragment:
        raise ValueError(f"{quoted(value)} has a query or fragment; write the repository alone, such as {example}")
    return value


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def host_problem(host: str) -> str | None:
    """Why `host` is neither an IP address nor a DNS name, or None. A name whose last label is a number is read as
    IPv4 (WHATWG URL host parser, "ends in a number"), so `256.1.1.1` and `192.0.2` are broken addresses."""
    if _is_ip(host.strip("[]")):
        if ipaddress.ip_address(host.strip("[]").partition("%")[0]).is_unspecified:
            return (
                f"{quoted(host)} is the unspecified address, which a server listens on, not one to connect "
                "to; give the host's own address"
            )
        return None
    if not host:
        return "names no host"
    last = host.rstrip(".").rpartition(".")[2]
    if last.isdigit() or (last[:2].lower() == "0x"):
        parts = host.split(".")
        why = f"has {len(parts)} numbers, not four" if len(parts) != 4 else "has a number that is not 0 to 255"
        return f"{quoted(host)} is no IPv4 address: it {why}; give four numbers from 0 to 255, such as 192.0.2.50"
    if len(host) > 253 or not _HOSTNAME.match(host):
        return f"{quoted(host)} is not an IP address or host name; give one such as 192.0.2.50"
    return None


def linux_user(value: str) -> str:
    if not _LINUX_USER.match(value):
        raise ValueError(
            f"{quoted(value)} is not a login name; use lower-case letters, digits, '_' or '-' (at most 32)"
        )
    return value


def host_address(value: str) -> str:
    """An IP address or a DNS name that SSH can dial: an IPv6 address bare (Go's net.JoinHostPort adds the brackets
    when the SSH connection is dialled, so `[::1]` would become `[[::1]]:22`), a trailing dot a fully qualified name."""
    if value.startswith("[") and value.endswith("]") and _is_ip(value[1:-1]):
        raise ValueError(
            f"{quoted(value)}: give the IPv6 address without brackets ({value[1:-1]}); the port is host.port"
        )
    host, colon, port = value.rpartition(":")
    if colon and port.isdigit() and host.count(":") == 0 and not host_problem(host):
        raise ValueError(f"{quoted(value)}: give the address alone ({host}) and the port as gpushare:host.port")
    name = value[:-1] if value.endswith(".") and not value.endswith("..") and not _is_ip(value[:-1]) else value
    problem = host_problem(name)
    if problem:
        raise ValueError(problem)
    return value


SSH_KEY_TYPES = ("ssh-ed25519", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521", "ssh-rsa")


def ssh_host_key(value: str) -> str:
    """A host's public key as `ssh-keyscan` prints it, the leading host name dropped: `ssh-ed25519 AAAA…`."""
    fields = value.split()
    if fields and fields[0] not in SSH_KEY_TYPES:
        fields = fields[1:]  # `ssh-keyscan HOST` puts the host first
    well_formed = len(fields) >= 2 and fields[0] in SSH_KEY_TYPES
    problem = ssh_key_problem(fields[0], fields[1]) if well_formed else ""
    if not well_formed or problem:
        raise ValueError(
            f"not an SSH host key{' (' + problem + ')' if problem else ''}; give one line of "
            "`ssh-keyscan -t ed25519 <address>`, such as 'ssh-ed25519 AAAAC3Nza…'"
        )
    return f"{fields[0]} {fields[1]}"


_SSH_KEY_LENGTH = {
    "ssh-ed25519": (32,),
    "ecdsa-sha2-nistp256": (65,),
    "ecdsa-sha2-nistp384": (97,),
    "ecdsa-sha2-nistp521": (133,),
}
"""Bytes of the last field of each key type's blob: an Ed25519 point, an uncompressed EC point (RFC 5656 §3.1)."""


def ssh_key_problem(kind: str, text: str) -> str:
    """Why `text` is not a `kind` public key blob (RFC 4253 §6.6: length-prefixed type name, then the key), or ''."""
    try:
        blob = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return "the key is not base64"
    parts: list[bytes] = []
    while blob:
        if len(blob) < 4 or len(blob) < 4 + int.from_bytes(blob[:4], "big"):
            return "the key is cut short"
        size = int.from_bytes(blob[:4], "big")
        parts.append(blob[4 : 4 + size])
        blob = blob[4 + size :]
    if not parts or parts[0] != kind.encode():
        return f"the key inside is not {kind}"
    if kind == "ssh-rsa":
        return "" if len(parts) == 3 and len(parts[2].lstrip(b"\0")) * 8 >= 1024 else "not a whole RSA key"
    return "" if len(parts[-1]) in _SSH_KEY_LENGTH[kind] else f"the {kind} key has the wrong length"


def file_problem(path: Path) -> str | None:
    """Why no file can be read at `path` ("no such file", "File name too long"), or None for a file."""
    try:
        return None if path.is_file() else ("a folder, not a file" if path.is_dir() else "no such file")
    except OSError as err:  # Path.is_file raises ENAMETOOLONG rather than answering False
        return err.strerror or type(err).__name__


def absolute_path(value: str) -> str:
    if not value.startswith("/") or any(c.isspace() for c in value) or "/../" in f"{value}/":
        raise ValueError(f"{quoted(value)} is not an absolute path without spaces or '..'")
    return value


def pinned_chart(value: str, example: str, leading_v: bool) -> str:
    """An exact chart version in the shape that chart's repository uses (with or without a leading 'v')."""
    if not _SEMVER.match(value):
        raise ValueError(f"{quoted(value)} is not a pinned chart version; give an exact one such as {example}")
    if value.startswith("v") != leading_v:
        shape = "start with 'v'" if leading_v else "have no leading 'v'"
        raise ValueError(f"{quoted(value)}: this chart's versions {shape}, such as {example}")
    return value


def k3s_version(value: str) -> str:
    if not _K3S_VERSION.match(value):
        raise ValueError(f"{quoted(value)} is not a k3s release; give one such as v1.36.2+k3s1")
    return value


def kubernetes_version(value: str) -> str:
    if not _KUBERNETES_VERSION.match(value):
        raise ValueError(
            f"{quoted(value)} is not a Kubernetes server version; give what `kubectl version` prints, such as v1.35.6"
        )
    return value


NEWEST_KUBERNETES_MINOR = (1, 38)
"""The newest Kubernetes minor upstream has (kubernetes/kubernetes CHANGELOG/ ends at CHANGELOG-1.38.md, read
2026-12-02). GKE offers a minor only weeks after upstream releases it (GKE docs, "About release channels"), so no
zone offers a newer one; which older ones a zone offers is looked up at `up` (gcp.container.get_engine_versions)."""


def gke_version(value: str) -> str:
    """`1.35.` (the newest 1.35 patch the zone offers) or a full GKE version (`1.35.6-gke.1250000`)."""
    if not _GKE_VERSION.match(value):
        raise ValueError(
            f"{quoted(value)} is not a GKE version; give a prefix such as 1.35. or a full version such as "
            "1.35.6-gke.1250000 (`gcloud container get-server-config`)"
        )
    major, minor = (int(part) for part in value.split(".")[:2])
    if (major, minor) > NEWEST_KUBERNETES_MINOR:
        newest = ".".join(map(str, NEWEST_KUBERNETES_MINOR))
        raise ValueError(
            f"{quoted(value)} is newer than any Kubernetes release (the newest is {newest}), so no "
            f"zone offers it; give {newest}. or older (`gcloud container get-server-config --zone ZONE`)"
        )
    return value


_KUBELET_LABELS = frozenset({
    "kubernetes.io/hostname", "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region",
    "topology.kubernetes.io/zone", "topology.kubernetes.io/region", "beta.kubernetes.io/instance-type",
    "node.kubernetes.io/instance-type", "kubernetes.io/os", "kubernetes.io/arch", "beta.kubernetes.io/os",
    "beta.kubernetes.io/arch", "failure-domain.kubernetes.io/zone", "failure-domain.kubernetes.io/region",
    "kubernetes.io/instance-type",
})  # fmt: skip
"""kubernetes pkg/kubelet/apis/well_known_labels.go kubeletLabels: what a kubelet may set in kubernetes.io."""
_KUBELET_LABEL_NAMESPACES = ("kubelet.kubernetes.io", "node.kubernetes.io")
"""well_known_labels.go kubeletLabelNamespaces: namespaces (and their subdomains) a kubelet may set labels in."""


def kubelet_label_problem(label: str) -> str | None:
    """Why the kubelet refuses `label` in --node-labels, or None (cmd/kubelet/app/options/options.go
    ValidateKubeletFlags: a kubernetes.io or k8s.io label must be in well_known_labels.go's allowed set)."""
    namespace = label.split("/", 1)[0] if "/" in label else ""
    reserved = any(namespace == n or namespace.endswith(f".{n}") for n in ("kubernetes.io", "k8s.io"))
    allowed = label in _KUBELET_LABELS or any(
        namespace == n or namespace.endswith(f".{n}") for n in _KUBELET_LABEL_NAMESPACES
    )
    if not reserved or allowed:
        return None
    return (
        f"{quoted(label)} is in the kubernetes.io/k8s.io namespace, which the kubelet refuses in --node-labels "
        "(it then does not start); use a label of your own, such as gpushare.io/gpu"
    )


def port(value: int) -> int:
    if not 1 <= value <= 65535:
        raise ValueError(f"{value} is not a TCP port; give one from 1 to 65535")
    return value


def finite(value: float) -> float:
    if not math.isfinite(value):
        raise ValueError(f"{value} is not a finite number")
    return value


def cidrs(ranges: Sequence[str]) -> list[str]:
    for cidr in ranges:
        try:
            ipaddress.ip_network(cidr, strict=False)
        except ValueError:
            raise ValueError(f"{quoted(cidr)} is not a CIDR range such as 203.0.113.7/32") from None
    return list(ranges)


def covers_whole_internet(ranges: Iterable[str]) -> bool:
    """True when the ranges together admit every IPv4 or every IPv6 address (0.0.0.0/1 + 128.0.0.0/1 too)."""
    networks = [ipaddress.ip_network(r, strict=False) for r in ranges]
    v4 = ipaddress.collapse_addresses(n for n in networks if isinstance(n, ipaddress.IPv4Network))
    v6 = ipaddress.collapse_addresses(n for n in networks if isinstance(n, ipaddress.IPv6Network))
    return ipaddress.IPv4Network("0.0.0.0/0") in v4 or ipaddress.IPv6Network("::/0") in v6


DOCUMENTATION_RANGES = tuple(
    ipaddress.ip_network(n) for n in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "2001:db8::/32")
)
"""RFC 5737 / RFC 3849 ranges: reserved for examples, never anyone's real address."""
OWN_ADDRESS_HINT = "find yours with `curl -s https://ifconfig.me` (or `gcloud compute instances list` for a VM)"


def documentation_only(values: Sequence[str]) -> list[str]:
    """The values (addresses or CIDR ranges) that lie wholly inside a documentation range."""
    found = []
    for value in values:
        try:
            network = ipaddress.ip_network(value.strip(), strict=False)
        except ValueError:
            continue
        if any(network.version == doc.version and network.subnet_of(doc) for doc in DOCUMENTATION_RANGES):  # type: ignore[arg-type]
            found.append(value)
    return found
