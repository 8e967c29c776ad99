"""Config → the image outputs: every image the stack pulls, and the upstream registries no mirror covers."""

from __future__ import annotations

import json
from collections.abc import Iterable

import pulumi

from components.config import StackConfig
from components.images import Mirrors


def unmirrored_warning(mirrors: Mirrors, images: list[str]) -> str | None:
    """The warning for a mirror map that leaves upstreams out (no catch-all); None when every image is mirrored."""
    hosts = mirrors.unmirrored(images)
    if not mirrors or not hosts:
        return None
    count = sum(1 for image in images if not mirrors.is_mirrored(image))
    example = json.dumps(hosts[0])
    return (
        f"gpushare:registryMirrors: {', '.join(hosts)} {'has' if len(hosts) == 1 else 'have'} no mirror, so "
        f"{count} of {len(images)} images are pulled from upstream; map each "
        f"(`pulumi config set --path 'gpushare:registryMirrors[{example}]' HOST/PATH`) or set "
        "gpushare:imageRegistry for every upstream the map leaves out"
    )


def images(cfg: StackConfig, *pulled: Iterable[str]) -> dict[str, list[str]]:
    """`images` (each once, sorted, as pulled) and `unmirroredRegistries` (their upstreams no mirror covers)."""
    listed = sorted({image for group in pulled for image in group})
    warning = unmirrored_warning(cfg.mirrors, listed)
    if warning:
        pulumi.log.warn(warning)
    return {"images": listed, "unmirroredRegistries": cfg.mirrors.unmirrored(listed)}
