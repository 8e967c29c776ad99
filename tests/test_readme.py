"""The README and docs/ promise what the tests run: every command they show is a real one, every link lands,
the generated tables are current, and the README stays a page a newcomer finishes."""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import pytest

from components import config_doc
from components.plan import main, read_stack_config
from tests.conftest import ROOT, STACKS
from tests.helpers import docs

README = docs.text(docs.README)
CI = (ROOT / ".ci" / "run").read_text()


def test_readme_is_a_page_a_newcomer_finishes_in_2500_words_or_fewer() -> None:
    assert len(README.split()) <= 2500


def test_readme_uses_no_lab_number_and_every_page_defines_one_before_using_it() -> None:
    assert not re.search(r"\blab \d+", README, re.I)
    for page in docs.PAGES[1:]:
        first = re.search(r"\blab (\d+)", docs.text(page))
        if first:  # the first mention is the definition: `("lab 7")` or `**lab 7** is`
            said = docs.text(page)[first.start() - 2 : first.end() + 6]
            assert '"lab' in said or "**lab" in said, f"{page.name} says {first.group(0)!r} before defining it"


def test_readme_sections_come_in_the_order_a_newcomer_needs_them() -> None:
    headings = re.findall(r"^## (.+)$", README, re.M)
    first = ["Set up", "Plan offline", "Use it for real", "Test", "Reference", "License"]
    assert [next(h for h in headings if h.startswith(f)) for f in first] == [
        h for h in headings if any(h.startswith(f) for f in first)]  # fmt: skip
    real = re.findall(r"^### (.+)$", docs.section(README, "Use it for real"), re.M)
    steps = [
        "What you need",
        "A state backend",
        "Configure",
        "Preview, then up",
        "How long",
        "Read the proof",
        "Tear it down",
        "Day two",
        "Who else is on my GPUs?",
    ]
    assert [next(i for i, h in enumerate(real) if h.startswith(s)) for s in steps] == list(range(len(steps)))


def test_readme_creates_the_stack_with_its_passphrase_before_any_stack_command() -> None:
    real = docs.section(README, "Use it for real")
    create = real.index("pulumi stack init mine")
    assert real.index("cp Pulumi.k3s.yaml Pulumi.mine.yaml") < create
    assert real.index("pulumi login --local") < real.index("export PULUMI_CONFIG_PASSPHRASE=") < create
    assert create < real.index("pulumi config set") < real.index("pulumi up") < real.index("pulumi destroy")
    assert not re.search(r"^pulumi stack (select|init) (--create )?k3s", real, re.M)  # the examples stay untouched


def test_readme_time_estimate_is_the_verifiers_own_deadline() -> None:
    from components.config import VerifyConfig
    from components.verify.collect import DEADLINE_MARGIN_SECONDS, KILL_MARGIN_SECONDS

    deadline = VerifyConfig().deadline_seconds
    minutes = (deadline + DEADLINE_MARGIN_SECONDS + KILL_MARGIN_SECONDS) / 60
    timing = docs.section(README, "How long", level=3)
    assert f"the verifier {minutes:g} min" in timing and f"`verify.deadlineSeconds` ({deadline})" in timing


def _waits(plan) -> set[str]:
    """What `up` waits for at most, as the README's table writes it: Helm's timeout, a gate's own deadline, a
    command's and the verifier's create timeout."""
    found = set()
    for r in plan.resources:
        if r["type"] == "kubernetes:helm.sh/v3:Release":
            found.add(f"{r['inputs']['timeout']} s")
        elif r["type"] == "kubernetes:batch/v1:Job":
            env = {e["name"]: e.get("value") for c in r["inputs"]["spec"]["template"]["spec"]["containers"]
                   for e in c.get("env", [])}  # fmt: skip
            found.add(f"{env['GATE_TIMEOUT']} s")
        elif create := ((r.get("options") or {}).get("customTimeouts") or {}).get("create"):
            if r["type"].startswith("command:"):
                found.add(create.replace("m", " min"))
            elif r["name"].endswith("-verifier-pod"):
                found.add(f"{int(create.removesuffix('s')) / 60:g} min")
    return found


@pytest.mark.parametrize("stack", STACKS)
def test_readme_time_table_names_every_limit_the_plan_waits_on(stack: str, plan_stack) -> None:
    timing = docs.section(README, "How long", level=3)
    row = next(line for line in timing.splitlines() if line.startswith("| ") and f"`{stack}`" in line.split("|")[1])
    waits = _waits(plan_stack(stack))
    assert waits and all(w in row.split("|")[3] for w in waits), (waits, row)


def test_readme_links_every_reference_page() -> None:
    linked = {target.split("#")[0] for target in docs.links(docs.README)}
    pages = {str(page.relative_to(ROOT)) for page in docs.PAGES[1:]}
    assert pages <= linked, pages - linked


@pytest.mark.parametrize("page", docs.PAGES, ids=lambda p: p.name)
def test_every_link_of_a_page_lands_on_a_file_and_heading_that_exist(page: Path) -> None:
    broken = []
    for target in docs.links(page):
        path, _, anchor = target.partition("#")
        where = (page.parent / path).resolve() if path else page
        if not where.exists() or (anchor and where.suffix == ".md" and anchor not in docs.anchors(where)):
            broken.append(target)
    assert not broken, f"{page.name}: {broken}"


# --- the generated parts ------------------------------------------------------------------------------------


def test_configuration_page_table_is_generated_from_the_models() -> None:
    page = config_doc.PAGE.read_text()
    start, end = page.index(config_doc.BEGIN), page.index(config_doc.END) + len(config_doc.END)
    assert page[start:end] == config_doc.reference_markdown(), "run: python -m components.config_doc --write"


def test_host_proof_page_quotes_the_recorded_run() -> None:
    from components.verify.host import record

    page = docs.text(ROOT / "docs" / "host-proof.md")
    start, end = page.index(record.README_START), page.index(record.README_END) + len(record.README_END)
    assert page[start:end] == record.readme_block(ROOT / "docs" / "host-proof" / "h200")


def test_layout_page_names_every_module_and_folder_of_components() -> None:
    layout = docs.text(ROOT / "docs" / "layout.md")
    components = ROOT / "components"
    named = [p.name for p in components.glob("*.py") if p.name != "__init__.py"]
    named += [f"components/{p.name}/" for p in components.iterdir() if (p / "__init__.py").is_file()]
    for folder in ("compose", "contracts", "platform", "gpu", "verify", "incluster"):
        named += [p.name for p in (components / folder).glob("*.py") if p.name != "__init__.py"]
    for room in sorted((components / "incluster").glob("*/__init__.py")):  # its rooms, each module of each
        named += [f"  {room.parent.name}/", *(p.name for p in room.parent.glob("*.py") if p.name != "__init__.py")]
    named += list(STACKS)
    missing = [name for name in named if name not in layout]
    assert not missing, f"docs/layout.md does not name {missing}"


def test_policy_page_table_lists_every_rule_in_the_packs_order() -> None:
    from policies.pack import RULES

    rows = [line for line in docs.text(ROOT / "docs" / "policies.md").splitlines() if line.startswith("| `")]
    assert [row.split("|")[1].strip(" `") for row in rows] == [rule.name for rule in RULES]


# --- every command shown is run, or checked against what it names --------------------------------------------


def test_ci_runs_the_readmes_setup_and_test_commands_as_written() -> None:
    setup = "python3 -m venv .venv && .venv/bin/pip install -c constraints.txt -e '.[dev]'"
    test = ".venv/bin/pytest -q"
    assert setup in README and test in README
    assert setup in CI and test in CI


REFUSALS = [(str(page.relative_to(ROOT)), args, message) for page in docs.PAGES
            for args, message in re.findall(r"^\$ \.venv/bin/python -m components\.plan (.+)\nerror: (.+)$",
                                            docs.text(page), re.M)]  # fmt: skip
PLAN_COMMANDS = [(page, args) for page, args in docs.commands(r"(?:\$ )?\.venv/bin/python -m components\.plan ")
                 if not any(args == refused for _, refused, _ in REFUSALS)]  # fmt: skip

HARNESS_COMMANDS = docs.commands(r"\.venv/bin/python -m policies\.harness ")
HOST_EXPECT_COMMANDS = docs.commands(r"python -m components\.verify\.host (?=\S+ --write-expect)")


def test_readme_and_docs_show_plan_commands_and_refusals() -> None:
    assert sum(page == "README.md" for page, _ in PLAN_COMMANDS) >= 3 and len(PLAN_COMMANDS) >= 8
    assert {page for page, _, _ in REFUSALS} >= {"README.md", "docs/stacks.md"}
    assert HARNESS_COMMANDS and HOST_EXPECT_COMMANDS


@pytest.mark.parametrize(("page", "args"), PLAN_COMMANDS)
def test_shown_plan_command_plans(page: str, args: str, capsys, tmp_path, monkeypatch) -> None:
    if shlex.split(args)[0] == OWN_STACK:  # the user's copy of an example, made as the page makes it
        from tests.test_own_stack import _own_project

        monkeypatch.chdir(_own_project(tmp_path, "k3s", (OWN_STACK,)))
    assert main(shlex.split(args)) == 0, page
    capsys.readouterr()


@pytest.mark.parametrize(("page", "args", "message"), REFUSALS)
def test_shown_refusal_is_what_the_plan_prints(page: str, args: str, message: str, capsys) -> None:
    assert main(shlex.split(args)) == 2, page
    assert capsys.readouterr().err.strip() == f"error: {message}"


@pytest.mark.parametrize(("page", "args"), HARNESS_COMMANDS)
def test_shown_policy_harness_command_passes(page: str, args: str, capsys) -> None:
    from policies.harness import main as harness

    assert harness(shlex.split(args)) == 0, page
    capsys.readouterr()


@pytest.mark.parametrize(("page", "args"), HOST_EXPECT_COMMANDS)
def test_shown_host_expectation_command_writes_the_expectation(
    page: str, args: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    from components.verify.host.__main__ import main as host

    monkeypatch.chdir(tmp_path)
    assert host(shlex.split(args)) == 0, page
    written = shlex.split(args)[shlex.split(args).index("--write-expect") + 1]
    assert (tmp_path / written).is_file() and "wrote" in capsys.readouterr().out


def test_every_module_and_script_a_page_runs_exists() -> None:
    import importlib.util

    shown = {(str(page.relative_to(ROOT)), m) for page in docs.PAGES
             for m in re.findall(r"python3? -m ([a-z_][a-z0-9_.]*)", docs.text(page))}  # fmt: skip
    # `incluster.<module>` is how a Pod names a module of the mounted package: components.incluster here.
    missing = [(page, m) for page, m in shown if m != "venv"
               and importlib.util.find_spec(re.sub(r"^incluster\.", "components.incluster.", m)) is None]  # fmt: skip
    scripts = {s for page in docs.PAGES for s in re.findall(r"\b((?:components|tests|docs)/[\w/]+\.(?:py|sh))\b",
                                                             docs.text(page))}  # fmt: skip
    missing += [("a page", s) for s in scripts if not (ROOT / s).is_file()]
    assert len(shown) >= 10 and scripts and not missing, missing


AUDIT_COMMANDS = docs.commands(r"\.venv/bin/python -m components\.audit ")


@pytest.mark.parametrize(("page", "args"), AUDIT_COMMANDS)
def test_shown_audit_command_exits_1_on_an_unlimited_pod_and_0_on_none(page: str, args: str, capsys) -> None:
    from components.audit.__main__ import main as audit
    from tests.test_gpu_audit import GPU_NODE, TENANT_ESCAPES

    tenant, node = TENANT_ESCAPES["privileged"], GPU_NODE
    argv = [os.path.expanduser(a) for a in shlex.split(args)]
    assert audit(argv, lambda: ([tenant], [node])) == 1, page
    assert audit(argv, lambda: ([], [node])) == 0, page
    capsys.readouterr()


def test_the_audit_extra_the_readme_installs_is_declared() -> None:
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    shown = re.findall(r"-e '\.\[(\w+)\]'", README)
    assert set(shown) == {"dev", "audit"} and set(shown) <= set(extras)


def _pulumi_lines() -> list[tuple[str, list[str]]]:
    """Every `pulumi ...` command a page shows, in code or inline, split as the shell would (its comment dropped)."""
    found = []
    for page in docs.PAGES:
        for line in re.findall(r"(?:^|`)(pulumi (?:config|stack|up|preview|destroy)\b[^`\n]*)", docs.joined(page),
                               re.M):  # fmt: skip
            line = re.sub(r"\s+#.*$", "", line).split(" > ")[0].split(" < ")[0]
            try:
                found.append((str(page.relative_to(ROOT)), shlex.split(line)))
            except ValueError:
                continue  # an inline fragment with an open quote
    return found


PULUMI = _pulumi_lines()


def _stack_of(words: list[str]) -> str | None:
    for flag in ("-s", "--stack"):
        if flag in words[:-1]:
            return words[words.index(flag) + 1]
    return None


def _config_keys() -> set[str]:
    keys = {config_doc.PLATFORM_ROW[0].strip("`")}
    for variant in config_doc.config.VARIANTS.values():
        keys |= {key for key, _, _ in config_doc._rows(variant, f"{config_doc.config.NAMESPACE}:")}
    return keys


OWN_STACK = "mine"
"""The name the pages give a stack of the user's own, copied from an example (docs/stacks.md)."""


def test_every_stack_a_command_names_has_its_stack_file() -> None:
    named = {(page, _stack_of(words)) for page, words in PULUMI if _stack_of(words)}
    assert named and all(stack in [*STACKS, OWN_STACK] for _, stack in named), named
    configs = {w for _, words in PULUMI for w in words if w.startswith("policies/config/")}
    assert configs and all((ROOT / c).is_file() for c in configs), configs


def test_every_gpushare_key_a_command_sets_or_removes_is_a_key_the_config_has() -> None:
    keys = _config_keys()
    shown = [(page, w) for page, words in PULUMI if words[1:2] == ["config"]
             for w in words if w.startswith("gpushare:")]  # fmt: skip
    assert len(shown) >= 30
    unknown = []
    for page, key in shown:
        key = re.sub(r"\[.*$", "", key)  # a list index or a map key, as `--path` takes them
        known = key in keys or any(k.startswith(f"{key}.") or key.startswith(f"{k}.") for k in keys)
        if not known:
            unknown.append((page, key))
    assert not unknown


@pytest.mark.parametrize("stack", STACKS)
def test_every_output_a_command_reads_is_one_the_stack_exports(stack: str, plan_stack) -> None:
    outputs = set(plan_stack(stack).outputs)
    assert "verification" in outputs
    reads = [(page, words) for page, words in PULUMI if words[1:3] == ["stack", "output"]]
    assert reads
    for page, words in reads:
        names = [w for w in words[3:] if not w.startswith("-") and w != _stack_of(words)]
        if names and _stack_of(words) == stack:
            assert names[0] in outputs, (page, words)
        if names and _stack_of(words) is None:  # no stack named: some stack exports it
            assert any(names[0] in set(plan_stack(s).outputs) for s in STACKS), (page, words)


def test_every_stack_file_the_readme_points_at_exists() -> None:
    config, _ = read_stack_config("k3s", [])
    assert "Pulumi.k3s.yaml" in README and config["gpushare:platform"] == "k3s-vm"


def test_the_license_the_readme_names_is_the_full_apache_text_and_the_packages_license() -> None:
    import tomllib

    license_text = (ROOT / "LICENSE").read_text()
    assert "Apache-2.0 ([LICENSE](LICENSE))" in README
    assert "Apache License" in license_text and "Version 2.0, January 2004" in license_text
    assert "END OF TERMS AND CONDITIONS" in license_text  # the whole text, not a pointer to it
    assert tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"] == "Apache-2.0"
