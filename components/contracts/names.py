"""Names the stack gives objects that another stack on the same cluster could also name: scoped to the stack."""

from __future__ import annotations

import hashlib
import re

LABEL_MAX = 63
"""A Job's name becomes its Pods' `job-name` label: a DNS label, at most 63 characters."""


def stack_scoped(name: str, stack: str) -> str:
    """`name-<stack>` as a DNS label: lower-case, `-` for anything else, cut to 63 with a digest of the stack
    kept, so two stacks never meet in one name however long theirs are."""
    slug = re.sub(r"[^a-z0-9-]+", "-", stack.lower()).strip("-") or "stack"
    scoped = f"{name}-{slug}"
    if len(scoped) <= LABEL_MAX and slug == stack:
        return scoped
    digest = hashlib.sha256(stack.encode()).hexdigest()[:8]
    room = LABEL_MAX - len(name) - len(digest) - 2
    return f"{name}-{slug[: max(room, 0)].strip('-')}-{digest}".replace("--", "-")[:LABEL_MAX].strip("-")
