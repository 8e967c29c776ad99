"""Where a probe ran: the Pod the API server gave it (downward API env) and the processes it was.

Each proof and try Pod gets its own name, UID, namespace and node as env from fieldRef (verify/workloads.py; the
host proof sets the same names for its process-Pods); each probe prints them with its own pid and the pids of the
children it ran, as the `pod` key of its JSON and one `provenance:` line, so the judge can tie every result and
every HAMi-core OOM line (which names its process by getpid()) to the Pod the API server names.
Standard library only; runs on the probes' Pythons (3.8 and later).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

ENV: dict[str, str] = {
    "name": "GPUSHARE_POD_NAME",
    "uid": "GPUSHARE_POD_UID",
    "namespace": "GPUSHARE_POD_NAMESPACE",
    "node": "GPUSHARE_NODE_NAME",
}
"""Each field of the `pod` block and the env it is read from."""
FIELD_PATHS: dict[str, str] = {
    "name": "metadata.name",
    "uid": "metadata.uid",
    "namespace": "metadata.namespace",
    "node": "spec.nodeName",
}
"""The downward API's fieldRef for each (kubernetes.io/docs/concepts/workloads/pods/downward-api)."""
CHILDREN: list[int] = []
"""The pids of the children this process ran, as each child printed its own (note_child)."""


def note_child(answer: Mapping[str, Any]) -> Mapping[str, Any]:
    """Remember a child's pid from the JSON it printed (`pod.pid`, or a findings child's `pid`); the JSON back."""
    pid = (answer.get("pod") or {}).get("pid") if isinstance(answer.get("pod"), Mapping) else answer.get("pid")
    if isinstance(pid, int) and not isinstance(pid, bool) and pid > 0 and pid not in CHILDREN:
        CHILDREN.append(pid)
    return answer


def block(log: Callable[[str], None] | None = None, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The `pod` key of a probe's JSON: the Pod's identity as its env gives it (null where unset), this pid, the
    children's; `log` also gets it as the `provenance:` line."""
    source = os.environ if env is None else env
    found: dict[str, Any] = {key: source.get(name) or None for key, name in ENV.items()}
    pod = {**found, "pid": os.getpid(), "children": sorted(CHILDREN)}
    if log is not None:
        log(line(pod))
    return pod


def line(pod: Mapping[str, Any]) -> str:
    """The human line a probe prints beside its JSON."""
    return (f"provenance: Pod {pod['namespace']}/{pod['name']} uid {pod['uid']} on node {pod['node']};"
            f" pid {pod['pid']}, children {pod['children']}")  # fmt: skip
