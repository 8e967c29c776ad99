"""The plan's views for people: nothing the mock engine made up shows as a value; the tree, Markdown and Mermaid
say what the plan says."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import Any

import pytest

from components.mocks import ALTERNATE_ANSWERS, ANSWERS, LOOKED_UP, GpushareMocks, Invented
from components.plan import Plan, main, run
from components.plan_view import markdown, mermaid, text
from components.plan_view.golden import golden_plan
from components.plan_view.graph import AFTER_SHOWN, Graph
from components.plan_view.unknowns import mask, pointer, unknown_paths
from tests.conftest import ROOT, STACKS

EXISTING_HOST = (
    "gpushare:platform=existing-host",
    "gpushare:vm=null",
    "gpushare:host.address=192.0.2.50",
    "gpushare:host.privateKey=placeholder",
)
VARIANTS = [
    *((stack,) for stack in STACKS),
    ("gke", "gpushare:gke.kubernetesVersion=1.35.3-gke.1000000"),
    ("gke", "gpushare:gke.spot=true", "gpushare:verify.enabled=false"),
    ("k3s", *EXISTING_HOST),
    ("cluster", "gpushare:toolkit=host", "gpushare:gpuOperator=null"),
    ("cluster", "gpushare:gpu.perNode=2"),  # the card UUIDs a read of the node returns
]
VARIANT_IDS = [" ".join(v) for v in VARIANTS]


def _views(plan: Plan) -> dict[str, str]:
    return {"text": text.render(plan), "markdown": markdown.render(plan), "mermaid": mermaid.render(plan)}


def _made_up_by(answers: Any) -> list[str]:
    """Every value a MockAnswers holds, in the forms the mocks hand out."""
    values = [v for v in vars(answers).values() if isinstance(v, str)]
    values += [*answers.gke_versions, answers.ca_b64]
    return [v for v in values if v != answers.id_suffix]


def _leaves(value: Any, path: tuple[Any, ...] = ()) -> dict[str, Any]:
    """Each leaf by its JSON pointer."""
    if isinstance(value, dict) and value:
        return {p: v for k, sub in value.items() for p, v in _leaves(sub, (*path, k)).items()}
    if isinstance(value, list) and value:
        return {p: v for i, sub in enumerate(value) for p, v in _leaves(sub, (*path, i)).items()}
    return {pointer(path): value}


@pytest.fixture(scope="module", params=VARIANTS, ids=VARIANT_IDS)
def two_worlds(request) -> tuple[Plan, Plan]:
    """The same config planned twice: under the mocks' answers and under a second, different set."""
    stack, *overrides = request.param
    return run(stack, overrides), run(stack, overrides, mocks=GpushareMocks(answers=ALTERNATE_ANSWERS))


def test_text_markdown_and_mermaid_show_no_value_the_mocks_invented(two_worlds) -> None:
    usual, alternate = two_worlds
    usual_views, alternate_views = _views(usual), _views(alternate)
    for view, shown in usual_views.items():
        assert shown == alternate_views[view], f"the {view} view shows a value that depends on the mocks' answers"
        leaked = [v for v in _made_up_by(ANSWERS) if v in shown]
        assert not leaked, f"the {view} view shows made-up {leaked}"


def test_json_marks_every_value_that_depends_on_the_mocks_answers(two_worlds) -> None:
    usual, alternate = two_worlds
    for mine, theirs in zip(usual.resources, alternate.resources, strict=True):
        differ = {p for p, v in _leaves(mine["inputs"]).items() if _leaves(theirs["inputs"]).get(p) != v}
        assert differ <= set(mine["unknownInputs"]), f"{mine['name']}: unmarked made-up inputs {differ}"
    differ = {p for p, v in _leaves(usual.outputs).items() if _leaves(alternate.outputs).get(p) != v}
    assert differ <= set(usual.unknown_outputs), f"unmarked made-up outputs {differ}"


def test_the_k3s_address_and_ssh_command_are_unknown_until_the_vm_exists(plan_stack) -> None:
    plan = plan_stack("k3s")
    assert plan.unknown_outputs == {"/externalIp": "known after create", "/sshCommand": "known after create"}
    shown = text.render(plan)
    assert "  externalIp: (known after create)" in shown
    assert "ssh -i k3s-key ubuntu@(known after create)" in re.sub(r"\n +", " ", shown)  # a long line continues


def test_a_pinned_gke_version_is_the_programs_value_and_shows(plan_stack) -> None:
    looked_up = plan_stack("gke")
    assert looked_up.one("gcp:container/cluster:Cluster")["unknownInputs"] == {"/minMasterVersion": LOOKED_UP}
    pinned = plan_stack("gke", "gpushare:gke.kubernetesVersion=1.35.3-gke.1000000")
    assert pinned.one("gcp:container/cluster:Cluster")["unknownInputs"] == {}
    assert "version: 1.35.3-gke.1000000" in text.render(pinned)


def test_unknown_paths_and_mask_find_made_up_values_inside_larger_ones() -> None:
    invented = Invented()
    invented.add("203.0.113.20")
    invented.add("1.35.6-gke.1250000", LOOKED_UP)
    invented.add_exact("deployed")
    value = {
        "ssh": "ubuntu@203.0.113.20",
        "versions": ["1.35.6-gke.1250000"],
        "state": "deployed",
        "note": "not deployed yet",
        "count": 3,
    }
    assert unknown_paths(value, invented) == {
        "/ssh": "known after create",
        "/versions/0": LOOKED_UP,
        "/state": "known after create",
    }
    assert mask(value, invented) == {
        "ssh": "ubuntu@(known after create)",
        "versions": [f"({LOOKED_UP})"],
        "state": "(known after create)",
        "note": "not deployed yet",
        "count": 3,
    }


@pytest.mark.parametrize("stack", STACKS)
def test_header_counts_resources_components_and_providers_apart(stack: str, plan_stack) -> None:
    plan = plan_stack(stack)
    providers = [r for r in plan.resources if r["type"].startswith("pulumi:providers:")]
    components = [r for r in plan.resources if r["name"] in plan.component_outputs]
    real = len(plan.resources) - len(providers) - len(components)
    first_line = text.render(plan).splitlines()[0]
    assert first_line == (
        f"stack {stack}: {len(plan.resources)} resources ({real} custom, {len(components)} "
        f"components, {len(providers)} provider{'' if len(providers) == 1 else 's'})"
    )
    assert real > 0 and components and providers


def _block(shown: str, name: str) -> str:
    """The tree line of one resource and its detail lines."""
    lines = shown.splitlines()
    start = next(i for i, line in enumerate(lines) if re.search(rf"  {re.escape(name)}(  \(after|$)", line))
    end = next((i for i in range(start + 1, len(lines)) if "─ " in lines[i] or lines[i] == "outputs:"), len(lines))
    return "\n".join(lines[start:end])


def test_node_pool_shows_machine_accelerator_count_labels_and_taints(plan_stack) -> None:
    pool = _block(text.render(plan_stack("gke")), "gke-gpu-pool")
    for expected in (
        "machine: n1-standard-2",
        "accelerator: 1 × nvidia-tesla-t4, driver DEFAULT",
        "nodes: 3",
        "nvidia.com/gpu.memory=15360",
        "nvidia.com/gpu.present=true",
        "taints: none",
    ):
        assert expected in pool
    assert "oauth" not in pool and "COS_CONTAINERD" not in pool


def test_firewall_shows_ports_and_ranges(plan_stack) -> None:
    firewall = _block(text.render(plan_stack("k3s")), "k3s-vm-firewall")
    assert "allows: tcp 22, 6443" in firewall and "from: 198.51.100.7/32" in firewall


def test_helm_release_shows_chart_version_namespace_and_values(plan_stack) -> None:
    shown = text.render(plan_stack("gke"))
    kyverno = _block(shown, "gke-cdi-kyverno-release")
    assert "chart: https://kyverno.github.io/kyverno/kyverno 3.8.2" in kyverno
    assert "namespace: kyverno" in kyverno and "webhooksCleanup.enabled = true" in kyverno
    assert "//kyverno" not in shown.replace("https://", "")
    kai = _block(shown, "kai-release")
    assert 'binder.plugins.gpusharing.arguments.cdiEnabled = "true"' in kai


def test_pods_show_scheduler_requests_and_quota_annotations(plan_stack) -> None:
    hami_pod = _block(text.render(plan_stack("k3s")), "gpushare-proof-workloads-pod-a")
    assert "scheduler: hami-scheduler" in hami_pod and "nvidia.com/gpumem=8000" in hami_pod
    kai_pod = _block(text.render(plan_stack("gke")), "gpushare-proof-workloads-pod-a")
    assert "scheduler: kai-scheduler" in kai_pod and "annotations: gpu-memory=4096" in kai_pod
    assert "pulumi.com/" not in kai_pod


def test_node_patch_shows_the_labels_it_sets(plan_stack) -> None:
    patch = _block(text.render(plan_stack("cluster")), "cluster-gpu-labels-node")
    assert "node: node" in patch and "labels: gpu=on" in patch


def test_gate_job_shows_what_it_waits_for_and_its_limits(plan_stack) -> None:
    gate = _block(text.render(plan_stack("cluster")), "gpu-operator-ready-job")
    assert "GATE_PATH=/apis/nvidia.com/v1/clusterpolicies/cluster-policy" in gate
    assert "GATE_READY=status.state=ready" in gate
    assert re.search(r"limits: \d+ s, 1 try$", gate, re.M)


@pytest.mark.parametrize("stack", STACKS)
def test_text_view_leaves_out_scripts_and_probe_sources(stack: str, plan_stack) -> None:
    shown = text.render(plan_stack(stack))
    assert "import ctypes" not in shown and "GPUSHARE_STEP" not in shown


@pytest.mark.parametrize("stack", STACKS)
def test_tree_branches_and_bars_follow_the_parents(stack: str, plan_stack) -> None:
    plan = plan_stack(stack)
    graph = Graph(plan)
    tree_lines = [line for line in text.render(plan).split("\noutputs:")[0].splitlines()[1:] if "─ " in line]
    assert len(tree_lines) == len(plan.resources)

    def is_last(name: str) -> bool:
        return graph.children[graph.by_name[name]["parent"]][-1]["name"] == name

    for line, r in zip(tree_lines, plan.resources, strict=True):
        prefix, branch, rest = re.match(r"^((?:│  |   )*)(├─ |└─ )(.*)$", line).groups()
        assert rest.startswith(f"{r['type']}  {r['name']}")
        ancestors = list(reversed(graph.ancestors(r["name"])))
        assert len(prefix) // 3 == len(ancestors)
        assert branch == ("└─ " if is_last(r["name"]) else "├─ ")
        bars = [prefix[i : i + 3] for i in range(0, len(prefix), 3)]
        assert bars == ["   " if is_last(a) else "│  " for a in ancestors]


@pytest.mark.parametrize("stack", STACKS)
def test_after_lists_are_folded_short_and_cover_every_dependency(stack: str, plan_stack) -> None:
    plan = plan_stack(stack)
    graph = Graph(plan)
    for r in plan.resources:
        shown = [n for a in [r["name"], *graph.ancestors(r["name"])] for n in graph.after(a)]
        assert len(graph.after(r["name"])) <= AFTER_SHOWN
        covered = {m for n in shown for m in graph.subtree(n)}
        missing = set(r["dependsOn"]) - covered
        assert not missing, f"{r['name']}: the tree does not say it waits for {missing}"


def test_the_proof_line_says_it_comes_after_the_whole_sharing_stack(plan_stack) -> None:
    shown = text.render(plan_stack("gke"))
    assert "gpushare:verify:Proof  gpushare-proof  (after gke-cdi, gke-gpu-pool, isolator, kai)" in shown


@pytest.mark.parametrize("stack", STACKS)
def test_a_resource_is_listed_after_its_provider(stack: str, plan_stack) -> None:
    plan = plan_stack(stack)
    position = {r["name"]: i for i, r in enumerate(plan.resources)}
    with_provider = [r for r in plan.resources if (r.get("options") or {}).get("provider") in position]
    assert with_provider
    for r in with_provider:
        assert position[r["options"]["provider"]] < position[r["name"]], r["name"]


def test_the_proof_report_is_folded_to_one_line_and_long_structured_outputs_point_to_json(plan_stack) -> None:
    plan = plan_stack("gke")
    outputs = text.render(plan).split("\noutputs:\n")[1].splitlines()
    assert all(line.startswith("  ") or not line for line in outputs)
    report = [line for line in outputs if line.startswith("  report:")]
    lines = plan.outputs["report"].rstrip("\n").count("\n") + 1
    assert report == [
        f"  report: {lines} lines, folded: # GPU sharing proof … (`pulumi stack output report` after `up`; --json here)"
    ]
    assert "    # GPU sharing proof" not in outputs
    verification = next(line for line in outputs if line.startswith("  verification:"))
    assert "--json" in verification
    assert json.dumps(plan.outputs["verification"]["checks"][0]["expected"]) not in verification


def test_a_long_flat_list_output_is_shown_whole_one_item_a_line(plan_stack) -> None:
    plan = plan_stack("cluster")
    images = plan.outputs["images"]
    assert len(json.dumps(images)) > text.OUTPUT_JSON_LIMIT and all(isinstance(i, str) for i in images)
    shown = text.render(plan).split("\noutputs:\n")[1]
    assert "\n".join(["  images:", *(f"    - {image}" for image in images)]) in shown
    assert f"| `images` | {'<br>'.join(f'`{image}`' for image in images)} |" in markdown.render(plan)


def test_markdown_has_a_row_for_every_real_resource_and_matches_the_golden_plan(plan_stack) -> None:
    plan = plan_stack("gke")
    shown = markdown.render(plan, golden=golden_plan("gke"))
    graph = Graph(plan)
    for r in plan.resources:
        assert (f"| `{r['name']}` |" in shown) == (graph.kind(r["name"]) != "component")
    assert "Same as `tests/golden/gke.json`." in shown


def test_markdown_lists_what_changed_against_the_golden_plan(plan_stack) -> None:
    plan = plan_stack("gke", "gpushare:gke.nodeCount=2")
    shown = markdown.render(plan, golden=golden_plan("gke"))
    assert shown.startswith("### gke: 1 to update, 2 outputs changed\n")
    assert "**`~ update`** `gke-gpu-pool` (NodePool)\n\n- `/nodeCount`: `3` → `2`" in shown
    assert "- `/gpuNodeCount`: `3` → `2`" in shown


def test_markdown_of_an_override_shows_what_it_changes_against_the_golden_plan(capsys) -> None:
    assert main(["gke", "--markdown", "-c", "gpushare:gke.nodeCount=2"]) == 0
    assert "- `/nodeCount`: `3` → `2`" in capsys.readouterr().out


def test_markdown_says_when_there_is_no_golden_plan_to_compare(plan_stack) -> None:
    shown = markdown.render(plan_stack("gke"), golden=None)
    assert shown.startswith("### gke: no golden plan `tests/golden/gke.json` to compare with")


@pytest.mark.parametrize("stack", STACKS)
def test_mermaid_has_every_resource_and_a_path_for_every_dependency(stack: str, plan_stack) -> None:
    plan = plan_stack(stack)
    shown = mermaid.render(plan)
    assert shown.startswith("flowchart ")
    assert len(re.findall(r"^\s+subgraph ", shown, re.M)) == len(re.findall(r"^\s+end$", shown, re.M))
    edges: dict[str, set[str]] = {}
    for before, after in re.findall(r"^\s+(\S+) --> (\S+)$", shown, re.M):
        edges.setdefault(before, set()).add(after)

    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), [start]
        while todo:
            node = todo.pop()
            if node == goal:
                return True
            if node not in seen:
                seen.add(node)
                todo.extend(edges.get(node, ()))
        return False

    graph = Graph(plan)
    for r in plan.resources:
        if graph.kind(r["name"]) == "component":
            assert f'subgraph {mermaid.node_id(r["name"])}["' in shown
            continue
        assert f'{mermaid.node_id(r["name"])}["' in shown or f'{mermaid.node_id(r["name"])}[("' in shown
        for dep in r["dependsOn"]:
            assert reaches(mermaid.node_id(dep), mermaid.node_id(r["name"])), f"{dep} → {r['name']}"


@pytest.mark.parametrize("flag", ["--markdown", "--mermaid"])
def test_cli_prints_markdown_and_mermaid(flag: str, capsys) -> None:
    assert main(["k3s", flag]) == 0
    out = capsys.readouterr().out
    assert out.startswith("### k3s: no change" if flag == "--markdown" else "flowchart ")


def test_cli_stops_quietly_when_its_reader_stops_early() -> None:
    pipeline = subprocess.run(
        f"{sys.executable} -m components.plan gke | head -1",
        shell=True,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert pipeline.stdout.startswith("stack gke:")
    assert "Traceback" not in pipeline.stderr and "BrokenPipe" not in pipeline.stderr


def test_cli_takes_one_view_at_a_time(capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["k3s", "--json", "--markdown"])
    assert exit_.value.code == 2
    assert "not allowed with" in capsys.readouterr().err
