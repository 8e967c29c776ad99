"""The device nodes a container can open: its card's, the driver's control nodes, and any it was not given.

A container is given `/dev/nvidia<minor>` of its card and the control nodes CUDA needs; a node of another card, a
MIG capability, an InfiniBand verb or a DRM render node it can open is a way to a device its quota does not cover.
Standard library only.
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Callable, Sequence
from typing import Any

PATTERNS = ("/dev/nvidia*", "/dev/nvidia-caps/*", "/dev/nvidia-caps-imex-channels/*", "/dev/infiniband/*",
            "/dev/dri/*")  # fmt: skip
"""Where a driver stack puts nodes a container may be handed beside its card."""
CONTROL = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset")
"""What every CUDA process opens whichever card it has: not beyond its card."""
CARD = re.compile(r"(?:^|/)nvidia(\d+)$")


def kind_of(path: str, own_minor: int | None) -> str:
    """`own` (its card), `control`, `card` (another card's), or `other` (caps, InfiniBand, DRM)."""
    if any(path == c or path.endswith("/" + c.rsplit("/", 1)[1]) for c in CONTROL):
        return "control"
    match = CARD.search(path)
    if match:
        return "own" if own_minor is not None and int(match[1]) == own_minor else "card"
    return "other"


def try_open(path: str) -> str | None:
    """None when `path` opens for reading and writing (then closed at once), else the OS error's name."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_NONBLOCK)
    except OSError as exc:
        return exc.__class__.__name__ if exc.errno is None else os.strerror(exc.errno)
    os.close(fd)
    return None


def device_nodes(own_minor: int | None, patterns: Sequence[str] = PATTERNS,
                 opener: Callable[[str], str | None] = try_open) -> list[dict[str, Any]]:  # fmt: skip
    """Every node the patterns find that is not a directory, tried: path, kind, opened, and the error if not."""
    found: list[dict[str, Any]] = []
    for path in sorted({p for pattern in patterns for p in glob.glob(pattern) if not os.path.isdir(p)}):
        error = opener(path)
        found.append({"path": path, "kind": kind_of(path, own_minor), "opened": error is None, "error": error})
    return found
