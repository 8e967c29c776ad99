"""The private Pulumi names the plan, the mocks and the policy harness use live in one module that says loudly
when an installed SDK moved one."""

from __future__ import annotations

import gc
import re

import pytest

from components import pulumi_internals as sdk
from tests.conftest import ROOT

# A private name of the Pulumi SDK or pulumi_policy: an underscore name, or a module outside their public API.
PRIVATE_USE = re.compile(
    r"(?:pulumi|pulumi_policy)(?:\.\w+)*\._\w+"
    r"|from pulumi\.runtime\.(?:settings|stack|sync_await|mocks|rpc|config) import"
    r"|pulumi\.runtime\.(?:settings|stack|sync_await|mocks|rpc|config)\.\w+"
    r"|from pulumi\.runtime import (?:settings|stack|rpc|config)\b"
    r"|from pulumi_policy(?:\.(?:deserialize|proxy|policy))? import (?:deserialize|proxy|policy)\b"
    r"|from pulumi_policy\.(?:deserialize|proxy|policy) import"
)


def test_every_private_sdk_name_is_where_it_was_read() -> None:
    sdk.check()


def test_a_moved_private_name_fails_naming_it_and_the_fix() -> None:
    gone = sdk.Internal("pulumi.runtime.stack", "run_pulumi_function", "run the program")
    with pytest.raises(sdk.InternalsChanged) as raised:
        sdk.resolve(gone)
    message = str(raised.value)
    assert "pulumi.runtime.stack.run_pulumi_function is gone" in message
    assert "constraints.txt" in message and "\n" not in message


def test_changed_positional_parameters_fail_naming_both_signatures() -> None:
    reordered = sdk.Internal(
        "pulumi_policy", "PolicyCustomTimeouts", "timeouts", parameters=("update_seconds", "create_seconds")
    )
    with pytest.raises(sdk.InternalsChanged, match=r"takes \(create_seconds, update_seconds, delete_seconds\)"):
        sdk.resolve(reordered)


def test_a_missing_attribute_fails_naming_it() -> None:
    with pytest.raises(sdk.InternalsChanged, match="has no register_everything"):
        sdk.resolve(sdk.Internal("pulumi.runtime.mocks", "MockMonitor", "record", attributes=("register_everything",)))


def test_no_other_module_touches_a_private_pulumi_name() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}: {match.group(0)}"
        for folder in ("components", "policies")
        for path in sorted((ROOT / folder).rglob("*.py"))
        if path.name != "pulumi_internals.py"
        for match in PRIVATE_USE.finditer(path.read_text())
    ]
    assert offenders == [], "move these into components/pulumi_internals.py"


def test_the_offline_shortcuts_are_undone_when_the_plan_ends() -> None:
    import asyncio

    import pulumi.log as log
    import pulumi.output as output
    import pulumi.runtime.mocks as mocks
    import pulumi.runtime.resource as resource
    import pulumi.runtime.resource_cycle_breaker as cycles

    from components.plan import run

    def swapped() -> tuple[object, ...]:
        return (
            resource._get_stack_trace,
            cycles._add_dep,
            cycles._reachable,
            resource.create_urn,
            mocks._sync_await,
            log.debug,
            output.reduce,
        )

    before, loop = swapped(), asyncio.get_event_loop()
    with sdk.offline_shortcuts():
        assert all(now is not was for now, was in zip(swapped(), before, strict=True))
        assert len(resource._get_stack_trace().frames) == 0
        assert asyncio.get_event_loop() is not loop
    run("cluster")
    assert swapped() == before
    assert asyncio.get_event_loop() is loop and not loop.is_closed(), "the plan left its own event loop set"
    assert gc.isenabled(), "the plan paused the cycle collector and left it paused"


def test_edges_added_in_place_are_the_edges_the_sdk_records() -> None:
    import pulumi.runtime.resource_cycle_breaker as cycles

    class Node:
        pass

    edges = [(0, 1), (0, 2), (0, 1), (2, 3), (1, 3)]

    def recorded(add: object) -> list[set[int]]:
        graph = [Node() for _ in range(4)]
        for a, b in edges:
            add(graph[a], graph[b])  # type: ignore[operator]
        return [{graph.index(d) for d in cycles._deps(n)} for n in graph]

    with sdk.offline_shortcuts():
        in_place = recorded(cycles._add_dep)
    assert in_place == recorded(cycles._add_dep) == [{1, 2}, {3}, {3}, set()]


def test_the_offline_cycle_check_answers_as_the_sdks_for_every_pair() -> None:
    import pulumi.runtime.resource_cycle_breaker as cycles

    class Node:
        pass

    graph = [Node() for _ in range(7)]
    for a, b in [(0, 1), (1, 2), (2, 3), (0, 4), (4, 3), (5, 6), (3, 1)]:  # a cycle 1 → 2 → 3 → 1, and an island
        cycles._add_dep(graph[a], graph[b])
    pairs = [(a, b) for a in graph for b in graph]
    expected = [cycles._reachable(a, b) for a, b in pairs]
    with sdk.offline_shortcuts():
        assert [cycles._reachable(a, b) for a, b in pairs] == expected
    assert sum(expected) == 5 + 3 * 3 + 4 + 2 + 1  # reached from 0: 0-4; from 1, 2, 3: 1-3; from 4: 1-4; 5: 5, 6
