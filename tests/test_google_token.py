"""The host-key read's token comes from the credentials the Google provider reads, in its order, with no network
here: fake credentials files, a fake token endpoint, and openssl (when present) checking the JWT's signature."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from components.platform import google_token as gt
from components.platform import guest_attributes as ga

NOW = 1_800_000_000.0


class FakeTokenEndpoint:
    """Answers each POST as Google's token endpoint would, and keeps what it was sent."""

    def __init__(self, status: int = 200, body: dict[str, Any] | None = None) -> None:
        self.status, self.body = status, body if body is not None else {"access_token": "ya29.fake", "expires_in": 3599}
        self.sent: list[tuple[str, dict[str, str]]] = []

    def __call__(self, url: str, form: dict[str, str]) -> tuple[int, bytes]:
        self.sent.append((url, form))
        return self.status, json.dumps(self.body).encode()


def no_gcloud(argv: list[str]) -> str:
    raise FileNotFoundError("gcloud")


@pytest.fixture(scope="module")
def rsa_pem(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("openssl") is None:
        pytest.skip("openssl makes the throwaway service-account key")
    path = tmp_path_factory.mktemp("key") / "key.pem"
    subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out",
                    str(path)], check=True, capture_output=True)  # fmt: skip
    return path


@pytest.fixture
def service_account(tmp_path: Path, rsa_pem: Path) -> Path:
    key = {"type": "service_account", "private_key_id": "k1", "private_key": rsa_pem.read_text(),
           "client_email": "reader@example-project.iam.gserviceaccount.com",
           "token_uri": "https://oauth2.example.test/token"}  # fmt: skip
    path = tmp_path / "sa.json"
    path.write_text(json.dumps(key))
    return path


def _b64(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def test_a_service_account_key_file_is_exchanged_for_a_token_with_a_signed_jwt(
    service_account: Path, rsa_pem: Path, tmp_path: Path
) -> None:
    endpoint = FakeTokenEndpoint()
    env = {"GOOGLE_CREDENTIALS": str(service_account), "HOME": str(tmp_path)}
    assert gt.access_token(env, no_gcloud, endpoint, NOW) == "ya29.fake"
    [(url, form)] = endpoint.sent
    assert url == "https://oauth2.example.test/token"
    assert form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer"
    header, claims, signature = form["assertion"].split(".")
    assert json.loads(_b64(header))["alg"] == "RS256"
    seen = json.loads(_b64(claims))
    assert seen["iss"] == "reader@example-project.iam.gserviceaccount.com" and seen["exp"] - seen["iat"] == 3600
    # openssl, not this module, checks the signature
    public = tmp_path / "pub.pem"
    subprocess.run(["openssl", "pkey", "-in", str(rsa_pem), "-pubout", "-out", str(public)], check=True)
    (tmp_path / "signed").write_bytes(f"{header}.{claims}".encode())
    (tmp_path / "sig").write_bytes(_b64(signature))
    verify = ["openssl", "dgst", "-sha256", "-verify", str(public), "-signature", str(tmp_path / "sig")]
    checked = subprocess.run([*verify, str(tmp_path / "signed")], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_providers_order_access_token_then_credentials_then_the_environments_then_adc(
    service_account: Path, tmp_path: Path
) -> None:
    endpoint = FakeTokenEndpoint()
    assert gt.access_token({gt.PROGRAM_TOKEN: "from-config", "GOOGLE_OAUTH_ACCESS_TOKEN": "env"}, no_gcloud) == (
        "from-config"
    )
    inline = service_account.read_text()
    # gcp:credentials (the JSON itself) comes before GOOGLE_CREDENTIALS, which would fail here
    env = {gt.PROGRAM_CREDENTIALS: inline, "GOOGLE_CREDENTIALS": str(tmp_path / "absent.json")}
    assert gt.access_token(env, no_gcloud, endpoint, NOW) == "ya29.fake"
    for name in (*gt.CREDENTIALS_ENV, "GOOGLE_APPLICATION_CREDENTIALS"):
        assert gt.access_token({name: str(service_account), "HOME": str(tmp_path)}, no_gcloud, endpoint, NOW)
    adc = tmp_path / "gcloud" / "application_default_credentials.json"
    adc.parent.mkdir()
    adc.write_text(json.dumps({"type": "authorized_user", "client_id": "c", "client_secret": "s",
                               "refresh_token": "r"}))  # fmt: skip
    user = FakeTokenEndpoint(body={"access_token": "ya29.user"})
    assert gt.access_token({"CLOUDSDK_CONFIG": str(adc.parent)}, no_gcloud, user, NOW) == "ya29.user"
    assert user.sent[0][1]["grant_type"] == "refresh_token" and user.sent[0][1]["refresh_token"] == "r"
    assert gt.access_token({"HOME": str(tmp_path)}, lambda argv: "ya29.gcloud\n") == "ya29.gcloud"


def test_bad_credentials_fail_in_one_line_naming_them(service_account: Path, tmp_path: Path) -> None:
    refused = FakeTokenEndpoint(400, {"error": "invalid_grant", "error_description": "Invalid JWT Signature."})
    with pytest.raises(gt.CredentialsError, match=r"^GOOGLE_CREDENTIALS: the token endpoint answered 400 \(Invalid"):
        gt.access_token({"GOOGLE_CREDENTIALS": str(service_account)}, no_gcloud, refused, NOW)
    with pytest.raises(gt.CredentialsError, match=r"^GOOGLE_CREDENTIALS: cannot read .*absent.json"):
        gt.access_token({"GOOGLE_CREDENTIALS": str(tmp_path / "absent.json")}, no_gcloud)
    with pytest.raises(gt.CredentialsError, match=r"type 'external_account' cannot be read here"):
        gt.access_token({"GOOGLE_CREDENTIALS": '{"type": "external_account"}'}, no_gcloud)
    broken = json.dumps({"type": "service_account", "client_email": "x", "private_key": "not a key"})
    with pytest.raises(gt.CredentialsError, match=r"^gcp:credentials: a service-account key without a usable"):
        gt.access_token({gt.PROGRAM_CREDENTIALS: broken}, no_gcloud)


def test_a_gcloud_timeout_is_one_line_from_the_step_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def hangs(argv: list[str]) -> str:
        raise subprocess.TimeoutExpired(argv, gt.GCLOUD_TIMEOUT_S)

    for name in (gt.PROGRAM_TOKEN, gt.PROGRAM_CREDENTIALS, "GOOGLE_OAUTH_ACCESS_TOKEN", *gt.CREDENTIALS_ENV,
                 "GOOGLE_APPLICATION_CREDENTIALS"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path))
    monkeypatch.setenv(
        "GPUSHARE_INSTANCE_URL", "https://compute.googleapis.com/compute/v1/projects/p/zones/z/instances/vm"
    )
    monkeypatch.setattr(gt, "gcloud", hangs)
    assert ga.main() == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("vm: gcloud gave no token within 60 s")


def test_the_providers_credentials_reach_the_host_key_step_as_secrets_and_only_when_set(plan_stack) -> None:
    step = "k3s-vm-host-key"
    unset = plan_stack("k3s").one("command:local:Command", step)["inputs"]["environment"]
    assert set(unset) == {"GPUSHARE_INSTANCE_URL"}
    plan = plan_stack("k3s", 'gcp:credentials={"type":"service_account"}', "gcp:accessToken=ya29.config")
    env = plan.one("command:local:Command", step)["inputs"]["environment"]
    assert env[gt.PROGRAM_CREDENTIALS] == "[secret]" and env[gt.PROGRAM_TOKEN] == "[secret]"
