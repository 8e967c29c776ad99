"""The verifier Pod: in the cluster, read-only, it waits for the proof Pods, judges them, and is the proof's last word.

Pulumi waits for it (`pulumi.com/waitFor`) and reads the compact verdict from its termination message, so
`pulumi up` needs no kubectl, port-forward or local client. In preview nothing has run: the outputs list the
planned checks with `passed: None`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi

from components import incluster
from components.incluster import audit, judge, message
from components.incluster.expectation import Expectation
from components.incluster.scheduling import UNSCHEDULABLE, unschedulable
from components.providers import ApiFields, k8s
from components.pulumi_internals import offline_plan, unknown_output
from components.reader_account import reader_account
from components.verify import report
from components.verify.workloads import COMMON_LABELS, GPU_TAINT_TOLERATION

VERIFIER_POD = "gpushare-verifier"
DEADLINE_MARGIN_SECONDS = 300
"""Beyond the verifier's own deadline: image pull, start, judging; then the kubelet stops it."""
KILL_MARGIN_SECONDS = 60
"""Pulumi's create timeout beyond the Pod's activeDeadlineSeconds, so the cluster's deadline ends it first."""
VERIFIER_INPUTS = ("metadata", "spec")
"""The verifier Pod's inputs: a change to any replaces it, so a new expectation is judged by a new run."""
READ_ONLY = ("get", "list", "watch")
CLUSTER_RULES: tuple[dict[str, Any], ...] = (
    {"apiGroups": [""], "resources": ["pods", "pods/log"], "verbs": list(READ_ONLY)},
    {"apiGroups": [""], "resources": ["events"], "verbs": ["get", "list"]},
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list"]},
)
UNPLACED_GRACE_ENV = "GPUSHARE_UNSCHEDULABLE_GRACE_SECONDS"
PROXY_RULE: dict[str, Any] = {"apiGroups": [""], "resources": ["pods/proxy"], "verbs": ["get"]}
# Ended (WAIT_ENDED's phases), or not placed: a `status` child that is an ended phase, or the conditions list holding
# the scheduler's Unschedulable (RFC 9535 existence test; pulumi-kubernetes provider/pkg/jsonpath/jsonpath.go
# Matches takes a selected list as found). A verifier the scheduler refuses ends `up` at once with its reason
# instead of at the create timeout; the provider only logs the FailedScheduling event while it waits
# (provider/pkg/await/watchers.go:206-232, NewEventAggregator).
WAIT_ENDED_OR_UNPLACED = {
    "pulumi.com/waitFor": "jsonpath={.status[?@ == 'Succeeded' || @ == 'Failed' || "
    f"@[?@.reason == '{UNSCHEDULABLE}']]}}"
}


class VerificationFailed(Exception):
    """The verdict is known and a check failed, with failOnViolation set."""


@dataclass(frozen=True)
class VerifierArgs:
    """What the verifier expects, where it runs, and what it waits for."""

    provider: k8s.Provider
    namespace: pulumi.Input[str]
    expect: Expectation
    """What the checks compare against (proof.expectations): the verifier's GPUSHARE_EXPECT as JSON."""
    image: str
    config_map_name: str
    proof_pods: Sequence[pulumi.Resource]
    fail_on_violation: bool = True
    ready: Sequence[pulumi.Resource] = ()
    run_id: str = "1"
    """A new value replaces the verifier Pod, so it judges the new proof Pods."""
    replace_with: Sequence[pulumi.Resource] = ()
    """A replaced node pool or VM replaces the verifier too (pulumi step_generator.go:2893-2903, ReplaceWith)."""
    unschedulable_grace_seconds: int = 120
    """How long the verifier lets a proof Pod stay Unschedulable before it ends with the scheduler's reason."""
    shared_card_uuid: pulumi.Input[str] | None = None
    """The UUID of the card the proof Pods are pinned to, read at `pulumi up`: the verifier's copy of `expect`
    carries it (so a new card is judged by a new verifier), the planned one does not."""


def expectation_json(expect: Expectation, shared_card_uuid: pulumi.Input[str] | None) -> pulumi.Input[str]:
    """GPUSHARE_EXPECT: the expectation, with the shared card's UUID once `pulumi up` has read it."""
    if shared_card_uuid is None:
        return expect.to_json()
    return pulumi.Output.from_input(shared_card_uuid).apply(
        lambda uuid: dataclasses.replace(expect, shared_card_uuid=uuid).to_json()
    )


def planned_verification(expect: Expectation) -> dict[str, Any]:
    """The verdict before anything ran: every planned check with its expectation, none claimed."""
    return {"passed": None, "mechanism": expect.mechanism, "checks": judge.planned_checks(expect), "findings": []}


def _field(obj: Any, camel: str, snake: str) -> Any:
    """A status field from Pulumi's typed outputs (snake_case keys) or a plain manifest (camelCase).

    Read through dict's own `get`: a typed output's `get` logs a warning for a camelCase key
    (pulumi-kubernetes' generated output types, `__key_warning`), which `pulumi up` would print.
    """
    if not isinstance(obj, Mapping):
        return None

    def read(key: str) -> Any:
        return dict.get(obj, key) if isinstance(obj, dict) else obj.get(key)

    value = read(snake)
    return value if value is not None else read(camel)


def termination_message(status: Any) -> str | None:
    """`status.containerStatuses[0].state.terminated.message`, or None while the verifier has not ended."""
    statuses = _field(status, "containerStatuses", "container_statuses") or []
    if not statuses:
        return None
    terminated = _field(_field(statuses[0], "state", "state"), "terminated", "terminated")
    message = _field(terminated, "message", "message")
    return message or None


def _status_fields(status: Any) -> dict[str, Any]:
    """The Pod status's conditions as the API writes them, from Pulumi's outputs or a manifest."""
    conditions = _field(status, "conditions", "conditions") or []
    keys = ("type", "status", "reason", "message")
    return {"conditions": [{k: _field(c, k, k) for k in keys} for c in conditions]}


NO_MESSAGE = (
    "not judged: the verifier Pod ended without a termination message (no container ran it, as under a cluster"
    " simulator, or it was stopped before it wrote one); read its log"
)
"""The verdict's reason where the verifier wrote nothing: never passed, and saying that nothing was judged."""


def verdict_from_status(status: Any, expect: Expectation) -> dict[str, Any]:
    """The verifier Pod's status → the full `verification` output (message.expand of its termination message)."""
    text = termination_message(status)
    unplaced = unschedulable(_status_fields(status)) if text is None else None
    if unplaced is not None:
        return judge.failed_verdict(
            expect,
            f"the verifier Pod {VERIFIER_POD} could not be scheduled: {unplaced}; fix that (or delete the Pod), "
            "then set a new gpushare:verify.runId",
        )
    if text is None:
        return judge.failed_verdict(expect, NO_MESSAGE)
    try:
        compact = message.decode(text)
    except ValueError as exc:
        return judge.failed_verdict(expect, f"the verifier's termination message is unreadable ({exc}): {text[:200]!r}")
    return {"mechanism": expect.mechanism, **message.expand(compact, expect)}


def failing_checks(verification: Mapping[str, Any]) -> list[str]:
    """Ids of the checks that did not pass (a check not run counts as failed)."""
    return [str(c.get("id")) for c in verification.get("checks", []) if c.get("passed") is not True]


def enforce(verification: dict[str, Any], fail_on_violation: bool) -> dict[str, Any]:
    """Raise, naming the failing checks, when the verdict failed and failOnViolation is set; else pass it on."""
    if fail_on_violation and verification.get("passed") is not True:
        failed = failing_checks(verification) or ["(no checks)"]
        details = "; ".join(
            f"{c.get('id')}: expected {c.get('expected')!r}, observed {c.get('observed')!r}"
            for c in verification.get("checks", [])
            if c.get("passed") is not True
        )
        raise VerificationFailed(
            f"gpushare verification failed: {', '.join(failed)}. {details}. "
            "Set gpushare:verify.failOnViolation to false to export the failing verdict instead."
        )
    return verification


class Verifier(pulumi.ComponentResource):
    """ServiceAccount, read-only RBAC, and the verifier Pod whose status carries the verdict."""

    verification: pulumi.Output[Any] | dict[str, Any]
    report: pulumi.Output[str] | str
    ghost_quota: pulumi.Output[Any] | None
    gpu_audit: pulumi.Output[Any] | dict[str, Any]
    """Every Pod that can reach a GPU, counted by class (incluster/audit.py); never part of `passed`."""
    pod: k8s.core.v1.Pod

    def __init__(self, name: str, args: VerifierArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpushare:verify:Verifier", name, None, opts)
        expect = args.expect

        def child(*after: pulumi.Resource, replace_first: bool = False) -> pulumi.ResourceOptions:
            return pulumi.ResourceOptions(
                parent=self,
                provider=args.provider,
                depends_on=[*args.ready, *after],
                delete_before_replace=replace_first or None,
            )

        # Cluster-scoped names carry the proof namespace, so two stacks on one cluster do not collide.
        role_name = f"{expect.namespace}-verifier"
        account, binding = reader_account(
            self,
            name,
            account_name=VERIFIER_POD,
            namespace=args.namespace,
            role_name=role_name,
            rules=CLUSTER_RULES,
            labels=COMMON_LABELS,
            provider=args.provider,
            after=args.ready,
        )
        subject: list[ApiFields] = [{"kind": "ServiceAccount", "name": VERIFIER_POD, "namespace": args.namespace}]
        access: list[pulumi.Resource] = [account, binding]
        monitor = expect.monitor
        if monitor is not None:
            # The monitor's metrics through the API server's Pod proxy: only in its namespace, only get.
            proxy_rules: list[ApiFields] = [dict(PROXY_RULE)]
            proxy_role = k8s.rbac.v1.Role(
                f"{name}-monitor-proxy",
                metadata={"name": role_name, "namespace": monitor.namespace, "labels": COMMON_LABELS},
                rules=proxy_rules,
                opts=child(),
            )
            role_ref: ApiFields = {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role_name}
            access.append(
                k8s.rbac.v1.RoleBinding(
                    f"{name}-monitor-proxy-binding",
                    metadata={"name": role_name, "namespace": monitor.namespace, "labels": COMMON_LABELS},
                    role_ref=role_ref,
                    subjects=subject,
                    opts=child(proxy_role, account),
                )
            )

        active_deadline = expect.deadline_seconds + DEADLINE_MARGIN_SECONDS
        timeout = f"{active_deadline + KILL_MARGIN_SECONDS}s"
        spec: ApiFields = {
            "serviceAccountName": VERIFIER_POD,
            "automountServiceAccountToken": True,
            "restartPolicy": "Never",
            # A verifier that hangs is stopped by the kubelet, Failed, and judged failed (WAIT_ENDED).
            "activeDeadlineSeconds": active_deadline,
            "terminationGracePeriodSeconds": 5,
            # GPU-only node pools (GKE) carry this taint; the verifier uses no GPU but must land somewhere.
            "tolerations": [GPU_TAINT_TOLERATION],
            "containers": [
                {
                    "name": "verifier",
                    "image": args.image,
                    "command": incluster.pod_command("verifier"),
                    "env": [
                        {"name": "GPUSHARE_EXPECT", "value": expectation_json(expect, args.shared_card_uuid)},
                        {"name": "PYTHONUNBUFFERED", "value": "1"},
                        {"name": UNPLACED_GRACE_ENV, "value": str(args.unschedulable_grace_seconds)},
                        *({"name": k, "value": v} for k, v in incluster.pod_env().items()),
                    ],
                    "volumeMounts": [incluster.volume_mount("probes")],
                    "terminationMessagePolicy": "FallbackToLogsOnError",
                }
            ],
            "volumes": [incluster.volume("probes", args.config_map_name)],
        }
        self.pod = k8s.core.v1.Pod(
            f"{name}-pod",
            metadata={
                "name": VERIFIER_POD,
                "namespace": args.namespace,
                "labels": COMMON_LABELS,
                # Terminated either way: a verdict in the termination message, or the crash that stopped it.
                "annotations": dict(WAIT_ENDED_OR_UNPLACED),
            },
            spec=spec,
            opts=pulumi.ResourceOptions.merge(
                child(*access, *args.proof_pods, replace_first=True),
                pulumi.ResourceOptions(
                    custom_timeouts=pulumi.CustomTimeouts(create=timeout, update=timeout),
                    replacement_trigger=args.run_id,
                    replace_with=list(args.replace_with) or None,
                    # Any input change re-runs it; not "*", which also matches the init error a refresh records on a
                    # Failed Pod and would re-judge under the same runId (pulumi step_generator.go:3185 replaces,
                    # :2180 otherwise re-awaits WAIT_ENDED in place).
                    replace_on_changes=list(VERIFIER_INPUTS),
                ),
            ),
        )

        if pulumi.runtime.is_dry_run() and not offline_plan():
            # A real preview has run nothing: the verdict is not known yet, neither the last one nor a planned one.
            self.verification = unknown_output()
            self.report = unknown_output()
            self.ghost_quota = None
            self.gpu_audit = unknown_output()
        elif pulumi.runtime.is_dry_run():
            planned = planned_verification(expect)
            self.verification = planned
            self.report = report.render(planned, expect)
            self.ghost_quota = None
            self.gpu_audit = audit.planned(expect.system_namespaces)
        else:
            fail = args.fail_on_violation
            verification = self.pod.status.apply(lambda s: enforce(verdict_from_status(s, expect), fail))
            self.verification = verification
            self.report = verification.apply(lambda v: report.render(v, expect))
            self.ghost_quota = verification.apply(lambda v: v.get("ghostQuota", []))
            self.gpu_audit = verification.apply(lambda v: v.get("gpuAudit") or {"error": "the verifier sent none"})
        self.register_outputs({"verification": self.verification, "report": self.report})
