"""Per resource type, the few inputs a reviewer checks; everything else is in --json."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

Field = tuple[str, str]
"""A label and its value, as text (it may run over several lines)."""


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _pairs(mapping: dict[str, Any] | None) -> str:
    return ", ".join(f"{k}={_text(v)}" for k, v in sorted((mapping or {}).items())) or "none"


def _flatten(value: Any, prefix: str = "") -> list[tuple[str, Any]]:
    if isinstance(value, dict) and value:
        return [item for k, v in sorted(value.items()) for item in _flatten(v, f"{prefix}{k}.")]
    return [(prefix.rstrip("."), value)]


def object_name(inputs: dict[str, Any]) -> str | None:
    meta = inputs.get("metadata") or {}
    if not meta.get("name"):
        return None
    return f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]


def _accelerators(accelerators: list[dict[str, Any]] | None) -> str:
    parts = []
    for acc in accelerators or []:
        driver = (acc.get("gpuDriverInstallationConfig") or {}).get("gpuDriverVersion")
        sharing = acc.get("gpuSharingConfig") or {}
        parts.append(
            f"{acc.get('count', 1)} × {acc.get('type')}"
            + (f", driver {driver}" if driver else "")
            + (
                f", shared by {sharing.get('gpuSharingStrategy')} among"
                f" {sharing.get('maxSharedClientsPerGpu')} clients per GPU"
                if sharing
                else ""
            )
        )
    return "; ".join(parts) or "none"


def _taints(taints: list[dict[str, Any]] | None) -> str:
    return ", ".join(f"{t.get('key')}={t.get('value', '')}:{t.get('effect')}" for t in taints or []) or "none"


def gke_cluster(i: dict[str, Any]) -> list[Field]:
    return [
        ("name", _text(i.get("name"))),
        ("location", _text(i.get("location"))),
        ("version", _text(i.get("minMasterVersion", "GKE's default"))),
        ("release channel", _text((i.get("releaseChannel") or {}).get("channel", "GKE's default"))),
    ]


def node_pool(i: dict[str, Any]) -> list[Field]:
    node = i.get("nodeConfig") or {}
    return [
        ("machine", f"{node.get('machineType')}" + (" (Spot)" if node.get("spot") else "")),
        ("accelerator", _accelerators(node.get("guestAccelerators"))),
        ("nodes", _text(i.get("nodeCount"))),
        ("labels", _pairs(node.get("labels"))),
        ("taints", _taints(node.get("taints"))),
    ]


def firewall(i: dict[str, Any]) -> list[Field]:
    allows = "; ".join(
        f"{a.get('protocol')} {', '.join(a.get('ports') or ['all ports'])}" for a in i.get("allows") or []
    )
    return [
        ("allows", allows or "nothing"),
        ("from", ", ".join(i.get("sourceRanges") or []) or "nowhere"),
        ("to tags", ", ".join(i.get("targetTags") or []) or "every instance"),
    ]


def instance(i: dict[str, Any]) -> list[Field]:
    scheduling = i.get("scheduling") or {}
    disk = (i.get("bootDisk") or {}).get("initializeParams") or {}
    return [
        ("zone", _text(i.get("zone"))),
        (
            "machine",
            f"{i.get('machineType')}"
            + (f" ({scheduling['provisioningModel']})" if scheduling.get("provisioningModel") else ""),
        ),
        (
            "accelerator",
            _accelerators(i.get("guestAccelerators")) if i.get("guestAccelerators") else "the machine type's own",
        ),
        ("boot disk", f"{disk.get('image')}, {disk.get('size')} GiB"),
    ]


def private_key(i: dict[str, Any]) -> list[Field]:
    return [("algorithm", _text(i.get("algorithm")))]


SHELL_WORDS = {
    "if",
    "then",
    "else",
    "elif",
    "fi",
    "for",
    "while",
    "do",
    "done",
    "case",
    "esac",
    "export",
    ".",
    "!",
    "{",
    "}",
    "local",
    "set",
    "exit",
    "until",
    "sudo",
    "bash",
    "echo",
    "true",
    "false",
    "||",
    "&&",
    "|",
    "cat",
    "sh",
    "-",
}


def programs(script: str) -> list[str]:
    """The programs a shell script runs, in first-use order: what it does, named, without its every line."""
    found: list[str] = []
    for line in script.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or re.fullmatch(r"[A-Z_]+|\)\"?", line):
            continue
        for part in re.split(r"[;|&]+|\$\(|\bthen\b|\belse\b", line):
            words = [w for w in part.split() if "=" not in w or w.startswith("-")]
            word = next((w for w in words if w not in SHELL_WORDS), None)
            if word and re.fullmatch(r"[a-z][a-z0-9._/-]*", word) and word not in found:
                found.append(word.rsplit("/", 1)[-1])
    return found


def command(i: dict[str, Any]) -> list[Field]:
    fields = []
    for key in ("create", "delete"):
        if i.get(key):
            script = i[key]
            runs = ", ".join(programs(script))
            fields.append(
                (
                    key,
                    f"a {script.count(chr(10)) + 1}-line script running {runs} (--markdown diffs it, --json has it)"
                    if "\n" in script
                    else script,
                )
            )
    return fields


def helm_release(i: dict[str, Any]) -> list[Field]:
    repo = (i.get("repositoryOpts") or {}).get("repo", "")
    chart = f"{repo.rstrip('/')}/{i.get('chart')}" if repo else _text(i.get("chart"))
    values = "\n".join(f"{k} = {json.dumps(v)}" for k, v in _flatten(i.get("values") or {})) or "the chart's defaults"
    return [("chart", f"{chart} {i.get('version')}"), ("namespace", _text(i.get("namespace"))), ("values", values)]


def pod(i: dict[str, Any]) -> list[Field]:
    spec = i.get("spec") or {}
    meta = i.get("metadata") or {}
    resources = []
    for c in spec.get("containers") or []:
        res = c.get("resources") or {}
        asked = "; ".join(f"{kind} {_pairs(res[kind])}" for kind in ("requests", "limits") if res.get(kind))
        resources.append(f"{c.get('name')}: {asked or 'none'}")
    quotas = {k: v for k, v in (meta.get("annotations") or {}).items() if not k.startswith("pulumi.com/")}
    fields = [
        ("pod", _text(object_name(i))),
        ("scheduler", _text(spec.get("schedulerName", "default-scheduler"))),
        ("resources", "\n".join(resources) or "none"),
    ]
    if quotas:
        fields.append(("annotations", _pairs(quotas)))
    if spec.get("nodeSelector"):
        fields.append(("node selector", _pairs(spec["nodeSelector"])))
    if spec.get("hostIPC"):
        fields.append(("host IPC", "yes"))
    return fields


def _tries(count: int) -> str:
    return f"{count} try" if count == 1 else f"{count} tries"


def job(i: dict[str, Any]) -> list[Field]:
    spec = i.get("spec") or {}
    containers = ((spec.get("template") or {}).get("spec") or {}).get("containers") or []
    runs = "\n".join(" ".join(c.get("command") or [c.get("image", "")]) for c in containers)
    env = {e["name"]: e["value"] for c in containers for e in c.get("env") or [] if isinstance(e.get("value"), str)}
    fields = [("job", _text(object_name(i))), ("runs", runs or "the image's command")]
    if env:
        fields.append(("env", "\n".join(f"{k}={v}" for k, v in env.items())))
    limits = [
        f"{spec['activeDeadlineSeconds']} s" if "activeDeadlineSeconds" in spec else "",
        _tries(spec["backoffLimit"] + 1) if "backoffLimit" in spec else "",
    ]
    if any(limits):
        fields.append(("limits", ", ".join(x for x in limits if x)))
    return fields


def node_patch(i: dict[str, Any]) -> list[Field]:
    meta = i.get("metadata") or {}
    return [("node", _text(meta.get("name"))), ("labels", _pairs(meta.get("labels")))]


def config_map(i: dict[str, Any]) -> list[Field]:
    return [("configmap", _text(object_name(i))), ("keys", ", ".join(sorted(i.get("data") or {})) or "none")]


def role(i: dict[str, Any]) -> list[Field]:
    """What a Role or ClusterRole may do: verbs on resources, or on API paths (`nonResourceURLs`: `get /version`)."""
    rules = []
    for r in i.get("rules") or []:
        targets = [*(r.get("resources") or []), *(r.get("nonResourceURLs") or [])]
        names = f" ({', '.join(r['resourceNames'])})" if r.get("resourceNames") else ""
        rules.append(f"{', '.join(r.get('verbs') or [])} {', '.join(targets)}{names}")
    return [("name", _text(object_name(i))), ("may", "\n".join(rules) or "nothing")]


def binding(i: dict[str, Any]) -> list[Field]:
    ref = i.get("roleRef") or {}
    subjects = ", ".join(
        f"{s.get('kind')} {s.get('namespace') + '/' if s.get('namespace') else ''}{s.get('name')}"
        for s in i.get("subjects") or []
    )
    return [("name", _text(object_name(i))), ("grants", f"{ref.get('kind')} {ref.get('name')} to {subjects}")]


def runtime_class(i: dict[str, Any]) -> list[Field]:
    return [("name", _text(object_name(i))), ("handler", _text(i.get("handler")))]


def cluster_policy(i: dict[str, Any]) -> list[Field]:
    rules = [r.get("name", "") for r in (i.get("spec") or {}).get("rules") or []]
    return [("name", _text(object_name(i))), ("rules", ", ".join(rules) or "none")]


def queue(i: dict[str, Any]) -> list[Field]:
    parent = (i.get("spec") or {}).get("parentQueue")
    return [("name", _text(object_name(i)))] + ([("parent", parent)] if parent else [])


def kubernetes_provider(i: dict[str, Any]) -> list[Field]:
    return [("kubeconfig", _text(i.get("kubeconfig")))] + ([("context", i["context"])] if i.get("context") else [])


def named_object(i: dict[str, Any]) -> list[Field]:
    name = object_name(i)
    return [("name", name)] if name else []


BY_TYPE: dict[str, Callable[[dict[str, Any]], list[Field]]] = {
    "gcp:container/cluster:Cluster": gke_cluster,
    "gcp:container/nodePool:NodePool": node_pool,
    "gcp:compute/firewall:Firewall": firewall,
    "gcp:compute/instance:Instance": instance,
    "tls:index/privateKey:PrivateKey": private_key,
    "command:remote:Command": command,
    "command:local:Command": command,
    "kubernetes:helm.sh/v3:Release": helm_release,
    "kubernetes:core/v1:Pod": pod,
    "kubernetes:core/v1:NodePatch": node_patch,
    "kubernetes:batch/v1:Job": job,
    "kubernetes:core/v1:ConfigMap": config_map,
    "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole": role,
    "kubernetes:rbac.authorization.k8s.io/v1:Role": role,
    "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding": binding,
    "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding": binding,
    "kubernetes:node.k8s.io/v1:RuntimeClass": runtime_class,
    "kubernetes:kyverno.io/v1:ClusterPolicy": cluster_policy,
    "kubernetes:scheduling.run.ai/v2:Queue": queue,
    "pulumi:providers:kubernetes": kubernetes_provider,
}


def review_fields(resource: dict[str, Any]) -> list[Field]:
    """What to check on this resource; a Kubernetes object of another type shows its name; a read, what it reads."""
    read = (resource.get("options") or {}).get("read")
    if read:
        kind = resource["type"].rsplit(":", 1)[-1]
        return [("reads", f"{kind} {read} as the cluster has it (never created or deleted here)")]
    return BY_TYPE.get(resource["type"], named_object)(resource["inputs"])
