"""What the verifier reads from the API server, declared: the Pod, node and event records it keeps, the over-commit
Pod's watch, and the evidence around them. The verifier writes these (verifier.py pod_evidence, node_evidence,
read_events, watch_entry); the record validates each before any check reads it. Standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .schema import AnyOf, Arr, Bool, Field, Int, Invariant, Map, Maybe, Obj, Str, Time
from .strict import instant

PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
QUANTITY = AnyOf((Str(), Int()))
"""A resource quantity: the API server writes a string (`"4000"`); a number is read as its digits."""
STATE = Obj(
    {
        "waiting": Field(Maybe(Obj({"reason": Field(Maybe(Str()), required=False)}, extra=Maybe(Str()))),
                         required=False),
        "running": Field(Maybe(Obj({"startedAt": Field(Maybe(Time()), required=False)}, extra=Maybe(Str()))),
                         required=False),
        "terminated": Field(Maybe(Obj({"finishedAt": Field(Maybe(Time()), required=False),
                                       "startedAt": Field(Maybe(Time()), required=False),
                                       "exitCode": Field(Maybe(Int()), required=False)},
                                      extra=Maybe(AnyOf((Str(), Int()))))), required=False),
    }
)  # fmt: skip
CONTAINER_STATUS = Obj(
    {
        "name": Field(Maybe(Str()), required=False),
        "ready": Field(Maybe(Bool()), required=False),
        "restartCount": Field(Maybe(Int(minimum=0)), required=False),
        "state": Field(Maybe(STATE), required=False),
    }
)
EVENT = Obj(
    {
        "reason": Field(Maybe(Str()), required=False),
        "message": Field(Maybe(Str()), required=False),
        "source": Field(Maybe(Str()), required=False),
        "type": Field(Maybe(Str()), required=False),
        "count": Field(Maybe(Int(minimum=0)), required=False),
        "lastTimestamp": Field(Maybe(Time()), required=False, doc="when it last happened"),
        "eventTime": Field(Maybe(Time()), required=False),
        "firstTimestamp": Field(Maybe(Time()), required=False),
    }
)


WATCH_ENTRY = Obj(
    {
        "at": Field(Time(), doc="when the verifier read the Pod (its own clock)"),
        "phase": Field(Maybe(Str(choices=PHASES))),
        "nodeName": Field(Maybe(Str())),
        "bound": Field(Arr(Str()), doc="HAMi's bind annotations already set on it"),
        "containers": Field(Arr(Str()), doc="each container's state: waiting, running or terminated"),
        "proofPhases": Field(Map(Maybe(Str(choices=PHASES))), doc="each proof Pod's phase in the same read"),
    },
    doc="one read of the over-commit Pod while the verifier waited",
)


def _watch(pod: Mapping[str, Any]) -> tuple[str, str] | None:
    times = [instant(w["at"], "watch") for w in pod.get("watch") or []]
    for i in range(1, len(times)):
        if times[i] < times[i - 1]:
            return f"watch[{i}].at", "earlier than the read before it: the watch runs backwards"
    return None


POD = Obj(
    {
        "name": Field(Maybe(Str()), required=False),
        "namespace": Field(Maybe(Str()), required=False),
        "uid": Field(Maybe(Str()), required=False, doc="metadata.uid: the Pod the API server names"),
        "creationTimestamp": Field(Maybe(Time()), required=False),
        "phase": Field(Maybe(Str(choices=PHASES)), required=False),
        "nodeName": Field(Maybe(Str()), required=False),
        "annotations": Field(Maybe(Map(Str())), required=False),
        "containerStatuses": Field(Maybe(Arr(CONTAINER_STATUS)), required=False),
        "resources": Field(
            Maybe(
                Obj(
                    {
                        "limits": Field(Maybe(Map(QUANTITY)), required=False),
                        "requests": Field(Maybe(Map(QUANTITY)), required=False),
                    }
                )
            ),
            required=False,
        ),
        "logs": Field(Maybe(Str()), required=False),
        "events": Field(Maybe(Arr(EVENT)), required=False),
        "readAt": Field(Maybe(Time()), required=False, doc="when the verifier read the Pod and its log"),
        "watch": Field(Arr(WATCH_ENTRY), required=False, doc="the over-commit Pod, read at every poll"),
    },
    invariants=(Invariant("watch-in-order", "the watch's reads are in time order", _watch),),
    doc="a Pod as the verifier keeps it (verifier.py pod_evidence)",
)
NODE = Obj(
    {
        "labels": Field(Maybe(Map(Str())), required=False),
        "annotations": Field(Maybe(Map(Str())), required=False),
        "allocatable": Field(Maybe(Map(QUANTITY)), required=False),
        "capacity": Field(Maybe(Map(QUANTITY)), required=False),
    },
    doc="a node as the verifier keeps it (verifier.py node_evidence)",
)
AUDIT_POD = Obj(
    {
        "pod": Field(Str(), doc="namespace/name"),
        "node": Field(Maybe(Str())),
        "class": Field(Str(choices=("limited", "unlimited", "system"))),
        "reason": Field(Str()),
        "access": Field(Arr(Str())),
    }
)
AUDIT = Obj(
    {
        "counts": Field(Map(Maybe(Int(minimum=0))), required=False),
        "pods": Field(Arr(AUDIT_POD), required=False),
        "systemNamespaces": Field(Arr(Str()), required=False),
        "error": Field(Str(), required=False),
    },
    doc="the GPU audit of every Pod (audit.py)",
)
EVIDENCE = Obj(
    {
        "pods": Field(Map(POD)),
        "nodes": Field(Map(NODE), required=False),
        "metrics": Field(Map(Str()), required=False, doc="each proof node's monitor, Prometheus text"),
        "errors": Field(Arr(Str()), required=False),
        "quotaPods": Field(Map(POD), required=False),
        "gpuAudit": Field(AUDIT, required=False),
    },
    doc="everything the verifier collected (verifier.py collect)",
)
