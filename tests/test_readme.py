"""The README's promises are what the tests run: its config table is current, its commands are the real ones."""

from __future__ import annotations

import re
import shlex

import pytest

from components.config_doc import BEGIN, END, reference_markdown
from components.plan import main
from tests.conftest import ROOT

README = (ROOT / "README.md").read_text()
COMMANDS = re.sub(r"\\\n\s*", " ", README)  # shell line continuations joined
CI = (ROOT / ".ci" / "run").read_text()


def test_readme_config_table_is_generated_from_the_models() -> None:
    start, end = README.index(BEGIN), README.index(END) + len(END)
    assert README[start:end] == reference_markdown(), "run: python -m components.config_doc and paste into README"


def test_ci_runs_the_readmes_setup_and_test_commands_as_written() -> None:
    setup = "python3 -m venv .venv && .venv/bin/pip install -c constraints.txt -e '.[dev]'"
    test = ".venv/bin/pytest -q"
    assert setup in README and test in README
    assert setup in CI and test in CI


PLAN_COMMANDS = re.findall(r"^\.venv/bin/python -m components\.plan (.+?)(?:\s+#.*)?$", COMMANDS, re.M)
REFUSALS = re.findall(r"^\$ \.venv/bin/python -m components\.plan (.+)\nerror: (.+)$", README, re.M)


def test_readme_shows_plan_commands_and_a_refusal() -> None:
    assert len(PLAN_COMMANDS) >= 3 and REFUSALS


@pytest.mark.parametrize("args", PLAN_COMMANDS)
def test_readme_plan_command_plans(args: str, capsys) -> None:
    assert main(shlex.split(args)) == 0
    capsys.readouterr()


@pytest.mark.parametrize(("args", "message"), REFUSALS)
def test_readme_refusal_is_what_the_plan_prints(args: str, message: str, capsys) -> None:
    assert main(shlex.split(args)) == 2
    assert capsys.readouterr().err.strip() == f"error: {message}"


HARNESS_COMMANDS = re.findall(r"^\.venv/bin/python -m policies\.harness (.+?)(?:\s+#.*)?$", COMMANDS, re.M)


@pytest.mark.parametrize("args", HARNESS_COMMANDS)
def test_readme_policy_harness_command_passes(args: str, capsys) -> None:
    from policies.harness import main as harness

    assert harness(shlex.split(args)) == 0
    capsys.readouterr()


def section(title: str) -> str:
    """A `## ` section of the README, up to the next one."""
    start = README.index(f"\n## {title}") + 1
    end = README.find("\n## ", start)
    return README[start:] if end < 0 else README[start:end]


def test_readme_sections_come_in_the_order_a_reader_needs_them() -> None:
    headings = re.findall(r"^## (.+)$", README, re.M)
    first = ["Set up", "Plan offline", "Test", "Use it for real", "Stack", "The proof", "Policy pack",
             "Air-gapped", "Configuration", "Layout"]
    order = [next(i for i, h in enumerate(headings) if h.startswith(f)) for f in first]
    assert order == sorted(order), [headings[i] for i in order]


def test_readme_layout_names_every_module_and_folder_of_components() -> None:
    layout = section("Layout")
    components = ROOT / "components"
    named = [p.name for p in components.glob("*.py") if p.name != "__init__.py"]
    named += [f"components/{p.name}/" for p in components.iterdir() if (p / "__init__.py").is_file()]
    for folder in ("compose", "contracts", "platform", "gpu", "verify"):
        named += [p.name for p in (components / folder).glob("*.py") if p.name != "__init__.py"]
    named += [p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in ROOT.glob("Pulumi.*.yaml")]
    missing = [name for name in named if name not in layout]
    assert not missing, f"README's layout does not name {missing}"


def _policy_rows(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("| `")]


def test_readme_policy_table_is_the_docs_table_of_every_rule() -> None:
    from policies.pack import RULES

    rows = _policy_rows(section("Policy pack"))
    assert rows == _policy_rows((ROOT / "docs" / "policies.md").read_text())
    assert [row.split("|")[1].strip(" `") for row in rows] == [rule.name for rule in RULES]
