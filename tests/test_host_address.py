"""An existing host's address as SSH dials it (Go's net.JoinHostPort adds the brackets itself)."""

from __future__ import annotations

import pytest

from components.config import check_stack_config
from components.config.kubeconfig import ConfigError
from components.platform.k3s_bootstrap import api_server


@pytest.mark.parametrize(
    ("address", "words"),
    [
        ("0.0.0.0", "unspecified address"),
        ("::", "unspecified address"),
        ("[2001:db8::1]", "without brackets (2001:db8::1)"),
        ("192.0.2.50:2222", "the port as gpushare:host.port"),
    ],
)
def test_a_host_address_ssh_cannot_dial_is_refused_with_the_fix(address: str, words: str) -> None:
    with pytest.raises(ConfigError) as caught:
        check_stack_config(
            {"gpushare:platform": "existing-host", "gpushare:host": {"address": address, "privateKey": "k"}}
        )
    assert caught.value.key == "gpushare:host.address" and words in caught.value.problem


@pytest.mark.parametrize("address", ["host.example.com.", "2001:db8::1", "fe80::1%eth0", "HOST.example.com"])
def test_a_host_address_go_dials_is_taken(address: str) -> None:
    check_stack_config({"gpushare:platform": "existing-host", "gpushare:host": {"address": address, "privateKey": "k"}})


def test_a_zoned_ipv6_host_gets_a_server_url_with_its_zone_escaped() -> None:
    assert api_server("fe80::1%eth0") == "https://[fe80::1%25eth0]:6443"
