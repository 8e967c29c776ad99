"""Golden plans: each stack's plan as committed in tests/golden/, in the form a pull request's diff reads well.

The golden form is the `--json` contract with two changes: every value the mocks made up reads as unknown
(`(known after create)`), and every multi-line string (a script, a cloud-init file, a probe's source) is written
as `{"$lines": [...]}`, one line an element, so a change to it shows as changed lines in the file's diff; one that
is a file of this repository (a probe's source shipped in a ConfigMap) as `{"$file": path, "sha256": ...}`, since
the pull request's own diff of that file shows its lines.
"""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path
from typing import Any

from components.plan_view.model import Plan
from components.plan_view.unknowns import mask

REPO = Path(__file__).resolve().parent.parent.parent
GOLDEN_DIR = REPO / "tests" / "golden"
LINES = "$lines"
FILE = "$file"


@functools.cache
def _repo_files() -> dict[str, str]:
    """The text of each Python file under components/ → its path in the repository."""
    return {path.read_text(): path.relative_to(REPO).as_posix() for path in sorted((REPO / "components").rglob("*.py"))}


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def is_file_ref(value: Any) -> bool:
    return isinstance(value, dict) and set(value) == {FILE, "sha256", "lines"}


def _file_ref(text: str) -> dict[str, Any]:
    return {FILE: _repo_files()[text], "sha256": digest(text), "lines": text.count("\n")}


def as_lines(value: Any) -> Any:
    """Multi-line strings as `{"$lines": [...]}`, at any depth."""
    if isinstance(value, dict):
        return {k: as_lines(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_lines(v) for v in value]
    if isinstance(value, str) and "\n" in value:
        return _file_ref(value) if value in _repo_files() else {LINES: value.split("\n")}
    return value


def with_file_refs(value: Any) -> Any:
    """`from_lines(as_lines(value))` in one walk: a repository file's text as its reference, other text as it is."""
    if isinstance(value, dict):
        return {k: with_file_refs(v) for k, v in value.items()}
    if isinstance(value, list):
        return [with_file_refs(v) for v in value]
    if isinstance(value, str) and "\n" in value and value in _repo_files():
        return _file_ref(value)
    return value


def from_lines(value: Any) -> Any:
    """The reverse of `as_lines`: the plan's own values."""
    if isinstance(value, dict):
        if set(value) == {LINES} and isinstance(value[LINES], list):
            return "\n".join(value[LINES])
        return {k: from_lines(v) for k, v in value.items()}
    if isinstance(value, list):
        return [from_lines(v) for v in value]
    return value


def _masked(document: dict[str, Any], plan: Plan) -> dict[str, Any]:
    """`document` (a plan contract) with every value `plan`'s mocks made up shown as unknown."""
    document = {**document, "resources": [dict(r) for r in document["resources"]]}
    for resource in document["resources"]:
        resource["inputs"] = mask(resource["inputs"], plan.invented)
        # A replacementTrigger may carry what a read at `up` returns (the proof Pods' pinned card).
        resource["options"] = mask(resource.get("options") or {}, plan.invented)
    document["outputs"] = mask(document["outputs"], plan.invented)
    return document


def masked(plan: Plan) -> dict[str, Any]:
    """The contract with every made-up value shown as unknown (the pointers in unknownInputs still say where)."""
    return _masked(plan.as_dict(), plan)


def comparable(base: dict[str, Any], plan: Plan) -> dict[str, Any]:
    """A plan to compare `plan` with, in `compared`'s form: a golden plan as it is, a `--json` plan with the values
    the same mocks made up masked and this repository's files as references, so an unchanged config is `same`."""
    return with_file_refs(_masked(base, plan))


def sanitize(plan: Plan) -> dict[str, Any]:
    """The golden form of a plan."""
    return as_lines(masked(plan))


def compared(plan: Plan) -> dict[str, Any]:
    """The golden form of a plan as `golden_plan` reads one back (`from_lines(sanitize(plan))`), to compare them."""
    return with_file_refs(masked(plan))


def render(plan: Plan) -> str:
    return json.dumps(sanitize(plan), indent=2, sort_keys=True) + "\n"


def golden_plan(stack: str, directory: Path = GOLDEN_DIR) -> dict[str, Any] | None:
    """The committed plan of a stack's file in the plan's own values, if there is one."""
    path = directory / f"{stack}.json" if directory.is_dir() else directory
    if not path.exists():
        return None
    loaded: dict[str, Any] = from_lines(json.loads(path.read_text()))
    return loaded
