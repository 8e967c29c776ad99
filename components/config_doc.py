"""The config reference table in README.md, generated from the models.

    python -m components.config_doc            # print the table
    python -m components.config_doc --readme   # rewrite it in README.md between the markers
"""

from __future__ import annotations

import ast
import inspect
import itertools
import json
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from components import config

BEGIN = "<!-- config-reference:begin -->"
END = "<!-- config-reference:end -->"


def field_docs(model: type[BaseModel]) -> dict[str, str]:
    """Attribute docstrings (the string right after a field), which pydantic does not keep by default."""
    tree = ast.parse(inspect.getsource(model))
    body = tree.body[0].body  # type: ignore[attr-defined]
    docs: dict[str, str] = {}
    for node, after in itertools.pairwise(body):
        documented = isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and documented:
            docs[node.target.id] = " ".join(str(after.value.value).split())
    return docs


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


def _rows(model: type[BaseModel], prefix: str) -> list[str]:
    docs = field_docs(model)
    rows = []
    for name, field in model.model_fields.items():
        key = f"{prefix}{config._alias(name)}"
        section = config._model_of(field.annotation)
        if section is not None:
            rows.extend(_rows(section, f"{key}."))
            continue
        rows.append(f"| `{key}` | {_default(field)} | {docs.get(name, '')} |")
    return rows


def reference_markdown() -> str:
    lines = [BEGIN, "| key | default | meaning |", "|---|---|---|"]
    lines += _rows(config.StackConfig, f"{config.NAMESPACE}:")
    lines.append(END)
    return "\n".join(lines)


def rewrite_readme(path: Path) -> None:
    text = path.read_text()
    start, end = text.index(BEGIN), text.index(END) + len(END)
    path.write_text(text[:start] + reference_markdown() + text[end:])


if __name__ == "__main__":
    if "--readme" in sys.argv[1:]:
        rewrite_readme(Path(__file__).resolve().parent.parent / "README.md")
    else:
        sys.stdout.write(reference_markdown() + "\n")
