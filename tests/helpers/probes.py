"""The in-cluster modules as the tests load and run them: modules of the package, never files by path."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent.parent
PROBES = ROOT / "components" / "incluster" / "probes"
PACKAGE = "components.incluster.probes"


def load_probe(name: str) -> ModuleType:
    return importlib.import_module(f"{PACKAGE}.{name}")


def module_argv(name: str, *args: str) -> list[str]:
    """`python -m components.incluster.probes.<name> ARGS`, run with the repository root as cwd (`cwd=ROOT`)."""
    return [sys.executable, "-m", f"{PACKAGE}.{name}", *args]
