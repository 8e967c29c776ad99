"""Secrets in the offline plan: a `secure:` value is checked as Pulumi would decrypt it, then mocked in the shape
its key needs, which the key's own type and checks choose.

`pulumi config set --secret [--path]` writes `{secure: <ciphertext>}` (sdk/go/common/resource/config/object.go:541).
The ciphertext is `v1:<nonce>:<sealed>` under a passphrase or a cloud KMS key (AES-256-GCM: a 12-byte nonce, a
16-byte tag at least; sdk/go/common/resource/config/crypt.go:179-219, pkg/secrets/cloud/manager.go:120), and plain
base64 under Pulumi Cloud (pkg/secrets/service/manager.go:67-72). Offline nothing can be decrypted, so the plan
puts in a value of the right shape: the key's declared default, else the first of a few shapes (text, a kubeconfig,
a registry mirror, a chart repository, a CIDR, a kubeconfig path, an SSH host key, unset) the stack's checks accept
at that key.
"""

from __future__ import annotations

import base64
import binascii
import copy
from collections.abc import Mapping
from typing import Any

from components.contracts.errors import InputError
from components.contracts.settings import NAMESPACE, alias, key

_UNSET = object()
"""The key left out: an optional setting planned as if unset."""
_KMS_SCHEMES = ("awskms://", "azurekeyvault://", "gcpkms://", "hashivault://", "base64key://")


def ciphertext_problem(text: str, settings: Mapping[str, Any] | None = None) -> str | None:
    """Why `text` is no ciphertext Pulumi writes for this stack file's secrets provider, or None."""
    provider = str((settings or {}).get("secretsprovider") or "")
    sealed = "encryptionsalt" in (settings or {}) or provider == "passphrase" or provider.startswith(_KMS_SCHEMES)
    plain = provider in ("service", "b64") or (provider.startswith(("https://", "http://")))
    v1 = _v1_problem(text)
    b64 = _base64_problem(text)
    if sealed:
        return v1
    if plain:
        return b64
    return None if v1 is None or b64 is None else v1 if text.startswith("v1:") else b64


def _v1_problem(text: str) -> str | None:
    parts = text.split(":")
    if len(parts) != 3 or parts[0] != "v1":
        return "not v1:<nonce>:<ciphertext>, the form a passphrase or KMS key writes"
    try:
        nonce, sealed = (base64.b64decode(p, validate=True) for p in parts[1:])
    except (binascii.Error, ValueError):
        return "its nonce or ciphertext is not base64"
    if len(nonce) != 12 or len(sealed) < 16:
        return "its nonce is not 12 bytes or its ciphertext is shorter than AES-GCM's tag"
    return None


def _base64_problem(text: str) -> str | None:
    try:
        return None if base64.b64decode(text, validate=True) else "it is empty"
    except (binascii.Error, ValueError):
        return "not base64, the form Pulumi Cloud writes"


def _ssh_host_key() -> str:
    """A well-formed Ed25519 public key line (RFC 4253 §6.6 blob), built rather than copied."""
    name = b"ssh-ed25519"
    blob = len(name).to_bytes(4, "big") + name + (32).to_bytes(4, "big") + b"gpushare-offline-plan-mock-key-32"[:32]
    return f"ssh-ed25519 {base64.b64encode(blob).decode()}"


def _shapes() -> tuple[Any, ...]:
    from components.mocks import MOCK_KUBECONFIG  # a kubeconfig must still parse offline

    return ("mock-secret-value", MOCK_KUBECONFIG, "harbor.example.com/mirror", "oci://harbor.example.com/charts",
            "10.0.0.1/32", "examples/kubeconfig.placeholder.yaml", _ssh_host_key(), _UNSET)  # fmt: skip


def _find_secrets(value: Any, path: list[str | int], found: list[list[str | int]]) -> None:
    if isinstance(value, dict):
        if set(value) == {"secure"} and isinstance(value["secure"], str):
            found.append(path)
            return
        for name, inner in value.items():
            _find_secrets(inner, [*path, name], found)
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            _find_secrets(inner, [*path, index], found)


def _put(config: dict[str, Any], path: list[str | int], value: Any) -> None:
    *parents, last = path
    node: Any = config
    for part in parents:
        node = node[part]
    if value is _UNSET:
        if isinstance(node, dict):
            node.pop(last, None)
        else:
            node[last] = "mock-secret-value"
    else:
        node[last] = value


def _full_key(path: list[str | int]) -> str:
    top, *rest = path
    namespace, _, name = str(top).partition(":")
    full = key(name, *rest)
    return full if namespace == NAMESPACE else f"{namespace}:{full.removeprefix(f'{NAMESPACE}:')}"


DECISIVE = ("platform", "toolkit", "sharing")
"""Keys whose value decides which other keys exist: the plan must read them, so they are never secrets."""
SECRET_NAMES = {"privateKey": ("host", "privateKey"), "kubeconfig": ("cluster", "kubeconfig")}
"""The last name of each key that holds a credential → its full path under gpushare:."""
_SECRET_SOURCES = {"privateKey": "< ~/.ssh/id_ed25519", "kubeconfig": "< ~/.kube/config"}


def _misplaced(config: Mapping[str, Any], path: list[str | int]) -> str | None:
    """Why a `secure:` value at `path` cannot be planned, or None: a key that decides the rest, a whole section,
    or a credential under a namespace this program never reads."""
    namespace, _, name = str(path[0]).partition(":")
    names = [name, *path[1:]]
    last = str(names[-1]).rpartition(".")[2]
    if namespace != NAMESPACE:
        if last not in SECRET_NAMES:
            return None  # a provider's own secret (aws:secretKey…): Pulumi hands it to that provider
        own = key(*SECRET_NAMES[last])
        return (
            f"is a secret under namespace {namespace!r}, which this program never reads; set it as {own}: "
            f"`pulumi config set --secret --path {own} {_SECRET_SOURCES[last]}`, then `pulumi config rm "
            f"{_full_key(path)}`"
        )
    if len(names) == 1 and name in DECISIVE:
        return (
            "decides which other keys exist, so it cannot be a secret; set it in plain: "
            f"`pulumi config set {key(name)} …`"
        )
    from components.config.read import VARIANTS, _model_at

    variant = VARIANTS.get(str(config.get(f"{NAMESPACE}:platform")))
    if variant is not None and all(isinstance(n, str) for n in names) and _model_at(variant, [str(n) for n in names]):
        return (
            "is a whole section given as one secret, whose keys the plan cannot check; set the key that is secret "
            f"alone: `pulumi config set --secret --path {_full_key(path)}.<key> …`"
        )
    return None


def plain_secret_problem(config: Mapping[str, Any]) -> tuple[str, str] | None:
    """(key, why) for a credential written in plain text in the stack file, which is committed with the project."""
    for section, name in SECRET_NAMES.values():
        value = config.get(f"{NAMESPACE}:{section}")
        inner = value.get(name) if isinstance(value, Mapping) else None
        if isinstance(inner, str) and inner:
            where = key(section, name)
            return where, (
                "is in plain text in the stack file, which is committed with the project; set it as a secret: "
                f"`pulumi config set --secret --path {where} {_SECRET_SOURCES[name]}`"
            )
    return None


def _declared_default(config: Mapping[str, Any], path: list[str | int]) -> Any:
    """The default the key's model declares, where the path names a field and it has one that is not empty."""
    from components.config.read import VARIANTS, _model_at

    variant = VARIANTS.get(str(config.get(f"{NAMESPACE}:platform")))
    names = [str(path[0]).removeprefix(f"{NAMESPACE}:"), *path[1:]]
    if variant is None or not str(path[0]).startswith(f"{NAMESPACE}:") or any(isinstance(n, int) for n in names):
        return _UNSET
    model = _model_at(variant, [str(n) for n in names[:-1]])
    field = next((f for n, f in model.model_fields.items() if alias(n) == names[-1]), None) if model else None
    default = field.get_default(call_default_factory=True) if field is not None and not field.is_required() else None
    return default if default not in (None, "", [], {}) and not hasattr(default, "model_fields") else _UNSET


def _refused_at(config: dict[str, Any], secret_key: str) -> bool:
    """True when the stack's checks refuse the config at the secret's key, or at what holds it."""
    from components.config import check_stack_config

    try:
        check_stack_config(config)
    except InputError as err:
        return (
            err.key == secret_key
            or secret_key.startswith((f"{err.key}.", f"{err.key}["))
            or err.key.startswith((f"{secret_key}.", f"{secret_key}["))
        )
    return False


def mock_secrets(config: dict[str, Any], settings: Mapping[str, Any] | None = None) -> tuple[dict[str, Any], list[str]]:
    """The config with each `secure:` value checked and mocked, and the top-level keys that held one."""
    found: list[list[str | int]] = []
    for name, value in config.items():
        _find_secrets(value, [name], found)
    if not found:
        return config, []
    from components.config.kubeconfig import ConfigError

    mocked = copy.deepcopy(config)
    for path in found:
        misplaced = _misplaced(config, path)
        if misplaced:
            raise ConfigError(_full_key(path), misplaced)
    for path in found:
        node: Any = config
        for part in path:
            node = node[part]
        problem = ciphertext_problem(node["secure"], settings)
        if problem:
            where = _full_key(path)
            raise ConfigError(
                where,
                f"the secure: value is not what `pulumi config set --secret` writes ({problem})"
                f"; set it again: `pulumi config set --secret --path {where} …`",
            )
        _put(mocked, path, "mock-secret-value")
    for _ in range(2):  # a second pass: a key's first mock may have hidden another key's refusal
        for path in found:
            default = _declared_default(mocked, path)
            candidates = [*([default] if default is not _UNSET else []), *_shapes()]
            where = _full_key(path)
            chosen = next(
                (c for c in candidates if not _refused_at(_with(mocked, path, c), where)), "mock-secret-value"
            )
            _put(mocked, path, chosen)
    return mocked, sorted({str(path[0]) for path in found})


def _with(config: dict[str, Any], path: list[str | int], value: Any) -> dict[str, Any]:
    trial = copy.deepcopy(config)
    _put(trial, path, value)
    return trial
