"""The base of every typed section a component takes and config validates, and the value types they share.

A section is declared once, beside the component that reads it (`components/<layer>/settings.py`); the config
models compose those sections, so a setting has one type, one default and one docstring. Nothing here imports
Pulumi: config is checked before the program or the engine is loaded.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, get_args

from pydantic import AfterValidator, AliasGenerator, BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from components import validate

NAMESPACE = "gpushare"
"""The config namespace: every key is `gpushare:<key>`."""
SYSTEM_NAMESPACES = frozenset({"kube-system", "default", "kube-public", "kube-node-lease"})
"""Namespaces every cluster has and owns: a release may go into one, but the stack never creates or deletes them."""


def alias(field_name: str) -> str:
    """camelCase with units kept readable: `gpu_memory_mib` → `gpuMemoryMiB`."""
    first, *rest = field_name.split("_")
    camel = first + "".join(part[:1].upper() + part[1:] for part in rest)
    return camel.replace("Mib", "MiB").replace("Gib", "GiB")


def key(*path: str | int) -> str:
    """The full key as `pulumi config set --path` takes it: `gpushare:verify.sweepGiB[0]`."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        elif text and not _PLAIN.fullmatch(part):
            text += f"[{json.dumps(part)}]"
        else:
            text += f".{part}" if text else json.dumps(part)[1:-1]  # one line, whatever the key holds
    return f"{NAMESPACE}:{text}" if text else NAMESPACE


_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class Settings(BaseModel):
    """Frozen, camelCase keys, unknown keys refused, defaults validated.

    A field's docstring is its documentation (`attribute_docs`), read from the source only when asked: pydantic's
    `use_attribute_docstrings` would parse every class's source on import, a quarter of a refusal's time.
    """

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        alias_generator=AliasGenerator(validation_alias=alias, serialization_alias=alias),
        validate_default=True,
        # Python builds a section by field name (`HamiConfig(device_split_count=3)`); config reads only the
        # camelCase keys (`read.parse` validates with by_name=False).
        validate_by_name=True,
        validate_by_alias=True,
    )

    @model_validator(mode="before")
    @classmethod
    def _no_yes_no_for_a_number(cls, data: Any) -> Any:
        # pydantic reads true as 1: a count or size written as true/false is refused as what it is.
        if isinstance(data, dict):
            for name in numeric_fields(cls):
                if isinstance(data.get(alias(name)), bool):
                    data = {**data, alias(name): str(data[alias(name)]).lower()}
        return data


def _no_yes_no(value: Any) -> Any:
    # pydantic reads true as 1; a count, size or price written as true/false is refused as what it is.
    if isinstance(value, bool):
        raise ValueError(f"{str(value).lower()} is a yes/no, not a number; give a number")
    return value


def _text(value: Any) -> Any:
    # YAML reads 2.9 as a number, 2026-01-01 as a date and !!binary as bytes: text must be written as text.
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        raise ValueError(f'{value!r} was read as a number; quote it ("{value}") so it stays text')
    if isinstance(value, bool):
        raise ValueError(f'{str(value).lower()} was read as a yes/no; quote it ("{str(value).lower()}")')
    if value is None:
        raise ValueError("is empty (null); give a value, or remove the key to take the default")
    if isinstance(value, (dict, list)):
        raise ValueError(f"a {'list' if isinstance(value, list) else 'mapping'} where text belongs; give one value")
    raise ValueError(f"YAML read this as {_yaml_kind(value)}, not text; quote it")


def _yaml_kind(value: Any) -> str:
    kinds = {"date": "a date", "datetime": "a timestamp", "bytes": "binary data (!!binary)"}
    return kinds.get(type(value).__name__, "another type")


def _checked(check: Any, *args: Any) -> AfterValidator:
    return AfterValidator(lambda value: check(value, *args))


Text = Annotated[str, BeforeValidator(_text)]
"""Text, refusing what YAML turned into a number, a date, a yes/no or bytes (with `quote it`)."""
Count = Annotated[int, BeforeValidator(_no_yes_no)]
"""A whole number, refusing true/false."""
K8sNamespace = Annotated[str, BeforeValidator(_text), _checked(validate.dns_label, "namespace")]
Labels = Annotated[dict[Text, Text], AfterValidator(validate.labels)]
GceZone = Annotated[str, BeforeValidator(_text), AfterValidator(validate.gce_zone)]
MachineType = Annotated[str, BeforeValidator(_text), AfterValidator(validate.gce_machine_type)]
Accelerator = Annotated[str, BeforeValidator(_text), AfterValidator(validate.accelerator)]
ImageRef = Annotated[str, BeforeValidator(_text), AfterValidator(validate.image_reference)]
Registry = Annotated[str, BeforeValidator(_text), AfterValidator(validate.registry)]
LinuxUser = Annotated[str, BeforeValidator(_text), AfterValidator(validate.linux_user)]
AbsolutePath = Annotated[str, BeforeValidator(_text), AfterValidator(validate.absolute_path)]
Port = Annotated[int, BeforeValidator(_no_yes_no), AfterValidator(validate.port)]
# At most 256 GiB: gpu.memoryMiB's own bound (262144 MiB); a larger figure fits no card, and 1e308 overflows MiB.
FiniteGiB = Annotated[float, BeforeValidator(_no_yes_no), Field(gt=0, le=256, allow_inf_nan=False)]
HourlyUsd = Annotated[float, BeforeValidator(_no_yes_no), Field(ge=0, le=10_000, allow_inf_nan=False)]


def attribute_docs(model: type[BaseModel]) -> dict[str, str]:
    """Field name → the docstring under it in the class body (a subclass's own wins), on one line."""
    import ast  # here: only the generated docs and a `required` message read them
    import inspect
    import itertools
    import textwrap

    docs: dict[str, str] = {}
    for cls in reversed([c for c in model.__mro__ if issubclass(c, BaseModel) and c is not BaseModel]):
        try:
            body = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0].body  # type: ignore[attr-defined]
        except (OSError, TypeError, IndexError, AttributeError):
            continue
        for node, after in itertools.pairwise(body):
            if (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                docs[node.target.id] = " ".join(after.value.value.split())
    return docs


def checked(check: Any, *args: Any) -> AfterValidator:
    """`check(value, *args)` after type validation: a validate.py check with its own wording."""
    return _checked(check, *args)


def numeric_fields(model: type[BaseModel]) -> set[str]:
    """Fields that hold a number: pydantic would read true as 1 in them."""
    return {n for n, f in model.model_fields.items() if {int, float} & {f.annotation, *get_args(f.annotation)}}
