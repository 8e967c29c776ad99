"""A `python -m` command run by a Python that lacks the project's packages: one line saying how to set up.

Standard library only, and cheap: the project's packages install it from their __init__.py, the stdlib-only tools
(the probes, the host-key read) included, which it leaves alone. It acts only on a `python -m` run of one of the
project's modules, and only on the import of a package the project depends on failing uncaught: any other error
keeps its traceback.
"""

from __future__ import annotations

import sys
from types import TracebackType

SETUP = "python3 -m venv .venv && .venv/bin/pip install -c constraints.txt -e '.[dev]'"
"""The README's set-up command."""
AUDIT_SETUP = "python3 -m venv .venv && .venv/bin/pip install -c constraints.txt -e '.[audit]'"
DEPENDENCIES = frozenset({
    "yaml", "pydantic", "pydantic_core", "pulumi", "pulumi_gcp", "pulumi_kubernetes", "pulumi_tls", "pulumi_command",
    "ahocorasick", "google", "grpc", "pulumi_policy", "kubernetes", "kubernetes_validate", "celpy", "jsonschema",
    "hypothesis", "pytest", "packaging", "urllib3",
})  # fmt: skip
"""The import names of pyproject.toml's dependencies and extras (tests/test_cli_help.py keeps them complete)."""


def hint(missing: str, command: str, python: str = sys.executable) -> str:
    """The line for `python -m command` failing to import `missing`."""
    setup = AUDIT_SETUP if missing == "kubernetes" and command == "components.audit" else SETUP
    too_old = "" if sys.version_info >= (3, 11) else f" (and it is Python {sys.version.split()[0]}: 3.11 or newer)"
    return (
        f"error: python -m {command} needs the project's packages, and {python} has no {missing}{too_old}; set up "
        f"a virtualenv at the repository root: {setup}, then run .venv/bin/python -m {command}"
    )


def _launched() -> str | None:
    """The module of this `python -m` run when it is one of the project's (sys.orig_argv: the command as typed)."""
    argv = getattr(sys, "orig_argv", [])
    module = argv[argv.index("-m") + 1] if "-m" in argv[:-1] else ""
    return module.removesuffix(".__main__") if module.split(".")[0] in ("components", "policies", "tests") else None


def install() -> None:
    """Wrap sys.excepthook for a `python -m` run of one of the project's modules, once."""
    command = _launched()
    if command is None or sys.excepthook is not sys.__excepthook__:
        return

    def excepthook(kind: type[BaseException], error: BaseException, traceback: TracebackType | None) -> None:
        missing = (getattr(error, "name", None) or "").split(".")[0]
        if isinstance(error, ModuleNotFoundError) and missing in DEPENDENCIES:
            print(hint(missing, command), file=sys.stderr)
            return  # the interpreter still exits 1
        sys.__excepthook__(kind, error, traceback)

    sys.excepthook = excepthook
