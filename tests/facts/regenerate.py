"""Facts the tests check against, taken once from the pinned upstream sources, so that a clone runs every check.

    python -m tests.facts.regenerate                  # rewrite tests/facts/ from ../shared
    python -m tests.facts.regenerate --check          # exit 1 when a committed file differs from ../shared
    python -m tests.facts.regenerate --shared DIR     # read another copy of the shared folder

Each pinned chart's `values.yaml` (../shared/reference/charts/<chart>-<version>/) becomes
tests/facts/charts/<chart>-<version>.json: every value key with its default, nested as the chart nests them (so
keys holding dots stay one key), and the chart's image maps. A multi-line default keeps its type and length, not
its text. The OOM lines the labs recorded (../shared/seeds/*.md) become tests/facts/oom_lines.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import yaml

FACTS = Path(__file__).resolve().parent
ROOT = FACTS.parent.parent
SHARED = ROOT.parent / "shared"
CHARTS = FACTS / "charts"
OOM_LINES = FACTS / "oom_lines.json"


def _default(value: Any) -> Any:
    """A default as the facts keep it: maps and lists walked, a multi-line string reduced to its type and length."""
    if isinstance(value, dict):
        return {key: _default(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_default(item) for item in value]
    if isinstance(value, str) and "\n" in value:
        return f"<multi-line string, {len(value)} characters, not copied>"
    return value


def image_maps(values: Any, path: tuple[str, ...] = ()) -> list[list[str]]:
    """Every map that spells an image: one with a `repository` string, or an `…image`/`…Image` map with a `name`."""
    found: list[list[str]] = []
    if isinstance(values, dict):
        named = bool(path) and path[-1].lower().endswith("image") and "name" in values
        if isinstance(values.get("repository"), str) or named:
            found.append(list(path))
        for key, value in values.items():
            found += image_maps(value, (*path, key))
    return found


def chart_facts(values_yaml: Path) -> dict[str, Any]:
    text = values_yaml.read_bytes()
    values = _default(yaml.safe_load(text) or {})
    return {
        "chart": values_yaml.parent.name,
        "from": f"../shared/reference/charts/{values_yaml.parent.name}/values.yaml",
        "sha256": hashlib.sha256(text).hexdigest(),
        "imageMaps": image_maps(values),
        "values": values,
    }


def oom_lines(seeds: Path) -> dict[str, Any]:
    lines = {
        seed.name: [line for line in seed.read_text().splitlines() if line.startswith("[HAMI-core") and "OOM" in line]
        for seed in sorted(seeds.glob("*.md"))
    }
    return {"from": "../shared/seeds/*.md", "lines": {name: found for name, found in lines.items() if found}}


def rendered(shared: Path) -> dict[Path, str]:
    """Every facts file, as its text, from the shared folder."""
    out = {CHARTS / f"{d.name}.json": _dump(chart_facts(d / "values.yaml"))
           for d in sorted((shared / "reference" / "charts").iterdir()) if (d / "values.yaml").is_file()}  # fmt: skip
    out[OOM_LINES] = _dump(oom_lines(shared / "seeds"))
    return out


def _dump(data: Any) -> str:
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.facts.regenerate", description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=SHARED, help="the shared folder (default: ../shared)")
    parser.add_argument("--check", action="store_true", help="fail on a difference instead of writing")
    args = parser.parse_args(argv)
    if not (args.shared / "reference" / "charts").is_dir() or not (args.shared / "seeds").is_dir():
        print(
            f"error: {args.shared} has no reference/charts/ and seeds/; give the shared folder with --shared",
            file=sys.stderr,
        )
        return 2
    files = rendered(args.shared)
    if args.check:
        stale = [str(p.relative_to(ROOT)) for p, text in files.items() if not p.is_file() or p.read_text() != text]
        for path in stale:
            print(f"differs from {args.shared}: {path}", file=sys.stderr)
        return 1 if stale else 0
    CHARTS.mkdir(parents=True, exist_ok=True)
    for path, text in files.items():
        path.write_text(text)
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
