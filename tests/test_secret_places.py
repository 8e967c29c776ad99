"""A secret in a place the plan cannot stand behind is refused in one line naming the key and the fix: a key that
decides the rest, a whole section, a credential under another namespace, a credential in plain text in the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.config.kubeconfig import ConfigError
from components.plan import main, read_stack_config
from tests.conftest import ROOT

CLOUD = "AAABAxyz"  # base64, as Pulumi Cloud writes a ciphertext
MISPLACED = [
    # (-c override, the key the refusal names, a word of its fix)
    (f"gpushare:platform={{secure: {CLOUD}}}", "gpushare:platform", "pulumi config set gpushare:platform"),
    (f"gpushare:sharing={{secure: {CLOUD}}}", "gpushare:sharing", "pulumi config set gpushare:sharing"),
    (f"gpushare:toolkit={{secure: {CLOUD}}}", "gpushare:toolkit", "pulumi config set gpushare:toolkit"),
    (f"gpushare:verify={{secure: {CLOUD}}}", "gpushare:verify", "--path gpushare:verify.<key>"),
    (f"gpushare:gke={{secure: {CLOUD}}}", "gpushare:gke", "--path gpushare:gke.<key>"),
    (f"kubernetes:kubeconfig={{secure: {CLOUD}}}", "kubernetes:kubeconfig", "--path gpushare:cluster.kubeconfig"),
    (f"other:host.privateKey={{secure: {CLOUD}}}", "other:host.privateKey", "--path gpushare:host.privateKey"),
    ("aws:region={secure: 'v1:x'}", "aws:region", "pulumi config set --secret --path aws:region"),
]


@pytest.mark.parametrize(("override", "full_key", "fix"), MISPLACED, ids=[m[1] for m in MISPLACED])
def test_a_misplaced_secret_is_refused_naming_its_key_and_the_fix(override: str, full_key: str, fix: str) -> None:
    with pytest.raises(ConfigError) as refused:
        read_stack_config("gke", [override], ROOT)
    line = str(refused.value)
    assert line.startswith(f"{full_key}: ") and "\n" not in line and fix in line


def test_a_providers_own_secret_under_its_namespace_plans() -> None:
    config, _ = read_stack_config("gke", [f"aws:region={{secure: {CLOUD}}}"], ROOT)
    assert "aws:region" in config


def _stack(tmp_path: Path, text: str) -> Path:
    (tmp_path / "Pulumi.s.yaml").write_text(text)
    (tmp_path / "__main__.py").write_text((ROOT / "__main__.py").read_text())
    return tmp_path


@pytest.mark.parametrize(
    ("section", "name", "value"),
    [("host", "privateKey", "'-----BEGIN OPENSSH PRIVATE KEY-----'"), ("cluster", "kubeconfig", "'apiVersion: v1'")],
)
def test_a_credential_in_plain_text_in_the_stack_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], section: str, name: str, value: str
) -> None:
    root = _stack(tmp_path, f"config:\n  gpushare:platform: gke\n  gpushare:{section}:\n    {name}: {value}\n")
    assert main(["s", "--root", str(root)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: gpushare:{section}.{name}: is in plain text") and len(err.splitlines()) == 1
    assert f"pulumi config set --secret --path gpushare:{section}.{name}" in err and "BEGIN" not in err


def test_a_credential_as_a_secret_in_the_stack_file_is_read(tmp_path: Path) -> None:
    root = _stack(
        tmp_path,
        f"config:\n  gpushare:platform: existing\n  gpushare:cluster:\n    kubeconfig:\n      secure: {CLOUD}\n",
    )
    _, secret_keys = read_stack_config("s", [], root)
    assert secret_keys == ["gpushare:cluster"]
