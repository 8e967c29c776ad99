"""Golden plans: `python -m tests.golden.regenerate` rewrites tests/golden/<name>.json; `--check` diffs them.

A PR's diff of these files is its preview diff, without credentials. Multi-line strings (scripts, probe sources)
are written one line an element, so a change to them shows as changed lines; made-up values read as unknown.
Each stack has a second golden plan, `<stack>-mirrored.json`: the same stack behind registry mirrors and a
private chart registry.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from typing import Any

from components.plan import EXAMPLE_STACKS, ROOT, run
from components.plan_view import golden as golden_form
from components.plan_view.golden import GOLDEN_DIR

GOLDEN = GOLDEN_DIR

MIRROR_HOST = "harbor.example.com"
MIRROR_PROJECTS = {
    "docker.io": "dockerhub",
    "nvcr.io": "nvcr",
    "ghcr.io": "ghcr",
    "registry.k8s.io": "k8s",
    "reg.kyverno.io": "kyverno",
    "registry.cn-hangzhou.aliyuncs.com": "aliyun",
}
"""Each upstream registry's mirror project."""


def _config(stack: str) -> Any:
    from components.config import parse
    from components.plan import _as_pulumi_config, read_stack_config

    config, _ = read_stack_config(stack, [])
    return parse(_as_pulumi_config(config))


def chart_sources(stack: str) -> list[str]:
    """Every chart the stack installs from oci://harbor.example.com/charts."""
    from components.config import alias

    return [
        f"gpushare:chartSources.{alias(chart)}.repository=oci://{MIRROR_HOST}/charts"
        for chart in _config(stack).chart_pins()
    ]


def registry_mirrors(stack: str) -> str:
    """Every upstream registry the stack pulls from through its own mirror project (no mirror for one it never
    pulls from: config refuses that)."""
    from components.config.shared import image_hosts

    hosts = sorted(image_hosts(_config(stack)))
    missing = [h for h in hosts if h not in MIRROR_PROJECTS]
    assert not missing, f"no mirror project for {missing}"
    mirrors = ", ".join(f'"{host}": "{MIRROR_HOST}/{MIRROR_PROJECTS[host]}"' for host in hosts)
    return f"gpushare:registryMirrors={{{mirrors}}}"


def mirrored(stack: str) -> list[str]:
    """The stack behind registry mirrors and a private chart registry."""
    return [registry_mirrors(stack), *chart_sources(stack)]


def variants() -> dict[str, tuple[str, list[str]]]:
    """Golden file name → (stack, `-c` overrides): each stack as shipped, and mirrored."""
    found: dict[str, tuple[str, list[str]]] = {}
    for stack in EXAMPLE_STACKS:
        found[stack] = (stack, [])
        found[f"{stack}-mirrored"] = (stack, mirrored(stack))
    return found


def render(stack: str, overrides: list[str] | None = None) -> str:
    return golden_form.render(run(stack, overrides or [], root=ROOT))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.golden.regenerate", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail with a diff instead of rewriting")
    args = parser.parse_args(argv)
    drift = False
    for name, (stack, overrides) in variants().items():
        path = GOLDEN / f"{name}.json"
        fresh = render(stack, overrides)
        if not args.check:
            path.write_text(fresh)
            print(f"wrote {path.relative_to(ROOT)}")
            continue
        old = path.read_text() if path.exists() else ""
        if old != fresh:
            drift = True
            sys.stdout.writelines(
                difflib.unified_diff(
                    old.splitlines(True), fresh.splitlines(True), f"golden/{name}.json", f"planned/{name}.json"
                )
            )
    return 1 if drift else 0


if __name__ == "__main__":
    sys.exit(main())
