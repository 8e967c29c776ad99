"""What a reviewer reads in a pull request: each changed resource marked with the operation its provider would
take, scripts as changed lines, lists as items gained and lost, and the comment short when nothing changes."""

from __future__ import annotations

import ast
import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from components.mocks import ANSWERS
from components.plan import main
from components.plan_view import comment, golden, markdown, text
from components.plan_view.diff import compare
from components.plan_view.golden import GOLDEN_DIR, from_lines, golden_plan, sanitize
from components.plan_view.model import SCHEMA_PATH, SCHEMA_VERSION
from tests.conftest import ROOT, STACKS
from tests.golden.regenerate import variants

SCHEMA = json.loads(SCHEMA_PATH.read_text())


def _diff(plan: Any, edit: Any) -> Any:
    """The plan against a copy of itself changed by `edit` (the copy plays the base branch's golden plan)."""
    base = from_lines(sanitize(plan))
    edit(base)
    return compare(base, from_lines(sanitize(plan)), "base")


def _resource(document: dict[str, Any], name: str) -> dict[str, Any]:
    return next(r for r in document["resources"] if r["name"] == name)


def test_a_driver_package_change_shows_the_changed_script_lines_and_marks_the_update(capsys) -> None:
    assert main(["k3s", "-c", "gpushare:k3s.driverPackage=nvidia-driver-570", "--markdown"]) == 0
    shown = capsys.readouterr().out
    assert shown.startswith("### k3s: 1 to update\n")
    assert "**`~ update`** `k3s-driver` (Command)" in shown
    assert '\n  -apt-get install -y "linux-headers-$(uname -r)" nvidia-open\n' in shown
    assert '\n  +apt-get install -y "linux-headers-$(uname -r)" nvidia-driver-570\n' in shown
    assert "sha256" not in shown.split("<details>")[0]


def test_dropping_one_image_shows_one_removed_not_the_rest_replaced(plan_stack) -> None:
    plan = plan_stack("cluster")
    dropped = plan.outputs["images"][0]
    diff = _diff(plan, lambda base: base["outputs"]["images"].append("registry.example/extra:1"))
    [change] = diff.outputs
    assert change.pointer == "/images" and change.removed == ["registry.example/extra:1"] and change.added == []
    diff = _diff(plan, lambda base: base["outputs"]["images"].remove(dropped))
    [change] = diff.outputs
    assert change.added == [dropped] and change.removed == []


def test_containers_env_is_matched_by_name_so_reordering_changes_nothing(plan_stack) -> None:
    plan = plan_stack("gke")

    def reorder(base: dict[str, Any]) -> None:
        pod = _resource(base, "gpushare-proof-verifier-pod")
        pod["inputs"]["spec"]["containers"][0]["env"].reverse()

    assert (
        len(
            _resource(from_lines(sanitize(plan)), "gpushare-proof-verifier-pod")["inputs"]["spec"]["containers"][0][
                "env"
            ]
        )
        > 1
    )
    assert _diff(plan, reorder).resources == []


@pytest.mark.parametrize(
    ("name", "path", "value", "operation", "rule"),
    [
        ("gpushare-proof-workloads-pod-a", ["spec", "containers", 0, "image"], "cuda:other", "replace", "diff.go:119"),
        ("gpushare-proof-workloads-probes", ["data", "extra.py"], "print()", "replace", "diff.go:32"),
        ("kai-release", ["values", "extra"], "yes", "update", None),
        ("kai-release", ["namespace"], "elsewhere", "replace", "helm_release.go:907"),
        ("gke-gpu-pool", ["nodeCount"], 9, "update", None),
        ("gke-gpu-pool", ["nodeConfig", "machineType"], "n1-standard-8", "update", None),
        ("gke-gpu-pool", ["nodeConfig", "guestAccelerators", 0, "type"], "nvidia-l4", "replace", "node_config.go:316"),
        ("gke-gpu-pool", ["nodeConfig", "spot"], True, "replace", "node_config.go:316"),
        ("gke-cluster", ["location"], "us-central1-a", "replace", "resource_container_cluster.go:293"),
        ("gke-cluster", ["minMasterVersion"], "1.30.0-gke.1", "same", None),  # ignoreChanges
    ],
)
def test_each_change_is_marked_update_or_replace_by_the_providers_rule(
    name: str, path: list[Any], value: Any, operation: str, rule: str | None, plan_stack
) -> None:
    plan = plan_stack("gke")

    def edit(base: dict[str, Any]) -> None:
        node = _resource(base, name)["inputs"]
        for part in path[:-1]:
            node = node[part]
        node[path[-1]] = value

    diff = _diff(plan, edit)
    urn = next(f"{r['type']}::{name}" for r in plan.resources if r["name"] == name)
    assert diff.operations[urn] == operation
    if rule:
        [change] = [r for r in diff.resources if r.name == name]
        assert any(rule in c.replaces for c in change.changes if c.replaces)


@pytest.mark.parametrize(
    ("name", "edit", "operation"),
    [
        ("k3s-driver", lambda r: r["inputs"].update(create="echo old"), "update"),
        ("k3s-driver", lambda r: r["inputs"].update(triggers=["old"]), "replace"),  # replaceOnChanges triggers[*]
        ("k3s-vm-firewall", lambda r: r["inputs"]["sourceRanges"].append("0.0.0.0/0"), "update"),
        ("k3s-vm-instance", lambda r: r["inputs"].update(zone="us-central1-a"), "replace"),
        ("k3s-vm-instance", lambda r: r["inputs"].update(machineType="g2-standard-4"), "update"),
        ("k3s-vm-ssh-key", lambda r: r["inputs"].update(algorithm="RSA"), "replace"),
    ],
)
def test_gce_tls_and_command_changes_follow_their_providers(name: str, edit: Any, operation: str, plan_stack) -> None:
    plan = plan_stack("k3s")
    diff = _diff(plan, lambda base: edit(_resource(base, name)))
    assert [(r.name, r.operation) for r in diff.resources] == [(name, operation)]


def test_a_changed_replacement_trigger_replaces_the_proof_pods_deleting_them_first(plan_stack) -> None:
    plan = plan_stack("gke")
    diff = _diff(
        plan,
        lambda base: _resource(base, "gpushare-proof-workloads-pod-a")["options"].update(
            replacementTrigger="an-older-run"
        ),
    )
    [change] = diff.resources
    assert change.operation == "replace" and change.delete_first and change.mark == "± replace"


def test_added_and_deleted_resources_are_marked(plan_stack) -> None:
    plan = plan_stack("k3s")

    def edit(base: dict[str, Any]) -> None:
        gone = base["resources"].pop(1)
        base["resources"].append({**copy.deepcopy(gone), "name": "k3s-old-thing"})

    diff = _diff(plan, edit)
    assert diff.summary() == "k3s: 1 to create, 1 to delete"
    shown = "\n".join(markdown.diff_section(diff))
    assert "**`+ create`** `k3s-vm-address`" in shown and "**`- delete`** `k3s-old-thing`" in shown


def test_rendered_values_keep_their_characters_and_balanced_code_spans(plan_stack) -> None:
    plan = plan_stack("gke", "gpushare:gke.nodeCount=2")
    shown = markdown.render(plan, golden=golden_plan("gke"))
    assert "\\u00d7" not in shown and "3 × n1-standard-2" in shown
    for line in shown.splitlines():
        if not line.startswith(("  ```", "```")):
            assert line.count("`") % 2 == 0, line


def test_a_long_one_line_change_shows_what_differs_never_two_equal_values(plan_stack) -> None:
    plan = plan_stack("gke")
    note = plan.outputs["costNote"]
    diff = _diff(plan, lambda base: base["outputs"].update(costNote=note[:-5] + "XXXXX"))
    lines = markdown.change_lines(diff.outputs[0])
    before, after = next(x for x in lines if x.startswith("  - ")), next(x for x in lines if x.startswith("  + "))
    assert before[4:] != after[4:] and "XXXXX" in before


@pytest.mark.parametrize("stack", STACKS)
def test_every_plan_validates_against_the_versioned_schema(stack: str, plan_stack) -> None:
    document = json.loads(plan_stack(stack).to_json())
    jsonschema.Draft202012Validator(SCHEMA).validate(document)
    assert document["version"] == SCHEMA_VERSION == SCHEMA["properties"]["version"]["const"]
    urns = [r["urn"] for r in document["resources"]]
    assert len(urns) == len(set(urns)) and all(
        u == f"{r['type']}::{r['name']}" for u, r in zip(urns, document["resources"], strict=True)
    )


@pytest.mark.parametrize("stack", STACKS)
def test_a_plan_compares_in_the_form_its_golden_file_reads_back_in(stack: str, plan_stack) -> None:
    plan = plan_stack(stack)
    read_back = from_lines(sanitize(plan))
    assert golden.compared(plan) == read_back
    assert any(golden.is_file_ref(v) for r in read_back["resources"] for v in r["inputs"].get("data", {}).values())


def _resolve(document: Any, pointer: str) -> Any:
    for part in pointer.split("/")[1:]:
        part = part.replace("~1", "/").replace("~0", "~")
        document = document[int(part)] if isinstance(document, list) else document[part]
    return document


@pytest.mark.parametrize("stack", STACKS)
def test_every_unknown_pointer_resolves_even_where_keys_hold_dots_and_slashes(stack: str, plan_stack) -> None:
    plan = plan_stack(stack)
    for r in plan.resources:
        for where in r["unknownInputs"]:
            assert isinstance(_resolve(r["inputs"], where), str)
    for where in plan.unknown_outputs:
        assert isinstance(_resolve(plan.outputs, where), str)


def test_json_against_a_base_gives_each_resource_its_operation_and_validates(tmp_path, capsys) -> None:
    base = json.loads((GOLDEN_DIR / "k3s.json").read_text())
    base["resources"] = [r for r in base["resources"] if r["name"] != "k3s-vm-address"]
    base["resources"].append({**_resource(base, "k3s-vm-firewall"), "name": "k3s-old"})
    (tmp_path / "k3s.json").write_text(json.dumps(base))
    assert (
        main(["k3s", "--json", "-c", "gpushare:k3s.driverPackage=nvidia-driver-570", "--against", str(tmp_path)]) == 0
    )
    document = json.loads(capsys.readouterr().out)
    jsonschema.Draft202012Validator(SCHEMA).validate(document)
    ops = {r["name"]: r["operation"] for r in document["resources"]}
    assert ops["k3s-driver"] == "update" and ops["k3s-vm-address"] == "create" and ops["k3s-toolkit"] == "same"
    assert _resource(document, "k3s-driver")["changed"] == ["/create"]
    assert document["deleted"] == [
        {"urn": "gcp:compute/firewall:Firewall::k3s-old", "type": "gcp:compute/firewall:Firewall", "name": "k3s-old"}
    ]


@pytest.mark.parametrize("config", [[], ["-c", "gpushare:gpu.perNode=2"]], ids=["one-card", "two-card"])
def test_json_against_its_own_json_plan_changes_nothing(config: list[str], tmp_path, capsys) -> None:
    # A `--json` plan saved as the base carries the mocks' card UUIDs and the probes' source whole, where the
    # compared form masks the one and refers to the other: unchanged, every resource is still `same`.
    assert main(["cluster", "--json", *config]) == 0
    (tmp_path / "cluster.json").write_text(capsys.readouterr().out)
    assert main(["cluster", "--json", *config, "--against", str(tmp_path / "cluster.json")]) == 0
    document = json.loads(capsys.readouterr().out)
    changed = {r["urn"]: r["operation"] for r in document["resources"] if r["operation"] not in ("same", "read")}
    assert changed == {} and document["deleted"] == []


def test_json_against_a_two_card_json_plan_replaces_the_proof_and_deletes_the_gate(tmp_path, capsys) -> None:
    assert main(["cluster", "--json", "-c", "gpushare:gpu.perNode=2"]) == 0
    (tmp_path / "cluster.json").write_text(capsys.readouterr().out)
    assert main(["cluster", "--json", "--against", str(tmp_path / "cluster.json")]) == 0
    document = json.loads(capsys.readouterr().out)
    changed = {r["name"]: r["operation"] for r in document["resources"] if r["operation"] not in ("same", "read")}
    assert set(changed.values()) == {"replace"} and "gpushare-proof-workloads-pod-a" in changed
    assert "gpushare-proof-workloads-probes" not in changed
    assert {r["name"] for r in document["deleted"]} >= {"hami-registered-job", "hami-registered-reader"}


@pytest.mark.parametrize("name", sorted(variants()))
def test_golden_plans_validate_and_show_no_made_up_value(name: str) -> None:
    shown = (GOLDEN_DIR / f"{name}.json").read_text()
    jsonschema.Draft202012Validator(SCHEMA).validate(json.loads(shown))
    made_up = [
        ANSWERS.gke_default_version,
        ANSWERS.vm_external_ip,
        ANSWERS.gke_endpoint,
        ANSWERS.ca_b64,
        ANSWERS.project,
        *ANSWERS.gke_versions,
    ]
    assert not [v for v in made_up if v in shown]


def test_golden_gke_shows_the_looked_up_version_as_unknown() -> None:
    cluster = next(
        r for r in json.loads((GOLDEN_DIR / "gke.json").read_text())["resources"] if r["name"] == "gke-cluster"
    )
    assert cluster["inputs"]["minMasterVersion"] == "(looked up in the cloud)"


def test_the_comment_for_a_pull_request_that_changes_nothing_is_short_and_leads_with_the_summary() -> None:
    shown = comment.render(comment.stacks())
    assert len(shown.encode()) <= 5 * 1024, len(shown.encode())
    head = shown.split("\n\n")[1].splitlines()
    assert head == [f"- {stack}: no change" for stack in comment.stacks()]
    assert shown.count("<details>") == len(comment.stacks()) == shown.count("</details>")


@pytest.mark.parametrize("stack", STACKS)
def test_no_tree_line_is_wider_than_120(stack: str, plan_stack) -> None:
    widths = [len(line) for line in text.render(plan_stack(stack)).splitlines()]
    assert max(widths) <= text.WIDTH


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found |= {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return found


def test_the_plan_and_its_views_import_each_other_in_one_direction_only() -> None:
    modules = {
        "components.plan": ROOT / "components" / "plan.py",
        **{f"components.plan_view.{p.stem}": p for p in (ROOT / "components" / "plan_view").glob("*.py")},
    }
    edges = {m: {i for i in _imports(p) if i in modules and i != m} for m, p in modules.items()}

    def cycle_from(start: str, seen: tuple[str, ...]) -> tuple[str, ...] | None:
        for nxt in edges[start]:
            if nxt in seen:
                return (*seen, nxt)
            if found := cycle_from(nxt, (*seen, nxt)):
                return found
        return None

    for module in modules:
        assert cycle_from(module, (module,)) is None, f"import cycle: {cycle_from(module, (module,))}"
