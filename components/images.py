"""Image references through registry mirrors: one rule for every chart value and every Pod image we set.

A mirror of one upstream replaces the image's registry host and keeps its path: with `nvcr.io` → `harbor.example/nvcr`,
`nvcr.io/nvidia/k8s/container-toolkit:v1.20.0` is pulled as `harbor.example/nvcr/nvidia/k8s/container-toolkit:v1.20.0`.
The one mirror for every other upstream keeps the host as the first path segment, so two upstreams never share a path
(`ghcr.io/kyverno/x` and `reg.kyverno.io/kyverno/x`): `harbor.example/all/ghcr.io/kyverno/x`.
Docker Hub's short names are spelled out first (`python:3.12` is `docker.io/library/python:3.12`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

DOCKER_HUB = "docker.io"
_DOCKER_HUB_ALIASES = frozenset({"docker.io", "index.docker.io", "registry-1.docker.io"})

# The distribution reference grammar (distribution/reference/regexp.go): a domain with an optional port, then
# lower-case path components separated by one `.`, one or two `_`, or any number of `-`.
_DOMAIN = r"(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)(?:\.(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?))*(?::[0-9]+)?"
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_HOST = re.compile(rf"^{_DOMAIN}$")
_PREFIX = re.compile(rf"^{_DOMAIN}(?:/{_COMPONENT})*$")


def is_registry_host(host: str) -> bool:
    """A registry host as an image reference names it: a dotted domain, `localhost`, or either with a port."""
    return bool(_HOST.match(host)) and ("." in host or ":" in host or host.split(":")[0].lower() == "localhost")


def upstream_host(host: str) -> str:
    """The one name of an upstream registry, used by every helper here: host names are case-blind (RFC 4343), and
    Docker Hub has three."""
    host = host.lower()
    return DOCKER_HUB if host in _DOCKER_HUB_ALIASES else host


def registry_host_problem(host: str) -> str | None:
    """Why `host` cannot key a mirror, or None when it can."""
    if "/" in host or not is_registry_host(host):
        return f"{host!r} is not a registry host; use the host of the images, such as docker.io, nvcr.io or ghcr.io"
    return None


def mirror_prefix_problem(prefix: str) -> str | None:
    """Why `prefix` cannot be a mirror, or None when it can."""
    if prefix != prefix.rstrip("/"):
        return f"{prefix!r} ends with '/'; write it without, such as harbor.example.com/dockerhub"
    if not _PREFIX.match(prefix) or not is_registry_host(prefix.split("/")[0]):
        return (
            f"{prefix!r} is not a registry host with an optional lower-case path; write it like "
            "harbor.example.com/dockerhub or registry.local:5000"
        )
    return None


def host_segment(host: str) -> str:
    """An upstream registry host as a path segment under the catch-all mirror: lower-case, a port joined by `-`."""
    return host.lower().replace(":", "-")  # a path component allows no `:` (distribution/reference/regexp.go)


def split_reference(image: str) -> tuple[str, str]:
    """(registry host, the rest): `nvcr.io/nvidia/k8s` → (`nvcr.io`, `nvidia/k8s`).

    Docker Hub's short names get their host and implicit namespace: `python:3` → (`docker.io`, `library/python:3`).
    """
    first, _, rest = image.partition("/")
    if rest and ("." in first or ":" in first or first.lower() == "localhost"):
        host = upstream_host(first)
        if host == DOCKER_HUB and "/" not in rest:
            rest = f"library/{rest}"
        return host, rest
    return DOCKER_HUB, image if rest else f"library/{image}"  # Docker Hub's implicit library/ namespace


@dataclass(frozen=True)
class Mirrors:
    """Where each upstream registry is pulled from: per host, else the one mirror for all, else upstream."""

    by_host: Mapping[str, str] = field(default_factory=dict)
    """Upstream registry host → mirror prefix."""
    default: str | None = None
    """The mirror of every upstream `by_host` does not name, each under its host as the first path segment."""

    def __post_init__(self) -> None:
        # One rule for every lookup: the map is keyed by upstream_host, whatever spelling the caller used.
        object.__setattr__(self, "by_host", {upstream_host(h): p for h, p in self.by_host.items()})

    def __bool__(self) -> bool:
        return bool(self.by_host) or bool(self.default)

    def prefix_for(self, host: str) -> str | None:
        """The mirror prefix of `host`, or None when it is pulled from upstream."""
        host = upstream_host(host)
        if host in self.by_host:
            return self.by_host[host]
        return f"{self.default.rstrip('/')}/{host_segment(host)}" if self.default else None

    def unmirrored(self, images: Iterable[str]) -> list[str]:
        """The upstream registry hosts of `images` (references as pulled) that no mirror covers, sorted."""
        return sorted({split_reference(image)[0] for image in images if not self.is_mirrored(image)})

    def image(self, image: str) -> str:
        """The reference `image` is pulled as; unchanged when its registry has no mirror."""
        host, rest = split_reference(image)
        prefix = self.prefix_for(host)
        return f"{prefix.rstrip('/')}/{rest}" if prefix else image

    def location(self, value: str) -> str:
        """A chart's registry value (`docker.io`, or a host with a path: `nvcr.io/nvidia`) through its mirror."""
        first, _, path = value.partition("/")
        if not is_registry_host(first):
            return self.image(value)
        prefix = self.prefix_for(first)
        if not prefix:
            return value
        return "/".join(part for part in (prefix.rstrip("/"), path) if part)

    def is_mirrored(self, image: str) -> bool:
        """True when `image` is pulled from one of the mirrors."""
        prefixes = {*self.by_host.values(), *([self.default] if self.default else [])}
        return any(image.startswith(f"{p.rstrip('/')}/") for p in prefixes)


def as_mirrors(mirrors: Mirrors | str | None) -> Mirrors:
    """A Mirrors from either form: the map, or one prefix for every upstream."""
    if isinstance(mirrors, Mirrors):
        return mirrors
    return Mirrors(default=mirrors or None)


def mirrored(image: str, mirrors: Mirrors | str | None) -> str:
    """The image as pulled through `mirrors` (or one mirror prefix for all); unchanged without a mirror.

    With one prefix for all: `nvcr.io/nvidia/k8s` → `harbor.example/all/nvcr.io/nvidia/k8s`; `python:3.12-slim` →
    `…/docker.io/library/python:3.12-slim`.
    """
    return as_mirrors(mirrors).image(image)
