"""A `-c` key as `pulumi config set --path` and `pulumi config rm --path` read it, and its value put in place.

The path after the namespace is Pulumi's property path, parsed strictly (pulumi/pulumi
sdk/go/common/resource/properties_path.go, parsePropertyPath with strict; config/map.go parseKeyPath): a name runs
to the next `.` or `[`; `[N]` is a list index (decimal, a sign allowed); `["..."]` is a key of any characters, `\\"`
standing for a quote; `[*]` is the key `*`; a `.` is followed by a name. The first step is the config key itself and
must be a name. A value goes where `config set --path` puts it (map.go Map.Set, object.go object.Set): a missing
step is made from the step after it (a list of N+1 nulls for `[N]`, a map for a name), an index may be at most the
list's length (at the length it appends), a top-level key holding a plain value is replaced by the container, and a
deeper step into a value of the other kind is refused. Removing (`=null`) is object.Delete: a missing step removes
nothing, and a list item removed closes the gap.
"""

from __future__ import annotations

import re
from typing import Any

Step = str | int
"""A map key or a list index."""

_INDEX = re.compile(r"[+-]?[0-9]+")
"""strconv.ParseInt(segment, 10, 0): decimal digits, an optional sign."""
_INT64 = range(-(2**63), 2**63)
_NAME = re.compile(r"[A-Za-z_$][A-Za-z0-9_$-]*")
"""A step shown as `.name`; any other key is shown quoted, `["docker.io"]`."""


class KeyPathError(ValueError):
    """A path Pulumi refuses too, or a value that cannot go where the path points; the message says the fix."""


def parse(path: str) -> list[Step]:
    """The steps of `path` (the key's name, namespace cut off), as ParsePropertyPathStrict returns them."""
    steps: list[Step] = []
    rest = path
    if rest.startswith("."):
        raise KeyPathError("starts with '.'; start it with the key's name, such as vm.zone")
    while rest:
        if rest[0] == ".":
            rest = rest[1:]
            if not rest:
                raise KeyPathError("ends with '.'; name the field after it, or drop the '.'")
            if rest[0] == "[":
                raise KeyPathError("has '.' before '['; drop the '.', as in vm.allowedSourceRanges[0]")
        elif rest[0] == "[" and rest[1:2] == '"':
            key, rest = _quoted(rest)
            steps.append(key)
        elif rest[0] == "[":
            end = rest.find("]")
            if end == -1:
                raise KeyPathError(f"{rest!r} has no closing ']'; close the index, as in [0]")
            segment = rest[1:end]
            if segment == "*":
                steps.append("*")
            elif _INDEX.fullmatch(segment) and int(segment) in _INT64:
                steps.append(int(segment))
            else:
                raise KeyPathError(
                    f"[{segment}] is no list index; write a number, as in [0], or quote a key, as in "
                    f"[{_quote(segment)}]"
                )
            rest = rest[end + 1 :]
        else:
            end = min((i for i in (rest.find("."), rest.find("[")) if i != -1), default=len(rest))
            steps.append(rest[:end])
            rest = rest[end:]
    return steps


def _quoted(rest: str) -> tuple[str, str]:
    """`["..."]` at the start of `rest`: the key, `\\"` read as a quote (only that escape), and what follows."""
    key, i = [], 2
    while True:
        if i >= len(rest):
            raise KeyPathError(f'{rest!r} has no closing quote; close the key, as in ["docker.io"]')
        if rest[i] == '"':
            i += 1
            break
        if rest[i] == "\\" and rest[i + 1 : i + 2] == '"':
            key.append('"')
            i += 2
        else:
            key.append(rest[i])
            i += 1
    if rest[i : i + 1] != "]":
        raise KeyPathError(f"{rest!r} has no ']' after the quoted key; write it as [\"key\"]")
    return "".join(key), rest[i + 1 :]


def _quote(key: str) -> str:
    return '"' + key.replace('"', '\\"') + '"'


def key_text(namespace: str, steps: list[Step]) -> str:
    """The full key of `steps`, written back as `--path` takes it: `gpushare:vm.allowedSourceRanges[0]`."""
    text = f"{namespace}:{steps[0]}"
    for step in steps[1:]:
        if isinstance(step, int):
            text += f"[{step}]"
        else:
            text += f".{step}" if _NAME.fullmatch(step) else f"[{_quote(step)}]"
    return text


def top_key(steps: list[Step]) -> str:
    """The config key the path starts at (map.go parseKeyPath: its first step, a non-empty name)."""
    first = steps[0] if steps else ""
    if isinstance(first, int):
        raise KeyPathError(f"starts with the index [{first}]; start it with the key's name, such as vm.zone")
    if not first:
        raise KeyPathError("names no key; write it as gpushare:key, such as gpushare:platform")
    return first


def set_value(config: dict[str, Any], namespace: str, steps: list[Step], value: Any) -> None:
    """Put `value` at `steps` under `namespace:steps[0]` in `config` (full key → value), as Map.Set does."""
    top = f"{namespace}:{top_key(steps)}"
    if len(steps) == 1:
        config[top] = value
        return
    root = config.get(top)
    if not isinstance(root, (dict, list)) or _is_secret(root):  # missing or plain: a container (object.go COMPAT)
        root = _container(steps[1])
    node: Any = root
    for depth, step in enumerate(steps[1:], start=1):
        last = depth == len(steps) - 1
        if isinstance(node, list):
            if not isinstance(step, int):
                raise KeyPathError(_mismatch(namespace, steps, depth, "a list"))
            if not 0 <= step <= len(node):
                raise KeyPathError(
                    f"index {step} is out of range: {key_text(namespace, steps[:depth])} has {len(node)} "
                    f"item{'' if len(node) == 1 else 's'}; use an index from 0 to {len(node)} (the next one appends)"
                )
            if step == len(node):
                node.append(None)
            if last:
                node[step] = value
                break
            node[step] = _step_into(node[step], namespace, steps, depth)
            node = node[step]
        else:
            if not isinstance(step, str):
                raise KeyPathError(_mismatch(namespace, steps, depth, "a map"))
            if last and not node and step == "secure" and isinstance(value, str):
                raise KeyPathError(
                    "a map whose one key is `secure` is how Pulumi writes a secret; "
                    f"set it with `pulumi config set --secret --path {key_text(namespace, steps[:depth])} VALUE`"
                )
            if last:
                node[step] = value
                break
            node[step] = _step_into(node.get(step), namespace, steps, depth)
            node = node[step]
    config[top] = root


def remove_value(config: dict[str, Any], namespace: str, steps: list[Step]) -> None:
    """Remove what `steps` names, as Map.Remove does: a step that is not there removes nothing."""
    top = f"{namespace}:{top_key(steps)}"
    if len(steps) == 1:
        config.pop(top, None)
        return
    node = config.get(top)
    for depth, step in enumerate(steps[1:], start=1):
        last = depth == len(steps) - 1
        if isinstance(node, list) and isinstance(step, int) and 0 <= step < len(node):
            if last:
                del node[step]
                return
            node = node[step]
        elif isinstance(node, dict) and isinstance(step, str) and step in node:
            if last:
                others = [k for k in node if k != step]
                if others == ["secure"] and isinstance(node["secure"], str):
                    raise KeyPathError(
                        "removing it leaves a map whose one key is `secure`, which "
                        f"is how Pulumi writes a secret; remove {key_text(namespace, steps[:depth])} whole"
                    )
                del node[step]
                return
            node = node[step]
        else:
            return


def _step_into(child: Any, namespace: str, steps: list[Step], depth: int) -> Any:
    """The container at `steps[: depth + 1]`: made for the next step where there is none (a null included)."""
    if child is None:
        return _container(steps[depth + 1])
    if not isinstance(child, (dict, list)):
        want = "a list" if isinstance(steps[depth + 1], int) else "a map"
        at = key_text(namespace, steps[: depth + 1])
        raise KeyPathError(f"{at} holds {_kind(child)}, not {want}; set {at} itself, or remove it first with =null")
    return child


def _is_secret(value: Any) -> bool:
    """`{"secure": ciphertext}`: a secret as the stack file holds it, a plain value to Map.Set (config.Value)."""
    return isinstance(value, dict) and len(value) == 1 and isinstance(value.get("secure"), str)


def _container(step: Step) -> Any:
    """object.go newContainer: a list of N+1 nulls for `[N]` (none for a negative N), else an empty map."""
    if isinstance(step, int):
        return [None] * max(step + 1, 0)
    return {}


def _mismatch(namespace: str, steps: list[Step], depth: int, holds: str) -> str:
    """A list stepped into by name, or a map by index (object.go: "key for an array must be an int")."""
    parent = key_text(namespace, steps[:depth])
    if holds == "a list":
        return f"{parent} is a list, which takes an index, not a key; write {parent}[0]"
    return f'{parent} is a map, which takes a key, not an index; write {parent}.name or {parent}["name"]'


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    return f"the string {value!r}" if isinstance(value, str) else "a plain value"
