"""`python -m components.audit --kubeconfig FILE [--context NAME] [--json]`: the GPU audit from a laptop.

The official `kubernetes` client reads the kubeconfig: it runs exec credential plugins (gke-gcloud-auth-plugin),
client certificates and tokens, which the project's in-cluster client (incluster/kube.py) does not. It only lists
Pods and nodes; the classification is the verifier's own (incluster/audit.py). Exit 1 when an unlimited Pod is
found, 0 otherwise, 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from components.incluster import audit

if TYPE_CHECKING:
    import urllib3

DEFAULT_SYSTEM_NAMESPACES = ("kube-system", "gpu-operator", "hami-system", "kai-scheduler", "kai-resource-isolator",
                             "kai-resource-reservation", "kyverno")  # fmt: skip
"""The namespaces the stacks install their GPU software into by default; --system-namespace replaces them."""

Lister = Callable[[], tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]]


def kube_lister(kubeconfig: str, context: str | None) -> Lister:
    """Pods and nodes as plain JSON objects, through the official client (read-only: list only)."""
    from kubernetes import client, config  # imported here: --help and bad arguments need no client

    api_client = config.new_client_from_config(config_file=kubeconfig, context=context)
    core = client.CoreV1Api(api_client)

    def listed() -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]:
        # Unread, as urllib3's response: what `_preload_content=False` returns (its docstring in core_v1_api.py),
        # whatever the methods' annotations (V1PodList, V1NodeList) say.
        pods = cast("urllib3.BaseHTTPResponse", core.list_pod_for_all_namespaces(_preload_content=False))
        nodes = cast("urllib3.BaseHTTPResponse", core.list_node(_preload_content=False))
        return json.loads(pods.data)["items"], json.loads(nodes.data)["items"]

    listed.server = api_client.configuration.host  # type: ignore[attr-defined]
    return listed


_UNREACHABLE = (("refused", "it refused the connection"), ("resolution", "its host name does not resolve"),
                ("not known", "its host name does not resolve"), ("nodename", "its host name does not resolve"),
                ("timed out", "it did not answer in time"), ("timeout", "it did not answer in time"),
                ("unreachable", "no route leads to it"), ("certificate", "its TLS certificate is not trusted"),
                ("ssl", "the TLS handshake failed"))  # fmt: skip
"""Words of urllib3's and the socket's errors → what they mean, in this project's words."""


def failure_line(exc: BaseException, kubeconfig: str, server: str | None) -> str:
    """One line for why the audit could not list, naming the file or the server, never urllib3's retry text."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain:
        chain.append(current)
        reason = getattr(current, "reason", None)
        current = reason if isinstance(reason, BaseException) else current.__cause__
    names = {type(e).__name__ for e in chain}
    text = " ".join(str(e) for e in chain).lower()
    if (isinstance(exc, OSError) and not server) or names & {
        "ConfigException",
        "ParserError",
        "ScannerError",
        "ComposerError",
        "ConstructorError",
    }:
        first = (str(exc).splitlines() or [type(exc).__name__])[0].rstrip(":")
        return f"--kubeconfig {kubeconfig}: not a kubeconfig this audit can use ({first})"
    status = getattr(exc, "status", None)
    if isinstance(status, int):
        verdict = "refused the credentials" if status in (401, 403) else "answered with an error"
        return (
            f"--kubeconfig {kubeconfig}: the API server at {server} {verdict} (HTTP {status} "
            f"{getattr(exc, 'reason', '')})"
        )
    if names & {
        "MaxRetryError",
        "NewConnectionError",
        "NameResolutionError",
        "ConnectTimeoutError",
        "ProtocolError",
        "SSLError",
    } or any(isinstance(e, OSError) for e in chain):
        why = next((meaning for word, meaning in _UNREACHABLE if word in text), "the connection failed")
        return (
            f"--kubeconfig {kubeconfig}: the API server at {server or 'its server'} cannot be reached: {why}; "
            "check that the cluster is up and that this machine can reach it"
        )
    return f"--kubeconfig {kubeconfig}: {type(exc).__name__}: {exc}".splitlines()[0]


def render(result: Mapping[str, Any]) -> str:
    counts = result["counts"]
    lines = [f"{counts['limited']} limited, {counts['unlimited']} unlimited, {counts['system']} system Pods can reach"
             f" a GPU (system namespaces: {', '.join(result['systemNamespaces'])})"]  # fmt: skip
    for v in result["pods"]:
        lines.append(f"{v['class']:<9}  {v['pod']}  {v['reason']}: {audit.REASONS[v['reason']]}")
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m components.audit", description=__doc__.splitlines()[0])
    p.add_argument("--kubeconfig", required=True, help="the kubeconfig file of the cluster to audit")
    p.add_argument("--context", default=None, help="a context of that file (default: its current context)")
    p.add_argument("--json", action="store_true", help="print one JSON object (docs/audit.md)")
    p.add_argument("--system-namespace", action="append", default=None, metavar="NS",
                   help="a namespace of GPU software (repeat; replaces the default list)")  # fmt: skip
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None, lister: Lister | None = None) -> int:
    """Audit the cluster; 1 when an unlimited Pod is found, 0 otherwise, 2 on bad input."""
    try:
        args = parse_args(argv)
    except SystemExit as exc:
        return 0 if exc.code == 0 else 2
    namespaces = tuple(args.system_namespace or DEFAULT_SYSTEM_NAMESPACES)
    if lister is None and not os.path.isfile(os.path.expanduser(args.kubeconfig)):
        print(
            f"--kubeconfig {args.kubeconfig}: no such file; give the kubeconfig kubectl uses (`kubectl config view "
            "--raw > FILE`)",
            file=sys.stderr,
        )
        return 2
    server = None
    try:
        lister = lister or kube_lister(os.path.expanduser(args.kubeconfig), args.context)
        server = getattr(lister, "server", None)
        pods, nodes = lister()
    except Exception as exc:  # not a kubeconfig, no such context, unreachable API: one line, exit 2
        print(failure_line(exc, args.kubeconfig, server), file=sys.stderr)
        return 2
    result = audit.audit(pods, namespaces, nodes)
    print(json.dumps(result, sort_keys=True) if args.json else render(result))
    return 1 if result["counts"][audit.UNLIMITED] else 0


if __name__ == "__main__":
    sys.exit(main())
