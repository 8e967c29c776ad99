"""The config reference table of docs/configuration.md, generated from the models.

python -m components.config_doc            # print the table
python -m components.config_doc --write    # rewrite it in docs/configuration.md between the markers
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from components import config
from components.contracts.settings import attribute_docs

BEGIN = "<!-- config-reference:begin -->"
END = "<!-- config-reference:end -->"
FIRST = ("platform", "toolkit", "sharing")
ORDER = (
    "toolkit",
    "sharing",
    "gke",
    "vm",
    "host",
    "k3s",
    "cluster",
    "gpu",
    "kai",
    "isolator",
    "gkeCdi",
    "gkeSharing",
    "hami",
    "gpuOperator",
    "imageRegistry",
    "registryMirrors",
    "chartSources",
    "verify",
    "guard",
)
"""The choices lead; then the platforms' own sections, the cards, the GPU software, the mirrors, the proof and
the admission guard."""
PLATFORM_ROW = (
    "`gpushare:platform`",
    "all",
    "required",
    "Where Kubernetes comes from: {}; it decides which other keys exist.",
)


def field_docs(model: type[BaseModel]) -> dict[str, str]:
    """Each field's attribute docstring, as pydantic keeps it (`use_attribute_docstrings`), on one line."""
    found = attribute_docs(model)
    return {name: found[name] for name in model.model_fields if name in found}


def _default(field: Any) -> str:
    if field.default_factory is not None:
        value = field.default_factory()
    elif field.default is PydanticUndefined:
        return "required"
    else:
        value = field.default
    if isinstance(value, BaseModel):
        return "(section)"
    if value is None:
        return "—"
    if isinstance(value, str):
        return f"`{value}`" if value else '`""`'
    return f"`{json.dumps(value)}`"


def _ordered(model: type[BaseModel]) -> list[str]:
    names = list(model.model_fields)
    return [n for n in FIRST if n in names] + [n for n in names if n not in FIRST]


def _rows(model: type[BaseModel], prefix: str) -> list[tuple[str, str, str]]:
    docs = field_docs(model)
    rows: list[tuple[str, str, str]] = []
    for name in _ordered(model):
        field = model.model_fields[name]
        if name == "platform":
            continue
        key = f"{prefix}{config.alias(name)}"
        section = config.model_of(field.annotation)
        if section is not None:
            rows.extend(_rows(section, f"{key}."))
            continue
        default = _default(field)
        choices = getattr(field.annotation, "__args__", ()) if name in FIRST else ()
        if len(choices) > 1:
            default = f"{default} (or {' or '.join(f'`{v}`' for v in choices if f'`{v}`' != default)})"
        rows.append((key, default, docs.get(name, "")))
    return rows


def reference_markdown() -> str:
    """One row per key and default, with the platforms that read it."""
    platforms: dict[tuple[str, str, str], list[str]] = {}
    for platform, variant in config.VARIANTS.items():
        for row in _rows(variant, f"{config.NAMESPACE}:"):
            platforms.setdefault(row, []).append(platform)
    lines = [BEGIN, "| key | platforms | default | meaning |", "|---|---|---|---|"]
    key, where, default, meaning = PLATFORM_ROW
    lines.append(f"| {key} | {where} | {default} | {meaning.format(', '.join(config.PLATFORMS))} |")
    everywhere = len(config.VARIANTS)

    def place(row: tuple[str, str, str]) -> int:
        return ORDER.index(row[0].removeprefix(f"{config.NAMESPACE}:").split(".")[0])

    for (key, default, meaning), readers in sorted(platforms.items(), key=lambda item: place(item[0])):
        shown = "all" if len(readers) == everywhere else ", ".join(readers)
        lines.append(f"| `{key}` | {shown} | {default} | {meaning} |")
    lines.append(END)
    return "\n".join(lines)


PAGE = Path(__file__).resolve().parent.parent / "docs" / "configuration.md"


def rewrite(path: Path = PAGE) -> None:
    text = path.read_text()
    start, end = text.index(BEGIN), text.index(END) + len(END)
    path.write_text(text[:start] + reference_markdown() + text[end:])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m components.config_doc", description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"rewrite the table in {PAGE.parent.name}/{PAGE.name}")
    if parser.parse_args(argv).write:
        rewrite()
    else:
        sys.stdout.write(reference_markdown() + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
