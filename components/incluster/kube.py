"""The one Kubernetes API client of everything that runs inside Pods (verifier, ready gates): GET only, stdlib only.

A ServiceAccount token re-read on every call (projected tokens rotate), the cluster CA, https unless a test
allows plain http.
"""

from __future__ import annotations

import contextlib
import json
import os
import ssl
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from typing import Any

SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
IN_CLUSTER_URL = "https://kubernetes.default.svc"


class ApiError(Exception):
    """An API request that failed, with its HTTP status (0 when the server was not reached)."""

    def __init__(self, path: str, status: int, detail: str) -> None:
        super().__init__(f"GET {path}: {status or 'unreachable'} {detail}".strip())
        self.status = status


class ApiClient:
    """GET-only client for the Kubernetes API with a bearer token re-read on each call (tokens rotate)."""

    def __init__(
        self,
        base_url: str = IN_CLUSTER_URL,
        token_path: str = f"{SA_DIR}/token",
        ca_path: str = f"{SA_DIR}/ca.crt",
        allow_http: bool = False,
        timeout: float = 15.0,
    ) -> None:
        scheme = urllib.parse.urlsplit(base_url).scheme
        if scheme != "https" and not (scheme == "http" and allow_http):
            raise ValueError(f"refusing API URL {base_url!r}: https only (plain http is for tests)")
        self.base_url = base_url.rstrip("/")
        self.token_path = token_path
        self.timeout = timeout
        self.context: ssl.SSLContext | None = None
        if scheme == "https":
            self.context = ssl.create_default_context(cafile=ca_path if os.path.exists(ca_path) else None)

    def _token(self) -> str:
        try:
            with open(self.token_path, encoding="utf-8") as handle:
                return handle.read().strip()
        except OSError:
            return ""

    def get(self, path: str, query: Mapping[str, str] | None = None) -> bytes:
        url = self.base_url + urllib.parse.quote(path, safe="/:")
        if query:
            url += "?" + urllib.parse.urlencode(query)
        request = urllib.request.Request(url, headers={"Accept": "application/json, */*"})
        token = self._token()
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout, context=self.context) as response:
                return response.read()
        except urllib.error.HTTPError as exc:
            body = exc.read().decode("utf-8", "replace")
            with contextlib.suppress(ValueError, AttributeError):
                body = json.loads(body).get("message", body)
            raise ApiError(path, exc.code, str(body)[:300]) from exc
        except (urllib.error.URLError, OSError) as exc:
            raise ApiError(path, 0, str(getattr(exc, "reason", exc))) from exc

    def json(self, path: str, query: Mapping[str, str] | None = None) -> dict[str, Any]:
        return json.loads(self.get(path, query).decode("utf-8"))

    def text(self, path: str, query: Mapping[str, str] | None = None) -> str:
        return self.get(path, query).decode("utf-8", "replace")
