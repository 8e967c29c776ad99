"""Everything that runs inside Pods, and how a Pod mounts it: one package of rooms (docs/layout.md draws them).

At the top the verifier, the judge, the expectation, the termination message, the GPU audit, the ready gate and one
API client; `probes/` what runs on the card, `evidence/` the record the probes' lines are read into, `checks/` what
is judged from it. Standard library only; every module imports the package's others relatively
(`from ..evidence.record import Record`). In a Pod one ConfigMap holds every file under a key without `/`
(`probes.memory.py`), and the volume's `items` put each back at its path under MOUNT_PATH, on PYTHONPATH's
MOUNT_ROOT: a module runs as `python3 -m incluster.probes.memory`; on a host, from the repository root, as
`python -m components.incluster.probes.memory`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

PACKAGE = "incluster"
"""The package's name in a Pod: the folder the ConfigMap is mounted as."""
MOUNT_ROOT = "/opt/gpushare"
"""On PYTHONPATH in every Pod that runs any of it, so `python3 -m incluster.<module>` finds the package."""
MOUNT_PATH = f"{MOUNT_ROOT}/{PACKAGE}"
HERE = Path(__file__).resolve().parent


def paths() -> list[str]:
    """Every module of the package by its path under the package folder (`probes/memory.py`), `__init__.py`s too."""
    return sorted(p.relative_to(HERE).as_posix() for p in HERE.rglob("*.py") if "__pycache__" not in p.parts)


def key(path: str) -> str:
    """A module's ConfigMap key: its path with `.` for `/` (a key holds only `-._a-zA-Z0-9`)."""
    return path.replace("/", ".")


def files() -> dict[str, str]:
    """The package's modules as ConfigMap data, keyed by `key`: what the volume's `items` mount back as the tree."""
    return {key(path): (HERE / path).read_text() for path in paths()}


def items() -> list[dict[str, str]]:
    """The volume's `items`: each key back at its path (kubernetes.io/docs/concepts/configuration/configmap,
    "projected to specific paths"); every key is listed, since a key that `items` leaves out is not mounted."""
    return [{"key": key(path), "path": path} for path in paths()]


def volume(name: str, config_map_name: Any) -> dict[str, Any]:
    """A Pod volume that mounts the ConfigMap `config_map_name` (holding `files()`) as the package tree, read-only."""
    return {"name": name, "configMap": {"name": config_map_name, "defaultMode": 0o444, "items": items()}}


def volume_mount(name: str) -> dict[str, Any]:
    """The container's mount of that volume at MOUNT_PATH."""
    return {"name": name, "mountPath": MOUNT_PATH, "readOnly": True}


def pod_command(module: str, *args: str) -> list[str]:
    """The argv that runs one of these modules in a Pod (`probes.memory`; the mount on PYTHONPATH: `pod_env`)."""
    return ["python3", "-m", f"{PACKAGE}.{module}", *args]


def pod_env() -> dict[str, str]:
    """What a Pod running these modules needs in its env: the mount's parent on the import path."""
    return {"PYTHONPATH": MOUNT_ROOT}
