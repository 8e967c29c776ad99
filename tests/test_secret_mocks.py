"""A `secure:` value is checked as Pulumi would decrypt it, and planned as a mock of the shape its key needs."""

from __future__ import annotations

import ipaddress
import json

import pytest

from components.config.kubeconfig import ConfigError
from components.config.secrets import ciphertext_problem, mock_secrets
from components.plan import main, run

SEALED = "v1:" + "A" * 16 + ":" + "A" * 43 + "="
"""What a passphrase or KMS key writes (crypt.go:181): v1, a 12-byte nonce, the sealed bytes."""
CLOUD = "AAABAxyz"
"""What Pulumi Cloud writes (service/manager.go:72): standard base64."""
HOST = ("gpushare:platform=existing-host", "gpushare:vm=null", "gpushare:host.privateKey=k")


def _argv(stack: str, *overrides: str) -> list[str]:
    return [stack, *(arg for item in overrides for arg in ("-c", item))]


@pytest.mark.parametrize(("text", "settings"), [
    (SEALED, {"encryptionsalt": "v1:abc"}),
    (SEALED, {"secretsprovider": "gcpkms://projects/p/locations/l/keyRings/r/cryptoKeys/k"}),
    (CLOUD, {"secretsprovider": "service"}),
    (SEALED, {}),
    (CLOUD, {}),
])  # fmt: skip
def test_a_ciphertext_in_the_form_its_provider_writes_is_taken(text: str, settings: dict[str, str]) -> None:
    assert ciphertext_problem(text, settings) is None


@pytest.mark.parametrize(("text", "settings"), [
    ("v1:abcdef", {}),  # two fields, not three
    ("v1:" + "A" * 8 + ":" + "A" * 43 + "=", {}),  # a 6-byte nonce
    ("v1:" + "A" * 16 + ":AAAA", {}),  # shorter than AES-GCM's tag
    ("not base64!", {}),
    (CLOUD, {"encryptionsalt": "v1:abc"}),  # a passphrase stack writes v1:
    (SEALED, {"secretsprovider": "service"}),  # Pulumi Cloud writes plain base64
    ("", {}),
])  # fmt: skip
def test_a_malformed_ciphertext_is_refused(text: str, settings: dict[str, str]) -> None:
    assert ciphertext_problem(text, settings)


def test_a_malformed_secure_value_is_refused_in_one_line_naming_the_key_and_never_quoting_it(capsys) -> None:
    assert (
        main(
            _argv("k3s", *HOST, "gpushare:host.address=192.0.2.50", "gpushare:host.privateKey={secure: v1:s3cr3tvalue}")
        )
        == 2
    )
    err = capsys.readouterr().err
    assert err.startswith("error: gpushare:host.privateKey: the secure: value") and len(err.splitlines()) == 1
    assert "s3cr3t" not in err


def _inputs(plan: object) -> str:
    return json.dumps([r["inputs"] for r in plan.resources])  # type: ignore[attr-defined]


def test_a_secret_source_range_is_mocked_as_a_cidr() -> None:
    plan = run("k3s", [f"gpushare:vm.allowedSourceRanges=[{{secure: {CLOUD}}}]"])
    ranges = next(r["inputs"]["sourceRanges"] for r in plan.resources if r["type"].endswith("Firewall"))
    assert all(ipaddress.ip_network(r) for r in ranges)


def test_a_secret_chart_repository_is_mocked_as_a_repository() -> None:
    plan = run("gke", [f"gpushare:chartSources.kai.repository={{secure: {CLOUD}}}"])
    assert "oci://harbor.example.com/charts" in _inputs(plan)


def test_a_secret_kubeconfig_path_is_mocked_as_a_path_to_a_kubeconfig() -> None:
    config, secret = mock_secrets(
        {"gpushare:platform": "existing", "gpushare:cluster": {"kubeconfigPath": {"secure": CLOUD}}}
    )
    assert secret == ["gpushare:cluster"] and config["gpushare:cluster"]["kubeconfigPath"].endswith(".yaml")


def test_a_secret_host_and_host_key_are_mocked_as_a_host_and_a_key() -> None:
    config, _ = mock_secrets(
        {
            "gpushare:platform": "existing-host",
            "gpushare:host": {
                "address": {"secure": CLOUD},
                "privateKey": {"secure": CLOUD},
                "hostKey": {"secure": CLOUD},
            },
        }
    )
    host = config["gpushare:host"]
    assert host["hostKey"].startswith("ssh-ed25519 ") and "/" not in host["address"]


def test_a_secret_with_a_declared_default_is_mocked_as_that_default() -> None:
    config, _ = mock_secrets({"gpushare:platform": "gke", "gpushare:gke": {"zone": {"secure": CLOUD}}})
    assert config["gpushare:gke"]["zone"] == "asia-northeast1-a"


def test_a_secret_number_without_default_plans_as_unset() -> None:
    config, _ = mock_secrets({"gpushare:platform": "gke", "gpushare:verify": {"sliceMiB": {"secure": CLOUD}}})
    assert "sliceMiB" not in config["gpushare:verify"]


def test_a_malformed_secret_raises_the_config_error_of_its_key() -> None:
    with pytest.raises(ConfigError) as caught:
        mock_secrets({"gpushare:registryMirrors": {"docker.io": {"secure": "v1:x"}}})
    assert caught.value.key == 'gpushare:registryMirrors["docker.io"]'
