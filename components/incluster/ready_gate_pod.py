"""Runs in the gate Pod (stdlib only): poll one API object until it reports ready, then exit 0; 1 at the deadline.

Environment: GATE_PATH (API path of the object), GATE_READY (`condition:Ready`, `annotation:KEY` or
`status.state=ready`), GATE_TIMEOUT (seconds). For tests: GATE_API (base URL, plain http allowed),
GATE_TOKEN_FILE, GATE_CA_FILE.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

from . import kube


def is_ready(obj: dict[str, Any], rule: str) -> bool:
    """`condition:T` → a status condition T is "True"; `annotation:K` → annotation K is set and not empty (its key
    may hold dots: `hami.io/node-nvidia-register`); `a.b=v` → the field a.b equals v."""
    if rule.startswith("annotation:"):
        wanted = rule.partition(":")[2]
        return bool(str(((obj.get("metadata") or {}).get("annotations") or {}).get(wanted) or "").strip())
    if rule.startswith("condition:"):
        wanted = rule.partition(":")[2]
        conditions = (obj.get("status") or {}).get("conditions") or []
        return any(c.get("type") == wanted and c.get("status") == "True" for c in conditions)
    path, _, value = rule.partition("=")
    node: Any = obj
    for part in path.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node is not None and str(node) == value


def main() -> int:
    path, rule = os.environ["GATE_PATH"], os.environ["GATE_READY"]
    base = os.environ.get("GATE_API", kube.IN_CLUSTER_URL)
    client = kube.ApiClient(
        base,
        token_path=os.environ.get("GATE_TOKEN_FILE", f"{kube.SA_DIR}/token"),
        ca_path=os.environ.get("GATE_CA_FILE", f"{kube.SA_DIR}/ca.crt"),
        allow_http="GATE_API" in os.environ,
        timeout=10,
    )
    deadline = time.monotonic() + float(os.environ.get("GATE_TIMEOUT", "300"))
    last = "not read yet"
    while True:
        try:
            obj = client.json(path)
            if is_ready(obj, rule):
                print(f"ready: {path} ({rule})", flush=True)
                return 0
            if rule.startswith("annotation:"):  # a Node's status is long and says nothing of its annotations
                last = "annotations " + json.dumps(sorted((obj.get("metadata") or {}).get("annotations") or {}))[:480]
            else:
                last = json.dumps(obj.get("status", obj))[:500]  # /version has no status: the whole answer
        except Exception as err:
            last = f"{type(err).__name__}: {err}"
        if time.monotonic() >= deadline:
            hint = f"; {os.environ['GATE_HINT']}" if os.environ.get("GATE_HINT") else ""
            print(f"not ready in time: {path} ({rule}); last seen: {last}{hint}", file=sys.stderr, flush=True)
            return 1
        time.sleep(float(os.environ.get("GATE_INTERVAL", "5")))


if __name__ == "__main__":
    sys.exit(main())
