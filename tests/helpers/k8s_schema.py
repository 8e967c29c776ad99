"""Kubernetes objects from the plan, validated against the real 1.35 OpenAPI schemas."""

from __future__ import annotations

from typing import Any

import kubernetes_validate

KUBERNETES_VERSION = "1.35.0"


def objects_in(plan: Any) -> list[dict[str, Any]]:
    """Every Kubernetes object the plan creates, as the manifest the provider would send."""
    objects = []
    for r in plan.resources:
        if not r["type"].startswith("kubernetes:") or r["type"].startswith("kubernetes:helm.sh"):
            continue
        inputs = r["inputs"]
        if "apiVersion" in inputs and "kind" in inputs:
            objects.append({k: v for k, v in inputs.items() if k not in ("__defaults",)})
    return objects


def validate(obj: dict[str, Any]) -> str | None:
    """None when valid; the schema's complaint otherwise. Raises SchemaNotFoundError for CRD kinds."""
    try:
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
    except kubernetes_validate.ValidationError as err:
        return f"{obj['kind']} {obj.get('metadata', {}).get('name')}: {err.message} at {list(err.path)}"
    return None


def is_custom_kind(obj: dict[str, Any]) -> bool:
    try:
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=False)
    except kubernetes_validate.SchemaNotFoundError:
        return True
    except kubernetes_validate.ValidationError:
        return False
    return False
