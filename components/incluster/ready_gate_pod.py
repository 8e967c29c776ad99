"""Runs in the gate Pod (stdlib only): poll one API object until it reports ready, then exit 0; 1 at the deadline.

Environment: GATE_PATH (API path of the object), GATE_READY (`condition:Ready` or `status.state=ready`),
GATE_TIMEOUT (seconds). For tests: GATE_API (base URL), GATE_TOKEN_FILE, GATE_CA_FILE.
"""

from __future__ import annotations

import json
import os
import ssl
import sys
import time
import urllib.request
from typing import Any

SERVICE_ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"


def is_ready(obj: dict[str, Any], rule: str) -> bool:
    """`condition:T` → a status condition T is "True"; `a.b=v` → the field a.b equals v."""
    if rule.startswith("condition:"):
        wanted = rule.partition(":")[2]
        conditions = (obj.get("status") or {}).get("conditions") or []
        return any(c.get("type") == wanted and c.get("status") == "True" for c in conditions)
    path, _, value = rule.partition("=")
    node: Any = obj
    for part in path.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node is not None and str(node) == value


def _get(url: str, token_file: str, context: ssl.SSLContext | None) -> dict[str, Any]:
    with open(token_file) as handle:
        token = handle.read().strip()
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, context=context, timeout=10) as response:
        return json.load(response)


def main() -> int:
    path, rule = os.environ["GATE_PATH"], os.environ["GATE_READY"]
    base = os.environ.get("GATE_API", "https://kubernetes.default.svc")
    token_file = os.environ.get("GATE_TOKEN_FILE", f"{SERVICE_ACCOUNT}/token")
    ca_file = os.environ.get("GATE_CA_FILE", f"{SERVICE_ACCOUNT}/ca.crt")
    context = ssl.create_default_context(cafile=ca_file) if base.startswith("https:") else None
    deadline = time.monotonic() + float(os.environ.get("GATE_TIMEOUT", "300"))
    last = "not read yet"
    while True:
        try:
            obj = _get(base + path, token_file, context)
            if is_ready(obj, rule):
                print(f"ready: {path} ({rule})", flush=True)
                return 0
            last = json.dumps(obj.get("status"))[:500]
        except Exception as err:
            last = f"{type(err).__name__}: {err}"
        if time.monotonic() >= deadline:
            print(f"not ready in time: {path} ({rule}); last seen: {last}", file=sys.stderr, flush=True)
            return 1
        time.sleep(float(os.environ.get("GATE_INTERVAL", "5")))


if __name__ == "__main__":
    sys.exit(main())
