"""One Pulumi operation on a stack, through the real CLI: `python -m e2e.drive OP PROJECT_DIR STACK [--policy-pack]`.

The program is the repository's `__main__.py`, run as an Automation API inline program (`pulumi.automation`): the
CLI drives it through `--client`, so no Python language host binary is needed (none is published as a Go module
at the CLI's version). The CLI and the provider come from e2e/tools/build.sh (PATH); the backend is the local file
backend the caller names in PULUMI_BACKEND_URL. Prints one JSON line: the steps (URN, op) the engine reported,
the change summary, the outputs, and the error where the operation failed.
"""

from __future__ import annotations

import json
import runpy
import sys
from pathlib import Path
from typing import Any

from pulumi import automation as auto

REPO = Path(__file__).resolve().parent.parent


def program() -> None:
    runpy.run_path(str(REPO / "__main__.py"), run_name="__main__")


def main(argv: list[str]) -> int:
    op, project_dir, stack_name, *flags = argv
    from e2e.controlplane import bin_dir

    steps: list[dict[str, Any]] = []
    diags: list[str] = []

    def on_event(event: auto.EngineEvent) -> None:
        pre = event.resource_pre_event
        if pre is not None:
            steps.append({"urn": pre.metadata.urn, "op": str(pre.metadata.op.value), "type": pre.metadata.type})
        if event.diagnostic_event is not None and event.diagnostic_event.severity in ("error", "warning"):
            diags.append(event.diagnostic_event.message.strip())

    cmd = auto.PulumiCommand(root=str(bin_dir().parent), skip_version_check=True)
    stack = auto.create_or_select_stack(
        stack_name=stack_name,
        project_name="gpushare",
        program=program,
        opts=auto.LocalWorkspaceOptions(work_dir=project_dir, pulumi_command=cmd),
    )
    # The pack as one executable (e2e/policy-pack): the CLI runs a pack folder only through a language host.
    packs = [str(REPO / "e2e" / "policy-pack")] if "--policy-pack" in flags else None
    out: dict[str, Any] = {"op": op}
    try:
        if op == "preview":
            res = stack.preview(
                on_event=on_event, policy_packs=packs, expect_no_changes="--expect-no-changes" in flags,
                diff="--diff" in flags,
            )  # fmt: skip
            out["summary"] = res.change_summary
            out["stdout"] = res.stdout
        elif op == "up":
            up = stack.up(on_event=on_event, policy_packs=packs)
            out["summary"] = up.summary.resource_changes
            out["outputs"] = {k: v.value for k, v in up.outputs.items()}
            out["stdout"] = up.stdout
        elif op == "refresh":
            ref = stack.refresh(on_event=on_event, clear_pending_creates="--clear-pending-creates" in flags)
            out["summary"] = ref.summary.resource_changes
            out["stdout"] = ref.stdout
        elif op == "destroy":
            des = stack.destroy(on_event=on_event)
            out["summary"] = des.summary.resource_changes
            out["stdout"] = des.stdout
        elif op == "outputs":
            out["outputs"] = {k: v.value for k, v in stack.outputs().items()}
        else:
            raise SystemExit(f"unknown operation {op}")
    except auto.CommandError as exc:
        out["error"] = str(exc)
    out["steps"] = steps
    out["diagnostics"] = diags
    print(json.dumps(out, default=str))
    return 1 if "error" in out else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
