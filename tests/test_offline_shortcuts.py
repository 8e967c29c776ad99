"""The offline plan's cheaper paths through the SDK answer as the SDK's own: the same URNs, the same recorded
inputs, every mock answer served, and the engine calls made on the plan's own thread."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest
from google.protobuf import json_format, struct_pb2

from components import pulumi_internals as sdk
from components.mocks import GpushareMocks, _plain, _plain_struct


def test_the_offline_urn_is_the_urn_and_state_the_sdk_computes() -> None:
    import pulumi.runtime.resource as resource

    cases: list[tuple[Any, ...]] = [
        ("node-a", "kubernetes:core/v1:NodePatch", "urn:pulumi:s::p::gpushare:platform:NodeLabels::labels"),
        ("node-b", "kubernetes:core/v1:NodePatch", "urn:pulumi:s::p::a:b:C$gpushare:platform:NodeLabels::x"),
        ("stack", "pulumi:pulumi:Stack", ""),
        ("top", "gpushare:x:Y", None, "gpushare", "dev"),
    ]

    def computed() -> list[tuple[str, bool, bool]]:
        outs = [resource.create_urn(*case) for case in cases]
        return [(sdk.sync_await(o.future()), sdk.sync_await(o.is_known()), sdk.sync_await(o.is_secret())) for o in outs]

    expected = computed()
    with sdk.offline_shortcuts():
        assert resource.create_urn is not sdk._named("pulumi.runtime.resource", "create_urn")
        assert computed() == expected
    assert expected[0][0] == "urn:pulumi:s::p::gpushare:platform:NodeLabels$kubernetes:core/v1:NodePatch::node-a"


def test_a_mock_answer_that_waits_on_the_loop_is_still_served() -> None:
    import pulumi.runtime.mocks as mocks

    async def plain() -> int:
        return 1

    async def after_a_turn() -> int:
        await asyncio.sleep(0)
        return 2

    async def on_a_future() -> int:
        loop = asyncio.get_running_loop()
        later = loop.create_future()
        loop.call_soon(later.set_result, 3)
        return await later

    async def failing_after_a_wait() -> int:
        await asyncio.sleep(0)
        raise ValueError("refused")

    async def engine_call() -> list[int]:  # as the monitor answers: synchronously, inside a running task
        answers = [mocks._sync_await(answer()) for answer in (plain, after_a_turn, on_a_future)]
        with pytest.raises(ValueError, match="refused"):
            mocks._sync_await(failing_after_a_wait())
        return answers

    with sdk.offline_shortcuts():
        assert sdk.sync_await(engine_call()) == [1, 2, 3]


def test_the_engine_calls_of_a_plan_of_hundreds_of_nodes_run_on_the_plans_thread(fresh_plan: Any) -> None:
    threads: list[int] = []

    def record_thread(_args: Any, state: dict[str, Any]) -> dict[str, Any]:
        threads.append(threading.get_ident())
        return state

    nodes = json.dumps([f"gpu-{i}" for i in range(300)])
    plan = fresh_plan("cluster", [f"gpushare:cluster.gpuNodes={nodes}"], mocks=GpushareMocks(override=record_thread))
    assert sum(r["type"] == "kubernetes:core/v1:NodePatch" for r in plan.resources) == 300
    assert len(threads) >= 300 and set(threads) == {threading.get_ident()}


def test_recorded_inputs_read_a_struct_as_json_format_and_plain_do() -> None:
    struct = struct_pb2.Struct()
    struct.update(
        {
            "name": "gpu-0",
            "replicas": 3.0,
            "ratio": 0.5,
            "on": True,
            "off": False,
            "none": None,
            "unknown": sdk.UNKNOWN,
            "list": [1.0, "a", None, [sdk.UNKNOWN], {"k": 2.0}],
            "secret": {sdk.SIG_KEY: sdk.SECRET_SIG, "value": "hunter2"},
            "ref": {sdk.SIG_KEY: sdk.RESOURCE_SIG, "urn": "urn:pulumi:s::p::kubernetes:core/v1:Namespace::ns"},
            "signed": {sdk.SIG_KEY: 7.0, "value": "not special"},
            "nested": {"deeper": {"x": 1.5e3}, "empty": {}, "empty_list": []},
        }
    )
    read = _plain_struct(struct)
    expected = _plain(json_format.MessageToDict(struct))
    assert json.dumps(read) == json.dumps(expected)  # the same values, types and key order
    assert read["secret"] == "[secret]" and read["ref"] == "[resource ns]" and read["unknown"] == "[unknown]"
    assert read["replicas"] == 3 and isinstance(read["replicas"], int) and read["ratio"] == 0.5


@pytest.mark.parametrize(
    "text",
    [
        '["gpu-0", "gpu-1"]',
        "[]",
        '[ "a" ,"b" ]',
        '\n["n1.example.com"]\n',
        '["with space", "sym!#$%&()*+/:;<=>?@[]^_`{|}~"]',
    ],
)
def test_a_list_of_plain_strings_reads_as_yaml_v3_reads_it(text: str) -> None:
    from components.config.stack_yaml import load
    from components.plan import _JSON_STRINGS, _load_yaml

    assert _JSON_STRINGS.fullmatch(text)
    assert _load_yaml(text, "-c k") == load(text)


@pytest.mark.parametrize(
    "text",
    [
        '["a\\nb"]',
        '["tab\\there"]',
        "[1, 2]",
        '["a", true]',
        '["a",]',
        "['a']",
        '["a"] # note',
        '{"a": "b"}',
        '["caf\u00e9"]',
        '["line\u2028sep"]',
        '\t["a"]',
    ],
)
def test_anything_else_is_read_by_the_yaml_v3_reader(text: str) -> None:
    from components.plan import _JSON_STRINGS

    assert not _JSON_STRINGS.fullmatch(text)


def test_the_sdks_debug_lines_still_reach_a_logger_set_to_debug(fresh_plan: Any, caplog: Any) -> None:
    import logging

    caplog.set_level(logging.DEBUG)
    fresh_plan("cluster")
    lines = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]
    assert any(line.startswith("resource registration successful: ty=kubernetes:core/v1:NodePatch") for line in lines)


def test_an_output_all_over_many_outputs_depends_on_what_the_sdks_does() -> None:
    import contextvars
    import functools

    import pulumi
    import pulumi.output as output

    class Node(pulumi.CustomResource):
        pass

    union = sdk._resource_union()
    seen: list[tuple[set[Any], set[Any]]] = []

    def compared(function: Any, iterable: Any, *initial: Any) -> Any:
        items = list(iterable)
        fast = sdk._reduce_unions_in_place(function, items, *initial)
        if function.__code__ is union:
            seen.append((fast, functools.reduce(function, items, *initial)))
        return fast

    def program() -> None:
        nodes = [Node("test:index:Node", f"node-{i}") for i in range(50)]
        outs = [n.urn.apply(str.upper) for n in nodes]
        pulumi.export("all", pulumi.Output.all(*outs, "plain", pulumi.Output.secret("s")))

    def plan() -> None:  # in a context of its own, as the offline plan runs: the test's settings stay as they were
        with sdk.offline_shortcuts():
            output.reduce = compared
            pulumi.runtime.set_mocks(GpushareMocks(), project="p", stack="s", preview=True)
            sdk.reset_pending_outputs()
            sdk.run_program(program)

    contextvars.Context().run(plan)
    assert seen and all(fast == slow for fast, slow in seen)
    assert max(len(fast) for fast, _ in seen) == 50
