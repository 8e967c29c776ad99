"""A kubeconfig's server is refused exactly where client-go could not reach it: tests/facts/server_url/reached.json
holds Go's answers (url.Parse, rest.DefaultServerURL's rules, what net/http dials), written by the Go program there."""

from __future__ import annotations

import json
from typing import Any

import pytest

from components.config.kubeconfig import TEXT_KEY, ConfigError, check_kubeconfig
from tests.conftest import ROOT

FACTS: list[dict[str, Any]] = json.loads((ROOT / "tests/facts/server_url/reached.json").read_text())
NO_SUCH_NAME = {"https://256.1.1.1:6443": "a last label that is a number: no DNS name, no IPv4 address"}
"""Servers Go would try and fail to resolve, refused here up front."""


def _kubeconfig(server: str) -> str:
    return json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "k", "cluster": {"server": server}}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
    })  # fmt: skip


@pytest.mark.parametrize("fact", FACTS, ids=[f["server"] for f in FACTS])
def test_a_kubeconfig_server_is_refused_where_client_go_cannot_reach_it(fact: dict[str, Any]) -> None:
    server = fact["server"]
    if "error" not in fact and server not in NO_SUCH_NAME:
        check_kubeconfig(_kubeconfig(server), None, TEXT_KEY)
        return
    with pytest.raises(ConfigError) as refused:
        check_kubeconfig(_kubeconfig(server), None, TEXT_KEY)
    line = str(refused.value)
    assert (
        "\n" not in line
        and TEXT_KEY in line
        and line.count("; ") == 1
        and line.split("; ")[1].startswith(("give", "write"))
    )


def test_the_facts_hold_servers_client_go_takes_that_look_odd() -> None:
    reached = {f["server"] for f in FACTS if "error" not in f}
    assert {
        "HTTPS://h.example:6443",
        "h.example:6443",
        "https://[fe80::1%25eth0]:6443",
        "https://h.example:6443/",
    } <= reached
