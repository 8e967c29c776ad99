"""HAMi-core beside MPS on one card: the same proof Pods, the same probes, one table.

Standard library only (matplotlib, when present, draws the per-second picture). For each mechanism: what a Pod
is told (the memory view), where it is refused and how exactly, the compute share of each kernel shape (mean
and spread of whole seconds, over the window), what a neighbour running at the same time costs, and findings.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from components.verify.host.proof import (
    BASELINE_SECONDS,
    BASELINE_WARMUP_S,
    PROCESS_TIMEOUT_S,
    HostOptions,
    last_json,
    pod_env,
    prove,
)
from components.verify.host.runner import card, clean_env, mps_daemon, probe, run_process

JUDGED = "short_many"
UNLIMITED_BASELINE = "baseline-unlimited.json"
"""The comparison's baseline file, beside each proof's own (proof.measure_baseline names those by setup)."""
MECHANISMS = ("hami-core", "mps")


def _compute(args: list[str], env: Mapping[str, str]) -> dict[str, Any]:
    code, out, err = run_process(probe("compute", args), env, PROCESS_TIMEOUT_S)
    return last_json(out) or {"ok": False, "error": f"exit {code}: {err[-300:]}"}


def baselines(options: HostOptions, expect: Mapping[str, Any], log: Callable[[str], None]) -> dict[str, Any]:
    """The card unlimited with no library (the comparison's baseline), and HAMi-core's own "disable" beside it."""
    base_args = ["--baseline", "none", "--seconds", str(BASELINE_SECONDS), "--warmup", str(BASELINE_WARMUP_S)]
    log("baseline: a process with no library and no MPS, alone on the card")
    bare = _compute([*base_args, "--measured-by", "a process with no library and no MPS, alone"], clean_env())
    if not bare.get("ok"):
        raise RuntimeError(f"the unlimited baseline failed: {bare.get('error')}")
    path = options.workdir / UNLIMITED_BASELINE
    path.write_text(json.dumps(bare))
    disabled_env = {**pod_env(expect, replace(options, setup="hami-core"), "disabled"),
                    "GPU_CORE_UTILIZATION_POLICY": "disable"}  # fmt: skip
    log("the judged shape under libvgpu.so with GPU_CORE_UTILIZATION_POLICY=disable, against that baseline")
    args = ["--baseline", str(path), "--seconds", str(BASELINE_SECONDS), "--warmup", str(BASELINE_WARMUP_S),
            "--shapes", JUDGED, "--no-findings"]  # fmt: skip
    disabled = _compute(args, disabled_env)
    return {"file": path, "bare": bare, "policy_disabled": disabled}


def alone(options: HostOptions, expect: Mapping[str, Any], baseline: Path, seconds: float) -> dict[str, Any]:
    """Pod A alone on the card, the judged shape: its share with no neighbour."""
    env = pod_env(expect, options, "alone")
    args = ["--baseline", str(baseline), "--shapes", JUDGED, "--seconds", str(seconds), "--warmup",
            str(options.compute_warmup), "--no-findings"]  # fmt: skip
    return _compute(args, env)


def _pct(value: Any) -> str:
    return "–" if value is None else f"{float(value):.2f}"


def summarise(mech: str, proven: Mapping[str, Any], solo: Mapping[str, Any], quota_mib: int) -> dict[str, Any]:
    """One mechanism's row of facts from its proof's raw outputs."""
    evidence = proven["evidence"]
    pods = list(evidence)
    first = evidence[pods[0]]
    memory = first.get("memory") or {}
    hold = (memory.get("phases") or {}).get("hold") or {}
    largest, overhead = memory.get("largest_alloc_mib"), memory.get("context_overhead_mib")
    compute_rows: dict[str, Any] = {}
    for pod in pods:
        result = evidence[pod].get("compute") or {}
        base = ((result.get("baseline") or {}).get("shapes")) or {}
        for shape, m in (result.get("shapes") or {}).items():
            unit = (base.get(shape) or {}).get("mean_per_s")
            spread = (
                [round(v / unit, 2) for v in (m.get("timeline_per_s") or [])[int(m.get("warmup_s") or 0) :]]
                if unit
                else []
            )
            compute_rows.setdefault(shape, {})[pod] = {
                "share": (result.get("share") or {}).get(shape),
                "per_s_share_min": min(spread) if spread else None,
                "per_s_share_max": max(spread) if spread else None,
                "launch_ms": m.get("launch_ms_median"),
            }
    together = (compute_rows.get(JUDGED) or {}).get(pods[0], {}).get("share")
    solo_share = (solo.get("share") or {}).get(JUDGED)
    findings = {f["id"]: f.get("bypassed") for f in proven["verdict"]["findings"] if f.get("pod") == pods[0]}
    return {
        "mechanism": mech,
        "passed": proven["verdict"]["passed"],
        "memory": {
            "visible_total_mib": memory.get("visible_total_mib"),
            "visible_free_mib": memory.get("visible_free_mib"),
            "nvml_total_mib": memory.get("nvml_total_mib"),
            "view_rewritten": (memory.get("enforcement") or {}).get("view_rewritten"),
            "largest_alloc_mib": largest,
            "context_overhead_mib": overhead,
            "refused_at_mib": None if largest is None else largest + 1,
            "exact": largest is not None and overhead is not None and largest + overhead == quota_mib,
            "oom_lines": (memory.get("enforcement") or {}).get("oom_lines"),
            "hold_mib": hold.get("hold_mib"),
            "extra_refused": hold.get("extra_ok") is False,
            "limit_enforced": memory.get("limit_enforced"),
            "neighbour_held_same_time": next(
                (c["passed"] for c in proven["verdict"]["checks"] if c["id"] == "neighbor-isolation"), None
            ),
        },
        "compute": compute_rows,
        "neighbour": {"judged_share_alone": solo_share, "judged_share_beside_neighbour": together},
        "findings": findings,
        "checks": {c["id"]: c["passed"] for c in proven["verdict"]["checks"]},
    }


def table(
    rows: list[dict[str, Any]],
    quota_mib: int,
    cores: int | None,
    card_info: Mapping[str, Any],
    calibration: Mapping[str, Any],
) -> str:
    """The comparison as a Markdown table, one column per mechanism."""
    head = f"| on {card_info.get('name')} ({card_info.get('mib')} MiB), quota {quota_mib} MiB, compute {cores}% |"
    lines = [head + "".join(f" {r['mechanism']} |" for r in rows), "|---|" + "---|" * len(rows)]

    def row(label: str, cell: Callable[[dict[str, Any]], Any]) -> None:
        lines.append(f"| {label} |" + "".join(f" {cell(r)} |" for r in rows))

    row(
        "Pod A's memory view: total / free (MiB)",
        lambda r: f"{r['memory']['visible_total_mib']} / {r['memory']['visible_free_mib']}",
    )
    row("view rewritten to the quota", lambda r: "yes" if r["memory"]["view_rewritten"] else "no")
    row("largest allocation / first refused (MiB)",
        lambda r: f"{r['memory']['largest_alloc_mib']} / {r['memory']['refused_at_mib']}")  # fmt: skip
    row("charged context (MiB); refusal exact", lambda r: f"{r['memory']['context_overhead_mib']}; "
        + ("exact: largest + context = quota" if r["memory"]["exact"] else "not at the quota"))  # fmt: skip
    row("OOM lines on stderr", lambda r: r["memory"]["oom_lines"])
    row("hold kept, extra refused; neighbour held at once", lambda r: f"{r['memory']['extra_refused']}; "
        f"{r['memory']['neighbour_held_same_time']}")  # fmt: skip
    shapes = sorted({s for r in rows for s in r["compute"]}, key=lambda s: (s != JUDGED, s))
    for shape in shapes:

        def cell(r: dict[str, Any], shape: str = shape) -> str:
            pods = r["compute"].get(shape) or {}
            return (
                ", ".join(
                    f"{_pct(v['share'])} ({_pct(v['per_s_share_min'])}–{_pct(v['per_s_share_max'])})"
                    for v in pods.values()
                )
                or "–"
            )

        ms = (calibration.get(shape) or {}).get("launch_ms")
        row(f"compute share, {shape} ({ms} ms a launch unlimited): each Pod, mean (per-second range)", cell)
    row(f"{JUDGED} share alone → beside a neighbour", lambda r: f"{_pct(r['neighbour']['judged_share_alone'])} → "
        f"{_pct(r['neighbour']['judged_share_beside_neighbour'])}")  # fmt: skip
    ids = sorted({f for r in rows for f in r["findings"]})
    for fid in ids:

        def outcome(r: dict[str, Any], fid: str = fid) -> str:
            if fid not in r["findings"]:
                return "–"
            return {True: "bypassed", False: "held", None: "not tried"}.get(r["findings"][fid], "–")

        row(f"finding {fid} (Pod A)", outcome)
    return "\n".join(lines) + "\n"


def plot(rows_raw: Mapping[str, Mapping[str, Any]], path: Path) -> bool:
    """Per-second share of each shape, Pod A, under each mechanism; False when matplotlib is absent."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, axes = plt.subplots(1, len(rows_raw), figsize=(6 * len(rows_raw), 3.5), sharey=True, squeeze=False)
    for ax, (mech, evidence) in zip(axes[0], rows_raw.items(), strict=False):
        result = next(iter(evidence.values())).get("compute") or {}
        base = ((result.get("baseline") or {}).get("shapes")) or {}
        for shape, m in (result.get("shapes") or {}).items():
            unit = (base.get(shape) or {}).get("mean_per_s")
            if unit:
                ax.plot([v / unit for v in m.get("timeline_per_s") or []], marker=".", label=shape)
        ax.axhline((result.get("limit_percent") or 0) / 100, color="grey", linestyle="--", label="limit")
        ax.set_title(f"{mech}: Pod A, share of unlimited per second")
        ax.set_xlabel("second")
        ax.legend(fontsize=8)
    axes[0][0].set_ylabel("share")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True


def compare(
    host: Mapping[str, Any], options: HostOptions, out: Path, log: Callable[[str], None] = print
) -> dict[str, Any]:
    """Both mechanisms on this card, from one command: proofs, a baseline, an alone run each; the table."""
    expect = host["expect"]
    quota, cores = int(expect.get("visibleMiB") or 0), expect.get("coresPercent")
    seconds = options.compute_seconds or 20
    info = card()
    base = baselines(options, expect, log)
    rows, raws, verdicts = [], {}, {}
    for mech in MECHANISMS:
        if mech == "mps":
            with mps_daemon(options.workdir / "mps", log) as mps_env:
                opts = replace(options, setup="mps", mps_env=mps_env)
                solo = alone(opts, expect, base["file"], seconds)
                proven = prove(host, opts, log, baseline_file=base["file"])
        else:
            opts = replace(options, setup="hami-core")
            solo = alone(opts, expect, base["file"], seconds)
            # Judged against a baseline of its own stack (the library loaded, its limit lifted), as in a Pod.
            proven = prove(host, opts, log)
        folder = out / f"{host.get('stack')}-{mech}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "verdict.json").write_text(json.dumps(proven["verdict"], indent=1))
        (folder / "evidence.json").write_text(json.dumps({"alone": solo, **proven["evidence"]}, indent=1))
        (folder / "expect.json").write_text(json.dumps(proven["expect"], indent=1))
        rows.append(summarise(mech, proven, solo, quota))
        raws[mech] = proven["evidence"]
        verdicts[mech] = proven["verdict"]
    disabled_share = base["policy_disabled"].get("share") or {}
    result = {
        "card": info,
        "quotaMiB": quota,
        "coresPercent": cores,
        "windowSeconds": seconds,
        "baseline": {
            "how": base["bare"].get("measured_by"),
            "calibration": base["bare"].get("calibration"),
            "shapes": {k: v.get("mean_per_s") for k, v in (base["bare"].get("shapes") or {}).items()},
            "policy_disabled_share": disabled_share,
        },
        "rows": rows,
    }
    (out / "comparison.json").write_text(json.dumps(result, indent=1))
    text = table(rows, quota, cores, info, base["bare"].get("calibration") or {})
    text += (f"\nBaseline: {result['baseline']['how']}. Under libvgpu.so with GPU_CORE_UTILIZATION_POLICY=disable the "
             f"same shapes ran at {disabled_share} of it.\n")  # fmt: skip
    (out / "comparison.md").write_text(text)
    if plot(raws, out / "comparison.png"):
        log(f"picture: {out / 'comparison.png'}")
    log(text)
    return result
