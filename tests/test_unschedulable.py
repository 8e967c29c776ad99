"""A proof Pod the scheduler cannot place ends the verifier within verify.unschedulableGraceSeconds, naming the
scheduler's message, not at its deadline; a verifier Pod that cannot be placed ends `up` with the same message."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from components.incluster.scheduling import UnplacedClock, unschedulable
from components.verify.collect import UNPLACED_GRACE_ENV, VERIFIER_POD, WAIT_ENDED_OR_UNPLACED, verdict_from_status
from components.verify.settings import VerifyConfig
from tests.helpers.recorded import load_raw as load
from tests.test_verifier_client import FakeApi, FakeClock, pod_object, run_verifier
from tests.test_verifier_client import serve as serve  # the fixture

SCHEDULER_SAYS = (
    "0/1 nodes are available: 1 Insufficient nvidia.com/gpumem. preemption: 0/1 nodes are available: 1 No "
    "preemption victims found for incoming pod."
)
# A Pending Pod as `kubectl get pod -o json` shows it after the scheduler's first failed attempt.
UNSCHEDULABLE_STATUS: dict[str, Any] = {
    "phase": "Pending",
    "qosClass": "BestEffort",
    "conditions": [
        {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": SCHEDULER_SAYS,
            "lastProbeTime": None,
            "lastTransitionTime": "2026-12-02T10:00:00Z",
        }
    ],
}


class UnplacedApi(FakeApi):
    """The recorded run, with one Pod's status replaced by an Unschedulable one."""

    def __init__(self, expect: dict[str, Any], evidence: dict[str, Any], unplaced: str) -> None:
        super().__init__(expect, evidence)
        self.unplaced = unplaced

    def answer(self, path: str, query: dict[str, list[str]]) -> tuple[int, str, str]:
        if path == f"/api/v1/namespaces/{self.namespace}/pods/{self.unplaced}":
            pod = self.evidence["pods"][self.unplaced]
            obj = pod_object(self.unplaced, self.namespace, {**pod, "nodeName": None, "containerStatuses": []})
            obj["status"] = copy.deepcopy(UNSCHEDULABLE_STATUS)
            return 200, "application/json", json.dumps(obj)
        return super().answer(path, query)


def test_the_scheduler_message_is_read_from_a_pending_pods_podscheduled_condition() -> None:
    assert unschedulable(UNSCHEDULABLE_STATUS) == SCHEDULER_SAYS
    scheduled = {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "True"}]}
    assert unschedulable(scheduled) is None
    assert unschedulable({"phase": "Pending"}) is None


def test_a_pod_placed_again_restarts_its_unschedulable_clock() -> None:
    clock = UnplacedClock()
    clock.saw("a", SCHEDULER_SAYS, 0.0)
    clock.saw("a", None, 50.0)
    clock.saw("a", SCHEDULER_SAYS, 60.0)
    assert clock.overdue(150.0, 120.0) == []
    [line] = clock.overdue(180.0, 120.0)
    assert line.startswith("Pod a could not be scheduled for 120 s") and SCHEDULER_SAYS in line


def test_an_unschedulable_proof_pod_ends_the_verifier_after_its_grace_not_at_its_deadline(
    tmp_path: Path, serve: Any
) -> None:
    expect, evidence = load("k3s")
    expect["deadlineSeconds"] = 900
    pod = expect["pods"][0]
    clock = FakeClock()
    url = serve(UnplacedApi(expect, evidence, pod))
    rc, verdict = run_verifier_with(tmp_path, url, expect, clock, grace="60")
    assert rc == 0 and verdict["passed"] is False
    assert 60 <= clock.now < 70, f"the verifier waited {clock.now} s for a Pod the scheduler refused"
    observed = " ".join(str(c["observed"]) for c in verdict["checks"] if c["passed"] is False)
    assert f"Pod {pod} could not be scheduled" in observed and SCHEDULER_SAYS in observed


def test_the_overcommit_pod_pending_by_design_does_not_end_the_verifier(tmp_path: Path, serve: Any) -> None:
    expect, evidence = load("k3s")
    clock = FakeClock()
    url = serve(UnplacedApi(expect, evidence, expect["overcommitPod"]))
    rc, verdict = run_verifier_with(tmp_path, url, expect, clock, grace="0")
    assert rc == 0
    assert not any("could not be scheduled" in str(c["observed"]) for c in verdict["checks"])


def run_verifier_with(tmp_path: Path, url: str, expect: dict[str, Any], clock: FakeClock, grace: str) -> Any:
    return run_verifier(tmp_path, url, expect, clock, **{UNPLACED_GRACE_ENV: grace})


def test_an_unschedulable_verifier_pod_is_a_failed_verdict_naming_the_scheduler(plan_stack) -> None:
    from components.incluster.expectation import Expectation

    expect = Expectation.parse(json.dumps(load("k3s")[0]))
    verdict = verdict_from_status(copy.deepcopy(UNSCHEDULABLE_STATUS), expect)
    assert verdict["passed"] is False
    assert f"the verifier Pod {VERIFIER_POD} could not be scheduled: {SCHEDULER_SAYS}" in verdict["error"]
    assert "gpushare:verify.runId" in verdict["error"]


def test_the_verifier_pods_wait_ends_on_unschedulable_and_carries_the_configured_grace(plan_stack) -> None:
    plan = plan_stack("k3s", "gpushare:verify.unschedulableGraceSeconds=45")
    pod = plan.one("kubernetes:core/v1:Pod", "gpushare-proof-verifier-pod")
    assert pod["inputs"]["metadata"]["annotations"] == WAIT_ENDED_OR_UNPLACED
    env = {e["name"]: e.get("value") for e in pod["inputs"]["spec"]["containers"][0]["env"]}
    assert env[UNPLACED_GRACE_ENV] == "45"
    assert VerifyConfig().unschedulable_grace_seconds == 120
