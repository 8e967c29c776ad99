"""Every Helm release pins its chart version, so the same stack installs the same charts tomorrow."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from policies.model import RELEASE_TYPES, chart_name
from policies.rule import Rule

_PINNED = re.compile(r"^v?\d+\.\d+\.\d+(?:-[0-9A-Za-z.]+)?$")


def check_helm_chart_version_pinned(
    resource_type: str, props: Mapping[str, Any], config: Mapping[str, Any] | None = None
) -> list[str]:
    """`version` must be exact (`2.9.0`, `v0.17.0`, `1.1.0-chart`): no range, no `latest`, not empty."""
    if resource_type not in RELEASE_TYPES:
        return []
    version = str(props.get("version") or "")
    if _PINNED.match(version):
        return []
    shown = repr(version) if version else "unset"
    return [
        f"chart {chart_name(props) or '?'} version is {shown}: an unpinned chart installs whatever is newest "
        "on the day, and the labs' keys (imageTag vs image.tag, CDI defaults) change between versions; pin "
        "an exact version such as 2.9.0"
    ]


RULES = [
    Rule(
        "helm-chart-version-pinned",
        "Every Helm release pins an exact chart version.",
        "mandatory",
        "operator",
        "a later install pulls another chart whose keys and defaults differ",
        resource_check=check_helm_chart_version_pinned,
    ),
]
