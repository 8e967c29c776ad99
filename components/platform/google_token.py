"""An OAuth access token from the credentials the Google provider reads, in its order; standard library only.

terraform-provider-google (which pulumi-gcp bridges) takes `credentials` from its config (`gcp:credentials`) or
GOOGLE_CREDENTIALS, GOOGLE_CLOUD_KEYFILE_JSON, GCLOUD_KEYFILE_JSON, and `access_token` from its config
(`gcp:accessToken`) or GOOGLE_OAUTH_ACCESS_TOKEN (google/provider.go, the two keys' MultiEnvDefaultFunc; they
conflict), and without either the application-default credentials: GOOGLE_APPLICATION_CREDENTIALS, then gcloud's
file (golang.org/x/oauth2/google, FindDefaultCredentials). A credentials value is the JSON or a path to it. A
service-account key is exchanged for a token with an RS256-signed JWT (RFC 7523), signed here with Python's own
integers (PKCS#1 v1.5, RFC 8017 8.2), so the host-key step needs no package beyond python3.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path

SCOPE = "https://www.googleapis.com/auth/compute.readonly"
TOKEN_URI = "https://oauth2.googleapis.com/token"
CREDENTIALS_ENV = ("GOOGLE_CREDENTIALS", "GOOGLE_CLOUD_KEYFILE_JSON", "GCLOUD_KEYFILE_JSON")
PROGRAM_CREDENTIALS = "GPUSHARE_GCP_CREDENTIALS"
"""`gcp:credentials` as the program passes it to the step (a secret input), ahead of the environment's."""
PROGRAM_TOKEN = "GPUSHARE_GCP_ACCESS_TOKEN"
"""`gcp:accessToken` as the program passes it."""
GCLOUD_TIMEOUT_S = 60
SHA256_DIGEST_INFO = bytes.fromhex("3031300d060960864801650304020105000420")
"""DER of the DigestInfo prefix for SHA-256 (RFC 8017 9.2, note 1)."""

Post = Callable[[str, dict[str, str]], tuple[int, bytes]]
"""(url, form fields) → (HTTP status, body)."""
Run = Callable[[list[str]], str]


class CredentialsError(Exception):
    """Credentials that cannot give a token: one line saying which and what to do."""


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _der(data: bytes, at: int) -> tuple[int, int, int]:
    """(tag, start of content, end of content) of the DER element at `at`."""
    tag, length, at = data[at], data[at + 1], at + 2
    if length & 0x80:
        count = length & 0x7F
        length, at = int.from_bytes(data[at : at + count], "big"), at + count
    return tag, at, at + length


def _sequence(data: bytes, at: int = 0) -> list[tuple[int, bytes]]:
    tag, start, end = _der(data, at)
    if tag != 0x30:
        raise ValueError("not a DER sequence")
    items, at = [], start
    while at < end:
        tag, s, e = _der(data, at)
        items.append((tag, data[s:e]))
        at = e
    return items


def rsa_key(pem: str) -> tuple[int, int]:
    """(n, d) of a PKCS#8 (`BEGIN PRIVATE KEY`, what a service-account key holds) or PKCS#1 RSA key."""
    lines = [line.strip() for line in pem.strip().splitlines()]
    if not lines or lines[0] not in ("-----BEGIN PRIVATE KEY-----", "-----BEGIN RSA PRIVATE KEY-----"):
        raise ValueError("not a PEM RSA private key")
    der = base64.b64decode("".join(line for line in lines if not line.startswith("-----")))
    items = _sequence(der)
    if lines[0] == "-----BEGIN PRIVATE KEY-----":  # PrivateKeyInfo: version, algorithm, OCTET STRING(RSAPrivateKey)
        der = items[2][1]
        items = _sequence(der)
    numbers = [int.from_bytes(value, "big") for tag, value in items if tag == 0x02]
    if len(numbers) < 4:
        raise ValueError("not an RSA private key")
    return numbers[1], numbers[3]  # version, n, e, d, ...


def rs256(message: bytes, pem: str) -> bytes:
    """The RSASSA-PKCS1-v1_5 SHA-256 signature of `message` (RFC 8017 8.2.1, EMSA-PKCS1-v1_5 9.2)."""
    n, d = rsa_key(pem)
    size = (n.bit_length() + 7) // 8
    encoded = SHA256_DIGEST_INFO + hashlib.sha256(message).digest()
    block = b"\x00\x01" + b"\xff" * (size - len(encoded) - 3) + b"\x00" + encoded
    return pow(int.from_bytes(block, "big"), d, n).to_bytes(size, "big")


def assertion(key: Mapping[str, str], now: float) -> str:
    """The signed JWT a service account exchanges for a token (RFC 7523 2.1)."""
    header = {"alg": "RS256", "typ": "JWT", "kid": key.get("private_key_id", "")}
    claims = {"iss": key["client_email"], "scope": SCOPE, "aud": key.get("token_uri") or TOKEN_URI,
              "iat": int(now), "exp": int(now) + 3600}  # fmt: skip
    signing = f"{_b64url(json.dumps(header).encode())}.{_b64url(json.dumps(claims).encode())}"
    return f"{signing}.{_b64url(rs256(signing.encode(), key['private_key']))}"


def exchange(request: urllib.request.Request, unreachable: Callable[[str], Exception]) -> tuple[int, bytes]:
    """One HTTP exchange: (status, body) for any answer; `unreachable(why)` raised where no answer came."""
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()
    except (urllib.error.URLError, TimeoutError) as err:
        raise unreachable(str(getattr(err, "reason", err))) from None


def http_post(url: str, form: dict[str, str]) -> tuple[int, bytes]:
    request = urllib.request.Request(url, data=urllib.parse.urlencode(form).encode(), method="POST")
    return exchange(request, lambda why: CredentialsError(f"the token endpoint {url} is unreachable ({why})"))


def _exchange(url: str, form: dict[str, str], post: Post, where: str) -> str:
    status, body = post(url, form)
    try:
        answer = json.loads(body)
    except ValueError:
        answer = {}
    token = answer.get("access_token") if isinstance(answer, dict) else None
    if status != 200 or not token:
        why = (answer.get("error_description") or answer.get("error")) if isinstance(answer, dict) else None
        raise CredentialsError(f"{where}: the token endpoint answered {status} ({why or 'no token'}); check them")
    return str(token)


def _load(value: str, where: str) -> dict[str, str]:
    """The credentials JSON itself, or the file a path names."""
    text = value.strip()
    if not text.startswith("{"):
        path = Path(text).expanduser()
        try:
            text = path.read_text()
        except OSError as err:
            raise CredentialsError(f"{where}: cannot read {path} ({err.strerror or err})") from None
    try:
        data = json.loads(text)
    except ValueError:
        raise CredentialsError(f"{where}: neither credentials JSON nor a path to them") from None
    if not isinstance(data, dict):
        raise CredentialsError(f"{where}: credentials JSON is an object")
    return data


def token_from(value: str, where: str, post: Post, now: float) -> str:
    """A token from one credentials value: a service-account key or gcloud's user credentials."""
    data = _load(value, where)
    kind = data.get("type")
    if kind == "service_account":
        try:
            signed = assertion(data, now)
        except (KeyError, ValueError) as err:
            raise CredentialsError(f"{where}: a service-account key without a usable private key ({err})") from None
        grant = {"grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer", "assertion": signed}
        return _exchange(data.get("token_uri") or TOKEN_URI, grant, post, where)
    if kind == "authorized_user":
        fields = {k: data.get(k, "") for k in ("client_id", "client_secret", "refresh_token")}
        return _exchange(TOKEN_URI, {"grant_type": "refresh_token", **fields}, post, where)
    raise CredentialsError(
        f"{where}: credentials of type {kind!r} cannot be read here (service_account or authorized_user); set "
        "GOOGLE_OAUTH_ACCESS_TOKEN=$(gcloud auth print-access-token) instead"
    )


def gcloud_adc_file(environ: Mapping[str, str]) -> Path:
    """Where `gcloud auth application-default login` writes (golang.org/x/oauth2/google wellKnownFile)."""
    base = environ.get("CLOUDSDK_CONFIG") or str(Path(environ.get("HOME", "~")) / ".config" / "gcloud")
    return Path(base).expanduser() / "application_default_credentials.json"


def access_token(environ: Mapping[str, str], run: Run, post: Post = http_post, now: float | None = None) -> str:
    """The token the provider's credentials give, in its order; CredentialsError in one line otherwise."""
    now = time.time() if now is None else now
    for name in (PROGRAM_TOKEN, "GOOGLE_OAUTH_ACCESS_TOKEN"):
        if environ.get(name, "").strip():
            return environ[name].strip()
    for name in (PROGRAM_CREDENTIALS, *CREDENTIALS_ENV, "GOOGLE_APPLICATION_CREDENTIALS"):
        if environ.get(name, "").strip():
            where = "gcp:credentials" if name == PROGRAM_CREDENTIALS else name
            return token_from(environ[name], where, post, now)
    adc = gcloud_adc_file(environ)
    if adc.is_file():
        return token_from(str(adc), str(adc), post, now)
    try:
        token = run(["gcloud", "auth", "application-default", "print-access-token"]).strip()
    except subprocess.TimeoutExpired:
        raise CredentialsError(
            f"gcloud gave no token within {GCLOUD_TIMEOUT_S} s; run `gcloud auth application-default login`, or set "
            "gcp:credentials or GOOGLE_OAUTH_ACCESS_TOKEN"
        ) from None
    except (OSError, subprocess.CalledProcessError):
        token = ""
    if not token:
        raise CredentialsError(
            "no Google credentials to read the host key: set gcp:credentials or GOOGLE_CREDENTIALS, or run "
            "`gcloud auth application-default login`, or set GOOGLE_OAUTH_ACCESS_TOKEN"
        )
    return token


def gcloud(argv: list[str]) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True, timeout=GCLOUD_TIMEOUT_S).stdout


def environment() -> dict[str, str]:
    return dict(os.environ)
