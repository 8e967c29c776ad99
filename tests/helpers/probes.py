"""Load a probe file by path, as `python3 /gpushare/<name>.py` runs it in a Pod (not as a package module)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

PROBES = Path(__file__).resolve().parent.parent.parent / "components" / "incluster"


def load_probe(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"gpushare_probe_{name}", PROBES / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
