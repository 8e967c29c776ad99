"""Image references through a registry mirror: one rule for every chart value and Pod image we set."""

from __future__ import annotations


def mirrored(image: str, registry: str | None) -> str:
    """The image as pulled through `registry`, its original registry host dropped; unchanged without a mirror.

    `nvcr.io/nvidia/k8s` → `harbor.example/proxy/nvidia/k8s`; `python:3.12-slim` → `…/library/python:3.12-slim`.
    """
    if not registry:
        return image
    first, _, rest = image.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        path = rest
    else:
        path = image if rest else f"library/{image}"  # Docker Hub's implicit library/ namespace
    return f"{registry.rstrip('/')}/{path}"
