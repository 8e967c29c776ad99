"""Version strings: pure helpers shared by config validation and the components."""

from __future__ import annotations

import re

_K8S_RELEASE = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)")


def kubernetes_release(server_version: str) -> str:
    """The upstream release tag of a server version: `v1.36.2+k3s1` → `v1.36.2`, `1.35.6-gke.1250000` → `v1.35.6`."""
    match = _K8S_RELEASE.match(server_version.strip())
    if not match:
        raise ValueError(f"not a Kubernetes version: {server_version!r}")
    return "v{}.{}.{}".format(*match.groups())


PACKAGE = "gpushare"
UNKNOWN_VERSION = "0+unknown"


def gpushare_version() -> str:
    """This program's release: the checkout's pyproject.toml where one sits beside the package (an editable
    install's metadata is as old as its install), else the installed distribution's metadata, else 0+unknown."""
    import importlib.metadata
    import tomllib
    from pathlib import Path

    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    if pyproject.is_file():
        project = tomllib.loads(pyproject.read_text()).get("project", {})
        if project.get("name") == PACKAGE and isinstance(project.get("version"), str):
            return str(project["version"])
    try:
        return importlib.metadata.version(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        return UNKNOWN_VERSION
