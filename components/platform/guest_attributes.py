"""The sshd host key a GCE VM's guest agent published, read once, on the machine that runs `pulumi up`.

The k3s VM's host-key step runs `python3 -m components.platform.guest_attributes` from the project (a local
command whose triggers hold the instance id: it runs once per instance, and every later preview and `up` reads its
stored stdout, a stopped Spot VM's included). Standard library only, so any python3 runs it. It prints one line,
`ssh-ed25519 <key>`, or fails with one line on stderr: at once for what waiting cannot fix (credentials, the
permission), after retries for what does (the attribute not yet published on a first boot, the API's 429 and 5xx).

Environment: GPUSHARE_INSTANCE_URL, the instance's selfLink; the credentials the Google provider reads, in its
order (google_token.py): `gcp:accessToken` or `gcp:credentials` as the program passes them, GOOGLE_OAUTH_ACCESS_TOKEN,
GOOGLE_CREDENTIALS and the other keyfile variables, GOOGLE_APPLICATION_CREDENTIALS, gcloud's application-default
credentials.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable

from components.platform import google_token

ATTRIBUTE = "hostkeys/ssh-ed25519"
"""Where the guest agent publishes the ed25519 host key it generated on first boot (guest-agent
google_guest_agent/instance_setup.go, generateSSHKeys: WriteGuestAttributes("hostkeys/"+type, key))."""
PERMISSION = "compute.instances.getGuestAttributes"
TRIES = 60
INTERVAL_S = 5.0
HEALS = frozenset({404, 408, 429, 500, 502, 503, 504})
"""404 until the agent writes the key on first boot; the rest are the API's own transient answers."""

Fetch = Callable[[str, str], tuple[int, bytes]]
"""(url, token) → (HTTP status, body)."""


class Refused(Exception):
    """An answer that waiting cannot change."""


class NotYet(Exception):
    """An answer that may change on the next try."""


def attribute_url(instance_url: str) -> str:
    """The compute API's getGuestAttributes for the one key (instances.getGuestAttributes, variableKey)."""
    return f"{instance_url.rstrip('/')}/getGuestAttributes?variableKey={urllib.parse.quote(ATTRIBUTE, safe='')}"


def _message(body: bytes) -> str:
    try:
        error = json.loads(body).get("error") or {}
        return str(error.get("message") or "").splitlines()[0][:200]
    except (ValueError, AttributeError, IndexError):
        return ""


def key_line(status: int, body: bytes) -> str:
    """The OpenSSH public key the API answered, or why not (Refused: give up; NotYet: ask again)."""
    if status == 200:
        try:
            value = str(json.loads(body).get("variableValue") or "").strip()
        except (ValueError, AttributeError):
            raise NotYet("an answer that is not JSON") from None
        if not value:
            raise NotYet("published nothing yet")
        try:
            base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise Refused(f"{ATTRIBUTE} holds {value[:40]!r}, not an ed25519 key") from None
        return f"ssh-ed25519 {value}"
    if status == 403:
        raise Refused(
            f"403: the credentials lack {PERMISSION} on this instance; grant a role that has it, "
            "or run `pulumi up` as a principal that does"
        )
    if status == 401:
        raise Refused(
            "401: the credentials were refused; check gcp:credentials or GOOGLE_CREDENTIALS, run `gcloud auth "
            "application-default login`, or set GOOGLE_OAUTH_ACCESS_TOKEN"
        )
    if status in HEALS:
        raise NotYet(f"{status} {_message(body)}".strip())
    raise Refused(f"{status} {_message(body)}".strip())


def read(
    fetch: Fetch,
    instance_url: str,
    token: str,
    tries: int = TRIES,
    interval_s: float = INTERVAL_S,
    sleep: Callable[[float], None] = time.sleep,
) -> str:
    """The key once published; Refused at the first answer that does not heal, or when the tries run out."""
    url, last = attribute_url(instance_url), "no answer"
    for attempt in range(tries):
        try:
            return key_line(*fetch(url, token))
        except NotYet as waiting:
            last = str(waiting)
        if attempt + 1 < tries:
            sleep(interval_s)
    raise Refused(
        f"no sshd host key in guest attribute {ATTRIBUTE} after {int(tries * interval_s)}s (last: {last}); "
        "check the guest agent: `gcloud compute instances get-guest-attributes INSTANCE --zone ZONE "
        "--query-path=hostkeys/`"
    )


def http_fetch(url: str, token: str) -> tuple[int, bytes]:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    return google_token.exchange(request, lambda why: NotYet(f"compute API unreachable ({why})"))


def access_token(environ: dict[str, str], run: Callable[[list[str]], str]) -> str:
    """The token of the credentials the Google provider reads; Refused, in one line, when none gives one."""
    try:
        return google_token.access_token(environ, run)
    except google_token.CredentialsError as err:
        raise Refused(str(err)) from None


def main() -> int:
    instance_url = os.environ.get("GPUSHARE_INSTANCE_URL", "")
    try:
        if not instance_url.startswith("https://"):
            raise Refused("GPUSHARE_INSTANCE_URL is not an instance's selfLink")
        print(read(_retrying_network, instance_url, access_token(dict(os.environ), google_token.gcloud)))
    except Refused as err:
        print(f"{instance_url.rsplit('/', 1)[-1] or 'the VM'}: {err}", file=sys.stderr)
        return 1
    except Exception as err:  # one line, never a traceback: the step's stderr is what `pulumi up` prints
        print(f"{instance_url.rsplit('/', 1)[-1] or 'the VM'}: {type(err).__name__}: {err}", file=sys.stderr)
        return 1
    return 0


def _retrying_network(url: str, token: str) -> tuple[int, bytes]:
    """An unreachable API is one more try, like a 503."""
    try:
        return http_fetch(url, token)
    except NotYet as err:
        return 503, json.dumps({"error": {"message": str(err)}}).encode()


if __name__ == "__main__":
    import argparse  # only for --help: what the step reads is its environment

    argparse.ArgumentParser(prog="python3 -m components.platform.guest_attributes", description=__doc__).parse_args()
    sys.exit(main())
