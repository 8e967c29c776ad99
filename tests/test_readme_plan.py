"""What the README and docs/ say about the plan is what the plan does: each stack's steps and their order
(docs/stacks.md), the names of the proof's objects (docs/proof.md), the tree excerpt, which tests skip without
../shared, and the pull-request comment."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from components.plan import Plan, read_stack_config
from components.plan_view import comment, text
from components.plan_view.graph import Graph
from tests.conftest import ROOT
from tests.test_plan_view import EXISTING_HOST

README = (ROOT / "README.md").read_text()
STACKS_PAGE = (ROOT / "docs" / "stacks.md").read_text()
PROOF_PAGE = (ROOT / "docs" / "proof.md").read_text()

STEP = re.compile(r"^(\d+)\. \*\*(.+?)\*\*(?: \(after ([^);]+)[);])?", re.M)
STEP_RESOURCES = {
    "gke": {
        "The cluster and its GPU pool": ["gke-cluster", "gke-gpu-pool"],
        "KAI Scheduler": ["kai"],
        "kai-resource-isolator": ["isolator"],
        "The workarounds": ["gke-cdi"],
        "The proof": ["gpushare-proof"],
    },
    "k3s": {step: [f"k3s-{step}"] for step in ("driver", "toolkit", "config", "k3s", "checks", "kubeconfig")},
}
"""Which planned resources (a component stands for everything in it) each README step describes."""


def stack_section(stack: str) -> str:
    start = STACKS_PAGE.index(f"## Stack `{stack}`")
    end = STACKS_PAGE.find("\n## ", start + 1)
    return STACKS_PAGE[start:] if end < 0 else STACKS_PAGE[start:end]


def readme_steps(stack: str) -> list[tuple[int, str, set[int]]]:
    """The numbered steps of a stack's section: number, title, and the steps it says it comes after."""
    return [
        (int(n), title, {int(a) for a in re.findall(r"\d+", after or "")})
        for n, title, after in STEP.findall(stack_section(stack))
    ]


def _waits_on(plan: Plan) -> dict[str, set[str]]:
    """Each resource's dependencies, direct and indirect."""
    direct = {r["name"]: set(r["dependsOn"]) for r in plan.resources}
    closed: dict[str, set[str]] = {}

    def close(name: str) -> set[str]:
        if name not in closed:
            closed[name] = set()
            for dep in direct[name]:
                closed[name] |= {dep} | close(dep)
        return closed[name]

    return {name: close(name) for name in direct}


def _real(plan: Plan, names: list[str]) -> set[str]:
    graph = Graph(plan)
    found = {m for n in names for m in graph.subtree(n) if graph.kind(m) == "resource"}
    assert found, f"the plan has none of {names}"
    return found


def _closure(after: dict[int, set[int]], step: int) -> set[int]:
    found: set[int] = set()
    todo = list(after[step])
    while todo:
        s = todo.pop()
        if s not in found:
            found.add(s)
            todo.extend(after[s])
    return found


@pytest.mark.parametrize(
    ("stack", "overrides"), [("gke", ()), ("k3s", ()), ("k3s", EXISTING_HOST)], ids=["gke", "k3s", "k3s existing-host"]
)
def test_readme_steps_come_in_the_order_the_plan_gives_them(stack: str, overrides: tuple[str, ...], plan_stack) -> None:
    steps = readme_steps(stack)
    assert [n for n, _, _ in steps] == list(range(1, len(steps) + 1))
    assert [title for _, title, _ in steps] == list(STEP_RESOURCES[stack])
    plan = plan_stack(stack, *overrides)
    waits_on = _waits_on(plan)
    resources = {n: _real(plan, STEP_RESOURCES[stack][title]) for n, title, _ in steps}
    after = {n: claimed for n, _, claimed in steps}
    for step in after:
        for other in after:
            if other == step:
                continue
            if other in _closure(after, step):
                late = [r for r in resources[step] if not resources[other] <= waits_on[r]]
                assert not late, f"README: step {step} comes after step {other}; the plan starts {late} sooner"
            elif step not in _closure(after, other):
                tied = [r for r in resources[step] if resources[other] & waits_on[r]]
                assert not tied, f"README: steps {step} and {other} start together; the plan makes {tied} wait"


def test_cluster_hami_waits_for_the_operators_cluster_policy(plan_stack) -> None:
    assert "HAMi goes in only once the operator's ClusterPolicy reports `ready`" in stack_section("cluster")
    plan = plan_stack("cluster")
    waits_on = _waits_on(plan)
    gate = plan.one("kubernetes:batch/v1:Job", "gpu-operator-ready-job")["name"]
    assert all(gate in waits_on[r] for r in _real(plan, ["hami"]))


def _proof_table_rows() -> list[str]:
    section = PROOF_PAGE[PROOF_PAGE.index("## What runs in the cluster") :]
    section = section[: section.index("\n## ")]
    rows = [line.split(" | ")[0].lstrip("| ") for line in section.splitlines() if line.startswith("| ")]
    return rows[1:]  # the first is the header


def _named_objects(cell: str) -> list[tuple[str, str]]:
    """`ServiceAccount `a`, ClusterRole and ClusterRoleBinding `b`` → (ServiceAccount, a), (ClusterRole, b), ..."""
    pairs = []
    for kinds, names in re.findall(r"((?:[A-Z][A-Za-z]+(?:, | and )?)+) ((?:`[^`]+`(?:, )?)+)", cell):
        for kind in re.findall(r"[A-Z][A-Za-z]+", kinds):
            pairs += [(kind.removesuffix("s"), name) for name in re.findall(r"`([^`]+)`", names)]
    return pairs


def _objects(plan: Plan, stack: str) -> set[tuple[str, str]]:
    config, _ = read_stack_config(stack, [])
    prefix = (config.get("gpushare:verify") or {}).get("podPrefix", "gpushare-proof")
    found = set()
    for r in plan.resources:
        name = ((r["inputs"].get("metadata") or {}).get("name")) or ""
        kind = r["type"].rsplit(":", 1)[-1]
        found |= {(kind, name), (kind, name.replace(prefix, "<podPrefix>"))}  # the default prefix is a name too
    return found


def test_readme_names_the_proofs_objects_as_the_plan_names_them(plan_stack) -> None:
    claimed = [pair for cell in _proof_table_rows() for pair in _named_objects(cell)]
    assert ("ClusterRole", "gpushare-proof-verifier") in claimed and len(claimed) >= 8
    planned = set().union(*(_objects(plan_stack(s), s) for s in ("gke", "k3s", "cluster")))
    missing = [pair for pair in claimed if pair not in planned]
    assert not missing, f"README names objects no plan creates: {missing}"


@pytest.mark.parametrize("page", ["README.md", "docs/plan.md"])
def test_tree_excerpt_is_what_the_plan_prints(page: str, plan_stack) -> None:
    shown = (ROOT / page).read_text()
    after_marker = shown[shown.index("<!-- plan-excerpt:k3s -->") :]
    excerpt = after_marker.split("```text\n", 1)[1].split("```", 1)[0]
    assert text.render(plan_stack("k3s")).startswith(excerpt.rstrip("\n"))


def test_readme_says_which_shared_folders_tests_skip_without() -> None:
    conftest = (ROOT / "tests" / "conftest.py").read_text()
    read = {"/".join(re.findall(r'"([^"]+)"', path)) for path in re.findall(r'SHARED((?: / "[^"]+")+)', conftest)}
    assert read >= {"reference/charts", "seeds"}
    test_section = README[README.index("## Test") : README.index("\n## ", README.index("## Test") + 1)]
    sentence = test_section[test_section.index("skips where it is absent") :].split("\n\n")[0]
    assert {f.rstrip("/") for f in re.findall(r"`([a-z/]+/)`", sentence)} == read
    # "one test": only the facts' own check reads ../shared; every other test reads the committed facts
    readers = {p.name for p in (ROOT / "tests").glob("test_*.py")
               if re.search(r"\b(charts|seeds)_dir\b", p.read_text())}  # fmt: skip
    assert readers == {"test_facts.py"}


def test_workflow_posts_the_offline_plan_and_graph_on_the_pull_request() -> None:
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "preview.yml").read_text())
    steps = workflow["jobs"]["offline"]["steps"]
    build = next(s for s in steps if "components.plan_view.comment --against" in s.get("run", ""))
    base = next(s for s in steps if "FETCH_HEAD:$path" in s.get("run", ""))
    assert base["env"]["BASE"] == "${{ github.base_ref }}" and steps.index(base) < steps.index(build)
    output = build["run"].split(">")[-1].strip()
    post = next(s for s in steps if str(s.get("uses", "")).startswith("marocchino/sticky-pull-request-comment@"))
    assert post["with"]["path"] == output
    assert steps.index(build) < steps.index(post)
    assert workflow["permissions"]["pull-requests"] == "write"


def test_the_comment_holds_each_stacks_summary_then_its_plan_folded(capsys) -> None:
    assert comment.main(["k3s", "gke"]) == 0
    shown = capsys.readouterr().out
    assert shown.startswith(f"{comment.TITLE}\n\n- k3s: no change\n- gke: no change\n")
    assert shown.index("<details><summary>k3s: ") < shown.index("<details><summary>gke: ")


def _changed_base(tmp_path) -> Path:
    base = tmp_path / "main"
    base.mkdir()
    golden = json.loads((ROOT / "tests" / "golden" / "k3s.json").read_text())
    firewall = next(r for r in golden["resources"] if r["name"] == "k3s-vm-firewall")
    firewall["inputs"]["sourceRanges"] = ["0.0.0.0/0"]
    (base / "k3s.json").write_text(json.dumps(golden))
    return base


def test_the_comment_shows_what_changed_against_the_base_branchs_golden_plans(tmp_path, capsys) -> None:
    assert comment.main(["k3s", "--against", str(_changed_base(tmp_path))]) == 0
    shown = capsys.readouterr().out
    assert "\n- k3s: 1 to update\n" in shown
    assert "Against `tests/golden/k3s.json of main`:" in shown
    assert "**`~ update`** `k3s-vm-firewall` (Firewall)" in shown
    assert '  - "0.0.0.0/0"\n  + "198.51.100.7/32"' in shown
    assert "```mermaid\nflowchart " in shown and shown.index("<details><summary>Full plan") < shown.index("```mermaid")


def test_the_comment_of_every_stack_fits_in_one_github_comment(capsys) -> None:
    assert comment.main([]) == 0
    shown = capsys.readouterr().out
    assert len(shown) < comment.GITHUB_COMMENT_LIMIT
    assert all(f"- {stack}: " in shown for stack in comment.stacks())


def test_a_comment_past_githubs_limit_drops_the_graphs_then_is_cut(tmp_path, monkeypatch) -> None:
    base = _changed_base(tmp_path)
    whole = comment.render(["k3s"], base)
    monkeypatch.setattr(comment, "GITHUB_COMMENT_LIMIT", len(whole) - 1)
    without_graphs = comment.render(["k3s"], base)
    assert "```mermaid" not in without_graphs and "k3s-vm-firewall" in without_graphs
    monkeypatch.setattr(comment, "GITHUB_COMMENT_LIMIT", 2000)
    cut = comment.render(["k3s"], base)
    assert len(cut) < 2000 and cut.endswith(comment.CUT)


def test_the_comment_refuses_an_unknown_stack(capsys) -> None:
    assert comment.main(["eks"]) == 2
    assert "eks" in capsys.readouterr().err
