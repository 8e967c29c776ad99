"""Fixtures: plan a stack under Pulumi's mock engine (fresh runtime state each time), and the reference data."""

from __future__ import annotations

import copy
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

import pytest

from components.plan import EXAMPLE_STACKS, Plan, run

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
STACKS = list(EXAMPLE_STACKS)  # the committed examples: a stack file of the user's own beside them is not tested


@lru_cache(maxsize=64)
def _cached_plan(stack: str, overrides: tuple[str, ...]) -> Plan:
    return run(stack, list(overrides))


@pytest.fixture
def plan_stack() -> Callable[..., Plan]:
    """plan_stack("k3s", "gpushare:verify.sliceMiB=4000") → Plan; planned once per args, a copy each call (tests
    that edit a planned object, as a cluster would, must not change the plan the next test reads)."""

    def _plan(stack: str, *overrides: str) -> Plan:
        return copy.deepcopy(_cached_plan(stack, tuple(overrides)))

    return _plan


@pytest.fixture
def fresh_plan() -> Callable[..., Plan]:
    """Like plan_stack but never cached, with the run() keywords (preview=False, mocks=...)."""
    return run


def _present(path: Path) -> Path:
    """A folder of ../shared, or the test skips: only the project's workspace has it, a user's clone does not."""
    if not path.is_dir():
        pytest.skip(f"../shared/{path.relative_to(SHARED)} is absent (only the project's workspace has it)")
    return path


@pytest.fixture(scope="session")
def charts_dir() -> Path:
    """../shared/reference/charts: the pinned charts' values.yaml."""
    return _present(SHARED / "reference" / "charts")


@pytest.fixture(scope="session")
def rendered_dir() -> Path:
    """../shared/reference/rendered: what the real Helm engine renders for each stack's releases."""
    return _present(SHARED / "reference" / "rendered")


@pytest.fixture(scope="session")
def seeds_dir() -> Path:
    """../shared/seeds: the labs."""
    return _present(SHARED / "seeds")
