"""Golden plans: each stack's plan as committed in tests/golden/, long strings replaced by their digest."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

GOLDEN_DIR = Path(__file__).resolve().parent.parent.parent / "tests" / "golden"
LONG = 400


def sanitize(value: Any) -> Any:
    """Digests for long strings; everything else as planned (the mocks already make the plan deterministic)."""
    if isinstance(value, dict):
        return {k: sanitize(v) for k, v in value.items()}
    if isinstance(value, list):
        return [sanitize(v) for v in value]
    if isinstance(value, str) and len(value) > LONG:
        digest = hashlib.sha256(value.encode()).hexdigest()[:16]
        return f"<{len(value)} chars sha256:{digest}>"
    return value


def golden_plan(stack: str, directory: Path = GOLDEN_DIR) -> dict[str, Any] | None:
    """The committed plan of a stack's file, if there is one; a plan with -c overrides shows what they change."""
    path = directory / f"{stack}.json"
    if not path.exists():
        return None
    loaded: dict[str, Any] = json.loads(path.read_text())
    return loaded
