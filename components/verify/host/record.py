"""The host proof's record into the repository: `python -m components.verify.host.record RECORD_DIR`.

RECORD_DIR is what `docs/host-proof/record.sh` wrote on the GPU host, with `repeat/` from `docs/host-proof/repeat.sh`
beside it. This copies its verdicts, evidence and comparison to docs/host-proof/h200/, the probes' raw output to
tests/fixtures/real/h200/, and writes from the numbers alone docs/host-proof/README.md's tables (the runs, their
repeats, the proof's time), docs/sharing-comparison.md and docs/host-proof.md's block, so that every figure quoted
is the last run's. Standard library only.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from components.verify.host import neighbours, repeatability

ROOT = Path(__file__).resolve().parents[3]
RUNS = {
    "cluster-hami-core": "`cluster` (4000 MiB + 30 %) under `--lib`, both Pods started in the same instant",
    "cluster-hami-core-staggered": "the same, Pod B started 3 s after A (`--stagger 3`, holds 10 s), as in a cluster",
    "cluster-bare": "the same, no library",
    "gke-hami-core": "`gke` (KAI, 4147 MiB) under `--lib`",
    "gke-bare": "the same, no library",
    "k3s-hami-core": "`k3s` (HAMi, 8000 MiB) under `--lib`",
    "k3s-bare": "the same, no library",
    "cluster-mps": "`cluster`'s Pods as MPS clients (`0=4000M`, 30 %)",
}
FIXTURE_RUNS = {
    "cluster-hami-core": "cluster-hami-core",
    "cluster-hami-core-uncharged": "repeat/cluster-hami-core-2",
    "cluster-hami-core-staggered": "cluster-hami-core-staggered",
    "cluster-mps": "cluster-mps",
    "cluster-bare": "cluster-bare",
    "gke-hami-core": "gke-hami-core",
    "k3s-hami-core": "k3s-hami-core",
}
"""Fixture name → the run it is copied from; `-uncharged`: a same-instant run whose Pod B's context was charged 0."""
README_START, README_END = "<!-- host-proof:start -->", "<!-- host-proof:end -->"
BYPASS = {True: "bypassed", False: "held", None: "not judged"}


def _load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def wall_seconds(record: Path) -> dict[str, str]:
    """Each run's wall time as runs.txt recorded it (`NAME exit N in S s`)."""
    text = (record / "runs.txt").read_text() if (record / "runs.txt").is_file() else ""
    return {m[1]: m[2] for m in re.finditer(r"^(\S+) exit \d+ in (\d+) s$", text, re.M)}


def _table(record: Path) -> str:
    """The comparison table, drawn again from comparison.json with this repository's labels."""
    from components.verify.host.compare import table

    c = _load(record / "comparison.json")
    calibration = (c.get("baseline") or {}).get("calibration") or {}
    drawn = table(c["rows"], c["quotaMiB"], c["coresPercent"], c["card"], calibration).strip()
    found = neighbours.runs(record, _judged_expectation)
    extra = neighbours.table_rows(found, [r["mechanism"] for r in c["rows"]]) if found else []
    return "\n".join([drawn, *extra])


def _judged_expectation(folder: Path) -> Any:
    return _expectation(folder, _load(folder / "verdict.json"))


def neighbour_note(record: Path) -> str:
    """Where the comparison's last two rows come from, where the record has them."""
    if not neighbours.runs(record, _judged_expectation):
        return ""
    return (
        "\nThe last two rows are the `cluster` host proof with the fault and bandwidth steps first in each Pod (the"
        " same quotas; [host-proof/h200/neighbour-steps/](host-proof/h200/neighbour-steps/README.md)), judged by"
        " this judge: `fault-isolation` and the `bandwidth-neighbour` finding. Nothing here isolates memory"
        " bandwidth; only MIG does.\n"
    )


def neighbour_table(record: Path) -> str:
    """The neighbour steps' runs, judged again: what Pod A did beside Pod B's fault and beside its copy."""
    found = neighbours.runs(record, _judged_expectation)
    if not found:
        return ""
    lines = ["| run | mechanism | Pod A beside Pod B's fault: launches a second before · its second · after |"
             " Pod A's copy alone → beside Pod B's, GB/s |", "|---|---|---|---|"]  # fmt: skip
    for run, s in found.items():
        link = f"[{run}](h200/{neighbours.FOLDER}/{run}/verdict.json)"
        lines.append(f"| {link} | {s['mechanism']} | {neighbours.fault_cell(s)} | {neighbours.bandwidth_cell(s)} |")
    return "\n".join(lines) + "\n"


def run_table(record: Path) -> str:
    """Every run: what it was, whether it passed (with the failing checks and what a host could not run), its time."""
    walls = wall_seconds(record)
    walls.update({k: walls.get("compare", "–") for k in ("cluster-hami-core", "cluster-mps")})
    lines = ["| run | what | passed | wall |", "|---|---|---|---|"]
    for run, what in RUNS.items():
        path = record / run / "verdict.json"
        if not path.is_file():
            lines.append(f"| {run} | {what} | not recorded | – |")
            continue
        v = _load(path)
        ran = [c for c in v["checks"] if c["passed"] is not None]
        failed = [c["id"] for c in ran if c["passed"] is False]
        skipped = ", ".join(f"`{c}`" for c in v.get("notRunOnHost") or {})
        verdict = (
            f"yes ({len(ran)} of {len(ran)} host checks"
            if v["passed"]
            else f"no: {', '.join(f'`{f}`' for f in failed)}"
        )
        if v["passed"]:
            verdict += f"; not run on a host: {skipped})" if skipped else ")"
        wall = v.get("wallSeconds") or walls.get(run, "–")  # the proof's own time; runs.txt's for older records
        lines.append(f"| [{run}](h200/{run}/verdict.json) | {what} | {verdict} | {wall} s |")
    return "\n".join(lines) + "\n"


def _pod_findings(verdict: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for f in verdict.get("findings") or []:
        found.setdefault(f["id"], []).append(f)
    return found


def findings_table(hami: Mapping[str, Any], mps: Mapping[str, Any]) -> str:
    """Each finding's outcome per Pod, per mechanism, and what one Pod observed."""
    sides = {"HAMi-core": _pod_findings(hami), "MPS": _pod_findings(mps)}
    ids = list(dict.fromkeys([*sides["HAMi-core"], *sides["MPS"]]))
    lines = ["| finding | HAMi-core (Pod A, Pod B) | MPS (Pod A, Pod B) | what Pod A saw |", "|---|---|---|---|"]
    for fid in ids:
        cells = []
        for side in sides.values():
            got = side.get(fid) or []
            cells.append(", ".join(BYPASS[f.get("bypassed")] for f in got) or "–")
        first = (sides["HAMi-core"].get(fid) or sides["MPS"].get(fid) or [{}])[0]
        seen = str(first.get("observed") or "").replace("|", "/")
        lines.append(f"| `{fid}` | {cells[0]} | {cells[1]} | {seen} |")
    return "\n".join(lines) + "\n"


def run_folders(record: Path) -> list[Path]:
    """Every run's folder: the record's own and its repeats (`repeat/<stack>-<setup>-<i>/`)."""
    return sorted(p.parent for p in [*record.glob("*/verdict.json"), *record.glob("repeat/*/verdict.json")])


def charge_findings(record: Path) -> list[tuple[str, dict[str, Any]]]:
    """(run, finding) for every judged context-charge finding of every run."""
    return [(folder.name, f) for folder in run_folders(record) for f in _load(folder / "verdict.json").get("findings")
            or [] if f.get("id") == "context-charge" and f.get("bypassed") is not None]  # fmt: skip


def uncharged_contexts(record: Path) -> list[str]:
    """Pods of the HAMi-core runs whose CUDA context was charged less than a context is (context-charge), in words."""
    return [f"{f.get('pod')} in {run} was charged {f.get('charged_mib')} of {f.get('context_mib')} MiB"
            for run, f in charge_findings(record) if f.get("bypassed") is True]  # fmt: skip


def warmup(record: Path) -> str:
    """The judged shape's warm-up in the HAMi-core comparison run, as its compute probe recorded it."""
    evidence = _load(record / "cluster-hami-core" / "evidence.json")
    found = {(out.get("compute") or {}).get("warmup_s") for out in evidence.values() if isinstance(out, dict)}
    return "/".join(f"{w:g}" for w in sorted(w for w in found if w is not None)) or "–"


def context_sizes(record: Path) -> str:
    """The contexts' sizes NVML counted in the record's Pods, e.g. `518` or `514–518`."""
    sizes = sorted({f["own_context_mib"] for _, f in charge_findings(record) if f.get("own_context_mib") is not None})
    return "–" if not sizes else str(sizes[0]) if len(sizes) == 1 else f"{sizes[0]}–{sizes[-1]}"


def staggered_shares(record: Path) -> list[str]:
    path = record / "cluster-hami-core-staggered" / "evidence.json"
    if not path.is_file():
        return []
    return [str((r.get("compute") or {}).get("share", {}).get("short_many")) for r in _load(path).values()
            if isinstance(r, dict) and r.get("compute")]  # fmt: skip


def summary(comparison: Mapping[str, Any], record: Path | None = None) -> str:
    """What the numbers say, in sentences built from the comparison's figures."""
    rows = {r["mechanism"]: r for r in comparison["rows"]}
    base = comparison["baseline"]
    cal = (base.get("calibration") or {}).get("short_many") or {}
    out = []
    for mech, row in rows.items():
        mem, comp = row["memory"], row["compute"]
        short = comp.get("short_many") or {}
        shares = ", ".join(f"{v['share']}" for v in short.values())
        ranges = ", ".join(f"{v['per_s_share_min']}–{v['per_s_share_max']}" for v in short.values())
        others = "; ".join(
            f"{shape} {', '.join(str(v['share']) for v in pods.values())}"
            for shape, pods in comp.items()
            if shape != "short_many"
        )
        view = "the view rewritten to the quota" if mem["view_rewritten"] else "the card's own total: not rewritten"
        exact = "exactly at the quota once the" if mem["exact"] else "not at the quota; the"
        held = "yes" if mem["neighbour_held_same_time"] else "no"
        out.append(
            f"- **{mech}.** The Pods see {mem['visible_total_mib']} MiB total and {mem['visible_free_mib']} MiB"
            f" free ({view}); the largest allocation is {mem['largest_alloc_mib']} MiB and {mem['refused_at_mib']}"
            f" MiB is refused ({exact} {mem['context_overhead_mib']} MiB context is counted), with"
            f" {mem['oom_lines']} OOM lines on stderr. Both Pods held {mem['hold_mib']} MiB at once, each refused"
            f" more: {held}. The judged shape ran at {shares} of the unlimited baseline in the two Pods at once"
            f" (per second {ranges}; alone {row['neighbour']['judged_share_alone']}); the other shapes: {others}."
        )
    uncharged = uncharged_contexts(record) if record else []
    if uncharged:
        judged = len(charge_findings(record))  # type: ignore[arg-type]
        out.append(
            "- **The context's charge (HAMi-core).** The library charges a context the size NVML showed for the"
            " process it took for its own (`src/utils.c` `set_task_pid`), a search serialised only among processes"
            f" that share a cache file. Of {judged} Pods under the library whose charge was judged, "
            + "; ".join(uncharged)
            + " (the `context-charge` finding; each such Pod can hold that much more than its quota)."
        )
    out.append(
        f"- **The baseline.** {base.get('how')}; the judged shape ({cal.get('blocks')} blocks × {cal.get('threads')}"
        f" threads) calibrated to {cal.get('launch_ms')} ms a launch on this card. Under libvgpu.so with"
        f" `GPU_CORE_UTILIZATION_POLICY=disable` the same launches ran at"
        f" {(base.get('policy_disabled_share') or {}).get('short_many')} of it: the Pod's own baseline (a child with"
        " that setting) is an unlimited one."
    )
    return "\n".join(out) + "\n"


def comparison_doc(record: Path) -> str:
    comparison = _load(record / "comparison.json")
    card = comparison["card"]
    table = _table(record)
    hami, mps = _load(record / "cluster-hami-core" / "verdict.json"), _load(record / "cluster-mps" / "verdict.json")
    return f"""# HAMi-core beside MPS, measured on one card

The same proof Pods, probes and judge on one {card.get("name")} ({card.get("mib")} MiB, driver {card.get("driver")},
compute mode {card.get("computeMode")}), from one command:
`python -m components.verify.host compare --expect cluster.expect.json --lib libvgpu.so` (the `cluster` stack's
quotas: {comparison["quotaMiB"]} MiB and {comparison["coresPercent"]} % of the compute per Pod, two Pods at once).
HAMi-core is libvgpu.so preloaded with the Pod's env and its own cache file, as HAMi's device plugin and
kai-resource-isolator give it; MPS is a control daemon the command starts and stops, the Pods its clients with
`CUDA_MPS_PINNED_DEVICE_MEM_LIMIT` and `CUDA_MPS_ACTIVE_THREAD_PERCENTAGE`, the limits GKE passes to MPS
clients. Time-sharing limits nothing, so it has nothing to measure here. Shares are of one unlimited process
alone on the card; each Pod's mean over {comparison["windowSeconds"]:g} s after a {warmup(record)} s warm-up, and in
brackets the range of its whole seconds. Raw outputs and verdicts: [host-proof/](host-proof/README.md).

{table}
{neighbour_note(record)}
![Per-second share of each kernel shape, Pod A, under HAMi-core and MPS](host-proof/h200/comparison.png)

## What the numbers say

{summary(comparison, record)}
## Findings (each tried, none counted into `passed`)

{findings_table(hami, mps)}
A `cuCtxCreate` context is judged against a control: the same ask on a fresh child's primary context. HAMi-core
charges a context in its `cuDevicePrimaryCtxRetain` hook only (`src/cuda/context.c`). A child that leaves the MPS
server (`mps-pipe-directory`) ran because this card's compute mode is Default; a GPU in `EXCLUSIVE_PROCESS` mode,
as MPS nodes usually run, would refuse it, which this host could not show.
"""


TWO_CARDS = """## Two cards

Not recorded yet: it needs a host of two cards (the device tool's `nvidia-h200-x2`). On such a host the proof Pods
share card 1 (`--device 1`: each Pod's processes get `NVIDIA_VISIBLE_DEVICES` its UUID and `CUDA_VISIBLE_DEVICES=1`),
a whole-card process runs on card 0 with no quota, and a cross-card process carries the Pods' quota env naming card 1
while CUDA reaches every card (the `cross-card` finding: "reaches a card its quota does not name"); the expectation
says `cardsPerNode` 2, `sharedCardIndex` 1 and card 1's UUID ([docs/host-proof.md](../host-proof.md#several-cards)).
One run, on the host:

```sh
python3 -m components.verify.host cluster --expect cluster.json --lib /path/to/libvgpu.so --device 1 --out two/
```

All of them (`cluster` and `k3s` under HAMi-core on card 1, `cluster` bare and as MPS clients on card 1, `cluster`
on card 0) with `docs/host-proof/two-cards.sh`. From this checkout, the source and the expectations in a folder git
ignores, carried to the machine:

```sh
echo /.two-cards/ >> .git/info/exclude
mkdir -p .two-cards/expect && cp -r ../shared/reference/hami-core ../shared/tools/hami-core/build.sh .two-cards/
for s in cluster k3s; do .venv/bin/python -m components.verify.host $s --write-expect .two-cards/expect/$s.json; done
```

then the device tool's `run` with `kind` `nvidia-h200-x2`, `carry` `[".two-cards"]`, `timeout_s` 600 and the command

```sh
lib=$(.two-cards/build.sh .two-cards/hami-core /tmp/hami-build | tail -1) &&
  docs/host-proof/two-cards.sh "$lib" .two-cards/expect /tmp/two-cards "$OUT/two-cards.tgz"
```

`two-cards.tgz` comes back with a folder per run (`verdict.json`, `evidence.json`, `expect.json`, `log`) and
`runs.txt`.
"""
"""docs/host-proof/README.md's last section: how the two-card record is made, until one is."""


FINAL = "final-26"
"""The record of every check at three compute quotas (docs/host-proof/record-final.sh), beside the runs above."""


def final_section(record: Path) -> str:
    """docs/host-proof/README.md's section on the final record, where the record has one."""
    if not (record / FINAL / "repeat").is_dir():
        return ""
    return f"""## Every check at three compute quotas

`docs/host-proof/record-final.sh` on the same card with the fault and bandwidth steps, `fault-isolation` and the
env-less first-toucher finding: `cluster` at `coresPercent` 20, 40 and 60, `gke` and `k3s`, three runs each, every
run's Pods started in the same instant; the bare runs, the MPS run, and the runs before the Pods met before their memory
steps (the compute verdict flipped with HAMi-core's host-PID lookup) in [h200/{FINAL}/](h200/{FINAL}/README.md).

{repeatability.table(record / FINAL, f"h200/{FINAL}/repeat")}
"""


def host_proof_doc(record: Path) -> str:
    card = _load(record / "comparison.json")["card"]
    return f"""# The host proof on an H200: HAMi-core, bare, and MPS beside it

Recorded with `docs/host-proof/record.sh` on one {card.get("name")} ({card.get("mib")} MiB, driver
{card.get("driver")}, compute mode {card.get("computeMode")}), HAMi-core's `libvgpu.so` built from
`reference/hami-core` (upstream Project-HAMi/HAMi-core at 8f3a89c, the Debug build of
`tools/hami-core/build.sh`), the expectations written beforehand with
`python -m components.verify.host STACK --write-expect` from this repository's stacks, then rendered here with
`python -m components.verify.host.record`. Holds were 5 s (a host needs no time for a scheduler or a monitor);
the judged kernel shape's window 20 s after a 2 s warm-up, the two shapes only findings read 4 s after 1 s, the
baseline 3 s a shape after 0.5 s, alone on the card before the Pods.

{run_table(record)}
Each folder holds `verdict.json` (the judge's checks and findings) and `evidence.json` (every probe's JSON, per
Pod). HAMi-core beside MPS, what the numbers say and every finding:
[../sharing-comparison.md](../sharing-comparison.md).

## A neighbour that faults, and one that streams

The `cluster` host proof with the fault and bandwidth steps first in each Pod
([h200/neighbour-steps/](h200/neighbour-steps/README.md)), judged by this judge: `fault-isolation` passes when Pod A
runs on beside Pod B's fault, and `bandwidth-neighbour` is the finding of what B's copy cost A's.

{neighbour_table(record)}
## Repeatability

Recorded with `docs/host-proof/repeat.sh` on the same card, probes and judge as the runs above. Each row is one run of
`python -m components.verify.host STACK --lib libvgpu.so`; the context charged is each Pod's `context-charge`
finding (a context is {context_sizes(record)} MiB by NVML's count), never counted into `passed`; a proof's time is
its whole wall time, in brackets the baseline (alone on the card, compute stacks only) and the Pods.

{repeatability.table(record)}
{final_section(record)}{TWO_CARDS}"""


def readme_block(record: Path) -> str:
    comparison = _load(record / "comparison.json")
    table = _table(record)
    verdicts = {run: _load(record / run / "verdict.json") for run in RUNS if (record / run / "verdict.json").is_file()}
    passed = [f"`{r}`" for r, v in verdicts.items() if "hami-core" in r and v["passed"]]
    failed = [f"`{r}` ({', '.join(c['id'] for c in v['checks'] if c['passed'] is False)})"
              for r, v in verdicts.items() if "hami-core" in r and not v["passed"]]  # fmt: skip
    bare_failed = [f"`{r}`" for r, v in verdicts.items() if r.endswith("bare") and not v["passed"]]
    uncharged = uncharged_contexts(record)
    card = comparison["card"]
    text = f"""{README_START}
On one {card.get("name")} (driver {card.get("driver")}; every verdict and raw output in
[host-proof/](host-proof/README.md), the comparison in
[sharing-comparison.md](sharing-comparison.md)), under libvgpu.so: {", ".join(passed)} passed every check
a host can run (`compute-limited` in the staggered run at {" and ".join(staggered_shares(record))} of the unlimited
speed, the two Pods at once)"""
    if failed:
        text += f"; {', '.join(failed)} failed"
    if uncharged:
        judged = len(charge_findings(record))
        text += (f"; {len(uncharged)} of {judged} Pods' contexts were charged less than their size, the"
                 " `context-charge` finding, which `passed` never counts")  # fmt: skip
    text += f""". Bare, {", ".join(bare_failed)} failed, with the library's absence as the reason.
HAMi-core beside MPS on the `cluster` stack's quotas (shares of one unlimited process alone on the card; each
Pod's mean over {comparison["windowSeconds"]:g} s after {warmup(record)} s, and the range of its whole seconds):

{table}

![Per-second share of each kernel shape, Pod A, under HAMi-core and MPS](host-proof/h200/comparison.png)
{README_END}"""
    return text


def _expectation(folder: Path, verdict: Mapping[str, Any]) -> Any:
    """The run's own expectation; where this judge no longer reads it, the same one planned from the stack now."""
    from components.incluster.expectation import Expectation

    try:
        return Expectation.parse({**_load(folder / "expect.json"), "hostProof": True})  # judged on a host
    except ValueError:
        from components.verify.host import expectation
        from components.verify.host.proof import limit_env

        pods = sorted(p for p in _load(folder / "evidence.json") if p != "alone")  # the record's own Pod names
        prefix = f"gpushare:verify.podPrefix={pods[0].rsplit('-', 1)[0]}" if pods else ""
        planned = expectation.host_plan(str(verdict["stack"]), [prefix] if prefix else [])["expect"]
        setup = str(verdict.get("setup") or "hami-core")
        mechanism = "mps" if setup == "mps" else "hami-core"
        card = (verdict.get("card") or {}).get("mib")
        judged = expectation.host_expect(planned, mechanism, limit_env(planned, setup), card)
        # The ties need the Pod objects a run since provenance kept; a run before it is judged as it was.
        tied = any("podObject" in out for out in _load(folder / "evidence.json").values() if isinstance(out, dict))
        return dataclasses.replace(judged, provenance=tied)


def rejudge(record: Path) -> list[str]:
    """Judge every run's recorded probe output again with this repository's judge (the probes ran on the GPU host;
    the judge needs none). Cluster-only checks stay as the run reported them. Returns the runs judged again."""
    from components.incluster import judge
    from components.incluster.probes.memory_findings import with_neighbours
    from components.verify.host.expectation import POD_ANNOTATION_PARTS
    from components.verify.host.proof import context_charges

    done = []
    stepped = sorted(p.parent for p in record.glob(f"{neighbours.FOLDER}/*/verdict.json"))
    for folder in (p for p in [*run_folders(record), *stepped] if (p / "expect.json").is_file()):
        old = _load(folder / "verdict.json")
        outputs = {pod: out for pod, out in _load(folder / "evidence.json").items() if pod != "alone"}
        expect = neighbours.fitted(_expectation(folder, old), outputs)
        new = judge.judge(expect, {"pods": neighbours.pod_logs(outputs)})
        if expect.system in POD_ANNOTATION_PARTS:  # what this judge leaves to a cluster, as a proof now names it
            old["partsNotRunOnHost"] = {**(old.get("partsNotRunOnHost") or {}),
                                        "podAnnotations": POD_ANNOTATION_PARTS[expect.system]}  # fmt: skip
        fresh = {c["id"]: c for c in new["checks"]}
        checks = [fresh.get(c["id"], c) if c["passed"] is not None else c for c in old["checks"]]
        checks += [c for c in new["checks"] if c["id"] not in {x["id"] for x in old["checks"]}]
        ran = [c for c in checks if c["passed"] is not None]
        old.update(checks=checks, findings=with_neighbours(new["findings"], context_charges(outputs)),
                   passed=bool(ran) and all(c["passed"] for c in ran))  # fmt: skip
        (folder / "verdict.json").write_text(json.dumps(old, indent=1))
        done.append(folder.name)
    return done


def install(record: Path, root: Path = ROOT) -> None:
    """Copy the record in, rewrite the docs and docs/host-proof.md's block, refresh the fixtures."""
    docs = root / "docs" / "host-proof" / "h200"
    if record.resolve() != docs.resolve():  # rendering the committed record again (after --rejudge) copies nothing
        shutil.rmtree(docs, ignore_errors=True)
        shutil.copytree(record, docs, ignore=shutil.ignore_patterns("*.log"))
    for name, run in FIXTURE_RUNS.items():
        if (record / run / "evidence.json").is_file():
            target = root / "tests" / "fixtures" / "real" / "h200" / name
            target.mkdir(parents=True, exist_ok=True)
            shutil.copy(record / run / "evidence.json", target / "evidence.json")
    if (record / "card.csv").is_file():
        shutil.copy(record / "card.csv", root / "tests" / "fixtures" / "real" / "h200" / "card.csv")
    (root / "docs" / "host-proof" / "README.md").write_text(host_proof_doc(record))
    (root / "docs" / "sharing-comparison.md").write_text(comparison_doc(record))
    readme = root / "docs" / "host-proof.md"  # the page that explains the host proof holds its figures
    text = readme.read_text()
    start, end = text.index(README_START), text.index(README_END) + len(README_END)
    readme.write_text(text[:start] + readme_block(record) + text[end:])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m components.verify.host.record", description=__doc__.splitlines()[0])
    p.add_argument("record", help="the folder record.sh wrote")
    p.add_argument("--rejudge", action="store_true", help="judge the recorded outputs again with this judge first")
    args = p.parse_args(argv)
    record = Path(args.record)
    if not (record / "comparison.json").is_file():
        print(f"error: {record} has no comparison.json: not a record.sh folder", file=sys.stderr)
        return 2
    if args.rejudge:
        print(f"judged again: {', '.join(rejudge(record)) or 'nothing (no expect.json)'}")
    install(record)
    print(f"installed {record} into docs/host-proof/h200, tests/fixtures/real/h200, the docs and docs/host-proof.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
