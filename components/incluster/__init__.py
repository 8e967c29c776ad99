"""Everything that runs inside Pods: probes, the verifier, the judge and its checks, the ready gate, one API client.

Standard library only, and one package: every module imports its siblings relatively (`from ._cuda import Cuda`).
In a Pod the ConfigMap (this file included) is mounted as the folder PACKAGE under MOUNT_ROOT, which PYTHONPATH
names, and a module runs as `python3 -m incluster.<module>`; on a host, from the repository root, as
`python -m components.incluster.<module>`.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE = "incluster"
"""The package's name in a Pod: the folder the ConfigMap is mounted as."""
MOUNT_ROOT = "/opt/gpushare"
"""On PYTHONPATH in every Pod that runs any of it, so `python3 -m incluster.<module>` finds the package."""
MOUNT_PATH = f"{MOUNT_ROOT}/{PACKAGE}"
HERE = Path(__file__).resolve().parent


def files() -> dict[str, str]:
    """The folder's modules as ConfigMap data, `__init__.py` too: what makes the mounted folder a package."""
    return {p.name: p.read_text() for p in sorted(HERE.glob("*.py"))}


def pod_command(module: str, *args: str) -> list[str]:
    """The argv that runs one of these modules in a Pod (the mount on PYTHONPATH: `pod_env`)."""
    return ["python3", "-m", f"{PACKAGE}.{module}", *args]


def pod_env() -> dict[str, str]:
    """What a Pod running these modules needs in its env: the mount's parent on the import path."""
    return {"PYTHONPATH": MOUNT_ROOT}
