"""Reading a stack's `gpushare:` values: the platform first, then the shape, then pydantic, then the checks across
sections; every refusal is one ConfigError naming the key as `pulumi config set --path` takes it."""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BaseModel, Field, SecretStr, TypeAdapter, ValidationError

from components.config.existing import ExistingStack
from components.config.gke import GKE_NATIVE, GkeStack
from components.config.k3s import ExistingHostStack, K3sVmStack
from components.config.kubeconfig import ConfigError
from components.config.shared import Stack
from components.contracts.settings import NAMESPACE, alias, attribute_docs, key
from components.validate import may_hold_credential, quoted

StackConfig = Annotated[GkeStack | K3sVmStack | ExistingHostStack | ExistingStack, Field(discriminator="platform")]
"""A stack's whole config: one variant per platform."""
VARIANTS: dict[str, type[Stack]] = {
    "gke": GkeStack,
    "k3s-vm": K3sVmStack,
    "existing-host": ExistingHostStack,
    "existing": ExistingStack,
}
PLATFORMS = tuple(VARIANTS)
_ADAPTER: TypeAdapter[StackConfig] = TypeAdapter(StackConfig)

MOVED_KEYS: dict[tuple[str, str], str] = {
    **{(section, "gpuType"): "gpu.type" for section in ("gke", "vm", "host", "cluster")},
    **{(section, "gpuMemoryMiB"): "gpu.memoryMiB" for section in ("gke", "vm", "host", "cluster")},
    ("gke", "gpuCount"): "gpu.perNode",
    ("cluster", "gpusPerNode"): "gpu.perNode",
}
"""Keys that moved into the one GPU description: old section and key → the new key."""
REPLACED_KEYS: dict[tuple[str, str], str] = {
    (section, "hourlyCostUsd"): "replaced by a figure computed from the pool's shape: set "
    f"{key(section, 'machineHourlyUsd')} and {key(section, 'gpuHourlyUsd')} (per machine and per GPU, at your "
    "provider's on-demand or Spot prices)"
    for section in ("gke", "vm")
}
"""Keys whose meaning changed: old section and key → what to set instead."""

_KAI_ELSEWHERE = (
    "kai is wired for platform gke only (its isolator settings are GKE/COS ones); remove the key (hami "
    "is the sharing system here)"
)
_HOST_TOOLKIT = (
    "the k3s bootstrap installs the NVIDIA Container Toolkit on the host before k3s; remove the key "
    "(host is the only toolkit here)"
)
WRONG_CHOICE: dict[tuple[str, str, str], str] = {
    ("gke", "toolkit", "gpu-operator"): "GKE installs and manages the driver and toolkit itself, and a GPU Operator "
    "over GKE-managed drivers breaks them; remove the key (gke-managed is the only toolkit on gke)",
    ("gke", "toolkit", "host"): "GKE installs and manages the driver and toolkit itself; remove the key "
    "(gke-managed is the only toolkit on gke)",
    ("gke", "sharing", "hami"): "GKE's own device plugin always runs, and HAMi's device plugin cannot share a card "
    "with another; use kai, or GKE's own mps or time-sharing",
    ("k3s-vm", "toolkit", "*"): _HOST_TOOLKIT,
    ("existing-host", "toolkit", "*"): _HOST_TOOLKIT,
    ("existing", "toolkit", "gke-managed"): "gke-managed is only for platform gke; use gpu-operator or host",
    **{(platform, "sharing", "kai"): _KAI_ELSEWHERE for platform in ("k3s-vm", "existing-host", "existing")},
    **{
        (platform, "sharing", native): f"{native} is GKE's own GPU sharing (the node pool's gpu_sharing_config), not "
        "available here; remove the key (hami is the sharing system here)"
        for platform in ("k3s-vm", "existing-host", "existing")
        for native in GKE_NATIVE
    },
}
"""Why a toolkit or sharing value is refused on a platform (`*`: any value but the one allowed)."""

SECRET_KEYS = {("host", "privateKey"): "< ~/.ssh/id_ed25519", ("cluster", "kubeconfig"): "< ~/.kube/config"}
"""Keys that hold secrets: never quoted back, and set with `pulumi config set --secret`."""


def sections_of(variant: type[Stack]) -> set[str]:
    return {alias(name) for name in variant.model_fields}


def _owners(section: str) -> list[str]:
    return [platform for platform, variant in VARIANTS.items() if section in sections_of(variant)]


def _all_sections() -> list[str]:
    return sorted({s for variant in VARIANTS.values() for s in sections_of(variant)})


def check_shape(data: Mapping[str, Any]) -> type[Stack]:
    """Before pydantic: no unknown key, the platform, no section of another platform, no key that moved."""
    for name in sorted(data):
        if name not in _all_sections():
            close = difflib.get_close_matches(name, _all_sections(), n=1)
            hint = f"did you mean {key(close[0])}?" if close else f"known keys: {', '.join(_all_sections())}"
            raise ConfigError(key(name), f"unknown key; {hint}")
    platform = data.get("platform")
    if platform is None:
        raise ConfigError(
            key("platform"), f"required: one of {', '.join(PLATFORMS)} (`pulumi config set gpushare:platform gke`)"
        )
    if not isinstance(platform, str) or platform not in VARIANTS:
        shown = repr(platform) if isinstance(platform, (str, int, float, bool)) else "a " + type(platform).__name__
        raise ConfigError(key("platform"), f"{shown} is not a platform; expected {', '.join(PLATFORMS)}")
    variant = VARIANTS[platform]
    own = sections_of(variant)
    for section in sorted(data):
        value = data[section]
        if section in own:
            if isinstance(value, Mapping):
                for inner in sorted(map(str, value)):
                    if (section, inner) in REPLACED_KEYS:
                        raise ConfigError(key(section, inner), REPLACED_KEYS[(section, inner)])
                    moved = MOVED_KEYS.get((section, inner))
                    if moved is not None:
                        raise ConfigError(
                            key(section, inner),
                            f"moved: set {key(*moved.split('.'))} instead (one GPU description for every platform)",
                        )
            continue
        owners = _owners(section)
        raise ConfigError(
            key(section),
            f"belongs to platform {' or '.join(owners)}, not {platform}; remove it (`pulumi config rm {key(section)}`)",
        )
    for choice in ("toolkit", "sharing"):
        value = data.get(choice)
        allowed = tuple(getattr(variant.model_fields[choice].annotation, "__args__", ()))
        if value is not None and value not in allowed:
            shown = repr(value) if isinstance(value, (str, int, float, bool)) else "a " + type(value).__name__
            reason = WRONG_CHOICE.get((platform, choice, str(value))) or WRONG_CHOICE.get((platform, choice, "*"))
            if reason is None:
                reason = f"expected {' or '.join(repr(v) for v in allowed)}"
            raise ConfigError(key(choice), f"{shown} on platform {platform}: {reason}")
    return variant


def first_error(err: ValidationError, variant: type[Stack]) -> ConfigError:
    """One line from pydantic's first error, in this project's words: the full key, what is wrong, the fix."""
    e = err.errors()[0]  # pydantic reports in field order: the same fault every run
    loc: list[str | int] = [p for p in e["loc"] if not (isinstance(p, str) and p.startswith(("function-", "list[")))]
    if loc and loc[0] in VARIANTS:  # the discriminated union puts the platform first
        loc = loc[1:]
    secret = _is_secret(loc)
    full_key = path_key(variant, loc)
    shown = "the value" if secret else _shown(e.get("input"))
    kind, ctx = e["type"], e.get("ctx") or {}
    if kind == "extra_forbidden":
        parent_fields = fields_at(variant, [str(p) for p in loc[:-1]])
        close = difflib.get_close_matches(str(loc[-1]), parent_fields, n=1)
        known = f"known keys: {', '.join(sorted(parent_fields))}"
        hint = f"did you mean {key(*loc[:-1], close[0])}?" if close else known
        return ConfigError(full_key, f"unknown key; {hint}")
    if kind == "missing":
        return ConfigError(full_key, _missing(variant, [str(p) for p in loc]))
    messages = {
        "int_parsing": f"{shown} is not a whole number; give one such as 3",
        "int_type": f"{shown} is not a whole number; give one such as 3",
        "int_from_float": f"{shown} is not a whole number; give one such as {_round(e.get('input'))}",
        "int_parsing_size": f"{shown} is far too large a number; see `{full_key}`'s bounds in docs/configuration.md",
        "float_parsing": f"{shown} is not a number; give one such as 3",
        "float_type": f"{shown} is not a number; give one such as 3",
        "finite_number": f"{shown} is not a finite number; give one such as 3",
        "bool_parsing": f"{shown} is not true or false; give one of the two",
        "bool_type": f"{shown} is not true or false; give one of the two",
        "string_type": "is not text; quote it",
        "greater_than": f"{shown} is too small; give more than {ctx.get('gt')}",
        "greater_than_equal": f"{shown} is too small; give at least {ctx.get('ge')}",
        "less_than": f"{shown} is too large; give less than {ctx.get('lt')}",
        "less_than_equal": f"{shown} is too large; give at most {ctx.get('le')}",
        "too_short": f"needs at least {ctx.get('min_length')} item(s); add one",
        "too_long": f"has more than {ctx.get('max_length')} items; remove some",
        "string_too_short": f"is empty; give at least {ctx.get('min_length')} character(s)",
        "string_too_long": f"is longer than {ctx.get('max_length')} characters; shorten it",
        "list_type": f"{shown} is not a list; write it as a YAML list (`[a, b]` or `- a` lines)",
        "dict_type": f"{shown} is not a mapping; write it as `key: value` lines under it",
        "model_type": f"{shown} is not a section; write it as `key: value` lines under it",
        "model_attributes_type": f"{shown} is not a section; write it as `key: value` lines under it",
        "literal_error": f"{shown} is not allowed; expected {ctx.get('expected', '')}".rstrip(),
        "union_tag_invalid": f"{shown} is not allowed; expected {ctx.get('expected_tags', '')}",
    }
    if kind in ("int_parsing", "float_parsing") and e.get("input") in ("true", "false"):
        return ConfigError(full_key, f"{e['input']} is a yes/no, not a number; give a number")
    if kind == "value_error":
        message = str(ctx.get("error", e["msg"])).removeprefix("Value error, ")
        given = e.get("input")
        if isinstance(given, str) and repr(given) != quoted(given):  # a check that quoted it whole: cut or hide
            message = message.replace(repr(given), quoted(given))
        if isinstance(given, str) and may_hold_credential(given) and given in message:
            message = "is not valid here, and looks like a credential, so it is not shown; see docs/configuration.md"
        return ConfigError(full_key, message)
    if kind in messages:
        return ConfigError(full_key, messages[kind])
    return ConfigError(full_key, f"{shown} is not valid here; see `{full_key}` in the README's config reference")


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def path_key(variant: type[BaseModel], loc: list[str | int]) -> str:
    """The key as `pulumi config set --path` takes it: fields dotted, list items `[0]`, map entries `["docker.io"]`."""
    text = ""
    model: type[BaseModel] | None = variant
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
            continue
        field = next((f for n, f in model.model_fields.items() if alias(n) == part), None) if model else None
        if (field is None and model is None) or not _IDENTIFIER.fullmatch(part):
            text += f"[{json.dumps(part)}]"  # an entry of a map (registryMirrors, nodeLabel), or a key that is no name
        else:
            text += f".{part}" if text else part
        model = model_of(field.annotation) if field is not None else None
    return f"{NAMESPACE}:{text}"


def _shown(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return f"a {'list' if isinstance(value, list) else 'mapping'}"
    if isinstance(value, str):
        return quoted(value)
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "…"


def _round(value: Any) -> str:
    try:
        return str(round(float(value)))
    except (TypeError, ValueError, OverflowError):
        return "3"


def _is_secret(loc: list[str | int]) -> bool:
    return len(loc) >= 2 and (str(loc[0]), str(loc[1])) in SECRET_KEYS


def _missing(variant: type[Stack], loc: list[str]) -> str:
    platform = next(p for p, v in VARIANTS.items() if v is variant)
    if len(loc) == 2 and (loc[0], loc[1]) in SECRET_KEYS:
        return (
            f"required for platform {platform}; set it as a secret: `pulumi config set --secret --path "
            f"{key(*loc)} {SECRET_KEYS[(loc[0], loc[1])]}`"
        )
    model = _model_at(variant, loc[:-1])
    field = next((f for n, f in model.model_fields.items() if alias(n) == loc[-1]), None) if model else None
    described = attribute_docs(model).get(_name_of(model, loc[-1]) or "") if model else None
    doc = f" ({described.rstrip('.')})" if described else ""
    section = model_of(field.annotation) if field else None
    if section is not None:
        needed = [alias(n) for n, f in section.model_fields.items() if f.is_required()]
        example = " and ".join(f"`pulumi config set --path {key(*loc, n)} …`" for n in needed)
        if tuple(loc) == ("cluster",):
            example = (
                "`pulumi config set --path gpushare:cluster.kubeconfigPath ~/.kube/config`, or the file as a "
                "secret: `pulumi config set --secret --path gpushare:cluster.kubeconfig < ~/.kube/config`"
            )
        return f"required for platform {platform}{doc}; set {example or 'its keys (docs/configuration.md)'}"
    return f"required for platform {platform}{doc}; set it with `pulumi config set --path {key(*loc)} …`"


def _name_of(model: type[BaseModel], key_: str) -> str | None:
    return next((n for n in model.model_fields if alias(n) == key_), None)


def _model_at(variant: type[BaseModel], loc: list[str]) -> type[BaseModel] | None:
    model: type[BaseModel] | None = variant
    for part in loc:
        if model is None:
            return None
        field = next((f for n, f in model.model_fields.items() if alias(n) == part), None)
        if field is None:
            return None
        model = model_of(field.annotation)
    return model


def fields_at(variant: type[BaseModel], loc: list[str]) -> list[str]:
    model = _model_at(variant, loc)
    return [alias(n) for n in model.model_fields] if model else []


def model_of(annotation: Any) -> type[BaseModel] | None:
    for candidate in (annotation, *getattr(annotation, "__args__", ())):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel) and candidate is not SecretStr:
            return candidate
    return None


def _close_namespace(namespace: str) -> bool:
    return namespace != NAMESPACE and difflib.SequenceMatcher(None, namespace, NAMESPACE).ratio() >= 0.8


def engine_value(value: Any) -> Any:
    """A top-level stack-file value as the engine hands it to the program: text (a mapping or list stays)."""
    if isinstance(value, (str, dict, list)):
        return value
    if isinstance(value, bool):
        return str(value).lower()
    return json.dumps(value) if isinstance(value, (int, float)) or value is None else str(value)


def check_stack_config(config: Mapping[str, Any]) -> StackConfig | None:
    """A stack file's config (YAML values, `-c` applied) checked as the program will check it, or None for a stack
    that sets no `gpushare:` key (a program that is not this one): the plan's first step, before Pulumi loads."""
    if not any(str(name).startswith(f"{NAMESPACE}:") for name in config):
        return None
    return parse({str(name): engine_value(value) for name, value in config.items()})


def parse(raw: Mapping[str, Any]) -> StackConfig:
    """Validate `gpushare:`-namespaced values (strings hold JSON, as Pulumi passes them) into a StackConfig."""
    data: dict[str, Any] = {}
    for full_key in sorted(raw):
        value = raw[full_key]
        namespace, _, name = full_key.partition(":")
        if _close_namespace(namespace):
            raise ConfigError(full_key, f"unknown namespace {namespace!r}; did you mean {key(name)}?")
        if namespace != NAMESPACE:
            continue
        if isinstance(value, str):
            try:
                decoded = json.loads(value)
                value = decoded if isinstance(decoded, (dict, list)) else value
            except json.JSONDecodeError:
                pass
        data[name] = value
    variant = check_shape(data)
    try:
        cfg = _ADAPTER.validate_python(data, by_alias=True, by_name=False)
    except ValidationError as err:
        raise first_error(err, variant) from None
    cfg.check()
    return cfg
