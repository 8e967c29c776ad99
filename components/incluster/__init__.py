"""Everything that runs inside Pods: probes, the verifier, the judge and its checks, the ready gate, one API client.

Standard library only, mounted whole (one ConfigMap, flat at MOUNT_PATH) into every Pod that runs any of it.
"""

from __future__ import annotations

from pathlib import Path

MOUNT_PATH = "/gpushare"
HERE = Path(__file__).resolve().parent


def files() -> dict[str, str]:
    """The folder's files as ConfigMap data: every module but this one, which only the Pulumi side reads."""
    return {p.name: p.read_text() for p in sorted(HERE.glob("*.py")) if p.name != "__init__.py"}
