"""A Job that waits in the cluster until an object an operator creates reports ready, so Pulumi can wait on it.

Helm's --wait sees a chart's own workloads, not what its operator creates afterwards (KAI's `kai-config`, the
GPU Operator's ClusterPolicy), and Patch resources run no await logic (pulumi/pulumi-kubernetes#2455). The gate's
Pod reads that one object with a ServiceAccount allowed only `get` on it, and exits once it is ready.

A Job, not a bare Pod, because the provider's Job await ends the update as soon as the Job fails, naming it
(provider/pkg/await/checker/job/check.go: BackoffLimitExceeded, DeadlineExceeded), where a Pod's waitFor would
wait out the whole timeout; and `pulumi.com/replaceUnready` makes the next `pulumi up` replace a Job that never
completed instead of waiting on it again (provider/pkg/provider/provider.go, Diff: supported for Jobs only).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi

from components import incluster
from components.contracts.names import stack_scoped
from components.providers import ApiFields, k8s
from components.reader_account import reader_account

COMMAND = incluster.pod_command("ready_gate_pod")
MARGIN_SECONDS = 120
"""The Job's deadline beyond the gate's own (image pull and start), and Pulumi's beyond the Job's."""


@dataclass(frozen=True)
class ReadyGateArgs:
    """One cluster-scoped object to wait for, and how to tell that it is ready."""

    namespace: pulumi.Input[str]
    """Where the gate Pod runs (the namespace of the release that creates the object)."""
    api_group: str
    version: str
    plural: str
    object_name: str
    ready_rule: str
    """`condition:Ready`, a field and its value (`status.state=ready`), or `annotation:KEY` (set, not empty)."""
    image: str
    """Any image with python3."""
    stack: str = field(kw_only=True)
    """The stack's name (`pulumi.get_stack()`): in every name another stack on the same cluster could also give."""
    timeout_seconds: int = 600
    after: Sequence[pulumi.Resource] = ()
    non_resource_path: str | None = None
    """An API path that is no object (`/version`): read instead of the object above, allowed by nonResourceURLs."""
    hint: str | None = None
    """What to do when the gate fails (the config key to set), appended to its last line."""


def gate_path(args: ReadyGateArgs) -> str:
    """The object's API path: the core group (`""`, Nodes) lives under /api, every other group under /apis."""
    if args.non_resource_path:
        return args.non_resource_path
    group = f"/apis/{args.api_group}" if args.api_group else "/api"
    return f"{group}/{args.version}/{args.plural}/{args.object_name}"


def gate_rules(args: ReadyGateArgs) -> list[dict[str, Any]]:
    """`get` on exactly the one object, or the one non-resource path."""
    if args.non_resource_path is not None:
        return [{"nonResourceURLs": [args.non_resource_path], "verbs": ["get"]}]
    return [
        {
            "apiGroups": [args.api_group],
            "resources": [args.plural],
            "resourceNames": [args.object_name],
            "verbs": ["get"],
        }
    ]


def gate_job_spec(args: ReadyGateArgs, account: str, files: str, path: str) -> ApiFields:
    """One try (backoffLimit 0), ended by the cluster at the gate's deadline even if its Pod never starts."""
    return {
        "backoffLimit": 0,
        "activeDeadlineSeconds": args.timeout_seconds + MARGIN_SECONDS,
        "template": {
            "spec": {
                "serviceAccountName": account,
                "restartPolicy": "Never",
                "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                "containers": [
                    {
                        "name": "gate",
                        "image": args.image,
                        "command": COMMAND,
                        "env": [
                            {"name": "GATE_PATH", "value": path},
                            {"name": "GATE_READY", "value": args.ready_rule},
                            {"name": "GATE_TIMEOUT", "value": str(args.timeout_seconds)},
                            *({"name": k, "value": v} for k, v in incluster.pod_env().items()),
                            *([{"name": "GATE_HINT", "value": args.hint}] if args.hint else []),
                        ],
                        "volumeMounts": [incluster.volume_mount("files")],
                        # The gate's last line ("not ready in time: … last seen: …") becomes the message the
                        # provider's Job error carries.
                        "terminationMessagePolicy": "FallbackToLogsOnError",
                    }
                ],
                "volumes": [incluster.volume("files", files)],
            }
        },
    }


class ReadyGate(pulumi.ComponentResource):
    """ServiceAccount, a ClusterRole for `get` on exactly one object, the in-cluster files, and the Job Pulumi
    waits to complete."""

    job: k8s.batch.v1.Job

    def __init__(self, name: str, args: ReadyGateArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpushare:gpu:ReadyGate", name, None, opts)
        # The Job, its account and files may share a namespace with another stack's, the roles a cluster.
        scoped = stack_scoped(name, args.stack)
        _, binding = reader_account(
            self,
            name,
            account_name=scoped,
            namespace=args.namespace,
            role_name=f"gpushare-{scoped}",
            rules=gate_rules(args),
            after=args.after,
        )
        files = k8s.core.v1.ConfigMap(
            f"{name}-files",
            metadata={"name": f"{scoped}-files", "namespace": args.namespace},
            data=incluster.files(),
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.after)),
        )
        path = gate_path(args)
        self.job = k8s.batch.v1.Job(
            f"{name}-job",
            metadata={
                "name": scoped,
                "namespace": args.namespace,
                "annotations": {"pulumi.com/replaceUnready": "true"},
            },
            spec=gate_job_spec(args, scoped, f"{scoped}-files", path),
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=[*args.after, binding, files],
                delete_before_replace=True,
                custom_timeouts=pulumi.CustomTimeouts(create=f"{args.timeout_seconds + 2 * MARGIN_SECONDS}s"),
            ),
        )
        self.register_outputs({"object": path, "ready": args.ready_rule})
